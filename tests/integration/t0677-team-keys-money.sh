#!/bin/bash
# t0677-team-keys-money: what a team key spends is never counted at $0
# and its budget is held at admission, on GDBM and on Redis.
#
# Unpriced: a Messages stream carries no cost in its usage, and orgw has no
# stored price for its model (its endpoints fetch answers 404, or the
# client sent its own "provider" for a model never scored).  The double
# bills about $0.015 for it; a key of $0.01 a day records at least that
# (priced at PRICE_CEILING_USD_PER_MTOK, "cost_estimated=1
# cost_basis=ceiling" in the log, under cost_estimated_usd in /stats) and
# its next request is 402.  Before: $0 recorded and the next one served.
#
# Reserved: a key of $0.001 a day and no --concurrent, 60 clients at once
# on a model whose answer costs about $0.002.  Before: 60/60 served, $0.12
# spent.  Now each admitted request holds the most it can cost until it
# ends, so the key spends less than its budget plus one answer; the others
# get 429 with a Retry-After while the rest of the budget is held (counted
# as refused_concurrent), 402 once it is spent.
#
# Abandoned: a client leaves a stream of a --concurrent 1 key while the
# generation's figure lags 4 s: the key's next request is served at once
# (before: 429 until the look-up ended).  Another's look-up answers 429
# three times first (before: given up, $0).  Each figure, when it comes,
# is its key's spend and in the model's /stats cost_usd, counted once.  A
# look-up that finds nothing (403) is charged the most the request could
# cost, logged as estimated (before: $0).
#
# count_tokens: a key's --rpm counts it (429 over it) and a spent budget
# refuses it (402), each counted among the key's refusals.  Before: relayed
# whatever the limits.
#
# The figures go out as "# " lines.
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0677-team-keys-money-secret-01234
LOAD=$ORGW_ROOT/tests/js/keyload.mjs

newkey() { # NAME ARGS...: prints the key
	local k
	k=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add "$@" 2>"$ORGW_T/key.err")
	[[ $k == orgw-* ]] || t_fail "key add $*" "$(cat "$ORGW_T/key.err")"
	printf '%s' "$k"
}
billed() { json_get "$(double_ctl GET stats)" "j.billed_by_model['$1'] ?? 0"; }
kstat() { json_get "$(orgw_curl /stats)" "((k) => ($2))(j.keys['$1'])"; }
settle() { # NAME N: until the key counts N requests (10 s at most)
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(kstat "$1" 'k.today.requests')" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# price MODEL PROMPT COMPLETION [STATUS]: the model's generated endpoints
# at these prices (USD a token), its endpoints fetch answering STATUS.
price() {
	local eps
	eps=$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" "$DOUBLE_URL/api/v1/models/$1/endpoints" |
		json_get - "JSON.stringify(j.data.endpoints.map((e) => ({...e, pricing: {...e.pricing, prompt: '$2', completion: '$3'}})))")
	double_ctl PUT "endpoints/$1" "{\"status\":${4:-200},\"endpoints\":$eps}" >/dev/null
}
# messages KEY MODEL CONTENT [EXTRA]: a Messages stream; sets HTTP_STATUS,
# HTTP_BODY.
messages() {
	HTTP_KEY=$1 orgw_http POST /v1/messages \
		"$(node -e 'process.stdout.write(JSON.stringify({model: process.argv[1], max_tokens: 1000, stream: true, messages: [{role: "user", content: process.argv[2]}], ...JSON.parse(process.argv[3] || "{}")}))' "$2" "$3" "${4:-}")"
}

