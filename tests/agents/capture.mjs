#!/usr/bin/env node
// capture.mjs - a tiny loopback server that answers the three generation APIs
// just well enough for a real client to finish, and records every request it
// gets (method, path with query, all headers, the body).  For learning what a
// client sends, and for tests that check it.
//
//   node tests/agents/capture.mjs [--port N] [--port-file F] [--log F.jsonl]
//        [--answer TEXT] [--status N] [--fail-first K] [--delay-ms N]
//        [--stream-fault error|cut]
//
//   --port        0 (default): any free port; the port is printed on stdout
//                 as "capture: listening on http://127.0.0.1:PORT" and
//                 written to --port-file when given
//   --log         append one JSON line per request (else kept in memory only)
//   --answer      the assistant's text (default "Hello from capture.")
//   --status N    answer every generation request with HTTP N in that API's
//                 error shape instead (a 429 or 503 also gets Retry-After: 1)
//   --fail-first K   only the first K generation requests fail (with
//                 --status, default 500); later ones succeed
//   --delay-ms N  wait N ms before answering a generation request
//   --stream-fault error|cut   a streamed answer sends its start and one text
//                 delta, then the API's error event (Messages: event: error,
//                 Responses: response.failed, chat: an "error" chunk) or just
//                 ends (cut); --fail-first K limits it to the first K
//
// Served (any prefix before these is accepted: /v1, /api/v1, none):
//   POST .../messages            Anthropic Messages; SSE when "stream": true
//   POST .../messages/count_tokens   {"input_tokens": N}
//   POST .../responses           OpenAI Responses; SSE when "stream": true
//   POST .../chat/completions    chat completions; SSE when "stream": true
//   GET  .../models              a model list (OpenAI and Anthropic fields)
//   anything else                200 {} (HEAD: 200, no body)
// As an HTTP proxy (HTTPS_PROXY=http://127.0.0.1:PORT): a CONNECT or an
// absolute-URL request is recorded with api "proxy" and refused (403, 502),
// so a client's calls to its vendor's servers show up in the log.
// Control (not recorded):
//   GET  /__capture/log          every record so far, as a JSON array
//   POST /__capture/reset        forget them
//   POST /__capture/config       {"status":N,"fail_first":K,"answer":T,"delay_ms":N,
//                                 "stream_fault":"error"|"cut"|null} (null clears;
//                                 the count for fail_first starts again)
//
// A record: {seq, t_ms, method, url, headers: {lowercased name: value},
//   raw_headers: [name, value, ...] (order and case as sent), body_bytes,
//   content_encoding, body (parsed JSON, or text, or null), api, answered,
//   summary: {model, stream, max_tokens, max_output_tokens, thinking,
//   tools, tool_names, cache_control, store, include, prompt_cache_key,
//   reasoning, messages, input_items, system_blocks, metadata}}.
// A body with Content-Encoding gzip, deflate or br is decoded for "body";
// body_bytes is what came over the wire.
import http from 'node:http';
import fs from 'node:fs';
import zlib from 'node:zlib';
import crypto from 'node:crypto';

function usage(msg) {
  process.stderr.write(`capture.mjs: ${msg}\n` +
    'usage: node capture.mjs [--port N] [--port-file F] [--log F.jsonl] [--answer TEXT]\n' +
    '       [--status N] [--fail-first K] [--delay-ms N] [--stream-fault error|cut]\n');
  process.exit(2);
}

const cfg = { port: 0, answer: 'Hello from capture.', status: null, failFirst: null, delayMs: 0, streamFault: null };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const val = () => { if (i + 1 >= a.length) usage(`missing value for ${a[i]}`); return a[++i]; };
    const int = () => { const v = Number(val()); if (!Number.isInteger(v) || v < 0) usage(`${a[i]} must be an integer`); return v; };
    switch (a[i]) {
      case '--port': cfg.port = int(); break;
      case '--port-file': cfg.portFile = val(); break;
      case '--log': cfg.log = val(); break;
      case '--answer': cfg.answer = val(); break;
      case '--status': cfg.status = int(); break;
      case '--fail-first': cfg.failFirst = int(); break;
      case '--delay-ms': cfg.delayMs = int(); break;
      case '--stream-fault': cfg.streamFault = val(); if (!['error', 'cut'].includes(cfg.streamFault)) usage('--stream-fault is error or cut'); break;
      default: usage(`unknown argument ${a[i]}`);
    }
  }
}

const records = [];
let seq = 0;
let genCount = 0;
const t0 = Date.now();

