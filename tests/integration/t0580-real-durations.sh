#!/bin/bash
# t0580-real-durations: what counts as a first byte, a first token, a
# timeout and a failure when requests last as long as real generations
# (docs/design.md section 5).  Thresholds are scaled down:
# SLOW_THRESHOLD_MS 1000, UPSTREAM_TIMEOUT_MS 1500, REQUEST_TIMEOUT_MS 5000.
. "$(dirname "$0")/../lib.sh"

#
# Each case has a model of its own (the double serves any model with the
# endpoints alpha > beta > gamma), so one case's failures cannot move
# another's lock.
orgw_start SLOW_THRESHOLD_MS=1000 UPSTREAM_TIMEOUT_MS=1500 \
	REQUEST_TIMEOUT_MS=5000 FAIL_LIMIT=5 RETRY_429_DELAYS=1

stat() { # EXPR over the model's /stats entry `m`
	orgw_http GET /stats
	json_get "$HTTP_BODY" "((m) => ($1))(j.models['$M'])"
}
upstream_log() { # the double's chat requests since SEQ, to a file; prints its name
	double_ctl GET "log?path=/chat/completions&since=$1" >"$ORGW_T/ulog.json"
	printf '%s' "$ORGW_T/ulog.json"
}
last_seq() {
	json_get "$(double_ctl GET 'log?limit=1')" 'j.requests.length ? j.requests[0].seq : 0'
}
reset_double() {
	double_ctl POST config '{"first_token_delay_ms":0,"padding_bytes":0,"keepalive_interval_ms":5000,"chunks":3,"spacing_ms":0}' >/dev/null
	double_ctl DELETE faults >/dev/null
}

# 1. A non-streamed generation that takes 3 s: OpenRouter commits its 200
# and pads while the provider works.  The padding is the first byte; the
# time the JSON takes is generation time, not lag and not a timeout.
M=t0580/padded
reset_double
double_ctl POST config '{"first_token_delay_ms":3000,"padding_bytes":16,"keepalive_interval_ms":300,"chunks":5}' >/dev/null
seq=$(last_seq)
out=$(orgw_chat --model $M)
t_eq "a 3 s padded generation is answered whole, in one attempt" \
	"true 200 Hello from alpha w4 w5 1" \
	"$(json_get "$out" '[j.ok, j.status, j.content, j.headers["x-orgw-attempts"]].join(" ")')"
f=$(upstream_log "$seq")
t_eq "... sent upstream once, and not closed by orgw" "1 false" \
	"$(json_get "$f" 'j.requests.length + " " + j.requests[0].closed_by_client')"
t_eq "... counted as neither lag nor timeout" "0 0 0" \
	"$(stat '[m.errors.slow, m.errors.timeout, m.failures?.alpha ?? 0].join(" ")')"
t_match "... and its first byte was the padding (ttfb well under the 3 s)" \
	'ttfb_ms=[0-9]{1,3} ' "$(grep ": req: .*model=$M " "$ORGW_LOG" | tail -n 1)"

# 2. A padded generation longer than REQUEST_TIMEOUT_MS: the request ends
# at the bound, upstream is closed, nothing is sent again (it may have been
# billed).  orgw had committed a 200 with whitespace, so the client gets a
# 200 whose JSON is an OpenAI error object, as OpenRouter answers.
M=t0580/request-timeout
reset_double
double_ctl POST config '{"first_token_delay_ms":12000,"padding_bytes":16,"keepalive_interval_ms":300}' >/dev/null
seq=$(last_seq)
code=$(curl -sS --max-time 30 -o "$ORGW_T/rt.body" -w '%{http_code}' \
	-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
	-d "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"long\"}]}" \
	"$ORGW_URL/v1/chat/completions")
t_eq "REQUEST_TIMEOUT_MS: a 200 (committed) whose JSON is an OpenAI error" \
	"200 request_timeout" "$code $(json_get "$ORGW_T/rt.body" 'j.error.code')"
f=$(upstream_log "$seq")
t_eq "... sent upstream once, and closed by orgw before the answer came" "1 true" \
	"$(json_get "$f" 'j.requests.length + " " + j.requests[0].closed_by_client')"
t_check "... at the bound, long before the generation's 12 s" json_ok "$f" \
	'j.requests[0].closed_at_ms - j.requests[0].t_ms < 11000'

# 3. Silence is a timeout: no byte at all within UPSTREAM_TIMEOUT_MS, and
# the request is retried.
M=t0580/silent
reset_double
double_ctl POST faults "{\"kind\":\"hang\",\"match\":{\"model\":\"$M\"}}" >/dev/null
out=$(orgw_chat --model $M)
t_eq "an upstream that sends nothing times out and is retried" "true 2" \
	"$(json_get "$out" '[j.ok, j.headers["x-orgw-attempts"]].join(" ")')"

# 4. A non-streamed 200 whose choice carries an error (finish_reason
# "error"): a provider failure, retried while nothing reached the client.
M=t0580/error-in-200
reset_double
double_ctl POST faults "{\"kind\":\"midstream_error\",\"code\":502,\"match\":{\"model\":\"$M\",\"stream\":false}}" >/dev/null
seq=$(last_seq)
out=$(orgw_chat --model $M)
t_eq "a 200 carrying choices[0].error is retried; the client gets the answer" \
	"true Hello from alpha 2" \
	"$(json_get "$out" '[j.ok, j.content, j.headers["x-orgw-attempts"]].join(" ")')"
t_eq "... it counted as a provider failure (errors.5xx)" 1 "$(stat 'm.errors["5xx"]')"
t_eq "... two upstream requests" 2 "$(json_get "$(upstream_log "$seq")" 'j.requests.length')"

# 5. A stream that ends after its finish_reason chunk and usage but without
# "data: [DONE]" is complete: orgw closes it with [DONE].
M=t0580/no-done
reset_double
double_ctl POST faults "{\"kind\":\"no_done\",\"match\":{\"model\":\"$M\",\"stream\":true}}" >/dev/null
out=$(orgw_chat --model $M --stream)
t_eq "no [DONE] after finish_reason and usage: complete, closed with [DONE]" \
	"true true stop Hello from alpha" \
	"$(json_get "$out" '[j.ok, j.done, j.finish_reason, j.content].join(" ")')"
t_eq "... counted ok, not as a mid-stream failure" "1 0" "$(stat '[m.ok, m.errors.mid_stream].join(" ")')"

# 6. A role-only chunk is not a token: a provider that sends it after the
# 3 s header commit (keep-alives went out by then) and drops a second later
# is failed over without the client seeing anything but keep-alives.
# The first token may take 8 s here (comments are not tokens).
orgw_restart_workers UPSTREAM_TIMEOUT_MS=8000 SLOW_THRESHOLD_MS=8000 \
	REQUEST_TIMEOUT_MS=30000
M=t0580/role-then-drop
reset_double
double_ctl POST faults "{\"kind\":\"cut_after\",\"chunks\":0,\"wait_ms\":1000,\"match\":{\"model\":\"$M\",\"stream\":true}}" >/dev/null
double_ctl POST config '{"first_token_delay_ms":3500,"keepalive_interval_ms":500}' >/dev/null
seq=$(last_seq)
out=$(orgw_chat --model $M --stream)
t_eq "role chunk at 3.5 s, drop at 4.5 s: failed over invisibly, the answer whole" \
	"true true Hello from alpha null" \
	"$(json_get "$out" '[j.ok, j.done, j.content, JSON.stringify(j.error)].join(" ")')"
t_eq "... two upstream requests" 2 "$(json_get "$(upstream_log "$seq")" 'j.requests.length')"
