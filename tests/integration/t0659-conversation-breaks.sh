#!/bin/bash
# t0659-conversation-breaks: where a conversation's cache broke, on each
# API, through lighttpd, the workers and the double (its implicit prompt
# cache on both endpoints).  Three conversations of eight turns on one
# model:
#   - Messages shaped as Claude Code sends it (two system blocks, tools,
#     its session in metadata.user_id, the marker on the newest message,
#     streamed);
#   - Responses shaped as Codex sends it (instructions, a developer and an
#     environment message, function calls and their outputs, session-id
#     and prompt_cache_key, streamed);
#   - chat without a session id (a derived key), with tools.
# Turn 3 rewrites part of the prompt: the second system block (Messages,
# prefix_changed at 1, unit system), the instructions (Responses, at 0,
# unit system), the first answer (chat: tools, system, user before it,
# at 3, unit assistant).  Before turn 5 the provider forgets its cache
# (provider_miss); before turn 6 it cools, so the conversations move to
# the other provider (moved); turn 8 comes past CACHE_TTL_SECONDS on the
# workers' test clock (expired).  Turns 1, 2, 4 and 7 read the cache and
# are never breaks.  Each turn's log line (conv=, break=cause@at) and the
# /stats rows (breaks: turn, cause, at, unit, expected and cached tokens)
# say so; /metrics counts each cause once per conversation.  Then the
# scorer's sweep with MAX_CONVERSATIONS=1 drops two of the three records
# that held the breaks: orgw_cache_breaks_total (a counter) and /stats'
# breaks by cause keep their counts, since the ledger holds them.
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

M=test/breaks
orgw_start
double_ctl PUT "endpoints/$M" '[
 {"tag":"alpha","provider_name":"Alpha","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000002","completion":"0.00001","input_cache_read":"0.0000002"},
  "supports_implicit_caching":true},
 {"tag":"beta","provider_name":"Beta","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000004","completion":"0.00002","input_cache_read":"0.0000004"},
  "supports_implicit_caching":true}]' >/dev/null
double_ctl POST config '{"prompt_cache":true}' >/dev/null

CC_SESSION=4b1c7e0a-93d2-4f61-a8e5-2c9d7b10e3f4
CX_SESSION=019a4f2e-7c1d-7b3e-9f00-5c7e2a1b9d44

# bodies.mjs DIR: DIR/API.N, the request body of each conversation's turn
# N (turn 3 on has the rewritten part).
cat >"$ORGW_T/bodies.mjs" <<'JS'
import { writeFileSync } from 'node:fs';
const [dir, model, ccs, cxs] = process.argv.slice(2);
const body = (api, turn) => {
  const long = (what, k) => Array.from({ length: k }, (_, i) => `${what} line ${i}.`).join(' ');
  if (api === 'messages') {
    const env = turn >= 3 ? 'Working directory /src/app, branch feature.' : 'Working directory /src/app, branch main.';
    const messages = [];
    for (let i = 1; i <= turn; i++) {
      messages.push({ role: 'user', content: [{ type: 'text', text: `Claude question ${i}: fix the parser.` }] });
      if (i < turn) messages.push({ role: 'assistant', content: [{ type: 'text', text: `Claude answer ${i}: ${long('patch', 6)}` }] });
    }
    // Claude Code's marker sits on the newest message only.
    messages.at(-1).content[0].cache_control = { type: 'ephemeral' };
    return { model, max_tokens: 64, stream: true,
      system: [{ type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
        { type: 'text', text: `${env} ${long('Claude Code guidance', 60)}`, cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object',
        properties: { command: { type: 'string' } }, required: ['command'] } }],
      metadata: { user_id: JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '', session_id: ccs }) },
      messages };
  } else if (api === 'responses') {
    const text = (role, t) => ({ type: 'message', role, content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text: t }] });
    const input = [text('developer', `Codex sandbox: workspace-write. ${long('Codex permission', 8)}`),
      text('user', '<environment_context><cwd>/src/tool</cwd><shell>bash</shell></environment_context>')];
    for (let i = 1; i <= turn; i++) {
      input.push(text('user', `Codex question ${i}: run the tests.`));
      if (i < turn) {
        input.push({ type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['make', 'test'] }), call_id: `call_${i}` });
        input.push({ type: 'function_call_output', call_id: `call_${i}`, output: `Codex output ${i}: ${long('test', 5)}` });
        input.push(text('assistant', `Codex answer ${i}: the tests pass.`));
      }
    }
    const instr = turn >= 3 ? `Rewritten: you are Codex in review mode. ${long('Codex review rule', 60)}`
      : `You are Codex, a coding agent. ${long('Codex rule', 60)}`;
    return { model, instructions: instr, input,
      tools: [{ type: 'function', name: 'shell', description: 'Runs a command', strict: false,
        parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'] } }],
      tool_choice: 'auto', parallel_tool_calls: false, reasoning: { effort: 'medium', summary: 'auto' },
      store: false, stream: true, include: ['reasoning.encrypted_content'], prompt_cache_key: cxs };
  } else {
    const messages = [{ role: 'system', content: 'Chat helper.' }];
    for (let i = 1; i <= turn; i++) {
      messages.push({ role: 'user', content: `Chat question ${i}?` });
      if (i < turn) {
        // the first answer is long; from turn 3 on the client sends it trimmed
        const a = i > 1 ? `Chat answer ${i}.` : turn >= 3 ? `Chat answer 1, trimmed. ${long('summary', 40)}`
          : `Chat answer 1 in full. ${long('detail', 80)}`;
        messages.push({ role: 'assistant', content: a });
      }
    }
    return { model, messages, tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks up a word',
      parameters: { type: 'object', properties: { word: { type: 'string' } } } } }] };
  }
};
for (const api of ['messages', 'responses', 'chat'])
  for (let n = 1; n <= 8; n++) writeFileSync(`${dir}/${api}.${n}`, JSON.stringify(body(api, n)));
