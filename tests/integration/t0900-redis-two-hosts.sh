#!/bin/bash
# t0900-redis-two-hosts: two gateway hosts (each its own lighttpd and
# spawn-fcgi workers, different ports) on one redis-server:
# a breaker trip on host A moves the lock for host B at once; a session
# that alternates between the hosts stays on one provider; counters are
# exact under 64 concurrent clients spread over both hosts.
. "$(dirname "$0")/../lib.sh"

export ORGW_STATE_BACKEND=redis
ORGW_WORKERS=6 orgw_start FAIL_LIMIT=3 COOLDOWN_SECONDS=60 MAX_ATTEMPTS=4
ORGW_WORKERS=6 orgw_start_host2
A=$ORGW_URL
B=$ORGW2_URL
M=deepseek/deepseek-v3.2
chat() { # HOST_URL MODEL [CONTENT]: one request; HTTP_STATUS, headers
	ORGW_URL=$1 orgw_http POST /v1/chat/completions \
		"{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"${3:-hi}\"}]}"
}
route() { echo "$(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"; }

t_check "the two hosts are different servers" test "$A" != "$B"
t_eq "host A and host B are healthy" "200 200" \
	"$(ORGW_URL=$A orgw_http GET /healthz; echo -n "$HTTP_STATUS ")$(ORGW_URL=$B orgw_http GET /healthz; echo "$HTTP_STATUS")"

# --- one lock for both hosts ------------------------------------------------
chat "$A" $M
t_eq "host A scores the model and locks it" "200 deepseek scored" "$HTTP_STATUS $(route)"
chat "$B" $M
t_eq "host B finds host A's lock" "200 deepseek locked" "$HTTP_STATUS $(route)"
n=$(json_get "$(double_ctl GET 'log?path=endpoints')" 'j.requests.length')
t_eq "the model was scored once, by host A only" 1 "$n"

# --- a breaker trip on host A moves host B at once ------------------------
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":3,"match":{"tag":"deepseek"}}]}' >/dev/null
chat "$A" $M
t_eq "host A: deepseek fails 3 times, trips, and the request goes on" \
	"200 deepinfra/fp8 relocked 4" "$HTTP_STATUS $(route) $(http_header X-Orgw-Attempts)"
s0=$(json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq')
chat "$B" $M
t_eq "host B's next request goes to the new lock, first try" \
	"200 deepinfra/fp8 locked 1" "$HTTP_STATUS $(route) $(http_header X-Orgw-Attempts)"
t_eq "upstream saw host B's request for deepinfra/fp8 only" deepinfra/fp8 \
	"$(json_get "$(double_ctl GET "log?since=$s0&path=chat")" '[...new Set(j.requests.map(r => r.body.provider.order[0]))].join()')"
ORGW_URL=$B orgw_http GET /stats
t_eq "host B's /stats shows host A's trip and cooldown" "1 5xx deepinfra/fp8" \
	"$(json_get "$HTTP_BODY" "[j.models['$M'].breaker_trips, j.models['$M'].cooldowns.deepseek.reason, j.models['$M'].lock.tag].join(' ')")"

# --- a session alternating between the hosts stays on one provider --------
S=seen/a
seq_before=$(json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq')
routes=
for i in $(seq 20); do
	if [ $((i % 2)) -eq 1 ]; then h=$B; else h=$A; fi
	chat "$h" $S "turn $i"
	[ "$HTTP_STATUS" = 200 ] || t_fail "session turn $i" "$HTTP_BODY"
	routes="$routes $(http_header X-Orgw-Provider)"
done
t_eq "20 turns alternating B, A, B...: one provider throughout" alpha \
	"$(printf '%s\n' $routes | sort -u | tr -d '\n')"
t_eq "upstream got all 20 pinned to it" "20 alpha" \
	"$(json_get "$(double_ctl GET "log?since=$seq_before&path=chat")" 'j.requests.length + " " + [...new Set(j.requests.map(r => r.body.provider.order[0]))].join()')"

# --- exact counters: 64 clients over both hosts ---------------------------
C=seen/b
body="{\"model\":\"$C\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
stream_body="{\"model\":\"$C\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
printf '%s' "$body" >"$ORGW_T/b.json"
printf '%s' "$stream_body" >"$ORGW_T/s.json"
one() { # N: odd to host A, even to host B, streaming every third
	local f=b.json url=$A
	[ $(($1 % 3)) -eq 0 ] && f=s.json
	[ $(($1 % 2)) -eq 0 ] && url=$B
	curl -sS -o "$ORGW_T/out.$1" -w "$1 %{http_code}\n" --max-time 60 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary @"$ORGW_T/$f" "$url/v1/chat/completions"
}
export -f one
export ORGW_T ORGW_KEY A B
chats() { json_get "$(double_ctl GET stats)" "j.paths['/api/v1/chat/completions']"; }
c0=$(chats)
seq 256 | xargs -P 64 -I{} bash -c 'one {}' >"$ORGW_T/codes" 2>&1
t_eq "256 requests from 64 clients answered 200" 256 "$(grep -c ' 200$' "$ORGW_T/codes")"
ORGW_URL=$A orgw_stats_settle seen/b 256
ORGW_URL=$A orgw_http GET /stats
sa=$HTTP_BODY
ORGW_URL=$B orgw_http GET /stats
t_eq "both hosts show the same /stats for the model" \
	"$(json_get "$sa" "JSON.stringify(j.models['$C'])")" \
	"$(json_get "$HTTP_BODY" "JSON.stringify(j.models['$C'])")"
t_eq "/stats counts exactly 256 requests, 256 ok" "256 256" \
	"$(json_get "$HTTP_BODY" "j.models['$C'].requests + ' ' + j.models['$C'].ok")"
t_eq "and 768 completion tokens" 768 "$(json_get "$HTTP_BODY" "j.models['$C'].tokens.completion")"
t_eq "no count lost" 0 "$(json_get "$HTTP_BODY" 'j.lost_updates')"
t_eq "the double saw exactly 256 chat requests meanwhile" 256 $(($(chats) - c0))
t_eq "every worker kept its counts (no 'not counted' in either log)" 0 \
	"$(cat "$ORGW_T/orgw.log" "$ORGW_T/orgw2.log" | grep -c 'not counted')"
n=$(grep -h 'seen/b' "$ORGW_T/orgw.log" "$ORGW_T/orgw2.log" | grep -c 'route=scored' || true)
echo "# inline scorings of $C over both hosts: $n"
