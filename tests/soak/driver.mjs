#!/usr/bin/env node
// driver.mjs - the load side of tests/soak.sh: N concurrent clients (the
// official OpenAI SDK, streaming and non-streaming mixed) for a bounded
// time, while a worker is killed with SIGKILL every K ms and orgw-score
// runs every S ms.  Writes one JSON report.
//
//   node tests/soak/driver.mjs --base URL/v1 --key KEY --out report.json
//        [--seconds 60] [--clients 64] [--stream-ratio 0.5]
//        [--models a,b,c] [--timeout-ms 30000] [--seed N]
//        [--supervisor PID --kill-every-ms 10000 --kill-min-age-ms 11000]
//        [--scorer BIN --scorer-config FILE --score-every-ms 5000 --scorer-log FILE]
//        [--double URL] [--max-retries N (the SDK's own retries; default 0)]
//
// Every request ends in exactly one class:
//   ok        non-stream: 200 with a choice whose content is a string;
//             stream: content chunks, a finish_reason, and "data: [DONE]"
//   error     a well-formed OpenAI error: an HTTP error whose body is
//             {"error":{"message":...}}, or (stream) an SSE error event
//             carrying an error object, with no [DONE] after it
//   hung      no answer within --timeout-ms (the client gave up)
//   broken    anything else: reset, empty reply, a non-JSON error page,
//             a stream that ends without [DONE] and without an error
// Broken requests are then matched to the kills: a broken request that was
// in flight when a worker was SIGKILLed and ended within KILL_WINDOW_MS
// after it is "broken_killed" (several per kill: a FastCGI worker serves
// WORKER_THREADS requests at once, and a kill breaks all of them).  Of the rest, with --double URL, those
// that got no HTTP status and whose message ("soak request <id>") the
// OpenRouter double never received are "broken_unsent": the web server
// closed the client's connection before the request reached orgw (with
// /stats equal to the completed requests, orgw never counted them either);
// what is left is "broken_other".
//
// Kills: the worker is picked among the supervisor's children (multiwatch),
// preferring one that is busy (more open fds than an idle worker) and older
// than --kill-min-age-ms (multiwatch gives up on a slot whose child dies 3
// times within 10 s of being forked; see deploy/README-workers.md).  The
// worker list is polled every 100 ms; a worker that vanishes without having
// been killed here is counted in "unexpected_worker_exits".
//
// Loopback only; every loop is bounded by --seconds plus --timeout-ms.

// The SDK lives with the other JS helpers (tests/js, npm ci'd by make deps).
import OpenAI from '../js/node_modules/openai/index.mjs';
import { watchingFetch } from '../js/watch-fetch.mjs';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { makeRng } from '../double/rng.js';

const KILL_WINDOW_MS = 3000;

