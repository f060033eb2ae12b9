#!/usr/bin/env node
// apis.mjs - the three generation APIs side by side: added latency of a
// non-streamed request and time to the first token of a stream, for chat
// completions, Messages and Responses, through the bare proxy and orgw.
//
//   node bench/apis.mjs --targets FILE [--only proxy,orgw] [--warmup 10]
//        [--rounds 5] [--per_round 20]
//
// The chat target URLs of FILE (lib.mjs) are used with their path's
// "/chat/completions" replaced by "/messages" or "/responses", and each
// API gets its own small body of the same conversation.  Each round runs
// every (API, target, streamed or not) in turn, per_round requests in a
// row, so a busy moment of the machine hits them all alike; the figure
// is the median of the round medians.  The first token is the first
// event that carries text in the API's own words (a chat delta with
// content, a content_block_delta, a response.output_text.delta).
// Prints one JSON object:
//   {"apis": {"chat": {"proxy": {"seq_ms", "ttft_ms", "n", "bad"}, ...}, ...}}
import { parseArgs, loadTargets, agentFor, request, median, r3 } from './lib.mjs';

const opt = parseArgs(process.argv.slice(2), {
  targets: '', only: 'proxy,orgw', warmup: 10, rounds: 5, per_round: 20,
});
const { body, targets } = loadTargets(opt.targets, opt.only);
const sys = body.messages.find((m) => m.role === 'system')?.content ?? '';
const user = body.messages.find((m) => m.role === 'user')?.content ?? 'Hi';

const APIS = {
  chat: {
    path: '/chat/completions',
    body: (stream) => ({ ...body, stream }),
    token: (j) => typeof j.choices?.[0]?.delta?.content === 'string' && j.choices[0].delta.content !== '',
    ok: (text, stream) => (stream ? text.includes('data: [DONE]') : /"choices"/.test(text)),
  },
  messages: {
    path: '/messages',
    body: (stream) => ({ model: body.model, system: sys, max_tokens: body.max_tokens,
      messages: [{ role: 'user', content: user }], stream }),
    token: (j) => j.type === 'content_block_delta',
    ok: (text, stream) => (stream ? text.includes('event: message_stop') : /"type":"message"/.test(text)),
  },
  responses: {
    path: '/responses',
    body: (stream) => ({ model: body.model, instructions: sys, max_output_tokens: body.max_tokens,
      input: [{ role: 'user', content: user }], stream }),
    token: (j) => j.type === 'response.output_text.delta',
    ok: (text, stream) => (stream ? text.includes('response.completed') : /"status":"completed"/.test(text)),
  },
};

function apiTarget(t, api) {
  return { ...t, url: t.url.replace(/\/chat\/completions$/, APIS[api].path),
    headers: { ...t.headers, 'anthropic-version': '2023-06-01' } };
}

// One request: {ms, ttft} (ttft null for a non-streamed one) or null.
async function one(t, api, stream, agent) {
  const a = APIS[api];
  let text = '', buf = '', ttft = null;
  const r = await request(t, JSON.stringify(a.body(stream)), agent, null, (c, ms) => {
    text += c;
    if (!stream || ttft != null) return;
    buf += c.toString('utf8');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const l of block.split('\n')) {
        if (!l.startsWith('data: ') || l === 'data: [DONE]') continue;
        try {
          if (ttft == null && a.token(JSON.parse(l.slice(6)))) ttft = ms;
        } catch (_) { /* not JSON: not a token */ }
      }
    }
  }).catch(() => null);
  if (!r || r.status !== 200 || !a.ok(text, stream)) return null;
  return { ms: r.ms, ttft };
}

const cells = [];
for (const api of Object.keys(APIS))
  for (const t of targets)
    for (const stream of [false, true])
      cells.push({ api, t: apiTarget(t, api), name: t.name, stream, agent: agentFor(),
        rounds: [], n: 0, bad: 0 });

for (const c of cells)
  for (let i = 0; i < opt.warmup; i++) await one(c.t, c.api, c.stream, c.agent);
for (let r = 0; r < opt.rounds; r++) {
  for (const c of cells) {
    const v = [];
    for (let i = 0; i < opt.per_round; i++) {
      const x = await one(c.t, c.api, c.stream, c.agent);
      if (!x || (c.stream && x.ttft == null)) { c.bad++; continue; }
      c.n++;
      v.push(c.stream ? x.ttft : x.ms);
    }
    c.rounds.push(median(v));
  }
}
for (const c of cells) c.agent.destroy();

const out = { apis: {} };
for (const c of cells) {
  const o = ((out.apis[c.api] ??= {})[c.name] ??= { n: 0, bad: 0 });
  o[c.stream ? 'ttft_ms' : 'seq_ms'] = r3(median(c.rounds.filter((x) => x != null)));
  o[c.stream ? 'ttft_round_medians' : 'seq_round_medians'] = c.rounds.map(r3);
  o.n += c.n;
  o.bad += c.bad;
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exitCode = cells.some((c) => c.bad || !c.n) ? 1 : 0;
