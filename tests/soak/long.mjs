#!/usr/bin/env node
// long.mjs - the load side of the long-stream soak (tests/soak-long.sh,
// `make soak SOAK_MODE=long`): C clients each sending one request
// after another for --seconds, mixed streamed and not, each of its own
// length (log-uniform between --min-len-s and --max-len-s), some clients
// leaving early; a random busy worker is killed with SIGKILL every
// --kill-every-ms; the PSS of every worker is summed every --sample-every-ms.
// Writes one JSON report.
//
//   node tests/soak/long.mjs --base URL --key KEY --out FILE --double URL
//        --supervisor PID [--seconds 300] [--clients 48] [--stream-ratio 0.7]
//        [--leave-ratio 0.1] [--min-len-s 2] [--max-len-s 120] [--margin-ms 20000]
//        [--kill-every-ms 120000] [--sample-every-ms 10000] [--model M] [--seed N]
//
// Each request asks the OpenRouter double for its own shape and mark (a
// `[double] {...}` line, tests/double/README.md): a stream gets keep-alive
// comments for a first-token wait, then tokens 50-100 ms apart until its
// length; a non-streamed request gets its body after its length, with
// whitespace padding every 5 s meanwhile (the double's padding_bytes, set by
// soak-long.sh).  Every request ends in one class:
//   ok      HTTP 200 and exactly the words the double sent for this mark, in
//           order (stream: a finish_reason and [DONE] too; "ok_tail_cut" counts
//           those whose connection then broke: the answer was whole)
//   wrong   HTTP 200 and a whole answer, but not the words sent for this mark
//   error   a well-formed OpenAI error (HTTP status with {"error":{...}}, or
//           an SSE error event)
//   left    the client closed the connection on purpose (--leave-ratio)
//   broken  anything else (reset, cut stream, an error page that is not JSON)
//   hung    not ended within its length plus --margin-ms (the client gave up)
// Kills: just before each, the driver lists the worker's TCP connections to
// the double (/proc/PID/fd and /proc/net/tcp) and the double's active
// requests (GET /__double/active, with their client ports and marks): the
// requests that were in flight in the killed worker.  Requests the double
// saw closed within 2 s after the kill are added (a request that reached
// the worker between the listing and the kill).  Every broken request must
// be one of those.
import fs from 'node:fs';
import http from 'node:http';
import { makeRng } from '../double/rng.js';

const o = {
  seconds: 300, clients: 48, streamRatio: 0.7, leaveRatio: 0.1, minLenS: 2, maxLenS: 120,
  marginMs: 20000, killEveryMs: 120000, sampleEveryMs: 10000, model: 'deepseek/deepseek-v3.2', seed: 0,
  killMinAgeMs: 11000,
};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const v = process.argv[++i];
  const k = a.replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  if (!(k in o) && !['base', 'key', 'out', 'double', 'supervisor'].includes(k)) throw new Error(`unknown argument ${a}`);
  o[k] = typeof o[k] === 'number' ? Number(v) : v;
}
if (!o.base || !o.key || !o.out || !o.double || !o.supervisor) throw new Error('--base, --key, --out, --double and --supervisor are required');
if (!/^http:\/\/127\.0\.0\.1:/.test(o.base) || !/^http:\/\/127\.0\.0\.1:/.test(o.double)) throw new Error('loopback only');

const rnd = makeRng(o.seed);
const T0 = Date.now();
const now = () => Date.now() - T0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const DOUBLE_PORT = Number(new URL(o.double).port);
const U = new URL(`${o.base}/v1/chat/completions`);

