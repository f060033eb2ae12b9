#!/bin/bash
# t0196-agent-sessions: long agent sessions keep one provider and its cache
# on every API.
#
# A Claude Code-shaped session of 20 turns on one model through
# /v1/messages (tests/js/claude-session.mjs, the Anthropic SDK: a system
# prompt of 100 KB in three blocks with cache_control, 20 tools the last of
# which has cache_control, the last message block marked and moved forward
# each turn, tool calls and their results, 32000 / 31999 thinking, streamed
# but for every fifth turn): every turn on the lock, no failover, no
# retry, and the cached and cache-write tokens exactly one warm provider's
# (the double's prompt_cache; the ideal computed from the prompts sent),
# in /stats by_api.messages too, and orgw sees one conversation whose 20
# turns are none a cache break (no break= in its log, breaks_total 0 in
# /stats).  The same session sent straight to the double, unpinned, reads
# less: the equality is no accident.
#
# Then the real agents, three turns each in one saved session (claude -p
# --continue, codex exec resume --last, opencode run --continue): each
# turn resends the conversation, every request goes to the lock, and the
# cached tokens /stats counts are one warm provider's, computed from the
# bodies the double received (tests/js/prompt-cache.mjs); Claude Code's and
# Codex's three turns are one conversation with no cache break.
. "$(dirname "$0")/../lib.sh"

AG=$ORGW_ROOT/tests/agents
JS=$ORGW_ROOT/tests/js
agents_required

orgw_start
# Words 5 ms apart (a stream, not one write); bodies whole in the log.
double_ctl POST config '{"prompt_cache":true,"chunks":12,"spacing_ms":5,"log_body_max_bytes":4194304}' >/dev/null
SESSION_M=anthropic/claude-opus-4.5
RAW_M=anthropic/claude-opus-4.1
# Anthropic's models as OpenRouter lists them: three providers, each taking
# Claude Code's max_tokens of 32000 (so the double's round robin, OpenRouter's
# default routing, really spreads an unpinned session over three caches).
ep='{"tag":"%s","provider_name":"%s","max_completion_tokens":64000,"pricing":{"prompt":"0.000005","completion":"0.000025","input_cache_read":"0.0000005","input_cache_write":"0.00000625"},"uptime_last_30m":100,"status":0,"throughput_last_30m":{"p50":%d}}'
for m in "$SESSION_M" "$RAW_M"; do
	double_ctl PUT "endpoints/$m" "[$(printf "$ep" anthropic Anthropic 60),$(printf "$ep" google-vertex 'Google Vertex' 50),$(printf "$ep" amazon-bedrock 'Amazon Bedrock' 40)]" >/dev/null
done

stat() { json_get "$(orgw_curl /stats)" "j.models['$1']?.$2"; }
pct() { json_get "$1" "Math.round(1000 * $2 / j.prompt_total) / 10"; }

# --- A Claude Code-shaped session through /v1/messages -----------------------
S="$ORGW_T/session.json"
node "$JS/claude-session.mjs" --base "$ORGW_URL" --key "$ORGW_KEY" --auth x-api-key \
	--model "$SESSION_M" --turns 20 --system-bytes 100000 --nonstream-every 5 >"$S"
json_get "$S" 'j.turns.map((t, i) => `turn ${i + 1}: ${t.stream ? "stream" : "json  "} ${t.status} ${t.provider} ${t.route} attempts=${t.attempts} ${t.stop_reason}${t.tool ? " " + t.tool : ""} ${t.t_total_ms} ms ${j.request_bytes[i]} B prompt=${t.prompt} cached=${t.cached}/${t.ideal_cached} written=${t.written}/${t.ideal_written}${t.error ? " " + t.error.message : ""}`).join("\n") + "\n"' |
	sed 's/^/# /'
LOCK=$(stat "$SESSION_M" lock.tag)
t_eq "20 turns answered, 10 of them tool calls" "20 10" \
	"$(json_get "$S" 'j.turns.filter((t) => t.ok).length + " " + j.turns.filter((t) => t.stop_reason === "tool_use").length')"
t_check "the requests are Claude Code's size: over 100 KB, growing" json_ok "$S" \
	'j.request_bytes[0] > 100000 && j.request_bytes.every((b, i) => i === 0 || b > j.request_bytes[i - 1])'
