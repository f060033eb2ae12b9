#!/bin/bash
# t0180-messages: the Anthropic Messages API (docs/design.md section 11,
# docs/upstream.md section 13) through lighttpd and orgw, with curl: paths,
# both key styles, the headers forwarded and the ones that are not, errors
# in Anthropic's shape, the same lock as chat, the thinking budget kept
# below a clamped max_tokens, failover before the first token invisible (one
# message_start), a mid-stream failure told as an error event without
# message_stop, a stream finished by orgw's message_stop, 429 on the same
# provider, keep-alive comments, accounting in Anthropic's units with an
# estimated cost, count_tokens relayed and not counted, HEAD /, an id
# OpenRouter does not know (the (other) bucket) and MODEL_ALIASES.
. "$(dirname "$0")/../lib.sh"

orgw_start FAIL_LIMIT=100 RETRY_429_DELAYS=1 UPSTREAM_TIMEOUT_MS=5000 \
	MODEL_ALIASES=claude-sonnet-4-5-20250929=m/alias
M=deepseek/deepseek-v3.2

# post PATH BODY [CURL_ARG...]: one Messages request with the client key as
# x-api-key (HTTP_KEY= for none); HTTP_STATUS, HTTP_BODY, headers as for
# orgw_http.
post() {
	local path=$1 body=$2
	shift 2
	local -a args=(-sS --max-time 60 -o "$ORGW_T/m.body" -D "$ORGW_T/m.headers"
		-w '%{http_code}' -H 'Content-Type: application/json'
		--data-binary "$body")
	[ -n "${HTTP_KEY-$ORGW_KEY}" ] && args+=(-H "x-api-key: ${HTTP_KEY-$ORGW_KEY}")
	HTTP_HEADERS_FILE=$ORGW_T/m.headers
	HTTP_STATUS=$(curl "${args[@]}" "$@" "$ORGW_URL$path")
	HTTP_BODY=$(<"$ORGW_T/m.body")
}
req() { # MODEL [EXTRA JSON members]: a small Messages body
	printf '{"model":"%s","max_tokens":256,"messages":[{"role":"user","content":"Say hello."}]%s}' "$1" "${2:+,$2}"
}
count() { grep -c "^event: $1\$" <<<"$HTTP_BODY"; }
last_up() { json_get "$(double_ctl GET "log?limit=1&path=messages")" "j.requests[0].$1"; }
since() { json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0]?.seq ?? 0'; }
stat() { json_get "$(orgw_curl /stats)" "j.models['$1']?.$2"; }
etype() { json_get "$HTTP_BODY" 'j.type + " " + j.error.type'; }

# --- Paths, keys, headers ---------------------------------------------
post '/v1/messages?beta=true' "$(req $M)" -H 'anthropic-version: 2023-06-01' \
	-H 'anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14' \
	-H 'x-anthropic-beta: context-1m' -H 'x-claude-code-session-id: s-1'
t_eq "POST /v1/messages with x-api-key: 200, a message" "200 message" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type')"
t_eq "  the answer as upstream gave it" "Hello from deepseek" \
	"$(json_get "$HTTP_BODY" 'j.content[0].text')"
t_eq "  pinned like chat (scored on first use)" "deepseek scored" \
	"$(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"
up=$(double_ctl GET 'log?limit=1&path=messages')
t_eq "  upstream got /api/v1/messages?beta=true" "/api/v1/messages beta=true" \
	"$(json_get "$up" 'j.requests[0].path + " " + j.requests[0].query')"
t_eq "  with the upstream key as Bearer, never the client's" "Bearer $UPSTREAM_KEY" \
	"$(json_get "$up" 'j.requests[0].auth')"
t_eq "  no x-api-key upstream, the Anthropic headers as sent" \
	"true|2023-06-01|claude-code-20250219,interleaved-thinking-2025-05-14|context-1m" \
	"$(json_get "$up" '((h) => [!("x-api-key" in h), h["anthropic-version"], h["anthropic-beta"], h["x-anthropic-beta"]].join("|"))(j.requests[0].headers)')"
t_eq "  the pin in the body" '{"order":["deepseek"],"allow_fallbacks":false}' \
	"$(json_get "$up" 'JSON.stringify(j.requests[0].body.provider)')"
HTTP_KEY= post /messages "$(req $M)" -H "Authorization: Bearer $ORGW_KEY"
t_eq "POST /messages with Bearer: 200, on the same lock" "200 locked deepseek" \
	"$HTTP_STATUS $(http_header X-Orgw-Route) $(http_header X-Orgw-Provider)"
post /api/v1/messages "$(req $M)"
t_eq "POST /api/v1/messages: 200" 200 "$HTTP_STATUS"
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
t_eq "chat on the model: the same lock" "200 locked deepseek" \
	"$HTTP_STATUS $(http_header X-Orgw-Route) $(http_header X-Orgw-Provider)"

