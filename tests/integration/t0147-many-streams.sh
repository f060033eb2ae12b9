#!/bin/bash
# t0147-many-streams: the default worker set-up (4 processes, default
# WORKER_THREADS, as `make run` and deploy/orgw.service) serves 120
# streams at once with no queueing: every stream gets its first token
# long before any other stream could have ended (issue 16).  Not a
# benchmark (make bench measures latency); the assertion is only that no
# stream waited for another one.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=4 orgw_start
M=deepseek/deepseek-v3.2
N=120
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
t_eq "warm-up request 200" 200 "$HTTP_STATUS"
# 10 tokens 800 ms apart: each stream lasts about 7 s.
double_ctl POST config '{"chunks":10,"spacing_ms":800}' >/dev/null

node "$ORGW_ROOT/tests/js/many-streams.mjs" "$ORGW_URL" "$ORGW_KEY" "$M" "$N" >"$ORGW_T/many.json"
r=$(<"$ORGW_T/many.json")
t_eq "all $N streams 200" "$N" "$(json_get "$r" 'j.filter(x => x.status === 200).length')"
t_eq "all $N streams ended with [DONE]" "$N" "$(json_get "$r" 'j.filter(x => x.done).length')"
stats=$(json_get "$r" '(() => { const f = j.map(x => x.first).sort((a, b) => a - b);
	const t = j.map(x => x.total).sort((a, b) => a - b);
	return [f[0], f[f.length >> 1], f[Math.floor(f.length * 0.99)], f[f.length - 1], t[0]].map(Math.round).join(" "); })()')
read -r fmin fmed fp99 fmax tmin <<<"$stats"
echo "# first token ms: min $fmin median $fmed p99 $fp99 max $fmax; shortest stream $tmin ms"
t_check "every first token (max $fmax ms) came before the shortest stream ended ($tmin ms)" \
	test "$fmax" -lt "$tmin"
t_check "and well before: under half a stream (3.5 s)" test "$fmax" -lt 3500
orgw_http GET /stats ""
t_check "/stats in_flight_peak saw them all at once (>= $N)" \
	test "$(json_get "$HTTP_BODY" 'j.in_flight_peak')" -ge "$N"
t_check "no 503" bash -c "! grep -q 'status=503' '$ORGW_LOG'"
