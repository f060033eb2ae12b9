#!/usr/bin/env node
// report-team.mjs - the "Team run" section of RESULTS.md (bench/run.sh
// phase 7c), from DIR/team.jsonl and DIR/meta.txt.  bench/report.mjs
// imports teamSection(); run alone (`--out DIR --results FILE`, what
// BENCH_TEAM_ONLY=1 does) it writes just this section.  Also returns the
// figures of each mode for summary.json.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, median } from './lib.mjs';

const f = (x, d = 1) => (x == null || Number.isNaN(x) ? 'n/a' : Number(x).toFixed(d));
const LABEL = { on: 'CONVERSATIONS=1', off: 'CONVERSATIONS=0' };

export function teamSection(D) {
  const rd = (x) => fs.readFileSync(path.join(D, x), 'utf8');
  const has = (x) => fs.existsSync(path.join(D, x));
  const runs = has('team.jsonl') ? rd('team.jsonl').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const meta = has('meta.txt') ? Object.fromEntries(rd('meta.txt').split('\n').filter(Boolean)
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) : {};
  const lines = [];
  const p = (s = '') => lines.push(s);
  const goals = {};
  if (!runs.length) return { lines, goals };

  const ok = runs.filter((r) => r.result);
  const n = Number(meta.team_sessions), t = Number(meta.team_turns);
  p('## Team run');
  p();
  p(`${n} Claude Code-shaped sessions at once (bench/team.mjs), ${t} streamed Messages turns each: `
    + `a ${meta.team_sys_kb} KB system prompt of the session's own with a cache breakpoint, the conversation `
    + 'growing by the answer and a tool result each turn, the newest message marked too. The model\'s '
    + `cheapest endpoint (its lock) serves ${meta.team_cap} at once and caches what a breakpoint marks; a second `
    + `serves ${2 * Number(meta.team_cap)} at once, a third without limit, both caching implicitly and dearer. `
    + `First token after ${meta.team_first_ms} ms. A 429 from orgw (an HTTP 429, or a \`rate_limit_error\` `
    + 'event in a stream orgw had committed to keep the connection alive while it retried) is retried by '
    + 'the client after its Retry-After or 1, 2, 4 ... s, as Claude Code does. The same orgw stack, its '
    + 'workers restarted with the setting, the modes alternated, each run on a model of its own; the '
    + 'orgw stack\'s other settings are the defaults (`RETRY_429_DELAYS` 2,4,8, `MAX_ATTEMPTS` 4, '
    + '`PRESSURE_SECONDS` 30).');
  p();
  p('| run | wall s | turns answered | 429s to clients | upstream 429s | upstream requests | cached share | cost USD (usage / billed) | sessions on one provider | turn median / p90 s (client retries included) | turns per provider |');
  p('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of runs) {
    const j = r.result;
    const name = `${LABEL[r.mode] || r.mode} #${r.round}`;
    if (!j) { p(`| ${name} | failed | | | | | | | | | |`); continue; }
    const prov = Object.entries(j.providers).sort().map(([k, v]) => `${k || '?'} ${v}`).join(', ');
    p(`| ${name} | ${f(j.wall_ms / 1000)} | ${j.turns_ok} of ${j.sessions * j.turns} | ${j.client_429} | `
      + `${j.upstream_429 ?? 'n/a'} | ${j.upstream_requests ?? 'n/a'} | ${f(100 * j.cached_share)}% | `
      + `${f(j.cost_usd, 3)} / ${f(j.billed_usd, 3)} | ${j.one_provider} of ${j.sessions} | `
      + `${f(j.turn_ms.median / 1000, 2)} / ${f(j.turn_ms.p90 / 1000, 2)} | ${prov} |`);
  }
  p();
  for (const mode of ['on', 'off']) {
    const rs = ok.filter((r) => r.mode === mode).map((r) => r.result);
    if (!rs.length) continue;
    const sum = (k) => rs.reduce((a, j) => a + (j[k] || 0), 0);
    goals[`team_${mode}`] = {
      runs: rs.length,
      wall_s_median: median(rs.map((j) => j.wall_ms / 1000)),
      turns_ok: sum('turns_ok'), client_429: sum('client_429'), upstream_429: sum('upstream_429'),
      cached_share: sum('prompt_tokens') ? sum('cached_tokens') / sum('prompt_tokens') : null,
      cost_usd_mean: sum('cost_usd') / rs.length, one_provider: sum('one_provider'),
      sessions: sum('sessions'),
    };
  }
  const on = goals.team_on, off = goals.team_off;
  if (on && off) {
    p(`Per mode over its runs: wall time (median) ${f(on.wall_s_median)} s with conversations, `
      + `${f(off.wall_s_median)} s without (${f(off.wall_s_median / on.wall_s_median, 2)}x); 429s to clients `
      + `${on.client_429} against ${off.client_429}, upstream ${on.upstream_429} against ${off.upstream_429}; `
      + `cached share ${f(100 * on.cached_share)}% against ${f(100 * off.cached_share)}%; cost a run `
      + `$${f(on.cost_usd_mean, 3)} against $${f(off.cost_usd_mean, 3)}; sessions on one provider `
      + `${on.one_provider} of ${on.sessions} against ${off.one_provider} of ${off.sessions}.`);
    p();
  }
  const errs = ok.flatMap((r) => (r.result.errors || []).map((e) => `${r.mode} #${r.round}: ${e}`));
  if (errs.length) {
    p(`Turns not answered (first of each run): ${errs.slice(0, 4).join('; ')}.`);
    p();
  }
  if (meta.team_wall_s) p(`Phase wall time ${meta.team_wall_s} s.`);
  p();
  return { lines, goals };
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const opt = parseArgs(process.argv.slice(2), { out: '', results: '' });
  const { lines, goals } = teamSection(opt.out);
  fs.writeFileSync(opt.results, `${lines.join('\n')}\n`);
  fs.writeFileSync(path.join(opt.out, 'summary-team.json'), `${JSON.stringify(goals, null, 1)}\n`);
}
