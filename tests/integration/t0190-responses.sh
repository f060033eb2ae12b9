#!/bin/bash
# t0190-responses: the Responses API (docs/design.md section 11,
# docs/upstream.md section 14) through lighttpd and orgw, with curl: paths,
# X-OpenRouter-Metadata sent and the provider it names read back, the output
# limit clamped under its own name, OpenAI-shaped errors, a Codex-sized
# request (40 KB, 9 tools, echoed in response.created and
# response.in_progress) failing over before its first delta without the
# held-back bound cutting it, a mid-stream failure told as response.failed
# without response.completed, response.incomplete as an answer, a breaker
# trip moving the lock for every API, and accounting in OpenAI's units.
. "$(dirname "$0")/../lib.sh"

orgw_start FAIL_LIMIT=100 UPSTREAM_TIMEOUT_MS=5000
M=deepseek/deepseek-v3.2

post() { # PATH BODY [CURL_ARG...]
	local path=$1 body=$2
	shift 2
	HTTP_HEADERS_FILE=$ORGW_T/r.headers
	HTTP_STATUS=$(curl -sS --max-time 60 -o "$ORGW_T/r.body" -D "$ORGW_T/r.headers" \
		-w '%{http_code}' -H 'Content-Type: application/json' \
		-H "Authorization: Bearer $ORGW_KEY" --data-binary "$body" "$@" "$ORGW_URL$path")
	HTTP_BODY=$(<"$ORGW_T/r.body")
}
req() { printf '{"model":"%s","input":"Say hello."%s}' "$1" "${2:+,$2}"; }
types() { sed -n 's/^data: {"type":"\([a-z_.]*\)".*/\1/p' <<<"$HTTP_BODY"; }
count() { types | grep -c "^$1\$"; }
last_up() { json_get "$(double_ctl GET "log?limit=1&path=responses")" "j.requests[0].$1"; }
stat() { json_get "$(orgw_curl /stats)" "j.models['$1']?.$2"; }

post /v1/responses "$(req $M)"
t_eq "POST /v1/responses: 200, a completed response" "200 completed response" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.status + " " + j.object')"
t_eq "  its text" "Hello from deepseek" "$(json_get "$HTTP_BODY" 'j.output[0].content[0].text')"
t_eq "  pinned, upstream asked for router metadata" '{"order":["deepseek"],"allow_fallbacks":false} enabled' \
	"$(last_up 'body.provider') $(last_up 'headers["x-openrouter-metadata"]')"
t_eq "  the provider it names is the pinned one: no off-pin" 0 "$(stat $M off_pin)"
post /responses "$(req $M '"max_output_tokens":999999')"
t_eq "POST /responses: max_output_tokens clamped to the endpoint's 65536" "200 65536" \
	"$HTTP_STATUS $(last_up 'body.max_output_tokens')"
post /api/v1/responses "$(req $M '"stream":true')"
t_eq "a stream: created, in_progress, deltas, completed, [DONE]" "1 1 3 1 1" \
	"$(count response.created) $(count response.in_progress) $(count response.output_text.delta) $(count response.completed) $(grep -c '^data: \[DONE\]' <<<"$HTTP_BODY")"

post /v1/responses '{"model":"m/x","messages":[]}'
t_eq "no input: 400, OpenAI-shaped" "400 invalid_request_error input" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type + " " + j.error.param')"
HTTP_STATUS=$(curl -sS -o "$ORGW_T/r.body" -w '%{http_code}' -H "Authorization: Bearer $ORGW_KEY" \
	"$ORGW_URL/v1/responses/resp_123")
HTTP_BODY=$(<"$ORGW_T/r.body")
t_eq "GET /v1/responses/{id}: 404 (nothing but the fixed paths goes upstream)" "404 not_found" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"