// ---- /proc ----
function children(pid) {
  const out = [];
  let tasks = [];
  try { tasks = fs.readdirSync(`/proc/${pid}/task`); } catch (_) { return out; }
  for (const t of tasks) {
    try {
      for (const c of fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(/\s+/)) if (/^\d+$/.test(c)) out.push(Number(c));
    } catch (_) { /* gone */ }
  }
  return out;
}
function pssKb(pid) {
  try {
    const m = /^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch (_) { return null; }
}
const HZ = 100;
const bootS = Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
const bootAt = Date.now() - bootS * 1000;
function ageMs(pid) {
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return Date.now() - (bootAt + (Number(f[19]) / HZ) * 1000);
  } catch (_) { return -1; }
}
// The local ports of PID's TCP connections to the double.
function upstreamPorts(pid) {
  const inodes = new Set();
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        const l = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
        const m = /^socket:\[(\d+)\]$/.exec(l);
        if (m) inodes.add(m[1]);
      } catch (_) { /* closed */ }
    }
  } catch (_) { return new Set(); }
  const ports = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let t = '';
    try { t = fs.readFileSync(f, 'utf8'); } catch (_) { continue; }
    for (const line of t.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length < 10) continue;
      const lp = parseInt(c[1].split(':')[1], 16);
      const rp = parseInt(c[2].split(':')[1], 16);
      if (rp === DOUBLE_PORT && inodes.has(c[9])) ports.add(lp);
    }
  }
  return ports;
}
function getJson(url) {
  return new Promise((resolve) => {
    http.get(url, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { b += c; });
      res.on('end', () => { try { resolve(JSON.parse(b)); } catch (_) { resolve(null); } });
    }).on('error', () => resolve(null));
  });
}

// ---- requests ----
const R = { sent: 0, ok: 0, ok_tail_cut: 0, wrong: 0, error: 0, left: 0, broken: 0, hung: 0, stream: 0, non_stream: 0 };
const errorsByStatus = {};
const samples = { broken: [], wrong: [], hung: [] };
const reqs = new Map(); // mark -> {cls, stream, lenMs, start, end}
let stopping = false;

function expectedWords(mark, chunks) {
  const w = [];
  for (let i = 3; i < chunks; i++) w.push(` ${mark}.${i + 1}`);
  return w;
}
function wholeText(text, mark, chunks) {
  if (!text.startsWith('Hello from ')) return false;
  const tail = expectedWords(mark, chunks).join('');
  if (!text.endsWith(tail)) return false;
  const tag = text.slice('Hello from '.length, text.length - tail.length);
  return tag.length > 0 && !/\s/.test(tag);
}

