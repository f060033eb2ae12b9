#!/usr/bin/env node
// openrouter-double: a fast, concurrent OpenRouter test double.
//
// Speaks OpenRouter's wire format (see docs/upstream.md sections 1, 3, 5, 6, 10-14):
// chat completions, the Anthropic Messages API and the Responses API, with one endpoint choice,
// fault set, prompt cache and price model behind all three, including OpenRouter's quirks and
// faults, plus a small control API under /__double/ for tests.
// Node 20 built-ins only. See tests/double/README.md for usage.
'use strict';

const http = require('http');
const fs = require('fs');
const { performance, monitorEventLoopDelay } = require('perf_hooks');
const { makeRng } = require('./rng.js');

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------

function usage(code) {
  process.stderr.write(
    'usage: node openrouter-double.js [--port N] [--host 127.0.0.1] [--port-file PATH]\n' +
    '                                 [--key KEY] [--fixtures PATH.json]\n' +
    '                                 [--tls-cert CERT.pem --tls-key KEY.pem]  (https)\n');
  process.exit(code);
}

function parseArgs(argv) {
  const o = { port: 0, host: '127.0.0.1', portFile: null, key: null, fixtures: null, tlsCert: null, tlsKey: null };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v = null;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) { v = a.slice(eq + 1); a = a.slice(0, eq); }
    const val = () => {
      if (v !== null) return v;
      if (i + 1 >= argv.length) { process.stderr.write(`missing value for ${a}\n`); usage(2); }
      return argv[++i];
    };
    switch (a) {
      case '--port': o.port = Number(val()); break;
      case '--host': o.host = val(); break;
      case '--port-file': o.portFile = val(); break;
      case '--key': o.key = val(); break;
      case '--fixtures': o.fixtures = val(); break;
      case '--tls-cert': o.tlsCert = val(); break;
      case '--tls-key': o.tlsKey = val(); break;
      case '-h': case '--help': usage(0); break;
      default: process.stderr.write(`unknown argument: ${a}\n`); usage(2);
    }
  }
  if (!o.tlsCert !== !o.tlsKey) {
    process.stderr.write('--tls-cert and --tls-key go together\n'); usage(2);
  }
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) {
    process.stderr.write('--port must be an integer 0..65535\n'); usage(2);
  }
  return o;
}

const ARGS = parseArgs(process.argv.slice(2));
const KEY = ARGS.key || process.env.DOUBLE_KEY || 'sk-or-v1-test-double-key';

const nowMs = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------
// Configuration (control API: POST /__double/config)
// ---------------------------------------------------------------------------

const DEFAULTS = Object.freeze({
  chunks: 3,                  // content chunks per completion (also = completion_tokens)
  spacing_ms: 0,              // delay between SSE data events (0 = one write)
  keepalive_comments: 1,      // ": OPENROUTER PROCESSING" comments sent first on a stream
  first_token_delay_ms: 0,    // wait before the first data event (stream) / the body (non-stream)
  keepalive_interval_ms: 5000,// during that wait: a comment (stream) / padding (non-stream) every N ms
  spacing_jitter_ms: 0,       // each gap between SSE data events is spacing_ms + a uniform 0..N ms
  padding_bytes: 0,           // non-stream: whitespace written before the JSON body
  cached_tokens: 0,           // usage.prompt_tokens_details.cached_tokens (clamped to prompt_tokens)
  reasoning_tokens: 0,        // of the completion tokens, thinking not shown (clamped to them): chat
                              // completion_tokens_details, Responses output_tokens_details
  prompt_cache: false,        // true: cached_tokens is what a per-endpoint prefix cache gives (below)
  prompt_cache_ttl_ms: 0,     // a cached prompt unused this long is gone (0 = kept)
  explicit_cache: false,      // with prompt_cache: endpoints that bill cache writes and do not cache
                              // implicitly (Anthropic-style) cache only through a breakpoint (README)
  reasoning_items: false,     // Responses: encrypted reasoning items, bound to their endpoint (README)
  endpoints_delay_ms: 0,      // delay before answering /endpoints (per-model delay_ms wins)
  usage_repeat_choice: false, // usage chunk repeats the choice (REC form) instead of choices:[]
  log_body_max_bytes: 65536,  // bigger request bodies are logged as a summary object
  random_faults: [],          // [{kind, p, match?, ...params}]: drawn per generation request (see drawFault)
  random_seed: 0,             // 0 = Math.random; N = a fixed sequence (repeatable soak runs)
  clock_offset_ms: 0,         // added to the wall clock for time-of-day prices (utc_start/utc_end)
  generation_ready_ms: 0,     // GET /generation answers 404 for this long after a generation ends
  generation_fault_status: 0, // non-zero: GET /generation answers this status (429, 404, 403...)
  generation_fault_times: 0,  // ... for this many look-ups, then as usual (0 = every one)
  // Messages API (POST /messages) and Responses API (POST /responses); see README
  messages_keepalive: 'comment', // keep-alives on a Messages stream: 'comment' | 'ping' | 'both'
  messages_stream_cost: false,   // message_delta usage also carries cost, is_byok, cost_details
  messages_delta_usage: 'nulls', // message_delta usage: 'nulls' | 'output' | 'full' (README)
  messages_done_line: false,     // a "data: [DONE]" after message_stop
  responses_event_lines: false,  // an "event: <type>" line before each Responses data line
});
const BOOL_KEYS = new Set(['usage_repeat_choice', 'prompt_cache', 'messages_stream_cost', 'messages_done_line',
  'responses_event_lines', 'explicit_cache', 'reasoning_items']);
const ENUM_KEYS = {
  messages_keepalive: ['comment', 'ping', 'both'],
  messages_delta_usage: ['nulls', 'output', 'full'],
};

let cfg = { ...DEFAULTS };
let paddingStr = '';
let commentsStr = ': OPENROUTER PROCESSING\n\n';
const COMMENT = ': OPENROUTER PROCESSING\n\n';
const PING = 'event: ping\ndata: {"type":"ping"}\n\n';
// Keep-alives of a stream: `first` is sent as the stream opens (keepalive_comments of them),
// `each` every keepalive_interval_ms while the first token is delayed.  Chat and Responses
// send SSE comments; Messages what messages_keepalive says.
const KA_CHAT = { first: commentsStr, each: COMMENT };
const KA_MSG = { first: commentsStr, each: COMMENT };

function applyDerived() {
  const pat = '\n         \n\n';
  paddingStr = cfg.padding_bytes > 0 ? pat.repeat(Math.ceil(cfg.padding_bytes / pat.length)).slice(0, cfg.padding_bytes) : '';
  commentsStr = COMMENT.repeat(cfg.keepalive_comments);
  KA_CHAT.first = commentsStr;
  const mk = cfg.messages_keepalive;
  KA_MSG.each = mk === 'ping' ? PING : mk === 'both' ? COMMENT + PING : COMMENT;
  KA_MSG.first = KA_MSG.each.repeat(cfg.keepalive_comments);
}

function mergeConfig(obj) {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return 'config must be a JSON object';
  for (const k of Object.keys(obj)) {
    if (!(k in DEFAULTS)) return `unknown config key "${k}" (allowed: ${Object.keys(DEFAULTS).join(', ')})`;
    const v = obj[k];
    if (k === 'random_faults') { const e = checkRandomFaults(v); if (e) return e; continue; }
    if (BOOL_KEYS.has(k)) { if (typeof v !== 'boolean') return `${k} must be a boolean`; }
    else if (ENUM_KEYS[k]) { if (!ENUM_KEYS[k].includes(v)) return `${k} must be one of ${ENUM_KEYS[k].join(', ')}`; }
    else if (!Number.isInteger(v) || v < 0) return `${k} must be a non-negative integer`;
    if (k === 'chunks' && v < 1) return 'chunks must be >= 1';
  }
  Object.assign(cfg, obj);
  if ('random_faults' in obj) cfg.random_faults = obj.random_faults.map((f) => faultFromSpec({ ...f, times: -1 })[0]);
  if ('random_seed' in obj || 'random_faults' in obj) rng = makeRng(cfg.random_seed);
  applyDerived();
  return null;
}

// random_faults: a list of fault specs (the kinds and params of POST /__double/faults) each
// with a probability p (0..1, summing to at most 1).  A generation request that took no scripted
// fault draws one number and gets fault i with probability p_i (its match must fit too);
// random faults are never consumed.  For soak tests: "10% 429, 5% 503, ..." without
// scheduling batches.
function checkRandomFaults(v) {
  if (!Array.isArray(v)) return 'random_faults must be an array';
  let sum = 0;
  for (const f of v) {
    if (!f || typeof f !== 'object' || Array.isArray(f)) return 'each random fault must be an object';
    if (typeof f.p !== 'number' || !(f.p >= 0 && f.p <= 1)) return 'each random fault needs p in 0..1';
    sum += f.p;
    const [, err] = faultFromSpec({ ...f, times: -1 });
    if (err) return err;
  }
  if (sum > 1 + 1e-9) return 'random_faults probabilities sum to more than 1';
  return null;
}

let rng = Math.random;

function faultFits(m, model, tag, stream, api) {
  return !m || ((m.model === undefined || m.model === model) && (m.tag === undefined || m.tag === tag) &&
    (m.stream === undefined || m.stream === stream) && (m.api === undefined || m.api === api));
}

function drawFault(model, tag, stream, api) {
  let r = rng();
  for (const f of cfg.random_faults) {
    if (r < f.p) {
      if (!faultFits(f.match, model, tag, stream, api)) return null;
      f.hits++;
      return f;
    }
    r -= f.p;
  }
  return null;
}

// ---------------------------------------------------------------------------
// Model / endpoint fixtures
// ---------------------------------------------------------------------------

const DEEPSEEK_ID = 'deepseek/deepseek-v3.2';
const DEEPSEEK = {
  meta: {
    id: DEEPSEEK_ID,
    name: 'DeepSeek: DeepSeek V3.2',
    created: 1764547200,
    description: 'DeepSeek-V3.2 ...',
    architecture: {
      tokenizer: 'DeepSeek', instruct_type: null, modality: 'text->text',
      input_modalities: ['text'], output_modalities: ['text'],
    },
  },
  endpoints: [
    {
      name: 'DeepSeek | deepseek/deepseek-v3.2-20251201',
      model_id: 'deepseek/deepseek-v3.2-20251201',
      model_name: 'DeepSeek: DeepSeek V3.2',
      context_length: 163840,
      pricing: {
        prompt: '0.00000028', completion: '0.00000042', request: '0', image: '0', web_search: '0',
        internal_reasoning: '0', input_cache_read: '0.000000028', discount: 0,
        overrides: [
          { utc_start: 30, utc_end: 1630, prompt: '0.00000028', completion: '0.00000042', input_cache_read: '0.000000028' },
          { utc_start: 1630, utc_end: 30, prompt: '0.00000014', completion: '0.00000021', input_cache_read: '0.000000014' },
        ],
      },
      provider_name: 'DeepSeek',
      tag: 'deepseek',
      quantization: 'fp8',
      max_completion_tokens: 65536,
      max_prompt_tokens: null,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'frequency_penalty', 'presence_penalty',
        'response_format', 'tools', 'tool_choice', 'reasoning', 'include_reasoning'],
      status: 0,
      uptime_last_5m: 100,
      uptime_last_30m: 99.2,
      uptime_last_1d: 98.7,
      supports_implicit_caching: true,
      latency_last_30m: { p50: 1450.0, p75: 2100.0, p90: 3300.0, p99: 7800.0 },
      throughput_last_30m: { p50: 31.5, p75: 26.0, p90: 19.2, p99: 9.8 },
    },
    {
      name: 'DeepInfra | deepseek/deepseek-v3.2-20251201',
      model_id: 'deepseek/deepseek-v3.2-20251201',
      model_name: 'DeepSeek: DeepSeek V3.2',
      context_length: 163840,
      pricing: {
        prompt: '0.00000026', completion: '0.00000039', request: '0', image: '0', web_search: '0',
        internal_reasoning: '0', input_cache_read: '0.00000013', discount: 0,
      },
      provider_name: 'DeepInfra',
      tag: 'deepinfra/fp8',
      quantization: 'fp8',
      max_completion_tokens: 16384,
      max_prompt_tokens: null,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'top_k', 'min_p', 'stop', 'seed',
        'repetition_penalty', 'response_format', 'tools', 'tool_choice'],
      status: 0,
      uptime_last_5m: 97.4,
      uptime_last_30m: 98.9,
      uptime_last_1d: 99.5,
      supports_implicit_caching: false,
      latency_last_30m: { p50: 620.0, p75: 880.0, p90: 1400.0, p99: 4100.0 },
      throughput_last_30m: { p50: 48.0, p75: 41.3, p90: 30.8, p99: 14.0 },
    },
    {
      name: 'Novita | deepseek/deepseek-v3.2-20251201',
      model_id: 'deepseek/deepseek-v3.2-20251201',
      model_name: 'DeepSeek: DeepSeek V3.2',
      context_length: 163840,
      pricing: {
        prompt: '0.00000027', completion: '0.0000004', request: '0', image: '0', web_search: '0',
        internal_reasoning: '0', discount: 0,
      },
      provider_name: 'Novita',
      tag: 'novita',
      quantization: 'fp8',
      max_completion_tokens: 8192,
      max_prompt_tokens: null,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'seed', 'frequency_penalty', 'presence_penalty'],
      status: 0,
      uptime_last_5m: 99.0,
      uptime_last_30m: 99.1,
      uptime_last_1d: 98.9,
      supports_implicit_caching: false,
      latency_last_30m: { p50: 2100.0, p75: 2900.0, p90: 4200.0, p99: 9500.0 },
      throughput_last_30m: { p50: 20.0, p75: 16.5, p90: 12.0, p99: 6.1 },
    },
  ],
};

// Generated set for any other model. Ranking by docs/design.md section 6 (no caching
// anywhere, flat prices):
//   alpha: tput 100 / cost 1.6e-7   beta: 60 / 3.2e-7   gamma: 30 / 6.4e-7   => alpha > beta > gamma
const GEN = [
  { tag: 'alpha', provider: 'Alpha', prompt: '0.0000001', completion: '0.0000002', max: 32768, up: [100, 99.9, 99.8],
    lat: [400, 600, 900, 2000], tput: [100, 85, 70, 40], q: 'fp16' },
  { tag: 'beta', provider: 'Beta', prompt: '0.0000002', completion: '0.0000004', max: 16384, up: [99.7, 99.5, 99.6],
    lat: [800, 1100, 1600, 3500], tput: [60, 50, 40, 20], q: 'fp8' },
  { tag: 'gamma', provider: 'Gamma', prompt: '0.0000004', completion: '0.0000008', max: 8192, up: [99.4, 99.2, 99.3],
    lat: [1600, 2200, 3000, 6000], tput: [30, 25, 20, 10], q: 'int8' },
];

