// bench/departures.mjs - clients that leave: each sends one chat request
// and closes its connection (a normal close: FIN, nothing unread) after a
// set time, recording when it did.  Used by bench/departures.sh and
// tests/integration/t0595-client-leaves.sh.
//
//   node bench/departures.mjs PLAN.json
//
// PLAN: {"clients":[{"name", "url", "key", "body", "close_after_ms"}]};
// all run at once.  Out: one JSON object {name: {t_start_ms, t_close_ms,
// status, bytes, ended}}, times in epoch ms (the double's clock: same
// machine).  ended: the answer ended before the client left (it never
// closed then).
import http from 'node:http';
import fs from 'node:fs';

const now = () => performance.timeOrigin + performance.now();
const readJson = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));

// --report SERVERS (PLAN CLIENTS LOG)...: the Markdown table, server x
// phase, from the plans, the clients' results and the double's logs.
if (process.argv[2] === '--report') {
  const servers = process.argv[3].split(/\s+/).filter(Boolean);
  const phases = [];
  const cell = {};
  for (let i = 4; i + 2 < process.argv.length; i += 3) {
    const plan = readJson(process.argv[i]);
    const res = readJson(process.argv[i + 1]);
    const log = readJson(process.argv[i + 2]).requests;
    for (const c of plan.clients) {
      if (!phases.includes(c.phase)) phases.push(c.phase);
      const r = res[c.name];
      const seen = log.filter((e) => e.model === c.body.model).sort((a, b) => a.seq - b.seq);
      let text;
      if (r.ended || r.t_close_ms === null) text = 'answer ended first';
      else if (seen.length === 0) text = 'no upstream request';
      else if (c.phase.startsWith('429')) {
        text = seen.length === 1 ? 'no retry made'
          : `retried ${Math.round(seen[1].t_ms - r.t_close_ms)} ms after the close`;
      } else {
        const e = seen[0];
        if (e.closed_by_client) text = `${Math.round(e.closed_at_ms - r.t_close_ms)} ms`;
        else if (e.finished_at_ms) text = 'not seen until the answer ended';
        else text = 'not seen in the window';
        if (seen.length > 1) text += ` (+${seen.length - 1} attempts)`;
      }
      cell[`${c.server}/${c.phase}`] = text;
    }
  }
  const row = (a) => `| ${a.join(' | ')} |`;
  console.log(row(['server', ...phases]));
  console.log(row(['---', ...phases.map(() => '---')]));
  for (const s of servers) console.log(row([s, ...phases.map((p) => cell[`${s}/${p}`] ?? '')]));
  process.exit(0);
}

const plan = readJson(process.argv[2]);

function one(c) {
  return new Promise((resolve) => {
    const r = { t_start_ms: now(), t_close_ms: null, status: null, bytes: 0, ended: false };
    const body = JSON.stringify(c.body);
    const req = http.request(c.url, {
      method: 'POST', agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
        Authorization: `Bearer ${c.key}` },
    });
    const timer = setTimeout(() => {
      r.t_close_ms = now();
      req.destroy();
      resolve(r);
    }, c.close_after_ms);
    req.on('response', (res) => {
      r.status = res.statusCode;
      res.on('data', (d) => { r.bytes += d.length; });
      res.on('end', () => { clearTimeout(timer); r.ended = true; resolve(r); });
    });
    req.on('error', () => { clearTimeout(timer); resolve(r); });
    req.end(body);
  });
}

const names = plan.clients.map((c) => c.name);
const results = await Promise.all(plan.clients.map(one));
const out = {};
names.forEach((n, i) => { out[n] = results[i]; });
process.stdout.write(JSON.stringify(out) + '\n');
