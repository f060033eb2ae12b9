// bench/agestate.mjs - a state with 30 days of history for one model and
// three providers, in the layout of this release or of the previous one,
// as orgw-score --load lines on stdout:
//
//   node bench/agestate.mjs ledger|stats [MODEL]
//
// ledger: this release's cells LEDGER:<model>:<day>:<api>:<tag> (30 days x
// 3 APIs x 3 providers) and HIT:<model>; stats: the previous
// release's one STATS:<model> record (days x providers, by_provider,
// by_api) and METRICS:<model>.  Same counts either way: 100 requests a
// day per API and provider.  The lock and candidates come from the
// requests the benchmark makes, as on a state that has seen them.
const layout = process.argv[2];
const model = process.argv[3] || 'deepseek/deepseek-v3.2';
const tags = ['deepseek', 'novita', 'deepinfra/fp8'];
const apis = ['chat', 'messages', 'responses'];
const DAY = 86400e3;
const days = [];
for (let i = 0; i < 30; i++) days.push(new Date(Date.now() - i * DAY).toISOString().slice(0, 10));
const per = { r: 100, ok: 99, pt: 512000, ct: 400000, out: 30000, usd: 0.41, sp: 0.41, un: 0.9, sv: 0.49, pr: 100 };
const line = (key, value) => console.log(JSON.stringify({ key, value }));

if (layout === 'ledger') {
  for (const d of days)
    for (const a of apis)
      for (const t of tags)
        line(`LEDGER:${model}:${d}:${a}:${t}`, {
          v: 1, ...per, e5xx: 1, o5xx: 1, tbs: 30000, tbn: 100, tbx: 900,
          tts: 400000, ttn: 100, ttx: 9000, t3: 60, t4: 40, d6: 70, d7: 30,
        });
  line(`HIT:${model}`, { v: 1, by_provider: Object.fromEntries(tags.map((t) => [t, { hit: { rate: 0.78, weight: 1e6, tokens: 5e7 } }])) });
} else if (layout === 'stats') {
  const n = days.length, k = tags.length * apis.length;
  const tok = (m) => ({ prompt: per.pt * m, cached: per.ct * m, cache_write: 0, completion: per.out * m });
  const money = (m) => ({ spend_usd: per.sp * m, uncached_usd: per.un * m, saved_usd: per.sv * m });
  const st = {
    v: 1, requests: per.r * n * k, ok: per.ok * n * k,
    errors: { '429': 0, '5xx': n * k, timeout: 0, slow: 0, mid_stream: 0, client_abort: 0, other: 0 },
    retries_429: 0, failovers: 0, breaker_trips: 0, off_pin: 0, tokens: tok(n * k),
    cost_usd: per.usd * n * k, cost_estimated_usd: 0,
    latency: { ttfb_ms_sum: 30000 * n * k, ttfb_count: 100 * n * k, ttfb_ms_max: 900,
      total_ms_sum: 400000 * n * k, total_count: 100 * n * k, total_ms_max: 9000 },
    by_provider: {}, by_api: {}, ...money(n * k), days: {},
  };
  for (const t of tags)
    st.by_provider[t] = { requests: per.r * n * 3, ok: per.ok * n * 3, tokens: tok(n * 3),
      cost_usd: per.usd * n * 3, cost_estimated_usd: 0,
      hit: { rate: 0.78, weight: 1e6, tokens: 5e7 }, ...money(n * 3) };
  for (const a of apis)
    st.by_api[a] = { requests: per.r * n * 3, ok: per.ok * n * 3, tokens: tok(n * 3),
      cost_usd: per.usd * n * 3, cost_estimated_usd: 0 };
  for (const d of days) {
    st.days[d] = {};
    for (const t of tags)
      st.days[d][t] = { ...money(3), requests: per.r * 3, prompt_tokens: per.pt * 3, cached_tokens: per.ct * 3 };
  }
  line(`STATS:${model}`, st);
  const mt = { v: 1, providers: {}, lock_changes: 0,
    ttfb: { buckets: [0, 0, 0, 60 * n * k, 40 * n * k, 0, 0, 0, 0, 0, 0, 0, 0], sum_ms: 30000 * n * k, count: 100 * n * k },
    duration: { buckets: [0, 0, 0, 0, 0, 0, 70 * n * k, 30 * n * k, 0, 0, 0, 0, 0], sum_ms: 400000 * n * k, count: 100 * n * k } };
  for (const t of tags)
    mt.providers[t] = { requests: { ok: per.ok * n * 3, '5xx': n * 3 },
      tokens: { input: per.pt * n * 3, cache_read: per.ct * n * 3, cache_write: 0, output: per.out * n * 3 } };
  line(`METRICS:${model}`, mt);
} else {
  console.error('usage: node bench/agestate.mjs ledger|stats [MODEL]');
  process.exit(2);
}
