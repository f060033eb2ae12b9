#!/usr/bin/env node
// seq.mjs - latency of sequential non-streaming requests, the targets
// alternated so that a busy moment of the machine hits all of them alike.
//
//   node bench/seq.mjs --targets FILE [--only a,b] [--warmup 15] [--rounds 7] [--per_round 25]
//
// Per target: `warmup` requests first (not counted), then `rounds` rounds;
// in each round every target gets `per_round` requests in a row, targets
// in file order (a,b,c,d,a,b,c,d,...).  The figure is the median of the
// round medians.  Prints one JSON object:
//   {"targets": {"direct": {"median_ms", "round_medians", "p10_ms", "p90_ms",
//                "min_ms", "n", "non200"}, ...}}
import { parseArgs, loadTargets, agentFor, request, median, pct, r3 } from './lib.mjs';

const opt = parseArgs(process.argv.slice(2), {
  targets: '', only: '', warmup: 15, rounds: 7, per_round: 25,
});
const { body, targets } = loadTargets(opt.targets, opt.only);
const payload = JSON.stringify({ ...body, stream: false });
const agents = new Map(targets.map((t) => [t.name, agentFor()]));
const res = Object.fromEntries(targets.map((t) => [t.name, { all: [], rounds: [], non200: 0, errors: 0 }]));

async function one(t, keep) {
  try {
    const r = await request(t, payload, agents.get(t.name));
    if (!keep) return;
    if (r.status !== 200) res[t.name].non200++;
    res[t.name].all.push(r.ms);
    return r.ms;
  } catch (e) {
    if (keep) res[t.name].errors++;
    return null;
  }
}

for (const t of targets)
  for (let i = 0; i < opt.warmup; i++) await one(t, false);
for (let r = 0; r < opt.rounds; r++) {
  for (const t of targets) {
    const lat = [];
    for (let i = 0; i < opt.per_round; i++) {
      const ms = await one(t, true);
      if (ms != null) lat.push(ms);
    }
    res[t.name].rounds.push(median(lat));
  }
}
for (const a of agents.values()) a.destroy();

const out = { targets: {} };
for (const t of targets) {
  const x = res[t.name];
  out.targets[t.name] = {
    median_ms: r3(median(x.rounds.filter((v) => v != null))),
    round_medians: x.rounds.map(r3),
    min_ms: r3(Math.min(...x.all)),
    p10_ms: r3(pct(x.all, 0.1)),
    p90_ms: r3(pct(x.all, 0.9)),
    n: x.all.length,
    non200: x.non200,
    errors: x.errors,
  };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exitCode = Object.values(out.targets).some((x) => x.non200 || x.errors || !x.n) ? 1 : 0;
