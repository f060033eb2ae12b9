#!/bin/bash
# t0915-redis-stop-cycles: two gateway hosts on one redis-server that is
# frozen (SIGSTOP) for 0.5-0.9 s again and again while parallel clients
# send chat requests.  A write whose EXEC was sent just before a freeze
# times out on orgw's side and is run by Redis once it resumes: its
# request counts must then be counted once, not also as lost.  After
# each run of cycles, Redis left running, every request sent is either
# counted or a lost update, exactly: requests + lost_updates == sent.
. "$(dirname "$0")/../lib.sh"

export ORGW_STATE_BACKEND=redis
ORGW_WORKERS=3 orgw_start
ORGW_WORKERS=3 orgw_start_host2
A=$ORGW_URL
B=$ORGW2_URL
M=seen/b
RUNS=${T0915_RUNS:-3}
CYCLE_S=${T0915_CYCLE_S:-8}
CLIENTS=24

printf '{"model":"%s","messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/b.json"
one() { # N: odd to host A, even to host B
	local url=$A
	[ $(($1 % 2)) -eq 0 ] && url=$B
	curl -sS -o /dev/null -w "$1 %{http_code}\n" --max-time 30 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary @"$ORGW_T/b.json" "$url/v1/chat/completions"
}
export -f one
export ORGW_T ORGW_KEY A B
: >"$ORGW_T/codes"

# The sum /stats gives, once it stops growing (a batch may still be
# settling a lost EXEC reply, for up to a few seconds).
counted() {
	local got last= until=$(($(date +%s) + 8))
	while :; do
		got=$(json_get "$(ORGW_CURL_MAX_TIME=5 orgw_curl /stats)" \
			"((j.models['$M'] || {}).requests || 0) + (j.lost_updates || 0)" 2>/dev/null)
		[ -n "$got" ] && [ "$got" = "$last" ] && { echo "$got"; return; }
		[ "$(date +%s)" -ge "$until" ] && { echo "${got:-0}"; return; }
		last=$got
		sleep 0.5
	done
}
sent() { wc -l <"$ORGW_T/codes"; }

# Freezes redis-server (only the one this test started) for 0.5-0.9 s,
# lets it run 0.2-0.5 s, until $ORGW_T/stop; it is left running.
cycles() {
	while [ ! -e "$ORGW_T/stop" ]; do
		kill -STOP "$ORGW_REDIS_PID" || break
		sleep "0.$((5 + RANDOM % 5))"
		kill -CONT "$ORGW_REDIS_PID" || break
		sleep "0.$((2 + RANDOM % 4))"
	done
	kill -CONT "$ORGW_REDIS_PID" 2>/dev/null
}

# Clients in parallel, each sending one request after another, until
# $ORGW_T/stop.
load() { # FIRST
	local c
	for ((c = 0; c < CLIENTS; c++)); do
		(
			i=$(($1 + c))
			while [ ! -e "$ORGW_T/stop" ]; do
				one $i >>"$ORGW_T/codes" 2>&1
				i=$((i + CLIENTS))
			done
		) &
	done
	wait
}

seq 8 | xargs -P 4 -I{} bash -c 'one {}' >>"$ORGW_T/codes" 2>&1
overs=0
excess=0
for ((run = 1; run <= RUNS; run++)); do
	rm -f "$ORGW_T/stop"
	cycles &
	CY=$!
	load $((run * 100000)) &
	LD=$!
	sleep "$CYCLE_S"
	touch "$ORGW_T/stop"
	wait $LD $CY
	kill -CONT "$ORGW_REDIS_PID"
	# A worker adds the counts it lost to LOST_UPDATES with its next
	# batch: more requests, in rounds, until every worker has had one
	# (the sum then matches), or the sum went past what was sent (a
	# count taken twice, which no later request takes back).
	rm -f "$ORGW_T/stop"
	for ((round = 0; round < 8; round++)); do
		seq $((run * 100000 + 90000 + round * 100)) $((run * 100000 + 90000 + round * 100 + 23)) |
			xargs -P 12 -I{} bash -c 'one {}' >>"$ORGW_T/codes" 2>&1
		got=$(counted)
		want=$(sent)
		[ "$got" -ge "$want" ] && break
	done
	lost=$(json_get "$(orgw_curl /stats)" 'j.lost_updates')
	echo "# run $run: sent $want, requests + lost_updates $got (lost_updates $lost so far), $round flush rounds"
	# A count taken twice stays in the sum: a run is over when it
	# added to the excess of the runs before it.
	[ $((got - want)) -gt "$excess" ] && overs=$((overs + 1))
	[ "$got" -gt "$want" ] && excess=$((got - want))
	t_eq "run $run: requests + lost_updates == requests sent" "$want" "$got"
done

total=$(sent)
t_eq "every request answered 200 ($total)" "$total" "$(grep -c ' 200$' "$ORGW_T/codes")"
t_check "the freezes cost counts now and then (lost_updates $lost > 0)" test "${lost:-0}" -gt 0
logs=$(cat "$ORGW_T/orgw.log" "$ORGW_T/orgw2.log")
went=$(grep -c "EXEC's reply was lost, and the transaction went in" <<<"$logs" || true)
not=$(grep -c "EXEC's reply was lost, and the transaction did not" <<<"$logs" || true)
unk=$(grep -c "transaction's outcome unknown" <<<"$logs" || true)
echo "# lost EXEC replies: $went went in, $not did not, $unk unknown; runs over the count: $overs of $RUNS"
t_eq "no marker key is listed as state" 0 \
	"$(orgw_state_dump | grep -c '"TXN:' || true)"
