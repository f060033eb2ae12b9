#!/usr/bin/env node
// longstreams.mjs - concurrent long streams through one target (bench/run.sh,
// phase 7).
//
//   node bench/longstreams.mjs --targets FILE --only NAME --n 256 [--window_ms 1000]
//        [--seconds 30] [--spacing_ms 50] [--jitter_ms 50] [--first_ms 1000]
//        [--keepalive_ms 250] [--body_kb 0] [--ready FILE] [--grace_ms 60000]
//
// Starts n streams spread evenly over window_ms.  Each asks the OpenRouter
// double (a `[double] {...}` line in its last message, tests/double/README.md)
// for its own shape: `: OPENROUTER PROCESSING` comments every keepalive_ms for
// first_ms, then content events spacing_ms + uniform 0..jitter_ms apart, as
// many as fill `seconds`, each word marked with the stream's own mark.
// body_kb > 0 adds earlier turns of a conversation so the request body is
// that many KiB (what a long agent conversation sends).
//
// Per stream: the time from sending the request to its first content event
// ("first token"), the gaps between its content events, and whether it is
// complete and its own: HTTP 200, every content word present once and in
// order with this stream's mark, a finish_reason and [DONE].  Writes the
// ready file once every stream has its first token (or has ended), so the
// caller can sample memory with all n open.
//
// The client's own lateness is measured (perf_hooks.monitorEventLoopDelay):
// every arrival time is taken when the event loop gets to it, so a late
// client inflates first tokens and gaps alike on every path.
//
// Prints one JSON object.  Node 20 built-ins only.
import fs from 'node:fs';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs, loadTargets, median, pct, r3, nowMs } from './lib.mjs';

const opt = parseArgs(process.argv.slice(2), {
  targets: '', only: '', n: 256, window_ms: 1000, seconds: 30, spacing_ms: 50, jitter_ms: 50,
  first_ms: 1000, keepalive_ms: 250, body_kb: 0, ready: '', grace_ms: 60000,
});
const { body, targets } = loadTargets(opt.targets, opt.only);
if (targets.length !== 1) throw new Error('--only names exactly one target');
const T = targets[0];
const U = new URL(T.url);
const chunks = Math.max(4, Math.round((opt.seconds * 1000) / (opt.spacing_ms + opt.jitter_ms / 2)));

// Earlier turns of a conversation, to make the body body_kb KiB.
// Math.max(...a) overflows the stack with 1,000 streams' 400,000 gaps.
const maxOf = (a) => a.reduce((m, x) => (x > m ? x : m), -Infinity);

function history(kb) {
  if (kb <= 0) return [];
  const para = 'The function reads the configuration file, checks each setting against its range and '
    + 'returns the first error it finds, with the line number, so the operator can fix it. ';
  const turn = para.repeat(Math.ceil(4096 / para.length)).slice(0, 4096);
  const out = [];
  for (let i = 0; i < Math.floor((kb * 1024) / 4200); i++) {
    out.push({ role: i % 2 ? 'assistant' : 'user', content: `${i}: ${turn}` });
  }
  return out;
}
const HIST = history(opt.body_kb);

function payloadFor(mark) {
  const shape = {
    chunks, spacing_ms: opt.spacing_ms, spacing_jitter_ms: opt.jitter_ms,
    first_token_delay_ms: opt.first_ms, keepalive_interval_ms: opt.keepalive_ms, mark,
  };
  const msgs = body.messages.slice(0, -1).concat(HIST);
  const last = body.messages[body.messages.length - 1];
  msgs.push({ ...last, content: `${last.content}\n[double] ${JSON.stringify(shape)}` });
  return JSON.stringify({ ...body, messages: msgs, max_tokens: chunks + 16, stream: true });
}

// The content words the double sends: "Hello", " from", " TAG", then " MARK.4" ...
function contentOk(words, mark) {
  if (words.length !== chunks || words[0] !== 'Hello' || words[1] !== ' from') return false;
  for (let i = 3; i < chunks; i++) if (words[i] !== ` ${mark}.${i + 1}`) return false;
  return true;
}

