#!/bin/bash
# t0663-conversations-off: CONVERSATIONS=0 routes a conversation's turns by
# the model's lock alone, through lighttpd, the workers and the double:
#   - a session whose provider is no longer the lock follows the lock
#     (X-Orgw-Route: locked), where with conversations on it would stay;
#   - a provider 429 on a new conversation's turn is retried on the same
#     provider (RETRY_429_DELAYS), not moved to the next candidate, and
#     puts nobody under pressure;
#   - the conversation is still recorded.
. "$(dirname "$0")/../lib.sh"

M=test/convoff
orgw_start CONVERSATIONS=0 RETRY_429_DELAYS=1,1,1 MAX_ATTEMPTS=4
double_ctl PUT "endpoints/$M" '[
 {"tag":"anth","provider_name":"Anth","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000015"}},
 {"tag":"second","provider_name":"Second","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000006","completion":"0.00003"}}]' >/dev/null

SYS=$(printf 'You are a careful coding agent. %.0s' $(seq 1 20))
msg() { # SESSION N: the Nth turn of a Claude Code-shaped session
	local m="" i
	for ((i = 1; i <= $2; i++)); do
		[ -n "$m" ] && m="$m,"
		m="$m{\"role\":\"user\",\"content\":\"question $i\"}"
		[ "$i" -lt "$2" ] && m="$m,{\"role\":\"assistant\",\"content\":\"answer $i\"}"
	done
	orgw_http POST /v1/messages \
		"$(printf '{"model":"%s","max_tokens":32,"system":[{"type":"text","text":"%s","cache_control":{"type":"ephemeral"}}],"messages":[%s]}' "$M" "$SYS" "$m")" \
		-H "x-claude-code-session-id: $1" -H 'anthropic-version: 2023-06-01'
}
route() { echo "$HTTP_STATUS $(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"; }
ORGW_SCORE=$ORGW_ROOT/scheduler/orgw-score
score() { env -i PATH="$PATH" "$ORGW_SCORE" --config "$ORGW_CONFIG_FILE" "$@" >/dev/null 2>&1; }

msg off-1 1
t_eq "the first turn locks the cheaper provider" "200 anth" \
	"$HTTP_STATUS $(http_header X-Orgw-Provider)"
score cool "$M" anth 600 test && score uncool "$M" anth
msg off-1 2
t_eq "the lock moved to second: the session follows it (locked, not conversation)" \
	"200 second locked" "$(route)"

seq0=$(double_seq)
double_ctl POST faults '{"faults":[{"kind":"status","status":429,"times":1,"match":{"tag":"second"}}]}' >/dev/null
msg off-2 1
t_eq "a provider 429 on a new conversation: answered by second, 2 attempts" \
	"200 second 2" "$HTTP_STATUS $(http_header X-Orgw-Provider) $(http_header X-Orgw-Attempts)"
tags=$(double_ctl GET "log?since=$seq0" | json_get - \
	'j.requests.filter((r) => r.api === "messages").map((r) => r.tag + ":" + r.status).join(" ")')
t_eq "... both attempts went to second, the first one the 429" "second:429 second:200" "$tags"
t_match "... the log line says so" 'route=locked provider=second status=200 attempts=2 .*conv=off-2' \
	"$(grep 'conv=off-2' "$ORGW_LOG" | tail -n 1)"
orgw_stats_settle "$M" 3
state=$(orgw_state_dump)
t_eq "... and put no provider under pressure" 0 "$(grep -c "\"PRESSURE:$M:" <<<"$state")"
t_eq "the conversations are recorded (2)" 2 "$(grep '"CONV:' <<<"$state" | grep -c '"show":"off-')"
