#!/usr/bin/env node
// anthropic.mjs - one Messages API call through the official Anthropic SDK,
// as Claude Code's own SDK sends it, reported as one JSON line on stdout.
//
//   node tests/js/anthropic.mjs --base URL --key KEY --auth x-api-key|bearer
//        --model M [--stream] [--mode create|stream] [--max-tokens N]
//        [--thinking BUDGET] [--message TEXT] [--messages JSON]
//        [--system TEXT] [--extra JSON] [--other-key KEY] [--timeout MS]
//
//   --base     the gateway root, e.g. http://127.0.0.1:8080 (the SDK appends
//              /v1/messages, as with ANTHROPIC_BASE_URL)
//   --auth     x-api-key: the key as the x-api-key header and no
//              Authorization (what ANTHROPIC_API_KEY makes Claude Code send;
//              the SDK itself sends an apiKey as Bearer, so the header is set
//              by hand); bearer: Authorization: Bearer (authToken)
//   --other-key  also send this key in the other header (a wrong one there
//              shows which header the gateway read)
//   --mode     create (default): messages.create, streamed with --stream;
//              stream: messages.stream() and finalMessage(), the SDK's own
//              stream helper (it throws on a second message_start)
//   --max-tokens  default 1024
//   --thinking BUDGET   thinking: {type: "enabled", budget_tokens: BUDGET}
//   --message  the user message (default "Say hello."); --messages the whole
//              messages array instead
//   --system   a system prompt (string)
//   --extra    more body fields, merged last (e.g. '{"metadata":{...}}')
//   --timeout  client timeout in ms (default 120000)
//
// Output (one line):
//   {ok, status, text, stop_reason, model, provider, usage,
//    error: {status, message, type} | null, mid_stream,
//    headers: {"x-orgw-provider", "x-orgw-route", "x-orgw-attempts"},
//    sent: {authorization, "x-api-key"}, t_first_ms, t_total_ms, events}
//
// ok: the call finished with a message and no error.  status: the HTTP
// status (200 for an error event inside a stream; error.status is then null
// and mid_stream true).  usage: the message's (streamed: message_start's,
// then message_delta's non-null fields over it, as the SDK merges them).
// sent: the auth headers the SDK really sent (fetch is watched).  events:
// the stream's event types in order (null when not streamed).
// t_first_ms: the first text delta (not streamed: the whole answer).
//
// Exit status 0 whatever the API said; non-zero only for a usage error or a
// bug in this helper.  maxRetries is 0: the gateway does the retrying.
import Anthropic from '@anthropic-ai/sdk';

