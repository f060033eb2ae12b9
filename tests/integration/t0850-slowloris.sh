#!/bin/bash
# t0850-slowloris: sockets that send half a request and then wait do not
# keep the shipped lighttpd configuration (deploy/lighttpd.conf) from
# answering.  4,300 sockets, more than its server.max-connections (4096),
# each send a request line and a Host header and nothing more; while they
# are held open, /healthz answers again once lighttpd's max-read-idle has
# closed them (it was 900 s, so /healthz stayed unanswered for as long as
# they were held), and a chat completion is served.  Long generations
# under the same setting: t0560-first-token-45s, t0580-real-durations.
. "$(dirname "$0")/../lib.sh"

orgw_start
N=4300
idle=$(sed -n 's/^server.max-read-idle *= *\([0-9]*\).*/\1/p' "$ORGW_ROOT/deploy/lighttpd.conf")
echo "# deploy/lighttpd.conf: server.max-read-idle = $idle"
port=${ORGW_URL##*:}
cat >"$ORGW_T/loris.py" <<'PY'
import resource, socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 100), hard))
socks = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    socks.append(s)
time.sleep(0.5)
sent = 0
for s in socks:
    try:
        s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        sent += 1
    except OSError:
        pass
print("opened %d, sent %d" % (len(socks), sent), flush=True)
time.sleep(hold)
closed = 0
for s in socks:
    try:
        if s.recv(1) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print("closed by the server: %d" % closed, flush=True)
PY
python3 "$ORGW_T/loris.py" "$port" "$N" 40 >"$ORGW_T/loris.out" 2>&1 &
lp=$!
sleep 3
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 2 "$ORGW_URL/healthz" 2>/dev/null)
echo "# /healthz while $N half requests are fresh: ${code:-none}"

# Within the read-idle and a few seconds of lighttpd's once-a-second check.
t0=$(date +%s)
ok=
for i in $(seq 8); do
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 2 "$ORGW_URL/healthz" 2>/dev/null)
	if [ "$code" = 200 ]; then
		ok=$(($(date +%s) - t0 + 3))
		break
	fi
	sleep 0.5
done
t_check "/healthz answers beside $N half requests (${ok:-not within 23} s after they came)" test -n "$ok"
orgw_http POST /v1/chat/completions '{"model":"test/loris","messages":[{"role":"user","content":"hi"}]}'
t_eq "a chat completion is served" 200 "$HTTP_STATUS"
kill -0 "$lp" 2>/dev/null
t_eq "while the half requests are still held open by their client" 0 "$?"
wait "$lp"
cat "$ORGW_T/loris.out" | sed 's/^/# /'
closed=$(sed -n 's/^closed by the server: //p' "$ORGW_T/loris.out")
t_check "lighttpd closed the idle half requests (${closed:-0} of $N)" test "${closed:-0}" -ge 4000
