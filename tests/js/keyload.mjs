// tests/js/keyload.mjs - many clients of one team key at once, each
// retrying a 429 the way the SDKs do, until it gets its answer (200) or
// its budget is spent (402, which no SDK retries).
//
//   node keyload.mjs --base URL[,URL...] --key KEY --model M --clients N
//                    [--body-extra JSON] [--stream] [--max-tries N]
//
// Client i talks to the i-th base URL in turn (two gateway hosts on one
// Redis).  One JSON line out: {"ok":200s, "r402", "r429", "other":
// [statuses], "retry_after_bad": 429s without a Retry-After of 1..65 (the sliding rpm window: 60 s and one 5 s slot),
// "incomplete": 200s whose stream did not end with [DONE], "costs": the
// usage.cost of every 200 (streamed: from its last usage chunk)}.
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const flag = (name) => args.includes(`--${name}`);

const bases = opt('base').split(',');
const key = opt('key');
const model = opt('model');
const clients = Number(opt('clients', '64'));
const maxTries = Number(opt('max-tries', '400'));
const stream = flag('stream');
const content = opt('content', 'hi');

const out = { ok: 0, r402: 0, r429: 0, other: [], retry_after_bad: 0,
              incomplete: 0, costs: [] };

function lastCost(text) {
  let cost = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    try {
      const j = JSON.parse(line.slice(6));
      if (j.usage && typeof j.usage.cost === 'number') cost = j.usage.cost;
    } catch { /* a partial line: not ours to judge here */ }
  }
  return cost;
}

async function one(i) {
  const base = bases[i % bases.length];
  for (let t = 0; t < maxTries; t++) {
    let res, text;
    try {
      res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json',
                   Authorization: `Bearer ${key}` },
        body: JSON.stringify({ model, stream,
                               messages: [{ role: 'user', content }] }),
      });
      text = await res.text();
    } catch (e) {
      out.other.push(`error: ${e.message}`);
      return;
    }
    if (res.status === 200) {
      out.ok++;
      if (stream) {
        if (!text.trimEnd().endsWith('data: [DONE]')) out.incomplete++;
        out.costs.push(lastCost(text));
      } else {
        out.costs.push(JSON.parse(text).usage?.cost ?? null);
      }
      return;
    }
    if (res.status === 402) {
      out.r402++;
      return;
    }
    if (res.status === 429) {
      out.r429++;
      const ra = Number(res.headers.get('retry-after'));
      if (!(ra >= 1 && ra <= 65)) out.retry_after_bad++;
      // Sooner than Retry-After, with jitter: the test wants the
      // clients to press on the limit, not to wait a second each.
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
      continue;
    }
    out.other.push(res.status);
    return;
  }
  out.other.push('gave up');
}

await Promise.all(Array.from({ length: clients }, (_, i) => one(i)));
process.stdout.write(JSON.stringify(out) + '\n');
