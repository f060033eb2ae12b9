#!/usr/bin/env node
// responses.mjs - one Responses API call (client.responses.create) through
// the official OpenAI SDK, as Codex CLI's API is used, reported as one JSON
// line on stdout.
//
//   node tests/js/responses.mjs --base URL --key KEY --model M [--stream]
//        [--max-output-tokens N] [--input TEXT] [--input-json JSON]
//        [--instructions TEXT] [--extra JSON] [--timeout MS]
//
//   --base     client base URL, e.g. http://127.0.0.1:8080/v1
//   --input    the input as a string (default "Say hello."); --input-json the
//              input items instead, e.g. '[{"role":"user","content":"hi"}]'
//   --extra    more body fields, merged last (e.g. '{"store":false}')
//   --timeout  client timeout in ms (default 120000)
//
// Output (one line):
//   {ok, status, response_status, text, output_text, usage,
//    error: {status, message, type, code} | null, mid_stream,
//    headers: {"x-orgw-provider", "x-orgw-route", "x-orgw-attempts"},
//    t_first_ms, t_total_ms, events, done}
//
// status: the HTTP status (200 for a failure inside a stream).
// response_status: the response object's own status ("completed",
// "incomplete", "failed"; streamed: the terminal event's response).
// output_text: the SDK's output_text of that response (streamed: of the
// terminal event's response, as the SDK's stream helper builds it); text:
// the text deltas joined (streamed) or output_text (not).  ok: HTTP 200 and
// a completed or incomplete response, no error.  events: the streamed event
// types in order (null when not streamed).  done: "data: [DONE]" went by.
//
// Exit status 0 whatever the API said; non-zero only for a usage error or a
// bug in this helper.  maxRetries is 0: the gateway does the retrying.
import OpenAI from 'openai';
import { watchingFetch } from './watch-fetch.mjs';

function usage(msg) {
  process.stderr.write(`responses.mjs: ${msg}\n` +
    'usage: node responses.mjs --base URL --key KEY --model M [--stream]\n' +
    '       [--max-output-tokens N] [--input TEXT | --input-json JSON]\n' +
    '       [--instructions TEXT] [--extra JSON] [--timeout MS]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { stream: false, input: 'Say hello.', timeout: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`missing value for ${a}`); return argv[++i]; };
    const json = () => { const v = val(); try { return JSON.parse(v); } catch (e) { usage(`${a} is not JSON: ${e.message}`); } };
    const int = () => { const v = Number(val()); if (!Number.isInteger(v) || v < 0) usage(`${a} must be a non-negative integer`); return v; };
    switch (a) {
      case '--base': o.base = val(); break;
      case '--key': o.key = val(); break;
      case '--model': o.model = val(); break;
      case '--stream': o.stream = true; break;
      case '--max-output-tokens': o.maxOutput = int(); break;
      case '--input': o.input = val(); break;
      case '--input-json': o.input = json(); break;
      case '--instructions': o.instructions = val(); break;
      case '--extra': o.extra = json(); break;
      case '--timeout': o.timeout = int(); break;
      case '-h': case '--help': usage('help'); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!o.base) usage('--base is required');
  if (o.key === undefined) usage('--key is required');
  if (!o.model) usage('--model is required');
  return o;
}

const HDRS = ['x-orgw-provider', 'x-orgw-route', 'x-orgw-attempts'];
const pickHeaders = (h) => Object.fromEntries(HDRS.map((n) => [n, h?.get?.(n) ?? null]));

function errorInfo(e) {
  const body = e?.error && typeof e.error === 'object' ? e.error : null;
  let message = body?.message ?? e?.message ?? String(e);
  if (typeof message !== 'string') message = JSON.stringify(message);
  let type = body?.type ?? e?.type ?? null;
  if (type === null && e?.constructor?.name === 'APIConnectionTimeoutError') type = 'timeout';
  else if (type === null && e?.constructor?.name === 'APIConnectionError') type = 'connection_error';
  return { status: Number.isInteger(e?.status) ? e.status : null, message, type, code: body?.code ?? e?.code ?? null };
}

// The SDK's own output_text: every output_text part of every message item.
function outputText(resp) {
  if (typeof resp?.output_text === 'string') return resp.output_text;
  const parts = [];
  for (const item of resp?.output ?? []) {
    if (item.type !== 'message') continue;
    for (const c of item.content ?? []) if (c.type === 'output_text') parts.push(c.text);
  }
  return parts.join('');
}

const TERMINAL = ['response.completed', 'response.incomplete', 'response.failed'];

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const state = { done: false };
  const client = new OpenAI({ baseURL: o.base, apiKey: o.key, maxRetries: 0, timeout: o.timeout,
    fetch: watchingFetch(state) });
  const body = { model: o.model, input: o.input };
  if (o.instructions !== undefined) body.instructions = o.instructions;
  if (o.maxOutput !== undefined) body.max_output_tokens = o.maxOutput;
  if (o.stream) body.stream = true;
  if (o.extra) Object.assign(body, o.extra);

  const r = {
    ok: false, status: null, response_status: null, text: null, output_text: null, usage: null,
    error: null, mid_stream: false, headers: pickHeaders(null), t_first_ms: null, t_total_ms: null,
    events: null, done: false,
  };
  const t0 = performance.now();
  const since = () => Math.round((performance.now() - t0) * 10) / 10;
  let response = null;
  let text = '';
  try {
    const { data, response: resp } = await client.responses.create(body).withResponse();
    response = resp;
    r.status = resp.status;
    r.headers = pickHeaders(resp.headers);
    if (!o.stream) {
      r.t_first_ms = since();
      r.response_status = data.status ?? null;
      r.output_text = outputText(data);
      r.text = r.output_text;
      r.usage = data.usage ?? null;
      if (data.error) r.error = { status: null, message: data.error.message ?? null, type: null, code: data.error.code ?? null };
    } else {
      r.events = [];
      for await (const ev of data) {
        r.events.push(ev.type);
        if (ev.type === 'response.output_text.delta') {
          if (r.t_first_ms === null) r.t_first_ms = since();
          text += ev.delta;
        }
        if (TERMINAL.includes(ev.type)) {
          r.response_status = ev.response?.status ?? null;
          r.output_text = outputText(ev.response);
          r.usage = ev.response?.usage ?? null;
          if (ev.response?.error) {
            r.mid_stream = true;
            r.error = { status: null, message: ev.response.error.message ?? null, type: null, code: ev.response.error.code ?? null };
          }
        }
      }
      r.text = text;
    }
    r.ok = r.status === 200 && ['completed', 'incomplete'].includes(r.response_status) && !r.error;
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) && !(e instanceof OpenAI.OpenAIError) && !(e instanceof SyntaxError)) throw e;
    r.error = errorInfo(e);
    if (response) {
      r.mid_stream = true;
      r.text = text;
    } else {
      r.status = r.error.status;
      if (e.headers) r.headers = pickHeaders(e.headers);
    }
  }
  r.t_total_ms = since();
  r.done = state.done;
  process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e) => {
  process.stderr.write(`responses.mjs: helper bug: ${e?.stack ?? e}\n`);
  process.exit(3);
});
