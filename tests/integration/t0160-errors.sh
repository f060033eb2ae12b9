#!/bin/bash
# t0160-errors: the gateway's own errors are OpenAI-shaped JSON with the
# right status; the upstream key appears in no response and no log line.
. "$(dirname "$0")/../lib.sh"

orgw_start MAX_BODY_BYTES=65536
M=deepseek/deepseek-v3.2
ok_body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
ALL="$ORGW_T/all-responses"
: >"$ALL"
keep() { cat "$HTTP_HEADERS_FILE" "$HTTP_BODY_FILE" >>"$ALL"; }

shape() { # DESC STATUS CODE: last response has that status and error shape
	keep
	t_eq "$1: status $2" "$2" "$HTTP_STATUS"
	t_eq "$1: OpenAI error shape" "string string $3" \
		"$(json_get "$HTTP_BODY" 'typeof j.error.message + " " + typeof j.error.type + " " + j.error.code')"
	t_match "$1: JSON content type" '^application/json' "$(http_header Content-Type)"
}

HTTP_KEY=wrong orgw_http POST /v1/chat/completions "$ok_body"
shape "wrong key" 401 invalid_api_key
HTTP_KEY= orgw_http POST /v1/chat/completions "$ok_body"
shape "missing key" 401 invalid_api_key
HTTP_KEY="${ORGW_KEY}x" orgw_http POST /v1/chat/completions "$ok_body"
shape "key with extra bytes" 401 invalid_api_key
HTTP_KEY="${ORGW_KEY%?}" orgw_http POST /v1/chat/completions "$ok_body"
shape "key prefix" 401 invalid_api_key
HTTP_KEY=wrong orgw_http GET /stats
shape "stats without the key" 401 invalid_api_key
orgw_http POST /v1/chat/completions '{"model": "x", "messages": [}'
shape "malformed JSON" 400 invalid_request
orgw_http POST /v1/chat/completions '[1,2]'
shape "JSON array body" 400 invalid_request
orgw_http POST /v1/chat/completions "{\"model\":\"$M\"}"
shape "missing messages" 400 invalid_request
t_eq "missing messages names the param" messages "$(json_get "$HTTP_BODY" 'j.error.param')"
orgw_http POST /v1/chat/completions '{"model":"a/b\r\nX-Evil: 1","messages":[]}'
shape "model with CR/LF" 400 invalid_request
head -c 70000 /dev/zero | tr '\0' 'a' | sed 's/^/{"model":"m","messages":[],"pad":"/; s/$/"}/' >"$ORGW_T/big.json"
orgw_http POST /v1/chat/completions @"$ORGW_T/big.json"
shape "body over MAX_BODY_BYTES" 413 request_too_large
orgw_http GET /v1/nothing-here
shape "unknown path" 404 not_found
orgw_http GET /v1/chat/completions
shape "GET on the chat path" 405 method_not_allowed
t_eq "405 carries Allow: POST" POST "$(http_header Allow)"
orgw_http POST /healthz '{}'
shape "POST on healthz" 405 method_not_allowed

# Upstream errors are relayed with upstream's status and body.
double_ctl POST faults '{"faults":[{"kind":"status","status":402}]}' >/dev/null
orgw_http POST /v1/chat/completions "$ok_body"
keep
t_eq "upstream 402 relayed" 402 "$HTTP_STATUS"
t_match "upstream 402 body relayed" 'requires more credits' "$HTTP_BODY"

# Normal traffic, then look for the keys everywhere.
orgw_http POST /v1/chat/completions "$ok_body"
keep
orgw_http POST /v1/chat/completions "${ok_body%\}},\"stream\":true}"
keep
orgw_http GET /stats
keep
orgw_http GET /v1/models
keep
orgw_http GET /healthz
keep
t_eq "the upstream key is in no response (headers and bodies)" 0 \
	"$(grep -c -- "$UPSTREAM_KEY" "$ALL")"
t_eq "the client key is in no response" 0 "$(grep -c -- "$ORGW_KEY" "$ALL")"
t_eq "the upstream key is in no log line" 0 \
	"$(cat "$ORGW_LOG" "$ORGW_LIGHTTPD_LOG" | grep -c -- "$UPSTREAM_KEY")"
t_eq "the client key is in no log line" 0 \
	"$(cat "$ORGW_LOG" "$ORGW_LIGHTTPD_LOG" | grep -c -- "$ORGW_KEY")"
t_eq "message content is in no log line" 0 "$(grep -c '"hi"' "$ORGW_LOG")"

# Fail closed: no client key configured -> every API call 503, healthz says why.
orgw_restart_workers -CUSTOM_ACCESS_KEY
orgw_http POST /v1/chat/completions "$ok_body"
shape "no client key configured" 503 not_configured
orgw_http GET /healthz
t_eq "healthz 503 without a client key" 503 "$HTTP_STATUS"
t_match "healthz says why" 'CUSTOM_ACCESS_KEY' "$(json_get "$HTTP_BODY" 'j.reason')"
orgw_restart_workers CUSTOM_ACCESS_KEY=
orgw_http GET /healthz
t_eq "an empty client key is refused (503)" 503 "$HTTP_STATUS"
t_eq "healthz (no one can send a client key): the generic reason" \
	"configuration refused; see the log" "$(json_get "$HTTP_BODY" 'j.reason')"
t_match "the log names the empty key" 'CUSTOM_ACCESS_KEY is empty' "$(cat "$ORGW_LOG")"
orgw_restart_workers CUSTOM_ACCESS_KEY=client-test-key HIT_RATE=1.5
orgw_http GET /healthz
t_eq "an invalid HIT_RATE makes healthz 503" 503 "$HTTP_STATUS"
t_match "and the reason names HIT_RATE" 'HIT_RATE' "$(json_get "$HTTP_BODY" 'j.reason')"
HTTP_KEY= orgw_http GET /healthz
t_eq "without the client key: 503 and a generic reason, no setting value" \
	"503 configuration refused; see the log" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.reason')"
t_check "--check-config refuses it too (exit 2)" \
	sh -c "ORGW_CONFIG='$ORGW_CONFIG_FILE' '$ORGW_ROOT/cgi-bin/orgw.fcgi' --check-config; test \$? -eq 2"
