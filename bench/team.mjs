#!/usr/bin/env node
// team.mjs - a team of Claude Code sessions through orgw: N sessions at
// once, each T turns of streamed Messages requests in a row, the way
// Claude Code sends them: its x-claude-code-session-id header, a large
// system prompt with a cache_control breakpoint, the conversation growing
// by the answer and a new user message (a tool result's worth of text)
// each turn, the last user message marked too.  Each session's system
// prompt is its own (its project's), so only its own earlier turns can be
// read from a provider's cache.
//
//   node bench/team.mjs --url ORGW_URL --key KEY --double DOUBLE_URL
//        --model M --mode on [--sessions 16] [--turns 10] [--sys_kb 100]
//        [--turn_kb 4] [--think_ms 250] [--window_ms 500] [--retries 8]
//
// The model's lock is taken first by one small request (its inline
// scoring), then the sessions start within window_ms.  A 429 or 503 from
// orgw (an HTTP 429 or 503, or a rate_limit_error or overloaded_error
// event in a stream orgw had committed while it retried) is retried by
// the client after its Retry-After (else 1, 2, 4 ... s, at most 30), up
// to `retries` times, as Claude Code does; a turn that still fails ends
// its session.  Prints one JSON object:
//   {mode, model, sessions, turns, wall_ms, turns_ok, requests, status:
//    {code: n}, client_429, client_errors_in_stream, upstream_429,
//    upstream_requests, prompt_tokens, cached_tokens, cache_write_tokens,
//    cached_share, cost_usd, billed_usd, one_provider, sessions_failed,
//    providers: {tag: turns}, routes: {route: turns}, first_provider:
//    {tag: sessions}, turn_ms: {median, p90, max}, ttft_ms: {median,
//    p90}, errors: [the first five]}
// turn_ms: a turn's first request to its answer's end, the client's
// retries included; ttft_ms: of the request that was answered.
// upstream_* and billed_usd are the double's (/__double/stats before and
// after: the run must be the only traffic on it).  cached_share is the
// cached prompt tokens over all prompt tokens of the answered turns,
// from the usage the client got (Anthropic's: input_tokens excludes the
// cache's reads and writes).
import http from 'node:http';
import { parseArgs, nowMs, median, pct, r3 } from './lib.mjs';

const opt = parseArgs(process.argv.slice(2), {
  url: '', key: '', double: '', model: '', mode: '', sessions: 16, turns: 10,
  sys_kb: 100, turn_kb: 4, think_ms: 250, window_ms: 500, retries: 8, timeout_ms: 300000,
});
// Anthropic's error types in an SSE error event, as HTTP statuses.
const EVENT_STATUS = { rate_limit_error: 429, overloaded_error: 529, api_error: 500, timeout_error: 504 };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const agent = new http.Agent({ keepAlive: true, maxSockets: opt.sessions + 2 });

// Deterministic filler text of about `bytes` bytes: the same words in a
// different order per seed, so two texts share no long prefix.
function filler(seed, bytes) {
  const words = ['function', 'return', 'const', 'module', 'import', 'handler', 'request', 'buffer',
    'stream', 'config', 'parse', 'value', 'error', 'state', 'provider', 'session', 'token', 'cache'];
  let x = seed * 2654435761 >>> 0;
  const out = [];
  let n = 0;
  while (n < bytes) {
    x = (x * 1103515245 + 12345) >>> 0;
    const w = words[x % words.length];
    out.push(w);
    n += w.length + 1;
  }
  return out.join(' ');
}

