#!/bin/bash
# t0146-recycle: a worker past WORKER_MAX_REQUESTS stops accepting (not
# before 10 s of age: multiwatch counts a quicker exit as a crash), lets
# the stream in flight finish intact, then exits; multiwatch starts a
# fresh one, which serves what arrived meanwhile.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=1 orgw_start WORKER_THREADS=4 WORKER_MAX_REQUESTS=3
M=deepseek/deepseek-v3.2
printf '{"model":"%s","stream":true,"messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/s.json"
printf '{"model":"%s","messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/b.json"
old=$(orgw_worker_pids)
t_check "one worker" test -n "$old"

# A stream of 13 tokens 1 s apart outlives the 10 s guard (by 3 s: the
# worker recycles at 10 s of age, the checks below take well under 1 s).
double_ctl POST config '{"chunks":13,"spacing_ms":1000}' >/dev/null
curl -sS -N --max-time 60 -o "$ORGW_T/held" \
	-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
	--data-binary @"$ORGW_T/s.json" "$ORGW_URL/v1/chat/completions" &
held=$!
for i in 1 2 3; do
	orgw_http POST /v1/chat/completions @"$ORGW_T/b.json"
	t_eq "quick request $i served" 200 "$HTTP_STATUS"
done
t_eq "still the first worker before 10 s" "$old" "$(orgw_worker_pids)"

# Past 10 s it is due: it stops accepting and drains.
for ((i = 0; i < 150; i++)); do
	grep -q 'recycling after' "$ORGW_LOG" && break
	sleep 0.1
done
t_check "the worker logs its recycling" grep -q "orgw\[$old\]: info: recycling after" "$ORGW_LOG"
t_check "the stream is still running" kill -0 "$held"
# Sent while the worker drains: waits for the replacement, then served.
orgw_http POST /v1/chat/completions @"$ORGW_T/b.json"
t_eq "a request sent during the drain is served" 200 "$HTTP_STATUS"

wait "$held"
t_check "the held stream finished with [DONE]" grep -q 'data: \[DONE\]' "$ORGW_T/held"
n=$(grep -c '"content":"[^"]' "$ORGW_T/held")
t_check "with all its 13 tokens (got $n)" test "$n" -ge 13
for ((i = 0; i < 50; i++)); do
	orgw__alive "$old" || break
	sleep 0.1
done
t_check "the old worker exited after the stream" bash -c "! kill -0 $old 2>/dev/null"
new=$(orgw_worker_pids)
t_check "multiwatch started a new one ($new)" test -n "$new" -a "$new" != "$old"
t_check "no crash respawn in multiwatch's log" bash -c "! grep -q 'failed, next try\|died to often' '$ORGW_LOG'"
orgw_http GET /stats ""
t_eq "/stats in_flight 0" 0 "$(json_get "$HTTP_BODY" 'j.in_flight')"
