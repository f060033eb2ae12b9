// tests/js/burst.mjs - short chat completions back to back from N clients
// at once for S seconds, each client sending its next request the moment
// it has its answer (the shape of a benchmark, or of many agents' small
// calls).
//
//   node burst.mjs --base URL --key KEY --model M --clients N --seconds S
//
// One JSON line out: {"sent": requests, "status": {"200": n, ...}}.
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};

const base = opt('base');
const key = opt('key');
const model = opt('model');
const clients = Number(opt('clients', '5'));
const until = Date.now() + 1000 * Number(opt('seconds', '3'));
const body = JSON.stringify({ model, max_tokens: 8,
  messages: [{ role: 'user', content: 'hi' }] });
const out = { sent: 0, status: {} };

async function client() {
  while (Date.now() < until) {
    out.sent++;
    let status = 'error';
    try {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST', body,
        headers: { authorization: `Bearer ${key}`,
                   'content-type': 'application/json' },
      });
      await r.text();
      status = String(r.status);
    } catch { /* counted as "error" */ }
    out.status[status] = (out.status[status] || 0) + 1;
  }
}

await Promise.all(Array.from({ length: clients }, client));
console.log(JSON.stringify(out));