function decode(buf, enc) {
  enc = (enc || '').toLowerCase().trim();
  try {
    if (enc === 'gzip' || enc === 'x-gzip') return zlib.gunzipSync(buf);
    if (enc === 'deflate') return zlib.inflateSync(buf);
    if (enc === 'br') return zlib.brotliDecompressSync(buf);
    if (enc === 'zstd' && typeof zlib.zstdDecompressSync === 'function') return zlib.zstdDecompressSync(buf);
  } catch { return null; }
  return enc && enc !== 'identity' ? null : buf;
}

// Every cache_control anywhere in the body, as {where, value}.
function findCacheControl(body) {
  const out = [];
  const walk = (v, path) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'cache_control') out.push({ where: path || '.', value: x });
        else walk(x, path ? `${path}.${k}` : k);
      }
    }
  };
  walk(body, '');
  return out;
}

function summarize(body) {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const tools = Array.isArray(body.tools) ? body.tools : null;
  const cc = findCacheControl(body);
  return {
    model: body.model ?? null,
    stream: body.stream ?? null,
    max_tokens: body.max_tokens ?? null,
    max_completion_tokens: body.max_completion_tokens ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    thinking: body.thinking ?? null,
    reasoning: body.reasoning ?? null,
    reasoning_effort: body.reasoning_effort ?? null,
    tools: tools ? tools.length : null,
    tool_names: tools ? tools.map((t) => t.name ?? t.function?.name ?? t.type) : null,
    tool_choice: body.tool_choice ?? null,
    cache_control: cc.length ? cc : null,
    store: body.store ?? null,
    include: body.include ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    stream_options: body.stream_options ?? null,
    messages: Array.isArray(body.messages) ? body.messages.length : null,
    message_roles: Array.isArray(body.messages) ? body.messages.map((m) => m.role) : null,
    input_items: Array.isArray(body.input) ? body.input.length : (typeof body.input === 'string' ? 'string' : null),
    input_roles: Array.isArray(body.input) ? body.input.map((m) => m.role ?? m.type) : null,
    system_blocks: Array.isArray(body.system) ? body.system.length : (typeof body.system === 'string' ? 'string' : null),
    instructions_chars: typeof body.instructions === 'string' ? body.instructions.length : null,
    metadata: body.metadata ?? null,
    temperature: body.temperature ?? null,
    keys: Object.keys(body),
  };
}

function apiOf(method, path) {
  if (method !== 'POST' && method !== 'GET') return null;
  if (method === 'POST' && /\/messages\/count_tokens$/.test(path)) return 'count_tokens';
  if (method === 'POST' && /(^|\/)messages$/.test(path)) return 'messages';
  if (method === 'POST' && /(^|\/)responses$/.test(path)) return 'responses';
  if (method === 'POST' && /(^|\/)chat\/completions$/.test(path)) return 'chat';
  if (method === 'GET' && /(^|\/)models$/.test(path)) return 'models';
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const id = (p) => `${p}${crypto.randomBytes(12).toString('hex')}`;
const USAGE = { input: 21, cached: 0, output: 5 };

function sse(res, lines) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'close' });
  for (const l of lines) res.write(l);
  res.end();
}

function errorBody(api, status, msg) {
  if (api === 'messages' || api === 'count_tokens') {
    const t = { 400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error',
      403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error',
      500: 'api_error', 503: 'overloaded_error', 529: 'overloaded_error' }[status] ?? 'api_error';
    return { type: 'error', error: { type: t, message: msg } };
  }
  return { error: { code: status, message: msg } };
}

function answerMessages(res, body, text) {
  const model = body?.model ?? 'capture/model';
  const msgId = id('msg_');
  if (!body?.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: msgId, type: 'message', role: 'assistant', model, provider: 'Capture',
      content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null,
      usage: { input_tokens: USAGE.input, cache_creation_input_tokens: 0, cache_read_input_tokens: USAGE.cached, output_tokens: USAGE.output },
    }));
    return;
  }
  const ev = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  sse(res, [
    ev('message_start', { message: { id: msgId, type: 'message', role: 'assistant', content: [], model, provider: 'Capture',
      stop_reason: null, stop_sequence: null,
      usage: { input_tokens: USAGE.input, cache_creation_input_tokens: 0, cache_read_input_tokens: USAGE.cached, output_tokens: 1 } } }),
    ev('ping', {}),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: USAGE.output } }),
    ev('message_stop', {}),
  ]);
}

