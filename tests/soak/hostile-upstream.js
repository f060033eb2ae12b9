#!/usr/bin/env node
// hostile-upstream.js - an OpenRouter stand-in that answers with oversized
// data, for tests/integration/t0770-upstream-limits.sh.  Loopback only; no
// dependencies.
//
//   node tests/soak/hostile-upstream.js --port-file FILE [--key KEY]
//
// What it serves depends on the model (chat) or the model path (endpoints):
//   chat  hostile/sse-line       200 SSE: one "data: " line of 100 MB, no newline
//                                until the end (stream or not: always SSE)
//         hostile/sse-line-mid   200 SSE: a role chunk, one content chunk,
//                                then the 100 MB line
//         hostile/json-huge      200 JSON (stream:false): a 100 MB body
//         hostile/header         200 with a 1 MB response header
//         hostile/role-forever   200 SSE: role-only chunks without end (never a token)
//         hostile/key-escaped    200 SSE: a role chunk, a content chunk, then an error
//                                event quoting the key JSON-escaped (sk\u002dor...)
//         hostile/key-escaped-200  200 SSE whose only event is an error quoting the key
//                                JSON-escaped (orgw decodes it and re-sends it)
//         hostile/redirect       307 without Location
//         hostile/long-stream    200 SSE: 20000 content chunks of 1 KiB (~20 MB)
//         anything else          a normal short completion (stream or not)
//   GET   models/hostile/endpoints-many/endpoints    ~50 MB: 80000 endpoints
//         models/hostile/endpoints-bigstr/endpoints  ~50 MB: one endpoint
//                                whose provider_name is a 50 MB string
//         models/<other>/endpoints                   one normal endpoint "ok"
//         models                                     ~50 MB model list, or as set by
//                                POST /__hostile/models {"mode": M}: "echo401" (a 401
//                                quoting the key), "echo200" (a list whose names quote
//                                it), "redirect" (a 302 without Location), "big"
// Big bodies are written in 1 MiB pieces with back-pressure, and writing
// stops as soon as the client goes away.  GET /__hostile/stats reports
// {bytes_sent, aborted, requests}.
'use strict';
const http = require('http');
const fs = require('fs');

const args = process.argv.slice(2);
const opt = (n, d) => { const i = args.indexOf(n); return i >= 0 ? args[i + 1] : d; };
const KEY = opt('--key', 'sk-or-v1-test-upstream-SECRET');
const portFile = opt('--port-file', null);
const MB = 1024 * 1024;
const stats = { bytes_sent: 0, aborted: 0, requests: 0, by_model: {} };
let modelsMode = 'big';
// The key as JSON spells it with every '-' escaped: decodes to the key.
const KEY_ESCAPED = KEY.replace(/-/g, '\\u002d');

function endpoint(tag, name) {
  return {
    name: `${name} | x`, model_id: 'hostile/x-1', model_name: 'X', context_length: 8192,
    pricing: { prompt: '0.000001', completion: '0.000002', input_cache_read: '0.0000001', discount: 0 },
    provider_name: name, tag, quantization: null, max_completion_tokens: 4096, max_prompt_tokens: null,
    supported_parameters: ['max_tokens'], status: 0, uptime_last_30m: 99.5,
    supports_implicit_caching: true, latency_last_30m: { p50: 300 }, throughput_last_30m: { p50: 50 },
  };
}

// Writes `total` bytes made by piece(i) (each a Buffer), then tail; stops
// when the socket closes.  Returns a promise.
function pump(res, total, piece, tail) {
  return new Promise((resolve) => {
    let sent = 0;
    let i = 0;
    let closed = false;
    res.on('close', () => { if (!res.writableFinished) { closed = true; stats.aborted++; resolve(); } });
    const more = () => {
      while (!closed && sent < total) {
        const b = piece(i++);
        sent += b.length;
        stats.bytes_sent += b.length;
        if (!res.write(b)) { res.once('drain', more); return; }
      }
      if (!closed) { if (tail) { stats.bytes_sent += tail.length; res.end(tail); } else res.end(); resolve(); }
    };
    more();
  });
}

const X1M = Buffer.alloc(MB, 'x');

function chunkJson(content, finish) {
  return JSON.stringify({ id: 'gen-h', object: 'chat.completion.chunk', created: 1, model: 'hostile/x-1',
    provider: 'OK', choices: [{ index: 0, delta: { role: 'assistant', content }, finish_reason: finish }] });
}

