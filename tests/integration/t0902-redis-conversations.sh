#!/bin/bash
# t0902-redis-conversations: conversations on two gateway hosts (each its
# own lighttpd and workers) over one redis-server:
#   - a team: 8 concurrent Claude Code-shaped Messages sessions (their
#     x-claude-code-session-id, 5 turns each), every session alternating
#     its turns between the hosts (half start on host A, half on host B),
#     against a locked provider that serves 4 at once: every request 200,
#     each session on one provider for all its turns whichever host served
#     it, the sessions the locked provider had no room for started on the
#     second candidate at once (no RETRY_429_DELAYS wait); Redis holds the
#     locked provider's PRESSURE record and each session's CONV record
#     naming its provider; host B's /stats shows what host A served;
#   - a warm session started on host A keeps its provider on host B after
#     the lock moves, and moves once when its provider cools;
#   - Redis commands per proxied request, a conversation turn and a
#     request without one (printed, not checked).
. "$(dirname "$0")/../lib.sh"

export ORGW_STATE_BACKEND=redis
M=test/conv
orgw_start RETRY_429_DELAYS=5,5,5 MAX_ATTEMPTS=4 PRESSURE_SECONDS=4
orgw_start_host2
A=$ORGW_URL
B=$ORGW2_URL
LOGS=("$ORGW_LOG" "$ORGW_T/orgw2.log")
double_ctl PUT "endpoints/$M" '[
 {"tag":"anth","provider_name":"Anth","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003",
   "input_cache_write":"0.00000375"},
  "supports_implicit_caching":false,"x_double_max_inflight":4},
 {"tag":"second","provider_name":"Second","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000006","completion":"0.00003","input_cache_read":"0.0000006"},
  "supports_implicit_caching":true}]' >/dev/null
double_ctl POST config '{"prompt_cache":true,"explicit_cache":true}' >/dev/null
SYS=$(printf 'You are a careful coding agent. %.0s' $(seq 1 60))
# msg HOST_URL SESSION BODY: one Messages request with Claude Code's
# session header; HTTP_STATUS, HTTP_BODY, the headers.
msg() {
	ORGW_URL=$1 orgw_http POST /v1/messages "$3" -H "x-claude-code-session-id: $2" \
		-H 'anthropic-version: 2023-06-01'
}
# turns N: the messages of a conversation's Nth turn (a user message per
# turn, answers between), the system block with its breakpoint.
turns() {
	local n=$1 i m=""
	for ((i = 1; i <= n; i++)); do
		[ -n "$m" ] && m="$m,"
		m="$m{\"role\":\"user\",\"content\":\"question number $i about the code\"}"
		[ "$i" -lt "$n" ] && m="$m,{\"role\":\"assistant\",\"content\":\"answer number $i\"}"
	done
	printf '{"model":"%s","max_tokens":64,"system":[{"type":"text","text":"%s","cache_control":{"type":"ephemeral"}}],"messages":[%s]}' \
		"$M" "$SYS" "$m"
}
prov() { http_header X-Orgw-Provider; }
conv_log() { cat "${LOGS[@]}"; }
score() { env -i PATH="$PATH" "$ORGW_ROOT/scheduler/orgw-score" --config "$ORGW_CONFIG_FILE" "$@" >/dev/null 2>&1; }
# rcalls: the commands redis-server has run so far, INFO's own left out.
rcalls() {
	orgw_redis_cli INFO commandstats | tr -d '\r' |
		awk -F'[:=,]' '/^cmdstat_/ && $1 != "cmdstat_info" { n += $3 } END { print n + 0 }'
}
# rcalls_settled: rcalls once two readings 300 ms apart agree (a worker
# counts a request after its client has the whole answer), 30 tries.
rcalls_settled() {
	local a b=-1 i=0
	a=$(rcalls)
	while [ "$a" != "$b" ] && [ $((i += 1)) -le 30 ]; do
		sleep 0.3
		b=$a
		a=$(rcalls)
	done
	echo "$a"
}

# --- the lock, on host A --------------------------------------------------------
msg "$A" solo-a "$(turns 1)"
t_eq "host A: the first request locks the cheaper provider" "200 anth" "$HTTP_STATUS $(prov)"
msg "$B" solo-b "$(turns 1)"
t_eq "host B: a new conversation goes to host A's lock" "200 anth" "$HTTP_STATUS $(prov)"

