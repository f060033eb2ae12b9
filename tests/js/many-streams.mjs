#!/usr/bin/env node
// many-streams.mjs - N streamed chat completions started at once through a
// gateway; one JSON line: [{status, first, total, done}, ...] with first
// the time to the first content token and total the stream's length, in
// ms (first 1e9 when none came).  Each stream gives up after 60 s, so a
// stream queued behind others fails instead of hanging the test.
//
//   node tests/js/many-streams.mjs URL KEY MODEL N
const [url, key, model, n] = process.argv.slice(2);
if (!url || !key || !model || !(+n > 0)) {
  process.stderr.write('usage: node many-streams.mjs URL KEY MODEL N\n');
  process.exit(2);
}
const body = JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] });
async function one() {
  const t0 = performance.now();
  let status = 0, first = -1, text = '';
  try {
    const res = await fetch(url + '/v1/chat/completions', {
      method: 'POST', body, signal: AbortSignal.timeout(60000),
      headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
    });
    status = res.status;
    const dec = new TextDecoder();
    for await (const chunk of res.body) {
      text += dec.decode(chunk, { stream: true });
      if (first < 0 && /"content":"[^"]/.test(text)) first = performance.now() - t0;
    }
  } catch (e) {
    status = -1;
  }
  return { status, first: first < 0 ? 1e9 : first, total: performance.now() - t0,
           done: text.includes('data: [DONE]') };
}
const all = await Promise.all(Array.from({ length: +n }, one));
console.log(JSON.stringify(all));
