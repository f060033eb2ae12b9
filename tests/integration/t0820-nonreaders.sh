#!/bin/bash
# t0820-nonreaders: clients that ask for a large answer and never read it
# cannot take the host's worker threads.  2 workers of 4 threads (8 in
# all); /metrics is over 6 MB (2,500 models loaded into the state), more
# than the kernel and lighttpd buffer for a client that does not read.
# Twelve sockets with a 4 KiB receive buffer send GET /metrics with
# METRICS_KEY and never read: at most a quarter of the threads (2) serve
# them, the rest get 503 with Retry-After at once, and those 2 give up
# after the side requests' send timeout (5 s, not CLIENT_SEND_TIMEOUT_MS).
# Meanwhile /healthz, chat completions (streamed and not) and /v1/models
# keep being served, and after them a /metrics that reads is served whole.
. "$(dirname "$0")/../lib.sh"

MKEY=metrics-test-key
ORGW_WORKERS=2 orgw_start WORKER_THREADS=4 METRICS_KEY=$MKEY MAX_MODELS=2000
M=test/m0

chat='{"model":"'$M'","messages":[{"role":"user","content":"hi"}]}'
orgw_http POST /v1/chat/completions "$chat"
t_eq "a first chat request scores and locks" 200 "$HTTP_STATUS"

# 2,500 copies of that model's keys, loaded in one transaction.
orgw_state_copies "$M" 2500 test/m
size=$(curl -sS -H "Authorization: Bearer $MKEY" "$ORGW_URL/metrics" | wc -c)
echo "# /metrics: $size bytes"
t_check "/metrics is over 6 MB" test "$size" -gt 6000000

# The non-readers: each holds its socket open for HOLD s, reading nothing.
HOLD=16
cat >"$ORGW_T/nonreader.py" <<'PY'
import socket, sys, time
port, key, hold = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.sendall(("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % key).encode())
time.sleep(hold)
PY
port=${ORGW_URL##*:}
before=$(wc -l <"$ORGW_LOG")
pids=()
for i in $(seq 12); do
	python3 "$ORGW_T/nonreader.py" "$port" "$MKEY" "$HOLD" &
	pids+=($!)
done
sleep 2

t0=$(date +%s%N)
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 "$ORGW_URL/healthz")
ms=$((($(date +%s%N) - t0) / 1000000))
t_eq "/healthz answers beside 12 non-readers" 200 "$code"
t_check "at once (${ms} ms)" test "$ms" -lt 1000
ok=0
for i in 1 2 3 4 5 6; do
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary "$chat" "$ORGW_URL/v1/chat/completions")
	[ "$code" = 200 ] && ok=$((ok + 1))
done
t_eq "chat completions are served (6 of 6)" 6 "$ok"
body=$(curl -sS --max-time 5 -H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
	--data-binary '{"model":"'$M'","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
	"$ORGW_URL/v1/chat/completions")
t_check "a stream is served whole" grep -q 'data: \[DONE\]' <<<"$body"
HTTP_KEY=$MKEY orgw_http GET /metrics ""
t_eq "a /metrics meanwhile: 503 with Retry-After, in a few ms" "503 1 server_overloaded" \
	"$HTTP_STATUS $(http_header Retry-After) $(json_get "$HTTP_BODY_FILE" 'j.error.code')"

# The 2 served non-readers give up within the short send timeout.
# Each took the time to render its answer (seconds on a loaded machine:
# 7 MB from 15,000 keys) before the send timeout began; so ask every
# second, for as long as the non-readers hold their sockets.
sleep 5
waited=5
while :; do
	t0=$(date +%s%N)
	size=$(curl -sS --max-time 10 -H "Authorization: Bearer $MKEY" "$ORGW_URL/metrics" | wc -c)
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$size" -gt 6000000 ] || [ "$waited" -ge "$HOLD" ] && break
	sleep 1
	waited=$((waited + 1))
done
t_check "once they gave up, a /metrics that reads is served whole ($size bytes, ${ms} ms, ${waited} s after)" \
	test "$size" -gt 6000000
tail -n +"$((before + 1))" "$ORGW_LOG" | grep 'path=/metrics' >"$ORGW_T/m.log"
served=$(grep -c 'status=200' "$ORGW_T/m.log")
refused=$(grep -c 'status=503' "$ORGW_T/m.log")
echo "# /metrics during the attack: $served served (the reader included), $refused refused"
t_check "the non-readers were refused but a quarter of the threads" test "$refused" -ge 10
# A served non-reader's thread ends when its writes make no progress for
# 5 s, well before the client leaves at HOLD s (or the minute of
# CLIENT_SEND_TIMEOUT_MS): rendering 7 MB and what lighttpd takes in
# before its buffers fill come on top, seconds on a loaded machine.
slow=$(awk -v lim=$(((HOLD - 3) * 1000)) '/status=200/ { for (i = 1; i <= NF; i++) if ($i ~ /^total_ms=/) { split($i, a, "="); if (a[2] + 0 > lim) n++ } } END { print n + 0 }' "$ORGW_T/m.log")
t_eq "no /metrics held its thread until its client left (${HOLD} s)" 0 "$slow"
kill "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
orgw_http GET /healthz ""
t_eq "/healthz after" "200 false" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.saturated')"
