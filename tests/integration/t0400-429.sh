#!/bin/bash
# t0400-429: a 429 is retried on the same provider after RETRY_429_DELAYS (a
# larger Retry-After wins), never switches provider and never counts toward
# the breaker; when the delays are used up the 429 reaches the client.
. "$(dirname "$0")/../lib.sh"

orgw_start RETRY_429_DELAYS=1,2,1 MAX_ATTEMPTS=4 FAIL_LIMIT=2
M=deepseek/deepseek-v3.2
orgw_chat --model $M >/dev/null	# scores and locks deepseek
stats() { orgw_http GET /stats; json_get "$HTTP_BODY" "j.models['$M'].$1"; }
since() { json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq'; }

# 429 twice, then success.
s0=$(since)
double_ctl POST faults '{"faults":[{"kind":"status","status":429,"times":2,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "429 twice then success: the client succeeds" true "$(json_get "$out" 'j.ok')"
log=$(double_ctl GET "log?since=$s0&path=chat")
t_eq "upstream saw 3 requests" 3 "$(json_get "$log" 'j.requests.length')"
t_eq "all 3 to the same tag" deepseek \
	"$(json_get "$log" '[...new Set(j.requests.map(r => r.body.provider.order[0]))].join()')"
gap=$(json_get "$log" 'Math.round(j.requests[2].t_ms - j.requests[0].t_ms)')
echo "# first to third attempt: $gap ms (delays 1 s + 2 s)"
t_check "waited at least the configured 1 s + 2 s ($gap ms)" test "$gap" -ge 3000
t_eq "X-Orgw-Attempts 3" 3 "$(json_get "$out" 'j.headers["x-orgw-attempts"]')"
t_eq "still locked on deepseek" "deepseek locked" \
	"$(json_get "$out" 'j.headers["x-orgw-provider"] + " " + j.headers["x-orgw-route"]')"

# Retry-After: 3 beats the configured 1 s.
s0=$(since)
double_ctl POST faults '{"faults":[{"kind":"status","status":429,"retry_after":3,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M --stream)
log=$(double_ctl GET "log?since=$s0&path=chat")
gap=$(json_get "$log" 'Math.round(j.requests[1].t_ms - j.requests[0].t_ms)')
echo "# Retry-After 3: retry came after $gap ms"
t_eq "Retry-After: the stream succeeds" "true true" \
	"$(json_get "$out" 'j.ok') $(json_get "$out" 'j.done')"
t_check "Retry-After: 3 was followed ($gap ms >= 3000)" test "$gap" -ge 3000

# Retry-After as an HTTP-date (RFC 9110 10.2.3), 4 s ahead: followed too
# (the configured first delay is 1 s).  Whole seconds on both sides, so
# the wait is 3 to 4 s.
s0=$(since)
when=$(LC_ALL=C date -u -d '+4 sec' '+%a, %d %b %Y %H:%M:%S GMT')
double_ctl POST faults "{\"faults\":[{\"kind\":\"status\",\"status\":429,\"retry_after\":\"$when\",\"match\":{\"tag\":\"deepseek\"}}]}" >/dev/null
out=$(orgw_chat --model $M)
log=$(double_ctl GET "log?since=$s0&path=chat")
gap=$(json_get "$log" 'Math.round(j.requests[1].t_ms - j.requests[0].t_ms)')
echo "# Retry-After $when: retry came after $gap ms"
t_eq "Retry-After HTTP-date: the request succeeds" true "$(json_get "$out" 'j.ok')"
t_check "Retry-After HTTP-date was followed ($gap ms >= 2500)" test "$gap" -ge 2500

# A 429 inside a 200 (an SSE error event before any content) is a 429 too.
s0=$(since)
double_ctl POST faults '{"faults":[{"kind":"error_in_200","code":429,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M --stream)
t_eq "429 as an SSE error event before content: retried, succeeds" "true true 2" \
	"$(json_get "$out" 'j.ok') $(json_get "$out" 'j.done') $(json_get "$(double_ctl GET "log?since=$s0&path=chat")" 'j.requests.length')"

# Delays used up (3 retries = 4 attempts = MAX_ATTEMPTS): the 429 reaches the client.
s0=$(since)
double_ctl POST faults '{"faults":[{"kind":"status","status":429,"times":4,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "persistent 429: the client gets 429" 429 "$(json_get "$out" 'j.error.status')"
t_match "with upstream's body" 'Provider returned error' "$(json_get "$out" 'j.error.message')"
t_eq "4 attempts, all on deepseek" "4 deepseek" \
	"$(json_get "$(double_ctl GET "log?since=$s0&path=chat")" 'j.requests.length + " " + [...new Set(j.requests.map(r => r.body.provider.order[0]))].join()')"

# The same inside a 200 body, persistently: the client gets a real 429.
double_ctl POST faults '{"faults":[{"kind":"error_in_200","code":429,"times":4,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "persistent 429 inside a 200 body: the client gets status 429" 429 \
	"$(json_get "$out" 'j.error.status')"

t_eq "/stats: requests that met a 429 (one per case above)" 6 "$(stats 'errors["429"]')"
t_eq "/stats: 429 retries counted (2+1+1+1+3+3)" 11 "$(stats retries_429)"
t_eq "/stats: no breaker trip from 429s" 0 "$(stats breaker_trips)"
t_eq "/stats: no failures counted from 429s" 0 "$(stats 'failures?.deepseek ?? 0')"
t_eq "/stats: no failover" 0 "$(stats failovers)"
t_eq "/stats: 7 requests, 5 ok" "7 5" "$(stats requests) $(stats ok)"
t_eq "the lock never moved" deepseek "$(stats lock.tag)"
