#!/bin/bash
# t0147-many-streams: the default worker set-up (4 processes, default
# WORKER_THREADS, as `make run` and deploy/orgw.service) serves 120
# streams at once with no queueing: every stream gets its first token
# long before any other stream could have ended.  Not a
# benchmark (make bench measures latency); the assertion is only that no
# stream waited for another one.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=4 orgw_start
M=deepseek/deepseek-v3.2
N=120
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
t_eq "warm-up request 200" 200 "$HTTP_STATUS"
many_streams orgw "$ORGW_URL" "$N"
orgw_http GET /stats ""
t_check "/stats in_flight_peak saw them all at once (>= $N)" \
	test "$(json_get "$HTTP_BODY" 'j.in_flight_peak')" -ge "$N"
t_check "no 503" bash -c "! grep -q 'status=503' '$ORGW_LOG'"
