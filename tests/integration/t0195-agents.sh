#!/bin/bash
# t0195-agents: the real coding agents and the official SDKs through
# lighttpd and orgw, configured as the README tells users (OpenRouter slugs
# as model ids, the gateway as base URL, the client key as the API key):
#   claude -p        (Claude Code 2.1.332, ANTHROPIC_API_KEY: x-api-key)
#   claude -p        (ANTHROPIC_AUTH_TOKEN: Bearer), on an endpoint whose
#                    output limit makes orgw clamp Claude Code's 32000 /
#                    31999 thinking budget
#   codex exec       (Codex CLI 0.171.0, a custom provider, wire_api responses)
#   opencode run     (opencode 1.18.33, @ai-sdk/openai-compatible: chat)
#   the Anthropic SDK's messages.create and messages.stream, both key styles
#   the openai SDK's responses.create, streamed and not
# For each: the answer the client reports is the double's ("Hello from
# <tag>"), every request the double got (side requests such as opencode's
# title included) went to the slug and carried the pin of the provider that
# served it, with the upstream key as Bearer and no client key, and /stats
# counts per API exactly the generation requests the double was asked.  A
# wrong key makes each agent fail (orgw's 401) and reaches nobody upstream.
# tests/agents/README.md says what each client sends and how it retries.
. "$(dirname "$0")/../lib.sh"

AG=$ORGW_ROOT/tests/agents
JS=$ORGW_ROOT/tests/js
agents_required

orgw_start
# Whole bodies in the double's log (Claude Code's are over 80 KB).
double_ctl POST config '{"log_body_max_bytes":1048576}' >/dev/null

CLAUDE_M=anthropic/claude-sonnet-4.5
CLAUDE_TOKEN_M=anthropic/claude-haiku-4.5
CODEX_M=openai/gpt-5.1-codex
OPENCODE_M=qwen/qwen3-coder
MSG_M=anthropic/claude-opus-4.5
RESP_M=openai/gpt-5.1

since() { json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0]?.seq ?? 0'; }
stat() { json_get "$(orgw_curl /stats)" "j.models['$1']?.$2"; }

# agent LABEL CLIENT MODEL [agent.mjs ARGS...]: one headless run; sets OUT
# (its JSON line) and S0 (the double's last log entry before it).
agent() {
	local label=$1 client=$2 model=$3
	shift 3
	S0=$(since)
	OUT=$(node "$AG/agent.mjs" --client "$client" --base "$ORGW_URL" --key "$ORGW_KEY" \
		--model "$model" --timeout 90000 "$@")
	printf '# %s: %s\n' "$label" "$(json_get "$OUT" \
		'`exit ${j.exit_code}, ${j.t_total_ms} ms, answer ${JSON.stringify(j.answer)}, error ${JSON.stringify(j.error)}`')"
	json_ok "$OUT" 'j.ok' || json_get "$OUT" 'j.stdout_tail + "\n" + j.stderr_tail' | sed 's/^/#   /' | tail -n 20
}

# upstream LABEL API MODEL: what the double got since $S0.  Sets UP (a file:
# the log entries of every API, whole bodies, too big for an argument), UP_N
# (how many) and UP_TAG (the tag that served the first).
upstream() {
	local label=$1 api=$2 model=$3 path=/api/v1/$2
	[ "$api" = chat ] && path=/api/v1/chat/completions
	double_ctl GET "log?since=$S0" >"$ORGW_T/log.json"
	UP=$ORGW_T/up.json
	json_get "$ORGW_T/log.json" "JSON.stringify(j.requests.filter((r) => r.api !== null))" >"$UP"
	UP_N=$(json_get "$UP" 'j.length')
	UP_TAG=$(json_get "$UP" 'j[0]?.tag ?? "none"')
	t_check "$label: reached upstream ($UP_N requests)" test "$UP_N" -ge 1
	t_eq "$label: every one a $api generation request to $model, answered 200" "$UP_N" \
		"$(json_get "$UP" "j.filter((r) => r.api === '$api' && r.path === '$path' && r.model === '$model' && r.status === 200).length")"
	t_eq "$label: every one pinned to the provider that served it, the lock ($UP_TAG)" \
		"$UP_N $UP_TAG" \
		"$(json_get "$UP" "j.filter((r) => JSON.stringify(r.body?.provider) === JSON.stringify({ order: [r.tag], allow_fallbacks: false }) && r.tag === '$UP_TAG').length") $(stat "$model" lock.tag)"
	t_eq "$label: upstream got Bearer \$UPSTREAM_KEY, no x-api-key, never the client key" "$UP_N" \
		"$(json_get "$UP" "j.filter((r) => r.auth === 'Bearer $UPSTREAM_KEY' && !('x-api-key' in r.headers) && !JSON.stringify(r.headers).includes('$ORGW_KEY')).length")"
}

