#!/usr/bin/env node
// chat.mjs - one chat completion through the official OpenAI SDK, as a real
// client would send it, reported as one JSON line on stdout.
//
//   node tests/js/chat.mjs --base URL --key KEY --model M [--stream]
//        [--max-tokens N] [--provider JSON] [--message TEXT]
//        [--messages JSON] [--extra JSON] [--timeout MS] [--abort-after-chunks N]
//
//   --base     client base URL, e.g. http://127.0.0.1:8080/v1
//   --message  the user message (default "Say hello.")
//   --messages the whole messages array instead
//   --extra    more body fields, merged last (e.g. '{"temperature":0}')
//   --timeout  client timeout in ms (default 120000)
//   --abort-after-chunks N   (with --stream) drop the connection after N chunks,
//              like a client that goes away mid-generation
//
// Output (one line):
//   {ok, status, content, finish_reason, provider, usage,
//    error: {status, message, type, code} | null, mid_stream,
//    headers: {"x-orgw-provider", "x-orgw-route", "x-orgw-attempts"},
//    t_first_ms, t_total_ms, event_times_ms, chunks, done, aborted}
//
// ok: the request finished and no error was reported.  status: the HTTP
// status (for an error inside a stream, the stream's 200; error.status is then
// null and mid_stream true).  done: a streamed response ended with
// "data: [DONE]" (the SDK hides it, so the raw bytes are watched).
// event_times_ms: when each streamed chunk arrived, from the request's start.
//
// Exit status 0 whatever the API said; non-zero only for a usage error or a
// bug in this helper.  maxRetries is 0: the gateway does the retrying.

import OpenAI from 'openai';
import { watchingFetch } from './watch-fetch.mjs';

function usage(msg) {
  process.stderr.write(`chat.mjs: ${msg}\n` +
    'usage: node chat.mjs --base URL --key KEY --model M [--stream] [--max-tokens N]\n' +
    '       [--provider JSON] [--message TEXT | --messages JSON] [--extra JSON]\n' +
    '       [--timeout MS] [--abort-after-chunks N]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { stream: false, message: 'Say hello.', timeout: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    const json = (name) => {
      const v = val();
      try { return JSON.parse(v); } catch (e) { usage(`${name} is not JSON: ${e.message}`); }
    };
    const int = (name) => {
      const v = Number(val());
      if (!Number.isInteger(v) || v < 0) usage(`${name} must be a non-negative integer`);
      return v;
    };
    switch (a) {
      case '--base': o.base = val(); break;
      case '--key': o.key = val(); break;
      case '--model': o.model = val(); break;
      case '--stream': o.stream = true; break;
      case '--max-tokens': o.maxTokens = int(a); break;
      case '--provider': o.provider = json(a); break;
      case '--message': o.message = val(); break;
      case '--messages': o.messages = json(a); break;
      case '--extra': o.extra = json(a); break;
      case '--timeout': o.timeout = int(a); break;
      case '--abort-after-chunks': o.abortAfter = int(a); break;
      case '-h': case '--help': usage('help'); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!o.base) usage('--base is required');
  if (o.key === undefined) usage('--key is required');
  return o;
}

const HDRS = ['x-orgw-provider', 'x-orgw-route', 'x-orgw-attempts'];

function pickHeaders(h) {
  const out = {};
  for (const n of HDRS) {
    let v = null;
    if (h && typeof h.get === 'function') v = h.get(n);
    else if (h && typeof h === 'object') v = h[n] ?? null;
    out[n] = v ?? null;
  }
  return out;
}

function errorInfo(e) {
  const body = e?.error && typeof e.error === 'object' ? e.error : null;
  let message = body?.message ?? e?.message ?? String(e);
  if (typeof message !== 'string') message = JSON.stringify(message);
  let type = body?.type ?? e?.type ?? null;
  if (type === null && e?.constructor?.name) {
    if (e.constructor.name === 'APIConnectionTimeoutError') type = 'timeout';
    else if (e.constructor.name === 'APIConnectionError') type = 'connection_error';
  }
  return {
    status: Number.isInteger(e?.status) ? e.status : null,
    message,
    type,
    code: body?.code ?? e?.code ?? null,
  };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const state = { done: false };
  const client = new OpenAI({
    baseURL: o.base, apiKey: o.key, maxRetries: 0, timeout: o.timeout,
    fetch: watchingFetch(state),
  });
  const body = {
    model: o.model,
    messages: o.messages ?? [{ role: 'user', content: o.message }],
  };
  if (o.stream) body.stream = true;
  if (o.maxTokens !== undefined) body.max_tokens = o.maxTokens;
  if (o.provider !== undefined) body.provider = o.provider;
  if (o.extra) Object.assign(body, o.extra);
  if (body.model === undefined) delete body.model; // let the gateway pick TARGET_MODEL

  const r = {
    ok: false, status: null, content: null, finish_reason: null, provider: null,
    usage: null, error: null, mid_stream: false, headers: pickHeaders(null),
    t_first_ms: null, t_total_ms: null, event_times_ms: [], chunks: 0,
    done: false, aborted: false,
  };
  const t0 = performance.now();
  const since = () => Math.round((performance.now() - t0) * 10) / 10;
  let response = null;
  let content = '';
  try {
    const { data, response: resp } = await client.chat.completions.create(body).withResponse();
    response = resp;
    r.status = resp.status;
    r.headers = pickHeaders(resp.headers);
    if (!o.stream) {
      r.t_first_ms = since();
      const ch = data.choices?.[0];
      r.content = ch?.message?.content ?? null;
      r.finish_reason = ch?.finish_reason ?? null;
      r.provider = data.provider ?? null;
      r.usage = data.usage ?? null;
      r.ok = true;
    } else {
      for await (const chunk of data) {
        const t = since();
        if (r.t_first_ms === null) r.t_first_ms = t;
        r.event_times_ms.push(t);
        r.chunks++;
        if (chunk.provider && !r.provider) r.provider = chunk.provider;
        if (chunk.usage) r.usage = chunk.usage;
        const ch = chunk.choices?.[0];
        if (ch?.delta?.content) content += ch.delta.content;
        if (ch?.finish_reason) r.finish_reason = ch.finish_reason;
        if (o.abortAfter !== undefined && r.chunks >= o.abortAfter) {
          r.aborted = true;
          data.controller.abort();
          break;
        }
      }
      r.content = content;
      r.ok = !r.aborted;
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) && !(e instanceof OpenAI.OpenAIError) &&
        !(e instanceof SyntaxError)) throw e;
    r.error = errorInfo(e);
    if (response) {
      // The stream had started: an error event or a malformed chunk.
      r.mid_stream = true;
    } else {
      r.status = r.error.status;
      if (e.headers) r.headers = pickHeaders(e.headers);
    }
    if (o.stream && response) r.content = content;
  }
  r.t_total_ms = since();
  r.done = state.done;
  process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e) => {
  process.stderr.write(`chat.mjs: helper bug: ${e?.stack ?? e}\n`);
  process.exit(3);
});