function usage(msg) {
  process.stderr.write(`anthropic.mjs: ${msg}\n` +
    'usage: node anthropic.mjs --base URL --key KEY --auth x-api-key|bearer --model M\n' +
    '       [--stream] [--mode create|stream] [--max-tokens N] [--thinking BUDGET]\n' +
    '       [--message TEXT | --messages JSON] [--system TEXT] [--extra JSON]\n' +
    '       [--other-key KEY] [--timeout MS]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { stream: false, mode: 'create', maxTokens: 1024, message: 'Say hello.', timeout: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`missing value for ${a}`); return argv[++i]; };
    const json = () => { const v = val(); try { return JSON.parse(v); } catch (e) { usage(`${a} is not JSON: ${e.message}`); } };
    const int = () => { const v = Number(val()); if (!Number.isInteger(v) || v < 0) usage(`${a} must be a non-negative integer`); return v; };
    switch (a) {
      case '--base': o.base = val(); break;
      case '--key': o.key = val(); break;
      case '--auth': o.auth = val(); break;
      case '--other-key': o.otherKey = val(); break;
      case '--model': o.model = val(); break;
      case '--stream': o.stream = true; break;
      case '--mode': o.mode = val(); break;
      case '--max-tokens': o.maxTokens = int(); break;
      case '--thinking': o.thinking = int(); break;
      case '--message': o.message = val(); break;
      case '--messages': o.messages = json(); break;
      case '--system': o.system = val(); break;
      case '--extra': o.extra = json(); break;
      case '--timeout': o.timeout = int(); break;
      case '-h': case '--help': usage('help'); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!o.base) usage('--base is required');
  if (o.key === undefined) usage('--key is required');
  if (!['x-api-key', 'bearer'].includes(o.auth)) usage('--auth is x-api-key or bearer');
  if (!['create', 'stream'].includes(o.mode)) usage('--mode is create or stream');
  if (!o.model) usage('--model is required');
  return o;
}

const HDRS = ['x-orgw-provider', 'x-orgw-route', 'x-orgw-attempts'];
const pickHeaders = (h) => Object.fromEntries(HDRS.map((n) => [n, h?.get?.(n) ?? null]));

function errorInfo(e) {
  const body = e?.error?.error && typeof e.error.error === 'object' ? e.error.error
    : (e?.error && typeof e.error === 'object' ? e.error : null);
  let message = body?.message ?? e?.message ?? String(e);
  if (typeof message !== 'string') message = JSON.stringify(message);
  let type = body?.type ?? null;
  if (type === null && e?.constructor?.name === 'APIConnectionTimeoutError') type = 'timeout';
  else if (type === null && e?.constructor?.name === 'APIConnectionError') type = 'connection_error';
  return { status: Number.isInteger(e?.status) ? e.status : null, message, type };
}

// Later non-null usage fields over earlier ones, as the SDK's stream does.
function mergeUsage(into, u) {
  if (!u) return into;
  const out = { ...(into ?? {}) };
  for (const [k, v] of Object.entries(u)) if (v !== null && v !== undefined) out[k] = v;
  return out;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const sent = { authorization: null, 'x-api-key': null };
  const seenFetch = async (url, init) => {
    const h = new Headers(init?.headers);
    sent.authorization = h.get('authorization');
    sent['x-api-key'] = h.get('x-api-key');
    return fetch(url, init);
  };
  const opts = { baseURL: o.base, maxRetries: 0, timeout: o.timeout, fetch: seenFetch };
  if (o.auth === 'x-api-key') {
    // null, not undefined: the SDK would read ANTHROPIC_API_KEY and send it
    // as Bearer.
    opts.apiKey = null;
    opts.authToken = null;
    opts.defaultHeaders = { 'x-api-key': o.key };
    if (o.otherKey !== undefined) opts.defaultHeaders.Authorization = `Bearer ${o.otherKey}`;
  } else {
    opts.apiKey = null;
    opts.authToken = o.key;
    if (o.otherKey !== undefined) opts.defaultHeaders = { 'x-api-key': o.otherKey };
  }
  const client = new Anthropic(opts);
  const body = {
    model: o.model,
    max_tokens: o.maxTokens,
    messages: o.messages ?? [{ role: 'user', content: o.message }],
  };
  if (o.system !== undefined) body.system = o.system;
  if (o.thinking !== undefined) body.thinking = { type: 'enabled', budget_tokens: o.thinking };
  if (o.extra) Object.assign(body, o.extra);

  const r = {
    ok: false, status: null, text: null, stop_reason: null, model: null, provider: null,
    usage: null, error: null, mid_stream: false, headers: pickHeaders(null), sent,
    t_first_ms: null, t_total_ms: null, events: null,
  };
  const t0 = performance.now();
  const since = () => Math.round((performance.now() - t0) * 10) / 10;
  let response = null;
  let text = '';
  const onEvent = (ev) => {
    r.events.push(ev.type);
    if (ev.type === 'message_start') {
      r.model = ev.message?.model ?? null;
      r.provider = ev.message?.provider ?? null;
      r.usage = mergeUsage(r.usage, ev.message?.usage);
    } else if (ev.type === 'content_block_delta') {
      if (r.t_first_ms === null) r.t_first_ms = since();
      if (ev.delta?.type === 'text_delta') text += ev.delta.text;
    } else if (ev.type === 'message_delta') {
      if (ev.delta?.stop_reason) r.stop_reason = ev.delta.stop_reason;
      r.usage = mergeUsage(r.usage, ev.usage);
    }
  };
  try {
    if (o.mode === 'stream') {
      r.events = [];
      const stream = client.messages.stream(body);
      stream.on('streamEvent', onEvent);
      // The HTTP response, or the error that came instead.
      const { response: resp } = await stream.withResponse();
      response = resp;
      r.status = resp.status;
      r.headers = pickHeaders(resp.headers);
      const msg = await stream.finalMessage();
      r.text = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      r.stop_reason = msg.stop_reason;
      r.usage = msg.usage;
      r.model = msg.model;
      r.ok = true;
    } else if (o.stream) {
      r.events = [];
      const { data, response: resp } = await client.messages.create({ ...body, stream: true }).withResponse();
      response = resp;
      r.status = resp.status;
      r.headers = pickHeaders(resp.headers);
      for await (const ev of data) onEvent(ev);
      r.text = text;
      r.ok = r.events.includes('message_stop');
    } else {
      const { data, response: resp } = await client.messages.create(body).withResponse();
      response = resp;
      r.status = resp.status;
      r.headers = pickHeaders(resp.headers);
      r.t_first_ms = since();
      r.text = (data.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('');
      r.stop_reason = data.stop_reason ?? null;
      r.model = data.model ?? null;
      r.provider = data.provider ?? null;
      r.usage = data.usage ?? null;
      r.ok = data.type === 'message';
    }
  } catch (e) {
    if (!(e instanceof Anthropic.AnthropicError) && !(e instanceof SyntaxError)) throw e;
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
  process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e) => {
  process.stderr.write(`anthropic.mjs: helper bug: ${e?.stack ?? e}\n`);
  process.exit(3);
});
