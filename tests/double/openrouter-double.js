#!/usr/bin/env node
// openrouter-double: a fast, concurrent OpenRouter test double.
//
// Speaks OpenRouter's wire format (see /work/shared/OPENROUTER.md sections 1, 3, 5, 6, 10, 11, 12)
// including its quirks and faults, plus a small control API under /__double/ for tests.
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
  prompt_cache: false,        // true: cached_tokens is what a per-endpoint prefix cache gives (below)
  prompt_cache_ttl_ms: 0,     // a cached prompt unused this long is gone (0 = kept)
  endpoints_delay_ms: 0,      // delay before answering /endpoints (per-model delay_ms wins)
  usage_repeat_choice: false, // usage chunk repeats the choice (REC form) instead of choices:[]
  log_body_max_bytes: 65536,  // bigger request bodies are logged as a summary object
  random_faults: [],          // [{kind, p, match?, ...params}]: drawn per chat request (see drawFault)
  random_seed: 0,             // 0 = Math.random; N = a fixed sequence (repeatable soak runs)
  clock_offset_ms: 0,         // added to the wall clock for time-of-day prices (utc_start/utc_end)
});
const BOOL_KEYS = new Set(['usage_repeat_choice', 'prompt_cache']);

let cfg = { ...DEFAULTS };
let paddingStr = '';
let commentsStr = ': OPENROUTER PROCESSING\n\n';
const COMMENT = ': OPENROUTER PROCESSING\n\n';

function applyDerived() {
  const pat = '\n         \n\n';
  paddingStr = cfg.padding_bytes > 0 ? pat.repeat(Math.ceil(cfg.padding_bytes / pat.length)).slice(0, cfg.padding_bytes) : '';
  commentsStr = COMMENT.repeat(cfg.keepalive_comments);
}

