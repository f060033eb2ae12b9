#!/bin/bash
# t0658-conversations: conversations through lighttpd, the workers and the
# double, on GDBM or (ORGW_STATE_BACKEND=redis) Redis:
#   - a team: 8 concurrent Claude Code-shaped Messages sessions (their
#     x-claude-code-session-id, a cached system prompt, 5 turns each)
#     against a locked provider that serves 4 at once: every request 200,
#     each session on one provider for all its turns, the sessions the
#     locked provider had no room for started on the second candidate at
#     once (no RETRY_429_DELAYS wait);
#   - a warm session keeps its provider when the lock moves (X-Orgw-Route:
#     conversation, the lock left alone) and moves once when its provider
#     cools, then stays;
#   - a Responses conversation with encrypted reasoning items whose
#     provider cools: the next turn goes elsewhere without the items and
#     succeeds, and the turns after it leave out the items that came
#     before the move (not the new provider's) from their first request;
#     a request whose items another endpoint cannot read is retried once
#     at once without them, and that conversation's next turn has no 400;
#   - automatic cache_control for an explicit-cache endpoint: added when the
#     request has no breakpoint (the next turn reads the cache), not when it
#     has its own; session_id from the client's header;
#   - where a conversation's cache broke: the system prompt rewritten at
#     turn 3 (prefix_changed at 0, unit system), the provider forgetting
#     its cache (provider_miss), a turn after CACHE_TTL_SECONDS (expired,
#     with the workers' test clock); warm turns never a break.
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

M=test/conv
orgw_start RETRY_429_DELAYS=5,5,5 MAX_ATTEMPTS=4 PRESSURE_SECONDS=4
double_ctl PUT "endpoints/$M" '[
 {"tag":"anth","provider_name":"Anth","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003",
   "input_cache_write":"0.00000375"},
  "supports_implicit_caching":false,"x_double_max_inflight":4},
 {"tag":"second","provider_name":"Second","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000006","completion":"0.00003","input_cache_read":"0.0000006"},
  "supports_implicit_caching":true}]' >/dev/null

# Both caches as providers have them: anth explicit (only what a breakpoint
# marks), second implicit.
double_ctl POST config '{"prompt_cache":true,"explicit_cache":true}' >/dev/null
SYS=$(printf 'You are a careful coding agent. %.0s' $(seq 1 60))
# msg SESSION BODY [HEADERS...]: one Messages request with Claude Code's
# session header; the status in HTTP_STATUS, the answer in HTTP_BODY.
msg() {
	local sess=$1 body=$2
	shift 2
	orgw_http POST /v1/messages "$body" -H "x-claude-code-session-id: $sess" \
		-H 'anthropic-version: 2023-06-01' "$@"
}
# turns N [SYSTEM]: the messages of a conversation's Nth turn (a user
# message per turn, answers between), system block with its breakpoint.
turns() {
	local n=$1 sys=${2:-$SYS} i m=""
	for ((i = 1; i <= n; i++)); do
		[ -n "$m" ] && m="$m,"
		m="$m{\"role\":\"user\",\"content\":\"question number $i about the code\"}"
		[ "$i" -lt "$n" ] && m="$m,{\"role\":\"assistant\",\"content\":\"answer number $i\"}"
	done
	printf '{"model":"%s","max_tokens":64,"system":[{"type":"text","text":"%s","cache_control":{"type":"ephemeral"}}],"messages":[%s]}' \
		"$M" "$sys" "$m"
}
prov() { http_header X-Orgw-Provider; }

# --- the lock ----------------------------------------------------------------
msg warmup "$(turns 1)"
t_eq "the first request locks the cheaper provider" "200 anth" "$HTTP_STATUS $(prov)"

# --- a team of 8 -------------------------------------------------------------
double_ctl POST config '{"first_token_delay_ms":1500}' >/dev/null
session() { # N: five turns, one line "status provider route" each
	local s i
	for i in 1 2 3 4 5; do
		s=$(curl -sS -o /dev/null -D - -w 'status=%{http_code}\n' --max-time 60 \
			-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
			-H "x-claude-code-session-id: team-session-$1" -H 'anthropic-version: 2023-06-01' \
			--data-binary "$(turns "$i")" "$ORGW_URL/v1/messages" | tr -d '\r')
		printf '%s %s\n' "$(sed -n 's/^status=//p' <<<"$s")" \
			"$(sed -n 's/^[Xx]-[Oo]rgw-[Pp]rovider: //p' <<<"$s")"
	done >"$ORGW_T/team$1"
}
t0=$(date +%s%N)
pids=()
for n in 1 2 3 4 5 6 7 8; do
	session "$n" &
	pids+=($!)
