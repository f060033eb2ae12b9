#!/bin/bash
# t0415-breaker-cooling: many requests in flight on a provider that starts
# failing.  The breaker trips once: the failures that land after the trip,
# on a provider already cooling, are not counted again (no second trip),
# and each request that meets one follows the model's current lock
# instead of retrying the cooling provider, so none ends with the 503 and
# nothing of the failure reaches a client.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=8 orgw_start FAIL_LIMIT=3 MAX_ATTEMPTS=4 COOLDOWN_SECONDS=600
M=test/breaker-cooling
body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

out=$(orgw_chat --model $M)
t_eq "a first request locks alpha" "alpha scored" \
	"$(json_get "$out" 'j.headers["x-orgw-provider"] + " " + j.headers["x-orgw-route"]')"

# Each 503 takes 200 ms, so the 32 clients' first attempts are all in
# flight on alpha when the third failure trips it.
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"ms":200,"times":-1,"match":{"tag":"alpha"}}]}' >/dev/null
printf '%s' "$body" >"$ORGW_T/b.json"
one() { # N: one request; prints "N STATUS"
	curl -sS -o "$ORGW_T/out.$1" -D "$ORGW_T/hdr.$1" -w "$1 %{http_code}\n" \
		--max-time 60 -H "Authorization: Bearer $ORGW_KEY" \
		-H 'Content-Type: application/json' \
		--data-binary @"$ORGW_T/b.json" "$ORGW_URL/v1/chat/completions"
}
export -f one
export ORGW_T ORGW_KEY ORGW_URL
seq 64 | xargs -P 32 -I{} bash -c 'one {}' >"$ORGW_T/codes" 2>&1

t_eq "64 requests answered 200" 64 "$(grep -c ' 200$' "$ORGW_T/codes")"
t_eq "no request ended 503" 0 "$(grep -c ' 503$' "$ORGW_T/codes")"
t_eq "none was served by alpha" 0 \
	"$(grep -il '^x-orgw-provider: alpha' "$ORGW_T"/hdr.* | wc -l)"
t_check "no request ended after retrying alpha to MAX_ATTEMPTS" \
	bash -c "! grep -q 'provider=alpha .*attempts=4' '$ORGW_LOG'"
n=$(json_get "$(double_ctl GET 'log?path=chat')" \
	'j.requests.filter(r => r.tag === "alpha" && r.status === 503).length')
echo "# 503s alpha sent: $n"

orgw_stats_settle "$M" 65
orgw_http GET /stats
stats() { json_get "$HTTP_BODY" "j.models['$M'].$1"; }
t_eq "/stats: one breaker trip" 1 "$(stats breaker_trips)"
t_eq "/stats: 65 requests, 65 ok" "65 65" "$(stats requests) $(stats ok)"
t_eq "/stats: the lock is on beta" beta "$(stats lock.tag)"
t_eq "/stats: alpha cooling, its failure count at 0" "5xx 0" \
	"$(stats 'cooldowns.alpha.reason') $(stats 'failures.alpha ?? 0')"
t_eq "/stats: the first lock, then one move off alpha" " > alpha, alpha > beta" \
	"$(json_get "$HTTP_BODY" "j.models['$M'].lock_changes.map(c => c.from + ' > ' + c.to).join(', ')")"
t_eq "the log has one trip" 1 "$(grep -c 'breaker tripped: model=test/breaker-cooling' "$ORGW_LOG")"