function titleCase(s) { return s ? s[0].toUpperCase() + s.slice(1) : s; }

function generatedDef(id) {
  const slash = id.indexOf('/');
  const author = slash > 0 ? id.slice(0, slash) : id;
  const slug = slash > 0 ? id.slice(slash + 1) : id;
  const name = `${titleCase(author)}: ${slug}`;
  const colon = id.indexOf(':');
  const permaslug = (colon > 0 ? id.slice(0, colon) : id) + '-20250101';
  return {
    meta: {
      id, name, created: 1735689600, description: `Generated test-double model ${id}.`,
      architecture: { tokenizer: 'Other', instruct_type: null, modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] },
    },
    endpoints: GEN.map((g) => ({
      name: `${g.provider} | ${permaslug}`,
      model_id: permaslug,
      model_name: name,
      context_length: 131072,
      pricing: { prompt: g.prompt, completion: g.completion, request: '0', image: '0', web_search: '0', internal_reasoning: '0', discount: 0 },
      provider_name: g.provider,
      tag: g.tag,
      quantization: g.q,
      max_completion_tokens: g.max,
      max_prompt_tokens: null,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'seed', 'tools', 'tool_choice', 'response_format'],
      status: 0,
      uptime_last_5m: g.up[0],
      uptime_last_30m: g.up[1],
      uptime_last_1d: g.up[2],
      supports_implicit_caching: false,
      latency_last_30m: { p50: g.lat[0], p75: g.lat[1], p90: g.lat[2], p99: g.lat[3] },
      throughput_last_30m: { p50: g.tput[0], p75: g.tput[1], p90: g.tput[2], p99: g.tput[3] },
    })),
  };
}

// Fixture definitions: built-in + --fixtures file. Never cleared by reset.
const fixtureDefs = new Map();
fixtureDefs.set(DEEPSEEK_ID, DEEPSEEK);

function loadFixtures(file) {
  let data;
  try { data = JSON.parse(fs.readFileSync(file, 'utf8')); } catch (e) {
    process.stderr.write(`openrouter-double: cannot read fixtures ${file}: ${e.message}\n`); process.exit(2);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    process.stderr.write('openrouter-double: fixtures must be an object {modelId: endpoints[] | {endpoints, ...meta}}\n'); process.exit(2);
  }
  for (const [id, v] of Object.entries(data)) {
    const base = fixtureDefs.get(id) || generatedDef(id);
    if (Array.isArray(v)) fixtureDefs.set(id, { meta: base.meta, endpoints: v });
    else if (v && typeof v === 'object' && Array.isArray(v.endpoints)) {
      const meta = { ...base.meta };
      for (const k of ['name', 'created', 'description', 'architecture']) if (k in v) meta[k] = v[k];
      fixtureDefs.set(id, { meta, endpoints: v.endpoints });
    } else {
      process.stderr.write(`openrouter-double: fixtures entry ${id} must be an array or {endpoints:[...]}\n`); process.exit(2);
    }
  }
}
if (ARGS.fixtures) loadFixtures(ARGS.fixtures);

function toNum(v) {
  const n = typeof v === 'number' ? v : parseFloat(v);
  return Number.isFinite(n) ? n : 0;
}

// Internal view of one endpoint (the raw object is served verbatim).
function normEndpoint(modelId, e, i) {
  if (!e || typeof e !== 'object') e = {};
  const tag = typeof e.tag === 'string' && e.tag ? e.tag : (typeof e.provider_name === 'string' ? e.provider_name.toLowerCase() : `ep${i}`);
  const provider = typeof e.provider_name === 'string' ? e.provider_name : tag;
  const modelIdOut = typeof e.model_id === 'string' ? e.model_id : modelId;
  const p = e.pricing && typeof e.pricing === 'object' ? e.pricing : {};
  return {
    tag,
    provider,
    providerJ: JSON.stringify(provider),
    modelJ: JSON.stringify(modelIdOut),
    prompt: toNum(p.prompt),
    completion: toNum(p.completion),
    cacheRead: p.input_cache_read != null ? toNum(p.input_cache_read) : null,
    cacheWrite: p.input_cache_write != null ? toNum(p.input_cache_write) : null,
    discount: toNum(p.discount),
    overrides: Array.isArray(p.overrides) && p.overrides.length ? p.overrides : null,
    maxOut: Number.isFinite(e.max_completion_tokens) && e.max_completion_tokens > 0 ? e.max_completion_tokens : null,
    // Double-only: a provider whose cache serves this share of every prompt (see README).
    cacheHitRate: Number.isFinite(e.x_double_cache_hit_rate) && e.x_double_cache_hit_rate >= 0 &&
      e.x_double_cache_hit_rate <= 1 ? e.x_double_cache_hit_rate : null,
    implicit: e.supports_implicit_caching === true,
    // Double-only: generations this endpoint serves at once; one more gets a provider 429.
    maxInflight: Number.isInteger(e.x_double_max_inflight) && e.x_double_max_inflight > 0 ? e.x_double_max_inflight : null,
    inflight: 0,
    pieces: new Map(), // chunks -> contentPieces()
  };
}

// Live model records (custom endpoints, status/delay overrides, caches). Cleared by reset.
const models = new Map();
const seenModels = new Set();
let modelsListCache = null;

function setEndpoints(rec, arr) {
  rec.raw = arr;
  rec.norm = arr.map((e, i) => normEndpoint(rec.id, e, i));
  rec.bodyAuth = null;
  rec.bodyNoAuth = null;
  modelsListCache = null;
}

function getModel(id) {
  let rec = models.get(id);
  if (rec) return rec;
  const def = fixtureDefs.get(id) || generatedDef(id);
  rec = { id, meta: def.meta, raw: null, norm: null, status: 0, delay_ms: null, custom: false, bodyAuth: null, bodyNoAuth: null };
  setEndpoints(rec, def.endpoints);
  models.set(id, rec);
  return rec;
}

function noteSeen(id) {
  if (!seenModels.has(id)) { seenModels.add(id); modelsListCache = null; }
}

function endpointsBody(rec, authed) {
  if (authed) {
    if (!rec.bodyAuth) rec.bodyAuth = JSON.stringify({ data: { ...rec.meta, id: rec.id, endpoints: rec.raw } });
    return rec.bodyAuth;
  }
  if (!rec.bodyNoAuth) {
    const eps = rec.raw.map((e) => (e && typeof e === 'object' && !Array.isArray(e)
      ? { ...e, latency_last_30m: null, throughput_last_30m: null } : e));
    rec.bodyNoAuth = JSON.stringify({ data: { ...rec.meta, id: rec.id, endpoints: eps } });
  }
  return rec.bodyNoAuth;
}

function modelObject(rec) {
  const eps = rec.raw.filter((e) => e && typeof e === 'object');
  const top = eps[0] || {};
  const params = new Set();
  let ctxLen = 0;
  for (const e of eps) {
    if (Array.isArray(e.supported_parameters)) for (const p of e.supported_parameters) params.add(p);
    if (Number.isFinite(e.context_length) && e.context_length > ctxLen) ctxLen = e.context_length;
  }
  const a = rec.meta.architecture || {};
  return {
    id: rec.id,
    canonical_slug: typeof top.model_id === 'string' ? top.model_id : rec.id,
    hugging_face_id: '',
    name: rec.meta.name,
    created: rec.meta.created,
    description: rec.meta.description,
    context_length: ctxLen || null,
    architecture: {
      modality: a.modality ?? 'text->text',
      input_modalities: a.input_modalities || ['text'],
      output_modalities: a.output_modalities || ['text'],
      tokenizer: a.tokenizer ?? 'Other',
      instruct_type: a.instruct_type ?? null,
    },
    pricing: top.pricing || { prompt: '0', completion: '0' },
    top_provider: {
      context_length: Number.isFinite(top.context_length) ? top.context_length : null,
      max_completion_tokens: top.max_completion_tokens ?? null,
      is_moderated: false,
    },
    per_request_limits: null,
    supported_parameters: [...params],
    default_parameters: null,
    knowledge_cutoff: null,
    expiration_date: null,
  };
}

function modelsListBody() {
  if (modelsListCache) return modelsListCache;
  const ids = new Set(fixtureDefs.keys());
  for (const [id, rec] of models) if (rec.custom) ids.add(id);
  for (const id of seenModels) ids.add(id);
  const data = [];
  for (const id of ids) if (!id.startsWith('missing/')) data.push(modelObject(getModel(id)));
  modelsListCache = JSON.stringify({ data, total_count: data.length, links: { next: null } });
  return modelsListCache;
}

// ---------------------------------------------------------------------------
// Runtime state: faults, round robin, log, stats
// ---------------------------------------------------------------------------

const FAULT_KINDS = new Set(['status', 'error_in_200', 'reset', 'hang', 'slow_first_byte', 'cut_after', 'stall',
  'malformed', 'no_done', 'midstream_error', 'huge_answer']);
let faults = [];
let faultSeq = 0;
const rr = new Map();
const LOG_MAX = 100000;
let log = [];
let seq = 0;
let stats;
let inflight = 0;
function resetStats() {
  stats = { total: 0, paths: Object.create(null), apis: Object.create(null), tags: Object.create(null),
    models: Object.create(null), statuses: Object.create(null), faults: Object.create(null), closed_by_client: 0,
    generations: 0, billed_usd: 0, billed_by_model: Object.create(null),
    generation_faults: 0, generation_lookups: 0 };
}
resetStats();
const bump = (o, k) => { o[k] = (o[k] || 0) + 1; };

// One log entry. Kept compact (fixed shape; small request bodies kept as their raw text and
// parsed only when the log is read) so 100000 entries stay cheap.
class LogEntry {
  constructor(seq0, t, method, path, auth, headers) {
    this.seq = seq0;
    this.t_ms = t;
    this.method = method;
    this.path = path;
    this.auth = auth;
    this.headers = headers;
    this.raw = null;       // raw body text (parsed lazily), or null
    this.bodyObj = null;   // summary object for big bodies
    this.model = null;
    this.tag = null;
    this.fault = null;
    this.status = null;
    this.closed_by_client = false;
    this.closed_at_ms = null;
    this.finished_at_ms = null;
    this.mark = null;      // a shaped request's mark (shapeOf)
    this.api = null;       // 'chat' | 'messages' | 'responses' (null: endpoints, models, unknown paths)
    this.query = null;     // the query string, when there is one (Claude Code adds ?beta=true)
  }

  toJSON() {
    let body = this.bodyObj;
    if (body === null && this.raw !== null) { try { body = JSON.parse(this.raw); } catch (_) { body = null; } }
    return {
      seq: this.seq, t_ms: this.t_ms, method: this.method, path: this.path, ...(this.query !== null ? { query: this.query } : {}),
      api: this.api, auth: this.auth, headers: this.headers,
      body, model: this.model, tag: this.tag, fault: this.fault, status: this.status,
      closed_by_client: this.closed_by_client, closed_at_ms: this.closed_at_ms, finished_at_ms: this.finished_at_ms,
      ...(this.mark ? { mark: this.mark } : {}),
    };
  }
}

function pushLog(e) {
  log.push(e);
  if (log.length > LOG_MAX + (LOG_MAX >> 3)) log.splice(0, log.length - LOG_MAX);
}

function takeFault(model, tag, stream, api) {
  for (let i = 0; i < faults.length; i++) {
    const f = faults[i];
    if (!faultFits(f.match, model, tag, stream, api)) continue;
    f.hits++;
    if (f.times > 0 && --f.times === 0) faults.splice(i, 1);
    return f;
  }
  return null;
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const GEN_PREFIX = (() => {
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 10; i++) s += A[Math.floor(Math.random() * A.length)];
  return s;
})();
let genCounter = 0;
function genId(unix) {
  // gen-<unix>-<20 alphanumerics>: 10 random per process + 10-digit base-36 counter
  return `gen-${unix}-${GEN_PREFIX}${(genCounter++).toString(36).padStart(10, '0')}`;
}

const ERR_401 = '{"error":{"code":401,"message":"Missing Authentication header"}}';
const ERR_404_RES = '{"error":{"code":404,"message":"Resource not found"}}';
const ERR_404_NOPROV = '{"error":{"code":404,"message":"No allowed providers are available for the selected model."}}';
const ERR_404_PATH = '{"error":{"code":404,"message":"Not Found"}}';

function errBody(code, message, extra) {
  const err = { code, message };
  if (extra) Object.assign(err, extra);
  return JSON.stringify({ error: err });
}

const BEARER = 'bearer ';
// returns 'ok' | 'missing' | 'bad'
function authState(h) {
  if (h === undefined) return 'missing';
  if (h.length < 7 || h.slice(0, 7).toLowerCase() !== BEARER) return h.trim() === '' ? 'missing' : 'bad';
  const tok = h.slice(7).trim();
  if (tok === '') return 'missing';
  return tok === KEY ? 'ok' : 'bad';
}

const LOG_HEADERS = ['content-type', 'accept', 'user-agent', 'x-title', 'http-referer', 'x-openrouter-title',
  // what Anthropic and OpenAI clients send, which a gateway forwards or must not forward
  'x-api-key', 'anthropic-version', 'anthropic-beta', 'x-anthropic-beta', 'x-openrouter-metadata',
  'accept-encoding', 'content-encoding'];
function pickHeaders(h) {
  const o = {};
  for (const k of LOG_HEADERS) { const v = h[k]; if (v !== undefined) o[k] = v; }
  return o;
}

function errorType(code) {
  switch (code) {
    case 400: return 'invalid_request';
    case 401: return 'authentication';
    case 402: return 'payment_required';
    case 403: return 'permission_denied';
    case 404: return 'not_found';
    case 408: case 504: case 524: return 'timeout';
    case 429: return 'rate_limit_exceeded';
    case 502: return 'provider_unavailable';
    case 503: case 529: return 'provider_overloaded';
    case 500: return 'server';
    default: return 'unmapped';
  }
}