function oneRequest(cid, n) {
  const mark = `k${cid}-${n}`;
  const stream = rnd() < o.streamRatio;
  const lenMs = Math.round(1000 * o.minLenS * (o.maxLenS / o.minLenS) ** rnd());
  const leaveAt = rnd() < o.leaveRatio ? Math.round(lenMs * (0.2 + 0.6 * rnd())) : null;
  let shape;
  let chunks;
  if (stream) {
    const first = Math.min(lenMs - 500, 200 + Math.round(2800 * rnd()));
    chunks = Math.max(4, Math.round((lenMs - first) / 75));
    shape = { chunks, spacing_ms: 50, spacing_jitter_ms: 50, first_token_delay_ms: Math.max(0, first), keepalive_interval_ms: 1000, mark };
  } else {
    chunks = 20;
    shape = { chunks, first_token_delay_ms: lenMs, keepalive_interval_ms: 5000, mark };
  }
  const payload = JSON.stringify({
    model: o.model, stream, max_tokens: chunks + 16,
    messages: [{ role: 'user', content: `soak request ${mark}\n[double] ${JSON.stringify(shape)}` }],
  });
  const rec = { mark, stream, lenMs, start: now(), end: null, cls: null, status: 0, left: leaveAt != null };
  reqs.set(mark, rec);
  R.sent++;
  R[stream ? 'stream' : 'non_stream']++;
  return new Promise((resolve) => {
    let body = '';
    let words = [];
    let done = false;
    let finish = false;
    let sseError = false;
    let settled = false;
    let timer = null;
    let leaveTimer = null;
    const settle = (cls, why) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(leaveTimer);
      rec.end = now();
      rec.cls = cls;
      R[cls]++;
      if (why && samples[cls] && samples[cls].length < 10) samples[cls].push({ mark, stream, lenMs, status: rec.status, why, start: rec.start, end: rec.end });
      resolve();
    };
    const judge = (connErr) => {
      const st = rec.status;
      if (st === 200 && stream) {
        const whole = done && finish && words.length === chunks && words[0] === 'Hello' && words[1] === ' from'
          && expectedWords(mark, chunks).every((w, i) => words[i + 3] === w);
        if (whole) { if (connErr) R.ok_tail_cut++; return settle('ok'); }
        if (sseError && !done) return settle('error');
        if (done && finish) return settle('wrong', `words ${words.length}/${chunks}: ${words.slice(0, 5).join('|')}`);
        return settle('broken', connErr ? String(connErr.message || connErr) : `stream ended without [DONE] after ${words.length}/${chunks} words`);
      }
      let j = null;
      try { j = JSON.parse(body); } catch (_) { /* not JSON */ }
      if (st === 200 && !stream && j && j.choices) {
        const c = j.choices[0] && j.choices[0].message && j.choices[0].message.content;
        if (typeof c === 'string' && wholeText(c, mark, chunks) && j.choices[0].finish_reason === 'stop') return settle('ok');
        return settle('wrong', `content ${String(c).slice(0, 80)}`);
      }
      if (st >= 400 && j && j.error && typeof j.error.message === 'string') {
        errorsByStatus[st] = (errorsByStatus[st] || 0) + 1;
        return settle('error');
      }
      return settle('broken', connErr ? String(connErr.message || connErr) : `HTTP ${st} ${body.slice(0, 80)}`);
    };
    const req = http.request({
      agent: false, host: U.hostname, port: U.port, path: U.pathname, method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload), Authorization: `Bearer ${o.key}` },
    }, (res) => {
      rec.status = res.statusCode;
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (c) => {
        if (!stream || res.statusCode !== 200) { body += c; return; }
        buf += c;
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, k);
          buf = buf.slice(k + 2);
          if (!block.startsWith('data:')) continue;
          const data = block.slice(block.charAt(5) === ' ' ? 6 : 5);
          if (data === '[DONE]') { done = true; continue; }
          let j;
          try { j = JSON.parse(data); } catch (_) { continue; }
          if (j.error) sseError = true;
          const ch = j.choices && j.choices[0];
          if (!ch) continue;
          if (ch.finish_reason) finish = true;
          const t = ch.delta && ch.delta.content;
          if (typeof t === 'string' && t.length) words.push(t);
        }
      });
      res.on('end', () => judge(null));
      res.on('aborted', () => judge(new Error('aborted')));
      res.on('error', (e) => judge(e));
    });
    req.on('error', (e) => judge(e));
    timer = setTimeout(() => { settle('hung', `no end after ${lenMs + o.marginMs} ms`); req.destroy(); }, lenMs + o.marginMs);
    if (leaveAt != null) leaveTimer = setTimeout(() => { settle('left'); req.destroy(); }, leaveAt);
    req.end(payload);
  });
}

async function client(cid) {
  await sleep(Math.round(rnd() * 2000));
  for (let n = 0; !stopping; n++) await oneRequest(cid, n);
}

// ---- kills and samples ----
const kills = [];
const pss = [];
const exits = [];
let known = new Set(children(o.supervisor));
let workersMin = known.size;
let killedPids = new Set();
const expected = known.size;

async function killOne() {
  const ws = children(o.supervisor).filter((p) => ageMs(p) >= o.killMinAgeMs);
  if (!ws.length) { kills.push({ t: now(), pid: null, why: 'no worker old enough' }); return; }
  const active = await getJson(`${o.double}/__double/active`);
  const act = active ? active.active : [];
  const busy = ws.map((p) => ({ p, ports: upstreamPorts(p) }))
    .map((x) => ({ ...x, marks: act.filter((a) => x.ports.has(a.port) && a.mark).map((a) => a.mark) }));
  const cand = busy.filter((x) => x.marks.length);
  const pick = (cand.length ? cand : busy)[Math.floor(rnd() * (cand.length ? cand.length : busy.length))];
  const k = { t: now(), at: Date.now(), pid: pick.p, in_flight: pick.marks, restored_ms: null, closed_after: [] };
  killedPids.add(pick.p);
  try { process.kill(pick.p, 'SIGKILL'); } catch (_) { k.pid = null; }
  kills.push(k);
  await sleep(2000);
  const log = await getJson(`${o.double}/__double/log?limit=2000`);
  for (const e of (log ? log.requests : [])) {
    if (e.closed_by_client && e.closed_at_ms >= k.at - 50 && e.closed_at_ms <= k.at + 2000 && e.mark) k.closed_after.push(e.mark);
  }
}

