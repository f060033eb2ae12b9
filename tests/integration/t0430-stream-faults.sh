#!/bin/bash
# t0430-stream-faults: after content has reached the client, an upstream cut,
# stall, malformed chunk or SSE error event before any finish_reason ends
# the client's stream with an error event and no [DONE]: the openai client
# raises, never a normal end.  (A stream that ends after its finish_reason
# without [DONE] is complete: t0580.)  A stream that fails before its first content fails over
# cleanly.  A client that disconnects aborts the upstream transfer at once.
. "$(dirname "$0")/../lib.sh"

orgw_start UPSTREAM_TIMEOUT_MS=1500 FAIL_LIMIT=100 MAX_ATTEMPTS=4
M=deepseek/deepseek-v3.2
orgw_chat --model $M >/dev/null
double_ctl POST config '{"chunks":6}' >/dev/null
stats() { orgw_http GET /stats; json_get "$HTTP_BODY" "j.models['$M'].$1"; }
since() { json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq'; }

for fault in cut_after stall malformed midstream_error; do
	double_ctl POST faults "{\"faults\":[{\"kind\":\"$fault\",\"chunks\":2,\"match\":{\"tag\":\"deepseek\"}}]}" >/dev/null
	out=$(orgw_chat --model $M --stream)
	echo "# $fault: $(json_get "$out" 'JSON.stringify({ok: j.ok, content: j.content, error: j.error, done: j.done})')"
	t_eq "$fault: the client sees an error, not a normal end" "false false" \
		"$(json_get "$out" 'j.ok + " " + j.done')"
	t_check "$fault: the error says why" json_ok "$out" 'j.error && j.error.message.length > 0'
	t_check "$fault: partial content did arrive first" json_ok "$out" 'j.content.startsWith("Hello")'
done
t_eq "/stats: 4 requests with a mid-stream failure" 4 "$(stats errors.mid_stream)"
t_eq "/stats: each counted toward deepseek's breaker" 4 "$(stats failures.deepseek)"

# Fails before its first content event (only the role chunk went out):
# fails over, the client sees one clean stream.
s0=$(since)
double_ctl POST faults '{"faults":[{"kind":"cut_after","chunks":0,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M --stream)
t_eq "failure before content: one clean stream" "true true" \
	"$(json_get "$out" 'j.ok + " " + j.done')"
t_eq "failure before content: the content is whole, said once" "Hello from deepseek w4 w5 w6" \
	"$(json_get "$out" 'j.content')"
t_eq "failure before content: 2 attempts" 2 "$(json_get "$out" 'j.headers["x-orgw-attempts"]')"
double_ctl POST faults '{"faults":[{"kind":"error_in_200","code":502,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M --stream)
t_eq "SSE error event before content: retried, one clean stream" "true true 2" \
	"$(json_get "$out" 'j.ok + " " + j.done + " " + j.headers["x-orgw-attempts"]')"

# Client disconnect mid-stream: the upstream connection is closed at once.
double_ctl POST config '{"chunks":20,"spacing_ms":300}' >/dev/null
before=$(stats failures.deepseek)
s0=$(since)
out=$(orgw_chat --model $M --stream --abort-after-chunks 3)
sleep 2
log=$(double_ctl GET "log?since=$s0&path=chat")
t_eq "client abort: the double saw its connection closed" true \
	"$(json_get "$log" 'j.requests[0].closed_by_client')"
ms=$(json_get "$log" 'Math.round(j.requests[0].closed_at_ms - j.requests[0].t_ms)')
echo "# client aborted after 3 chunks (~900 ms); upstream closed at $ms ms"
t_check "client abort: upstream closed within 1 s of it ($ms ms < 2000)" test "$ms" -lt 2000
t_eq "/stats: one client_abort" 1 "$(stats errors.client_abort)"
t_eq "/stats: the abort did not count against deepseek" "$before" "$(stats failures.deepseek)"
t_eq "/stats: requests counted exactly (1+4+2+1)" 8 "$(stats requests)"
