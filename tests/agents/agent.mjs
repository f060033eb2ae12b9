#!/usr/bin/env node
// agent.mjs - one headless run of a real coding agent against a base URL,
// reported as one JSON line on stdout.
//
//   node tests/agents/agent.mjs --client claude|claude-token|codex|opencode
//        --base URL --key KEY --model SLUG [--prompt TEXT] [--timeout MS]
//        [--retries N] [--title TEXT] [--keep] [--home DIR] [--continue]
//
//   --client   claude        Claude Code, claude -p, key as ANTHROPIC_API_KEY
//                            (sent as x-api-key); Messages API
//              claude-token  the same with ANTHROPIC_AUTH_TOKEN (sent as
//                            Authorization: Bearer)
//              codex         Codex CLI, codex exec, a custom provider with
//                            wire_api = "responses"; Responses API
//              opencode      opencode run, @ai-sdk/openai-compatible; chat
//                            completions
//   --base     the gateway root, e.g. http://127.0.0.1:8080 (a trailing /v1
//              is dropped); Claude Code gets it as is, Codex and opencode
//              get BASE/v1
//   --model    an OpenRouter slug; Claude Code gets it as ANTHROPIC_MODEL and
//              as every tier's default (opus, sonnet, haiku, small/fast)
//   --prompt   default "Say hello."
//   --timeout  ms for the whole run (default 120000); then the client's
//              process group gets TERM, KILL 2 s later (Codex never gives up
//              on a refused connection by itself)
//   --retries  the client's own retry count where it has one: Claude Code
//              CLAUDE_CODE_MAX_RETRIES, Codex request_max_retries and
//              stream_max_retries; opencode has no setting, ignored.
//              Default: the client's own (Claude 10; Codex 4 and 5: 30
//              requests on a 500), see README.md
//   --title    opencode only: --title TEXT, which skips its title request
//   --keep     keep the temporary home (its path is in "home")
//   --home DIR use DIR as the home (made if missing, kept afterwards): a
//              later run with the same DIR and --continue goes on with the
//              conversation the client saved there
//   --continue the client's own "go on with the last session": claude -p
//              --continue, codex exec resume --last, opencode run --continue
//
// Output (one line):
//   {ok, client, exit_code, signal, timed_out, answer, error, usage,
//    stdout_tail, stderr_tail, t_total_ms, home}
// ok: the client exited 0 and reported no error.  answer: the final
// assistant text as the client reports it (Claude: "result" of
// --output-format json; Codex: the last agent_message of --json; opencode:
// the text parts of --format json).  error: the client's error message, or
// null.  usage: the token counts the client reports, as it names them.
//
// Each run gets a fresh temporary HOME (and CODEX_HOME, XDG dirs, TMPDIR)
// and an environment built from scratch (PATH and LANG are kept), so no
// real configuration or credential is read.  HTTPS_PROXY and HTTP_PROXY
// point at a closed loopback port and NO_PROXY names the base URL's host:
// whatever a client would send to its vendor fails at once, never leaving
// the machine, and the settings below keep such calls from being tried.
//
// Exit status 0 whatever the client did; 2 for a usage error; 3 for a bug
// in this helper (e.g. the client is not installed: run npm ci here).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NM = path.join(HERE, 'node_modules');
const TAIL = 2000;
// The opencode version whose config-dir install is pre-seeded (see home()).
const OPENCODE_PLUGIN_VERSION = '1.18.33';

