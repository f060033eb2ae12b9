#!/usr/bin/env node
// prompt-cache.mjs - what one warm provider's prompt cache gives a
// conversation, as the OpenRouter double models it (tests/double/README.md,
// prompt_cache; the walks below mirror tests/double/openrouter-double.js):
// a request's prompt is the role-marked text of its messages (system and
// message blocks on Messages, instructions and input items on Responses),
// prompt tokens are ceil(characters of the text / 4), its cached tokens the
// longest common prefix with an earlier prompt in whole tokens of 4
// characters, its cache writes the tokens up to the last cache_control
// breakpoint less the cached ones.  When every request of a conversation
// went to one provider, the usage it got equals this exactly; a request on a
// cold provider reads less.
//
// As a module:
//   promptOf(api, body) -> {text, chars, bp}      api: chat|messages|responses
//   new WarmCache().take(api, body) -> {prompt, cached, written}
//
// As a program, over the double's log (GET /__double/log with bodies whole:
// config log_body_max_bytes above the largest body):
//   node tests/js/prompt-cache.mjs LOG.json MODEL
// prints one JSON line: {requests: [{seq, api, tag, prompt, cached,
// written}], prompt_total, cached_total, written_total, tags} for the
// generation requests of MODEL that were answered 200, in arrival order, as
// if all of them had gone to one provider (tags: the ones that really served
// them).  Exit 2 for a usage error, 3 when a body was logged summarized.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

class Walk {
  constructor() { this.text = ''; this.chars = 0; this.bp = 0; }
  role(r) { this.text += `\u0001${r}\u0002`; }
  add(s) { this.chars += s.length; this.text += s; }
  mark() { this.bp = this.text.length; }
  content(c, deep) {
    if (typeof c === 'string') { this.add(c); return; }
    if (!Array.isArray(c)) return;
    for (const p of c) {
      if (!p || typeof p !== 'object') continue;
      if (typeof p.text === 'string') this.add(p.text);
      else if (deep && p.content !== undefined) this.content(p.content, false);
      if (p.cache_control) this.mark();
    }
  }
}

export function promptOf(api, body) {
  const w = new Walk();
  if (api === 'chat') {
    for (const m of body.messages) {
      if (!m || typeof m !== 'object') continue;
      w.role(m.role);
      w.content(m.content, false);
    }
  } else if (api === 'messages') {
    if (body.system != null) { w.role('system'); w.content(body.system, false); }
    for (const m of body.messages) {
      if (!m || typeof m !== 'object') continue;
      w.role(m.role);
      w.content(m.content, true);
    }
  } else if (api === 'responses') {
    if (typeof body.instructions === 'string') { w.role('developer'); w.add(body.instructions); }
    const inp = body.input;
    if (typeof inp === 'string') { w.role('user'); w.add(inp); } else {
      for (const it of inp) {
        if (!it || typeof it !== 'object') continue;
        if (it.type === 'function_call') { w.role('function_call'); if (typeof it.arguments === 'string') w.add(it.arguments); }
        else if (it.type === 'function_call_output') { w.role('tool'); w.content(it.output, false); }
        else if (typeof it.role === 'string') { w.role(it.role); w.content(it.content, false); }
      }
    }
  } else {
    throw new Error(`unknown api ${api}`);
  }
  if (body.cache_control) w.mark();
  return w;
}

function lcp(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

// One provider that has seen every prompt so far (the double keeps the last
// 64 per endpoint; a test conversation stays well under that).
export class WarmCache {
  constructor() { this.seen = []; }
  take(api, body) {
    const w = promptOf(api, body);
    const prompt = Math.max(1, Math.ceil(w.chars / 4));
    let best = 0;
    for (const t of this.seen) best = Math.max(best, lcp(t, w.text));
    this.seen.push(w.text);
    if (this.seen.length > 64) this.seen.shift();
    const cached = Math.min(Math.floor(best / 4), prompt);
    const bpTokens = w.bp > 0 ? Math.min(Math.floor(w.bp / 4), prompt) : 0;
    return { prompt, cached, written: Math.max(0, bpTokens - cached) };
  }
}

function main(argv) {
  if (argv.length !== 2) {
    process.stderr.write('usage: node prompt-cache.mjs LOG.json MODEL\n');
    process.exit(2);
  }
  const [file, model] = argv;
  const log = JSON.parse(fs.readFileSync(file, 'utf8'));
  const gen = { chat: '/chat/completions', messages: '/messages', responses: '/responses' };
  const cache = new WarmCache();
  const out = { requests: [], prompt_total: 0, cached_total: 0, written_total: 0, tags: [] };
  for (const r of log.requests) {
    if (r.model !== model || r.status !== 200 || !gen[r.api] || !r.path.endsWith(gen[r.api])) continue;
    if (!r.body || r.body._truncated) {
      process.stderr.write(`prompt-cache.mjs: request ${r.seq} was logged summarized: raise log_body_max_bytes\n`);
      process.exit(3);
    }
    const u = cache.take(r.api, r.body);
    out.requests.push({ seq: r.seq, api: r.api, tag: r.tag, ...u });
    out.prompt_total += u.prompt;
    out.cached_total += u.cached;
    out.written_total += u.written;
    if (!out.tags.includes(r.tag)) out.tags.push(r.tag);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) main(process.argv.slice(2));