# --- a team of 8 over both hosts --------------------------------------------------
double_ctl POST config '{"first_token_delay_ms":1500}' >/dev/null
s429_0=$(double_ctl GET stats | json_get - 'j.faults.inflight_429 || 0')
session() { # N: five turns, odd N from host A, even from host B, then alternating
	local s i url
	for i in 1 2 3 4 5; do
		if [ $((($1 + i) % 2)) -eq 0 ]; then url=$A; else url=$B; fi
		s=$(curl -sS -o /dev/null -D - -w 'status=%{http_code}\n' --max-time 60 \
			-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
			-H "x-claude-code-session-id: red-team-$1" -H 'anthropic-version: 2023-06-01' \
			--data-binary "$(turns "$i")" "$url/v1/messages" | tr -d '\r')
		printf '%s %s %s\n' "$(sed -n 's/^status=//p' <<<"$s")" \
			"$(sed -n 's/^[Xx]-[Oo]rgw-[Pp]rovider: //p' <<<"$s")" \
			"$([ "$url" = "$A" ] && echo A || echo B)"
	done >"$ORGW_T/team$1"
}
pids=()
for n in 1 2 3 4 5 6 7 8; do
	session "$n" &
	pids+=($!)
done
wait "${pids[@]}"
double_ctl POST config '{"first_token_delay_ms":0}' >/dev/null
s429=$(($(double_ctl GET stats | json_get - 'j.faults.inflight_429 || 0') - s429_0))
t_eq "team: all 40 turns answered 200" 40 "$(cat "$ORGW_T"/team* | grep -c '^200 ')"
t_eq "team: each host served 20 turns, 2 or 3 of each session" "20 20" \
	"$(cat "$ORGW_T"/team* | grep -c ' A$') $(cat "$ORGW_T"/team* | grep -c ' B$')"
one=0 on_anth=0 on_second=0 first_b=0
for n in 1 2 3 4 5 6 7 8; do
	[ "$(cut -d' ' -f2 "$ORGW_T/team$n" | sort -u | wc -l)" = 1 ] && one=$((one + 1))
	case $(head -n 1 "$ORGW_T/team$n" | cut -d' ' -f2) in
	anth) on_anth=$((on_anth + 1)) ;;
	second) on_second=$((on_second + 1)) ;;
	esac
	[ "$(head -n 1 "$ORGW_T/team$n" | cut -d' ' -f3)" = B ] && first_b=$((first_b + 1))
done
t_eq "team: 4 sessions started on host B" 4 "$first_b"
t_eq "team: each session on one provider for all its turns, on both hosts" 8 "$one"
t_check "team: the sessions anth had no room for started on second ($on_second of 8)" \
	test "$on_second" -ge 4
t_check "team: ... and no more than anth's 4 started there ($on_anth of 8)" \
	test "$on_anth" -le 4 -a "$on_anth" -ge 1
slowest=$(conv_log | grep 'conv=red-team-' | sed -n 's/.* total_ms=\([0-9]*\) .*/\1/p' | sort -n | tail -n 1)
t_check "team: no turn waited out RETRY_429_DELAYS of 5 s (slowest $slowest ms)" \
	test "${slowest:-99999}" -lt 5000
t_eq "team: each host logged its 20 turns, each line naming its conversation" "20 20" \
	"$(grep -c 'conv=red-team-' "$ORGW_LOG") $(grep -c 'conv=red-team-' "$ORGW_T/orgw2.log")"
t_eq "team: every turn on second is route=conversation, every one on anth locked" \
	"$((5 * on_second)) $((5 * on_anth))" \
	"$(conv_log | grep 'conv=red-team-' | grep -c 'route=conversation provider=second ') $(conv_log | grep 'conv=red-team-' | grep -c 'route=locked provider=anth ')"
t_check "team: both hosts logged route=conversation turns of the moved sessions" \
	test "$(grep 'conv=red-team-' "$ORGW_LOG" | grep -c 'route=conversation ')" -ge $((2 * on_second)) \
	-a "$(grep 'conv=red-team-' "$ORGW_T/orgw2.log" | grep -c 'route=conversation ')" -ge $((2 * on_second))
t_check "team: some sessions moved at once after a provider 429" \
	grep -q 'route=conversation provider=second status=200 attempts=2 .*conv=red-team-' "${LOGS[@]}"
extra=$(conv_log | grep 'conv=red-team-' | sed -n 's/.* attempts=\([0-9]*\) .*/\1/p' | awk '{ n += $1 - 1 } END { print n + 0 }')
t_check "team: the locked provider answered provider 429s ($s429)" test "$s429" -ge 1
t_eq "team: each provider 429 cost its turn one attempt, no more" "$s429" "$extra"
echo "# team: double's inflight 429s $s429; sessions started on anth $on_anth, on second $on_second; slowest turn $slowest ms"