function defaultErrMessage(code) {
  if (code === 429) return 'Rate limit exceeded';
  if (code === 502) return 'Provider disconnected unexpectedly';
  return 'Provider returned error';
}

function rawFor(code) {
  if (code === 429) return '{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error","code":429}}';
  if (code === 400) return '{"error":{"message":"Invalid request","type":"invalid_request_error","code":400}}';
  return `{"error":{"message":"upstream error","code":${code}}}`;
}

// Prices at the current (offset) UTC time with overrides and discount applied: prompt p,
// completion c, cache read r and cache write w (each the prompt price where the endpoint
// has none).
function pricesNow(ep, promptTokens) {
  let p = ep.prompt, c = ep.completion, r = ep.cacheRead, w = ep.cacheWrite;
  if (ep.overrides) {
    const d = new Date(Date.now() + cfg.clock_offset_ms);
    const hhmm = d.getUTCHours() * 100 + d.getUTCMinutes();
    for (const o of ep.overrides) {
      if (!o || typeof o !== 'object') continue;
      if (o.min_prompt_tokens != null && !(promptTokens > o.min_prompt_tokens)) continue;
      if (o.utc_start != null && o.utc_end != null) {
        const s = o.utc_start, e = o.utc_end;
        const inside = s <= e ? (hhmm >= s && hhmm < e) : (hhmm >= s || hhmm < e);
        if (!inside) continue;
      }
      if (o.prompt != null) p = toNum(o.prompt);
      if (o.completion != null) c = toNum(o.completion);
      if (o.input_cache_read != null) r = toNum(o.input_cache_read);
      if (o.input_cache_write != null) w = toNum(o.input_cache_write);
    }
  }
  const k = 1 - ep.discount;
  return { p: p * k, c: c * k, r: (r == null ? p : r) * k, w: (w == null ? p : w) * k };
}

const r12 = (x) => Math.round(x * 1e12) / 1e12;

// The words of an answer, the same on every API: "Hello", " from", " <tag>", " w4", ...
// Kept per endpoint and count (json: each word as a JSON string; msg: the Messages
// content_block_delta events; tool: the words as tool-call argument pieces; both made on
// first use) unless marked.
// With form "split", the words from the fourth on carry the mark cut in two: " <first half>",
// "<second half>.5", " <first half>", "<second half>.7", ...
function contentPieces(ep, n, mark, form) {
  let pc = mark ? null : ep.pieces.get(n);
  if (pc) return pc;
  const words = [];
  const w = mark ? ` ${mark}.` : ' w';
  const h = mark ? mark.length >> 1 : 0;
  const word = (i) => form !== 'split' ? `${w}${i + 1}`
    : (i - 3) % 2 === 0 ? ` ${mark.slice(0, h)}` : `${mark.slice(h)}.${i + 1}`;
  for (let i = 0; i < n; i++) words.push(i === 0 ? 'Hello' : i === 1 ? ' from' : i === 2 ? ` ${ep.tag}` : word(i));
  pc = { words, json: words.map((x) => JSON.stringify(x)), contentJ: JSON.stringify(words.join('')), msg: null, tool: null };
  if (!mark) ep.pieces.set(n, pc);
  return pc;
}

// The text of the first k words, as a JSON string.
function partialJ(pc, k) { return k >= pc.words.length ? pc.contentJ : JSON.stringify(pc.words.slice(0, k).join('')); }