# --- Claude Code, ANTHROPIC_API_KEY (x-api-key) ------------------------------
agent "claude -p, ANTHROPIC_API_KEY" claude "$CLAUDE_M"
upstream "claude -p (x-api-key)" messages "$CLAUDE_M"
t_eq "claude -p (x-api-key): exits 0 with the double's answer" "true Hello from $UP_TAG" \
	"$(json_get "$OUT" 'j.ok + " " + j.answer')"
t_eq "  upstream got ?beta=true and Claude Code's anthropic-version and anthropic-beta" \
	"beta=true 2023-06-01 true" \
	"$(json_get "$UP" 'j[0].query + " " + j[0].headers["anthropic-version"] + " " + j[0].headers["anthropic-beta"].split(",").includes("claude-code-20250219")')"
t_eq "  its body as sent: streamed, 32000 / 31999 thinking, system and message breakpoints, tools" \
	"true 32000 31999 true true" \
	"$(json_get "$UP" '((b) => [b.stream, b.max_tokens, b.thinking.budget_tokens,
		b.system.some((s) => s.cache_control) && b.messages.at(-1).content.at(-1).cache_control?.type === "ephemeral",
		b.tools.length > 0].join(" "))(j[0].body)')"
t_eq "  usage reached the client (a cache write of its system prompt)" true \
	"$(json_get "$OUT" 'j.usage?.cache_creation_input_tokens > 1000')"

# --- Claude Code, ANTHROPIC_AUTH_TOKEN (Bearer), a clamped endpoint ---------
ep='{"tag":"%s","provider_name":"%s","max_completion_tokens":16384,"pricing":{"prompt":"0.000001","completion":"0.000005","input_cache_read":"0.0000001","input_cache_write":"0.00000125"},"uptime_last_30m":100,"status":0,"throughput_last_30m":{"p50":%d}}'
double_ctl PUT "endpoints/$CLAUDE_TOKEN_M" \
	"[$(printf "$ep" anthropic Anthropic 90),$(printf "$ep" google-vertex 'Google Vertex' 40)]" >/dev/null
agent "claude -p, ANTHROPIC_AUTH_TOKEN" claude-token "$CLAUDE_TOKEN_M"
upstream "claude -p (Bearer)" messages "$CLAUDE_TOKEN_M"
t_eq "claude -p (Bearer): exits 0 with the double's answer" "true Hello from anthropic" \
	"$(json_get "$OUT" 'j.ok + " " + j.answer')"
t_eq "  32000 / 31999 on an endpoint of 16384: upstream got 16384 / 16383" "16384 16383" \
	"$(json_get "$UP" 'j[0].body.max_tokens + " " + j[0].body.thinking.budget_tokens')"

# --- Codex CLI: Responses ----------------------------------------------------
agent "codex exec" codex "$CODEX_M"
upstream "codex exec" responses "$CODEX_M"
t_eq "codex exec: exits 0 with the double's answer" "true Hello from $UP_TAG" \
	"$(json_get "$OUT" 'j.ok + " " + j.answer')"
t_eq "  its body as sent: streamed, store false, include and prompt_cache_key, tools" \
	"true false reasoning.encrypted_content true true" \
	"$(json_get "$UP" '((b) => [b.stream, b.store, b.include.join(","), typeof b.prompt_cache_key === "string" && b.prompt_cache_key.length > 0, b.tools.length > 0].join(" "))(j[0].body)')"
t_eq "  orgw asked for openrouter_metadata (X-OpenRouter-Metadata: enabled)" enabled \
	"$(json_get "$UP" 'j[0].headers["x-openrouter-metadata"]')"
t_eq "  usage reached the client" true "$(json_get "$OUT" 'j.usage?.input_tokens > 0 && j.usage?.output_tokens > 0')"

# --- opencode: chat completions (its title request included) -----------------
agent "opencode run" opencode "$OPENCODE_M"
upstream "opencode run" chat "$OPENCODE_M"
t_eq "opencode run: exits 0 with the double's answer" "true Hello from $UP_TAG" \
	"$(json_get "$OUT" 'j.ok + " " + j.answer')"
t_eq "  every request streamed with usage asked for" "$UP_N" \
	"$(json_get "$UP" 'j.filter((r) => r.body.stream === true && r.body.stream_options?.include_usage === true).length')"

