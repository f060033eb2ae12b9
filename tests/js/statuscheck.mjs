// statuscheck.mjs - what the browser tests of GET /status share
// (status-page.mjs, conversations-page.mjs): their arguments, the
// "ok - " / "not ok - " lines tests/run.sh counts, Debian's chromium
// through puppeteer-core (never the `puppeteer` package, which downloads a
// browser of its own), and the layout check.
import puppeteer from 'puppeteer-core';

// The value after --n on the command line.
export const arg = (n) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};

let failed = 0;
// One check's line, with up to 30 lines of detail when it fails.
export const check = (desc, cond, detail) => {
  if (cond) { console.log(`ok - ${desc}`); return; }
  failed++;
  console.log(`not ok - ${desc}`);
  if (detail !== undefined) {
    for (const l of String(typeof detail === 'string' ? detail : JSON.stringify(detail, null, 1)).split('\n').slice(0, 30))
      console.log(`# ${l}`);
  }
};
export const failures = () => failed;

export const launch = () => puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});

// The page reloaded at w px wide: every name and number fully visible.
export async function checkLayoutAt(page, w) {
  await page.setViewport({ width: w, height: 900 });
  await page.reload({ waitUntil: 'load' });
  const { problems, checked } = await page.evaluate(layoutProblems);
  check(`${w} px: ${checked} text elements all visible, none clipped or overlapping`,
    checked > 50 && problems.length === 0, problems);
}

// layoutProblems runs in the page (page.evaluate): it uses nothing from
// this module's scope.
// Every element with text of its own (a name or a number) must be
// entirely inside the viewport's width, no element on its ancestor chain
// may clip it (overflow not visible with scrollWidth > clientWidth), and
// the cells of one table row must not overlap.
export function layoutProblems() {
  const out = [];
  const vw = document.documentElement.clientWidth;
  const ownText = (el) => [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
  const name = (el) => `${el.tagName.toLowerCase()}${el.className ? '.' + el.className : ''} "${el.textContent.trim().slice(0, 40)}"`;
  if (document.documentElement.scrollWidth > vw) out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${vw}`);
  let n = 0;
  for (const el of document.body.querySelectorAll('*')) {
    if (!ownText(el) || el.closest('svg')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    n++;
    if (r.left < -0.5 || r.right > vw + 0.5) out.push(`outside the viewport (${r.left.toFixed(1)}..${r.right.toFixed(1)} of ${vw}): ${name(el)}`);
    for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
      const cs = getComputedStyle(a);
      const clips = cs.overflowX !== 'visible' || cs.overflowY !== 'visible';
      const inline = cs.display === 'inline' || a.clientWidth === 0;
      // The element's own text spilling out of its box, or any box on
      // the way up that hides (or scrolls) what does not fit.
      if ((clips || (a === el && !inline)) && !inline && a.scrollWidth > a.clientWidth + 1)
        out.push(`clipped by ${a === el ? 'itself' : name(a)} (scrollWidth ${a.scrollWidth} > clientWidth ${a.clientWidth}): ${name(el)}`);
      if (clips && !inline && a.scrollHeight > a.clientHeight + 1)
        out.push(`clipped vertically by ${name(a)}: ${name(el)}`);
    }
  }
  // Chart labels: inside their SVG's box.
  for (const t of document.querySelectorAll('svg text')) {
    const r = t.getBoundingClientRect(), s = t.closest('svg').getBoundingClientRect();
    n++;
    if (r.left < s.left - 0.5 || r.right > s.right + 0.5 || r.top < s.top - 0.5 || r.bottom > s.bottom + 0.5 || r.right > vw + 0.5)
      out.push(`chart label outside its chart: "${t.textContent}" ${r.left.toFixed(1)}..${r.right.toFixed(1)} in ${s.left.toFixed(1)}..${s.right.toFixed(1)}`);
  }
  for (const tr of document.querySelectorAll('tr')) {
    const cells = [...tr.children].map((c) => c.getBoundingClientRect());
    for (let i = 0; i < cells.length; i++) {
      for (let j = i + 1; j < cells.length; j++) {
        const a = cells[i], b = cells[j];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 0.5 && h > 0.5) out.push(`cells ${i} and ${j} overlap in row "${tr.textContent.trim().slice(0, 60)}"`);
      }
    }
  }
  return { problems: out, checked: n };
}