t_eq "every turn on the lock ($LOCK) in one attempt: scored once, then locked" "20 1 19" \
	"$(json_get "$S" "j.turns.filter((t) => t.provider === '$LOCK' && t.attempts === 1).length + ' ' + j.turns.filter((t) => t.route === 'scored').length + ' ' + j.turns.filter((t) => t.route === 'locked').length")"
double_ctl GET 'log?path=/messages' >"$ORGW_T/log.json"
t_eq "the double got 20 requests, all pinned to $LOCK, all served there" "20 20" \
	"$(json_get "$ORGW_T/log.json" "((r) => r.length + ' ' + r.filter((x) => x.tag === '$LOCK' && x.status === 200 && JSON.stringify(x.body.provider) === JSON.stringify({ order: ['$LOCK'], allow_fallbacks: false })).length)(j.requests.filter((x) => x.model === '$SESSION_M'))")"
t_eq "  on /api/v1/messages?beta=true with the thinking budget as sent" "20" \
	"$(json_get "$ORGW_T/log.json" "j.requests.filter((x) => x.model === '$SESSION_M' && x.query === 'beta=true' && x.body.max_tokens === 32000 && x.body.thinking.budget_tokens === 31999).length")"
st=$(orgw_curl /stats)
t_eq "no failover, no breaker trip, no error; the lock never moved" "0 0 0 0 $LOCK 0" \
	"$(json_get "$st" "((m) => [m.failovers, m.breaker_trips, m.errors['5xx'], m.errors.mid_stream, m.lock.tag, (m.lock_changes ?? [{}]).filter((c) => c.from !== '').length].join(' '))(j.models['$SESSION_M'])")"
orgw__log "cached share of prompt tokens over 20 turns: $(pct "$S" j.cached_total) % (one warm provider: $(pct "$S" j.ideal_cached_total) %)"
t_check "the ideal is not zero" json_ok "$S" 'j.ideal_cached_total > 0 && j.ideal_written_total > 0'
t_eq "cached tokens are exactly one warm provider's" \
	"$(json_get "$S" 'j.ideal_cached_total')" "$(json_get "$S" 'j.cached_total')"
t_eq "cache writes too (the system prompt once, then each new turn)" \
	"$(json_get "$S" 'j.ideal_written_total')" "$(json_get "$S" 'j.written_total')"
t_eq "the ideal from the bodies the double got is the same" \
	"$(json_get "$S" 'j.prompt_total + " " + j.ideal_cached_total + " " + j.ideal_written_total')" \
	"$(json_get "$(node "$JS/prompt-cache.mjs" "$ORGW_T/log.json" "$SESSION_M")" 'j.prompt_total + " " + j.cached_total + " " + j.written_total')"
t_eq "/stats by_api.messages: 20 requests, 20 ok, the client's prompt, cached, cache-write, completion" \
	"20 20 $(json_get "$S" '[j.prompt_total, j.cached_total, j.written_total, j.output_total].join(" ")')" \
	"$(json_get "$st" "((a) => [a.requests, a.ok, a.tokens.prompt, a.tokens.cached, a.tokens.cache_write, a.tokens.completion].join(' '))(j.models['$SESSION_M'].by_api.messages)")"

L=$(grep "req: .* api=messages model=$SESSION_M " "$ORGW_LOG")
C=$(sed -n 's/.* conv=\([^ ]*\).*/\1/p' <<<"$L" | sort -u)
t_eq "the log: 20 turns of one conversation ($C), none a cache break" "20 1 0" \
	"$(wc -l <<<"$L") $(wc -l <<<"$C") $(grep -c ' break=' <<<"$L")"
t_eq "/stats conversations: its 20 turns, breaks_total 0, no break kept" "20 0 0" \
	"$(json_get "$st" "((c) => [c.turns, c.breaks_total, c.breaks.length].join(' '))(j.conversations.find((x) => x.id === '$C'))")"

# The same session straight to the double, with OpenRouter's default routing
# (no provider: round robin over the model's endpoints).
R="$ORGW_T/raw.json"
node "$JS/claude-session.mjs" --base "$DOUBLE_URL/api" --key "$UPSTREAM_KEY" --auth bearer \
	--model "$RAW_M" --turns 20 --system-bytes 100000 --nonstream-every 5 >"$R"
