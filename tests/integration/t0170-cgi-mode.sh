#!/bin/bash
# t0170-cgi-mode: the same binary run once per request as a plain CGI
# program (RFC 3875: variables in the environment, body on stdin, headers
# and body on stdout) answers like the FastCGI workers.
. "$(dirname "$0")/../lib.sh"

orgw_start
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
M=deepseek/deepseek-v3.2

cgi() { # METHOD PATH_INFO [BODY]: runs one CGI request, output on stdout
	local body=${3-}
	printf '%s' "$body" | env -i PATH="$PATH" ORGW_CONFIG="$ORGW_CONFIG_FILE" \
		GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD="$1" PATH_INFO="$2" \
		SCRIPT_NAME=/cgi-bin/orgw.fcgi REQUEST_URI="/cgi-bin/orgw.fcgi$2" \
		CONTENT_LENGTH="${#body}" CONTENT_TYPE=application/json \
		HTTP_AUTHORIZATION="Bearer ${KEY-$ORGW_KEY}" \
		"$BIN" 2>>"$ORGW_T/cgi.log"
}
body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

out=$(cgi GET /healthz)
t_match "CGI healthz: Status 200" '^Status: 200' "$out"
t_match "CGI healthz: ok" '"status":"ok"' "$out"

out=$(cgi POST /v1/chat/completions "$body")
t_match "CGI chat: Status 200" '^Status: 200' "$out"
t_match "CGI chat: route header" 'X-Orgw-Route: scored' "$out"
t_match "CGI chat: the answer" '"content":"Hello from deepseek"' "$out"

out=$(cgi POST /v1/chat/completions "${body%\}},\"stream\":true}")
t_match "CGI stream: event-stream" 'Content-Type: text/event-stream' "$out"
t_match "CGI stream: uses the lock the CGI run wrote" 'X-Orgw-Route: locked' "$out"
t_match "CGI stream: ends with [DONE]" 'data: \[DONE\]' "$out"

# The FastCGI workers share the state the CGI runs wrote.
orgw_http POST /v1/chat/completions "$body"
t_eq "FastCGI sees the CGI lock" "200 locked deepseek" \
	"$HTTP_STATUS $(http_header X-Orgw-Route) $(http_header X-Orgw-Provider)"
orgw_http GET /stats
t_eq "/stats counts the CGI and FastCGI requests together" 3 \
	"$(json_get "$HTTP_BODY" "j.models['$M'].requests")"

out=$(KEY=wrong cgi POST /v1/chat/completions "$body")
t_match "CGI wrong key: 401" '^Status: 401' "$out"
out=$(cgi POST /v1/chat/completions '{"model":')
t_match "CGI malformed JSON: 400" '^Status: 400' "$out"
out=$(printf 'short' | env -i PATH="$PATH" ORGW_CONFIG="$ORGW_CONFIG_FILE" \
	REQUEST_METHOD=POST PATH_INFO=/v1/chat/completions CONTENT_LENGTH=500 \
	HTTP_AUTHORIZATION="Bearer $ORGW_KEY" "$BIN" 2>/dev/null)
t_match "CGI body shorter than CONTENT_LENGTH: 400" '^Status: 400' "$out"
out=$(env -i PATH="$PATH" ORGW_CONFIG="$ORGW_CONFIG_FILE" REQUEST_METHOD=POST \
	PATH_INFO=/v1/chat/completions CONTENT_LENGTH=abc \
	HTTP_AUTHORIZATION="Bearer $ORGW_KEY" "$BIN" </dev/null 2>/dev/null)
t_match "CGI CONTENT_LENGTH not a number: 400" '^Status: 400' "$out"