// A request may shape its own answer (bench/longstreams.mjs, the long soak): a line
// `[double] {...}` in the text of its last message (chat) or last user message (Messages,
// Responses), with any of SHAPE_KEYS (non-negative integers, as in /__double/config) and
// "mark" (letters, digits, '-', at most 32): the content words from the fourth on are
// " MARK.4", " MARK.5", ... so the client can check that the answer it got is its own, whole
// and in order.  Returns the config to answer with.
const SHAPE_KEYS = ['chunks', 'spacing_ms', 'spacing_jitter_ms', 'first_token_delay_ms', 'keepalive_interval_ms'];
const SHAPE_RE = /\[double\] (\{[^\n]*\})/;
const MARK_FORMS = new Set(['split', 'u_first', 'u_all']);
// The mark spelled with JSON \u escapes (its first character, or all) in every string the
// answer writes, error bodies included: an upstream that reflects a secret escaped.
// Content-Length goes, since the length changes.
function escapeMark(ctx, mark, form) {
  const u = (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  const to = form === 'u_all' ? [...mark].map(u).join('') : u(mark[0]) + mark.slice(1);
  const res = ctx.res;
  const fix = (d) => (typeof d === 'string' ? d.split(mark).join(to) : d);
  const wh = res.writeHead.bind(res), w = res.write.bind(res), e = res.end.bind(res);
  res.writeHead = (st, h) => {
    if (h) { h = { ...h }; delete h['Content-Length']; }
    return wh(st, h);
  };
  res.write = (d, ...a) => w(fix(d), ...a);
  res.end = (d, ...a) => e(fix(d), ...a);
}

function shapeOf(text) {
  const hit = text && text.indexOf('[double] ') >= 0 ? SHAPE_RE.exec(text) : null;
  if (!hit) return cfg;
  let o;
  try { o = JSON.parse(hit[1]); } catch (_) { return cfg; }
  const c = { ...cfg, mark: null, mark_form: null };
  for (const k of SHAPE_KEYS) if (Number.isInteger(o[k]) && o[k] >= (k === 'chunks' ? 1 : 0)) c[k] = o[k];
  if (typeof o.mark === 'string' && /^[A-Za-z0-9-]{1,32}$/.test(o.mark)) c.mark = o.mark;
  // how the mark is spelled: an upstream reflecting a secret in forms a client decodes
  if (c.mark && MARK_FORMS.has(o.mark_form)) c.mark_form = o.mark_form;
  // a hostile upstream: N more text deltas after a stream's own end (see AFTER_END)
  if (Number.isInteger(o.after_end) && o.after_end >= 1 && o.after_end <= 100) c.after_end = o.after_end;
  // Messages and Responses: a tool call (function name) instead of text, see toolArgPieces
  if (typeof o.tool === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(o.tool)) c.tool = o.tool;
  return c;
}

// The text of a message content: a string, or its text blocks (Anthropic) / parts (OpenAI).
function contentText(c) {
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  let t = '';
  for (const p of c) if (p && typeof p.text === 'string') t = t ? `${t}\n${p.text}` : p.text;
  return t;
}

// Endpoint selection, imitating OpenRouter's provider object; maxTok is the request's output
// limit under its API's name (null: none).  Returns endpoint or null (=> 404).
function baseMatch(tag, want) { return tag === want || (tag.length > want.length && tag.startsWith(want) && tag[want.length] === '/'); }
function chooseEndpoint(rec, body, maxTok) {
  let cands = rec.norm;
  const prov = body.provider && typeof body.provider === 'object' && !Array.isArray(body.provider) ? body.provider : null;
  const fallbacks = !(prov && prov.allow_fallbacks === false);
  if ((prov && (Array.isArray(prov.only) || Array.isArray(prov.ignore))) || maxTok !== null) {
    const only = prov && Array.isArray(prov.only) ? prov.only.filter((x) => typeof x === 'string') : null;
    const ignore = prov && Array.isArray(prov.ignore) ? prov.ignore.filter((x) => typeof x === 'string') : null;
    cands = cands.filter((e) => {
      if (only && !only.some((w) => baseMatch(e.tag, w))) return false;
      if (ignore && ignore.some((w) => baseMatch(e.tag, w))) return false;
      if (maxTok !== null && e.maxOut !== null && maxTok > e.maxOut) return false;
      return true;
    });
  }
  if (cands.length === 0) return null;
  if (prov && Array.isArray(prov.order) && prov.order.length) {
    for (const w of prov.order) {
      if (typeof w !== 'string') continue;
      for (const e of cands) if (e.tag === w) return e;
      for (const e of cands) if (baseMatch(e.tag, w)) return e;
    }
    return fallbacks ? cands[0] : null;
  }
  const i = rr.get(rec.id) || 0;
  rr.set(rec.id, i + 1);
  return cands[i % cands.length];
}

// ---------------------------------------------------------------------------
// Per-request context
// ---------------------------------------------------------------------------

function head(ctx, status, headers) {
  ctx.entry.status = status;
  bump(stats.statuses, status);
  ctx.res.writeHead(status, headers);
}

function sendJson(ctx, status, body, extra) {
  const h = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  if (extra) Object.assign(h, extra);
  head(ctx, status, h);
  ctx.res.end(body);
}

function destroySelf(ctx) {
  if (ctx.closed) return;
  ctx.self = true;
  ctx.entry.finished_at_ms = nowMs();
  ctx.res.socket && ctx.res.socket.destroy();
  ctx.req.socket.destroy();
}

function resetSocket(ctx) {
  if (ctx.closed) return;
  ctx.self = true;
  ctx.entry.finished_at_ms = nowMs();
  const s = ctx.req.socket;
  if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy(); else s.destroy();
}

// wait `total` ms; every `interval` ms (if >0 and `keep` non-empty) write `keep`; then call `then`
function waitWithKeepalive(ctx, total, interval, keep, then) {
  if (ctx.closed) return;
  if (total <= 0) { then(); return; }
  const step = interval > 0 && keep ? Math.min(interval, total) : total;
  ctx.timer = setTimeout(() => {
    ctx.timer = null;
    if (ctx.closed) return;
    const rest = total - step;
    if (rest > 0 && keep) ctx.res.write(keep);
    waitWithKeepalive(ctx, rest, interval, keep, then);
  }, step);
}

// ---------------------------------------------------------------------------
// Prompts, the prompt cache and usage (every API)
// ---------------------------------------------------------------------------

// What a request's prompt is made of.  chars: the characters of its text (prompt_tokens =
// ceil(chars / 4)); text (with `want`, for the prompt cache): that text with each message's
// role marked; bp: the position in text of the last cache_control breakpoint (0: none).
class PromptWalk {
  constructor(want) { this.want = want; this.text = ''; this.pos = 0; this.chars = 0; this.bp = 0; }
  role(r) { const h = `\u0001${r}\u0002`; this.pos += h.length; if (this.want) this.text += h; }
  add(s) { this.chars += s.length; this.pos += s.length; if (this.want) this.text += s; }
  mark() { this.bp = this.pos; }
  // a string, or blocks/parts with text; with `deep`, the content of an Anthropic
  // tool_result block counts too.  A block with cache_control is a breakpoint after it.
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

function chatPrompt(body, want) {
  const w = new PromptWalk(want);
  for (const m of body.messages) {
    if (!m || typeof m !== 'object') continue;
    w.role(m.role);
    w.content(m.content, false);
  }
  if (body.cache_control) w.mark();
  return w;
}

function messagesPrompt(body, want) {
  const w = new PromptWalk(want);
  if (body.system != null) { w.role('system'); w.content(body.system, false); }
  for (const m of body.messages) {
    if (!m || typeof m !== 'object') continue;
    w.role(m.role);
    w.content(m.content, true);
  }
  if (body.cache_control) w.mark(); // automatic caching: the whole prompt
  return w;
}

function responsesPrompt(body, want) {
  const w = new PromptWalk(want);
  if (typeof body.instructions === 'string') { w.role('developer'); w.add(body.instructions); }
  const inp = body.input;
  if (typeof inp === 'string') { w.role('user'); w.add(inp); }
  else {
    for (const it of inp) {
      if (!it || typeof it !== 'object') continue;
      if (it.type === 'function_call') { w.role('function_call'); if (typeof it.arguments === 'string') w.add(it.arguments); }
      else if (it.type === 'function_call_output') { w.role('tool'); w.content(it.output, false); }
      else if (typeof it.role === 'string') { w.role(it.role); w.content(it.content, false); }
    }
  }
  if (body.cache_control) w.mark();
  return w;
}

// The text of the last message with role user (Messages messages, Responses input items).
function lastUserText(items) {
  for (let i = items.length - 1; i >= 0; i--) {
    const m = items[i];
    if (m && typeof m === 'object' && m.role === 'user' && (m.type === undefined || m.type === 'message')) return contentText(m.content);
  }
  return '';
}

// A provider's prompt cache, as implicit caching works (docs/upstream.md section 8): each
// endpoint (model + tag) remembers the prompts it served; a new prompt's cached tokens are its
// longest common prefix with one of them, in whole tokens (4 chars each, as promptTokens
// counts).  A prompt that went to another endpoint warms nothing here.  Kept per endpoint
// up to PROMPT_CACHE_MAX prompts, oldest dropped; cleared by reset.  The three APIs share
// it: the prompt text is the same role-marked text whatever the request's shape.
const PROMPT_CACHE_MAX = 64;
const promptCaches = new Map(); // "model\ntag" -> [{text, at}, ...]

// Explicit caching (Anthropic-style endpoints with explicit_cache): only the prompt through
// the request's last breakpoint (bp; a top-level cache_control marks all of it) is written,
// and a later prompt reads a written prefix only whole, and only when its own breakpoint
// lies at or past it.  Without a breakpoint nothing is read or written.
function explicitCacheHit(model, ep, text, bp, promptTokens) {
  const key = `${model}\n${ep.tag}`;
  let seen = promptCaches.get(key);
  if (!seen) promptCaches.set(key, (seen = []));
  if (bp <= 0) return 0;
  const now = nowMs(), ttl = cfg.prompt_cache_ttl_ms;
  let best = 0;
  for (const old of seen) {
    if (ttl > 0 && now - old.at > ttl) continue;
    if (old.text.length <= bp && old.text.length > best && text.startsWith(old.text)) best = old.text.length;
  }
  seen.push({ text: text.slice(0, bp), at: now });
  if (seen.length > PROMPT_CACHE_MAX) seen.shift();
  return Math.min(Math.floor(best / 4), promptTokens);
}

function promptCacheHit(model, ep, text, promptTokens) {
  const key = `${model}\n${ep.tag}`;
  let seen = promptCaches.get(key);
  if (!seen) promptCaches.set(key, (seen = []));
  const now = nowMs(), ttl = cfg.prompt_cache_ttl_ms;
  let best = 0;
  for (const old of seen) {
    if (ttl > 0 && now - old.at > ttl) continue;
    const n = Math.min(old.text.length, text.length);
    let i = 0;
    while (i < n && old.text.charCodeAt(i) === text.charCodeAt(i)) i++;
    if (i > best) best = i;
  }
  seen.push({ text, at: now });
  if (seen.length > PROMPT_CACHE_MAX) seen.shift();
  return Math.min(Math.floor(best / 4), promptTokens);
}

// The token counts and cost of one answer, whatever the API.  cached: the cache's hit
// (prompt_cache, x_double_cache_hit_rate), else cached_tokens.  written (cache writes): the
// tokens up to the request's last cache_control breakpoint that were not read from the
// cache; 0 without a breakpoint.  The three input counts are disjoint.
function usageNums(ep, promptTokens, completionTokens, cachedHit, bpTokens, prices) {
  const cached = cachedHit ?? Math.min(cfg.cached_tokens, promptTokens);
  const written = bpTokens > cached ? bpTokens - cached : 0;
  const pr = prices || pricesNow(ep, promptTokens);
  const pc = r12(written ? (promptTokens - cached - written) * pr.p + cached * pr.r + written * pr.w
    : (promptTokens - cached) * pr.p + cached * pr.r);
  const cc = r12(completionTokens * pr.c);
  const reasoning = Math.min(cfg.reasoning_tokens, completionTokens);
  // what the cache saved against the prompt price (negative when writes cost more)
  const discount = cached || written ? r12(cached * (pr.p - pr.r) + written * (pr.p - pr.w)) : null;
  return { prompt: promptTokens, cached, written, completion: completionTokens, reasoning, pc, cc, cost: r12(pc + cc), discount };
}

// The usage of a job's answer with k completion tokens.  One generation is priced once (its
// first use fixes the prices), so the answer's usage.cost and the generation record agree
// whatever the clock does in between.
function jobUsage(ctx, job, k) {
  if (!job.prices) job.prices = pricesNow(job.ep, job.promptTokens);
  return usageNums(job.ep, job.promptTokens, k, ctx.cachedHit, job.bpTokens, job.prices);
}

function chatUsageJ(u) {
  return `{"prompt_tokens":${u.prompt},"completion_tokens":${u.completion},"total_tokens":${u.prompt + u.completion},` +
    `"cost":${u.cost},"is_byok":false,"prompt_tokens_details":{"cached_tokens":${u.cached},"cache_write_tokens":${u.written},"audio_tokens":0,"video_tokens":0},` +
    `"cost_details":{"upstream_inference_cost":${u.cost},"upstream_inference_prompt_cost":${u.pc},"upstream_inference_completions_cost":${u.cc}},` +
    `"completion_tokens_details":{"reasoning_tokens":${u.reasoning},"image_tokens":0,"audio_tokens":0}}`;
}

// Messages usage, Anthropic semantics: input_tokens is neither read from nor written to the cache.
function msgUsageIn(u) {
  return `"input_tokens":${u.prompt - u.cached - u.written},"cache_creation_input_tokens":${u.written},` +
    `"cache_read_input_tokens":${u.cached},"cache_creation":{"ephemeral_5m_input_tokens":${u.written},"ephemeral_1h_input_tokens":0}`;
}
function msgCostJ(u) {
  return `"cost":${u.cost},"is_byok":false,"cost_details":{"upstream_inference_cost":${u.cost},` +
    `"upstream_inference_prompt_cost":${u.pc},"upstream_inference_completions_cost":${u.cc}}`;
}
function msgUsageFull(u) {
  return `{${msgUsageIn(u)},"inference_geo":null,"output_tokens":${u.completion},"output_tokens_details":null,` +
    `"server_tool_use":null,"service_tier":"standard",${msgCostJ(u)}}`;
}
// message_start: the input side (output_tokens 1, as Anthropic sends it)
function msgUsageStart(u) {
  return `{${msgUsageIn(u)},"inference_geo":null,"output_tokens":1,"output_tokens_details":null,"server_tool_use":null,"service_tier":"standard"}`;
}
// message_delta: the form messages_delta_usage names, cost with messages_stream_cost
function msgUsageDelta(u) {
  const f = cfg.messages_delta_usage;
  const cost = cfg.messages_stream_cost ? `,${msgCostJ(u)}` : '';
  if (f === 'output') return `{"output_tokens":${u.completion}${cost}}`;
  if (f === 'full') return `{${msgUsageIn(u)},"output_tokens":${u.completion},"output_tokens_details":null,"server_tool_use":null${cost}}`;
  return `{"input_tokens":null,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":${u.completion},` +
    `"output_tokens_details":null,"server_tool_use":null${cost}}`;
}

// Responses usage, OpenAI semantics: input_tokens includes the cached and written ones.
function respUsageJ(u) {
  return `{"input_tokens":${u.prompt},"input_tokens_details":{"cached_tokens":${u.cached},"cache_write_tokens":${u.written}},` +
    `"output_tokens":${u.completion},"output_tokens_details":{"reasoning_tokens":${u.reasoning}},"total_tokens":${u.prompt + u.completion},` +
    `"cost":${u.cost},"is_byok":false,"cost_details":{"upstream_inference_cost":${u.cost},` +
    `"upstream_inference_input_cost":${u.pc},"upstream_inference_output_cost":${u.cc}}}`;
}

// ---------------------------------------------------------------------------
// Error bodies
// ---------------------------------------------------------------------------

const CREDITS_MESSAGE = 'This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, but can only afford 100. To increase, visit https://openrouter.ai/settings/credits and add more credits';

function providerErrorJson(code, ep, f, codeOut) {
  if (code === 404 && !f.message) return ERR_404_NOPROV;
  if (code === 402 && !f.message) {
    return JSON.stringify({ error: { code: codeOut ?? code, message: CREDITS_MESSAGE, metadata: { provider_name: null } }, user_id: 'user_x' });
  }
  return JSON.stringify({
    error: { code: codeOut ?? code, message: f.message || 'Provider returned error', metadata: { provider_name: ep.provider, raw: f.raw !== undefined ? f.raw : rawFor(code) } },
    user_id: 'user_x',
  });
}

function midstreamErrorEvent(pre, code, message) {
  return `${pre}"error":{"code":${code},"message":${JSON.stringify(message)},"metadata":{"error_type":"${errorType(code)}"}},` +
    '"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n';
}

// Anthropic's error.type for an HTTP status (docs/upstream.md section 13, docs/design.md
// section 11).
function anthropicType(code) {
  switch (code) {
    case 400: case 405: case 415: case 422: return 'invalid_request_error';
    case 401: return 'authentication_error';
    case 402: return 'billing_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 408: case 504: case 524: return 'timeout_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 502: case 503: case 529: return 'overloaded_error';
    default: return 'api_error';
  }
}

// {"type":"error","error":{type, message, error_type?},"request_id"}: OpenRouter's spec gives
// request_id null on 400/401/403 and a generation id on the provider errors.
function anthropicErr(code, message, errType, requestId) {
  return `{"type":"error","error":{"type":"${anthropicType(code)}","message":${JSON.stringify(message)}` +
    `${errType ? `,"error_type":"${errType}"` : ''}},"request_id":${requestId ? `"${requestId}"` : 'null'}}`;
}

function msgErrorEvent(code, message) {
  return `event: error\ndata: {"type":"error","error":{"type":"${anthropicType(code)}","message":${JSON.stringify(message)},` +
    `"error_type":"${errorType(code)}"}}\n\n`;
}

const MSG_404_PATH = anthropicErr(404, 'Not Found');
const unixNow = () => Math.floor(Date.now() / 1000);

// The error.code of a failed Responses answer (a string, as OpenAI's ResponseError has it).
function responsesCode(code) { return code === 429 ? 'rate_limit_exceeded' : 'server_error'; }

// ---------------------------------------------------------------------------
// The three generation APIs: one handler, one stream writer, one JSON writer
// ---------------------------------------------------------------------------

const API_NAMES = ['chat', 'messages', 'responses'];
const RESP_ERROR_FORMS = ['response.failed', 'error', 'error_flat'];
const CUT_KINDS = new Set(['cut_after', 'stall', 'malformed', 'midstream_error']);

const THINKING_MAX_MSG = '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at ' +
  'https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';

const API_CHAT = {
  name: 'chat',
  bigKeys: ['messages'],
  err401: ERR_401,
  bad: (msg) => errBody(400, msg),
  noProvider: () => ERR_404_NOPROV,
  statusError: (code, ep, f) => providerErrorJson(code, ep, f),
  validate: (b) => (Array.isArray(b.messages) ? null : 'Input required: specify "prompt" or "messages"'),
  maxOut: (b) => (Number.isFinite(b.max_completion_tokens) ? b.max_completion_tokens : Number.isFinite(b.max_tokens) ? b.max_tokens : null),
  prompt: chatPrompt,
  shapeText: (b) => {
    const m = b.messages.length ? b.messages[b.messages.length - 1] : null;
    return m && typeof m === 'object' ? contentText(m.content) : '';
  },
  respond: (ctx, job) => respondChat(ctx, job),
};

const API_MESSAGES = {
  name: 'messages',
  bigKeys: ['messages', 'system', 'tools'],
  err401: anthropicErr(401, 'Missing Authentication header'),
  bad: (msg) => anthropicErr(400, msg),
  noProvider: () => anthropicErr(404, 'No allowed providers are available for the selected model.', 'not_found', genId(unixNow())),
  statusError: (code, ep, f) => anthropicErr(code, f.message || (code === 402 ? CREDITS_MESSAGE : code === 404
    ? 'No allowed providers are available for the selected model.' : 'Provider returned error'), errorType(code), genId(unixNow())),
  validate: (b) => {
    if (!Array.isArray(b.messages)) return 'Invalid request: messages is required';
    const t = b.thinking;
    if (t && typeof t === 'object' && t.type === 'enabled') { // Anthropic's rule, which OpenRouter passes on
      const bt = t.budget_tokens;
      if (!Number.isInteger(bt)) return 'thinking.enabled.budget_tokens: Input should be a valid integer';
      if (bt < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
      if (Number.isFinite(b.max_tokens) && bt >= b.max_tokens) return THINKING_MAX_MSG;
    }
    return null;
  },
  maxOut: (b) => (Number.isFinite(b.max_tokens) ? b.max_tokens : null),
  prompt: messagesPrompt,
  shapeText: (b) => lastUserText(b.messages),
  respond: (ctx, job) => respondMessages(ctx, job),
};

const API_RESPONSES = {
  name: 'responses',
  bigKeys: ['input', 'instructions', 'tools'],
  err401: ERR_401,
  bad: (msg) => errBody(400, msg),
  noProvider: () => ERR_404_NOPROV,
  statusError: (code, ep, f) => providerErrorJson(code, ep, f, typeof f.error_code === 'string' ? f.error_code : undefined),
  validate: (b) => {
    if (typeof b.input !== 'string' && !Array.isArray(b.input)) return 'Input required: specify "input"';
    if (b.store === true) return 'store: true is not supported: this Responses API is stateless (send store: false and the whole conversation in input)';
    if (b.previous_response_id != null) return 'previous_response_id is not supported: this Responses API is stateless (send the whole conversation in input)';
    return null;
  },
  maxOut: (b) => (Number.isFinite(b.max_output_tokens) ? b.max_output_tokens : null),
  prompt: responsesPrompt,
  shapeText: (b) => (typeof b.input === 'string' ? b.input : lastUserText(b.input)),
  respond: (ctx, job) => respondResponses(ctx, job),
};

// A big request body is logged as a summary: its other keys, and for each of the API's
// big keys a count (arrays) or a length (strings).
function logBody(entry, rawBody, body, bigKeys) {
  if (rawBody.length <= cfg.log_body_max_bytes || !body || typeof body !== 'object' || Array.isArray(body)) { entry.raw = rawBody; return; }
  const s = { _truncated: true, _bytes: rawBody.length };
  for (const k of Object.keys(body)) if (!bigKeys.includes(k)) s[k] = body[k];
  for (const k of bigKeys) {
    const v = body[k];
    if (Array.isArray(v)) s[`_${k}_count`] = v.length;
    else if (typeof v === 'string') s[`_${k}_chars`] = v.length;
  }
  entry.bodyObj = s;
}

function handleGen(ctx, rawBody, api) {
  const entry = ctx.entry;
  // Bearer only, as OpenRouter documents it: an x-api-key header alone is no key
  const auth = authState(ctx.req.headers.authorization);
  let body = null;
  try { body = JSON.parse(rawBody); } catch (_) { body = undefined; }
  if (body !== undefined) logBody(entry, rawBody, body, api.bigKeys);
  if (auth !== 'ok') return sendJson(ctx, 401, api.err401);
  if (body === undefined) return sendJson(ctx, 400, api.bad('Invalid JSON in request body'));
  if (!body || typeof body !== 'object' || Array.isArray(body)) return sendJson(ctx, 400, api.bad('Request body must be a JSON object'));
  const model = body.model;
  if (typeof model !== 'string' || model === '') return sendJson(ctx, 400, api.bad('No models provided'));
  entry.model = model;
  bump(stats.models, model);
  const bad = api.validate(body);
  if (bad) return sendJson(ctx, 400, api.bad(bad));
  // an id without an author (Anthropic's "claude-sonnet-4-5-20250929") is no OpenRouter model
  if (model.startsWith('missing/') || model.startsWith('invalid/') || model.indexOf('/') <= 0) return sendJson(ctx, 400, api.bad(`${model} is not a valid model ID`));
  const rec = getModel(model);
  noteSeen(model);
  const ep = chooseEndpoint(rec, body, api.maxOut(body));
  if (!ep) return sendJson(ctx, 404, api.noProvider());
  entry.tag = ep.tag;
  bump(stats.tags, ep.tag);
  // The endpoint's concurrency limit: one generation more is a provider 429 naming it.
  if (ep.maxInflight !== null) {
    if (ep.inflight >= ep.maxInflight) {
      entry.fault = 'inflight_429';
      bump(stats.faults, 'inflight_429');
      return sendJson(ctx, 429, api.statusError(429, ep, { raw: `${ep.provider}: too many concurrent requests (limit ${ep.maxInflight})` }));
    }
    const held = ep;
    held.inflight++;
    ctx.res.on('close', () => { held.inflight--; });
  }
  // Reasoning another endpoint encrypted cannot be read here.
  const foreign = cfg.reasoning_items && api.name === 'responses' ? foreignReasoning(body, ep) : null;
  if (foreign) {
    entry.fault = 'invalid_encrypted_content';
    bump(stats.faults, 'invalid_encrypted_content');
    return sendJson(ctx, 400, providerErrorJson(400, ep, {
      raw: JSON.stringify({ error: { message: `The encrypted content for item ${foreign} could not be verified.`,
        type: 'invalid_request_error', param: null, code: 'invalid_encrypted_content' } }),
    }));
  }
  const stream = body.stream === true;
  const f = (faults.length ? takeFault(model, ep.tag, stream, api.name) : null) ??
    (cfg.random_faults.length ? drawFault(model, ep.tag, stream, api.name) : null);
  if (f) { entry.fault = f.kind; bump(stats.faults, f.kind); }

  const pw = api.prompt(body, cfg.prompt_cache);
  const promptTokens = Math.max(1, Math.ceil(pw.chars / 4));
  const bpTokens = pw.bp > 0 ? Math.min(Math.floor(pw.bp / 4), promptTokens) : 0;
  ctx.shape = shapeOf(api.shapeText(body));
  entry.mark = ctx.shape.mark || null;
  if (ctx.shape.mark_form === 'u_first' || ctx.shape.mark_form === 'u_all') escapeMark(ctx, ctx.shape.mark, ctx.shape.mark_form);
  const job = { api, rec, ep, model, body, stream, promptTokens, bpTokens, f };
  if (cfg.prompt_cache && !(f && (f.kind === 'reset' || f.kind === 'hang' || f.kind === 'status'))) {
    ctx.cachedHit = cfg.explicit_cache && ep.cacheWrite !== null && !ep.implicit
      ? explicitCacheHit(model, ep, pw.text, pw.bp, promptTokens)
      : promptCacheHit(model, ep, pw.text, promptTokens);
  }
  if (ep.cacheHitRate !== null) ctx.cachedHit = Math.floor(promptTokens * ep.cacheHitRate);

  if (f) {
    switch (f.kind) {
      case 'reset': return resetSocket(ctx);
      case 'hang':
        if (f.ms > 0) ctx.timer = setTimeout(destroySelf, f.ms, ctx);
        return;
      case 'slow_first_byte':
        job.f = null;
        ctx.timer = setTimeout(() => { ctx.timer = null; if (!ctx.closed) api.respond(ctx, job); }, f.ms > 0 ? f.ms : 1000);
        return;
      case 'status': {
        const code = Number.isInteger(f.status) ? f.status : 502;
        const extra = f.retry_after != null ? { 'Retry-After': String(f.retry_after) } : null;
        const send = () => sendJson(ctx, code, api.statusError(code, ep, f), extra);
        if (!(f.ms > 0)) return send();
        // A provider that takes a while to fail keeps many requests in flight on it.
        ctx.timer = setTimeout(() => { ctx.timer = null; if (!ctx.closed) send(); }, f.ms);
        return;
      }
      default: break;
    }
  }
  api.respond(ctx, job);
}

// How many content words a fault lets through before it strikes (chunks, default 1).
function cutAt(f, n) { return Math.max(0, Math.min(Number.isInteger(f.chunks) ? f.chunks : 1, n)); }

// A non-streamed answer: headers and body at once, or padding first (padding_bytes, and
// every keepalive_interval_ms during first_token_delay_ms), or half of it (cut_after, stall).
function writeJson(ctx, id, body, f) {
  const sh = ctx.shape || cfg;
  const kind = f ? f.kind : null;
  const res = ctx.res;
  const delay = sh.first_token_delay_ms;
  const pad = paddingStr;
  const cutting = kind === 'cut_after' || kind === 'stall';

  if (!pad && !delay && !cutting) {
    markSent(ctx, null);
    return sendJson(ctx, 200, body, { 'X-Generation-Id': id });
  }
  const finish = () => {
    if (ctx.closed) return;
    if (!ctx.entry.status) head(ctx, 200, cutting
      ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(pad + body), 'X-Generation-Id': id }
      : { 'Content-Type': 'application/json', 'X-Generation-Id': id });
    if (pad && !ctx.padSent) res.write(pad);
    markSent(ctx, null);
    if (!cutting) return res.end(body);
    const half = body.slice(0, body.length >> 1);
    if (kind === 'cut_after') res.write(half, () => destroySelf(ctx));
    else {
      res.write(half);
      if (f.ms > 0) ctx.timer = setTimeout(destroySelf, f.ms, ctx);
    }
  };
  if (pad) {
    // headers + padding first, then (after the delay, padding every interval) the JSON
    head(ctx, 200, cutting
      ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(pad + body), 'X-Generation-Id': id }
      : { 'Content-Type': 'application/json', 'X-Generation-Id': id });
    res.write(pad);
    ctx.padSent = true;
    if (cutting) return finish(); // Content-Length covers exactly one padding block
    return waitWithKeepalive(ctx, delay, sh.keepalive_interval_ms, pad, finish);
  }
  return waitWithKeepalive(ctx, delay, 0, '', finish);
}

// A stream: the keep-alives `ka.first`, then (after first_token_delay_ms, `ka.each` every
// keepalive_interval_ms) the events, at once or spacing_ms apart, then the tail: 'end',
// 'destroy' (cut_after) or 'stall'.
// The text delta a hostile upstream sends after its stream's end, in each API's form.
const AFTER_END = {
  chat: 'data: {"id":"gen-after","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" AFTER-END"},"finish_reason":null}]}\n\n',
  messages: 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" AFTER-END"}}\n\n',
  responses: 'data: {"type":"response.output_text.delta","sequence_number":9999,"item_id":"msg_after","output_index":0,"content_index":0,"delta":" AFTER-END","logprobs":[]}\n\n',
};