# --- Errors in Anthropic's shape ----------------------------------------
HTTP_KEY=wrong post /v1/messages "$(req $M)"
t_eq "a wrong x-api-key: 401 authentication_error" "401 error authentication_error" \
	"$HTTP_STATUS $(etype)"
HTTP_KEY= post /v1/messages "$(req $M)"
t_eq "no key: 401 authentication_error" "401 error authentication_error" "$HTTP_STATUS $(etype)"
post /v1/messages '{"model":"m/x","max_tokens":5}'
t_eq "no messages: 400 invalid_request_error" "400 error invalid_request_error" "$HTTP_STATUS $(etype)"
t_match "  saying what is missing" "'messages' is required" "$HTTP_BODY"
post /v1/messages/batches '{}'
t_eq "another sub-path: 404 not_found_error" "404 error not_found_error" "$HTTP_STATUS $(etype)"
code=$(curl -sS -o "$ORGW_T/m.body" -D "$ORGW_T/m.headers" -w '%{http_code}' \
	-H "x-api-key: $ORGW_KEY" "$ORGW_URL/v1/messages")
HTTP_STATUS=$code HTTP_BODY=$(<"$ORGW_T/m.body")
t_eq "GET /v1/messages: 405 in the same shape, Allow: POST" "405 error invalid_request_error POST" \
	"$HTTP_STATUS $(etype) $(http_header Allow)"
post /v1/messages "$(req $M)" -H 'Content-Encoding: gzip'
t_eq "a gzip body: 415 invalid_request_error" "415 error invalid_request_error" "$HTTP_STATUS $(etype)"
post /v1/messages "$(req $M)" -H 'Content-Encoding: identity'
t_eq "Content-Encoding: identity is no encoding" 200 "$HTTP_STATUS"
orgw_restart_workers MAX_BODY_BYTES=2048
post /v1/messages "$(req $M "\"system\":\"$(head -c 3000 /dev/zero | tr '\0' x)\"")"
t_eq "a body over MAX_BODY_BYTES: 413 request_too_large" "413 error request_too_large" "$HTTP_STATUS $(etype)"
orgw_restart_workers -MAX_BODY_BYTES

# --- HEAD /, GET / -------------------------------------------------------
code=$(curl -sS -o /dev/null -w '%{http_code}' -I "$ORGW_URL/")
t_eq "HEAD / (Claude Code checks its base URL): 200" 200 "$code"
t_match "GET /: names the gateway and /status" 'orgw.*/status' "$(curl -sS "$ORGW_URL/")"

# --- Extended thinking: Claude Code's numbers, clamped --------------------
think='"max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":31999}'
cc() { printf '{"model":"%s","messages":[{"role":"user","content":"hi"}],%s}' "$1" "$think"; }
ep='[{"tag":"small","provider_name":"Small","max_completion_tokens":%d,"pricing":{"prompt":"0.000001","completion":"0.000002"},"uptime_last_30m":100,"status":0,"throughput_last_30m":{"p50":50}}]'
double_ctl PUT endpoints/m/think "$(printf "$ep" 16384)" >/dev/null
post /v1/messages "$(cc m/think)"
t_eq "thinking: 32000/31999 on an endpoint of 16384 answers 200" 200 "$HTTP_STATUS"
t_eq "  upstream got max_tokens 16384 and budget_tokens 16383" "16384 16383" \
	"$(last_up 'body.max_tokens + " " + j.requests[0].body.thinking.budget_tokens')"
double_ctl PUT endpoints/m/tiny "$(printf "$ep" 1024)" >/dev/null
post /v1/messages "$(cc m/tiny)"
t_eq "thinking: no budget fits 1024: the request goes as sent" "32000 31999" \
	"$(last_up 'body.max_tokens + " " + j.requests[0].body.thinking.budget_tokens')"
t_eq "  and OpenRouter's answer (no endpoint) becomes orgw's error" "error" \
	"$(json_get "$HTTP_BODY" 'j.type')"

# --- Streams -------------------------------------------------------------
s='"stream":true'
post /v1/messages "$(req $M "$s")"
t_eq "a stream: message_start, deltas, message_delta, message_stop" "1 3 1 1" \
	"$(count message_start) $(count content_block_delta) $(count message_delta) $(count message_stop)"
t_eq "  every data line after its event: line (the SDK dispatches on them)" \
	"$(grep -c '^data: ' <<<"$HTTP_BODY")" "$(grep -c '^event: ' <<<"$HTTP_BODY")"