function usage(msg) {
  process.stderr.write(`agent.mjs: ${msg}\n` +
    'usage: node agent.mjs --client claude|claude-token|codex|opencode --base URL --key KEY\n' +
    '       --model SLUG [--prompt TEXT] [--timeout MS] [--retries N] [--title TEXT] [--keep]\n' +
    '       [--home DIR] [--continue]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { prompt: 'Say hello.', timeout: 120000, keep: false, cont: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`missing value for ${a}`); return argv[++i]; };
    const int = () => {
      const v = Number(val());
      if (!Number.isInteger(v) || v < 0) usage(`${a} must be a non-negative integer`);
      return v;
    };
    switch (a) {
      case '--client': o.client = val(); break;
      case '--base': o.base = val(); break;
      case '--key': o.key = val(); break;
      case '--model': o.model = val(); break;
      case '--prompt': o.prompt = val(); break;
      case '--timeout': o.timeout = int(); break;
      case '--retries': o.retries = int(); break;
      case '--title': o.title = val(); break;
      case '--keep': o.keep = true; break;
      case '--home': o.home = path.resolve(val()); o.keep = true; break;
      case '--continue': o.cont = true; break;
      case '-h': case '--help': usage('help'); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!['claude', 'claude-token', 'codex', 'opencode'].includes(o.client)) usage('--client is claude, claude-token, codex or opencode');
  if (!o.base) usage('--base is required');
  if (o.key === undefined) usage('--key is required');
  if (!o.model) usage('--model is required');
  let u;
  try { u = new URL(o.base); } catch { usage(`--base is not a URL: ${o.base}`); }
  o.root = o.base.replace(/\/+$/, '').replace(/\/v1$/, '');
  o.host = u.hostname.replace(/^\[|\]$/g, '');
  return o;
}

function bug(msg) {
  process.stderr.write(`agent.mjs: ${msg}\n`);
  process.exit(3);
}

// The native binary itself where the platform package has it, so a run
// does not depend on the wrapper's postinstall having copied it into place.
function binary(client) {
  const arch = os.arch();
  const cands = {
    claude: [`@anthropic-ai/claude-code-linux-${arch}/claude`, `@anthropic-ai/claude-code-linux-${arch}-musl/claude`, '.bin/claude'],
    // The npm wrapper (node) puts the bundled rg on PATH and marks the
    // install as npm-managed; the native binary is started by it.
    codex: ['@openai/codex/bin/codex.js'],
    opencode: [`opencode-linux-${arch}/bin/opencode`, `opencode-linux-${arch}-baseline/bin/opencode`, '.bin/opencode'],
  }[client];
  for (const c of cands) {
    const p = path.join(NM, c);
    if (fs.existsSync(p)) return p.endsWith('.js') ? [process.execPath, p] : [p];
  }
  bug(`${client} is not installed under ${NM} (run npm ci in tests/agents)`);
}

function tomlString(s) { return JSON.stringify(s); }

// The temporary home and everything the client reads from it.
function setup(o) {
  let home = o.home;
  if (home) fs.mkdirSync(home, { recursive: true });
  else home = fs.mkdtempSync(path.join(os.tmpdir(), `orgw-agent-${o.client}-`));
  const work = path.join(home, 'work');
  const tmp = path.join(home, 'tmp');
  fs.mkdirSync(work, { recursive: true });
  fs.mkdirSync(tmp, { recursive: true });
  const env = {
    PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
    LANG: process.env.LANG || 'C.UTF-8',
    HOME: home,
    // Not /tmp itself: Codex refuses to put its helper links under the
    // system temp dir and says so on every run.
    TMPDIR: tmp,
    TERM: 'dumb',
    NO_COLOR: '1',
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    // Port 9 (discard) on loopback is closed: vendor calls fail at once.
    HTTPS_PROXY: 'http://127.0.0.1:9',
    HTTP_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: [...new Set([o.host, '127.0.0.1', 'localhost', '::1'])].join(','),
  };
  env.https_proxy = env.HTTPS_PROXY;
  env.http_proxy = env.HTTP_PROXY;
  env.no_proxy = env.NO_PROXY;
  let args;

  if (o.client === 'claude' || o.client === 'claude-token') {
    Object.assign(env, {
      ANTHROPIC_BASE_URL: o.root,
      ANTHROPIC_MODEL: o.model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: o.model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: o.model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: o.model,
      ANTHROPIC_SMALL_FAST_MODEL: o.model, // still read by 2.1.332
      CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
      // Telemetry, error reports, the auto-updater, feature flags: without
      // this it calls its vendor three times a run.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
      CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
      API_TIMEOUT_MS: String(o.timeout),
    });
    if (o.client === 'claude') env.ANTHROPIC_API_KEY = o.key;
    else env.ANTHROPIC_AUTH_TOKEN = o.key;
    if (o.retries !== undefined) env.CLAUDE_CODE_MAX_RETRIES = String(o.retries);
    args = ['-p', o.prompt, '--output-format', 'json'];
    if (o.cont) args.push('--continue');
  } else if (o.client === 'codex') {
    const ch = path.join(home, '.codex');
    fs.mkdirSync(ch, { recursive: true });
    env.CODEX_HOME = ch;
    env.ORGW_API_KEY = o.key;
    const retries = o.retries === undefined ? '' :
      `request_max_retries = ${o.retries}\nstream_max_retries = ${o.retries}\n`;
    fs.writeFileSync(path.join(ch, 'config.toml'),
      `model = ${tomlString(o.model)}\n` +
      'model_provider = "orgw"\n' +
      'approval_policy = "never"\n' +
      'sandbox_mode = "read-only"\n' +
      'check_for_update_on_startup = false\n' +
      '\n' +
      '# Without these two it calls chatgpt.com, ab.chatgpt.com, github.com and\n' +
      '# api.github.com on every run (analytics, the plugin marketplace).\n' +
      '[analytics]\nenabled = false\n\n' +
      '[features]\nplugins = false\n\n' +
      '[model_providers.orgw]\n' +
      'name = "orgw"\n' +
      `base_url = ${tomlString(o.root + '/v1')}\n` +
      'env_key = "ORGW_API_KEY"\n' +
      'wire_api = "responses"\n' +
      retries);
    // --ephemeral saves no session: only for a throw-away home.
    args = ['exec', '--skip-git-repo-check', ...(o.home ? [] : ['--ephemeral']), '--json', '--color', 'never', '-C', work];
    args.push(...(o.cont ? ['resume', '--last', o.prompt] : [o.prompt]));
  } else {
    const cfgDir = path.join(env.XDG_CONFIG_HOME, 'opencode');
    fs.mkdirSync(path.join(cfgDir, 'node_modules'), { recursive: true });
    // opencode installs @opencode-ai/plugin into each config dir in the
    // background (npm registry) unless the dir has a node_modules and a
    // package-lock.json whose root lists it.  Nothing here needs the plugin.
    fs.writeFileSync(path.join(cfgDir, 'package-lock.json'), JSON.stringify({
      name: 'opencode-config', lockfileVersion: 3,
      packages: { '': { dependencies: { '@opencode-ai/plugin': OPENCODE_PLUGIN_VERSION } } },
    }) + '\n');
    const conf = path.join(home, 'opencode.json');
    fs.writeFileSync(conf, JSON.stringify({
      $schema: 'https://opencode.ai/config.json',
      provider: {
        orgw: {
          npm: '@ai-sdk/openai-compatible',
          name: 'orgw',
          options: { baseURL: o.root + '/v1', apiKey: '{env:ORGW_API_KEY}' },
          models: { [o.model]: { name: o.model } },
        },
      },
      model: `orgw/${o.model}`,
      small_model: `orgw/${o.model}`,
      autoupdate: false,
      share: 'disabled',
    }, null, 2) + '\n');
    Object.assign(env, {
      OPENCODE_CONFIG: conf,
      ORGW_API_KEY: o.key,
      // models.dev's list (models.opencode.ai) and the update check.
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_SHARE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    });
    args = ['run', '--format', 'json'];
    if (o.cont) args.push('--continue');
    if (o.title !== undefined) args.push('--title', o.title);
    args.push(o.prompt);
  }
  return { home, work, env, args };
}

function parseJsonLines(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try { out.push(JSON.parse(t)); } catch { /* not an event */ }
  }
  return out;
}

