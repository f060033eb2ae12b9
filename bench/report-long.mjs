#!/usr/bin/env node
// report-long.mjs - the "Concurrent long streams" section of RESULTS.md
// (bench/run.sh phase 7), from DIR/long.jsonl, DIR/mem.jsonl and
// DIR/meta.txt.  bench/report.mjs imports longSection(); run alone
// (`--out DIR --results FILE`, what BENCH_LONG_ONLY=1 does) it writes just
// this section.  Also returns the goal figures for summary.json.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from './lib.mjs';

const LABEL = { proxy: '(b) lighttpd mod_proxy', orgw: '(c) lighttpd + orgw', portkey: '(d) Portkey' };
const f = (x, d = 1) => (x == null || Number.isNaN(x) ? 'n/a' : Number(x).toFixed(d));
const mib = (kb) => (kb == null ? 'n/a' : (kb / 1024).toFixed(1));
const yes = (ok) => (ok == null ? 'n/a' : ok ? '**met**' : '**not met**');

export function longSection(D) {
  const rd = (x) => fs.readFileSync(path.join(D, x), 'utf8');
  const has = (x) => fs.existsSync(path.join(D, x));
  const jsonl = (x) => (has(x) ? rd(x).split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
  const meta = has('meta.txt') ? Object.fromEntries(rd('meta.txt').split('\n').filter(Boolean)
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) : {};
  const runs = jsonl('long.jsonl');
  const mem = jsonl('mem.jsonl');
  const lines = [];
  const p = (s = '') => lines.push(s);
  const goals = {};
  if (!runs.length) return { lines, goals };

  // Summed PSS (KiB) of one role in one phase, null when not sampled.
  const pss = (phase, role) => {
    const ms = mem.filter((m) => m.phase === phase && m.role === role);
    return ms.length ? ms.reduce((a, m) => a + m.pss_kb, 0) : null;
  };
  const count = (phase, role) => mem.filter((m) => m.phase === phase && m.role === role).length;
  const orgwOwn = (phase) => { // workers + multiwatch: the processes orgw brings
    const w = pss(phase, 'orgw-worker');
    return w == null ? null : w + (pss(phase, 'orgw-multiwatch') || 0);
  };
  const ns = [...new Set(runs.map((r) => r.n))].sort((a, b) => a - b);
  const get = (tag, target) => runs.find((r) => r.tag === tag && r.target === target);
  const threads = Number(meta.long_threads || 1);

  p('## Concurrent long streams');
  p();
  const r0 = runs.find((r) => r.result);
  const x0 = r0 ? r0.result : null;
  p(`${ns.join(' and ')} streams started evenly within ${x0 ? x0.window_ms : 1000} ms, each ${meta.long_seconds || (x0 && x0.seconds)} s long: `
    + `the double sends \`: OPENROUTER PROCESSING\` comments every 250 ms for ${meta.long_first_ms || (x0 && x0.first_ms)} ms, then ${x0 ? x0.chunks : 'n/a'} content events `
    + `${x0 ? `${x0.spacing_ms}-${x0.spacing_ms + x0.jitter_ms}` : '50-100'} ms apart (uniform), each word marked with its stream's own mark `
    + '(bench/longstreams.mjs; the paths one after the other on the same run). "Complete" means HTTP 200, every word present once, in order and the stream\'s own, a finish_reason and [DONE]. '
    + `orgw ran ${threads > 1 ? `${threads} threads per worker process (WORKER_THREADS)` : 'one request per worker process (the build has no WORKER_THREADS), so one worker per stream'}; the worker count is in the table.`);
  p();
  p('| streams | path | workers | complete | wrong / errors | first token median / p99 ms | vs bare proxy median / p99 | gap median / p99 ms (sent: median / p99) | batched gaps | client lag p99 / max ms | double lag p99 / max ms |');
  p('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const tags = [...new Set(runs.map((r) => r.tag))];
  for (const tag of tags) {
    for (const nm of ['proxy', 'orgw', 'portkey']) {
      const r = get(tag, nm);
      if (!r) continue;
      const body = tag.startsWith('longbody') ? `, ${f((r.result ? r.result.body_bytes : r.body_kb * 1024) / 1024, 0)} KiB bodies` : '';
      if (r.skipped || !r.result) {
        p(`| ${r.n}${body} | ${LABEL[nm]} | | skipped: ${r.skipped || 'client failed'} | | | | | | | |`);
        continue;
      }
      const x = r.result;
      const pr = get(tag, 'proxy');
      const px = pr && pr.result && nm !== 'proxy' ? pr.result : null;
      const d = (k) => (px && x.first_token_ms[k] != null && px.first_token_ms[k] != null
        ? `${x.first_token_ms[k] - px.first_token_ms[k] >= 0 ? '+' : ''}${f(x.first_token_ms[k] - px.first_token_ms[k], 1)}` : 'n/a');
      const st = Object.entries(x.statuses).filter(([k]) => k !== '200').map(([k, v]) => `${v}×${k === '0' ? 'no answer' : k}`).join(', ');
      p(`| ${r.n}${body} | ${LABEL[nm]} | ${nm === 'orgw' ? `${r.workers}${r.threads > 1 ? ` × ${r.threads} threads` : ''}` : '—'} | ${x.completed}/${x.n} | ${x.wrong} / ${x.errors}${st ? ` (${st})` : ''} | `
        + `${f(x.first_token_ms.median)} / ${f(x.first_token_ms.p99)} | ${nm === 'proxy' ? '—' : `${d('median')} / ${d('p99')} ms`} | `
        + `${f(x.gap_ms.median)} / ${f(x.gap_ms.p99)} (${f(x.gap_sent_ms.median)} / ${f(x.gap_sent_ms.p99)}) | ${x.gap_ms.batched}/${x.gap_ms.n} | `
        + `${f(x.client_lag_ms.p99)} / ${f(x.client_lag_ms.max)} | ${r.double_lag_ms ? `${f(r.double_lag_ms.p99)} / ${f(r.double_lag_ms.max)}` : 'n/a'} |`);
      if (nm === 'orgw' && px && !tag.startsWith('longbody')) {
        goals[`long${r.n}_first_token_vs_proxy_ms`] = { median: x.first_token_ms.median - px.first_token_ms.median, p99: x.first_token_ms.p99 - px.first_token_ms.p99 };
        goals[`long${r.n}_complete`] = x.completed === x.n;
      }
    }
  }
  p();
  p('"Client lag" is how late the client\'s own event loop ran (beyond its 10 ms sampling): every arrival time is taken when the loop gets to it, so a lag of L ms can add up to L ms to any first token or gap on every path alike. "Double lag" is the same for the OpenRouter double, during that run. "Batched" gaps are under half the smallest spacing: events a path held back and delivered together.');
  p();

  p('Memory (PSS from /proc/PID/smaps_rollup, summed over the processes; "idle" after every worker served one request, with that pool, before the runs; "with N open" once every stream had its first token):');
  p();
  p('| streams | orgw workers: count, PSS idle / with N open MiB | multiwatch MiB | orgw + multiwatch idle / open MiB | per stream KiB | orgw lighttpd idle / open MiB | bare proxy lighttpd idle / open MiB | per stream KiB | Portkey idle / open MiB | per stream KiB |');
  p('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const per = (a, b, n) => (a == null || b == null ? 'n/a' : f((b - a) / n, 1));
  for (const tag of tags) {
    const n = Number(tag.replace(/^long(body)?-/, ''));
    const idle = `long-idle-${n}`;
    const big = tag.startsWith('longbody');
    const rr = runs.find((r) => r.tag === tag && r.result);
    const label = big ? `${n}, ${f((rr ? rr.result.body_bytes : 0) / 1024, 0)} KiB bodies` : `${n}`;
    const ow = orgwOwn(idle);
    const oo = orgwOwn(tag);
    p(`| ${label} | ${count(idle, 'orgw-worker') || count(tag, 'orgw-worker')}: ${mib(pss(idle, 'orgw-worker'))} / ${mib(pss(tag, 'orgw-worker'))} | ${mib(pss(tag, 'orgw-multiwatch'))} | `
      + `${mib(ow)} / ${mib(oo)} | ${per(ow, oo, n)} | ${mib(pss(idle, 'orgw-lighttpd'))} / ${mib(pss(tag, 'orgw-lighttpd'))} | `
      + `${mib(pss(idle, 'proxy-lighttpd'))} / ${mib(pss(tag, 'proxy-lighttpd'))} | ${per(pss(idle, 'proxy-lighttpd'), pss(tag, 'proxy-lighttpd'), n)} | `
      + `${big ? '—' : `${mib(pss(idle, 'portkey-node'))} / ${mib(pss(tag, 'portkey-node'))}`} | ${big ? '—' : per(pss(idle, 'portkey-node'), pss(tag, 'portkey-node'), n)} |`);
    if (!big) {
      goals[`long${n}_orgw_idle_pss_kb`] = ow;
      goals[`long${n}_orgw_pss_kb`] = oo;
    } else goals[`long${n}_orgw_big_body_per_stream_kb`] = ow != null && oo != null ? (oo - ow) / n : null;
  }
  p();
  const g = (n) => goals[`long${n}_first_token_vs_proxy_ms`];
  const memN = (n) => goals[`long${n}_orgw_pss_kb`];
  p('Goals for concurrent long streams (orgw = workers + multiwatch; lighttpd shown apart):');
  p();
  p('| goal | measured | |');
  p('| --- | --- | --- |');
  if (g(256)) p(`| 256 streams: first token within 50 ms of the bare proxy's, median and p99 | ${f(g(256).median)} / ${f(g(256).p99)} ms | ${yes(g(256).median <= 50 && g(256).p99 <= 50 && goals.long256_complete)} |`);
  const idleN = ns.find((n) => goals[`long${n}_orgw_idle_pss_kb`] != null);
  if (idleN != null) p(`| idle under 16 MiB | ${mib(goals[`long${idleN}_orgw_idle_pss_kb`])} MiB (pool for ${idleN}) | ${yes(goals[`long${idleN}_orgw_idle_pss_kb`] < 16 * 1024)} |`);
  if (memN(256) != null) p(`| 256 streams under 64 MiB | ${mib(memN(256))} MiB | ${yes(memN(256) < 64 * 1024)} |`);
  if (memN(1000) != null) p(`| 1,000 streams under 256 MiB | ${mib(memN(1000))} MiB | ${yes(memN(1000) < 256 * 1024)} |`);
  for (const n of ns) {
    const b = goals[`long${n}_orgw_big_body_per_stream_kb`];
    if (b != null) p(`| cost per stream with ${f(Number(meta.long_body_kb || 200), 0)} KB bodies (report) | ${f(b, 1)} KiB per stream at ${n} | |`);
  }
  p();
  const skipped = runs.filter((r) => r.skipped);
  if (skipped.length) {
    p(`Skipped: ${skipped.map((r) => `${r.tag} ${r.target} (${r.skipped})`).join('; ')}.`);
    p();
  }
  if (meta.long_wall_s) p(`Phase wall time ${meta.long_wall_s} s; open-file limit ${meta.nofile || 'n/a'}.`);
  p();
  return { lines, goals };
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const opt = parseArgs(process.argv.slice(2), { out: '', results: '' });
  const { lines, goals } = longSection(opt.out);
  fs.writeFileSync(opt.results, `${lines.join('\n')}\n`);
  fs.writeFileSync(path.join(opt.out, 'summary-long.json'), `${JSON.stringify(goals, null, 1)}\n`);
}