async function watcher(until) {
  let nextKill = o.killEveryMs > 0 ? o.killEveryMs : Infinity;
  let nextSample = 0;
  while (now() < until()) {
    const ws = children(o.supervisor);
    for (const p of known) if (!ws.includes(p) && !killedPids.has(p)) exits.push({ t: now(), pid: p });
    for (const k of kills) if (k.pid && k.restored_ms == null && ws.length >= expected) k.restored_ms = now() - k.t;
    known = new Set(ws);
    workersMin = Math.min(workersMin, ws.length);
    if (now() >= nextSample) {
      let sum = 0;
      let cnt = 0;
      for (const p of ws) { const v = pssKb(p); if (v != null) { sum += v; cnt++; } }
      pss.push({ t_s: now() / 1000, pss_kb: sum, workers: cnt });
      nextSample += o.sampleEveryMs;
    }
    if (now() >= nextKill && !stopping) { await killOne(); nextKill += o.killEveryMs; }
    await sleep(100);
  }
}

// Least squares slope of PSS over time, KiB per minute.
function slope(pts) {
  if (pts.length < 3) return null;
  const xs = pts.map((p) => p.t_s / 60);
  const ys = pts.map((p) => p.pss_kb);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < xs.length; i++) { sxy += (xs[i] - mx) * (ys[i] - my); sxx += (xs[i] - mx) ** 2; }
  return sxx ? Math.round((sxy / sxx) * 10) / 10 : null;
}

let allDone = false;
const w = watcher(() => (allDone ? 0 : Infinity));
const cs = Array.from({ length: o.clients }, (_, i) => client(i));
await sleep(o.seconds * 1000);
stopping = true;
await Promise.all(cs);
allDone = true;
await w;

// Which broken requests the kills explain.
const killedMarks = new Set();
for (const k of kills) for (const m of [...(k.in_flight || []), ...(k.closed_after || [])]) killedMarks.add(m);
const brokenMarks = [...reqs.values()].filter((r) => r.cls === 'broken').map((r) => r.mark);
const brokenKilled = brokenMarks.filter((m) => killedMarks.has(m));
const brokenOther = brokenMarks.filter((m) => !killedMarks.has(m));
const cls = (m) => (reqs.get(m) ? reqs.get(m).cls : null);
const inflightKilled = [...killedMarks].filter((m) => reqs.has(m));
const warm = Math.min(60, (o.seconds * 0.2));
const lateness = [...reqs.values()].filter((r) => r.end != null && r.cls !== 'left' && r.cls !== 'hung').map((r) => r.end - r.start - r.lenMs);
const report = {
  ...R, errors_by_status: errorsByStatus,
  broken_killed: brokenKilled.length, broken_other: brokenOther.length,
  broken_other_samples: samples.broken.filter((s) => !killedMarks.has(s.mark)),
  wrong_samples: samples.wrong, hung_samples: samples.hung,
  kills_done: kills.filter((k) => k.pid).length,
  kills: kills.map((k) => ({ t: k.t, pid: k.pid, in_flight: (k.in_flight || []).length, closed_after: (k.closed_after || []).length, restored_ms: k.restored_ms })),
  // The requests the kills cut: by class (ok = the answer was whole before
  // the kill landed; such a request may go uncounted in /stats).
  killed_requests: inflightKilled.length,
  killed_by_class: inflightKilled.reduce((a, m) => { a[cls(m)] = (a[cls(m)] || 0) + 1; return a; }, {}),
  workers_expected: expected, workers_min_seen: workersMin, workers_at_end: children(o.supervisor).length,
  other_worker_exits: exits.length,
  end_over_length_ms: { median: lateness.length ? lateness.sort((a, b) => a - b)[lateness.length >> 1] : null, max: lateness.length ? Math.max(...lateness) : null },
  pss_samples: pss,
  pss_slope_kib_per_min: slope(pss),
  pss_slope_after_warmup_kib_per_min: slope(pss.filter((p) => p.t_s >= warm)),
  warmup_s: warm,
  seconds: o.seconds, clients: o.clients, wall_s: now() / 1000,
};
fs.writeFileSync(o.out, `${JSON.stringify(report, null, 1)}\n`);
