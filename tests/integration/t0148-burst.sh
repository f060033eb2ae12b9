#!/bin/bash
# t0148-burst: short requests back to back from fewer clients than the
# host has threads are all served.  A thread that has answered still
# commits its counts (state_finish) before it takes the next request, so
# for a moment the host can count every thread busy; a generation that
# finds it so waits for one to come free (LOAD_WAIT_MS) instead of being
# refused with 503 at once.  Every request sent is counted in /stats.
. "$(dirname "$0")/../lib.sh"

# 2 processes x 3 threads: capacity 6; 5 clients, each with one request
# at a time, never need more than 5 threads serving them.
ORGW_WORKERS=2 orgw_start WORKER_THREADS=3
M=deepseek/deepseek-v3.2
printf '{"model":"%s","messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/b.json"
orgw_http POST /v1/chat/completions @"$ORGW_T/b.json"
t_eq "warm-up request 200" 200 "$HTTP_STATUS"
before=$(json_get "$(orgw_curl /stats)" "j.models['$M'].requests")

out=$(cd "$ORGW_ROOT/tests/js" && node burst.mjs --base "$ORGW_URL" \
	--key "$ORGW_KEY" --model "$M" --clients 5 --seconds 4)
echo "# $out"
sent=$(json_get "$out" 'j.sent')
t_check "hundreds of requests sent" test "${sent:-0}" -ge 200
t_eq "every one answered 200 (no 503 for a thread about to be free)" \
	"$sent" "$(json_get "$out" 'j.status["200"] || 0')"
t_eq "none refused with 503" 0 "$(json_get "$out" 'j.status["503"] || 0')"
after=$(json_get "$(orgw_curl /stats)" "j.models['$M'].requests")
t_eq "every request sent is counted in /stats" "$sent" "$((after - before))"
t_check "no 503 in the log" bash -c "! grep -q 'status=503' '$ORGW_LOG'"