function answerResponses(res, body, text) {
  const model = body?.model ?? 'capture/model';
  const respId = id('resp_');
  const msgId = id('msg_');
  const created = Math.floor(Date.now() / 1000);
  const item = { type: 'message', id: msgId, status: 'completed', role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }] };
  const usage = { input_tokens: USAGE.input, input_tokens_details: { cached_tokens: USAGE.cached },
    output_tokens: USAGE.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: USAGE.input + USAGE.output };
  const base = { id: respId, object: 'response', created_at: created, model, error: null, incomplete_details: null,
    instructions: null, max_output_tokens: body?.max_output_tokens ?? null, parallel_tool_calls: true,
    tool_choice: 'auto', tools: [], store: false, metadata: {} };
  if (!body?.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, status: 'completed', output: [item], usage }));
    return;
  }
  let n = 0;
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`;
  const part = { type: 'output_text', text: '', annotations: [] };
  sse(res, [
    ev('response.created', { response: { ...base, status: 'in_progress', output: [], usage: null } }),
    ev('response.in_progress', { response: { ...base, status: 'in_progress', output: [], usage: null } }),
    ev('response.output_item.added', { output_index: 0, item: { type: 'message', id: msgId, status: 'in_progress', role: 'assistant', content: [] } }),
    ev('response.content_part.added', { item_id: msgId, output_index: 0, content_index: 0, part }),
    ev('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: text, logprobs: [] }),
    ev('response.output_text.done', { item_id: msgId, output_index: 0, content_index: 0, text, logprobs: [] }),
    ev('response.content_part.done', { item_id: msgId, output_index: 0, content_index: 0, part: { ...part, text } }),
    ev('response.output_item.done', { output_index: 0, item }),
    ev('response.completed', { response: { ...base, status: 'completed', output: [item], usage } }),
    'data: [DONE]\n\n',
  ]);
}

function answerChat(res, body, text) {
  const model = body?.model ?? 'capture/model';
  const cid = id('gen-');
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output,
    prompt_tokens_details: { cached_tokens: USAGE.cached } };
  if (!body?.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: cid, object: 'chat.completion', created, model, provider: 'Capture',
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage }));
    return;
  }
  const chunk = (choices, extra) => `data: ${JSON.stringify({ id: cid, object: 'chat.completion.chunk', created, model, provider: 'Capture', choices, ...extra })}\n\n`;
  sse(res, [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: text }, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    chunk([], { usage }),
    'data: [DONE]\n\n',
  ]);
}

// A stream that starts like a good one and then fails (error) or stops (cut).
function streamFault(res, api, body, text, kind) {
  const model = body?.model ?? 'capture/model';
  const half = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
  const lines = [];
  if (api === 'messages') {
    const ev = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
    lines.push(ev('message_start', { message: { id: id('msg_'), type: 'message', role: 'assistant', content: [], model,
      stop_reason: null, stop_sequence: null, usage: { input_tokens: USAGE.input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: half } }));
    if (kind === 'error') lines.push(ev('error', { error: { type: 'overloaded_error', message: 'capture: stream fault' } }));
  } else if (api === 'responses') {
    let n = 0;
    const msgId = id('msg_');
    const base = { id: id('resp_'), object: 'response', created_at: Math.floor(Date.now() / 1000), model, output: [] };
    const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`;
    lines.push(ev('response.created', { response: { ...base, status: 'in_progress' } }),
      ev('response.output_item.added', { output_index: 0, item: { type: 'message', id: msgId, status: 'in_progress', role: 'assistant', content: [] } }),
      ev('response.content_part.added', { item_id: msgId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }),
      ev('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: half, logprobs: [] }));
    if (kind === 'error') {
      lines.push(ev('response.failed', { response: { ...base, status: 'failed', error: { code: 'server_error', message: 'capture: stream fault' } } }));
    }
  } else {
    const cid = id('gen-');
    const chunk = (o) => `data: ${JSON.stringify({ id: cid, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, ...o })}\n\n`;
    lines.push(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }),
      chunk({ choices: [{ index: 0, delta: { content: half }, finish_reason: null }] }));
    if (kind === 'error') lines.push(chunk({ error: { code: 502, message: 'capture: stream fault' }, choices: [{ index: 0, delta: {}, finish_reason: 'error' }] }));
  }
  sse(res, lines);
}

function answerModels(res) {
  const ids = ['capture/model'];
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    object: 'list',
    data: ids.map((m) => ({ id: m, object: 'model', type: 'model', display_name: m, created: 0, owned_by: 'capture', created_at: '2026-01-01T00:00:00Z' })),
    has_more: false, first_id: ids[0], last_id: ids[ids.length - 1],
  }));
}