# --- A stream that fails after content: the agent sends it again ------------
# The double's mid-stream error after two words; orgw tells it in the API's
# own form (event: error, response.failed, an error chunk), the agent
# re-sends the whole request, and the retry lands on the same lock.
for row in "claude anthropic/claude-sonnet-4 messages" "codex openai/gpt-5-codex responses" \
	"opencode qwen/qwen3-coder-plus chat"; do
	read -r c m api <<<"$row"
	double_ctl POST faults "{\"faults\":[{\"kind\":\"midstream_error\",\"chunks\":2,\"match\":{\"model\":\"$m\"}}]}" >/dev/null
	agent "$c, a stream that fails after 2 words" "$c" "$m" --title no-title-request
	double_ctl GET "log?since=$S0" >"$ORGW_T/log.json"
	lock=$(stat "$m" lock.tag)
	# opencode re-sends only when the error chunk's code is a number,
	# as OpenRouter sends it (tests/agents/README.md): orgw's is.
	t_eq "$c: a mid-stream failure: answered by its own retry" "true Hello from $lock" \
		"$(json_get "$OUT" 'j.ok + " " + j.answer')"
	t_eq "  2 requests upstream, the failed one and the retry, both pinned to the lock" \
		"2 midstream_error,none $lock,$lock" \
		"$(json_get "$ORGW_T/log.json" "((r) => r.length + ' ' + r.map((x) => x.fault ?? 'none').join(',') + ' ' + r.map((x) => JSON.stringify(x.body.provider) === JSON.stringify({ order: [x.tag], allow_fallbacks: false }) ? x.tag : 'unpinned').join(','))(j.requests.filter((x) => x.api === '$api'))")"
	t_eq "  /stats: 2 requests, 1 ok, 1 mid-stream failure, the lock kept" "2 1 1 $lock" \
		"$(json_get "$(orgw_curl /stats)" "((m) => [m.by_api.$api.requests, m.by_api.$api.ok, m.errors.mid_stream, m.lock.tag].join(' '))(j.models['$m'])")"
done

# --- A wrong key: each agent fails, nobody upstream is asked ------------------
S0=$(since)
for c in claude claude-token codex opencode; do
	out=$(node "$AG/agent.mjs" --client "$c" --base "$ORGW_URL" --key wrong-key \
		--model "$CLAUDE_M" --retries 0 --timeout 60000)
	t_eq "a wrong key: $c exits non-zero, not timed out, with no answer" "false false null" \
		"$(json_get "$out" '(j.exit_code === 0) + " " + j.timed_out + " " + j.answer')"
done
t_eq "  and no request reached the double" 0 \
	"$(json_get "$(double_ctl GET "log?since=$S0")" 'j.requests.length')"
t_eq "  orgw answered each API's 401 (claude twice, codex, opencode twice: its title too)" \
	"2 1 2" \
	"$(for p in /messages /responses /chat/completions; do grep -c "path=$p status=401" "$ORGW_LOG"; done | tr '\n' ' ' | sed 's/ $//')"

# --- The Anthropic SDK: messages.create and messages.stream -------------------
anth() { node "$JS/anthropic.mjs" --base "$ORGW_URL" --model "$MSG_M" "$@"; }
S0=$(since)
res() { json_get "$1" '[j.ok, j.status, j.text, j.headers["x-orgw-provider"], j.error?.message ?? ""].join(" ").trim()'; }
o1=$(anth --key "$ORGW_KEY" --auth x-api-key)
o2=$(anth --key "$ORGW_KEY" --auth bearer --stream)
o3=$(anth --key "$ORGW_KEY" --auth x-api-key --other-key wrong-key --mode stream)
o4=$(anth --key "$ORGW_KEY" --auth bearer --other-key wrong-key --mode stream --max-tokens 4096 --thinking 2048)
upstream "Anthropic SDK" messages "$MSG_M"
t_eq "Anthropic SDK: 4 calls, 4 upstream requests" 4 "$UP_N"
t_eq "  messages.create, x-api-key alone: the answer" "true 200 Hello from $UP_TAG $UP_TAG" "$(res "$o1")"
t_eq "  ... the SDK sent x-api-key and no Authorization" "$ORGW_KEY null" \
	"$(json_get "$o1" 'j.sent["x-api-key"] + " " + j.sent.authorization')"
t_eq "  messages.create streamed, Bearer alone: the answer, one message_start, message_stop" \
	"true 200 Hello from $UP_TAG $UP_TAG 1 true" \
	"$(res "$o2") $(json_get "$o2" 'j.events.filter((e) => e === "message_start").length + " " + (j.events.at(-1) === "message_stop")')"
