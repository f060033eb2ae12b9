#!/bin/bash
# t0910-redis-outage: redis-server killed and restarted during a run of
# mixed requests: no request fails because of it (they go
# unpinned while it is away, without waiting on it), /healthz says why,
# orgw reconnects by itself and pinning resumes once it is back; the
# request counts lost meanwhile are counted (LOST_UPDATES in /stats).
. "$(dirname "$0")/../lib.sh"

export ORGW_STATE_BACKEND=redis
ORGW_WORKERS=4 orgw_start
M=deepseek/deepseek-v3.2
M2=seen/a
port=$ORGW_REDIS_PORT

# Mixed requests in the background, all the time: two models, plain and
# streamed, two clients; every status and route is recorded.
one() { # N
	local m=$M f
	[ $(($1 % 2)) -eq 0 ] && m=$M2
	f="{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
	[ $(($1 % 3)) -eq 0 ] && f="{\"model\":\"$m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
	curl -sS -o /dev/null -D "$ORGW_T/h.$1" -w "$1 %{http_code} %{time_total}\n" --max-time 30 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary "$f" "$ORGW_URL/v1/chat/completions"
}
export -f one
export ORGW_T ORGW_KEY ORGW_URL M M2
: >"$ORGW_T/codes"
(
	i=0
	while [ ! -e "$ORGW_T/stop" ]; do
		i=$((i + 2))
		one $((i - 1)) >>"$ORGW_T/codes" 2>&1 &
		one $i >>"$ORGW_T/codes" 2>&1
		wait
	done
) &
BG=$!

sleep 2
orgw_http GET /stats
t_eq "before: both models are pinned" "deepseek alpha" \
	"$(json_get "$HTTP_BODY" "j.models['$M'].lock.tag + ' ' + j.models['$M2'].lock.tag")"
before=$(json_get "$HTTP_BODY" "j.models['$M'].requests + j.models['$M2'].requests")

# --- Redis goes away ----------------------------------------------------------
orgw_redis_stop
down_at=$(wc -l <"$ORGW_T/codes")
sleep 3
orgw_http GET /healthz
t_eq "/healthz: 503 while Redis is down" 503 "$HTTP_STATUS"
t_match "/healthz says why" 'redis unreachable: Connection refused' "$(json_get "$HTTP_BODY" 'j.reason')"
s0=$(json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq')
out=$(orgw_chat --model $M)
t_eq "a request while Redis is down succeeds, unpinned" "true unpinned" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"]')"
t_eq "and carried no provider object upstream" undefined \
	"$(json_get "$(double_ctl GET "log?since=$s0&path=chat&limit=1")" 'String(j.requests[0].body.provider)')"
sleep 1
up_at=$(wc -l <"$ORGW_T/codes")
t_check "requests went on while Redis was down ($((up_at - down_at)))" test $((up_at - down_at)) -ge 10

# --- Redis comes back (empty: no persistence) ---------------------------------
orgw_redis_start "$ORGW_T/redis" "$port" || t_fail "redis-server did not restart"
sleep 3
orgw_http GET /healthz
t_eq "/healthz is ok again" "200 ok" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.status')"
out=$(orgw_chat --model $M)
t_eq "pinning resumes: locked again" "true locked deepseek" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"] + " " + j.headers["x-orgw-provider"]')"

# --- Redis frozen (SIGSTOP: connections are accepted, nothing answers) -------
kill -STOP "$ORGW_REDIS_PID"
sleep 3
# Timed by curl itself: a node client's own start-up on a busy machine
# is not the gateway's wait.
fz=$(one 1000001)
t_eq "a request while Redis is frozen succeeds" 200 "$(echo "$fz" | cut -d' ' -f2)"
ms=$(echo "$fz" | awk '{ printf "%d", $3 * 1000 }')
t_check "without hanging on it (${ms} ms; command timeout 500 ms)" test "$ms" -lt 2000
orgw_http GET /healthz
t_eq "/healthz: 503 while Redis is frozen" 503 "$HTTP_STATUS"
t_match "/healthz says why" 'redis' "$(json_get "$HTTP_BODY" 'j.reason')"
kill -CONT "$ORGW_REDIS_PID"
sleep 3
out=$(orgw_chat --model $M)
t_eq "thawed: pinned again" "true locked" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"]')"
touch "$ORGW_T/stop"
wait $BG

total=$(wc -l <"$ORGW_T/codes")
t_eq "no request failed: all $total answered 200" "$total" "$(grep -c ' 200 ' "$ORGW_T/codes")"
slow=$(awk '$3 > 2 { n++ } END { print n + 0 }' "$ORGW_T/codes")
t_eq "none waited 2 s or more on the dead or frozen Redis" 0 "$slow"
unp=$(grep -il '^x-orgw-route: unpinned' "$ORGW_T"/h.* | wc -l)
t_check "some went unpinned while it was away ($unp)" test "$unp" -ge 5
orgw_http GET /stats
lost=$(json_get "$HTTP_BODY" 'j.lost_updates')
t_check "the counts lost meanwhile are counted in /stats ($lost)" test "$lost" -ge 1
# Each unpinned request is one count lost (give or take the requests in
# flight at the kill and the restart).
t_check "about one per unpinned request ($lost for $unp)" \
	test "$lost" -ge $((unp - 10)) -a "$lost" -le $((unp + 10))
t_match "the log says Redis went away" 'state: redis .*; requests go unpinned until it is back' "$(cat "$ORGW_LOG")"
t_match "and that it came back" 'state: redis reachable again after [0-9]+ ms' "$(cat "$ORGW_LOG")"
t_match "and where the lost counts went" 'request counts lost while the state was unavailable added to LOST_UPDATES' "$(cat "$ORGW_LOG")"
echo "# requests: $total, $unp unpinned; lost counts recorded: $lost; counted before the outage: $before"