function interpret(client, stdout) {
  const r = { answer: null, error: null, usage: null, reported_ok: false };
  if (client === 'claude' || client === 'claude-token') {
    const evs = parseJsonLines(stdout);
    const res = evs.reverse().find((e) => e.type === 'result');
    if (res) {
      r.usage = res.usage ?? null;
      if (res.is_error) {
        r.error = typeof res.result === 'string' ? res.result : (res.subtype ?? 'error');
        r.api_error_status = res.api_error_status ?? null;
      } else {
        r.answer = res.result ?? null;
        r.reported_ok = true;
      }
    }
  } else if (client === 'codex') {
    const evs = parseJsonLines(stdout);
    for (const e of evs) {
      if (e.type === 'item.completed' && e.item?.type === 'agent_message') r.answer = e.item.text;
      if (e.type === 'turn.completed') { r.usage = e.usage ?? null; r.reported_ok = true; }
      if (e.type === 'turn.failed') { r.error = e.error?.message ?? 'turn failed'; r.reported_ok = false; }
      if (e.type === 'error' && !r.error) r.error = e.message ?? 'error';
    }
    if (r.reported_ok) r.error = null;
  } else {
    const evs = parseJsonLines(stdout);
    let text = '';
    for (const e of evs) {
      if (e.type === 'text' && typeof e.part?.text === 'string') text += e.part.text;
      if (e.type === 'step_finish') r.usage = e.part?.tokens ?? r.usage;
      if (e.type === 'error') r.error = e.error?.data?.message ?? e.error?.message ?? e.error?.name ?? 'error';
    }
    if (text) r.answer = text;
    r.reported_ok = !r.error && evs.some((e) => e.type === 'step_finish');
  }
  return r;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const bin = binary(o.client === 'claude-token' ? 'claude' : o.client);
  const { home, work, env, args } = setup(o);
  const t0 = performance.now();
  const child = spawn(bin[0], [...bin.slice(1), ...args], {
    cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; if (stderr.length > 1 << 20) stderr = stderr.slice(-TAIL * 4); });
  let timedOut = false;
  const killGroup = (sig) => { try { process.kill(-child.pid, sig); } catch { /* gone */ } };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), 2000).unref();
  }, o.timeout);
  const [code, signal] = await new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c, s) => resolve([c, s]));
  });
  clearTimeout(timer);
  // Whatever the client left behind in its group (Codex's helpers).
  killGroup('SIGKILL');
  const t = Math.round(performance.now() - t0);
  const it = interpret(o.client, stdout);
  const r = {
    ok: code === 0 && !timedOut && it.reported_ok,
    client: o.client,
    exit_code: code,
    signal: signal ?? null,
    timed_out: timedOut,
    answer: it.answer,
    error: it.error ?? (timedOut ? `timed out after ${o.timeout} ms` : null),
    usage: it.usage,
    stdout_tail: stdout.slice(-TAIL),
    stderr_tail: stderr.slice(-TAIL),
    t_total_ms: t,
    home: o.keep ? home : null,
  };
  if (it.api_error_status !== undefined) r.api_error_status = it.api_error_status;
  if (!o.keep) fs.rmSync(home, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e) => bug(`helper bug: ${e?.stack ?? e}`));
