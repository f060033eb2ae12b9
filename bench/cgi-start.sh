#!/bin/bash
# bench/cgi-start.sh - what one plain-CGI request costs: the
# static orgw.fcgi of `make dist` beside the dynamic build (cgi-bin/), each
# run N times per request as a CGI program against the double on
# 127.0.0.1 (http), alternating.  Per request kind and binary: the median
# and 90th percentile of the time from process start to exit (the answer
# is complete when the process exits; 3 warm-up runs each are not
# counted); then one chat request's max RSS (/usr/bin/time -f %M).
#
#   sh bench/cgi-start.sh [N]        (default 50; needs `make all dist`)
. "$(dirname "$0")/../tests/lib.sh"

N=${1:-50}
STATIC=$(ls -t "$ORGW_ROOT"/dist/orgw-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
[ -n "$STATIC" ] || { echo "cgi-start: no dist tarball; run make dist" >&2; exit 1; }
orgw_start
mkdir -p "$ORGW_T/s"
tar -C "$ORGW_T/s" -xzf "$STATIC"
S=$(echo "$ORGW_T"/s/*/public_html/cgi-bin/orgw.fcgi)
D=$ORGW_ROOT/cgi-bin/orgw.fcgi
printf '# static  %s (%s bytes)\n# dynamic %s (%s bytes, not stripped)\n' \
	"$S" "$(stat -c %s "$S")" "$D" "$(stat -c %s "$D")"
python3 - "$N" "$ORGW_CONFIG_FILE" "$ORGW_KEY" "$S" "$D" <<'EOF'
import subprocess, sys, time, statistics
n, conf, key, static, dynamic = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
body = b'{"model":"deepseek/deepseek-v3.2","messages":[{"role":"user","content":"hi"}]}'
kinds = {"GET /healthz": ("GET", "/healthz", b""),
         "POST chat (non-streamed)": ("POST", "/v1/chat/completions", body)}
def run(binary, method, path, data):
    env = {"PATH": "/usr/bin:/bin", "ORGW_CONFIG": conf, "GATEWAY_INTERFACE": "CGI/1.1",
           "REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "/cgi-bin/orgw.fcgi",
           "SERVER_PROTOCOL": "HTTP/1.1", "CONTENT_LENGTH": str(len(data)),
           "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": "Bearer " + key}
    t0 = time.perf_counter()
    p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    out, _ = p.communicate(data)
    dt = (time.perf_counter() - t0) * 1000
    if not out.startswith(b"Status: 200"):
        sys.exit("cgi-start: %s %s: %r" % (binary, path, out[:200]))
    return dt
for label, (m, pth, data) in kinds.items():
    res = {static: [], dynamic: []}
    for i in range(n + 3):
        for b in (static, dynamic):
            dt = run(b, m, pth, data)
            if i >= 3:
                res[b].append(dt)
    for b, name in ((static, "static"), (dynamic, "dynamic")):
        v = sorted(res[b])
        print("%-26s %-8s median %6.2f ms  p90 %6.2f ms  (n=%d)" %
              (label, name, statistics.median(v), v[int(0.9 * (len(v) - 1))], len(v)))
EOF
for b in "$S" "$D"; do
	body='{"model":"deepseek/deepseek-v3.2","messages":[{"role":"user","content":"hi"}]}'
	rss=$(printf '%s' "$body" | env -i ORGW_CONFIG="$ORGW_CONFIG_FILE" \
		GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD=POST PATH_INFO=/v1/chat/completions \
		CONTENT_LENGTH=${#body} CONTENT_TYPE=application/json \
		HTTP_AUTHORIZATION="Bearer $ORGW_KEY" /usr/bin/time -f %M "$b" 2>&1 >/dev/null | tail -n 1)
	printf '%-26s %-8s max RSS %s KiB\n' "POST chat (non-streamed)" \
		"$([ "$b" = "$S" ] && echo static || echo dynamic)" "$rss"
done
