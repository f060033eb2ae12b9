#!/bin/bash
# t0450-slow-trip: a slow answer that trips the breaker is still relayed and
# counted for the provider that served it; the re-lock applies to the next
# request, and the off-pin check is made against the provider that served.
. "$(dirname "$0")/../lib.sh"

orgw_start SLOW_THRESHOLD_MS=500 UPSTREAM_TIMEOUT_MS=5000 FAIL_LIMIT=1 COOLDOWN_SECONDS=60
M=deepseek/deepseek-v3.2
orgw_chat --model $M >/dev/null
double_ctl POST faults '{"faults":[{"kind":"slow_first_byte","ms":800,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M --stream)
t_eq "the slow answer is relayed whole" "true true deepseek" \
	"$(json_get "$out" 'j.ok + " " + j.done + " " + j.headers["x-orgw-provider"]')"
orgw_http GET /stats
st=$HTTP_BODY
t_eq "the slow answer tripped the breaker" "1 1" \
	"$(json_get "$st" "j.models['$M'].errors.slow + ' ' + j.models['$M'].breaker_trips")"
t_eq "both requests are counted for deepseek, which served them" 2 \
	"$(json_get "$st" "j.models['$M'].by_provider.deepseek.requests")"
t_eq "none for the provider locked after the trip" 0 \
	"$(json_get "$st" "j.models['$M'].by_provider['deepinfra/fp8']?.requests ?? 0")"
t_eq "no false off-pin" 0 "$(json_get "$st" "j.models['$M'].off_pin")"
t_eq "the lock moved to the next candidate" deepinfra/fp8 \
	"$(json_get "$st" "j.models['$M'].lock.tag")"
grep ": req: .*model=" "$ORGW_LOG" | tail -1 | sed "s|^|# |"
t_match "the log names the provider that served" 'route=locked provider=deepseek status=200' \
	"$(grep ': req: .*model=' "$ORGW_LOG" | tail -1)"
out=$(orgw_chat --model $M)
t_eq "the next request goes to the new lock" "true deepinfra/fp8" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-provider"]')"