JS
node "$ORGW_T/bodies.mjs" "$ORGW_T" "$M" "$CC_SESSION" "$CX_SESSION"
ids=() # the conversations' shown ids, in API order
APIS="messages responses chat"
# send API TURN: one turn; waits (5 s at most) for its log line, so the
# turns of a conversation are logged in order.
declare -A SENT=([messages]=0 [responses]=0 [chat]=0)
send() {
	local api=$1 n=$2
	case $api in
	messages) orgw_http POST /v1/messages "@$ORGW_T/$api.$n" -H 'anthropic-version: 2023-06-01' ;;
	responses) orgw_http POST /v1/responses "@$ORGW_T/$api.$n" -H "session-id: $CX_SESSION" ;;
	chat) orgw_http POST /v1/chat/completions "@$ORGW_T/$api.$n" ;;
	esac
	[ "$HTTP_STATUS" = 200 ] || t_fail "$api turn $n: status $HTTP_STATUS" "$HTTP_BODY"
	SENT[$api]=$((SENT[$api] + 1))
	for _ in $(seq 1 50); do
		[ "$(grep -c " api=$api model=$M .* conv=" "$ORGW_LOG")" -ge "${SENT[$api]}" ] && break
		sleep 0.1
	done
}
turn_all() { local a; for a in $APIS; do send "$a" "$1"; done; }
score() { env -i PATH="$PATH" "$ORGW_SCORE_BIN" --config "$ORGW_CONFIG_FILE" "$@" >/dev/null 2>&1; }

turn_all 1
turn_all 2
turn_all 3
turn_all 4
# the double's cache forgets what it has not used for 300 ms
double_ctl POST config '{"prompt_cache_ttl_ms":300}' >/dev/null
sleep 0.5
turn_all 5
double_ctl POST config '{"prompt_cache_ttl_ms":0}' >/dev/null
score cool "$M" alpha 600 test
turn_all 6
turn_all 7
# the workers' clock 400 s on, past CACHE_TTL_SECONDS (300); the double's
# cache forgets too
double_ctl POST config '{"prompt_cache_ttl_ms":300}' >/dev/null
sleep 0.5
ORGW_WORKER_ENV="ORGW_TEST_NOW=$(($(date +%s) + 400))" orgw_restart_workers
turn_all 8
double_ctl POST config '{"prompt_cache_ttl_ms":0}' >/dev/null

# --- the log lines --------------------------------------------------------------
# fields API: "conv provider break prompt cached" for each of its turns, in
# order (break "-": none)
fields() {
	grep " api=$1 model=$M .* conv=" "$ORGW_LOG" | awk '{
		delete f
		for (i = 1; i <= NF; i++) if ((k = index($i, "=")) > 0) f[substr($i, 1, k - 1)] = substr($i, k + 1)
		print f["conv"], f["provider"], ("break" in f ? f["break"] : "-"), f["prompt"], f["cached"]
	}'
}
declare -A AT=([messages]=1 [responses]=0 [chat]=3)
declare -A UNIT=([messages]=system [responses]=system [chat]=assistant)
declare -A SHOW=([messages]=${CC_SESSION:0:12} [responses]=${CX_SESSION:0:12})
for api in $APIS; do
	L=$ORGW_T/lines.$api
	fields "$api" >"$L"
	t_eq "$api: 8 turns logged, each with its conversation" "8 1" \
		"$(grep -c '' "$L") $(cut -d' ' -f1 "$L" | sort -u | wc -l)"
	id=$(head -n 1 "$L" | cut -d' ' -f1)
	if [ -n "${SHOW[$api]:-}" ]; then
		t_eq "$api: conv= is the session id's first 12 characters" "${SHOW[$api]}" "$id"
	else
		t_match "$api: conv= is a derived key" '^h:[0-9a-f]{10}$' "$id"
	fi
	ids+=("$id")
	t_eq "$api: turns 1-5 on alpha, 6-8 on beta once alpha cooled" \
		"alpha alpha alpha alpha alpha beta beta beta" "$(cut -d' ' -f2 "$L" | paste -sd' ')"
	t_eq "$api: break= on turns 3, 5, 6 and 8 only" \
		"- - prefix_changed@${AT[$api]} - provider_miss moved - expired" \
		"$(cut -d' ' -f3 "$L" | paste -sd' ')"
	# what the double read against what the previous prompt could give
	t_eq "$api: turns 2, 4 and 7 (and no other) read at least half of it from the cache" "2 4 7" \
		"$(awk 'NR > 1 && 2 * $5 >= (p < $4 ? p : $4) { print NR } { p = $4 }' "$L" | paste -sd' ')"