function mergeConfig(obj) {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return 'config must be a JSON object';
  for (const k of Object.keys(obj)) {
    if (!(k in DEFAULTS)) return `unknown config key "${k}" (allowed: ${Object.keys(DEFAULTS).join(', ')})`;
    const v = obj[k];
    if (k === 'random_faults') { const e = checkRandomFaults(v); if (e) return e; continue; }
    if (BOOL_KEYS.has(k)) { if (typeof v !== 'boolean') return `${k} must be a boolean`; }
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
// with a probability p (0..1, summing to at most 1).  A chat request that took no scripted
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

function drawFault(model, tag, stream) {
  let r = rng();
  for (const f of cfg.random_faults) {
    if (r < f.p) {
      const m = f.match;
      if (m && ((m.model !== undefined && m.model !== model) || (m.tag !== undefined && m.tag !== tag) ||
          (m.stream !== undefined && m.stream !== stream))) return null;
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

// Generated set for any other model. Ranking by SPEC 6 (no caching anywhere, flat prices):
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
    discount: toNum(p.discount),
    overrides: Array.isArray(p.overrides) && p.overrides.length ? p.overrides : null,
    maxOut: Number.isFinite(e.max_completion_tokens) && e.max_completion_tokens > 0 ? e.max_completion_tokens : null,
    // Double-only: a provider whose cache serves this share of every prompt (see README).
    cacheHitRate: Number.isFinite(e.x_double_cache_hit_rate) && e.x_double_cache_hit_rate >= 0 &&
      e.x_double_cache_hit_rate <= 1 ? e.x_double_cache_hit_rate : null,
    pieces: new Map(), // chunks -> {json:[...], contentJ}
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
  'malformed', 'no_done', 'midstream_error']);
let faults = [];
let faultSeq = 0;
const rr = new Map();
const LOG_MAX = 100000;
let log = [];
let seq = 0;
let stats;
let inflight = 0;
function resetStats() {
  stats = { total: 0, paths: Object.create(null), tags: Object.create(null), models: Object.create(null),
    statuses: Object.create(null), faults: Object.create(null), closed_by_client: 0 };
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
  }

  toJSON() {
    let body = this.bodyObj;
    if (body === null && this.raw !== null) { try { body = JSON.parse(this.raw); } catch (_) { body = null; } }
    return {
      seq: this.seq, t_ms: this.t_ms, method: this.method, path: this.path, auth: this.auth, headers: this.headers,
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

function takeFault(model, tag, stream) {
  for (let i = 0; i < faults.length; i++) {
    const f = faults[i];
    const m = f.match;
    if (m) {
      if (m.model !== undefined && m.model !== model) continue;
      if (m.tag !== undefined && m.tag !== tag) continue;
      if (m.stream !== undefined && m.stream !== stream) continue;
    }
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

const LOG_HEADERS = ['content-type', 'accept', 'user-agent', 'x-title', 'http-referer', 'x-openrouter-title'];
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

function countPromptChars(messages) {
  let n = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!m || typeof m !== 'object') continue;
    const c = m.content;
    if (typeof c === 'string') n += c.length;
    else if (Array.isArray(c)) {
      for (const p of c) if (p && typeof p.text === 'string') n += p.text.length;
    }
  }
  return n;
}

function pricesNow(ep, promptTokens) {
  let p = ep.prompt, c = ep.completion, r = ep.cacheRead;
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
    }
  }
  const k = 1 - ep.discount;
  return { p: p * k, c: c * k, r: (r == null ? p : r) * k };
}

const r12 = (x) => Math.round(x * 1e12) / 1e12;

function contentPieces(ep, n, mark) {
  let pc = mark ? null : ep.pieces.get(n);
  if (pc) return pc;
  const words = [];
  const w = mark ? ` ${mark}.` : ' w';
  for (let i = 0; i < n; i++) words.push(i === 0 ? 'Hello' : i === 1 ? ' from' : i === 2 ? ` ${ep.tag}` : `${w}${i + 1}`);
  pc = { json: words.map((x) => JSON.stringify(x)), contentJ: JSON.stringify(words.join('')) };
  if (!mark) ep.pieces.set(n, pc);
  return pc;
}

// A request may shape its own answer (bench/longstreams.mjs, the long soak): a line
// `[double] {...}` in its last message's text, with any of SHAPE_KEYS (non-negative
// integers, as in /__double/config) and "mark" (letters, digits, '-', at most 32): the
// content words from the fourth on are " MARK.4", " MARK.5", ... so the client can check
// that the answer it got is its own, whole and in order.  Returns the config to answer with.
const SHAPE_KEYS = ['chunks', 'spacing_ms', 'spacing_jitter_ms', 'first_token_delay_ms', 'keepalive_interval_ms'];
const SHAPE_RE = /\[double\] (\{[^\n]*\})/;
function shapeOf(messages) {
  const m = messages.length ? messages[messages.length - 1] : null;
  const text = m && typeof m.content === 'string' ? m.content : '';
  const hit = text.indexOf('[double] ') >= 0 ? SHAPE_RE.exec(text) : null;
  if (!hit) return cfg;
  let o;
  try { o = JSON.parse(hit[1]); } catch (_) { return cfg; }
  const c = { ...cfg, mark: null };
  for (const k of SHAPE_KEYS) if (Number.isInteger(o[k]) && o[k] >= (k === 'chunks' ? 1 : 0)) c[k] = o[k];
  if (typeof o.mark === 'string' && /^[A-Za-z0-9-]{1,32}$/.test(o.mark)) c.mark = o.mark;
  return c;
}

// Endpoint selection, imitating OpenRouter's provider object. Returns endpoint or null (=> 404).
function baseMatch(tag, want) { return tag === want || (tag.length > want.length && tag.startsWith(want) && tag[want.length] === '/'); }
function chooseEndpoint(rec, body) {
  let cands = rec.norm;
  const prov = body.provider && typeof body.provider === 'object' && !Array.isArray(body.provider) ? body.provider : null;
  let maxTok = body.max_completion_tokens;
  if (!Number.isFinite(maxTok)) maxTok = body.max_tokens;
  if (!Number.isFinite(maxTok)) maxTok = null;
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
// Chat completions
// ---------------------------------------------------------------------------

// A provider's prompt cache, as implicit caching works (OPENROUTER.md 8): each endpoint
// (model + tag) remembers the prompts it served; a new prompt's cached tokens are its
// longest common prefix with one of them, in whole tokens (4 chars each, as promptTokens
// counts).  A prompt that went to another endpoint warms nothing here.  Kept per endpoint
// up to PROMPT_CACHE_MAX prompts, oldest dropped; cleared by reset.
const PROMPT_CACHE_MAX = 64;
const promptCaches = new Map(); // "model\ntag" -> [{text, at}, ...]

function promptText(messages) {
  let t = '';
  for (const m of messages) {
    if (!m || typeof m !== 'object') continue;
    t += `\u0001${m.role}\u0002`;
    if (typeof m.content === 'string') t += m.content;
    else if (Array.isArray(m.content)) for (const p of m.content) if (p && typeof p.text === 'string') t += p.text;
  }
  return t;
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

function buildUsage(ep, promptTokens, completionTokens, cachedHit) {
  const cached = cachedHit ?? Math.min(cfg.cached_tokens, promptTokens);
  const pr = pricesNow(ep, promptTokens);
  const pc = r12((promptTokens - cached) * pr.p + cached * pr.r);
  const cc = r12(completionTokens * pr.c);
  const cost = r12(pc + cc);
  return `{"prompt_tokens":${promptTokens},"completion_tokens":${completionTokens},"total_tokens":${promptTokens + completionTokens},` +
    `"cost":${cost},"is_byok":false,"prompt_tokens_details":{"cached_tokens":${cached},"cache_write_tokens":0,"audio_tokens":0,"video_tokens":0},` +
    `"cost_details":{"upstream_inference_cost":${cost},"upstream_inference_prompt_cost":${pc},"upstream_inference_completions_cost":${cc}},` +
    '"completion_tokens_details":{"reasoning_tokens":0,"image_tokens":0,"audio_tokens":0}}';
}

function midstreamErrorEvent(pre, code, message) {
  return `${pre}"error":{"code":${code},"message":${JSON.stringify(message)},"metadata":{"error_type":"${errorType(code)}"}},` +
    '"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n';
}

function providerErrorJson(code, ep, f) {
  if (code === 404 && !f.message) return ERR_404_NOPROV;
  if (code === 402 && !f.message) {
    return JSON.stringify({ error: { code, message: 'This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, but can only afford 100. To increase, visit https://openrouter.ai/settings/credits and add more credits', metadata: { provider_name: null } }, user_id: 'user_x' });
  }
  return JSON.stringify({
    error: { code, message: f.message || 'Provider returned error', metadata: { provider_name: ep.provider, raw: f.raw !== undefined ? f.raw : rawFor(code) } },
    user_id: 'user_x',
  });
}

function handleChat(ctx, rawBody) {
  const entry = ctx.entry;
  const auth = authState(ctx.req.headers.authorization);
  let body = null;
  try { body = JSON.parse(rawBody); } catch (_) { body = undefined; }
  if (body !== undefined) {
    if (rawBody.length <= cfg.log_body_max_bytes || !body || typeof body !== 'object' || Array.isArray(body)) entry.raw = rawBody;
    else {
      const s = { _truncated: true, _bytes: rawBody.length };
      for (const k of Object.keys(body)) if (k !== 'messages') s[k] = body[k];
      if (Array.isArray(body.messages)) s._messages_count = body.messages.length;
      entry.bodyObj = s;
    }
  }
  if (auth !== 'ok') return sendJson(ctx, 401, ERR_401);
  if (body === undefined) return sendJson(ctx, 400, errBody(400, 'Invalid JSON in request body'));
  if (!body || typeof body !== 'object' || Array.isArray(body)) return sendJson(ctx, 400, errBody(400, 'Request body must be a JSON object'));
  const model = body.model;
  if (typeof model !== 'string' || model === '') return sendJson(ctx, 400, errBody(400, 'No models provided'));
  entry.model = model;
  bump(stats.models, model);
  if (!Array.isArray(body.messages)) return sendJson(ctx, 400, errBody(400, 'Input required: specify "prompt" or "messages"'));
  if (model.startsWith('missing/')) return sendJson(ctx, 400, errBody(400, `${model} is not a valid model ID`));
  const rec = getModel(model);
  noteSeen(model);
  const ep = chooseEndpoint(rec, body);
  if (!ep) return sendJson(ctx, 404, ERR_404_NOPROV);
  entry.tag = ep.tag;
  bump(stats.tags, ep.tag);
  const stream = body.stream === true;
  const f = (faults.length ? takeFault(model, ep.tag, stream) : null) ??
    (cfg.random_faults.length ? drawFault(model, ep.tag, stream) : null);
  if (f) { entry.fault = f.kind; bump(stats.faults, f.kind); }

  const promptTokens = Math.max(1, Math.ceil(countPromptChars(body.messages) / 4));
  ctx.shape = shapeOf(body.messages);
  entry.mark = ctx.shape.mark || null;
  const job = { ep, stream, promptTokens, f };
  if (cfg.prompt_cache && !(f && (f.kind === 'reset' || f.kind === 'hang' || f.kind === 'status'))) {
    ctx.cachedHit = promptCacheHit(model, ep, promptText(body.messages), promptTokens);
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
        ctx.timer = setTimeout(() => { ctx.timer = null; if (!ctx.closed) respondChat(ctx, job); }, f.ms > 0 ? f.ms : 1000);
        return;
      case 'status': {
        const code = Number.isInteger(f.status) ? f.status : 502;
        const extra = f.retry_after != null ? { 'Retry-After': String(f.retry_after) } : null;
        return sendJson(ctx, code, providerErrorJson(code, ep, f), extra);
      }
      default: break;
    }
  }
  respondChat(ctx, job);
}

function respondChat(ctx, job) {
  const { ep, stream, promptTokens, f } = job;
  const unix = Math.floor(Date.now() / 1000);
  const id = genId(unix);
  if (stream) return respondStream(ctx, ep, id, unix, promptTokens, f);
  return respondJson(ctx, ep, id, unix, promptTokens, f);
}

function respondJson(ctx, ep, id, unix, promptTokens, f) {
  const sh = ctx.shape || cfg;
  const pc = contentPieces(ep, sh.chunks, sh.mark);
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
    const partial = JSON.stringify(pc.json.slice(0, n).map((j) => JSON.parse(j)).join(''));
    body = `{"id":"${id}","object":"chat.completion","created":${unix},"model":${ep.modelJ},"provider":${ep.providerJ},"system_fingerprint":null,` +
      `"choices":[{"index":0,"message":{"role":"assistant","content":${partial},"refusal":null,"reasoning":null},` +
      `"error":{"code":${code},"message":${JSON.stringify(f.message || 'Provider disconnected unexpectedly')},"metadata":{"error_type":"${errorType(code)}"}},` +
      `"finish_reason":"error","native_finish_reason":"error","logprobs":null}],"usage":${buildUsage(ep, promptTokens, n, ctx.cachedHit)}}`;
  } else {
    body = `{"id":"${id}","object":"chat.completion","created":${unix},"model":${ep.modelJ},"provider":${ep.providerJ},"system_fingerprint":null,` +
      `"choices":[{"index":0,"message":{"role":"assistant","content":${pc.contentJ},"refusal":null,"reasoning":null},` +
      `"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}],"usage":${buildUsage(ep, promptTokens, pc.json.length, ctx.cachedHit)}}`;
  }
  const res = ctx.res;
  const delay = sh.first_token_delay_ms;
  const pad = paddingStr;
  const cutting = kind === 'cut_after' || kind === 'stall';

  if (!pad && !delay && !cutting) {
    return sendJson(ctx, 200, body, { 'X-Generation-Id': id });
  }
  const finish = () => {
    if (ctx.closed) return;
    if (!ctx.entry.status) head(ctx, 200, cutting
      ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(pad + body), 'X-Generation-Id': id }
      : { 'Content-Type': 'application/json', 'X-Generation-Id': id });
    if (pad && !ctx.padSent) res.write(pad);
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

function respondStream(ctx, ep, id, unix, promptTokens, f) {
  const sh = ctx.shape || cfg;
  const pc = contentPieces(ep, sh.chunks, sh.mark);
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
    const cutAt = (kind === 'cut_after' || kind === 'stall' || kind === 'malformed' || kind === 'midstream_error')
      ? Math.max(0, Math.min(Number.isInteger(f.chunks) ? f.chunks : 1, n)) : n;
    for (let i = 0; i < cutAt; i++) {
      events.push(`${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":${pc.json[i]}},"finish_reason":null,"native_finish_reason":null}]}\n\n`);
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
      for (let i = cutAt; i < n; i++) {
        events.push(`${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":${pc.json[i]}},"finish_reason":null,"native_finish_reason":null}]}\n\n`);
      }
    }
    if (complete) {
      events.push(`${pre}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"stop"}]}\n\n`);
      const usage = buildUsage(ep, promptTokens, n, ctx.cachedHit);
      events.push(cfg.usage_repeat_choice
        ? `${pre}"choices":[{"index":0,"delta":{"content":"","role":"assistant"},"finish_reason":"stop","native_finish_reason":"stop"}],"usage":${usage}}\n\n`
        : `${pre}"choices":[],"usage":${usage}}\n\n`);
      if (kind !== 'no_done') events.push('data: [DONE]\n\n');
    }
  }

  head(ctx, 200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Generation-Id': id });
  const spacing = sh.spacing_ms;
  const jitter = sh.spacing_jitter_ms;
  const delay = sh.first_token_delay_ms;
  const res = ctx.res;
  if (spacing === 0 && jitter === 0 && delay === 0) {
    return finishTail(ctx, commentsStr + events.join(''), tail, f);
  }
  if (commentsStr) res.write(commentsStr); else res.flushHeaders();
  const go = () => {
    if (spacing === 0 && jitter === 0) return finishTail(ctx, events.join(''), tail, f);
    emitSpaced(ctx, events, 0, spacing, tail, f, jitter);
  };
  waitWithKeepalive(ctx, delay, sh.keepalive_interval_ms, COMMENT, go);
}

function emitSpaced(ctx, events, i, spacing, tail, f, jitter = 0) {
  ctx.timer = null;
  if (ctx.closed) return;
  if (i === events.length - 1) return finishTail(ctx, events[i], tail, f);
  ctx.res.write(events[i]);
  const gap = jitter > 0 ? spacing + Math.floor(Math.random() * (jitter + 1)) : spacing;
  ctx.timer = setTimeout(emitSpaced, gap, ctx, events, i + 1, spacing, tail, f, jitter);
}

function finishTail(ctx, data, tail, f) {
  if (ctx.closed) return;
  const res = ctx.res;
  if (tail === 'end') { res.end(data); return; }
  if (tail === 'destroy') {
    if (f && f.wait_ms > 0) {
      // cut_after with wait_ms: keep the line open (keep-alive comments) before the cut
      if (data) res.write(data);
      waitWithKeepalive(ctx, f.wait_ms, cfg.keepalive_interval_ms, COMMENT, () => destroySelf(ctx));
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
// Endpoints and models
// ---------------------------------------------------------------------------

function handleEndpoints(ctx, author, slug) {
  const auth = authState(ctx.req.headers.authorization);
  if (auth === 'bad') return sendJson(ctx, 401, ERR_401);
  const id = `${author}/${slug}`;
  ctx.entry.model = id;
  bump(stats.models, id);
  if (id.startsWith('missing/')) return sendJson(ctx, 404, ERR_404_RES);
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
    for (const k of ['model', 'tag', 'stream']) if (spec.match[k] !== undefined && spec.match[k] !== null) match[k] = spec.match[k];
    if (!Object.keys(match).length) match = null;
  }
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
    // Chat requests being answered now: the client's port (to tell which worker holds
    // each, from /proc/net/tcp) and the mark of a shaped request.
    const out = [];
    for (const c of active) out.push({ port: c.req.socket.remotePort ?? null, mark: c.entry.mark || null, model: c.entry.model || null });
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
  pushLog(entry);
  stats.total++;
  bump(stats.paths, path);
  inflight++;
  const ctx = { req, res, entry, closed: false, self: false, timer: null, padSent: false };
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
  });

  if (sub === null) return sendJson(ctx, 404, ERR_404_PATH);
  if (ENC_SLASH.test(path)) return drainThen(req, () => sendJson(ctx, 404, ERR_404_RES));

  if (sub === '/chat/completions' || sub === '/chat/completions/') {
    if (req.method !== 'POST') return drainThen(req, () => sendJson(ctx, 405, errBody(405, 'Method Not Allowed'), { Allow: 'POST' }));
    return readBody(req, (raw) => { if (!ctx.closed) handleChat(ctx, raw); });
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