# A Codex-sized request: ~40 KB of instructions and 9 tools, which
# response.created and response.in_progress both echo (80 KB held before
# the first delta, over 64 KiB).
big=$(node -e '
const tools = [];
for (let i = 0; i < 9; i++) tools.push({ type: "function", name: "tool" + i, description: "d".repeat(3000),
  parameters: { type: "object", properties: { a: { type: "string", description: "p".repeat(500) } } }, strict: false });
process.stdout.write(JSON.stringify({ model: process.argv[1], instructions: "You are Codex. ".repeat(800),
  input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Say hello." }] }],
  tools, tool_choice: "auto", parallel_tool_calls: false, reasoning: { summary: "auto" }, store: false,
  stream: true, include: ["reasoning.encrypted_content"], prompt_cache_key: "s-1" }));' $M)
echo "# Codex-sized body: ${#big} bytes"
double_ctl POST faults '{"faults":[{"kind":"error_in_200","code":502,"match":{"tag":"deepseek","api":"responses"}}]}' >/dev/null
post /v1/responses "$big"
t_eq "40 KB + 9 tools, response.failed after the echoes: retried invisibly" "200 2 1 1 1 0" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(count response.created) $(count response.in_progress) $(count response.completed) $(count response.failed)"
t_check "  the echoes held back were over 64 KiB" test \
	"$(grep '^data: {"type":"response.\(created\|in_progress\)"' <<<"$HTTP_BODY" | wc -c)" -gt 65536
double_ctl POST faults '{"faults":[{"kind":"cut_after","chunks":0,"match":{"tag":"deepseek","api":"responses"}}]}' >/dev/null
post /v1/responses "$big"
t_eq "  a drop before the first delta: retried, one response.created" "200 2 1 1" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(count response.created) $(count response.completed)"

mid0=$(stat $M errors.mid_stream)
double_ctl POST faults '{"faults":[{"kind":"midstream_error","chunks":2,"match":{"tag":"deepseek","api":"responses"}}]}' >/dev/null
post /v1/responses "$(req $M '"stream":true')"
t_eq "an error after 2 deltas: the deltas, response.failed, no response.completed" "2 1 0" \
	"$(count response.output_text.delta) $(count response.failed) $(count response.completed)"
t_eq "  the failed response says so" "failed" \
	"$(grep '^data: {"type":"response.failed"' <<<"$HTTP_BODY" | tail -1 | sed 's/^data: //' | json_get - 'j.response.status')"
t_eq "  counted as a mid-stream failure" "$((mid0 + 1))" "$(stat $M errors.mid_stream)"
double_ctl POST faults '{"faults":[{"kind":"no_done","match":{"tag":"deepseek","api":"responses"}}]}' >/dev/null
post /v1/responses "$(req $M '"stream":true')"
t_eq "response.completed without [DONE]: complete, nothing added" "1 0 response.completed" \
	"$(count response.completed) $(grep -c '^data: \[DONE\]' <<<"$HTTP_BODY") $(types | tail -1)"
ok0=$(stat $M ok)
post /v1/responses "$(req $M '"stream":true,"max_output_tokens":2')"
t_eq "max_output_tokens reached: response.incomplete is an answer" "1 $((ok0 + 1))" \
	"$(count response.incomplete) $(stat $M ok)"
double_ctl POST faults '{"faults":[{"kind":"error_in_200","code":503,"match":{"tag":"deepseek","api":"responses","stream":false}}]}' >/dev/null
post /v1/responses "$(req $M)"
t_eq "a failed response in a 200, not streamed: retried" "200 2 completed" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(json_get "$HTTP_BODY" 'j.status')"

# A breaker trip on Responses moves the lock the other APIs use too.
orgw_restart_workers FAIL_LIMIT=1
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"match":{"tag":"deepseek","api":"responses"}}]}' >/dev/null
post /v1/responses "$(req $M '"stream":true')"
t_eq "a 503 trips deepseek: the request goes on on the next candidate" "200 relocked deepinfra/fp8 2" \
	"$HTTP_STATUS $(http_header X-Orgw-Route) $(http_header X-Orgw-Provider) $(http_header X-Orgw-Attempts)"
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
t_eq "  and chat follows the same lock" "locked deepinfra/fp8" \
	"$(http_header X-Orgw-Route) $(http_header X-Orgw-Provider)"
curl -sS -o /dev/null -D "$ORGW_T/m.headers" -H "x-api-key: $ORGW_KEY" -H 'Content-Type: application/json' \
	--data-binary "{\"model\":\"$M\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$ORGW_URL/v1/messages"
HTTP_HEADERS_FILE=$ORGW_T/m.headers
t_eq "  and Messages too" "locked deepinfra/fp8" \
	"$(http_header X-Orgw-Route) $(http_header X-Orgw-Provider)"
t_eq "/stats: one trip" 1 "$(stat $M breaker_trips)"

# Accounting in OpenAI's units: input_tokens includes the cached ones.
double_ctl POST config '{"prompt_cache":true}' >/dev/null
long=$(head -c 6000 /dev/zero | tr '\0' c)
post /v1/responses "$(printf '{"model":"m/resp","instructions":"%s","input":"one","stream":true}' "$long")"
post /v1/responses "$(printf '{"model":"m/resp","instructions":"%s","input":"two","stream":true}' "$long")"
u=$(grep '^data: {"type":"response.completed"' <<<"$HTTP_BODY" | sed 's/^data: //' | json_get - 'JSON.stringify(j.response.usage)')
echo "# second turn's usage: $u"
t_check "  the second turn was served from the cache" json_ok "$u" 'j.input_tokens_details.cached_tokens > 1000'
st=$(orgw_curl /stats)
t_eq "  by_api.responses: prompt and cached as the client saw them (both turns)" \
	"$(json_get "$st" '((t) => t.prompt + " " + t.cached)(j.models["m/resp"].tokens)')" \
	"$(json_get "$st" '((t) => t.prompt + " " + t.cached)(j.models["m/resp"].by_api.responses.tokens)')"
t_eq "  the second turn's cached tokens are in the total" true \
	"$(json_get "$st" "j.models['m/resp'].tokens.cached >= $(json_get "$u" 'j.input_tokens_details.cached_tokens')")"
t_eq "  its cost as the stream reported it (not estimated)" "0" \
	"$(json_get "$st" 'j.models["m/resp"].cost_estimated_usd')"
t_match "  the log line says api=responses" 'api=responses model=m/resp ' "$(grep 'model=m/resp' "$ORGW_LOG" | tail -1)"