# --- what Redis holds ---------------------------------------------------------------
ORGW_URL=$A orgw_stats_settle "$M" 42
pr=$(orgw_redis_cli GET "orgw:PRESSURE:$M:anth")
t_match "redis: a PRESSURE record for anth" '"n429":[1-9]' "$pr"
t_eq "redis: none for second" "" "$(orgw_redis_cli GET "orgw:PRESSURE:$M:second")"
convs=$(orgw_redis_cli --scan --pattern "orgw:CONV:$M:*" | while read -r k; do
	orgw_redis_cli GET "$k"
	echo
done)
bad=
for n in 1 2 3 4 5 6 7 8; do
	want=$(head -n 1 "$ORGW_T/team$n" | cut -d' ' -f2)
	got=$(grep "\"show\":\"red-team-$n\"" <<<"$convs" | json_get - 'j.tag + " " + j.turns')
	[ "$got" = "$want 5" ] || bad="$bad red-team-$n($got, served by $want)"
done
t_eq "redis: each session's CONV record names its provider, 5 turns" "" "$bad"
rows='j.conversations.map((c) => [c.id, c.provider, c.turns, c.last_seen].join(" ")).sort().join()'
ORGW_URL=$A orgw_http GET /stats
sa=$(json_get "$HTTP_BODY" "$rows")
ORGW_URL=$B orgw_http GET /stats
t_eq "host B's /stats lists the same conversations as host A's" "$sa" "$(json_get "$HTTP_BODY" "$rows")"
t_eq "host B's /stats: solo-a, served by host A only, on anth" "anth 1" \
	"$(json_get "$HTTP_BODY" 'j.conversations.filter((c) => c.id === "solo-a").map((c) => c.provider + " " + c.turns).join()')"
t_eq "host B's /stats: the 8 team sessions, 5 turns each (2 or 3 of them host A's)" 8 \
	"$(json_get "$HTTP_BODY" 'j.conversations.filter((c) => c.id.startsWith("red-team-") && c.turns === 5).length')"
t_check "host B's /stats: anth's provider 429s under conversations" \
	json_ok "$HTTP_BODY" "j.models['$M'].conversations.providers.anth.provider_429s >= 1"

sleep 4 # PRESSURE_SECONDS: new conversations go to the lock again

# --- a warm session started on host A, on host B when the lock moves -------------
msg "$A" warm "$(turns 1)"
t_eq "warm: its first turn on the lock, on host A" "200 anth" "$HTTP_STATUS $(prov)"
score cool "$M" anth 600 test && score uncool "$M" anth
msg "$B" other "$(turns 1)"
t_eq "warm: the lock moved to second (host B sends a new conversation there)" "200 second" \
	"$HTTP_STATUS $(prov)"
msg "$B" warm "$(turns 2)"
t_eq "warm: host B keeps the warm session on anth, route conversation" "200 anth conversation" \
	"$HTTP_STATUS $(prov) $(http_header X-Orgw-Route)"
t_match "warm: ... the lock stays on second" '"tag":"second"' \
	"$(orgw_redis_cli GET "orgw:BEST_PROVIDER:$M")"
score cool "$M" anth 600 test
msg "$A" warm "$(turns 3)"
t_eq "warm: anth cools: host A moves it to the lock" "200 second locked" \
	"$HTTP_STATUS $(prov) $(http_header X-Orgw-Route)"
score uncool "$M" anth
msg "$B" warm "$(turns 4)"
t_eq "warm: ... and host B keeps it there" "200 second locked" \
	"$HTTP_STATUS $(prov) $(http_header X-Orgw-Route)"
t_match "redis: the warm session's CONV record names second" '"tag":"second"' \
	"$(orgw_redis_cli --scan --pattern "orgw:CONV:$M:*" | while read -r k; do orgw_redis_cli GET "$k"; done |
		grep '"show":"warm"')"

# --- Redis commands per request -----------------------------------------------------
N=10
c0=$(rcalls_settled)
for i in $(seq 5 $((N + 4))); do msg "$A" warm "$(turns "$i")"; done
c1=$(rcalls_settled)
t_eq "measure: $N more turns of the warm session answered" "200 second" "$HTTP_STATUS $(prov)"
P=seen/a
for i in $(seq $N); do
	ORGW_URL=$A orgw_http POST /v1/chat/completions \
		"{\"model\":\"$P\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
done
c2=$(rcalls_settled)
for i in $(seq $N); do
	ORGW_URL=$A orgw_http POST /v1/chat/completions \
		"{\"model\":\"$P\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
done
c3=$(rcalls_settled)
t_eq "measure: the plain requests answered" 200 "$HTTP_STATUS"
echo "# redis commands per request: conversation turn $(((c1 - c0) / N)), plain chat $(((c3 - c2) / N)) (first $N plain ones, scoring included: $(((c2 - c1) / N)))"
