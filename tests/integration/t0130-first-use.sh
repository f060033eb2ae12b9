#!/bin/bash
# t0130-first-use: a model never seen before is scored inline and locked on
# its first request; when the endpoints fetch fails the request still
# succeeds, unpinned (the gateway degrades, it does not refuse).
. "$(dirname "$0")/../lib.sh"

orgw_start
M=acme/brand-new-model

out=$(orgw_chat --model $M)
t_eq "first request for a new model succeeds" true "$(json_get "$out" 'j.ok')"
t_eq "it was scored inline" scored "$(json_get "$out" 'j.headers["x-orgw-route"]')"
t_eq "and pinned to the best endpoint (alpha)" alpha \
	"$(json_get "$out" 'j.headers["x-orgw-provider"]')"
eps=$(double_ctl GET "log?path=endpoints")
t_eq "one endpoints fetch for it" 1 "$(json_get "$eps" 'j.requests.length')"
t_eq "fetched at /models/acme/brand-new-model/endpoints (no %2F)" \
	"/api/v1/models/$M/endpoints" "$(json_get "$eps" 'j.requests[0].path')"
orgw_http GET /stats
t_eq "/stats shows the lock" alpha "$(json_get "$HTTP_BODY" "j.models['$M'].lock.tag")"
t_eq "/stats shows 3 ranked candidates" "alpha,beta,gamma" \
	"$(json_get "$HTTP_BODY" "j.models['$M'].candidates.map(c => c.tag).join(',')")"
t_check "/stats lists it as seen" json_ok "$HTTP_BODY" "j.models['$M'].first_seen > 0"
out=$(orgw_chat --model $M --stream)
t_eq "second request uses the lock, no refetch" "locked 1" \
	"$(json_get "$out" 'j.headers["x-orgw-route"]') $(json_get "$(double_ctl GET "log?path=endpoints")" 'j.requests.length')"

# Endpoints fetch fails (500): the request still succeeds, unpinned.
F=acme/endpoints-broken
double_ctl PUT "endpoints/$F" '{"status":500}' >/dev/null
out=$(orgw_chat --model $F)
t_eq "a model whose scoring fails still gets an answer" true "$(json_get "$out" 'j.ok')"
t_eq "route unpinned" unpinned "$(json_get "$out" 'j.headers["x-orgw-route"]')"
t_eq "X-Orgw-Provider auto" auto "$(json_get "$out" 'j.headers["x-orgw-provider"]')"
t_eq "no provider pin was sent upstream" undefined \
	"$(json_get "$(double_ctl GET 'log?path=chat&limit=1')" 'String(j.requests[0].body.provider)')"
orgw_http GET /stats
t_match "/stats says why scoring failed" 'HTTP 500' \
	"$(json_get "$HTTP_BODY" "j.models['$F'].scoring_error")"
# A failed scoring is not retried on every request (once a minute at most).
before=$(json_get "$(double_ctl GET "log?path=$F")" 'j.requests.filter(r => r.path.endsWith("/endpoints")).length')
out=$(orgw_chat --model $F)
after=$(json_get "$(double_ctl GET "log?path=$F")" 'j.requests.filter(r => r.path.endsWith("/endpoints")).length')
t_eq "the next request goes unpinned without refetching" "true unpinned $before" \
	"$(json_get "$out" 'j.ok') $(json_get "$out" 'j.headers["x-orgw-route"]') $after"
# The upstream unreachable entirely for endpoints: slow endpoints (timeout).
S=acme/endpoints-slow
double_ctl PUT "endpoints/$S" '{"delay_ms":8000}' >/dev/null
out=$(orgw_chat --model $S)
t_eq "a hanging endpoints fetch still ends in an answer" "true unpinned" \
	"$(json_get "$out" 'j.ok') $(json_get "$out" 'j.headers["x-orgw-route"]')"
# Had it waited the 8 s out, the endpoints would have come and the model
# been scored; unpinned with "no response" is the short timeout's doing
# (no wall-clock bound: a loaded machine only makes it slower).
t_match "the inline scoring gave up after its short timeout" \
	"inline scoring of $S failed: endpoints fetch: no response; unpinned" "$(cat "$ORGW_LOG")"