function normalChat(res, stream) {
  if (stream) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.write(`data: ${chunkJson('', null)}\n\n`);
    res.write(`data: ${chunkJson('Hello', null)}\n\n`);
    res.write(`data: ${chunkJson('', 'stop')}\n\n`);
    res.write(`data: ${JSON.stringify({ id: 'gen-h', object: 'chat.completion.chunk', created: 1, model: 'hostile/x-1', provider: 'OK', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  const body = JSON.stringify({ id: 'gen-h', object: 'chat.completion', created: 1, model: 'hostile/x-1', provider: 'OK',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(body);
}

async function chat(req, res, raw) {
  let body = {};
  try { body = JSON.parse(raw); } catch (_) { /* fall through */ }
  const model = String(body.model || '');
  stats.by_model[model] = (stats.by_model[model] || 0) + 1;
  switch (model) {
    case 'hostile/sse-line':
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(': OPENROUTER PROCESSING\n\ndata: ');
      return pump(res, 100 * MB, () => X1M, '\n\n');
    case 'hostile/sse-line-mid':
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`data: ${chunkJson('', null)}\n\n`);
      res.write(`data: ${chunkJson('Hello', null)}\n\n`);
      res.write('data: ');
      return pump(res, 100 * MB, () => X1M, '\n\n');
    case 'hostile/json-huge':
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"id":"gen-h","pad":"');
      return pump(res, 100 * MB, () => X1M, '"}');
    case 'hostile/header':
      res.writeHead(200, { 'Content-Type': 'application/json', 'X-Huge': 'h'.repeat(MB) });
      return res.end('{}');
    case 'hostile/role-forever': {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      const role = Buffer.from(`data: ${chunkJson('', null)}\n\n`);
      return pump(res, 1024 * MB, () => role, null);
    }
    case 'hostile/key-escaped':
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`data: ${chunkJson('', null)}\n\n`);
      res.write(`data: ${chunkJson('Hello', null)}\n\n`);
      return res.end(`data: {"error":{"code":401,"message":"bad key ${KEY_ESCAPED}"}}\n\n`);
    case 'hostile/key-escaped-200':
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      return res.end(`data: {"error":{"code":401,"message":"bad key ${KEY_ESCAPED}"}}\n\n`);
    case 'hostile/redirect':
      res.writeHead(307, { 'Content-Type': 'application/json' });
      return res.end('{"moved":true}');
    case 'hostile/long-stream': {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`data: ${chunkJson('', null)}\n\n`);
      const piece = Buffer.from(`data: ${chunkJson('x'.repeat(1024), null)}\n\n`);
      return pump(res, 20000 * piece.length, () => piece,
        Buffer.from(`data: ${chunkJson('', 'stop')}\n\ndata: [DONE]\n\n`));
    }
    default:
      return normalChat(res, body.stream === true);
  }
}

async function endpoints(res, model) {
  if (model === 'hostile/endpoints-many') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write('{"data":{"id":"hostile/endpoints-many","name":"many","endpoints":[');
    const one = (i) => Buffer.from((i ? ',' : '') + JSON.stringify(endpoint(`t${i}`, `P${i}`)));
    return pump(res, 50 * MB, one, ']}}');
  }
  if (model === 'hostile/endpoints-bigstr') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const ep = JSON.stringify(endpoint('big', 'BIG'));
    const at = ep.indexOf('"provider_name":"BIG"') + '"provider_name":"'.length;
    const head = ep.slice(0, at);
    const tail = ep.slice(at + 3);
    res.write('{"data":{"id":"hostile/endpoints-bigstr","endpoints":[' + head);
    return pump(res, 50 * MB, () => X1M, tail + ']}}');
  }
  const body = JSON.stringify({ data: { id: model, name: model, endpoints: [endpoint('ok', 'OK')] } });
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(body);
}

const server = http.createServer((req, res) => {
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (d) => { if (raw.length < MB) raw += d; });
  req.on('end', () => {
    stats.requests++;
    const u = new URL(req.url, 'http://x');
    const p = u.pathname.replace(/^\/api/, '');
    if (p === '/__hostile/models') {
      try { modelsMode = JSON.parse(raw).mode; } catch (_) { modelsMode = 'big'; }
      res.writeHead(204);
      return res.end();
    }
    if (p === '/__hostile/stats') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return res.end(JSON.stringify(stats));
    }
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.writeHead(401, { 'Content-Type': 'application/json' });
      return res.end('{"error":{"code":401,"message":"Missing Authentication header"}}');
    }
    if (req.method === 'POST' && p === '/v1/chat/completions') return chat(req, res, raw);
    let m = /^\/v1\/models\/(.+)\/endpoints$/.exec(p);
    if (req.method === 'GET' && m) return endpoints(res, m[1]);
    if (req.method === 'GET' && p === '/v1/models' && modelsMode === 'echo401') {
      res.writeHead(401, { 'Content-Type': 'application/json' });
      return res.end(`{"error":{"code":401,"message":"Incorrect API key provided: ${KEY}"}}`);
    }
    if (req.method === 'GET' && p === '/v1/models' && modelsMode === 'echo200') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return res.end(`{"data":[{"id":"m/1","name":"${KEY}"}]}`);
    }
    if (req.method === 'GET' && p === '/v1/models' && modelsMode === 'redirect') {
      res.writeHead(302, { 'Content-Type': 'application/json' });
      return res.end('{}');
    }
    if (req.method === 'GET' && p === '/v1/models') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"data":[');
      const one = (i) => Buffer.from((i ? ',' : '') + JSON.stringify({ id: `m/${i}`, name: 'x'.repeat(400) }));
      return pump(res, 50 * MB, one, ']}');
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"error":{"code":404,"message":"Not Found"}}');
  });
});

server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  if (portFile) { fs.writeFileSync(portFile + '.tmp', `${port}\n`); fs.renameSync(portFile + '.tmp', portFile); }
  process.stdout.write(`hostile-upstream listening on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