function post(path, body, headers) {
  const u = new URL(opt.url + path);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    let ttft = null, buf = '', text = '', usage = {}, stop = false, evErr = null;
    const req = http.request({
      agent, host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload),
        Authorization: `Bearer ${opt.key}`, 'anthropic-version': '2023-06-01', ...headers },
    }, (res) => {
      const hdr = res.headers;
      res.setEncoding('utf8');
      res.on('data', (c) => {
        if (res.statusCode !== 200) { buf += c; return; }
        buf += c;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          for (const l of block.split('\n')) {
            if (!l.startsWith('data: ')) continue;
            let j;
            try { j = JSON.parse(l.slice(6)); } catch (_) { continue; }
            if (j.type === 'message_start') Object.assign(usage, j.message?.usage || {});
            else if (j.type === 'content_block_delta' && typeof j.delta?.text === 'string') {
              if (ttft == null) ttft = nowMs() - t0;
              text += j.delta.text;
            } else if (j.type === 'message_delta') {
              for (const [k, v] of Object.entries(j.usage || {})) if (v != null) usage[k] = v;
            } else if (j.type === 'message_stop') stop = true;
            else if (j.type === 'error') evErr = j.error || { type: 'error' };
          }
        }
      });
      res.on('end', () => {
        // An error after the stream's 200 head (orgw commits it to keep
        // the connection alive while it retries): the status it stands
        // for, as the client's SDK reports it.
        const status = res.statusCode === 200 && evErr
          ? (EVENT_STATUS[evErr.type] || 502) : res.statusCode;
        resolve({ status, ms: nowMs() - t0, ttft, text, usage, stop, inStream: evErr != null,
          provider: hdr['x-orgw-provider'] || '', route: hdr['x-orgw-route'] || '',
          retryAfter: Number(hdr['retry-after']) || 0,
          err: evErr ? `${evErr.type}: ${evErr.message}` : res.statusCode === 200 ? '' : buf.slice(0, 300) });
      });
      res.on('error', reject);
    });
    req.setTimeout(opt.timeout_ms, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

async function doubleStats() {
  if (!opt.double) return null;
  const r = await fetch(`${opt.double}/__double/stats`);
  return r.ok ? r.json() : null;
}

const st = { requests: 0, status: {}, client429: 0, inStream: 0, turns: [], errors: [] };

async function session(s) {
  const id = `team-${opt.mode}-${s}`;
  const sys = `You are Claude Code, working in /home/dev/project-${s} (session ${id}).\n${filler(s + 1, opt.sys_kb * 1024)}`;
  const msgs = [];
  const me = { id, providers: [], ok: 0, failed: false };
  await sleep((s * opt.window_ms) / Math.max(1, opt.sessions));
  for (let t = 1; t <= opt.turns; t++) {
    // Claude Code marks the system prompt and the newest message.
    for (const m of msgs) if (Array.isArray(m.content)) for (const b of m.content) delete b.cache_control;
    msgs.push({ role: 'user', content: [{ type: 'text', cache_control: { type: 'ephemeral' },
      text: `Turn ${t}: the tool's output follows.\n${filler(1000 * s + t, opt.turn_kb * 1024)}` }] });
    const body = { model: opt.model, max_tokens: 1024, stream: true,
      system: [{ type: 'text', text: sys, cache_control: { type: 'ephemeral' } }], messages: msgs };
    let r = null;
    const tt0 = nowMs();
    for (let k = 0; k <= opt.retries; k++) {
      st.requests++;
      r = await post('/v1/messages', body, { 'x-claude-code-session-id': id })
        .catch((e) => ({ status: 0, err: String(e) }));
      st.status[r.status] = (st.status[r.status] || 0) + 1;
      if (r.status === 429) st.client429++;
      if (r.inStream) st.inStream++;
      if (r.status !== 429 && r.status !== 503 && r.status !== 529) break;
      await sleep(1000 * Math.min(30, r.retryAfter > 0 ? r.retryAfter : 2 ** k));
    }
    if (r.status !== 200 || !r.stop) {
      me.failed = true;
      st.errors.push(`${id} turn ${t}: HTTP ${r.status} ${r.err || 'no message_stop'}`);
      break;
    }
    r.turnMs = nowMs() - tt0;
    me.ok++;
    me.providers.push(r.provider);
    st.turns.push(r);
    msgs.push({ role: 'assistant', content: [{ type: 'text', text: r.text || '(empty)' }] });
    await sleep(opt.think_ms);
  }
  return me;
}

// The lock: the model's first request scores it inline.
const warm = await post('/v1/messages', { model: opt.model, max_tokens: 16, stream: true,
  messages: [{ role: 'user', content: 'hi' }] }, { 'x-claude-code-session-id': `team-${opt.mode}-warmup` })
  .catch((e) => ({ status: 0, err: String(e) }));
if (warm.status !== 200) {
  process.stderr.write(`team: warm-up: HTTP ${warm.status} ${warm.err}\n`);
  process.exit(1);
}
const d0 = await doubleStats();
const t0 = nowMs();
const sessions = await Promise.all(Array.from({ length: opt.sessions }, (_, s) => session(s)));
const wall = nowMs() - t0;
const d1 = await doubleStats();
agent.destroy();

const sumU = (k) => st.turns.reduce((a, r) => a + (Number(r.usage[k]) || 0), 0);
const cached = sumU('cache_read_input_tokens');
const written = sumU('cache_creation_input_tokens');
const prompt = sumU('input_tokens') + cached + written;
const count = (f) => st.turns.reduce((o, r) => { o[f(r)] = (o[f(r)] || 0) + 1; return o; }, {});
const delta = (f) => (d0 && d1 ? f(d1) - f(d0) : null);
const out = {
  mode: opt.mode, model: opt.model, sessions: opt.sessions, turns: opt.turns,
  sys_kb: opt.sys_kb, turn_kb: opt.turn_kb,
  wall_ms: r3(wall), turns_ok: st.turns.length, requests: st.requests, status: st.status,
  client_429: st.client429, client_errors_in_stream: st.inStream,
  upstream_429: delta((d) => d.faults?.inflight_429 || 0),
  upstream_requests: delta((d) => d.apis?.messages || 0),
  prompt_tokens: prompt, cached_tokens: cached, cache_write_tokens: written,
  cached_share: prompt ? r3(cached / prompt) : null,
  cost_usd: Math.round(sumU('cost') * 1e6) / 1e6,
  billed_usd: delta((d) => d.billed_by_model?.[opt.model] || 0),
  one_provider: sessions.filter((x) => !x.failed && new Set(x.providers).size === 1).length,
  sessions_failed: sessions.filter((x) => x.failed).length,
  providers: count((r) => r.provider), routes: count((r) => r.route),
  first_provider: sessions.reduce((o, x) => { const p = x.providers[0] || '-'; o[p] = (o[p] || 0) + 1; return o; }, {}),
  turn_ms: { median: r3(median(st.turns.map((r) => r.turnMs))), p90: r3(pct(st.turns.map((r) => r.turnMs), 0.9)),
    max: r3(Math.max(0, ...st.turns.map((r) => r.turnMs))) },
  ttft_ms: { median: r3(median(st.turns.map((r) => r.ttft).filter((x) => x != null))),
    p90: r3(pct(st.turns.map((r) => r.ttft).filter((x) => x != null), 0.9)) },
  errors: st.errors.slice(0, 5),
};
if (out.billed_usd != null) out.billed_usd = Math.round(out.billed_usd * 1e6) / 1e6;
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exitCode = out.turns_ok === opt.sessions * opt.turns ? 0 : 1;