function oneStream(i, payload) {
  const mark = `L${i}`;
  const s = { i, status: 0, first: null, gaps: [], words: [], done: false, finish: false, error: null, comments: 0 };
  return new Promise((resolve) => {
    const t0 = nowMs();
    let last = null;
    let buf = '';
    let settled = false;
    const end = (err) => {
      if (settled) return;
      settled = true;
      if (err) s.error = String(err.message || err);
      s.total = nowMs() - t0;
      s.ok = !s.error && s.status === 200 && s.done && s.finish && contentOk(s.words, mark);
      if (!s.ok && s.status === 200 && s.done && !s.error) s.wrong = true;
      resolve(s);
    };
    const onEvent = (block, t) => {
      if (block.startsWith(':')) { s.comments++; return; }
      if (!block.startsWith('data:')) return;
      const data = block.slice(block.charAt(5) === ' ' ? 6 : 5);
      if (data === '[DONE]') { s.done = true; return; }
      let j;
      try { j = JSON.parse(data); } catch (_) { s.error = 'bad JSON event'; return; }
      const ch = j.choices && j.choices[0];
      if (!ch) return;
      if (ch.finish_reason) s.finish = true;
      const c = ch.delta && ch.delta.content;
      if (typeof c !== 'string' || c.length === 0) return;
      s.words.push(c);
      if (s.first == null) { s.first = t; onFirst(); } else s.gaps.push(t - last);
      last = t;
    };
    const req = http.request({
      agent: false, host: U.hostname, port: U.port, path: U.pathname, method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload), ...T.headers },
    }, (res) => {
      s.status = res.statusCode;
      res.setEncoding('utf8');
      res.on('data', (c) => {
        const t = nowMs() - t0;
        buf += c;
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, k).replace(/\r/g, '');
          buf = buf.slice(k + 2);
          if (block) onEvent(block, t);
        }
      });
      res.on('end', () => end(null));
      res.on('error', end);
      res.on('aborted', () => end(new Error('aborted')));
    });
    req.setTimeout(opt.seconds * 1000 + opt.first_ms + opt.grace_ms, () => req.destroy(new Error('timeout')));
    req.on('error', end);
    req.end(payload);
  });
}

let firsts = 0;
let ended = 0;
let readyAt = null;
const T0 = nowMs();
function checkReady() {
  if (readyAt != null || firsts + ended < opt.n) return;
  readyAt = nowMs() - T0;
  if (opt.ready) fs.writeFileSync(opt.ready, `${firsts}\n`);
}
function onFirst() { firsts++; checkReady(); }

const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();
const payloads = Array.from({ length: opt.n }, (_, i) => payloadFor(`L${i}`));
const startLate = [];
const ps = [];
const sched = T0 + 20;
for (let i = 0; i < opt.n; i++) {
  const at = sched + (opt.window_ms * i) / opt.n;
  ps.push(new Promise((r) => setTimeout(r, Math.max(0, at - nowMs()))).then(() => {
    startLate.push(nowMs() - at);
    return oneStream(i, payloads[i]);
  }).then((s) => {
    if (s.first == null) { ended++; checkReady(); }
    return s;
  }));
}
const rs = await Promise.all(ps);
lag.disable();
if (readyAt == null && opt.ready) fs.writeFileSync(opt.ready, `${firsts}\n`);

const ok = rs.filter((s) => s.ok);
const fts = rs.filter((s) => s.first != null).map((s) => s.first);
const gaps = [];
for (const s of ok) for (const g of s.gaps) gaps.push(g);
const lagMs = (ns) => r3(Math.max(0, ns / 1e6 - 10));
const statuses = {};
for (const s of rs) statuses[s.status] = (statuses[s.status] || 0) + 1;
const out = {
  target: T.name, n: opt.n, window_ms: opt.window_ms, seconds: opt.seconds, chunks,
  spacing_ms: opt.spacing_ms, jitter_ms: opt.jitter_ms, first_ms: opt.first_ms,
  body_bytes: Buffer.byteLength(payloads[0]),
  started_within_ms: r3(maxOf(startLate) + opt.window_ms),
  first_tokens: fts.length, completed: ok.length,
  wrong: rs.filter((s) => s.wrong).length,
  errors: rs.filter((s) => s.error).length,
  statuses,
  error_samples: [...new Set(rs.filter((s) => s.error).map((s) => s.error))].slice(0, 5),
  all_first_tokens_ms: r3(readyAt),
  first_token_ms: { median: r3(median(fts)), p99: r3(pct(fts, 0.99)), max: r3(fts.length ? maxOf(fts) : null) },
  gap_ms: {
    median: r3(median(gaps)), p5: r3(pct(gaps, 0.05)), p99: r3(pct(gaps, 0.99)),
    max: r3(gaps.length ? maxOf(gaps) : null), n: gaps.length,
    batched: gaps.filter((g) => g < opt.spacing_ms / 2).length,
  },
  // What the double was told: uniform spacing_ms .. spacing_ms + jitter_ms.
  gap_sent_ms: { median: opt.spacing_ms + opt.jitter_ms / 2, p99: r3(opt.spacing_ms + 0.99 * opt.jitter_ms) },
  total_ms: { median: r3(median(ok.map((s) => s.total))), max: r3(ok.length ? maxOf(ok.map((s) => s.total)) : null) },
  client_lag_ms: { p50: lagMs(lag.percentile(50)), p99: lagMs(lag.percentile(99)), max: lagMs(lag.max) },
  client_start_late_ms: { median: r3(median(startLate)), max: r3(maxOf(startLate)) },
  wall_ms: r3(nowMs() - T0),
};
process.stdout.write(`${JSON.stringify(out)}\n`);