# 400 characters (100 prompt tokens) and 100 output tokens.
BIG="$(printf 'x%.0s' {1..400})
[double] {\"chunks\":100}"

unpriced() { # BACKEND CASE MODEL EXTRA
	local be=$1 what=$2 m=$3 x=$4 k b0 bill spent st
	k=$(newkey "np-$be-${m##*/}" --models 'tk/*' --budget-usd-day 0.01)
	b0=$(billed "$m")
	messages "$k" "$m" "$BIG" "$x"
	st=$HTTP_STATUS
	settle "np-$be-${m##*/}" 1
	bill=$(node -e "process.stdout.write(String($(billed "$m") - $b0))")
	spent=$(kstat "np-$be-${m##*/}" 'k.today.spend_usd')
	printf '# %s: %s: billed $%s, recorded $%s\n' "$be" "$what" "$bill" "$spent"
	t_check "$be: $what: a Messages stream without cost, billed \$$bill > \$0.01" \
		node -e "process.exit($st === 200 && $bill > 0.01 ? 0 : 1)"
	t_check "$be: ... the key records at least what was billed (\$$spent)" \
		node -e "process.exit($spent >= $bill ? 0 : 1)"
	t_match "$be: ... the log marks it estimated at the ceiling" \
		"cost_estimated=1 cost_basis=ceiling .*key=np-$be" \
		"$(grep "model=$m " "$ORGW_LOG" | tail -n 1)"
	messages "$k" "$m" hi "$x"
	t_eq "$be: ... its next request: 402 budget_exceeded" "402 budget_exceeded" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.message.includes("budget") ? "budget_exceeded" : j.error.message')"
}

reserved() { # BACKEND
	local be=$1 m=tk/dear-$1 k c1 b0 out ok spent
	# About $0.002 an answer: 10 prompt tokens at $10/M, 100 output
	# tokens at $20/M, answered (not streamed) after three seconds: the
	# other clients come while it is held, however busy the machine.
	price "$m" 0.00001 0.00002
	c1=$(HTTP_KEY=$ORGW_KEY orgw_http POST /v1/chat/completions \
		"{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"dear\\n[double] {\\\"chunks\\\":100,\\\"first_token_delay_ms\\\":3000}\"}]}" >/dev/null
		json_get "$HTTP_BODY" 'j.usage.cost')
	t_check "$be: one answer costs c1 = \$$c1 > \$0.001 (the operator's key)" \
		node -e "process.exit($c1 > 0.001 ? 0 : 1)"
	k=$(newkey "res-$be" --models 'tk/*' --budget-usd-day 0.001)
	b0=$(billed "$m")
	out=$(node "$LOAD" --base "$ORGW_URL" --key "$k" --model "$m" --clients 60 --max-tries 1 \
		--content $'dear\n[double] {"chunks":100,"first_token_delay_ms":3000}')
	printf '# %s: keyload: %s\n' "$be" "$(json_get "$out" '({...j, other: j.other.length + " other", costs: j.costs.length + " costs"})')"
	ok=$(json_get "$out" 'j.ok')
	settle "res-$be" "$ok"
	spent=$(kstat "res-$be" 'k.today.spend_usd')
	printf '# %s: 60 clients at once, budget $0.001, no --concurrent: served %s, spent $%s (%s x budget), billed $%s\n' \
		"$be" "$ok" "$spent" "$(node -e "process.stdout.write(($spent / 0.001).toFixed(2))")" \
		"$(node -e "process.stdout.write(String($(billed "$m") - $b0))")"
	t_check "$be: 60 clients on a \$0.001 budget: some served ($ok), the rest 429 while it is held, 402 once spent" \
		node -e "const j = $out; process.exit(j.ok >= 1 && j.r429 >= 1 && j.ok + j.r429 + j.r402 === 60 && j.retry_after_bad === 0 && j.other.every((o) => o === 'gave up') ? 0 : 1)"
	t_check "$be: ... spent \$$spent < budget + one answer (\$0.001 + \$$c1)" \
		node -e "process.exit($spent < 0.001 + $c1 + 1e-12 ? 0 : 1)"
	t_eq "$be: ... the 429s counted as refused_concurrent, not as requests" \
		"$ok $(json_get "$out" 'j.r429')" \
		"$(kstat "res-$be" '[k.today.requests, k.today.refused_concurrent].join(" ")')"
	HTTP_KEY=$k orgw_http POST /v1/chat/completions "{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
	t_eq "$be: ... once they ended, the next request: 402" 402 "$HTTP_STATUS"
}

count_tokens() { # BACKEND: count_tokens under the key's rpm and budget
	local be=$1 k st s ct='{"model":"tk/ct","messages":[{"role":"user","content":"hi"}]}'
	k=$(newkey "ct-rpm-$be" --models 'tk/*' --rpm 2)
	# Not across a minute's end (a fixed rpm window would start again).
	s=$(date +%S)
	s=${s#0}
	[ "$s" -le 55 ] || sleep $((61 - s))
	HTTP_KEY=$k orgw_http POST /v1/messages/count_tokens "$ct"
	st=$HTTP_STATUS
	HTTP_KEY=$k orgw_http POST /v1/messages/count_tokens "$ct"
	st="$st $HTTP_STATUS"
	HTTP_KEY=$k orgw_http POST /v1/messages/count_tokens "$ct"
	t_eq "$be: count_tokens on an --rpm 2 key: relayed twice (the double's 404), then 429 in Anthropic's shape" \
		"404 404 429 rate_limit_error true" \
		"$st $HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type') $(test -n "$(http_header retry-after)" && echo true)"
	t_eq "$be: ... counted as refused_rpm" 1 "$(kstat "ct-rpm-$be" 'k.today.refused_rpm')"
	k=$(newkey "ct-budget-$be" --models 'tk/*' --budget-usd-day 0.000000001)
	HTTP_KEY=$k orgw_http POST /v1/chat/completions '{"model":"tk/ct","messages":[{"role":"user","content":"hi"}]}'
	settle "ct-budget-$be" 1
	HTTP_KEY=$k orgw_http POST /v1/messages/count_tokens "$ct"
	t_eq "$be: count_tokens on a spent budget: 402 in Anthropic's shape, counted as refused_budget" \
		"402 error 1" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type') $(kstat "ct-budget-$be" 'k.today.refused_budget')"
}

# leave KEY MODEL [EXTRA]: a slow stream (16 words 200 ms apart) its
# client leaves after 1.3 s.
leave() {
	local slow='gone\n[double] {\"chunks\":16,\"spacing_ms\":200}'
	curl -sS -N --max-time 1.3 -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		--data-binary "{\"model\":\"$2\",\"stream\":true${3:-},\"messages\":[{\"role\":\"user\",\"content\":\"$slow\"}]}" \
		"$ORGW_URL/v1/chat/completions" >/dev/null 2>&1
}
# spent_billed BACKEND WHAT NAME MODEL B0: the key's spend = what the
# double billed for the model since B0.
spent_billed() {
	local bill spent
	bill=$(node -e "process.stdout.write(String($(billed "$4") - $5))")
	spent=$(kstat "$3" 'k.today.spend_usd')
	printf '# %s: %s: billed $%s, key spend $%s\n' "$1" "$2" "$bill" "$spent"
	t_check "$1: ... $2: the key's spend \$$spent = billed \$$bill" \
		node -e "process.exit(Math.abs($spent - $bill) < 1e-9 && $bill > 0 ? 0 : 1)"
}

# abandoned BACKEND: clients that leave mid-stream.
abandoned() {
	local be=$1 m=tk/gone-$1 k b0 t0 t1 st i bill spent stats_cost
	# Scored first (the operator's key): a hold is then priced from the
	# endpoints, not at the ceiling, and leaves most of $1 free.
	HTTP_KEY=$ORGW_KEY orgw_http POST /v1/chat/completions "{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"warm\"}]}"

	# The generation's figure lags 4 s (404 until then).
	double_ctl POST config '{"generation_ready_ms":4000}' >/dev/null
	k=$(newkey "gone-$be" --models 'tk/*' --concurrent 1 --budget-usd-day 1)
	b0=$(billed "$m")
	leave "$k" "$m"
	t0=$(date +%s%N)
	# Its lease is free once orgw sees the client gone (its next write,
	# 200 ms at most), not after the look-up (4 s and more).
	for ((i = 0; i < 30; i++)); do
		HTTP_KEY=$k orgw_http POST /v1/chat/completions "{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"next\"}]}"
		st=$HTTP_STATUS
		[ "$st" = 200 ] && break
		sleep 0.1
	done
	t1=$((($(date +%s%N) - t0) / 1000000))
	printf '# %s: a --concurrent 1 key served again %d ms after its client left mid-stream (the look-up lags 4 s)\n' "$be" "$t1"
	t_check "$be: a client gone mid-stream gives its lease back at once: the key's next request is 200 within 1.5 s ($t1 ms)" \
		test "$st" = 200 -a "$t1" -le 1500
	settle "gone-$be" 2
	spent_billed "$be" "its cost found after 4 s of 404s" "gone-$be" "$m" "$b0"

	# The look-up answers 429 three times first.
	double_ctl POST config '{"generation_ready_ms":0,"generation_fault_status":429,"generation_fault_times":3}' >/dev/null
	k=$(newkey "busy-$be" --models 'tk/*' --budget-usd-day 1)
	b0=$(billed "$m")
	leave "$k" "$m"
	settle "busy-$be" 1
	spent_billed "$be" "its cost found after three 429s" "busy-$be" "$m" "$b0"
	t_eq "$be: ... the double met the 429s and then answered the look-up" "3 true" \
		"$(json_get "$(double_ctl GET stats)" '[j.generation_faults, j.generation_lookups >= 1].join(" ")')"
	stats_cost=$(json_get "$(orgw_curl /stats)" "j.models['$m'].cost_usd")
	t_check "$be: /stats counts them once: the model's cost_usd \$$stats_cost = all billed for it" \
		node -e "process.exit(Math.abs($stats_cost - $(billed "$m")) < 1e-9 ? 0 : 1)"
	t_eq "$be: ... each counted once in its key's use, four requests in /stats" "2 1 4" \
		"$(kstat "gone-$be" 'k.today.requests') $(kstat "busy-$be" 'k.today.requests') $(json_get "$(orgw_curl /stats)" "j.models['$m'].requests")"

	# A look-up that finds nothing (a 403): charged the most it could cost.
	double_ctl POST config '{"generation_fault_status":403,"generation_fault_times":0}' >/dev/null
	k=$(newkey "lost-$be" --models 'tk/*' --budget-usd-day 1)
	b0=$(billed "$m")
	leave "$k" "$m" ',"max_tokens":100'
	settle "lost-$be" 1
	double_ctl POST config '{"generation_fault_status":0}' >/dev/null
	bill=$(node -e "process.stdout.write(String($(billed "$m") - $b0))")
	spent=$(kstat "lost-$be" 'k.today.spend_usd')
	printf '# %s: not found: billed $%s, charged $%s\n' "$be" "$bill" "$spent"
	t_check "$be: a look-up that finds nothing: charged the most it could cost (\$$spent >= billed \$$bill > 0)" \
		node -e "process.exit($spent >= $bill && $bill > 0 ? 0 : 1)"
	t_match "$be: ... logged as estimated from the model's dearest endpoint" \
		"cost_estimated=1 cost_basis=model_max key=lost-$be" \
		"$(grep "generation .*key=lost-$be" "$ORGW_LOG" | tail -n 1)"
}

money() { # BACKEND
	local be=$1
	price "tk/np404-$be" 0.00007 0.00007 404
	unpriced "$be" "endpoints fetch 404" "tk/np404-$be" ''
	price "tk/npprov-$be" 0.00007 0.00007
	unpriced "$be" "the client's own provider, never scored" "tk/npprov-$be" '{"provider":{"order":["alpha"]}}'
	reserved "$be"
	count_tokens "$be"
	abandoned "$be"
}

orgw_start KEYS_SECRET="$SECRET"
money gdbm
if command -v redis-server >/dev/null; then
	ORGW_STATE_BACKEND=redis orgw_start KEYS_SECRET="$SECRET"
	money redis
else
	t_skip "redis: redis-server is not installed"
fi