# FAIL_LIMIT=100: a failure retries on the lock, which does not move.
lock=deepseek
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"match":{"tag":"deepseek","api":"messages"}}]}' >/dev/null
post /v1/messages "$(req $M "$s")"
t_eq "a 503 before anything: retried, one message_start, whole" "200 2 1 1 Hello from deepseek" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(count message_start) $(count message_stop) $(grep -o '"text":"[^"]*"' <<<"$HTTP_BODY" | cut -d'"' -f4 | tr -d '\n')"
double_ctl POST faults '{"faults":[{"kind":"error_in_200","code":529,"started":true,"match":{"tag":"deepseek","api":"messages"}}]}' >/dev/null
post /v1/messages "$(req $M "$s")"
t_eq "message_start and ping, then an error event: retried invisibly" "200 2 1 0 1" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(count message_start) $(count error) $(count message_stop)"
double_ctl POST faults "{\"faults\":[{\"kind\":\"cut_after\",\"chunks\":0,\"match\":{\"tag\":\"$lock\",\"api\":\"messages\"}}]}" >/dev/null
post /v1/messages "$(req $M "$s")"
t_eq "a drop after content_block_start: retried, one message_start" "200 2 1 1" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(count message_start) $(count message_stop)"
mid0=$(stat $M errors.mid_stream)
double_ctl POST faults "{\"faults\":[{\"kind\":\"midstream_error\",\"chunks\":2,\"match\":{\"tag\":\"$lock\",\"api\":\"messages\"}}]}" >/dev/null
post /v1/messages "$(req $M "$s")"
t_eq "an error after 2 deltas: the deltas, an error event, no message_stop" "2 1 0" \
	"$(count content_block_delta) $(count error) $(count message_stop)"
t_eq "  the error is Anthropic's" "error" \
	"$(grep -A1 '^event: error$' <<<"$HTTP_BODY" | sed -n 's/^data: //p' | json_get - 'j.type')"
t_eq "  counted as a mid-stream failure" "$((mid0 + 1))" "$(stat $M errors.mid_stream)"
double_ctl POST faults "{\"faults\":[{\"kind\":\"stall\",\"chunks\":1,\"match\":{\"tag\":\"$lock\",\"api\":\"messages\"}}]}" >/dev/null
orgw_restart_workers UPSTREAM_TIMEOUT_MS=1500
post /v1/messages "$(req $M "$s")"
t_eq "a stall after a delta: a timeout_error event, no message_stop" "timeout_error 0" \
	"$(grep -A1 '^event: error$' <<<"$HTTP_BODY" | sed -n 's/^data: //p' | json_get - 'j.error.type') $(count message_stop)"
orgw_restart_workers UPSTREAM_TIMEOUT_MS=5000
double_ctl POST faults "{\"faults\":[{\"kind\":\"no_done\",\"match\":{\"tag\":\"$lock\",\"api\":\"messages\"}}]}" >/dev/null
post /v1/messages "$(req $M "$s")"
t_eq "a stream ending after its stop_reason: orgw adds message_stop" "1 1 ok" \
	"$(count message_delta) $(count message_stop) $(grep 'api=messages' "$ORGW_LOG" | tail -1 | grep -o 'outcome=[a-z_]*' | cut -d= -f2)"
t_eq "  and message_stop is the last event" 'data: {"type":"message_stop"}' \
	"$(grep -v '^$' <<<"$HTTP_BODY" | tail -1)"

s0=$(since)
double_ctl POST faults "{\"faults\":[{\"kind\":\"status\",\"status\":429,\"retry_after\":1,\"match\":{\"tag\":\"$lock\",\"api\":\"messages\"}}]}" >/dev/null
post /v1/messages "$(req $M "$s")"
t_eq "a 429: retried on the same provider" "200 2 $lock,$lock" \
	"$HTTP_STATUS $(http_header X-Orgw-Attempts) $(json_get "$(double_ctl GET "log?since=$s0&path=messages")" 'j.requests.map(r => r.tag).join(",")')"

# Keep-alives: a first token after the 3 s the head is held.
post /v1/messages "$(req $M "$s" | sed 's/Say hello./Say hello. [double] {\\"first_token_delay_ms\\":4000,\\"keepalive_interval_ms\\":1000}/')"
t_check "a slow first token: keep-alive comments reached the client first" \
	awk '/^: keep-alive/ { k = 1 } /^event: message_start/ { exit !k }' <<<"$HTTP_BODY"
t_eq "  and one message_start, one message_stop" "1 1" "$(count message_start) $(count message_stop)"