done
wait "${pids[@]}"
ms=$((($(date +%s%N) - t0) / 1000000))
double_ctl POST config '{"first_token_delay_ms":0}' >/dev/null
t_eq "team: all 40 turns answered 200" 40 "$(cat "$ORGW_T"/team* | grep -c '^200 ')"
one=0 on_second=0
for n in 1 2 3 4 5 6 7 8; do
	[ "$(cut -d' ' -f2 "$ORGW_T/team$n" | sort -u | wc -l)" = 1 ] && one=$((one + 1))
	[ "$(head -n 1 "$ORGW_T/team$n" | cut -d' ' -f2)" = second ] && on_second=$((on_second + 1))
done
t_eq "team: each session on one provider for all its turns" 8 "$one"
t_check "team: the sessions anth had no room for started on second ($on_second of 8)" \
	test "$on_second" -ge 4
slowest=$(grep 'conv=team-session' "$ORGW_LOG" | sed -n 's/.* total_ms=\([0-9]*\) .*/\1/p' | sort -n | tail -n 1)
t_check "team: no turn waited out RETRY_429_DELAYS of 5 s (slowest $slowest ms; all took $ms ms)" \
	test "${slowest:-99999}" -lt 5000
t_check "team: some sessions moved at once after a provider 429" \
	grep -q 'route=conversation provider=second status=200 attempts=2 .*conv=team-session' "$ORGW_LOG"
t_eq "team: the moves are route=conversation in the log" 1 \
	"$(grep -c 'route=conversation provider=second' "$ORGW_LOG" | awk '{print ($1 >= 16)}')"
t_eq "team: each line names its conversation" 1 \
	"$(grep -c 'conv=team-session' "$ORGW_LOG" | awk '{print ($1 == 40)}')"
orgw_stats_settle "$M" 41
state=$(orgw_state_dump)
t_eq "team: a pressure record for anth" 1 "$(grep -c "\"PRESSURE:$M:anth\"" <<<"$state")"

sleep 4   # PRESSURE_SECONDS: new conversations go to the lock again

# --- a warm session when the lock moves and when its provider cools ------------
ORGW_SCORE=$ORGW_ROOT/scheduler/orgw-score
score() { env -i PATH="$PATH" "$ORGW_SCORE" --config "$ORGW_CONFIG_FILE" "$@" >/dev/null 2>&1; }
msg warm "$(turns 1)"
t_eq "warm: its first turn on the lock" "200 anth" "$HTTP_STATUS $(prov)"
score cool "$M" anth 600 test && score uncool "$M" anth
msg other "$(turns 1)"
t_eq "warm: the lock moved to second (a new conversation goes there)" "200 second" \
	"$HTTP_STATUS $(prov)"
msg warm "$(turns 2)"
t_eq "warm: the warm session keeps anth, route conversation" "200 anth conversation" \
	"$HTTP_STATUS $(prov) $(http_header X-Orgw-Route)"
lock=$(orgw_state_dump | grep "\"BEST_PROVIDER:$M\"")
t_match "warm: ... the lock stays on second" '"tag":"second"' "$lock"
score cool "$M" anth 600 test
msg warm "$(turns 3)"
t_eq "warm: its provider cools: it moves to the lock" "200 second locked" \
	"$HTTP_STATUS $(prov) $(http_header X-Orgw-Route)"
score uncool "$M" anth
msg warm "$(turns 4)"
t_eq "warm: ... and stays there" "200 second" "$HTTP_STATUS $(prov)"