t_eq "  messages.stream, the key as x-api-key and a wrong Bearer: accepted (x-api-key read)" \
	"true 200 Hello from $UP_TAG $UP_TAG Bearer wrong-key" \
	"$(res "$o3") $(json_get "$o3" 'j.sent.authorization')"
t_eq "  messages.stream, the key as Bearer and a wrong x-api-key: accepted (Bearer read)" \
	"true 200 Hello from $UP_TAG $UP_TAG wrong-key" \
	"$(res "$o4") $(json_get "$o4" 'j.sent["x-api-key"]')"
t_eq "  finalMessage's usage (the stream's, merged)" true \
	"$(json_get "$o4" 'j.usage.input_tokens > 0 && j.usage.output_tokens === 3 && j.stop_reason === "end_turn"')"
t_eq "  thinking as sent when it fits (4096 / 2048)" "4096 2048" \
	"$(json_get "$UP" 'j[3].body.max_tokens + " " + j[3].body.thinking.budget_tokens')"
t_eq "  a wrong x-api-key: 401 authentication_error" "401 authentication_error" \
	"$(json_get "$(anth --key wrong-key --auth x-api-key)" 'j.status + " " + j.error?.type')"
t_eq "  a wrong Bearer (messages.stream): 401 authentication_error" "401 authentication_error" \
	"$(json_get "$(anth --key wrong-key --auth bearer --mode stream)" 'j.status + " " + j.error?.type')"

# --- The openai SDK: responses.create, streamed and not ------------------------
resp() { node "$JS/responses.mjs" --base "$ORGW_URL/v1" --model "$RESP_M" --key "$ORGW_KEY" "$@"; }
S0=$(since)
r1=$(resp --instructions "Be brief.")
r2=$(resp --stream --input-json '[{"role":"user","content":"Say hello."}]' --extra '{"store":false}')
upstream "openai SDK responses" responses "$RESP_M"
t_eq "openai SDK responses: 2 calls, 2 upstream requests" 2 "$UP_N"
t_eq "  responses.create: completed, output_text, the provider header" \
	"true 200 completed Hello from $UP_TAG $UP_TAG" \
	"$(json_get "$r1" '[j.ok, j.status, j.response_status, j.output_text, j.headers["x-orgw-provider"]].join(" ")')"
t_eq "  ... usage" true "$(json_get "$r1" 'j.usage.input_tokens > 0 && j.usage.output_tokens === 3')"
t_eq "  streamed: the deltas, response.completed last, then [DONE]" \
	"true completed Hello from $UP_TAG Hello from $UP_TAG response.completed true" \
	"$(json_get "$r2" '[j.ok, j.response_status, j.text, j.output_text, j.events.at(-1), j.done].join(" ")')"
t_eq "  ... usage on the terminal event" true "$(json_get "$r2" 'j.usage.input_tokens > 0 && j.usage.output_tokens === 3')"
t_eq "  a wrong key: 401 invalid_api_key" "401 invalid_api_key" \
	"$(json_get "$(resp --key wrong-key)" 'j.status + " " + j.error?.code')"

# --- /stats: N sent, N counted, per API ---------------------------------------
st=$(orgw_curl /stats)
double_ctl GET log >"$ORGW_T/log.json"
for row in "messages $CLAUDE_M" "messages $CLAUDE_TOKEN_M" "responses $CODEX_M" \
	"chat $OPENCODE_M" "messages $MSG_M" "responses $RESP_M"; do
	read -r api m <<<"$row"
	path=/api/v1/$api
	[ "$api" = chat ] && path=/api/v1/chat/completions
	n=$(json_get "$ORGW_T/log.json" "j.requests.filter((r) => r.path === '$path' && r.model === '$m' && r.status === 200).length")
	t_eq "/stats $m: by_api.$api requests and ok = the $n the double answered, nothing else" \
		"$n $n $n $n" \
		"$(json_get "$st" "((m) => [m.by_api.$api?.requests, m.by_api.$api?.ok, m.requests, m.ok].join(' '))(j.models['$m'])")"
	t_eq "  $m: orgw logged as many $api requests" "$n" \
		"$(grep -c "api=$api model=$m .*status=200" "$ORGW_LOG")"
done
t_eq "/stats: the SDKs' 4 Messages and 2 Responses calls are 4 and 2" "4 2" \
	"$(json_get "$st" "j.models['$MSG_M'].by_api.messages.requests + ' ' + j.models['$RESP_M'].by_api.responses.requests")"