function parseArgs(argv) {
  const o = {
    seconds: 60, clients: 64, streamRatio: 0.5, timeoutMs: 30000, seed: 0,
    models: ['deepseek/deepseek-v3.2', 'soak/model-a', 'soak/model-b'],
    killEveryMs: 10000, killMinAgeMs: 11000, scoreEveryMs: 5000,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
      return argv[++i];
    };
    switch (a) {
      case '--base': o.base = v(); break;
      case '--key': o.key = v(); break;
      case '--out': o.out = v(); break;
      case '--seconds': o.seconds = Number(v()); break;
      case '--clients': o.clients = Number(v()); break;
      case '--stream-ratio': o.streamRatio = Number(v()); break;
      case '--models': o.models = v().split(',').filter(Boolean); break;
      case '--timeout-ms': o.timeoutMs = Number(v()); break;
      case '--seed': o.seed = Number(v()); break;
      case '--supervisor': o.supervisor = Number(v()); break;
      case '--kill-every-ms': o.killEveryMs = Number(v()); break;
      case '--kill-min-age-ms': o.killMinAgeMs = Number(v()); break;
      case '--scorer': o.scorer = v(); break;
      case '--scorer-config': o.scorerConfig = v(); break;
      case '--scorer-log': o.scorerLog = v(); break;
      case '--score-every-ms': o.scoreEveryMs = Number(v()); break;
      case '--double': o.double = v(); break;
      case '--max-retries': o.maxRetries = Number(v()); break;
      case '--workers-file': o.workersFile = v(); break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (!o.base || !o.key || !o.out) throw new Error('--base, --key and --out are required');
  if (!/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(o.base)) throw new Error('loopback only');
  if (!(o.seconds > 0 && o.seconds <= 3600)) throw new Error('--seconds must be 1..3600');
  if (!(o.clients >= 1 && o.clients <= 1024)) throw new Error('--clients must be 1..1024');
  return o;
}


const T0 = performance.now();
const now = () => Math.round((performance.now() - T0) * 10) / 10;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- workers (/proc) ----

// The requests a worker is serving, from the host's worker table
// (STATE_PATH.workers, src/workertab.c: a 64-byte header, then slots of 24
// bytes: int32 pid, uint32 threads, uint32 busy, uint32 pad, uint64
// start), or null when the file or the pid's slot cannot be read.  Read
// just before a kill: a request the kill catches after its answer was
// sent (orgw counts it after the client has its last byte) is one of
// these.
function busyOf(file, pid) {
  let b;
  try { b = fs.readFileSync(file); } catch (_) { return null; }
  for (let off = 64; off + 24 <= b.length; off += 24) {
    if (b.readInt32LE(off) === pid) return b.readUInt32LE(off + 8);
  }
  return null;
}

function children(pid) {
  const out = [];
  let tasks = [];
  try { tasks = fs.readdirSync(`/proc/${pid}/task`); } catch (_) { return out; }
  for (const t of tasks) {
    try {
      for (const c of fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(/\s+/)) {
        if (/^\d+$/.test(c)) out.push(Number(c));
      }
    } catch (_) { /* gone */ }
  }
  return out;
}

function fdCount(pid) {
  try { return fs.readdirSync(`/proc/${pid}/fd`).length; } catch (_) { return -1; }
}

// ---- one request ----

function wellFormedError(e) {
  const b = e?.error;
  return b !== null && typeof b === 'object' && typeof b.message === 'string' && b.message.length > 0;
}

async function oneRequest(o, id, model, stream) {
  const st = { done: false, status: null };
  const r = { id, model, stream, t_start: now(), t_end: null, class: null, detail: null,
    status: null, attempts: null, route: null };
  const client = new OpenAI({
    baseURL: o.base, apiKey: o.key, maxRetries: o.maxRetries || 0, timeout: o.timeoutMs, fetch: watchingFetch(st, (res) => {
      st.status = res.status;
      st.ctype = res.headers.get('content-type');
      st.attempts = res.headers.get('x-orgw-attempts');
      st.route = res.headers.get('x-orgw-route');
    }),
  });
  const body = { model, messages: [{ role: 'user', content: `soak request ${id}` }] };
  if (stream) body.stream = true;
  let content = '';
  let finish = null;
  try {
    const { data } = await client.chat.completions.create(body).withResponse();
    if (!stream) {
      const c = data?.choices?.[0]?.message?.content;
      if (typeof c === 'string' && c.length > 0) r.class = 'ok';
      else { r.class = 'broken'; r.detail = `200 without content: ${JSON.stringify(data).slice(0, 200)}`; }
    } else {
      for await (const chunk of data) {
        const ch = chunk.choices?.[0];
        if (ch?.delta?.content) content += ch.delta.content;
        if (ch?.finish_reason) finish = ch.finish_reason;
      }
      if (st.done && content.length > 0 && finish === 'stop') r.class = 'ok';
      else {
        r.class = 'broken';
        r.detail = `stream ended: done=${st.done} content=${content.length} finish=${finish}`;
      }
    }
  } catch (e) {
    const name = e?.constructor?.name ?? typeof e;
    if (name === 'APIConnectionTimeoutError') { r.class = 'hung'; r.detail = 'client timeout'; }
    else if (e instanceof OpenAI.APIError && wellFormedError(e) && !st.done) {
      r.class = 'error';
      r.detail = `${e.status ?? 'in-stream'} ${e.error.code ?? ''} ${String(e.error.message).slice(0, 120)}`;
      r.error_status = e.status ?? 'stream';
      r.error_code = e.error.code ?? null;
    } else {
      r.class = 'broken';
      // The whole cause chain: fetch failed <- other side closed <- ...
      const causes = [];
      for (let c = e?.cause, i = 0; c && i < 4; c = c.cause, i++) {
        causes.push(`${c.code ?? c.name ?? ''} ${String(c.message ?? c).slice(0, 80)}`.trim());
      }
      r.detail = `${name} ${e?.status ?? ''}: ${String(e?.message ?? e).slice(0, 200)}` +
        (causes.length ? ` (cause: ${causes.join(' <- ')})` : '');
    }
  }
  r.t_end = now();
  r.status = st.status;
  r.attempts = st.attempts;
  r.route = st.route;
  return r;
}

// ---- main ----

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const rnd = makeRng(o.seed);
  const endAt = o.seconds * 1000;
  const results = [];
  const kills = [];
  const scorerRuns = [];
  const worker = { born: new Map(), expected: 0, unexpected: [], min_seen: Infinity, restore_ms: [] };
  let next = 0;
  let stopping = false;

  // Worker watch: learn the PIDs, note every disappearance.
  const killedPids = new Set();
  const seen = (list) => {
    const t = now();
    for (const p of list) if (!worker.born.has(p)) worker.born.set(p, t);
    for (const p of [...worker.born.keys()]) {
      if (!list.includes(p)) {
        worker.born.delete(p);
        if (!killedPids.has(p)) worker.unexpected.push({ pid: p, t });
      }
    }
  };
  if (o.supervisor) {
    const l = children(o.supervisor);
    worker.expected = l.length;
    for (const p of l) worker.born.set(p, -1e9);	// old enough to kill
  }
  const watchTimer = o.supervisor ? setInterval(() => {
    const l = children(o.supervisor);
    seen(l);
    if (now() > 1000) worker.min_seen = Math.min(worker.min_seen, l.length);
  }, 100) : null;

  // Kill loop: one worker every killEveryMs.
  const killLoop = (async () => {
    if (!o.supervisor || !(o.killEveryMs > 0)) return;
    for (let k = 1; ; k++) {
      const at = k * o.killEveryMs;
      if (at >= endAt) return;
      await sleep(Math.max(0, at - now()));
      const list = children(o.supervisor);
      seen(list);
      const t = now();
      const old = list.filter((p) => t - (worker.born.get(p) ?? t) >= o.killMinAgeMs);
      const pool = old.length ? old : list;
      if (!pool.length) { kills.push({ t, pid: null, note: 'no worker to kill' }); continue; }
      const fds = pool.map((p) => [p, fdCount(p)]);
      const minFd = Math.min(...fds.map((x) => x[1]));
      const busy = fds.filter((x) => x[1] > minFd).map((x) => x[0]);
      const pick = (busy.length ? busy : pool)[Math.floor(rnd() * (busy.length ? busy : pool).length)];
      killedPids.add(pick);
      const serving = o.workersFile ? busyOf(o.workersFile, pick) : null;
      try {
        process.kill(pick, 'SIGKILL');
        kills.push({ t: now(), pid: pick, busy: busy.includes(pick), serving, young: !old.length });
      } catch (e) {
        // Nothing was caught: serving 0 (the worker was gone already).
        kills.push({ t: now(), pid: pick, serving: 0, note: `kill failed: ${e.message}` });
        continue;
      }
      // Capacity back?  Poll up to 5 s for the full worker count.
      const k0 = now();
      let back = null;
      while (now() - k0 < 5000) {
        await sleep(50);
        const l = children(o.supervisor);
        seen(l);
        if (l.length >= worker.expected && !l.includes(pick)) { back = now() - k0; break; }
      }
      kills[kills.length - 1].restored_ms = back;
      if (back !== null) worker.restore_ms.push(back);
    }
  })();

  // Scorer loop: orgw-score every scoreEveryMs (never two at once).
  const scoreLoop = (async () => {
    if (!o.scorer || !(o.scoreEveryMs > 0)) return;
    const logFd = o.scorerLog ? fs.openSync(o.scorerLog, 'a') : null;
    for (let k = 1; ; k++) {
      const at = k * o.scoreEveryMs;
      if (at >= endAt) break;
      await sleep(Math.max(0, at - now()));
      const t = now();
      const res = await new Promise((resolve) => {
        execFile(o.scorer, ['--json'], {
          env: { PATH: process.env.PATH, ORGW_CONFIG: o.scorerConfig ?? '',
            ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? '', UBSAN_OPTIONS: process.env.UBSAN_OPTIONS ?? '' },
          timeout: 30000, maxBuffer: 16 << 20,
        }, (err, stdout, stderr) => {
          if (logFd !== null) fs.writeSync(logFd, stderr);
          let models = null;
          try { models = JSON.parse(stdout)?.models ? Object.keys(JSON.parse(stdout).models).length : null; } catch (_) { /* not JSON */ }
          resolve({ t, ms: now() - t, exit: err ? (err.code ?? err.signal ?? 'error') : 0, models });
        });
      });
      scorerRuns.push(res);
    }
    if (logFd !== null) fs.closeSync(logFd);
  })();

  // The clients.
  const client = async () => {
    while (!stopping && now() < endAt) {
      const id = next++;
      const model = o.models[Math.floor(rnd() * o.models.length)];
      const stream = rnd() < o.streamRatio;
      results.push(await oneRequest(o, id, model, stream));
    }
  };
  const clients = [];
  for (let i = 0; i < o.clients; i++) clients.push(client());
  await Promise.all(clients);
  stopping = true;
  await killLoop;
  await scoreLoop;
  if (watchTimer) clearInterval(watchTimer);

  // Attribute broken requests to kills: in flight at the kill, ended
  // within KILL_WINDOW_MS after it (a threaded worker holds several).
  for (const r of results.filter((x) => x.class === 'broken').sort((a, b) => a.t_end - b.t_end)) {
    const k = kills.findIndex((kk) => kk.pid && r.t_start <= kk.t + 5 &&
      r.t_end >= kk.t - 5 && r.t_end - kk.t <= KILL_WINDOW_MS);
    if (k >= 0) r.killed = kills[k].pid;
  }
  if (o.double) {
    let seen = null;
    try {
      const res = await fetch(`${o.double}/__double/log?path=chat`);
      const j = await res.json();
      seen = new Set();
      for (const e of j.requests) {
        const m = /^soak request (\d+)$/.exec(e?.body?.messages?.[0]?.content ?? '');
        if (m) seen.add(Number(m[1]));
      }
    } catch (e) { process.stderr.write(`driver.mjs: double log: ${e.message}\n`); }
    if (seen) {
      for (const r of results) {
        if (r.class === 'broken' && !r.killed && r.status === null && !seen.has(r.id)) r.unsent = true;
      }
    }
  }
  const count = (f) => results.filter(f).length;
  const lat = results.map((r) => r.t_end - r.t_start).sort((a, b) => a - b);
  const pct = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : null;
  const byErr = {};
  for (const r of results) if (r.class === 'error') byErr[r.error_status] = (byErr[r.error_status] || 0) + 1;
  const report = {
    seconds: o.seconds, clients: o.clients,
    sent: results.length,
    ok: count((r) => r.class === 'ok'),
    error: count((r) => r.class === 'error'),
    errors_by_status: byErr,
    hung: count((r) => r.class === 'hung'),
    broken: count((r) => r.class === 'broken'),
    broken_killed: count((r) => r.class === 'broken' && r.killed),
    broken_unsent: count((r) => r.class === 'broken' && !r.killed && r.unsent),
    broken_other: count((r) => r.class === 'broken' && !r.killed && !r.unsent),
    stream: count((r) => r.stream), non_stream: count((r) => !r.stream),
    latency_ms: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: lat.length ? lat[lat.length - 1] : null },
    kills,
    kills_done: kills.filter((k) => k.pid).length,
    // Requests the killed workers were serving (null: a slot unread).
    serving_killed: kills.some((k) => k.pid && (k.serving ?? null) === null) ? null
      : kills.reduce((a, k) => a + (k.pid ? k.serving : 0), 0),
    workers_expected: worker.expected,
    workers_min_seen: worker.min_seen === Infinity ? null : worker.min_seen,
    workers_at_end: o.supervisor ? children(o.supervisor).length : null,
    unexpected_worker_exits: worker.unexpected,
    scorer_runs: scorerRuns,
    broken_samples: results.filter((r) => r.class === 'broken').slice(0, 20),
    hung_samples: results.filter((r) => r.class === 'hung').slice(0, 10),
    error_samples: results.filter((r) => r.class === 'error').slice(0, 10).map((r) => r.detail),
  };
  fs.writeFileSync(o.out, JSON.stringify(report, null, 1) + '\n');
  fs.writeFileSync(o.out.replace(/\.json$/, '') + '.requests.jsonl',
    results.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(`driver.mjs: ${e?.stack ?? e}\n`);
  process.exit(3);
});