function writeStream(ctx, id, events, tail, f, ka) {
  const sh = ctx.shape || cfg;
  if (sh.after_end > 0 && tail === 'end' && AFTER_END[ctx.entry.api]) {
    events = events.concat(Array(sh.after_end).fill(AFTER_END[ctx.entry.api]));
  }
  head(ctx, 200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Generation-Id': id });
  ctx.ka = ka;
  ctx.g.evTotal = events.length;
  const spacing = sh.spacing_ms;
  const jitter = sh.spacing_jitter_ms;
  const delay = sh.first_token_delay_ms;
  const res = ctx.res;
  if (spacing === 0 && jitter === 0 && delay === 0) {
    return finishTail(ctx, ka.first + events.join(''), tail, f);
  }
  if (ka.first) res.write(ka.first); else res.flushHeaders();
  const go = () => {
    if (spacing === 0 && jitter === 0) return finishTail(ctx, events.join(''), tail, f);
    emitSpaced(ctx, events, 0, spacing, tail, f, jitter);
  };
  waitWithKeepalive(ctx, delay, sh.keepalive_interval_ms, ka.each, go);
}

function emitSpaced(ctx, events, i, spacing, tail, f, jitter = 0) {
  ctx.timer = null;
  if (ctx.closed) return;
  if (i === events.length - 1) return finishTail(ctx, events[i], tail, f);
  markSent(ctx, i + 1);
  ctx.res.write(events[i]);
  const gap = jitter > 0 ? spacing + Math.floor(Math.random() * (jitter + 1)) : spacing;
  ctx.timer = setTimeout(emitSpaced, gap, ctx, events, i + 1, spacing, tail, f, jitter);
}

function finishTail(ctx, data, tail, f) {
  if (ctx.closed) return;
  markSent(ctx, -1);
  const res = ctx.res;
  if (tail === 'end') { res.end(data); return; }
  if (tail === 'destroy') {
    if (f && f.wait_ms > 0) {
      // cut_after with wait_ms: keep the line open (keep-alives) before the cut
      if (data) res.write(data);
      waitWithKeepalive(ctx, f.wait_ms, cfg.keepalive_interval_ms, (ctx.ka || KA_CHAT).each, () => destroySelf(ctx));
      return;
    }
    if (data) res.write(data, () => destroySelf(ctx)); else destroySelf(ctx);
    return;
  }
  // stall
  if (data) res.write(data);
  if (f && f.ms > 0) ctx.timer = setTimeout(destroySelf, f.ms, ctx);
}

// ---------------------------------------------------------------------------
// Chat completions (docs/upstream.md sections 5, 11)
// ---------------------------------------------------------------------------

function respondChat(ctx, job) {
  const unix = Math.floor(Date.now() / 1000);
  const id = genId(unix);
  openGen(ctx, job, id, null, (ctx.shape || cfg).chunks, 'stop', 'stop');
  if (job.stream) return chatStream(ctx, job, id, unix);
  return chatJson(ctx, job, id, unix);
}

function chatJson(ctx, job, id, unix) {
  const { ep, f } = job;
  const sh = ctx.shape || cfg;
  const pc = contentPieces(ep, sh.chunks, sh.mark, sh.mark_form);
  const kind = f ? f.kind : null;
  let body;
  if (kind === 'error_in_200') {
    const code = Number.isInteger(f.code) ? f.code : 429;
    body = JSON.stringify({
      error: { code, message: f.message || defaultErrMessage(code), metadata: { provider_name: ep.provider, raw: f.raw !== undefined ? f.raw : rawFor(code) } },
      user_id: 'user_x',
    });
  } else if (kind === 'malformed') {
    body = '{not json';
  } else if (kind === 'midstream_error') {
    const code = Number.isInteger(f.code) ? f.code : 502;
    const n = Math.max(0, Math.min(f.chunks ?? 1, pc.json.length));
    body = `{"id":"${id}","object":"chat.completion","created":${unix},"model":${ep.modelJ},"provider":${ep.providerJ},"system_fingerprint":null,` +
      `"choices":[{"index":0,"message":{"role":"assistant","content":${partialJ(pc, n)},"refusal":null,"reasoning":null},` +
      `"error":{"code":${code},"message":${JSON.stringify(f.message || 'Provider disconnected unexpectedly')},"metadata":{"error_type":"${errorType(code)}"}},` +
      `"finish_reason":"error","native_finish_reason":"error","logprobs":null}],"usage":${chatUsageJ(jobUsage(ctx, job, n))}}`;
  } else {
    // huge_answer: the answer's logprobs hold `bytes` (default 60 MB) of small values, "0,"
    // each: a hostile or broken provider's answer, a JSON tree of ~40x its bytes.
    const n = kind === 'huge_answer' ? Math.max(1, Math.floor((Number.isInteger(f.bytes) ? f.bytes : 60e6) / 2)) : 0;
    const lp = n > 0 ? `{"content":[${'0,'.repeat(n - 1)}0]}` : 'null';
    body = `{"id":"${id}","object":"chat.completion","created":${unix},"model":${ep.modelJ},"provider":${ep.providerJ},"system_fingerprint":null,` +
      `"choices":[{"index":0,"message":{"role":"assistant","content":${pc.contentJ},"refusal":null,"reasoning":null},` +
      `"finish_reason":"stop","native_finish_reason":"stop","logprobs":${lp}}],"usage":${chatUsageJ(jobUsage(ctx, job, pc.json.length))}}`;
  }
  writeJson(ctx, id, body, f);
}

function chatStream(ctx, job, id, unix) {
  const { ep, f } = job;
  const sh = ctx.shape || cfg;
  const pc = contentPieces(ep, sh.chunks, sh.mark, sh.mark_form);
  const n = pc.json.length;
  const kind = f ? f.kind : null;
  const pre = `data: {"id":"${id}","object":"chat.completion.chunk","created":${unix},"model":${ep.modelJ},"provider":${ep.providerJ},`;
  const events = [];
  let tail = 'end';
  if (kind === 'error_in_200') {
    const code = Number.isInteger(f.code) ? f.code : 429;
    events.push(midstreamErrorEvent(pre, code, f.message || defaultErrMessage(code)));
  } else {
    events.push(`${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null}]}\n\n`);
    const cut = CUT_KINDS.has(kind) ? cutAt(f, n) : n;
    for (let i = 0; i < cut; i++) {
      pushWord(ctx, events, `${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":${pc.json[i]}},"finish_reason":null,"native_finish_reason":null}]}\n\n`);
    }
    let complete = true;
    if (kind === 'cut_after') { tail = 'destroy'; complete = false; }
    else if (kind === 'stall') { tail = 'stall'; complete = false; }
    else if (kind === 'midstream_error') {
      const code = Number.isInteger(f.code) ? f.code : 502;
      events.push(midstreamErrorEvent(pre, code, f.message || 'Provider disconnected unexpectedly'));
      complete = false;
    } else if (kind === 'malformed') {
      events.push('data: {not json\n\n');
      for (let i = cut; i < n; i++) {
        pushWord(ctx, events, `${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":${pc.json[i]}},"finish_reason":null,"native_finish_reason":null}]}\n\n`);
      }
    }
    if (complete) {
      events.push(`${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"stop"}]}\n\n`);
      const usage = chatUsageJ(jobUsage(ctx, job, n));
      events.push(cfg.usage_repeat_choice
        ? `${pre}"choices":[{"index":0,"delta":{"content":"","role":"assistant"},"finish_reason":"stop","native_finish_reason":"stop"}],"usage":${usage}}\n\n`
        : `${pre}"choices":[],"usage":${usage}}\n\n`);
      if (kind !== 'no_done') events.push('data: [DONE]\n\n');
    }
  }
  writeStream(ctx, id, events, tail, f, KA_CHAT);
}

// ---------------------------------------------------------------------------
// Messages API (docs/upstream.md section 13)
// ---------------------------------------------------------------------------

// The answer's length: `chunks` words, or fewer when the request's output limit is smaller
// (Messages: stop_reason "max_tokens"; Responses: status "incomplete").  Chat ignores it.
function outWords(job, pc) {
  const lim = job.api.maxOut(job.body);
  const n = pc.json.length;
  return Number.isInteger(lim) && lim >= 1 && lim < n ? { n: lim, truncated: true } : { n, truncated: false };
}

const MSG_BLOCK_START = 'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const MSG_BLOCK_STOP = 'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n';
const MSG_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

function msgDeltas(pc) {
  return pc.msg || (pc.msg = pc.json.map((j) =>
    `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${j}}}\n\n`));
}

// A shaped request may ask for a tool call instead of text ("tool": a function name): its
// arguments are {"text": the same words}, streamed one word per delta.  Messages answers
// with a tool_use block (stop_reason "tool_use"), Responses with a function_call item;
// chat ignores it.
function toolArgPieces(pc) {
  if (pc.tool) return pc.tool;
  const n = pc.words.length;
  return (pc.tool = pc.words.map((w, i) => (i === 0 ? '{"text":"' : '') + JSON.stringify(w).slice(1, -1) + (i === n - 1 ? '"}' : '')));
}

function respondMessages(ctx, job) {
  const unix = Math.floor(Date.now() / 1000);
  const id = genId(unix);
  const tail20 = id.slice(id.lastIndexOf('-') + 1);
  const mid = `msg_${tail20}`;
  const { ep, f } = job;
  const sh = ctx.shape || cfg;
  const pc = contentPieces(ep, sh.chunks, sh.mark, sh.mark_form);
  const { n, truncated } = outWords(job, pc);
  const tool = sh.tool ? { id: `toolu_${tail20}`, nameJ: JSON.stringify(sh.tool) } : null;
  const stop = truncated ? 'max_tokens' : tool ? 'tool_use' : 'end_turn';
  const kind = f ? f.kind : null;
  openGen(ctx, job, id, mid, n, truncated ? 'length' : tool ? 'tool_calls' : 'stop', stop);

  if (!job.stream) {
    let body;
    if (kind === 'error_in_200' || kind === 'midstream_error') {
      // a committed 200 whose body is an error (docs/design.md section 11): the provider failed after all
      const mid200 = kind === 'midstream_error';
      const code = Number.isInteger(f.code) ? f.code : mid200 ? 502 : 429;
      body = anthropicErr(code, f.message || (mid200 ? 'Provider disconnected unexpectedly' : defaultErrMessage(code)), errorType(code), id);
    } else if (kind === 'malformed') {
      body = '{not json';
    } else {
      const u = jobUsage(ctx, job, n);
      const block = tool ? `{"type":"tool_use","id":"${tool.id}","name":${tool.nameJ},"input":{"text":${partialJ(pc, n)}}}`
        : `{"type":"text","text":${partialJ(pc, n)}}`;
      body = `{"id":"${mid}","type":"message","role":"assistant","model":${ep.modelJ},"content":[${block}],` +
        `"provider":${ep.providerJ},"stop_reason":"${stop}","stop_sequence":null,"stop_details":null,"container":null,"usage":${msgUsageFull(u)}}`;
    }
    return writeJson(ctx, id, body, f);
  }

  const u = jobUsage(ctx, job, n);
  const events = [];
  let tail = 'end';
  const start = () => events.push(`event: message_start\ndata: {"type":"message_start","message":{"id":"${mid}","type":"message",` +
    `"role":"assistant","model":${ep.modelJ},"content":[],"provider":${ep.providerJ},"stop_reason":null,"stop_sequence":null,` +
    `"usage":${msgUsageStart(u)}}}\n\n`, PING);
  if (kind === 'error_in_200') {
    if (f.started) start();
    const code = Number.isInteger(f.code) ? f.code : 429;
    events.push(msgErrorEvent(code, f.message || defaultErrMessage(code)));
  } else {
    start();
    events.push(tool ? 'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":' +
      `{"type":"tool_use","id":"${tool.id}","name":${tool.nameJ},"input":{}}}\n\n` : MSG_BLOCK_START);
    const d = tool ? toolArgPieces(pc).map((a) => 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,' +
      `"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(a)}}}\n\n`) : msgDeltas(pc);
    const cut = CUT_KINDS.has(kind) ? cutAt(f, n) : n;
    for (let i = 0; i < cut; i++) pushWord(ctx, events, d[i]);
    let complete = true;
    if (kind === 'cut_after') { tail = 'destroy'; complete = false; }
    else if (kind === 'stall') { tail = 'stall'; complete = false; }
    else if (kind === 'midstream_error') {
      const code = Number.isInteger(f.code) ? f.code : 502;
      events.push(msgErrorEvent(code, f.message || 'Provider disconnected unexpectedly'));
      complete = false;
    } else if (kind === 'malformed') {
      events.push('event: content_block_delta\ndata: {not json\n\n');
      for (let i = cut; i < n; i++) pushWord(ctx, events, d[i]);
    }
    if (complete) {
      events.push(MSG_BLOCK_STOP);
      events.push(`event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"${stop}","stop_sequence":null,` +
        `"stop_details":null,"container":null},"usage":${msgUsageDelta(u)}}\n\n`);
      if (kind !== 'no_done') {
        events.push(MSG_STOP);
        if (cfg.messages_done_line) events.push('data: [DONE]\n\n');
      }
    }
  }
  writeStream(ctx, id, events, tail, f, KA_MSG);
}

// ---------------------------------------------------------------------------
// Responses API (docs/upstream.md section 14)
// ---------------------------------------------------------------------------

// The request's settings as OpenAI echoes them in every response object (instructions and
// tools whole: Codex's come to about 40 KB, three times a stream), made once per request.
function respSettingsJ(b) {
  const r = b.reasoning && typeof b.reasoning === 'object' ? b.reasoning : {};
  return JSON.stringify({
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    max_tool_calls: b.max_tool_calls ?? null,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: b.prompt_cache_key ?? null,
    reasoning: { effort: r.effort ?? null, summary: r.summary ?? null },
    safety_identifier: b.safety_identifier ?? null,
    service_tier: b.service_tier ?? 'auto',
    store: false,
    temperature: b.temperature ?? 1,
    text: b.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: b.tool_choice ?? 'auto',
    tools: Array.isArray(b.tools) ? b.tools : [],
    top_logprobs: b.top_logprobs ?? 0,
    top_p: b.top_p ?? 1,
    truncation: b.truncation ?? 'disabled',
    user: b.user ?? null,
    metadata: b.metadata ?? {},
  }).slice(1, -1);
}

// openrouter_metadata (X-OpenRouter-Metadata: enabled), the fields of OpenRouter's schema.
function routerMetaJ(job, status) {
  const avail = job.rec.norm.map((e) => `{"model":${e.modelJ},"provider":${e.providerJ},"selected":${e === job.ep}}`);
  return `{"requested":${JSON.stringify(job.model)},"strategy":"direct","region":null,` +
    `"summary":${JSON.stringify(`available=${avail.length}, selected=${job.ep.provider}`)},"attempt":1,"is_byok":false,` +
    `"endpoints":{"total":${avail.length},"available":[${avail.join(',')}]},` +
    `"attempts":[{"provider":${job.ep.providerJ},"model":${job.ep.modelJ},"status":${status}}]}`;
}

function wantsMeta(h) {
  const v = h['x-openrouter-metadata'] ?? h['x-openrouter-experimental-metadata'];
  return typeof v === 'string' && v.trim().toLowerCase() === 'enabled';
}

// Encrypted reasoning (reasoning_items): the blob names the endpoint that wrote it, as a
// provider's key does; another endpoint cannot read it.  The id of the first input
// reasoning item with encrypted_content this endpoint did not write, else null.
const RS_PREFIX = 'orgw-double-rs:';
function reasoningBlob(ep, rid) { return Buffer.from(`${RS_PREFIX}${ep.tag}:${rid}`).toString('base64'); }
function foreignReasoning(body, ep) {
  if (!Array.isArray(body.input)) return null;
  for (const it of body.input) {
    if (!it || typeof it !== 'object' || it.type !== 'reasoning' || typeof it.encrypted_content !== 'string') continue;
    const plain = Buffer.from(it.encrypted_content, 'base64').toString('utf8');
    if (!plain.startsWith(`${RS_PREFIX}${ep.tag}:`)) return typeof it.id === 'string' ? it.id : 'rs_unknown';
  }
  return null;
}
function wantsReasoning(body) {
  return cfg.reasoning_items && Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content');
}

function respondResponses(ctx, job) {
  const unix = Math.floor(Date.now() / 1000);
  const id = genId(unix);
  const tail20 = id.slice(id.lastIndexOf('-') + 1);
  const rid = `resp_${tail20}`;
  const { ep, f } = job;
  const sh = ctx.shape || cfg;
  const pc = contentPieces(ep, sh.chunks, sh.mark, sh.mark_form);
  const { n, truncated } = outWords(job, pc);
  const kind = f ? f.kind : null;
  const finish = truncated ? 'length' : sh.tool ? 'tool_calls' : 'stop';
  openGen(ctx, job, id, rid, n, finish, truncated ? 'max_output_tokens' : finish);
  const settings = respSettingsJ(job.body);
  const meta = wantsMeta(ctx.req.headers);
  const fail = kind === 'error_in_200' || kind === 'midstream_error';
  const code = fail ? (Number.isInteger(f.code) ? f.code : kind === 'midstream_error' ? 502 : 429) : 200;
  const errMsg = fail ? f.message || (kind === 'midstream_error' ? 'Provider disconnected unexpectedly' : defaultErrMessage(code)) : '';
  const errJ = fail ? `{"code":"${responsesCode(code)}","message":${JSON.stringify(errMsg)}}` : 'null';
  const more = (fail ? `,"error_type":"${errorType(code)}"` : '') + (meta ? `,"openrouter_metadata":${routerMetaJ(job, code)}` : '');
  // a response object: status, output items, usage; error and metadata on the terminal ones
  const obj = (status, outputJ, usageJ, terminal) => `{"id":"${rid}","object":"response","created_at":${unix},"status":"${status}",` +
    `"background":false,"completed_at":${status === 'completed' ? Math.floor(Date.now() / 1000) : 'null'},` +
    `"error":${terminal ? errJ : 'null'},"incomplete_details":${status === 'incomplete' ? '{"reason":"max_output_tokens"}' : 'null'},` +
    `"model":${ep.modelJ},"output":${outputJ},${settings},"usage":${usageJ}${terminal ? more : ''}}`;
  const usageOf = (k) => respUsageJ(jobUsage(ctx, job, k));
  // reasoning_items: an encrypted reasoning item ahead of the answer, output item 0 (in a
  // stream its own output_item.added and .done, the blob on .done, as OpenAI streams it)
  const rsItem = wantsReasoning(job.body) ? `{"id":"rs_${tail20}","type":"reasoning","summary":[]` : '';
  const rsJ = rsItem ? `${rsItem},"encrypted_content":"${reasoningBlob(ep, rid)}"},` : '';
  const oi = rsItem ? 1 : 0;
  // the answer's output item: a message with one output_text part, or a function call (tool)
  const iid = sh.tool ? `fc_${tail20}` : `msg_${tail20}`;
  const at = sh.tool ? `"item_id":"${iid}","output_index":${oi}` : `"item_id":"${iid}","output_index":${oi},"content_index":0`;
  const part = (textJ) => `{"type":"output_text","annotations":[],"logprobs":[],"text":${textJ}}`;
  const args = sh.tool ? toolArgPieces(pc) : null;
  const argsJ = (k) => JSON.stringify(args.slice(0, k).join(''));
  // item(status, k): the item with the first k words (k < 0: the empty opening item)
  const item = sh.tool
    ? (status, k) => `{"id":"${iid}","type":"function_call","status":"${status}","arguments":${k < 0 ? '""' : argsJ(k)},` +
      `"call_id":"call_${tail20}","name":${JSON.stringify(sh.tool)}}`
    : (status, k) => `{"id":"${iid}","type":"message","status":"${status}","content":${k < 0 ? '[]' : `[${part(partialJ(pc, k))}]`},"role":"assistant"}`;

  if (!job.stream) {
    let body;
    if (kind === 'error_in_200') body = obj('failed', '[]', 'null', true);
    else if (kind === 'midstream_error') {
      const k = cutAt(f, n);
      body = obj('failed', `[${item('incomplete', k)}]`, usageOf(k), true);
    } else if (kind === 'malformed') body = '{not json';
    else {
      const st = truncated ? 'incomplete' : 'completed';
      body = obj(st, `[${rsJ}${item(st, n)}]`, usageOf(n), true);
    }
    return writeJson(ctx, id, body, f);
  }

  let seq = 0;
  const lines = cfg.responses_event_lines;
  const ev = (type, rest) => `${lines ? `event: ${type}\n` : ''}data: {"type":"${type}","sequence_number":${seq++}${rest}}\n\n`;
  const delta = sh.tool ? (i) => ev('response.function_call_arguments.delta', `,${at},"delta":${JSON.stringify(args[i])}`)
    : (i) => ev('response.output_text.delta', `,${at},"delta":${pc.json[i]},"logprobs":[]`);
  const events = [];
  let tail = 'end';
  const failure = (outputJ, usageJ) => {
    const form = f.event || 'response.failed';
    const c = responsesCode(code), m = JSON.stringify(errMsg);
    if (form === 'error') events.push(ev('error', `,"error":{"code":"${c}","message":${m}}`));
    else if (form === 'error_flat') events.push(ev('error', `,"code":"${c}","message":${m},"param":null`));
    else events.push(ev('response.failed', `,"response":${obj('failed', outputJ, usageJ, true)}`));
    if (f.done) events.push('data: [DONE]\n\n');
  };
  const opening = obj('in_progress', '[]', 'null', false);
  const begin = () => {
    events.push(ev('response.created', `,"response":${opening}`), ev('response.in_progress', `,"response":${opening}`));
  };
  if (kind === 'error_in_200') {
    if (f.started !== false) begin();
    failure('[]', 'null');
  } else {
    begin();
    if (rsItem) {
      events.push(ev('response.output_item.added', `,"output_index":0,"item":${rsItem}}`),
        ev('response.output_item.done', `,"output_index":0,"item":${rsJ.slice(0, -1)}`));
    }
    events.push(ev('response.output_item.added', `,"output_index":${oi},"item":${item('in_progress', -1)}`));
    if (!sh.tool) events.push(ev('response.content_part.added', `,${at},"part":${part('""')}`));
    const cut = CUT_KINDS.has(kind) ? cutAt(f, n) : n;
    for (let i = 0; i < cut; i++) pushWord(ctx, events, delta(i));
    let complete = true;
    if (kind === 'cut_after') { tail = 'destroy'; complete = false; }
    else if (kind === 'stall') { tail = 'stall'; complete = false; }
    else if (kind === 'midstream_error') {
      failure(`[${rsJ}${item('incomplete', cut)}]`, usageOf(cut));
      complete = false;
    } else if (kind === 'malformed') {
      events.push('data: {not json\n\n');
      for (let i = cut; i < n; i++) pushWord(ctx, events, delta(i));
    }
    if (complete) {
      const st = truncated ? 'incomplete' : 'completed';
      if (sh.tool) events.push(ev('response.function_call_arguments.done', `,${at},"arguments":${argsJ(n)}`));
      else {
        const textJ = partialJ(pc, n);
        events.push(ev('response.output_text.done', `,${at},"text":${textJ},"logprobs":[]`),
          ev('response.content_part.done', `,${at},"part":${part(textJ)}`));
      }
      const done = item(st, n);
      events.push(ev('response.output_item.done', `,"output_index":${oi},"item":${done}`),
        ev(truncated ? 'response.incomplete' : 'response.completed', `,"response":${obj(st, `[${rsJ}${done}]`, usageOf(n), true)}`));
      if (kind !== 'no_done') events.push('data: [DONE]\n\n');
    }
  }
  writeStream(ctx, id, events, tail, f, KA_CHAT);
}

// ---------------------------------------------------------------------------
// Generations: what each answer billed (GET /generation, docs/upstream.md section 9)
// ---------------------------------------------------------------------------

// Every answer of the three APIs is one generation, opened when its id is made (openGen) and
// recorded when its connection closes (endGen): complete, cut by a fault, or left by the
// client.  Kept under the gen- id (the chat id, every API's X-Generation-Id) and the body's
// own id (Messages msg_..., Responses resp_...), the last GEN_MAX of them; reset clears them.
// Stored in columns, a ring of GEN_MAX slots: 10,000 live objects of their own would cost the
// double a fifth of its speed in garbage collection.
const GEN_MAX = 10000;
const genSlot = new Map();  // gen id, and the body's id -> slot
const GEN_NUMS = ['t0', 'firstMs', 'endedAt', 'cost', 'discount', 'prompt', 'completion', 'cached', 'reasoning'];
const GEN_STRS = ['id', 'alt', 'finish', 'native', 'api', 'modelJ', 'provider', 'origin'];
const genNum = new Float64Array(GEN_MAX * GEN_NUMS.length); // NaN: null
const genStr = GEN_STRS.map(() => new Array(GEN_MAX).fill(null));
const genFlags = new Uint8Array(GEN_MAX); // 1 streamed, 2 cancelled
let genNext = 0;            // the slot the next generation takes
let genEpoch = 0;           // a generation still running at a reset is not recorded
const CUT_FAULTS = new Set(['cut_after', 'stall']);

// n: the words of the whole answer; finish/native: its finish_reason and the provider's.
function openGen(ctx, job, id, alt, n, finish, native) {
  const kind = job.f ? job.f.kind : null;
  const failed = kind === 'error_in_200' || kind === 'midstream_error';
  ctx.g = {
    id, alt, job, epoch: genEpoch,
    // a provider's refusal in a 200 generates nothing; a midstream error bills the words before it
    words: kind === 'error_in_200' ? 0 : kind === 'midstream_error' ? cutAt(job.f, n) : n,
    free: kind === 'error_in_200',
    finish: failed ? 'error' : finish,
    native: failed ? 'error' : native,
    cut: CUT_FAULTS.has(kind),
    wordAt: [],   // stream: the indices of the events that carry a word
    evTotal: -1,  // stream: the number of events (-1: not a stream)
    evSent: 0,    // stream: the events written so far
    bodySent: false, // non-stream: the JSON was written
    firstMs: null,   // when the first word was written
  };
}

// An event carrying one word of the answer.
function pushWord(ctx, events, ev) {
  ctx.g.wordAt.push(events.length);
  events.push(ev);
}

// The stream's events up to `upto` (-1: all) are being written; null for a non-stream body.
function markSent(ctx, upto) {
  const g = ctx.g;
  if (!g) return;
  if (upto === null) g.bodySent = true;
  else g.evSent = upto < 0 ? g.evTotal : upto;
  if (g.firstMs === null && (upto === null || (g.wordAt.length && g.wordAt[0] < g.evSent))) g.firstMs = nowMs();
}

function sentWords(g) {
  if (g.evTotal < 0) return g.bodySent ? g.words : 0;
  let k = 0;
  while (k < g.wordAt.length && g.wordAt[k] < g.evSent) k++;
  return k;
}

const API_TYPE = { chat: 'completions', messages: 'messages', responses: 'responses' };

// The connection closed: record what was billed.  Finished: the whole answer (or the words
// before a midstream error).  Destroyed by the double (a fault), or closed by the client
// during a cut fault's silence: finish_reason "error", the words written.  Closed by the
// client before the end: cancelled, the words written.
function endGen(ctx) {
  const g = ctx.g;
  ctx.g = null;
  if (g.epoch !== genEpoch) return;
  const { job } = g;
  let cancelled = false, finish = g.finish, native = g.native, k = g.words;
  if (!ctx.res.writableFinished) {
    k = sentWords(g);
    const allSent = g.evTotal < 0 ? g.bodySent : g.evSent >= g.evTotal;
    if (ctx.self || (g.cut && allSent)) finish = native = 'error';
    else { cancelled = true; finish = native = null; }
  }
  const u = jobUsage(ctx, job, g.free ? 0 : k);
  const cost = g.free ? 0 : u.cost;
  const end = nowMs();
  const ref = ctx.req.headers['http-referer'];
  const slot = genNext;
  genNext = (genNext + 1) % GEN_MAX;
  const [sId, sAlt, sFinish, sNative, sApi, sModel, sProvider, sOrigin] = genStr;
  const oldId = sId[slot], oldAlt = sAlt[slot];
  if (oldId !== null && genSlot.get(oldId) === slot) genSlot.delete(oldId);
  if (oldAlt !== null && genSlot.get(oldAlt) === slot) genSlot.delete(oldAlt);
  // in GEN_NUMS order
  const b = slot * GEN_NUMS.length;
  genNum[b] = ctx.entry.t_ms; genNum[b + 1] = g.firstMs ?? NaN; genNum[b + 2] = end; genNum[b + 3] = cost;
  genNum[b + 4] = g.free || u.discount === null ? NaN : u.discount; genNum[b + 5] = u.prompt;
  genNum[b + 6] = u.completion; genNum[b + 7] = u.cached; genNum[b + 8] = u.reasoning;
  sId[slot] = g.id; sAlt[slot] = g.alt; sFinish[slot] = finish; sNative[slot] = native; sApi[slot] = job.api.name;
  sModel[slot] = job.ep.modelJ; sProvider[slot] = job.ep.provider; sOrigin[slot] = typeof ref === 'string' ? ref : '';
  genFlags[slot] = (job.stream ? 1 : 0) | (cancelled ? 2 : 0);
  genSlot.set(g.id, slot);
  if (g.alt) genSlot.set(g.alt, slot);
  stats.generations++;
  stats.billed_usd = r12(stats.billed_usd + cost);
  stats.billed_by_model[job.model] = r12((stats.billed_by_model[job.model] || 0) + cost);
}

// GET /generation?id=ID: 404 while the generation runs and for generation_ready_ms after
// (OpenRouter's lag behind the stream's end: callers retry a 404).
function handleGeneration(ctx, query) {
  if (authState(ctx.req.headers.authorization) !== 'ok') return sendJson(ctx, 401, ERR_401);
  const id = query ? new URLSearchParams(query).get('id') : null;
  if (!id) return sendJson(ctx, 400, errBody(400, 'Missing required query parameter: id'));
  if (cfg.generation_fault_status &&
      (cfg.generation_fault_times === 0 || stats.generation_faults < cfg.generation_fault_times)) {
    stats.generation_faults++;
    {
      const st = cfg.generation_fault_status;
      const extra = st === 429 ? { 'Retry-After': '1' } : undefined;
      return sendJson(ctx, st, errBody(st, st === 429 ? 'Rate limit exceeded' : st === 404 ? `Generation ${id} not found` : 'Error'), extra);
    }
  }
  stats.generation_lookups++;
  const slot = genSlot.get(id);
  const r = slot === undefined ? null : genRecord(slot);
  if (!r || nowMs() < r.endedAt + cfg.generation_ready_ms) return sendJson(ctx, 404, errBody(404, `Generation ${id} not found`));
  sendJson(ctx, 200, genBody(r));
}

function genRecord(slot) {
  const r = {};
  const base = slot * GEN_NUMS.length;
  GEN_NUMS.forEach((k, i) => { const v = genNum[base + i]; r[k] = Number.isNaN(v) ? null : v; });
  GEN_STRS.forEach((k, i) => { r[k] = genStr[i][slot]; });
  r.stream = (genFlags[slot] & 1) !== 0;
  r.cancelled = (genFlags[slot] & 2) !== 0;
  return r;
}

function genBody(r) {
  const cost = r.cost;
  const tail = r.id.slice(r.id.lastIndexOf('-') + 1);
  return JSON.stringify({ data: {
    id: r.id, upstream_id: r.api === 'messages' ? `msg_${tail}` : `chatcmpl-${tail}`,
    total_cost: cost, cache_discount: r.discount, upstream_inference_cost: cost,
    created_at: new Date(r.t0).toISOString().replace('Z', '+00:00'),
    model: JSON.parse(r.modelJ), app_id: null, streamed: r.stream, cancelled: r.cancelled,
    provider_name: r.provider,
    latency: r.firstMs === null ? null : Math.round(r.firstMs - r.t0), moderation_latency: null,
    generation_time: Math.round(r.endedAt - (r.firstMs ?? r.t0)),
    finish_reason: r.finish, native_finish_reason: r.native,
    tokens_prompt: r.prompt, tokens_completion: r.completion,
    native_tokens_prompt: r.prompt, native_tokens_completion: r.completion,
    native_tokens_cached: r.cached, native_tokens_reasoning: r.reasoning,
    num_media_prompt: 0, num_media_completion: 0, num_search_results: 0,
    origin: r.origin, usage: cost, is_byok: false,
    api_type: API_TYPE[r.api], router: null, external_user: null,
  } });
}

// GET /key (and the older /auth/key): the upstream key, unlimited, its usage what every
// generation since the start (or reset) billed.
function handleKey(ctx) {
  if (authState(ctx.req.headers.authorization) !== 'ok') return sendJson(ctx, 401, ERR_401);
  const u = stats.billed_usd;
  sendJson(ctx, 200, JSON.stringify({ data: {
    label: `${KEY.slice(0, 11)}...${KEY.slice(-3)}`, limit: null, limit_reset: null, limit_remaining: null,
    include_byok_in_limit: false, usage: u, usage_daily: u, usage_weekly: u, usage_monthly: u,
    byok_usage: 0, byok_usage_daily: 0, byok_usage_weekly: 0, byok_usage_monthly: 0,
    is_free_tier: false, is_management_key: false, is_provisioning_key: false,
    rate_limit: { requests: -1, interval: '10s', note: 'This field is deprecated and safe to ignore.' },
    creator_user_id: null, expires_at: null,
  } }));
}

// ---------------------------------------------------------------------------
// Endpoints and models
// ---------------------------------------------------------------------------

function handleEndpoints(ctx, author, slug) {
  const auth = authState(ctx.req.headers.authorization);
  if (auth === 'bad') return sendJson(ctx, 401, ERR_401);
  const id = `${author}/${slug}`;
  ctx.entry.model = id;
  bump(stats.models, id);
  if (id.startsWith('missing/')) return sendJson(ctx, 404, ERR_404_RES);
  if (id.startsWith('invalid/')) return sendJson(ctx, 400, JSON.stringify({ error: { code: 400, message: `${id} is not a valid model ID` } }));
  const rec = getModel(id);
  noteSeen(id);
  const answer = () => {
    ctx.timer = null;
    if (ctx.closed) return;
    const st = rec.status;
    if (st && st !== 200) {
      const body = st === 404 ? ERR_404_RES
        : st === 500 ? '{"error":{"code":500,"message":"Internal Server Error"}}'
          : errBody(st, st === 403 ? 'Forbidden' : 'Error');
      return sendJson(ctx, st, body);
    }
    sendJson(ctx, 200, endpointsBody(rec, auth === 'ok'));
  };
  const delay = rec.delay_ms != null ? rec.delay_ms : cfg.endpoints_delay_ms;
  if (delay > 0) ctx.timer = setTimeout(answer, delay);
  else answer();
}

function handleModels(ctx) {
  if (authState(ctx.req.headers.authorization) !== 'ok') return sendJson(ctx, 401, ERR_401);
  sendJson(ctx, 200, modelsListBody());
}

// ---------------------------------------------------------------------------
// Control API
// ---------------------------------------------------------------------------

function ctlSend(res, status, obj) {
  const body = typeof obj === 'string' ? obj : JSON.stringify(obj);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function doReset() {
  cfg = { ...DEFAULTS };
  rng = Math.random;
  applyDerived();
  faults = [];
  rr.clear();
  promptCaches.clear();
  models.clear();
  seenModels.clear();
  modelsListCache = null;
  log = [];
  seq = 0;
  genSlot.clear();
  for (const col of genStr) col.fill(null);
  genNext = 0;
  genEpoch++;
  resetStats();
}

function faultFromSpec(spec) {
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) return [null, 'each fault must be an object'];
  if (!FAULT_KINDS.has(spec.kind)) return [null, `unknown fault kind "${spec.kind}" (allowed: ${[...FAULT_KINDS].join(', ')})`];
  let times = spec.times === undefined ? 1 : spec.times;
  if (!Number.isInteger(times) || times === 0 || times < -1) return [null, 'times must be a positive integer or -1'];
  let match = null;
  if (spec.match != null) {
    if (typeof spec.match !== 'object' || Array.isArray(spec.match)) return [null, 'match must be an object'];
    match = {};
    for (const k of ['model', 'tag', 'stream', 'api']) if (spec.match[k] !== undefined && spec.match[k] !== null) match[k] = spec.match[k];
    if (match.api !== undefined && !API_NAMES.includes(match.api)) return [null, `match.api must be one of ${API_NAMES.join(', ')}`];
    if (!Object.keys(match).length) match = null;
  }
  if (spec.event !== undefined && !RESP_ERROR_FORMS.includes(spec.event)) {
    return [null, `event must be one of ${RESP_ERROR_FORMS.join(', ')}`];
  }
  for (const k of ['started', 'done']) if (spec[k] !== undefined && typeof spec[k] !== 'boolean') return [null, `${k} must be a boolean`];
  if (spec.kind === 'status' && spec.status !== undefined && !(Number.isInteger(spec.status) && spec.status >= 100 && spec.status <= 599)) {
    return [null, 'status must be an HTTP status code'];
  }
  const f = { ...spec, id: ++faultSeq, kind: spec.kind, match, times, hits: 0 };
  return [f, null];
}

function control(req, res, path, query, raw) {
  const m = req.method;
  let body;
  const parse = () => {
    if (raw === '') return {};
    try { return JSON.parse(raw); } catch (_) { return undefined; }
  };
  if (path === '/__double/health') return ctlSend(res, 200, '{"ok":true}');
  if (path === '/__double/config') {
    if (m === 'GET') return ctlSend(res, 200, { config: cfg });
    if (m !== 'POST') return ctlSend(res, 405, { error: 'use GET or POST' });
    if ((body = parse()) === undefined) return ctlSend(res, 400, { error: 'bad JSON' });
    const err = mergeConfig(body);
    if (err) return ctlSend(res, 400, { error: err });
    return ctlSend(res, 200, { ok: true, config: cfg });
  }
  if (path === '/__double/reset') {
    if (m !== 'POST') return ctlSend(res, 405, { error: 'use POST' });
    doReset();
    return ctlSend(res, 200, { ok: true });
  }
  if (path === '/__double/close_idle') {
    // What a real server's keep-alive timeout does, on demand: the next
    // request of a client with a pooled connection goes on a new one.
    if (m !== 'POST') return ctlSend(res, 405, { error: 'use POST' });
    server.closeIdleConnections();
    return ctlSend(res, 200, { ok: true });
  }
  if (path === '/__double/faults') {
    if (m === 'GET') return ctlSend(res, 200, { faults });
    if (m === 'DELETE') { faults = []; return ctlSend(res, 200, { ok: true }); }
    if (m !== 'POST') return ctlSend(res, 405, { error: 'use GET, POST or DELETE' });
    if ((body = parse()) === undefined) return ctlSend(res, 400, { error: 'bad JSON' });
    const list = Array.isArray(body) ? body : Array.isArray(body.faults) ? body.faults : [body];
    const add = [];
    for (const s of list) {
      const [f, err] = faultFromSpec(s);
      if (err) return ctlSend(res, 400, { error: err });
      add.push(f);
    }
    for (const f of add) faults.push(f);
    return ctlSend(res, 200, { ok: true, added: add.map((f) => f.id), pending: faults.length });
  }
  if (path === '/__double/log') {
    if (m === 'DELETE') { log = []; return ctlSend(res, 200, { ok: true }); }
    if (m !== 'GET') return ctlSend(res, 405, { error: 'use GET or DELETE' });
    let out = log.length > LOG_MAX ? log.slice(-LOG_MAX) : log;
    if (query) {
      const q = new URLSearchParams(query);
      const since = Number(q.get('since'));
      if (q.has('since') && Number.isFinite(since)) {
        let lo = 0, hi = out.length; // seq is increasing: binary search
        while (lo < hi) { const mid = (lo + hi) >> 1; if (out[mid].seq <= since) lo = mid + 1; else hi = mid; }
        out = out.slice(lo);
      }
      const p = q.get('path');
      if (p) out = out.filter((e) => e.path.includes(p));
      const lim = Number(q.get('limit'));
      if (q.has('limit') && Number.isInteger(lim) && lim >= 0) out = lim === 0 ? [] : out.slice(-lim);
    }
    return ctlSend(res, 200, { requests: out });
  }
  if (path === '/__double/stats') {
    return ctlSend(res, 200, { ...stats, inflight, log_entries: Math.min(log.length, LOG_MAX), faults_pending: faults.length, loop_lag_ms: loopLag() });
  }
  if (path === '/__double/active') {
    // Generation requests being answered now: the client's port (to tell which worker holds
    // each, from /proc/net/tcp) and the mark of a shaped request.
    const out = [];
    for (const c of active) {
      out.push({ port: c.req.socket.remotePort ?? null, mark: c.entry.mark || null, model: c.entry.model || null, api: c.entry.api });
    }
    return ctlSend(res, 200, { active: out });
  }
  if (path === '/__double/loop_lag_reset') {
    lagHist.reset();
    return ctlSend(res, 200, { ok: true });
  }
  if (path.startsWith('/__double/endpoints/')) {
    const rest = path.slice('/__double/endpoints/'.length).split('/').map((s) => decodeURIComponent(s));
    if (rest.length !== 2 || !rest[0] || !rest[1]) return ctlSend(res, 400, { error: 'path must be /__double/endpoints/{author}/{slug}' });
    const id = `${rest[0]}/${rest[1]}`;
    if (m === 'DELETE') { models.delete(id); modelsListCache = null; return ctlSend(res, 200, { ok: true }); }
    if (m === 'GET') {
      const rec = getModel(id);
      return ctlSend(res, 200, { id, status: rec.status, delay_ms: rec.delay_ms, meta: rec.meta, endpoints: rec.raw });
    }
    if (m !== 'PUT' && m !== 'POST') return ctlSend(res, 405, { error: 'use PUT, GET or DELETE' });
    if ((body = parse()) === undefined) return ctlSend(res, 400, { error: 'bad JSON' });
    const rec = getModel(id);
    if (Array.isArray(body)) setEndpoints(rec, body);
    else if (body && typeof body === 'object') {
      if ('endpoints' in body) {
        if (!Array.isArray(body.endpoints)) return ctlSend(res, 400, { error: 'endpoints must be an array' });
        setEndpoints(rec, body.endpoints);
      }
      if ('status' in body) {
        const st = body.status;
        if (st !== null && !(Number.isInteger(st) && st >= 0 && st <= 599)) return ctlSend(res, 400, { error: 'bad status' });
        rec.status = st === 200 || !st ? 0 : st;
      }
      if ('delay_ms' in body) {
        const d = body.delay_ms;
        if (d !== null && !(Number.isInteger(d) && d >= 0)) return ctlSend(res, 400, { error: 'bad delay_ms' });
        rec.delay_ms = d;
      }
      const meta = { ...rec.meta };
      let metaChanged = false;
      for (const k of ['name', 'created', 'description', 'architecture']) if (k in body) { meta[k] = body[k]; metaChanged = true; }
      if (metaChanged) { rec.meta = meta; rec.bodyAuth = rec.bodyNoAuth = null; }
    } else return ctlSend(res, 400, { error: 'body must be an endpoints array or an object' });
    rec.custom = true;
    modelsListCache = null;
    return ctlSend(res, 200, { ok: true, id, endpoints: rec.raw.length, status: rec.status, delay_ms: rec.delay_ms });
  }
  return ctlSend(res, 404, { error: 'unknown control path' });
}

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

function readBody(req, cb) {
  const chunks = [];
  let len = 0;
  req.on('data', (c) => { chunks.push(c); len += c.length; });
  req.on('end', () => {
    cb(chunks.length === 0 ? '' : chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks, len).toString('utf8'));
  });
}