done

# --- /stats ---------------------------------------------------------------------
S=$ORGW_T/stats.json
orgw_curl /stats >"$S"
i=0
for api in $APIS; do
	id=${ids[$i]}
	i=$((i + 1))
	t_eq "/stats $api: its row: api, provider, 8 turns, 4 breaks" "$api beta 8 4" \
		"$(json_get "$S" "(c => c ? [c.api, c.provider, c.turns, c.breaks_total].join(' ') : 'none')(j.conversations.find(c => c.id === '$id'))")"
	t_eq "/stats $api: breaks (turn cause at unit)" \
		"3 prefix_changed ${AT[$api]} ${UNIT[$api]}|5 provider_miss null null|6 moved null null|8 expired null null" \
		"$(json_get "$S" "j.conversations.find(c => c.id === '$id').breaks.map(b =>
			[b.turn, b.cause, b.at, b.unit].map(String).join(' ')).join('|')")"
	# expected_tokens: the previous turn's prompt=; cached_tokens: this
	# turn's cached= (the log lines of turns 2, 4, 5 and 7; 3, 5, 6, 8)
	want=$(awk '{ p[NR] = $4; c[NR] = $5 } END { for (t = 3; t <= 8; t++) if (t != 4 && t != 7)
			printf "%s%d/%d", (t > 3 ? "|" : ""), p[t - 1], c[t] }' "$ORGW_T/lines.$api")
	t_eq "/stats $api: each break's expected_tokens and cached_tokens, as logged" "$want" \
		"$(json_get "$S" "j.conversations.find(c => c.id === '$id').breaks.map(b =>
			b.expected_tokens + '/' + b.cached_tokens).join('|')")"
done
t_eq "/stats: the model's breaks by cause" "3 3 3 3" \
	"$(json_get "$S" "(b => [b.prefix_changed, b.provider_miss, b.moved, b.expired].join(' '))(j.models['$M'].conversations.breaks)")"

# --- /metrics --------------------------------------------------------------------
orgw_curl /metrics >"$ORGW_T/metrics.txt"
# breaks FILE: the model's orgw_cache_breaks_total samples, "cause n|..."
breaks() {
	sed -n "s#^orgw_cache_breaks_total{model=\"$M\",cause=\"\([a-z_]*\)\"} \([0-9]*\)\$#\1 \2#p" \
		"$1" | sort | paste -sd'|'
}
t_eq "/metrics: orgw_cache_breaks_total, each cause once per conversation" \
	"expired 3|moved 3|prefix_changed 3|provider_miss 3" "$(breaks "$ORGW_T/metrics.txt")"

# --- the sweep drops the records; the counter stays ------------------------------
score() {
	local bin=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" "$@"
}
nconv() { score --dump 2>/dev/null | grep -c '"key":"CONV:'; }
t_eq "three conversation records before the sweep" 3 "$(nconv)"
orgw_restart_workers MAX_CONVERSATIONS=1
score >"$ORGW_T/run.out" 2>&1
t_eq "the scorer's run" 0 $?
t_eq "its sweep (MAX_CONVERSATIONS=1) left one record" 1 "$(nconv)"
orgw_curl /metrics >"$ORGW_T/metrics.after"
t_eq "/metrics after the sweep: orgw_cache_breaks_total did not go down" \
	"$(breaks "$ORGW_T/metrics.txt")" "$(breaks "$ORGW_T/metrics.after")"
orgw_curl /stats >"$ORGW_T/stats.after"
t_eq "/stats after the sweep: one row with its 4 breaks, the model's breaks by cause as before" \
	"1 4 3 3 3 3" \
	"$(json_get "$ORGW_T/stats.after" "(b => [j.conversations.length, j.conversations[0].breaks.length,
	b.prefix_changed, b.provider_miss, b.moved, b.expired].join(' '))(j.models['$M'].conversations.breaks)")"