# --- Responses: encrypted reasoning across a move -------------------------------
score cool "$M" second 600 test   # the lock goes back to anth
double_ctl POST config '{"reasoning_items":true}' >/dev/null
IN='{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}'
resp() { orgw_http POST /v1/responses "$2" -H "session-id: $1"; }
# The Responses requests upstream since $seq0: status:input item types.
sent_types() {
	double_ctl GET "log?since=$seq0" | json_get - \
		'j.requests.filter((r) => r.path.includes("responses")).map((r) => r.status + ":" + r.body.input.map((i) => i.type).join("+")).join(" ")'
}
# foreign SHOW: the foreign_items of conversation SHOW's record, once the
# finish of its last turn (after its answer) has written one.
foreign() {
	local n="" i
	for i in $(seq 1 50); do
		n=$(orgw_state_dump | grep '"CONV:' | grep "\"show\":\"$1\"" |
			sed -n 's/.*"foreign_items":\([0-9]*\).*/\1/p')
		[ -n "$n" ] && break
		sleep 0.2
	done
	printf '%s' "$n"
}
resp codex-1 "{\"model\":\"$M\",\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN]}"
t_eq "reasoning: the first turn on anth" "200 anth" "$HTTP_STATUS $(prov)"
RS=$(json_get "$HTTP_BODY" 'JSON.stringify(j.output[0])')
T2="{\"model\":\"$M\",\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN,$RS,$IN]}"
score uncool "$M" second
score cool "$M" anth 600 test
seq0=$(double_seq)
resp codex-1 "$T2"
t_eq "reasoning: anth cooled, the second turn is served by second" "200 second" \
	"$HTTP_STATUS $(prov)"
sent=$(double_ctl GET "log?since=$seq0" | json_get - \
	'j.requests.filter((r) => r.path.includes("responses")).map((r) => r.body.input.map((i) => i.type).join("+")).join(" ")')
t_eq "... sent once, without the reasoning item" "message+message" "$sent"
t_match "... reasoning_dropped=1 in the log" 'conv=codex-1 .*reasoning_dropped=1' \
	"$(grep 'api=responses' "$ORGW_LOG" | tail -n 1)"
t_eq "... the record: its first 3 input items may hold another provider's reasoning" 3 \
	"$(foreign codex-1)"
# Turn 3 resends anth's item and brings second's own (of turn 2).
T3="{\"model\":\"$M\",\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN,$RS,$IN,$(json_get "$HTTP_BODY" 'JSON.stringify(j.output[0])'),$IN]}"
seq0=$(double_seq)
resp codex-1 "$T3"
t_eq "reasoning: the third turn, on second" "200 second" "$HTTP_STATUS $(prov)"
t_eq "... one request, no 400: anth's item (at 1) left out, second's (at 3) sent" \
	"200:message+message+reasoning+message" "$(sent_types)"
t_match "... attempts=1 reasoning_dropped=1 in the log" 'attempts=1 .*conv=codex-1 reasoning_dropped=1 ' \
	"$(grep 'api=responses' "$ORGW_LOG" | tail -n 1)"
# a conversation orgw has no record of, carrying items second cannot read
seq0=$(double_seq)
resp codex-new "$T2"
n400=$(double_ctl GET "log?since=$seq0" | json_get - 'j.requests.filter((r) => r.status === 400).length')
t_eq "reasoning: unreadable items: one 400, retried at once without them, 200" "200 1" \
	"$HTTP_STATUS $n400"
t_eq "... its record: the first 3 input items" 3 "$(foreign codex-new)"
T3="{\"model\":\"$M\",\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN,$RS,$IN,$(json_get "$HTTP_BODY" 'JSON.stringify(j.output[0])'),$IN]}"
seq0=$(double_seq)
resp codex-new "$T3"
t_eq "... its next turn: one request, no 400, second's own item sent" \
	"200 200:message+message+reasoning+message" "$HTTP_STATUS $(sent_types)"
double_ctl POST config '{"reasoning_items":false}' >/dev/null
score uncool "$M" anth

# --- automatic cache_control --------------------------------------------------
score cool "$M" second 600 test   # anth holds the lock
CSYS="{\"role\":\"system\",\"content\":\"$(printf 'chat system %.0s' $(seq 1 100))\"}"
U1='{"role":"user","content":"first question, fairly long to count"}'
A1='{"role":"assistant","content":"first answer"}'
U2='{"role":"user","content":"second question"}'
chat() { orgw_http POST /v1/chat/completions "$2" -H "x-session-id: $1"; }
seq0=$(double_seq)
chat chat-1 "{\"model\":\"$M\",\"messages\":[$CSYS,$U1]}"
w1=$(json_get "$HTTP_BODY" 'j.usage.prompt_tokens_details.cache_write_tokens')
fwd=$(double_ctl GET "log?since=$seq0" | json_get - \
	'JSON.stringify([j.requests.at(-1).body.cache_control, j.requests.at(-1).body.session_id])')