const PFX_API = '/api/v1/';
const PFX_V1 = '/v1/';
const ENC_SLASH = /%2f/i;

// Every request being answered (GET /__double/active), and how late this process's
// event loop runs (loop_lag_ms in /__double/stats; reset by /__double/loop_lag_reset):
// a double that cannot keep up would make every path look slow.
const active = new Set();
const LAG_RES_MS = 10;
const lagHist = monitorEventLoopDelay({ resolution: LAG_RES_MS });
lagHist.enable();
function loopLag() { // the histogram counts the sampling interval in: lateness is the rest
  const ms = (ns) => Math.round(Math.max(0, ns / 1e6 - LAG_RES_MS) * 100) / 100;
  return { p50: ms(lagHist.percentile(50)), p99: ms(lagHist.percentile(99)), max: ms(lagHist.max), mean: ms(lagHist.mean) };
}

function onRequest(req, res) {
  const url = req.url;
  const qi = url.indexOf('?');
  const path = qi < 0 ? url : url.slice(0, qi);
  const query = qi < 0 ? '' : url.slice(qi + 1);
  let sub = path;
  if (path.startsWith(PFX_API)) sub = path.slice(PFX_API.length - 1);
  else if (path.startsWith(PFX_V1)) sub = path.slice(PFX_V1.length - 1);
  else if (path.startsWith('/__double/')) sub = path;
  else sub = null;

  if (sub !== null && sub.startsWith('/__double/')) {
    if (req.method === 'GET' || req.method === 'HEAD') return control(req, res, sub, query, '');
    return readBody(req, (raw) => control(req, res, sub, query, raw));
  }

  const entry = new LogEntry(++seq, nowMs(), req.method, path, req.headers.authorization ?? null, pickHeaders(req.headers));
  if (qi >= 0) entry.query = query;
  pushLog(entry);
  stats.total++;
  bump(stats.paths, path);
  inflight++;
  const ctx = { req, res, entry, closed: false, self: false, timer: null, padSent: false, g: null };
  active.add(ctx);
  res.on('finish', () => { entry.finished_at_ms = nowMs(); });
  res.on('close', () => {
    inflight--;
    active.delete(ctx);
    if (!res.writableFinished && !ctx.self) {
      entry.closed_by_client = true;
      entry.closed_at_ms = nowMs();
      stats.closed_by_client++;
    }
    ctx.closed = true;
    if (ctx.timer) { clearTimeout(ctx.timer); ctx.timer = null; }
    if (ctx.g) endGen(ctx);
  });

  if (sub === null) return sendJson(ctx, 404, ERR_404_PATH);
  if (ENC_SLASH.test(path)) return drainThen(req, () => sendJson(ctx, 404, ERR_404_RES));

  if (sub === '/chat/completions' || sub === '/chat/completions/') {
    setApi(entry, API_CHAT);
    if (req.method !== 'POST') return drainThen(req, () => sendJson(ctx, 405, errBody(405, 'Method Not Allowed'), { Allow: 'POST' }));
    return readBody(req, (raw) => { if (!ctx.closed) handleGen(ctx, raw, API_CHAT); });
  }
  if (sub === '/messages' || sub === '/messages/') {
    setApi(entry, API_MESSAGES);
    if (req.method !== 'POST') return drainThen(req, () => sendJson(ctx, 405, anthropicErr(405, 'Method Not Allowed'), { Allow: 'POST' }));
    return readBody(req, (raw) => { if (!ctx.closed) handleGen(ctx, raw, API_MESSAGES); });
  }
  if (sub.startsWith('/messages/')) {
    // count_tokens is not in OpenRouter's API (docs/upstream.md section 13), nor is anything else here
    setApi(entry, API_MESSAGES);
    return drainThen(req, () => sendJson(ctx, 404, MSG_404_PATH));
  }
  if (sub === '/responses' || sub === '/responses/') {
    setApi(entry, API_RESPONSES);
    if (req.method !== 'POST') return drainThen(req, () => sendJson(ctx, 405, errBody(405, 'Method Not Allowed'), { Allow: 'POST' }));
    return readBody(req, (raw) => { if (!ctx.closed) handleGen(ctx, raw, API_RESPONSES); });
  }
  if (sub.startsWith('/responses/')) {
    // stateless: GET /responses/{id} and the other sub-paths of OpenAI's API are not served
    setApi(entry, API_RESPONSES);
    return drainThen(req, () => sendJson(ctx, 404, ERR_404_PATH));
  }
  if (sub === '/generation' || sub === '/key' || sub === '/auth/key') {
    if (req.method !== 'GET') return drainThen(req, () => sendJson(ctx, 405, errBody(405, 'Method Not Allowed'), { Allow: 'GET' }));
    return sub === '/generation' ? handleGeneration(ctx, query) : handleKey(ctx);
  }
  if (sub === '/models' || sub === '/models/') {
    if (req.method !== 'GET') return drainThen(req, () => sendJson(ctx, 405, errBody(405, 'Method Not Allowed'), { Allow: 'GET' }));
    return handleModels(ctx);
  }
  if (sub.startsWith('/models/') && sub.endsWith('/endpoints')) {
    const parts = sub.slice('/models/'.length, sub.length - '/endpoints'.length).split('/');
    if (parts.length === 2 && parts[0] && parts[1]) {
      if (req.method !== 'GET') return drainThen(req, () => sendJson(ctx, 405, errBody(405, 'Method Not Allowed'), { Allow: 'GET' }));
      let a, s;
      try { a = decodeURIComponent(parts[0]); s = decodeURIComponent(parts[1]); } catch (_) { return sendJson(ctx, 404, ERR_404_RES); }
      return handleEndpoints(ctx, a, s);
    }
    return sendJson(ctx, 404, ERR_404_RES);
  }
  return drainThen(req, () => sendJson(ctx, 404, ERR_404_PATH));
}

