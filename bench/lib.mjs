// lib.mjs - shared pieces of the bench drivers (seq.mjs, stream.mjs).
//
// A target file (written by bench/run.sh) is JSON:
//   {"body": {...chat request...},
//    "targets": [{"name": "direct", "url": "http://127.0.0.1:P/api/v1/chat/completions",
//                 "headers": {"Authorization": "Bearer ..."}}, ...]}
// Node 20 built-ins only.
import fs from 'node:fs';
import http from 'node:http';

export function parseArgs(argv, defaults) {
  const o = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const k = a.slice(2).replace(/-/g, '_');
    if (!(k in o)) throw new Error(`unknown option ${a}`);
    if (typeof o[k] === 'boolean') o[k] = true;
    else o[k] = typeof o[k] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  return o;
}

export function loadTargets(file, only) {
  const j = JSON.parse(fs.readFileSync(file, 'utf8'));
  let t = j.targets;
  if (only) {
    const want = only.split(',');
    t = t.filter((x) => want.includes(x.name));
  }
  return { body: j.body, targets: t };
}

export const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

export function median(a) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function pct(a, p) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

export const r3 = (x) => (x == null ? null : Math.round(x * 1000) / 1000);

// One keep-alive agent per target, one socket: sequential requests reuse
// the connection, as a client library would.
export function agentFor() {
  return new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
}

// Sends one request; resolves {status, ms, bytes} or rejects.  onChunk
// (optional) sees every body chunk with its arrival time.
export function request(t, payload, agent, onResponse, onChunk, timeoutMs = 30000) {
  const u = new URL(t.url);
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(payload),
    ...t.headers,
  };
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const req = http.request({
      agent, host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers,
    }, (res) => {
      if (onResponse) onResponse(res, nowMs() - t0);
      let bytes = 0;
      res.on('data', (c) => {
        bytes += c.length;
        if (onChunk) onChunk(c, nowMs() - t0);
      });
      res.on('end', () => resolve({ status: res.statusCode, ms: nowMs() - t0, bytes }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}
