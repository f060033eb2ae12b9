// conversations-page.mjs - the Conversations section of GET /status in
// headless Chromium (Debian's chromium through puppeteer-core): logs in
// with the key, then checks the section against the /stats document
// fetched right before, and its layout at 1280 and 390 px.  Prints one
// "ok - " / "not ok - " line per check, which tests/run.sh counts.
//
//   node conversations-page.mjs --base URL --key KEY --stats FILE --shots DIR
//
// Screenshots of the section go to DIR/status-conversations-1280.png and
// DIR/status-conversations-390.png.
import { readFileSync } from 'node:fs';
import { arg, check, checkLayoutAt, failures, launch } from './statuscheck.mjs';

const base = arg('base'), key = arg('key'), shots = arg('shots');
const stats = JSON.parse(readFileSync(arg('stats'), 'utf8'));

const browser = await launch();

// The Conversations section's two tables, as label -> text per row.
function readSection() {
  const h2 = [...document.querySelectorAll('section h2')].find((h) => h.textContent === 'Conversations');
  if (!h2) return null;
  const s = h2.closest('section');
  const rows = (t) => (t ? [...t.querySelectorAll('tbody tr')].map((tr) =>
    Object.fromEntries([...tr.children].map((td) => [td.dataset.label, td.textContent]))) : []);
  const tables = [...s.querySelectorAll('table')];
  return { conv: rows(tables[0]), pressure: rows(tables[1]), scripts: document.querySelectorAll('script').length };
}

try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  let res = await page.goto(`${base}/status`, { waitUntil: 'load' });
  await page.type('input[name=key]', key);
  [res] = await Promise.all([page.waitForNavigation(), page.click('form button')]);
  check('logged in: the page', res.status() === 200, res.status());
  const csp = res.headers()['content-security-policy'];
  check('the CSP is the page\'s own (no script allowed)', /^default-src 'none'; style-src 'unsafe-inline'/.test(csp ?? ''), csp);

  const info = await page.evaluate(readSection);
  check('a Conversations section, no script', info !== null && info.scripts === 0, info);
  const want = stats.conversations ?? [];
  const rows = info?.conv ?? [];
  check(`one row per /stats conversation (${want.length}), newest first`,
    want.length > 0 && rows.length === want.length &&
      want.every((c, i) => rows[i].conversation === c.id && rows[i].model === c.model &&
        rows[i].provider === c.provider && Number(rows[i].turns) === c.turns),
    { page: rows.slice(0, 5), stats: want.slice(0, 5).map((c) => [c.id, c.provider, c.turns]) });
  check('cached share and saved as /stats',
    want.every((c, i) => rows[i] &&
      rows[i].cached === `${(c.prompt_tokens > 0 ? (100 * Math.min(c.cached_tokens, c.prompt_tokens)) / c.prompt_tokens : 0).toFixed(1)}%` &&
      rows[i]['saved $'] === c.saved.toFixed(6)),
    rows.slice(0, 5));
  check('the last break in words, or "no break"',
    want.every((c, i) => rows[i] &&
      rows[i]['last break'] === (c.breaks.length ? c.breaks[c.breaks.length - 1].words : 'no break')),
    rows.slice(0, 5).map((r) => r['last break']));
  const wantP = [];
  for (const [m, o] of Object.entries(stats.models))
    for (const [tag, p] of Object.entries(o.conversations?.providers ?? {}))
      wantP.push(`${m} ${tag} ${p.active} ${p.provider_429s} ${p.under_pressure}`);
  const gotP = (info?.pressure ?? []).map((r) =>
    `${r.model} ${r.provider} ${r['active conversations']} ${r['provider 429s']} ${/^no new conversations until .* \(in \d+ s\)$/.test(r.pressure)}`);
  check(`per model and provider: active, provider 429s, pressure (${wantP.length} rows)`,
    wantP.length > 0 && wantP.sort().join('|') === gotP.sort().join('|'), { wantP, gotP });

  for (const w of [1280, 390]) {
    await checkLayoutAt(page, w);
    if (shots) {
      const h2 = await page.evaluateHandle(() =>
        [...document.querySelectorAll('section h2')].find((h) => h.textContent === 'Conversations').closest('section'));
      await h2.asElement().screenshot({ path: `${shots}/status-conversations-${w}.png` });
    }
  }
} catch (e) {
  check('the browser session ran', false, e.stack);
} finally {
  await browser.close();
}
process.exit(failures() ? 1 : 0);