function setApi(entry, api) {
  entry.api = api.name;
  bump(stats.apis, api.name);
}

function drainThen(req, fn) {
  if (req.complete) return fn();
  req.on('end', fn);
  req.resume();
}

applyDerived();
const serverOpts = { keepAlive: true, noDelay: true, requestTimeout: 0, headersTimeout: 60000 };
// --tls-cert/--tls-key: the same double over https (the static dist's TLS
// path is tested against it, tests/integration/t0555-dist-chroot.sh).
const server = ARGS.tlsCert ?
  require('https').createServer({ ...serverOpts, cert: fs.readFileSync(ARGS.tlsCert), key: fs.readFileSync(ARGS.tlsKey) }, onRequest) :
  http.createServer(serverOpts, onRequest);
server.keepAliveTimeout = 75000;
server.timeout = 0;
server.maxHeadersCount = 200;
server.on('clientError', (err, socket) => {
  if (socket.writable && err.code !== 'ECONNRESET') socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  else socket.destroy();
});

server.listen({ port: ARGS.port, host: ARGS.host, backlog: 4096 }, () => {
  const port = server.address().port;
  if (ARGS.portFile) {
    const tmp = `${ARGS.portFile}.tmp.${process.pid}`;
    fs.writeFileSync(tmp, `${port}\n`);
    fs.renameSync(tmp, ARGS.portFile);
  }
  const shownHost = ARGS.host.includes(':') ? `[${ARGS.host}]` : ARGS.host;
  process.stdout.write(`openrouter-double listening on ${ARGS.tlsCert ? 'https' : 'http'}://${shownHost}:${port}\n`);
});
server.on('error', (e) => { process.stderr.write(`openrouter-double: ${e.message}\n`); process.exit(1); });

function shutdown() {
  server.close();
  if (server.closeAllConnections) server.closeAllConnections();
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
