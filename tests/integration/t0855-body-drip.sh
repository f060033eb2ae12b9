#!/bin/bash
# t0855-body-drip: a client that drips its request body (the first 64 KiB
# of a declared 8 MB, then a byte every 2 s) cannot hold the web server's
# disk or memory, nor an orgw thread, in any shipped configuration:
#   - without a key: lighttpd (deploy/lighttpd.conf) and nginx
#     (deploy/nginx.conf) hand the request to orgw before its body, and
#     orgw's 401 comes at once (lighttpd spooled each body in
#     server.upload-dirs until it was complete, and nginx in a temp file,
#     for as long as the client kept dripping); Caddy (deploy/Caddyfile)
#     streams bodies, holds none, and 10 such clients on orgw's 8 threads
#     leave it free to serve (orgw no longer reads on, after its answer,
#     what the web server hands on of a body it refused);
#     Apache (deploy/apache-fcgid.conf: mod_fcgid collects the body
#     first; deploy/htaccess under mod_cgid) ends a body that falls under
#     500 bytes/s within its RequestReadTimeout (a 1 KiB start: about
#     12 s);
#   - with the key, through lighttpd: orgw gives a body 10 s plus a second
#     per 64 kB (a 100 kB body: about 11.5 s), then answers 408, and the
#     drippers do not keep an ordinary request from being served;
#   - a chunked body still goes through lighttpd and nginx, which collect
#     those first.
# Long streams and large legitimate bodies under the same settings: the
# deploy tests (t0510 to t0556, deploy_checks: a 1 MiB body, 413 over
# MAX_BODY_BYTES), t0560, t0580.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=1 orgw_start WORKER_THREADS=8
deploy_start nginx caddy apache-fcgid apache-cgi
DEPLOY_URL[lighttpd]=$ORGW_URL
cat >"$ORGW_T/drip.py" <<'PY'
import socket, sys, time
# drip.py URL N FIRST CL DRIP_S TOTAL_S [KEY]: N connections post to URL a
# body declared CL bytes long: FIRST bytes at once, then one byte every
# DRIP_S.  One line per connection: the seconds until the first byte of
# the answer came (or "none"), and its status line.
url, n, first, cl, drip, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
key = sys.argv[7] if len(sys.argv) > 7 else ""
hostport, path = url[len("http://"):].split("/", 1) if "/" in url[len("http://"):] else (url[len("http://"):], "")
port = int(hostport.split(":")[1])
path = "/" + path + ("/" if path and not path.endswith("/") else "") + "v1/chat/completions"
conns = []
t0 = time.time()
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    h = "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % (path, hostport, cl)
    if key:
        h += "Authorization: Bearer %s\r\n" % key
    s.sendall((h + "\r\n").encode() + b" " * first)
    s.setblocking(False)
    conns.append({"s": s, "at": None, "data": b"", "sent": first})
while time.time() - t0 < total and any(c["at"] is None for c in conns):
    time.sleep(drip)
    for c in conns:
        if c["at"] is not None:
            continue
        try:
            d = c["s"].recv(65536)
            c["data"] += d
            c["at"] = time.time() - t0
            continue
        except BlockingIOError:
            pass
        except OSError:
            c["at"] = time.time() - t0
            continue
        if c["sent"] < cl:
            try:
                c["s"].send(b" ")
                c["sent"] += 1
            except OSError:
                c["at"] = time.time() - t0
for c in conns:
    line = c["data"].split(b"\r\n", 1)[0].decode(errors="replace") or "closed"
    print("%s %s" % ("%.1f" % c["at"] if c["at"] is not None else "none", line))
PY
# drip SERVER N FIRST CL TOTAL [KEY]: runs drip.py against SERVER, 2 s a byte.
drip() {
	python3 "$ORGW_T/drip.py" "${DEPLOY_URL[$1]}" "$2" "$3" "$4" 2 "$5" ${6:+"$6"}
}
# within SECONDS: every line of stdin was answered within SECONDS.
within() { awk -v s="$1" '$1 == "none" || $1 + 0 > s + 0 { bad = 1 } END { exit bad }'; }

for s in lighttpd nginx; do
	out=$(drip "$s" 4 65536 8000000 30)
	echo "# $s, no key: $(echo "$out" | tr '\n' ';')"
	t_check "$s, no key: each dripping body answered within 5 s" within 5 <<<"$out"
	t_check "$s, no key: ... with 401" bash -c '! grep -vq " 401 " <<<"$1"' _ "$out"
done
# Caddy 2.6 streams the body to orgw and reads orgw's answer only once it
# has sent the whole body, so the connection stays open while the client
# drips; Caddy holds no body, and orgw's thread is free once it answered.
n401() { grep -c 'path=/chat/completions status=401 total_ms=[0-9] *$' "$ORGW_LOG"; }
base=$(n401)
drip caddy 10 65536 8000000 20 >"$ORGW_T/caddy.txt" &
dripper=$!
sleep 4
ask=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ORGW_KEY" \
	-H 'Content-Type: application/json' \
	--data-binary '{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}' \
	"${DEPLOY_URL[caddy]}/v1/chat/completions")
t_eq "caddy, 10 clients without a key dripping on 8 threads: an ordinary request is served" 200 "$ask"
t_eq "  orgw answered each of them 401 at once" 10 \
	"$(( $(n401) - base ))"
wait "$dripper"

for s in apache-fcgid apache-cgi; do
	out=$(drip "$s" 4 1024 8000000 40)
	echo "# $s, no key: $(echo "$out" | tr '\n' ';')"
	t_check "$s, no key: each dripping body ended within 20 s" within 20 <<<"$out"
done

# With the key: orgw's own bound on reading the body.
drip lighttpd 4 1024 100000 40 "$ORGW_KEY" >"$ORGW_T/keyed.txt" &
dripper=$!
sleep 3
orgw_http POST /v1/chat/completions '{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}'
t_eq "while keyed clients drip: an ordinary request is served" 200 "$HTTP_STATUS"
wait "$dripper"
out=$(cat "$ORGW_T/keyed.txt")
echo "# lighttpd, with the key: $(echo "$out" | tr '\n' ';')"
t_check "with the key: each dripping body answered within 16 s" within 16 <<<"$out"
t_check "  ... with 408" bash -c '! grep -vq " 408 " <<<"$1"' _ "$out"
t_match "  orgw logged them as 408" 'status=408' "$(cat "$ORGW_LOG")"

# Chunked bodies are still collected and served.
for s in lighttpd nginx; do
	code=$(curl -sS -o "$ORGW_T/chunked.out" -w '%{http_code}' -H "Authorization: Bearer $ORGW_KEY" \
		-H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' \
		--data-binary '{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}' \
		"${DEPLOY_URL[$s]}/v1/chat/completions")
	t_eq "$s: a chunked body is served" 200 "$code"
done
