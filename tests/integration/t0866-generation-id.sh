#!/bin/bash
# t0866-generation-id: upstream's X-Generation-Id reaches the client on
# every API, streamed and not (clients such as OpenRouter's own Claude
# Code statusline look the cost up with it): the same id the double sent
# (its body's id on chat; the generation the double's GET /generation
# knows).  On Messages it is also Anthropic's request-id header, and an
# Anthropic-shaped error orgw makes carries "request_id": upstream's id
# after an upstream attempt (an error event before the first token), null
# when nothing went upstream (a body orgw refuses).
. "$(dirname "$0")/../lib.sh"

orgw_start MAX_ATTEMPTS=1
M=deepseek/deepseek-v3.2
body() { # API STREAM
	case $1 in
	chat) printf '{"model":"%s","stream":%s,"messages":[{"role":"user","content":"hi"}]}' "$M" "$2" ;;
	messages) printf '{"model":"%s","stream":%s,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' "$M" "$2" ;;
	responses) printf '{"model":"%s","stream":%s,"input":"hi"}' "$M" "$2" ;;
	esac
}
declare -A P=([chat]=/v1/chat/completions [messages]=/v1/messages [responses]=/v1/responses)
# known ID: the double has a generation of that id (GET /api/v1/generation).
known() {
	curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $UPSTREAM_KEY" \
		"$DOUBLE_URL/api/v1/generation?id=$1"
}
for api in chat messages responses; do
	for st in false true; do
		orgw_http POST "${P[$api]}" "$(body $api $st)"
		id=$(http_header X-Generation-Id)
		t_match "$api stream=$st: 200 with X-Generation-Id" '^200 gen-[A-Za-z0-9_-]+$' "$HTTP_STATUS $id"
		t_eq "$api stream=$st: ... a generation the double made" 200 "$(known "$id")"
		if [ $api = messages ]; then
			t_eq "$api stream=$st: ... and the same request-id" "$id" "$(http_header request-id)"
		fi
		if [ $api = chat ] && [ $st = false ]; then
			t_eq "chat: ... the id of the answer's body" "$id" "$(json_get "$HTTP_BODY" 'j.id')"
		fi
	done
done
double_ctl POST faults '{"kind":"error_in_200","code":502,"times":1}' >/dev/null
orgw_http POST /v1/messages "$(body messages true)"
id=$(http_header X-Generation-Id)
t_match "Messages, an upstream error event before any token: orgw's 502 with X-Generation-Id" \
	'^502 gen-' "$HTTP_STATUS $id"
t_eq "... an Anthropic error whose request_id is that id, request-id the same" \
	"error api_error $id $id" \
	"$(json_get "$HTTP_BODY" '[j.type, j.error.type, j.request_id].join(" ")') $(http_header request-id)"
orgw_http POST /v1/messages '{"model":"'$M'","max_tokens":0,"messages":[]}'
t_eq "Messages, a body orgw refuses: 400, request_id null, no request-id header" \
	"400 invalid_request_error true " \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" '[j.error.type, j.request_id === null].join(" ")') $(http_header request-id)"
orgw_http POST /v1/chat/completions '{"model":"'$M'","max_tokens":0,"messages":[]}'
t_eq "chat, the same: OpenAI's shape, no request_id" "400 false" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" '"request_id" in j')"
t_check "no crash in the log" sh -c "! grep -Ei 'segfault|sanitizer|abort\\(' '$ORGW_LOG'"
