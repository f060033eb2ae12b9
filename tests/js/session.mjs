#!/usr/bin/env node
// session.mjs - one long conversation through the gateway with the official
// OpenAI SDK: turn after turn on one model, each turn's answer and a new user
// message appended to the messages, as a chat client or a coding agent does.
// Before each turn the OpenRouter double is given that turn's durations.
//
//   node tests/js/session.mjs --base URL --key KEY --model M --double URL
//        --plan JSON [--timeout MS]
//
//   --plan   [{"stream": bool, "config": {double config for this turn},
//             "pause_ms": the user's think time before the turn}, ...]
//            e.g. {"first_token_delay_ms": 4000, "padding_bytes": 16}
//   --double the double's base URL (its control API, /__double/config)
//
// Output, one JSON line:
//   {turns: [{stream, ok, status, done, finish_reason, content, provider,
//             route, attempts, prompt, cached, t_first_ms, t_total_ms}],
//    prompt_total, cached_total, ideal_cached_total, ideal_cached: [...]}
//
// ideal_cached is what one warm provider's prompt cache gives each turn, as
// the double models it (tests/double/README.md, prompt_cache): the longest
// common prefix of the turn's prompt text with an earlier turn's, in whole
// tokens of 4 characters.  With every turn on one provider the measured
// cached tokens equal it exactly; a turn on a cold provider gets less.
import OpenAI from 'openai';
import { watchingFetch } from './watch-fetch.mjs';

function usage(msg) {
  process.stderr.write(`session.mjs: ${msg}\n` +
    'usage: node session.mjs --base URL --key KEY --model M --double URL --plan JSON [--timeout MS]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { timeout: 300000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (i + 1 >= argv.length) usage(`missing value for ${a}`);
    const v = argv[++i];
    switch (a) {
      case '--base': o.base = v; break;
      case '--key': o.key = v; break;
      case '--model': o.model = v; break;
      case '--double': o.double = v; break;
      case '--plan': try { o.plan = JSON.parse(v); } catch (e) { usage(`--plan: ${e.message}`); } break;
      case '--timeout': o.timeout = Number(v); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  for (const k of ['base', 'key', 'model', 'double', 'plan']) if (o[k] === undefined) usage(`--${k} is required`);
  if (!Array.isArray(o.plan)) usage('--plan must be an array');
  return o;
}

// The prompt text and token count as the double computes them.
function promptText(messages) {
  let t = '';
  for (const m of messages) t += `\u0001${m.role}\u0002${m.content}`;
  return t;
}
const promptTokens = (messages) =>
  Math.max(1, Math.ceil(messages.reduce((n, m) => n + m.content.length, 0) / 4));

function lcp(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

async function doubleConfig(base, cfg) {
  const r = await fetch(`${base}/__double/config`, { method: 'POST', body: JSON.stringify(cfg) });
  if (!r.ok) throw new Error(`double config ${JSON.stringify(cfg)}: ${r.status} ${await r.text()}`);
}

async function turn(client, state, o, messages, stream) {
  const r = { stream, ok: false, status: null, done: false, finish_reason: null, content: '',
    provider: null, route: null, attempts: null, prompt: 0, cached: 0,
    t_first_ms: null, t_total_ms: null, error: null };
  const t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  state.done = false;
  try {
    const body = { model: o.model, messages, stream };
    const { data, response } = await client.chat.completions.create(body).withResponse();
    r.status = response.status;
    r.provider = response.headers.get('x-orgw-provider');
    r.route = response.headers.get('x-orgw-route');
    r.attempts = Number(response.headers.get('x-orgw-attempts'));
    let u = null;
    if (stream) {
      for await (const chunk of data) {
        const c = chunk.choices?.[0];
        if (c?.delta?.content) {
          if (r.t_first_ms === null) r.t_first_ms = since();
          r.content += c.delta.content;
        }
        if (c?.finish_reason) r.finish_reason = c.finish_reason;
        if (chunk.usage) u = chunk.usage;
      }
    } else {
      r.t_first_ms = since();
      r.content = data.choices?.[0]?.message?.content ?? '';
      r.finish_reason = data.choices?.[0]?.finish_reason ?? null;
      u = data.usage;
    }
    r.prompt = u?.prompt_tokens ?? 0;
    r.cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
    r.ok = r.finish_reason === 'stop' && r.content.length > 0;
  } catch (e) {
    r.error = { status: e?.status ?? null, message: e?.message ?? String(e) };
  }
  r.done = state.done;
  r.t_total_ms = since();
  return r;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const state = { done: false };
  const client = new OpenAI({ baseURL: o.base, apiKey: o.key, maxRetries: 0,
    timeout: o.timeout, fetch: watchingFetch(state) });
  const messages = [{ role: 'system', content: 'You are a careful assistant. '.repeat(40) }];
  const texts = [];
  const out = { turns: [], prompt_total: 0, cached_total: 0, ideal_cached_total: 0, ideal_cached: [] };
  for (let i = 0; i < o.plan.length; i++) {
    const step = o.plan[i];
    if (step.pause_ms > 0) await new Promise((res) => setTimeout(res, step.pause_ms));
    await doubleConfig(o.double, step.config ?? {});
    messages.push({ role: 'user', content: `Turn ${i + 1}: go on with the work, step by step. `.repeat(8) });
    const text = promptText(messages);
    let best = 0;
    for (const t of texts) best = Math.max(best, lcp(t, text));
    texts.push(text);
    const ideal = Math.min(Math.floor(best / 4), promptTokens(messages));
    const r = await turn(client, state, o, messages.map((m) => ({ ...m })), !!step.stream);
    out.turns.push(r);
    out.ideal_cached.push(ideal);
    out.ideal_cached_total += ideal;
    out.prompt_total += r.prompt;
    out.cached_total += r.cached;
    messages.push({ role: 'assistant', content: r.content || '(no answer)' });
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(`session.mjs: helper bug: ${e?.stack ?? e}\n`);
  process.exit(3);
});
