#!/bin/bash
# t0760-hostile-input: oversized and malformed input from the client side,
# through lighttpd, straight over FastCGI (cgi-fcgi on the
# workers' socket, past the web server's own limits) and in plain CGI mode:
#   - a 100 KB path and a 100 KB Authorization header;
#   - JSON nested 100000 deep (cJSON stops at 1000: a 400), and 990 deep
#     (legal: forwarded);
#   - model names with CR/LF, NUL, ESC and other control bytes: refused,
#     never reflected raw into a response header or a log line;
#   - hostile Content-Length values.
# Every answer is a clear status with an OpenAI-shaped JSON error; no
# worker crashes (same PIDs, no sanitizer/segfault line).
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start MAX_BODY_BYTES=8388608
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $BIN == /* ]] || BIN=$ORGW_ROOT/$BIN
SOCK=$ORGW_T/orgw.sock
pids=$(worker_set)
K100=$(head -c 102400 /dev/zero | tr '\0' 'k')
P100=/v1/$(head -c 102400 /dev/zero | tr '\0' 'p')

# fcgi NAME=VALUE... : one request straight to the workers' socket; sets
# F_STATUS (from the Status: line) and F_BODY (after the blank line).
fcgi() {
	local out
	out=$(env -i "$@" cgi-fcgi -bind -connect "$SOCK" </dev/null 2>&1)
	F_STATUS=$(printf '%s\n' "$out" | sed -n 's/^Status: \([0-9]*\).*/\1/p' | head -n 1)
	F_BODY=$(printf '%s\n' "$out" | sed -e '1,/^\r\{0,1\}$/d')
}
# cgi NAME=VALUE... : the same in plain CGI mode (the binary run once).
cgi() {
	local out
	out=$(env -i ORGW_CONFIG="$ORGW_CONFIG_FILE" GATEWAY_INTERFACE=CGI/1.1 "$@" "$BIN" </dev/null 2>>"$ORGW_T/cgi.err")
	F_STATUS=$(printf '%s\n' "$out" | sed -n 's/^Status: \([0-9]*\).*/\1/p' | head -n 1)
	F_BODY=$(printf '%s\n' "$out" | sed -e '1,/^\r\{0,1\}$/d')
}
openai_err() { json_ok "$1" 'typeof j.error.message === "string" && typeof j.error.type === "string"'; }

# 1. Through lighttpd: its own limits answer first.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$ORGW_URL$P100")
echo "# lighttpd, 100 KB path: $code"
t_match "100 KB path through lighttpd: refused with a 4xx" '^4[0-9][0-9]$' "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -H "Authorization: Bearer $K100" "$ORGW_URL/stats")
echo "# lighttpd, 100 KB Authorization: $code"
t_match "100 KB Authorization through lighttpd: refused with a 4xx" '^4[0-9][0-9]$' "$code"

# 2. Straight to the workers (what a web server with larger limits passes).
for mode in fcgi cgi; do
	$mode REQUEST_METHOD=GET PATH_INFO="$P100" REQUEST_URI="$P100"
	t_eq "$mode: 100 KB path: 404" 404 "$F_STATUS"
	t_check "$mode: 100 KB path: OpenAI error" openai_err "$F_BODY"
	$mode REQUEST_METHOD=GET REQUEST_URI="$P100?q=1"
	t_eq "$mode: 100 KB REQUEST_URI only: 404" 404 "$F_STATUS"
	$mode REQUEST_METHOD=GET PATH_INFO=/stats HTTP_AUTHORIZATION="Bearer $K100"
	t_eq "$mode: 100 KB Authorization: 401" 401 "$F_STATUS"
	t_check "$mode: 100 KB Authorization: OpenAI error" openai_err "$F_BODY"
	$mode REQUEST_METHOD=GET PATH_INFO=/healthz HTTP_AUTHORIZATION="$K100"
	t_eq "$mode: 100 KB Authorization on healthz (no auth needed): 200" 200 "$F_STATUS"
	$mode REQUEST_METHOD="$(head -c 65536 /dev/zero | tr '\0' 'G')" PATH_INFO=/stats
	t_eq "$mode: 64 KB method name: 405" 405 "$F_STATUS"
	for cl in 18446744073709551616 -1 1e3 0x10 99999999999999999999999; do
		$mode REQUEST_METHOD=POST PATH_INFO=/v1/chat/completions \
			HTTP_AUTHORIZATION="Bearer $ORGW_KEY" CONTENT_LENGTH="$cl"
		t_match "$mode: Content-Length $cl: 400 or 413" '^(400|413)$' "$F_STATUS"
	done
	$mode REQUEST_METHOD=POST PATH_INFO=/v1/chat/completions \
		HTTP_AUTHORIZATION="Bearer $ORGW_KEY" CONTENT_LENGTH=100
	t_eq "$mode: Content-Length 100 with no body: 400" 400 "$F_STATUS"
