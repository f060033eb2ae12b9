#!/usr/bin/env node
// claude-session.mjs - one long Claude Code-shaped session through the
// gateway's Messages API with the official Anthropic SDK: turn after turn on
// one model, each answer and a new user turn appended, in the shape Claude
// Code 2.x sends (docs/upstream.md section 15): client.beta.messages (so
// /v1/messages?beta=true with anthropic-beta), three system blocks (a billing
// line, the identity and a large system prompt, the last two with
// cache_control), tools whose last one has cache_control, the last block of
// the last message marked with cache_control (moved forward every turn),
// max_tokens 32000 with thinking budget 31999, metadata.user_id and
// context_management.  Every other turn asks for a tool call (the double's
// "tool" shaping) and the next turn sends its tool_result back, as an agent
// loop does.
//
//   node tests/js/claude-session.mjs --base URL --key KEY --model M
//        [--auth x-api-key|bearer] [--turns N] [--system-bytes N]
//        [--nonstream-every K] [--timeout MS]
//
//   --base     the gateway root (the SDK appends /v1/messages)
//   --auth     as in anthropic.mjs (default x-api-key, Claude Code's with
//              ANTHROPIC_API_KEY)
//   --turns    default 20
//   --system-bytes   size of the large system block (default 100000)
//   --nonstream-every K   every K-th turn is messages.create without stream
//              (default 0: every turn streamed with messages.stream())
//
// Output, one JSON line:
//   {turns: [{stream, ok, status, provider, route, attempts, stop_reason,
//             tool, text, prompt, cached, written, output, ideal_cached,
//             ideal_written, t_first_ms, t_total_ms, error}],
//    request_bytes: [...], prompt_total, cached_total, written_total,
//    output_total, ideal_cached_total, ideal_written_total}
//
// prompt = input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens of the turn's usage (Anthropic's three input
// counts are disjoint); cached = cache_read_input_tokens; written =
// cache_creation_input_tokens.  ideal_cached and ideal_written are what one
// warm provider's prompt cache gives the turn as the double models it
// (tests/js/prompt-cache.mjs): the longest common prefix of the turn's
// role-marked prompt text with an earlier turn's, in whole tokens of 4
// characters, and the tokens up to the last cache_control breakpoint less
// that.  With every turn on one provider the measured counts
// equal them exactly; a turn on a cold provider reads less and writes more.
//
// Exit status 0 whatever the API said; 2 for a usage error, 3 for a bug here.
import Anthropic from '@anthropic-ai/sdk';
import { WarmCache } from './prompt-cache.mjs';

function usage(msg) {
  process.stderr.write(`claude-session.mjs: ${msg}\n` +
    'usage: node claude-session.mjs --base URL --key KEY --model M [--auth x-api-key|bearer]\n' +
    '       [--turns N] [--system-bytes N] [--nonstream-every K] [--timeout MS]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { auth: 'x-api-key', turns: 20, systemBytes: 100000, nonstreamEvery: 0, timeout: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`missing value for ${a}`); return argv[++i]; };
    const int = () => { const v = Number(val()); if (!Number.isInteger(v) || v < 0) usage(`${a} must be a non-negative integer`); return v; };
    switch (a) {
      case '--base': o.base = val(); break;
      case '--key': o.key = val(); break;
      case '--model': o.model = val(); break;
      case '--auth': o.auth = val(); break;
      case '--turns': o.turns = int(); break;
      case '--system-bytes': o.systemBytes = int(); break;
      case '--nonstream-every': o.nonstreamEvery = int(); break;
      case '--timeout': o.timeout = int(); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  for (const k of ['base', 'key', 'model']) if (o[k] === undefined) usage(`--${k} is required`);
  if (!['x-api-key', 'bearer'].includes(o.auth)) usage('--auth is x-api-key or bearer');
  return o;
}

const BETAS = ['claude-code-20250219', 'interleaved-thinking-2025-05-14', 'context-management-2025-06-27'];
const TOOL_NAMES = ['Agent', 'Bash', 'Edit', 'Glob', 'Grep', 'Read', 'Write', 'NotebookEdit',
  'WebFetch', 'WebSearch', 'TodoWrite', 'BashOutput', 'KillShell', 'ExitPlanMode', 'Skill',
  'SlashCommand', 'ListMcpResources', 'ReadMcpResource', 'AskUserQuestion', 'ToolSearch'];

// A deterministic large system prompt of about `bytes` characters.
function bigSystem(bytes) {
  const lines = [];
  let n = 0;
  for (let i = 1; n < bytes; i++) {
    const l = `# Rule ${i}\nWhen working on task kind ${i % 37}, read the relevant files first, keep ` +
      `changes small, run the tests (suite ${i % 11}) and report what changed and why.\n`;
    lines.push(l);
    n += l.length;
  }
  return lines.join('').slice(0, bytes);
}

function tools() {
  return TOOL_NAMES.map((name, i) => {
    const t = {
      name,
      description: `${name}: ` + `Use this tool to ${name.toLowerCase()} as the task needs; it reports its result as text. `.repeat(8),
      input_schema: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'what to do' },
          path: { type: 'string', description: 'the file or directory' },
          limit: { type: 'integer', description: `at most this many (${i})` },
        },
        required: ['text'],
        additionalProperties: false,
      },
    };
    if (i === TOOL_NAMES.length - 1) t.cache_control = { type: 'ephemeral' };
    return t;
  });
}

// Only the last block of the last message keeps its cache_control, as
// Claude Code moves its message breakpoint forward every turn.
function withLastMark(messages) {
  const out = messages.map((m) => ({
    role: m.role,
    content: m.content.map((b) => { const { cache_control: _cc, ...rest } = b; return rest; }),
  }));
  const last = out[out.length - 1].content;
  last[last.length - 1] = { ...last[last.length - 1], cache_control: { type: 'ephemeral' } };
  return out;
}

