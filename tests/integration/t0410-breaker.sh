#!/bin/bash
# t0410-breaker: a provider that keeps failing trips the breaker at
# FAIL_LIMIT within the same client request, which continues on the next
# candidate; the model stays re-locked; after the cooldown the old provider
# is eligible again.
. "$(dirname "$0")/../lib.sh"

orgw_start FAIL_LIMIT=3 COOLDOWN_SECONDS=5 MAX_ATTEMPTS=4 LOCK_IDLE_SECONDS=3
M=deepseek/deepseek-v3.2
orgw_chat --model $M >/dev/null
stats() { orgw_http GET /stats; json_get "$HTTP_BODY" "j.models['$M'].$1"; }

double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":-1,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "persistent 503: the same client request succeeds" true "$(json_get "$out" 'j.ok')"
t_eq "on the second candidate" "deepinfra/fp8 DeepInfra" \
	"$(json_get "$out" 'j.headers["x-orgw-provider"] + " " + j.provider')"
t_eq "after 4 attempts (3 failures + 1)" 4 "$(json_get "$out" 'j.headers["x-orgw-attempts"]')"
t_eq "route relocked" relocked "$(json_get "$out" 'j.headers["x-orgw-route"]')"
t_eq "/stats: one breaker trip" 1 "$(stats breaker_trips)"
t_eq "/stats: one failover" 1 "$(stats failovers)"
t_eq "/stats: one request met 5xx (three times)" 1 "$(stats 'errors["5xx"]')"
t_eq "/stats: deepseek cooling with reason 5xx" 5xx "$(stats 'cooldowns.deepseek.reason')"
t_eq "/stats: the lock moved to deepinfra/fp8" deepinfra/fp8 "$(stats lock.tag)"
t_eq "/stats: the failure count was reset by the trip" 0 "$(stats 'failures.deepseek')"

s0=$(json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq')
for i in $(seq 10); do
	orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"$i\"}]}"
	[ "$HTTP_STATUS" = 200 ] || t_fail "request $i after the trip" "$HTTP_BODY"
done
t_eq "the next 10 requests all go to the new lock" "10 deepinfra/fp8" \
	"$(json_get "$(double_ctl GET "log?since=$s0&path=chat")" 'j.requests.length + " " + [...new Set(j.requests.map(r => r.body.provider.order[0]))].join()')"

# Cooldown over and the lock idle: the best provider is eligible again.
double_ctl DELETE faults >/dev/null
sleep 6
orgw_http GET /stats
t_eq "/stats: no cooldown left" 0 \
	"$(json_get "$HTTP_BODY" "Object.keys(j.models['$M'].cooldowns ?? {}).length")"
# A new conversation: the one above keeps the provider that served it.
out=$(orgw_chat --model $M --message "after the cooldown")
t_eq "after the cooldown the best provider takes the lock again" \
	"deepseek relocked" \
	"$(json_get "$out" 'j.headers["x-orgw-provider"] + " " + j.headers["x-orgw-route"]')"

# All candidates cooling: requests go unpinned rather than failing.
double_ctl POST faults '{"faults":[{"kind":"status","status":502,"times":1,"match":{"tag":"deepseek"}},{"kind":"status","status":502,"times":1,"match":{"tag":"deepinfra/fp8"}},{"kind":"status","status":502,"times":1,"match":{"tag":"novita"}}]}' >/dev/null
orgw_restart_workers FAIL_LIMIT=1 MAX_ATTEMPTS=4
out=$(orgw_chat --model $M)
t_eq "every provider failing: trips each, then goes unpinned" \
	"true unpinned auto 4" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"] + " " + j.headers["x-orgw-provider"] + " " + j.headers["x-orgw-attempts"]')"
t_eq "the unpinned attempt carried no provider object" undefined \
	"$(json_get "$(double_ctl GET 'log?path=chat&limit=1')" 'String(j.requests[0].body.provider)')"
orgw_http GET /stats
t_eq "/stats: three cooldowns" 3 \
	"$(json_get "$HTTP_BODY" "Object.keys(j.models['$M'].cooldowns ?? {}).length")"
out=$(orgw_chat --model $M --stream)
t_eq "while all cool down, requests go unpinned at once" "true unpinned 1" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"] + " " + j.headers["x-orgw-attempts"]')"
