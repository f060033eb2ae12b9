#!/bin/bash
# t0100-proxy: the official openai client gets a non-streamed and a streamed
# completion through lighttpd + orgw.fcgi; upstream sees the OpenRouter key
# (never the client key) and the pin for the best-scored endpoint.
. "$(dirname "$0")/../lib.sh"

orgw_start
M=deepseek/deepseek-v3.2

out=$(orgw_chat --model $M)
t_eq "non-streamed completion succeeds" true "$(json_get "$out" 'j.ok')"
t_eq "non-streamed content is the double's" "Hello from deepseek" \
	"$(json_get "$out" 'j.content')"
t_eq "first request scores inline (route scored)" scored \
	"$(json_get "$out" 'j.headers["x-orgw-route"]')"
t_eq "X-Orgw-Provider names the best tag" deepseek \
	"$(json_get "$out" 'j.headers["x-orgw-provider"]')"
t_eq "X-Orgw-Attempts is 1" 1 "$(json_get "$out" 'j.headers["x-orgw-attempts"]')"
t_eq "usage reaches the client" 3 "$(json_get "$out" 'j.usage.completion_tokens')"

out=$(orgw_chat --model $M --stream)
t_eq "streamed completion succeeds" true "$(json_get "$out" 'j.ok')"
t_eq "streamed content is complete" "Hello from deepseek" \
	"$(json_get "$out" 'j.content')"
t_eq "stream ended with [DONE]" true "$(json_get "$out" 'j.done')"
t_eq "stream finish_reason stop" stop "$(json_get "$out" 'j.finish_reason')"
t_eq "second request uses the lock" locked \
	"$(json_get "$out" 'j.headers["x-orgw-route"]')"

log=$(double_ctl GET "log?path=chat/completions")
t_eq "upstream saw two chat requests" 2 "$(json_get "$log" 'j.requests.length')"
t_eq "upstream got the OpenRouter key every time" \
	"Bearer $UPSTREAM_KEY,Bearer $UPSTREAM_KEY" \
	"$(json_get "$log" 'j.requests.map(r => r.auth).join(",")')"
t_eq "the client key never reached upstream" 0 \
	"$(json_get "$(double_ctl GET log)" \
		"JSON.stringify(j).split('$ORGW_KEY').length - 1")"
t_eq "pinned with order [best tag] and no fallbacks" \
	'{"order":["deepseek"],"allow_fallbacks":false}' \
	"$(json_get "$log" 'JSON.stringify(j.requests[0].body.provider)')"
t_eq "the stream request is pinned too" \
	'{"order":["deepseek"],"allow_fallbacks":false}' \
	"$(json_get "$log" 'JSON.stringify(j.requests[1].body.provider)')"
t_eq "the endpoints fetch used the OpenRouter key" "Bearer $UPSTREAM_KEY" \
	"$(json_get "$(double_ctl GET "log?path=endpoints")" 'j.requests[0].auth')"

# max_tokens above the pinned endpoint's cap is clamped (65536 for deepseek).
out=$(orgw_chat --model $M --max-tokens 100000)
t_eq "a max_tokens above the endpoint cap still succeeds" true \
	"$(json_get "$out" 'j.ok')"
t_eq "max_tokens clamped to the endpoint's max_completion_tokens" 65536 \
	"$(json_get "$(double_ctl GET "log?path=chat&limit=1")" \
		'j.requests[0].body.max_tokens')"

# /api/v1 is the same as /v1 (both base URLs work).
out=$(node tests/js/chat.mjs --base "$ORGW_URL/api/v1" --key "$ORGW_KEY" --model $M)
t_eq "base URL .../api/v1 works too" true "$(json_get "$out" 'j.ok')"

# Every request is logged as one key=value line, without keys or content.
# (orgw_start's GET /healthz has its own line: t0590.)
t_eq "one log line per chat request" 4 "$(grep -c ': req: .*model=' "$ORGW_LOG")"
t_match "log line has the fields of docs/design.md section 9" \
	'time=[0-9]+ api=chat model=deepseek/deepseek-v3.2 route=[a-z]+ provider=deepseek status=200 attempts=1 ttfb_ms=[0-9]+ total_ms=[0-9]+ prompt=[0-9]+ cached=[0-9]+ cache_write=[0-9]+ completion=3 cost=' \
	"$(grep ': req: .*model=' "$ORGW_LOG" | head -1)"

# /v1/models passes OpenRouter's list through.
orgw_http GET /v1/models
t_eq "GET /v1/models is 200" 200 "$HTTP_STATUS"
t_check "GET /v1/models lists the model" json_ok "$HTTP_BODY_FILE" \
	"j.data.some(m => m.id === '$M')"