const HDRS = ['x-orgw-provider', 'x-orgw-route', 'x-orgw-attempts'];

async function turn(client, body, stream) {
  const r = { stream, ok: false, status: null, provider: null, route: null, attempts: null,
    stop_reason: null, tool: null, text: '', content: null, prompt: 0, cached: 0, written: 0, output: 0,
    t_first_ms: null, t_total_ms: null, error: null };
  const t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  const headers = (h) => {
    r.status = 200;
    r.provider = h.get(HDRS[0]);
    r.route = h.get(HDRS[1]);
    r.attempts = Number(h.get(HDRS[2]));
  };
  try {
    let msg;
    if (stream) {
      const s = client.beta.messages.stream(body);
      s.on('streamEvent', (ev) => { if (ev.type === 'content_block_delta' && r.t_first_ms === null) r.t_first_ms = since(); });
      const { response } = await s.withResponse();
      headers(response.headers);
      msg = await s.finalMessage();
    } else {
      const { data, response } = await client.beta.messages.create(body).withResponse();
      headers(response.headers);
      r.t_first_ms = since();
      msg = data;
    }
    r.content = msg.content;
    r.stop_reason = msg.stop_reason;
    r.text = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const tu = msg.content.find((b) => b.type === 'tool_use');
    if (tu) r.tool = tu.name;
    const u = msg.usage ?? {};
    r.cached = u.cache_read_input_tokens ?? 0;
    r.written = u.cache_creation_input_tokens ?? 0;
    r.prompt = (u.input_tokens ?? 0) + r.cached + r.written;
    r.output = u.output_tokens ?? 0;
    r.ok = msg.type === 'message' && (r.text.length > 0 || r.tool !== null);
  } catch (e) {
    if (!(e instanceof Anthropic.AnthropicError)) throw e;
    const b = e?.error?.error ?? e?.error;
    r.error = { status: Number.isInteger(e?.status) ? e.status : null, message: b?.message ?? e?.message ?? String(e), type: b?.type ?? null };
    if (r.status === null) r.status = r.error.status;
  }
  r.t_total_ms = since();
  return r;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  // defaultQuery: Claude Code's own client sends ?beta=true, this SDK's beta
  // resource does not.
  const opts = { baseURL: o.base, maxRetries: 0, timeout: o.timeout, apiKey: null, authToken: null,
    defaultQuery: { beta: 'true' } };
  if (o.auth === 'x-api-key') opts.defaultHeaders = { 'x-api-key': o.key };
  else opts.authToken = o.key;
  const client = new Anthropic(opts);
  const sessionId = '6f1c2f0e-0000-4000-8000-00000000c1a0';
  const system = [
    { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;' },
    { type: 'text', text: 'You are Claude Code, Anthropic\'s official CLI for Claude.', cache_control: { type: 'ephemeral' } },
    { type: 'text', text: bigSystem(o.systemBytes), cache_control: { type: 'ephemeral' } },
  ];
  const tl = tools();
  const messages = [];
  const warm = new WarmCache();
  const out = { turns: [], request_bytes: [], prompt_total: 0, cached_total: 0, written_total: 0, output_total: 0,
    ideal_cached_total: 0, ideal_written_total: 0 };
  let pendingTool = null;
  for (let i = 0; i < o.turns; i++) {
    const user = [];
    if (pendingTool) {
      user.push({ type: 'tool_result', tool_use_id: pendingTool.id,
        content: `Result of ${pendingTool.name} in turn ${i}:\n` + `line ${i}: some file content, a build log or a diff\n`.repeat(40) });
    }
    const wantTool = i % 2 === 0 && i < o.turns - 1;
    user.push({ type: 'text', text: `Turn ${i + 1}: go on with the work, step by step.` +
      (wantTool ? ` [double] {"tool":"${TOOL_NAMES[(i / 2) % TOOL_NAMES.length]}","chunks":6}` : '') });
    messages.push({ role: 'user', content: user });
    const sent = withLastMark(messages);
    const ideal = warm.take('messages', { system, messages: sent });
    const body = {
      model: o.model, max_tokens: 32000, system, tools: tl, messages: sent,
      thinking: { type: 'enabled', budget_tokens: 31999 },
      metadata: { user_id: JSON.stringify({ device_id: 'orgw-test', account_uuid: '', session_id: sessionId }) },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      betas: BETAS,
    };
    const { betas: _b, ...wire } = body;
    out.request_bytes.push(JSON.stringify({ ...wire, stream: true }).length);
    const stream = !(o.nonstreamEvery > 0 && (i + 1) % o.nonstreamEvery === 0);
    const r = await turn(client, body, stream);
    r.ideal_cached = ideal.cached;
    r.ideal_written = ideal.written;
    out.turns.push(r);
    out.prompt_total += r.prompt;
    out.cached_total += r.cached;
    out.written_total += r.written;
    out.output_total += r.output;
    out.ideal_cached_total += ideal.cached;
    out.ideal_written_total += ideal.written;
    // The assistant turn as Claude Code sends it back: the blocks it got.
    const content = (r.content ?? [{ type: 'text', text: '(no answer)' }]).map((b) =>
      b.type === 'tool_use' ? { type: 'tool_use', id: b.id, name: b.name, input: b.input } : { type: 'text', text: b.text ?? '' });
    messages.push({ role: 'assistant', content });
    const tu = content.find((b) => b.type === 'tool_use');
    pendingTool = tu ? { id: tu.id, name: tu.name } : null;
    delete r.content;
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(`claude-session.mjs: helper bug: ${e?.stack ?? e}\n`);
  process.exit(3);
});