function record(req, buf) {
  const headers = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i].toLowerCase();
    headers[k] = k in headers ? `${headers[k]}, ${req.rawHeaders[i + 1]}` : req.rawHeaders[i + 1];
  }
  const enc = headers['content-encoding'] ?? null;
  const plain = buf.length ? decode(buf, enc) : null;
  let body = null;
  if (plain) {
    const text = plain.toString('utf8');
    try { body = JSON.parse(text); } catch { body = text.length > 65536 ? text.slice(0, 65536) : text; }
  } else if (buf.length) {
    body = { undecoded: true, base64_head: buf.subarray(0, 64).toString('base64') };
  }
  const path = req.url.split('?')[0];
  const r = {
    seq: ++seq, t_ms: Date.now() - t0, method: req.method, url: req.url, headers,
    raw_headers: req.rawHeaders, body_bytes: buf.length, decoded_bytes: plain ? plain.length : null,
    content_encoding: enc, body, api: apiOf(req.method, path), answered: null, summary: summarize(body),
  };
  records.push(r);
  return r;
}

function flush(r) {
  if (cfg.log) fs.appendFileSync(cfg.log, JSON.stringify(r) + '\n');
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const buf = Buffer.concat(chunks);
    const path = req.url.split('?')[0];
    if (path.startsWith('/__capture/')) {
      let j = {};
      try { j = buf.length ? JSON.parse(buf) : {}; } catch { /* empty */ }
      if (path === '/__capture/log') { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(records)); return; }
      if (path === '/__capture/reset') { records.length = 0; genCount = 0; res.writeHead(204); res.end(); return; }
      if (path === '/__capture/config') {
        if ('status' in j) cfg.status = j.status;
        if ('fail_first' in j) cfg.failFirst = j.fail_first;
        if ('answer' in j) cfg.answer = j.answer;
        if ('delay_ms' in j) cfg.delayMs = j.delay_ms;
        if ('stream_fault' in j) cfg.streamFault = j.stream_fault;
        genCount = 0;
        res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(cfg)); return;
      }
      res.writeHead(404); res.end(); return;
    }
    const r = record(req, buf);
    if (/^[a-z]+:\/\//i.test(req.url)) {
      // An absolute URL: a client used us as its HTTP proxy for another
      // host.  Recorded (api "proxy"), never forwarded.
      r.api = 'proxy';
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('capture: no outside access\n');
      r.answered = 502;
      flush(r);
      return;
    }
    const api = r.api;
    const body = r.body && typeof r.body === 'object' ? r.body : null;
    try {
      if (api === 'messages' || api === 'responses' || api === 'chat' || api === 'count_tokens') {
        if (cfg.delayMs) await sleep(cfg.delayMs);
        genCount++;
        const inWindow = cfg.failFirst === null || genCount <= cfg.failFirst;
        const fault = cfg.streamFault && inWindow && body?.stream ? cfg.streamFault : null;
        const fail = !fault && (cfg.status !== null || cfg.failFirst !== null) && inWindow;
        if (fault && api !== 'count_tokens') {
          streamFault(res, api, body, cfg.answer, fault);
          r.answered = `200+${fault}`;
        } else if (fail && api !== 'count_tokens') {
          const st = cfg.status ?? 500;
          const h = { 'content-type': 'application/json' };
          if (st === 429 || st === 503) h['retry-after'] = '1';
          res.writeHead(st, h);
          res.end(JSON.stringify(errorBody(api, st, `capture: told to answer ${st}`)));
          r.answered = st;
        } else if (api === 'count_tokens') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ input_tokens: Math.max(1, Math.round(buf.length / 4)) }));
          r.answered = 200;
        } else {
          if (api === 'messages') answerMessages(res, body, cfg.answer);
          else if (api === 'responses') answerResponses(res, body, cfg.answer);
          else answerChat(res, body, cfg.answer);
          r.answered = 200;
        }
      } else if (api === 'models') {
        answerModels(res); r.answered = 200;
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(req.method === 'HEAD' ? undefined : '{}');
        r.answered = 200;
      }
    } finally {
      flush(r);
    }
  });
});

// CONNECT: a client set up with HTTPS_PROXY pointing here tried to reach
// HOST:PORT (its vendor's servers, say).  Recorded, then refused: nothing
// leaves the machine.
server.on('connect', (req, sock) => {
  const r = record(req, Buffer.alloc(0));
  r.api = 'proxy';
  r.answered = 403;
  flush(r);
  sock.on('error', () => {});
  sock.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
});

server.listen(cfg.port, '127.0.0.1', () => {
  const port = server.address().port;
  if (cfg.portFile) fs.writeFileSync(cfg.portFile, `${port}\n`);
  process.stdout.write(`capture: listening on http://127.0.0.1:${port}\n`);
});
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => { server.close(); process.exit(0); });