orgw__log "the same session unpinned: $(pct "$R" j.cached_total) % cached (one warm provider: $(pct "$R" j.ideal_cached_total) %)"
t_eq "unpinned, the same 20 turns are answered" 20 "$(json_get "$R" 'j.turns.filter((t) => t.ok).length')"
t_check "  but read less from the cache than one warm provider gives" json_ok "$R" \
	'j.cached_total < j.ideal_cached_total && j.written_total > j.ideal_written_total'

# --- The real agents, three turns in one saved session ------------------------
# session LABEL CLIENT MODEL API [nobreak]: three runs in one home, the
# 2nd and 3rd with the client's own continue; nobreak: orgw takes them as
# one conversation of three turns and none is a cache break.
session() {
	local label=$1 client=$2 model=$3 api=$4 i out home=$ORGW_T/home-$2 ok=0 answers='' ideal n lock want L C
	local -a more=()
	for i in 1 2 3; do
		[ "$i" -gt 1 ] && more=(--continue)
		out=$(node "$AG/agent.mjs" --client "$client" --base "$ORGW_URL" --key "$ORGW_KEY" \
			--model "$model" --home "$home" --timeout 90000 --prompt "Turn $i: say hello." "${more[@]}")
		printf '# %s, turn %s: %s\n' "$label" "$i" "$(json_get "$out" \
			'`exit ${j.exit_code}, ${j.t_total_ms} ms, answer ${JSON.stringify(j.answer)}, error ${JSON.stringify(j.error)}`')"
		json_ok "$out" 'j.ok' && ok=$((ok + 1))
		answers="$answers$(json_get "$out" 'j.answer');"
	done
	double_ctl GET log >"$ORGW_T/log.json"
	lock=$(stat "$model" lock.tag)
	want="Hello from $lock$(seq -f ' w%g' 4 12 | tr -d '\n');"
	t_eq "$label: 3 turns answered (the double's 12 words)" "3 $want$want$want" "$ok $answers"
	n=$(json_get "$ORGW_T/log.json" "j.requests.filter((x) => x.model === '$model' && x.api !== null).length")
	t_eq "$label: all $n requests pinned to the lock ($lock) and served there" "$n" \
		"$(json_get "$ORGW_T/log.json" "j.requests.filter((x) => x.model === '$model' && x.api === '$api' && x.status === 200 && x.tag === '$lock' && JSON.stringify(x.body.provider) === JSON.stringify({ order: ['$lock'], allow_fallbacks: false })).length")"
	ideal=$(node "$JS/prompt-cache.mjs" "$ORGW_T/log.json" "$model")
	printf '# %s: per request prompt/cached/written as one warm provider gives them: %s\n' "$label" \
		"$(json_get "$ideal" 'j.requests.map((r) => `${r.prompt}/${r.cached}/${r.written}`).join(" ")')"
	t_check "$label: the continued turns resent the conversation (the ideal reads are not zero)" \
		json_ok "$ideal" 'j.requests.at(-1).cached > 0 && j.requests.at(-1).cached >= j.requests[0].prompt'
	t_eq "$label: /stats counts $n requests and one warm provider's prompt, cached and cache-write tokens" \
		"$(json_get "$ideal" '[j.requests.length, j.prompt_total, j.cached_total, j.written_total].join(" ")')" \
		"$(json_get "$(orgw_curl /stats)" "((a) => [a.requests, a.tokens.prompt, a.tokens.cached, a.tokens.cache_write].join(' '))(j.models['$model'].by_api.$api)")"
	[ "${5:-}" = nobreak ] || return 0
	L=$(grep "req: .* api=$api model=$model " "$ORGW_LOG")
	C=$(sed -n 's/.* conv=\([^ ]*\).*/\1/p' <<<"$L" | sort -u)
	t_eq "$label: the log: 3 turns of one conversation ($C), none a cache break" "3 1 0" \
		"$(wc -l <<<"$L") $(wc -l <<<"$C") $(grep -c ' break=' <<<"$L")"
	t_eq "$label: /stats conversations: 3 turns, breaks_total 0" "3 0 0" \
		"$(json_get "$(orgw_curl /stats)" "((c) => [c.turns, c.breaks_total, c.breaks.length].join(' '))(j.conversations.find((x) => x.id === '$C'))")"
}
session "claude -p --continue" claude anthropic/claude-sonnet-4.5 messages nobreak
session "codex exec resume --last" codex openai/gpt-5.1-codex responses nobreak
session "opencode run --continue" opencode qwen/qwen3-coder chat