done
t_eq "CGI mode wrote nothing alarming to stderr" 0 \
	"$(grep -cE 'runtime error|Sanitizer|SEGV' "$ORGW_T/cgi.err")"

# 3. JSON nesting depth.
deep() { # N: a body whose messages hold N nested arrays
	node -e 'const n = +process.argv[1];
process.stdout.write("{\"model\":\"deepseek/deepseek-v3.2\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"x\":" + "[".repeat(n) + "]".repeat(n) + "}]}");' "$1" >"$ORGW_T/deep.json"
}
deep 100000
orgw_http POST /v1/chat/completions @"$ORGW_T/deep.json"
t_eq "100000-deep JSON: 400" 400 "$HTTP_STATUS"
t_check "  OpenAI error" openai_err "$HTTP_BODY"
node -e 'process.stdout.write("[".repeat(100000) + "]".repeat(100000))' >"$ORGW_T/deep2.json"
orgw_http POST /v1/chat/completions @"$ORGW_T/deep2.json"
t_eq "100000-deep bare array body: 400" 400 "$HTTP_STATUS"
node -e 'process.stdout.write("{\"a\":".repeat(100000) + "1" + "}".repeat(100000))' >"$ORGW_T/deep3.json"
orgw_http POST /v1/chat/completions @"$ORGW_T/deep3.json"
t_eq "100000-deep object body: 400" 400 "$HTTP_STATUS"
deep 990
orgw_http POST /v1/chat/completions @"$ORGW_T/deep.json"
t_eq "990-deep JSON (under cJSON's 1000): served" 200 "$HTTP_STATUS"

# 4. Model names with control bytes.
: >"$ORGW_T/all-headers"
for m in 'a/b\r\nX-Evil: 1' 'a/b\nX-Evil: 2' 'a/b\rX-Evil: 3' 'a/b\u0000X-Evil: 4' \
	'a/b\u001b[31mred' 'a/b\u007f' 'a/b\u0085X-Evil: 5' 'a/b\u2028X-Evil: 6' 'a/b c' 'a/b\tX' \
	"$(head -c 300 /dev/zero | tr '\0' 'm')"; do
	orgw_http POST /v1/chat/completions "{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
	cat "$HTTP_HEADERS_FILE" >>"$ORGW_T/all-headers"
	# 'a/b\u0000X...' included: cJSON would read "a/b", the upstream
	# reads the whole string, which is no valid model id.
	t_eq "model '${m:0:40}': 400" 400 "$HTTP_STATUS"
	t_eq "model '${m:0:40}': param model" model "$(json_get "$HTTP_BODY" j.error.param)"
done
t_eq "no injected header in any response" 0 "$(grep -ci 'x-evil' "$ORGW_T/all-headers")"
t_eq "no bare CR inside a header line" 0 \
	"$(awk '{ sub(/\r$/, ""); if (index($0, "\r")) n++ } END { print n + 0 }' "$ORGW_T/all-headers")"
t_eq "no log line starts with an injected header" 0 "$(grep -c '^X-Evil' "$ORGW_LOG")"
t_eq "no raw CR or ESC in the worker log" 0 "$(grep -c $'[\r\x1b]' "$ORGW_LOG")"
t_eq "the double never saw a model with control bytes" 0 \
	"$(json_get "$(double_ctl GET 'log?path=chat')" 'j.requests.filter(r => /[\x00-\x1f\x7f]/.test(r.model || "")).length')"

orgw_http GET /healthz
t_eq "healthz 200 after all that" 200 "$HTTP_STATUS"
assert_no_crash "hostile input" "$pids"
