#!/bin/bash
# t0420-faults: a reset before headers, a hang past UPSTREAM_TIMEOUT_MS and
# a slow first byte each do what docs/design.md section 5 says.
. "$(dirname "$0")/../lib.sh"

orgw_start UPSTREAM_TIMEOUT_MS=1500 SLOW_THRESHOLD_MS=600 FAIL_LIMIT=5 MAX_ATTEMPTS=4
M=deepseek/deepseek-v3.2
orgw_chat --model $M >/dev/null
stats() { orgw_http GET /stats; json_get "$HTTP_BODY" "j.models['$M'].$1"; }
since() { json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq'; }

# Reset before headers: a failure, retried (same provider, below FAIL_LIMIT).
# On a new connection: on a pooled one libcurl itself would resend once.
s0=$(since)
double_ctl POST close_idle >/dev/null
double_ctl POST faults '{"faults":[{"kind":"reset","match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "reset before headers: the client still succeeds" "true 2" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-attempts"]')"
t_eq "reset: the successful retry reset deepseek's failure count" 0 "$(stats failures.deepseek)"
t_eq "reset: counted in errors.5xx" 1 "$(stats 'errors["5xx"]')"

# Hang past the timeout: the attempt is abandoned after 1.5 s and retried.
double_ctl POST faults '{"faults":[{"kind":"hang","match":{"tag":"deepseek"}}]}' >/dev/null
start=$(date +%s%N)
out=$(orgw_chat --model $M --stream)
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "# hang: answered after $ms ms (UPSTREAM_TIMEOUT_MS 1500)"
t_eq "hang: the client succeeds on the retry" "true true 2" \
	"$(json_get "$out" 'j.ok + " " + j.done + " " + j.headers["x-orgw-attempts"]')"
t_check "hang: abandoned after the timeout, not before ($ms ms)" test "$ms" -ge 1500
t_check "hang: and not much after ($ms ms < 4000)" test "$ms" -lt 4000
t_eq "hang: counted as a timeout" 1 "$(stats errors.timeout)"
t_eq "hang: the retry's success reset the count again" 0 "$(stats failures.deepseek)"
t_eq "hang: the double saw the connection closed" true \
	"$(json_get "$(double_ctl GET "log?since=$s0&path=chat")" 'j.requests.some(r => r.fault === "hang" && r.closed_by_client)')"

# Slow first byte (900 ms > SLOW_THRESHOLD_MS 600, < timeout): relayed, but
# counted as lag toward the breaker.
double_ctl POST faults '{"faults":[{"kind":"slow_first_byte","ms":900,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "slow first byte: relayed on the first attempt" "true 1" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-attempts"]')"
t_eq "slow: counted in errors.slow" 1 "$(stats errors.slow)"
t_eq "slow: counts toward the breaker (a success that does not reset)" 1 "$(stats failures.deepseek)"

# A success resets the consecutive count.
out=$(orgw_chat --model $M)
t_eq "a success resets the failure count" "true 0" \
	"$(json_get "$out" 'j.ok') $(stats failures.deepseek)"

# Connect error: nothing listens at the upstream address.
orgw_restart_workers UPSTREAM_URL=http://127.0.0.1:9/api/v1 MAX_ATTEMPTS=2
out=$(orgw_chat --model $M)
t_eq "upstream down: a 502 gateway error after MAX_ATTEMPTS" "502 upstream_unavailable" \
	"$(json_get "$out" 'j.error.status + " " + j.error.code')"
t_eq "connect errors count as failures (2 more)" 2 "$(stats failures.deepseek)"
t_eq "/stats: requests counted exactly" 6 "$(stats requests)"
t_eq "/stats: ok counted exactly" 5 "$(stats ok)"
