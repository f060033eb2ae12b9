#!/bin/bash
# t0120-lock: requests for a model stay on the locked provider; an idle lock
# expires and the next new conversation takes the current best candidate (a
# conversation keeps its provider); a client's
# own provider object is forwarded untouched.
. "$(dirname "$0")/../lib.sh"

orgw_start LOCK_IDLE_SECONDS=3
M=deepseek/deepseek-v3.2

seq0=$(json_get "$(double_ctl GET 'log?limit=1')" 'j.requests.length ? j.requests[0].seq : 0')
for i in $(seq 20); do
	out=$(orgw_curl /v1/chat/completions -d "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"n$i\"}]}")
	[ "$(json_get "$out" 'j.provider')" = DeepSeek ] || t_fail "request $i served by DeepSeek" "$out"
done
log=$(double_ctl GET "log?since=$seq0&path=chat")
t_eq "20 requests reached upstream" 20 "$(json_get "$log" 'j.requests.length')"
t_eq "all 20 went to the locked provider" deepseek \
	"$(json_get "$log" '[...new Set(j.requests.map(r => r.body.provider.order[0]))].join(",")')"
t_eq "the double served all 20 from that endpoint" deepseek \
	"$(json_get "$log" '[...new Set(j.requests.map(r => r.tag))].join(",")')"

# Make deepinfra/fp8 the best endpoint and rescore: the live lock stays.
ep=$(json_get "$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" \
	"$DOUBLE_URL/api/v1/models/$M/endpoints")" \
	'j.data.endpoints.map(e => e.tag === "deepinfra/fp8" ? {...e, throughput_last_30m: {p50: 5000, p75: 4000, p90: 3000, p99: 2000}} : e)')
double_ctl PUT "endpoints/$M" "$ep" >/dev/null
orgw_http POST /__cron "{}"
t_eq "POST /__cron rescored" 200 "$HTTP_STATUS"
t_eq "the scorer found the new best" deepinfra/fp8 \
	"$(json_get "$HTTP_BODY" "j.models['$M'].winner")"
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
t_eq "a lock in use does not move on rescoring" deepseek "$(http_header X-Orgw-Provider)"
t_eq "route locked" locked "$(http_header X-Orgw-Route)"

sleep 4
# A new conversation (its opening message names it): the conversation "x"
# would keep deepseek, where its cache is, through the lock's expiry.
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"y\"}]}"
t_eq "after LOCK_IDLE_SECONDS the best candidate takes over" deepinfra/fp8 \
	"$(http_header X-Orgw-Provider)"
t_eq "route relocked" relocked "$(http_header X-Orgw-Route)"
t_eq "served by DeepInfra" DeepInfra "$(json_get "$HTTP_BODY" 'j.provider')"
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"z\"}]}"
t_eq "the new lock holds" "deepinfra/fp8 locked" \
	"$(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"
orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
t_eq "the conversation x stays where its cache is" "deepseek conversation" \
	"$(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"

# The client's own provider object goes upstream byte for byte.
prov='{"order":["novita","deepseek"],"allow_fallbacks":true,"data_collection":"deny"}'
out=$(orgw_chat --model $M --provider "$prov")
t_eq "a client provider request succeeds" true "$(json_get "$out" 'j.ok')"
t_eq "route client" client "$(json_get "$out" 'j.headers["x-orgw-route"]')"
t_eq "X-Orgw-Provider auto for client routing" auto \
	"$(json_get "$out" 'j.headers["x-orgw-provider"]')"
t_eq "the provider object is forwarded untouched" "$prov" \
	"$(json_get "$(double_ctl GET 'log?path=chat&limit=1')" 'JSON.stringify(j.requests[0].body.provider)')"