# --- Accounting in Anthropic's units ------------------------------------
orgw_restart_workers HIT_RATE_EVIDENCE_TOKENS=1000000000
double_ctl POST config '{"prompt_cache":true}' >/dev/null
sys=$(head -c 4000 /dev/zero | tr '\0' s)
turn() { printf '{"model":"m/acct","max_tokens":100,%s"system":[{"type":"text","text":"%s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"%s"}]}' "$1" "$sys" "$2"; }
post /v1/messages "$(turn "" "first question")"
u1=$HTTP_BODY
post /v1/messages "$(turn "$s," "second question")"
u2=$(grep '^data: ' <<<"$HTTP_BODY" | sed 's/^data: //' | node -e '
let s = "", u = {}; process.stdin.on("data", (d) => s += d).on("end", () => {
  for (const l of s.split("\n")) { if (!l) continue; const o = JSON.parse(l);
    const x = o.type === "message_start" ? o.message.usage : o.usage;
    if (x) for (const [k, v] of Object.entries(x)) if (v !== null) u[k] = v; }
  console.log(JSON.stringify(u)); });')
want=$(json_get "[$u1,$u2]" '((a) => { const p = (u) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  return [p(a[0].usage) + p(a[1]), a[0].usage.cache_read_input_tokens + a[1].cache_read_input_tokens,
    a[0].usage.cache_creation_input_tokens + a[1].cache_creation_input_tokens, a[0].usage.output_tokens + a[1].output_tokens].join(" "); })(j)')
echo "# usage seen by the client: $u1 / $u2"
st=$(orgw_curl /stats)
t_eq "prompt = input + cache reads + cache writes; cached; cache writes; completion" \
	"$want" "$(json_get "$st" '((t) => [t.prompt, t.cached, t.cache_write, t.completion].join(" "))(j.models["m/acct"].by_api.messages.tokens)')"
t_check "  the second turn read the first one's cache" json_ok "$u2" 'j.cache_read_input_tokens > 900'
t_check "  the first one wrote it" json_ok "$u1" 'j.usage.cache_creation_input_tokens > 900'
t_eq "  the reported cost kept, the stream's (no cost) estimated" \
	"$(json_get "$u1" 'j.usage.cost') true" \
	"$(json_get "$st" '((m) => (Math.round((m.cost_usd - m.cost_estimated_usd) * 1e12) / 1e12) + " " + (m.cost_estimated_usd > 0))(j.models["m/acct"].by_api.messages)')"
t_match "  the estimate is marked in the log" 'api=messages model=m/acct .*cost_estimated=1 cost_basis=endpoint .*stream=1' \
	"$(grep 'model=m/acct' "$ORGW_LOG" | tail -1)"
t_eq "  model totals hold the same tokens" \
	"$(json_get "$st" 'JSON.stringify(j.models["m/acct"].by_api.messages.tokens)')" \
	"$(json_get "$st" 'JSON.stringify(j.models["m/acct"].tokens)')"
double_ctl POST config '{"prompt_cache":false}' >/dev/null

# --- count_tokens: forwarded unpinned, relayed, not counted ---------------
n0=$(stat $M requests)
post /v1/messages/count_tokens "$(req $M)" -H 'anthropic-version: 2023-06-01'
t_eq "count_tokens: OpenRouter's answer relayed (404, its body)" "404 not_found_error" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type')"
up=$(double_ctl GET 'log?limit=1&path=count_tokens')
t_eq "  forwarded unpinned, with the Anthropic headers" "undefined 2023-06-01" \
	"$(json_get "$up" 'JSON.stringify(j.requests[0].body?.provider) + " " + j.requests[0].headers["anthropic-version"]')"
t_eq "  not counted per model" "$n0" "$(stat $M requests)"
t_match "  logged" 'api=messages path=/messages/count_tokens status=404' "$(grep count_tokens "$ORGW_LOG" | tail -1)"

# --- Ids: an alias, and one OpenRouter does not know ----------------------
post /v1/messages "$(req claude-sonnet-4-5-20250929)"
t_eq "MODEL_ALIASES: Claude Code's own id is routed as its slug" "200 m/alias" \
	"$HTTP_STATUS $(last_up 'body.model')"
t_match "  logged with what the client asked for" 'model=m/alias alias_of=claude-sonnet-4-5-20250929 ' \
	"$(grep 'alias_of' "$ORGW_LOG" | tail -1)"
post /v1/messages "$(req claude-haiku-4-5)"
t_eq "an id without endpoints: OpenRouter's 400 relayed, unpinned" "400 unpinned" \
	"$HTTP_STATUS $(http_header X-Orgw-Route)"
s0=$(since)
for _ in 1 2 3 4 5 6 7 8; do post /v1/messages "$(req claude-haiku-4-5)"; done
t_check "  asked 8 times more: fetched once a worker at most (4)" test \
	"$(json_get "$(double_ctl GET "log?since=$s0&path=endpoints")" 'j.requests.length')" -le 3
t_eq "  all counted under (other)" 9 "$(stat '(other)' requests)"
keys=$(flock -s "$ORGW_STATE.lock" gdbmtool -r "$ORGW_STATE" list 2>/dev/null | awk '{print $1}' | grep -c 'claude-haiku')
t_eq "  no state of its own" 0 "$keys"
