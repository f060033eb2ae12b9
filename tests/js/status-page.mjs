// status-page.mjs - drives GET /status in headless Chromium (Debian's
// chromium, through puppeteer-core; never the `puppeteer` package, which
// downloads a browser of its own).  Prints one "ok - " / "not ok - " line
// per check, which tests/run.sh counts.
//
//   node status-page.mjs --base URL --key KEY --stats FILE --shots DIR
//
// --stats is the /stats JSON fetched right before (the page must show its
// models, providers and numbers); screenshots go to DIR/status-1280.png
// and DIR/status-390.png.
import { readFileSync } from 'node:fs';
import { arg, check, checkLayoutAt, failures, launch } from './statuscheck.mjs';

const base = arg('base'), key = arg('key'), shots = arg('shots');
const stats = JSON.parse(readFileSync(arg('stats'), 'utf8'));

const browser = await launch();

try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const url = `${base}/status`;

  // 1. No cookie: the login form, and no cookie set.
  let res = await page.goto(url, { waitUntil: 'load' });
  check('GET /status without a cookie: 200 and the login form',
    res.status() === 200 && (await page.$('form input[name=key][type=password]')) !== null,
    { status: res.status(), html: (await page.content()).slice(0, 400) });
  check('no script on the page', (await page.$$('script')).length === 0);

  // 2. A wrong key: 401, the form again with a message, no cookie.
  await page.type('input[name=key]', `${key}-wrong`);
  [res] = await Promise.all([page.waitForNavigation(), page.click('form button')]);
  check('a wrong key: 401 and the form again, saying so',
    res.status() === 401 && (await page.$('input[name=key]')) !== null &&
      /wrong key/.test(await page.$eval('body', (b) => b.textContent)), res.status());
  check('a wrong key sets no cookie', (await page.cookies()).length === 0, await page.cookies());

  // 3. The right key: 303 with the cookie, then the page.
  await page.type('input[name=key]', key);
  [res] = await Promise.all([page.waitForNavigation(), page.click('form button')]);
  const chain = res.request().redirectChain();
  const r303 = chain[0]?.response();
  const setCookie = r303?.headers()['set-cookie'] ?? '';
  check('the right key: 303 to /status, then 200',
    r303?.status() === 303 && r303.headers().location === '/status' && res.status() === 200,
    { chain: chain.map((r) => [r.url(), r.response()?.status(), r.response()?.headers()]), status: res.status() });
  check('Set-Cookie: orgw_status, HttpOnly, SameSite=Strict, Path=/',
    /^orgw_status=[0-9]+\.[0-9a-f]{64};/.test(setCookie) && /; HttpOnly/.test(setCookie) &&
      /; SameSite=Strict/.test(setCookie) && /; Path=\//.test(setCookie) && !/Secure/.test(setCookie), setCookie);
  const cookies = await page.cookies();
  const ck = cookies.find((c) => c.name === 'orgw_status');
  check('the browser keeps an HttpOnly SameSite=Strict cookie',
    ck !== undefined && ck.httpOnly === true && ck.sameSite === 'Strict', cookies);
  check('the cookie does not hold the key (nor its URL encoding)',
    ck !== undefined && !ck.value.includes(key) && !ck.value.includes(encodeURIComponent(key)), ck);
  check('document.cookie cannot read it', (await page.evaluate(() => document.cookie)) === '');
  check('no key in the URL', !page.url().includes(key) && !page.url().includes('?'), page.url());

  // 4. The page shows what /stats has.
  const info = await page.evaluate(() => {
    const sections = {};
    for (const s of document.querySelectorAll('section.model')) {
      const tables = {};
      for (const h3 of s.querySelectorAll('h3')) {
        let t = h3.nextElementSibling;
        while (t && t.tagName !== 'TABLE' && t.tagName !== 'H3') t = t.nextElementSibling;
        if (!t || t.tagName !== 'TABLE') continue;
        tables[h3.textContent] = [...t.querySelectorAll('tbody tr')].map((tr) =>
          Object.fromEntries([...tr.children].map((td) => [td.dataset.label, td.textContent])));
      }
      sections[s.querySelector('h2').textContent] = {
        lock: s.querySelector('dd.lock')?.textContent ?? '',
        text: s.textContent,
        tables,
        svgs: s.querySelectorAll('svg').length,
        points: s.querySelectorAll('svg circle').length,
        bars: s.querySelectorAll('svg rect').length,
      };
    }
    return sections;
  });
  const near = (a, b) => Math.abs(Number(a) - b) <= 1e-3 * Math.abs(b) + 1e-9;
  const models = Object.keys(stats.models);
  check(`every model of /stats has a section (${models.join(', ')})`,
    models.length >= 2 && models.every((m) => info[m]), Object.keys(info));
  for (const m of models) {
    const sm = stats.models[m], pm = info[m];
    if (!pm) continue;
    check(`${m}: the lock provider and tag`,
      sm.lock ? pm.lock === `${sm.lock.provider_name} (${sm.lock.tag})` : /none/.test(pm.lock), [pm.lock, sm.lock]);
    const cands = pm.tables['Candidates (best first)'] ?? [];
    check(`${m}: every candidate in /stats order with its score terms`,
      cands.length === sm.candidates.length && sm.candidates.every((c, i) =>
        cands[i].tag === c.tag && cands[i].provider === c.provider_name &&
        near(cands[i].score, c.score) && near(cands[i]['prompt $/M'], c.prompt * 1e6) &&
        near(cands[i]['completion $/M'], c.completion * 1e6) &&
        near(cands[i]['effective input $/M'], c.effective_input * 1e6) &&
        cands[i]['hit source'] === c.hit_source && Number(cands[i]['on tokens']) === c.hit_tokens &&
        near(parseFloat(cands[i]['hit rate used']), Math.round(c.hit_rate * 1000) / 10) &&
        (c.has_throughput ? Number(cands[i]['throughput tok/s']) === Math.round(c.throughput) : true)),
      { page: cands, stats: sm.candidates.map((c) => [c.tag, c.score, c.hit_rate, c.hit_source, c.hit_tokens]) });
    check(`${m}: spend and saved as /stats`,
      pm.text.includes(`$${sm.spend_usd.toFixed(6)}`) && pm.text.includes(`$${sm.saved_usd.toFixed(6)}`),
      [sm.spend_usd, sm.saved_usd]);
    const hit = pm.tables['Measured cache hit rate per day (UTC)'] ?? [];
    const want = [];
    for (const [day, provs] of Object.entries(sm.days ?? {}))
      for (const [tag, v] of Object.entries(provs))
        if (v.prompt_tokens > 0) want.push(`${day} ${tag} ${v.prompt_tokens} ${v.cached_tokens}`);
    const got = hit.map((r) => `${r.day} ${r.provider} ${r['prompt tokens']} ${r['cached tokens']}`);
    check(`${m}: hit rate per day per provider as /stats days (${want.length} rows)`,
      want.length > 0 && want.sort().join('|') === got.sort().join('|'), { want, got });
    const money = pm.tables['Spend and savings per day (UTC)'] ?? [];
    check(`${m}: spend and saved per day sum to the totals`,
      money.length > 0 && near(money.reduce((s, r) => s + Number(r['spend $']), 0), sm.spend_usd) &&
        near(money.reduce((s, r) => s + Number(r['saved $']), 0), sm.saved_usd),
      money);
    check(`${m}: charts drawn (hit rate points, spend bars)`, pm.svgs === 2 && pm.points >= 1 && pm.bars >= 1, pm);
    const changes = pm.tables['Recent lock changes'] ?? [];
    check(`${m}: lock changes as LOCK_LOG, newest first`,
      changes.length === (sm.lock_changes ?? []).length && changes.length > 0 &&
        changes.every((r, i) => {
          const c = sm.lock_changes[sm.lock_changes.length - 1 - i];
          return r.to === (c.to || '(none)') && r.from === (c.from || '(none)') && r.reason === c.reason;
        }), { page: changes, stats: sm.lock_changes });
    const br = pm.tables.Breaker ?? [];
    for (const [tag, cd] of Object.entries(sm.cooldowns ?? {})) {
      const row = br.find((r) => r.provider === tag);
      check(`${m}: ${tag} cooling, with its reason`, row && row.reason === cd.reason &&
        /\(in \d+ (s|min)|\(in \d+ h/.test(row['cooling until']), { row, cd });
    }
  }
  const multiDay = models.some((m) => Object.keys(stats.models[m].days ?? {}).length >= 2);
  check('cached tokens on two days in /stats (the history has a past)', multiDay);
  const anyCooling = models.some((m) => Object.keys(stats.models[m].cooldowns ?? {}).length > 0);
  const anyTrip = models.some((m) => (stats.models[m].lock_changes ?? []).some((c) => /^breaker/.test(c.reason)));
  check('the run has a cooldown and a lock change by the breaker', anyCooling && anyTrip);

  // 5. Layout at 1280 and 390 px: every name and number fully visible.
  for (const w of [1280, 390]) {
    await checkLayoutAt(page, w);
    if (shots) await page.screenshot({ path: `${shots}/status-${w}.png`, fullPage: true });
  }

  // 6. Log out: the cookie goes, the form comes back.
  [res] = await Promise.all([page.waitForNavigation(), page.click('header form button')]);
  check('log out: back to the form, cookie gone',
    res.status() === 200 && (await page.$('input[name=key]')) !== null &&
      !(await page.cookies()).some((c) => c.name === 'orgw_status'), await page.cookies());
} catch (e) {
  check('the browser session ran', false, e.stack);
} finally {
  await browser.close();
}
process.exit(failures() ? 1 : 0);