t_eq "auto cache: cache_control and session_id added" '[{"type":"ephemeral"},"chat-1"]' "$fwd"
t_check "... the prompt was written ($w1 tokens)" test "${w1:-0}" -gt 0
chat chat-1 "{\"model\":\"$M\",\"messages\":[$CSYS,$U1,$A1,$U2]}"
r2=$(json_get "$HTTP_BODY" 'j.usage.prompt_tokens_details.cached_tokens')
t_check "... the next turn reads it ($r2 tokens)" test "${r2:-0}" -gt 0 -a "${r2:-0}" -ge "${w1:-1}"
seq0=$(double_seq)
OWN="{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"own\",\"cache_control\":{\"type\":\"ephemeral\"}}]}"
chat chat-2 "{\"model\":\"$M\",\"messages\":[$OWN,$U1]}"
t_eq "auto cache: a request with its own breakpoint is untouched" "200 undefined" \
	"$HTTP_STATUS $(double_ctl GET "log?since=$seq0" | json_get - 'String(j.requests.at(-1).body.cache_control)')"

# A model's first request is scored inline, with no candidates in the state
# when its route is read: its pin's caching is asked of the fresh scores.
MF=test/conv-first
double_ctl PUT "endpoints/$MF" '[
 {"tag":"anth","provider_name":"Anth","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003",
   "input_cache_write":"0.00000375"},"supports_implicit_caching":false}]' >/dev/null
seq0=$(double_seq)
chat chat-first "{\"model\":\"$MF\",\"messages\":[$CSYS,$U1]}"
t_eq "auto cache: a model's first request (scored inline) gets it too" \
	'200 scored [{"type":"ephemeral"}]' \
	"$HTTP_STATUS $(http_header X-Orgw-Route) $(double_ctl GET "log?since=$seq0" | json_get - \
		'JSON.stringify([j.requests.at(-1).body.cache_control])')"

# --- breaks -------------------------------------------------------------------
SYSB="The system prompt of the break test. $SYS"
for i in 1 2; do msg brk "$(turns "$i" "$SYSB")"; done
msg brk "$(turns 3 "Rewritten at turn three. $SYS")"
t_eq "break: the system prompt rewritten at turn 3: prefix_changed at 0" 1 \
	"$(grep 'conv=brk' "$ORGW_LOG" | grep -c 'break=prefix_changed@0')"
t_match "... recorded with its unit, system" '"cause":"prefix_changed","at":0,"unit":"system"' \
	"$(orgw_state_dump | grep '"CONV:' | grep '"show":"brk"')"
msg brk "$(turns 4 "Rewritten at turn three. $SYS")"
t_eq "... the next turn, which reads it, is no break" 0 \
	"$(grep 'conv=brk' "$ORGW_LOG" | tail -n 1 | grep -c 'break=')"
double_ctl POST config '{"prompt_cache_ttl_ms":300}' >/dev/null
sleep 0.5
msg brk "$(turns 5 "Rewritten at turn three. $SYS")"
double_ctl POST config '{"prompt_cache_ttl_ms":0}' >/dev/null
t_eq "break: the provider forgot its cache: provider_miss" 1 \
	"$(grep 'conv=brk' "$ORGW_LOG" | tail -n 1 | grep -c 'break=provider_miss')"
msg brk "$(turns 6 "Rewritten at turn three. $SYS")"
# the workers' clock 400 s on, past CACHE_TTL_SECONDS (300); the double's
# cache forgets too
double_ctl POST config '{"prompt_cache_ttl_ms":300}' >/dev/null
sleep 0.5
ORGW_WORKER_ENV="ORGW_TEST_NOW=$(($(date +%s) + 400))" orgw_restart_workers
msg brk "$(turns 7 "Rewritten at turn three. $SYS")"
t_eq "break: resumed after CACHE_TTL_SECONDS: expired" 1 \
	"$(grep 'conv=brk' "$ORGW_LOG" | tail -n 1 | grep -c 'break=expired')"
t_eq "break: turns 1, 2, 4 and 6 (warm) are no breaks: 3 breaks in all" 3 \
	"$(grep 'conv=brk' "$ORGW_LOG" | grep -c 'break=')"
t_eq "team: no warm team turn was a break" 0 \
	"$(grep 'conv=team-session' "$ORGW_LOG" | grep 'break=' | grep -vc 'break=moved' || true)"

