#!/usr/bin/env node
// selfbench: raw speed of the OpenRouter test double (no gateway involved).
//
//   node tests/double/selfbench.js [--url http://127.0.0.1:PORT] [--concurrency 64] [--duration 3]
//                                  [--stream] [--model acme/x] [--key KEY] [--warmup 0.5] [--pid PID]
//                                  [--api chat|messages|responses]
//
// Without --url it starts its own double on a free port and stops it afterwards. It also reads the
// double's CPU time from /proc (its own child, or --pid) and reports how busy the double was, so you
// can tell whether the double or this client was the limit.
// Prints one summary line plus a JSON line (for scripts). Node 20 built-ins only.
'use strict';

const http = require('http');
const path = require('path');
const os = require('os');
const fs = require('fs');
const { spawn } = require('child_process');

function parseArgs(argv) {
  const o = { url: null, concurrency: 64, duration: 3, stream: false, model: 'acme/bench', key: null, warmup: 0.5, api: 'chat' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    switch (a) {
      case '--url': o.url = v(); break;
      case '--concurrency': case '-c': o.concurrency = Number(v()); break;
      case '--duration': case '-d': o.duration = Number(v()); break;
      case '--warmup': o.warmup = Number(v()); break;
      case '--stream': o.stream = true; break;
      case '--model': o.model = v(); break;
      case '--key': o.key = v(); break;
      case '--pid': o.pid = Number(v()); break;
      case '--api': o.api = v(); break;
      default: process.stderr.write(`unknown argument ${a}\n`); process.exit(2);
    }
  }
  if (!['chat', 'messages', 'responses'].includes(o.api)) { process.stderr.write('--api is chat, messages or responses\n'); process.exit(2); }
  return o;
}

const opt = parseArgs(process.argv.slice(2));
process.stdout.on('error', () => {}); // e.g. piped into head
const KEY = opt.key || process.env.DOUBLE_KEY || 'sk-or-v1-test-double-key';

async function startDouble() {
  const portFile = path.join(os.tmpdir(), `selfbench-double-${process.pid}.port`);
  try { fs.unlinkSync(portFile); } catch (_) { /* none */ }
  const child = spawn(process.execPath, [path.join(__dirname, 'openrouter-double.js'), '--port', '0', '--port-file', portFile, '--key', KEY],
    { stdio: ['ignore', 'ignore', 'inherit'] });
  const t0 = Date.now();
  while (!fs.existsSync(portFile)) {
    if (Date.now() - t0 > 5000) { child.kill('SIGTERM'); throw new Error('double did not start'); }
    await new Promise((r) => setTimeout(r, 20));
  }
  const port = Number(fs.readFileSync(portFile, 'utf8'));
  fs.unlinkSync(portFile);
  return { child, url: `http://127.0.0.1:${port}` };
}

async function main() {
  let child = null;
  let url = opt.url;
  if (!url) ({ child, url } = await startDouble());
  const u = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opt.concurrency, maxFreeSockets: opt.concurrency });
  // the same request in each API's shape
  const system = 'You are a benchmark.', question = 'Say hello in three words, please.';
  const body = JSON.stringify(
    opt.api === 'messages' ? { model: opt.model, system, messages: [{ role: 'user', content: question }], stream: opt.stream, max_tokens: 64 }
      : opt.api === 'responses' ? { model: opt.model, instructions: system, input: [{ role: 'user', content: question }], stream: opt.stream, max_output_tokens: 64, store: false }
        : { model: opt.model, messages: [{ role: 'system', content: system }, { role: 'user', content: question }], stream: opt.stream, max_tokens: 64 });
  const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Authorization: `Bearer ${KEY}` };
  const apiPath = { chat: '/api/v1/chat/completions', messages: '/api/v1/messages', responses: '/api/v1/responses' }[opt.api];
  const reqOpts = { agent, host: u.hostname, port: u.port, path: apiPath, method: 'POST', headers };

  const dpid = child ? child.pid : opt.pid;
  const cpuTicks = () => {
    try {
      const f = fs.readFileSync(`/proc/${dpid}/stat`, 'utf8');
      const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
      return Number(rest[11]) + Number(rest[12]); // utime + stime, in USER_HZ (100/s on Linux)
    } catch (_) { return null; }
  };
  let measuring = false;
  let stop = false;
  let ok = 0, bad = 0, errors = 0, bytes = 0;
  const lat = [];

  const one = () => new Promise((resolve) => {
    const t = process.hrtime.bigint();
    const req = http.request(reqOpts, (res) => {
      let n = 0;
      res.on('data', (c) => { n += c.length; });
      res.on('end', () => {
        if (measuring) {
          if (res.statusCode === 200) ok++; else bad++;
          bytes += n;
          lat.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
        resolve();
      });
      res.on('error', () => { if (measuring) errors++; resolve(); });
    });
    req.on('error', () => { if (measuring) errors++; resolve(); });
    req.end(body);
  });

  const worker = async () => { while (!stop) await one(); };
  const workers = [];
  for (let i = 0; i < opt.concurrency; i++) workers.push(worker());
  await new Promise((r) => setTimeout(r, opt.warmup * 1000));
  measuring = true;
  const c0 = dpid ? cpuTicks() : null;
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, opt.duration * 1000));
  measuring = false;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const c1 = dpid ? cpuTicks() : null;
  stop = true;
  await Promise.all(workers);
  agent.destroy();
  if (child) child.kill('SIGTERM');

  lat.sort((a, b) => a - b);
  const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : 0);
  const rps = (ok + bad) / secs;
  const r = {
    url, api: opt.api, stream: opt.stream, concurrency: opt.concurrency, seconds: +secs.toFixed(3), ok, non200: bad, errors,
    req_per_s: Math.round(rps), mb_per_s: +(bytes / secs / 1e6).toFixed(2),
    p50_ms: +pct(0.5).toFixed(2), p99_ms: +pct(0.99).toFixed(2), max_ms: +(lat[lat.length - 1] || 0).toFixed(2),
    double_cpu_pct: null, double_capacity_est_req_per_s: null,
  };
  if (c0 !== null && c1 !== null) {
    const busy = (c1 - c0) / 100 / secs; // fraction of one core
    r.double_cpu_pct = Math.round(busy * 100);
    if (busy > 0) r.double_capacity_est_req_per_s = Math.round(rps / busy);
  }
  process.stdout.write(`selfbench: ${r.req_per_s} req/s (${opt.api}, ${opt.stream ? 'stream' : 'non-stream'}, c=${r.concurrency}, ${r.seconds}s) ` +
    `ok=${ok} non200=${bad} errors=${errors} p50=${r.p50_ms}ms p99=${r.p99_ms}ms` +
    (r.double_cpu_pct !== null ? ` double_cpu=${r.double_cpu_pct}% (=> ~${r.double_capacity_est_req_per_s} req/s per core)` : '') + '\n');
  process.stdout.write(`${JSON.stringify(r)}\n`);
  process.exitCode = bad || errors || !ok ? 1 : 0;
}

main().catch((e) => { process.stderr.write(`selfbench: ${e.stack || e}\n`); process.exit(1); });
