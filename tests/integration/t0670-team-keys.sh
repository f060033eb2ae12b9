#!/bin/bash
# t0670-team-keys: team keys (orgw-score key add ...) on the request path,
# through lighttpd and the real workers, against the double.
#
# On GDBM and again on Redis (enforce): a model outside the key's globs is
# 403 model_not_allowed in each API's shape (the body's "models" array and
# openrouter/auto as that literal id included); a spent day or month budget
# is 402 budget_exceeded; over --rpm, 429 rate_limit_exceeded with a
# Retry-After that ends when the first request leaves the sliding
# window; over --concurrent, 429
# concurrency_limit_exceeded; none of these reaches the double, each is
# counted in keys.<name>.today.refused_* and none as a request.  Unknown,
# badly shaped, disabled, revoked and expired keys get one and the same
# 401; a disabled key works again once enabled.  Spend is the usage.cost
# the double reported (= its billed_by_model for a model only that key
# used); a client that leaves mid-stream is counted with what the double
# billed for its cancelled generation (looked up while it still answers
# 404), more than nothing and less than the whole answer.  A key rotated
# while its stream is in flight: the stream ends whole and is counted, the
# old key is refused, the new one served.  (A worker killed with kill -9
# while it holds a lease: t0677-team-keys-dead-worker.)  No plaintext
# key in any log, the state, the keys store, /stats or /metrics.
#
# On GDBM only (surface): /v1/models lists only the key's models; /v1/key
# and /v1/auth/key in OpenRouter's shape for a team key (--expires DAY: the
# end of that UTC day), the double's own
# answer for the operator's key; /stats, /metrics, /__cron and the /status
# login for --admin keys only (403 admin_key_required on /stats and /metrics, 403 at the login); every
# field of /stats keys.<name> (the reasoning tokens of an answer whose
# usage has them included, in /v1/key too), the orgw_key_* families of
# /metrics, the Keys table of /status; the log line's " key=NAME"; the openai SDK
# (chat.mjs) and Claude Code (claude -p, ANTHROPIC_API_KEY) with a team
# key, served when the key allows anthropic/*, refused with nothing sent
# upstream when it does not.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0670-team-keys-secret-0123456789
# Longer than every stream here (< 4 s).
TIMEOUT_MS=6000
M=deepseek/deepseek-v3.2
AG=$ORGW_ROOT/tests/agents
SRC=10    # the next 127.0.0.N source address (see refuse401)

# key ARGS...: orgw-score key ARGS; prints what it printed on stdout (a
# key for add and rotate); RC.  Every key made goes into $TK/keys.list for
# the leak check ($TK, the test's own files, is left out of that check).
key() {
	local out
	out=$("$SCORER" --config "$ORGW_CONFIG_FILE" key "$@" 2>"$TK/key.err")
	RC=$?
	[[ $out == orgw-* ]] && printf '%s\n' "$out" >>"$TK/keys.list"
	printf '%s' "$out"
}
# newkey NAME ARGS...: key add; a failure is a failed check.
newkey() {
	local k
	k=$(key add "$@")
	[[ $k == orgw-* ]] || t_fail "key add $*" "$(cat "$TK/key.err")"
	printf '%s' "$k"
}
# bg_stream KEY MODEL CONTENT OUT: a streamed chat request in the
# background (its body in OUT, its status in OUT.code); sets BG_PID.
bg_stream() {
	curl -sS -N --max-time 20 -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		-o "$4" -w '%{http_code}' --data-binary "$(body_chat "$2" "$3" ',"stream":true')" \
		"$ORGW_URL/v1/chat/completions" >"$4.code" 2>/dev/null &
	BG_PID=$!
}
body_chat() { # MODEL [CONTENT] [EXTRA JSON members]
	printf '{"model":"%s","messages":[{"role":"user","content":"%s"}]%s}' "$1" "${2:-hi}" "${3:-}"
}
# ask KEY API MODEL [CONTENT] [EXTRA] [CURL_ARG...]: one generation request.
ask() {
	local k=$1 api=$2 m=$3 c=${4:-hi} x=${5:-} path b
	shift 5 2>/dev/null || shift $#
	case $api in
	chat) path=/v1/chat/completions b=$(body_chat "$m" "$c" "$x") ;;
	messages) path=/v1/messages
		b=$(printf '{"model":"%s","max_tokens":100,"messages":[{"role":"user","content":"%s"}]%s}' "$m" "$c" "$x") ;;
	responses) path=/v1/responses b=$(printf '{"model":"%s","input":"%s"%s}' "$m" "$c" "$x") ;;
	esac
	HTTP_KEY=$k orgw_http POST "$path" "$b" "$@"
}
# What the double was asked on the three APIs (4xx included).
upstream_n() { json_get "$(double_ctl GET stats)" 'Object.values(j.apis).reduce((a, b) => a + b, 0)'; }
billed() { json_get "$(double_ctl GET stats)" "j.billed_by_model['$1'] ?? 0"; }
stats() { orgw_curl /stats >"$TK/stats.json"; }
# kstat NAME EXPR: EXPR over the key's /stats entry (k), fetched now.
kstat() { stats; json_get "$TK/stats.json" "((k) => ($2))(j.keys['$1'])"; }
close_to() { # A B: |A - B| <= 1e-9, both numbers
	node -e 'const [a, b] = process.argv.slice(1).map(Number);
process.exit(Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= 1e-9 ? 0 : 1);' "$1" "$2" ||
		{ echo "$1 != $2"; return 1; }
}
# A 401 comes from its own 127.0.0.N: the per-address guard (10 refused
# keys a minute) must not turn the later ones into 429s.
refuse401() { # KEY: sets HTTP_STATUS, HTTP_BODY
	SRC=$((SRC + 1))
	ask "$1" chat "$M" hi '' --interface "127.0.0.$SRC"
}
# settle NAME N: until the key counts N requests (15 s at most: a
# cancelled generation is looked up after the stream's end).
settle() {
	local i
	for ((i = 0; i < 150; i++)); do
		[ "$(kstat "$1" 'k.today.requests')" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
SLOW='[double] {\"chunks\":10,\"spacing_ms\":200}' # about 2 s

enforce() { # BACKEND: gdbm or redis
	local be=$1 kt ka kb km kr kc kl kx kd kv ko kn kexp n0 c i body401 b sec ra first
	local pid st cost full gen
	mkdir -p "$TK"

	# --- models ----------------------------------------------------------
	kt=$(newkey team --models 'deepseek/*,anthropic/*')
	n0=$(upstream_n)
	ask "$kt" chat openai/gpt-5
	t_eq "$be: chat, a model outside the globs: 403 permission_error model_not_allowed" \
		"403 permission_error model_not_allowed" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type + " " + j.error.code')"
	ask "$kt" responses openai/gpt-5
	t_eq "$be: Responses: the same 403, OpenAI's shape" "403 permission_error model_not_allowed" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type + " " + j.error.code')"
	ask "$kt" messages openai/gpt-5
	t_eq "$be: Messages: 403 in Anthropic's shape" "403 error permission_error true" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type + " " + j.error.type + " " + /openai\/gpt-5/.test(j.error.message)')"
	ask "$kt" chat "$M" hi ',"models":["deepseek/deepseek-v3.2","openai/gpt-5"]'
	t_eq "$be: one id of \"models\" outside: 403 model_not_allowed" "403 model_not_allowed" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	ask "$kt" chat openrouter/auto
	t_eq "$be: openrouter/auto, not in the globs: 403 (no routing guess)" "403 model_not_allowed" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	HTTP_KEY=$kt orgw_http POST /v1/messages/count_tokens \
		'{"model":"openai/gpt-5","messages":[{"role":"user","content":"hi"}]}'
	t_eq "$be: Messages count_tokens: the same 403" "403 error permission_error" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type + " " + j.error.type')"
	t_eq "$be: ... none of the six reached the double" "$n0" "$(upstream_n)"
	ask "$kt" chat "$M"
	t_eq "$be: an allowed model: 200, the double's answer" "200 Hello from deepseek" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.choices[0].message.content')"
	ask "$kt" chat "$M" hi ',"models":["deepseek/deepseek-v3.2","anthropic/claude-sonnet-4.5"]'
	t_eq "$be: every id of \"models\" allowed: 200" 200 "$HTTP_STATUS"
	ka=$(newkey auto --models 'openrouter/auto')
	ask "$ka" chat openrouter/auto
	t_eq "$be: a key of openrouter/auto: it is served" 200 "$HTTP_STATUS"
	ask "$ka" chat "$M"
	t_eq "$be: ... but not $M, whatever auto might pick" "403 model_not_allowed" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	t_eq "$be: /stats: 2 requests, 6 model refusals, no other refusal" "2 6 0 0 0" \
		"$(kstat team '[k.today.requests, k.today.refused_model, k.today.refused_rpm, k.today.refused_concurrent, k.today.refused_budget].join(" ")')"
	t_eq "$be: ... month the same" "2 6" "$(kstat team '[k.month.requests, k.month.refused_model].join(" ")')"

	# --- 401: one body for every key that is not a key --------------------
	refuse401 wrong-key
	body401=$HTTP_BODY
	t_eq "$be: a wrong key: 401 invalid_api_key incorrect API key provided" \
		"401 invalid_api_key incorrect API key provided" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code + " " + j.error.message')"
	kx=orgw-$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 43)
	kd=$(newkey dis --models 'deepseek/*')
	kv=$(newkey rev)
	kexp=$(newkey old --expires 2020-01-01)
	ko=$(newkey soon)
	ask "$ko" chat "$M"
	t_eq "$be: a key that is about to expire works" 200 "$HTTP_STATUS"
	key set soon --expires 1 >/dev/null
	key disable dis >/dev/null
	key revoke rev >/dev/null
	n0=$(upstream_n)
	for row in "unknown:$kx" "badly shaped:orgw-abc" "another shape:sk-or-v1-0123456789abcdef" \
		"disabled:$kd" "revoked:$kv" "expired at add:$kexp" "expired by set:$ko"; do
		refuse401 "${row#*:}"
		t_eq "$be: ${row%%:*} key: 401 with the same body" "401 $body401" "$HTTP_STATUS $HTTP_BODY"
	done
	t_eq "$be: ... none reached the double" "$n0" "$(upstream_n)"
	t_eq "$be: /stats: disabled, expired, expired, the revoked one gone" "disabled expired expired false" \
		"$(stats; json_get "$TK/stats.json" '[j.keys.dis.state, j.keys.old.state, j.keys.soon.state, "rev" in j.keys].join(" ")')"
	key enable dis >/dev/null
	ask "$kd" chat "$M"
	t_eq "$be: disabled, then enabled: 200" 200 "$HTTP_STATUS"

	# --- spend: what the double reported ----------------------------------
	kb=$(newkey spender --models 'tk/*')
	cost=0
	for api in chat messages responses chat; do
		ask "$kb" "$api" tk/spend-a "spend $api"
		c=$(json_get "$HTTP_BODY" 'j.usage.cost')
		cost=$(node -e "process.stdout.write(String($cost + $c))")
	done
	t_check "$be: spend: 4 answers on 3 APIs = the usage.cost they carried" \
		close_to "$(kstat spender 'k.today.spend_usd')" "$cost"
	t_check "$be: ... = the double's billed_by_model for their model" close_to "$cost" "$(billed tk/spend-a)"
	t_eq "$be: ... counted 4 requests, tokens" "4 true true" \
		"$(kstat spender '[k.today.requests, k.today.prompt_tokens > 0, k.today.completion_tokens === 12].join(" ")')"

	# --- budget: 402 ------------------------------------------------------
	ask "$ORGW_KEY" chat tk/budget-op "budget"
	c=$(json_get "$HTTP_BODY" 'j.usage.cost')
	b=$(node -e "process.stdout.write((1.5 * $c).toFixed(12))")
	kb=$(newkey budget --models 'tk/*' --budget-usd-day "$b")
	ask "$kb" chat tk/budget "budget"
	st=$HTTP_STATUS
	ask "$kb" chat tk/budget "budget"
	st="$st $HTTP_STATUS"
	n0=$(upstream_n)
	ask "$kb" chat tk/budget "budget"
	t_eq "$be: a day budget of 1.5 answers: 200, 200, then 402 insufficient_quota budget_exceeded" \
		"200 200 402 insufficient_quota budget_exceeded" \
		"$st $HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type + " " + j.error.code')"
	ask "$kb" messages tk/budget "budget"
	t_eq "$be: ... Messages: 402 in Anthropic's shape" "402 error" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type')"
	ask "$kb" responses tk/budget "budget"
	t_eq "$be: ... Responses: 402 budget_exceeded" "402 budget_exceeded" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	t_eq "$be: ... the 402s reached nobody upstream" "$n0" "$(upstream_n)"
	t_eq "$be: ... 2 requests, 3 budget refusals, nothing left of the day" "2 3 0" \
		"$(kstat budget '[k.today.requests, k.today.refused_budget, k.remaining_usd_day].join(" ")')"
	t_check "$be: ... its spend = the double's billed for it (2 answers)" \
		close_to "$(kstat budget 'k.today.spend_usd')" "$(billed tk/budget)"
	km=$(newkey monthly --models 'tk/*' --budget-usd-month 0.000000001)
	ask "$km" chat tk/month
	st=$HTTP_STATUS
	ask "$km" chat tk/month
	t_eq "$be: a month budget: 200 while nothing is spent, then 402" "200 402 budget_exceeded" \
		"$st $HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"

	# --- rpm: 429 until the first request leaves the 60 s window --------
	kr=$(newkey rpm --models 'tk/*' --rpm 3)
	st=
	first=$(($(date +%s%N) / 1000000))
	for i in 1 2 3; do
		ask "$kr" chat tk/rpm
		st="$st$HTTP_STATUS "
	done
	n0=$(upstream_n)
	ask "$kr" chat tk/rpm
	sec=$((($(date +%s%N) / 1000000 - first + 999) / 1000))
	ra=$(http_header Retry-After)
	t_eq "$be: --rpm 3: 3 answers, then 429 rate_limit_error rate_limit_exceeded" \
		"200 200 200 429 rate_limit_error rate_limit_exceeded" \
		"$st$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type + " " + j.error.code')"
	# The first request's 5 s slot leaves the sliding window 60 to 65 s
	# after it was sent.
	t_check "$be: ... Retry-After $ra: until the first request ($sec s ago) leaves the window, 1..65" \
		test "${ra:-0}" -ge 1 -a "${ra:-0}" -le 65 -a "${ra:-0}" -ge $((59 - sec)) -a "${ra:-0}" -le $((67 - sec))
	ask "$kr" messages tk/rpm
	t_eq "$be: ... Messages: 429 rate_limit_error in Anthropic's shape, Retry-After" "429 error rate_limit_error yes" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type + " " + j.error.type') $([ -n "$(http_header Retry-After)" ] && echo yes)"
	t_eq "$be: ... the 429s reached nobody upstream" "$n0" "$(upstream_n)"
	t_eq "$be: ... 3 requests, 2 rpm refusals" "3 2" "$(kstat rpm '[k.today.requests, k.today.refused_rpm].join(" ")')"

	# --- concurrent: 429 while its stream runs ----------------------------
	kc=$(newkey conc --models 'tk/*' --concurrent 1)
	bg_stream "$kc" tk/conc "slow\\n$SLOW" "$TK/conc.out"
	pid=$BG_PID
	double_wait_active 1
	n0=$(upstream_n)
	ask "$kc" chat tk/conc
	ra=$(http_header Retry-After)
	t_eq "$be: --concurrent 1, a stream running: 429 concurrency_limit_exceeded" \
		"429 concurrency_limit_exceeded" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	t_check "$be: ... Retry-After $ra in 1..60" test "${ra:-0}" -ge 1 -a "${ra:-0}" -le 60
	t_eq "$be: ... not sent upstream" "$n0" "$(upstream_n)"
	wait "$pid"
	ask "$kc" chat tk/conc
	t_eq "$be: ... after the stream: 200" 200 "$HTTP_STATUS"
	t_eq "$be: ... 2 requests, 1 concurrency refusal" "2 1" \
		"$(kstat conc '[k.today.requests, k.today.refused_concurrent].join(" ")')"

	# --- rotation while a stream is in flight -----------------------------
	kn=$(newkey rot --models 'tk/*')
	bg_stream "$kn" tk/rot "slow\\n$SLOW" "$TK/rot.out"
	pid=$BG_PID
	double_wait_active 1
	ko=$kn
	kn=$(key rotate rot)
	t_eq "$be: rotate while its stream runs: exit 0, a new key" "0 yes" \
		"$RC $([[ $kn == orgw-* && $kn != "$ko" ]] && echo yes)"
	wait "$pid"
	t_eq "$be: ... the stream in flight ends 200 and whole ([DONE])" "200 1" \
		"$(cat "$TK/rot.out.code") $(grep -c '^data: \[DONE\]' "$TK/rot.out")"
	settle rot 1
	t_eq "$be: ... and is counted in keys.rot.today.requests" 1 "$(kstat rot 'k.today.requests')"
	refuse401 "$ko"
	t_eq "$be: ... the old key then: the same 401" "401 $body401" "$HTTP_STATUS $HTTP_BODY"
	ask "$kn" chat tk/rot
	t_eq "$be: ... the new key: 200, counted under the same name" "200 2" \
		"$HTTP_STATUS $(kstat rot 'k.today.requests')"

	# --- a client that leaves mid-stream ----------------------------------
	# The operator's whole answer first: its cost is the ceiling (the same
	# locked provider, the same prices).
	b='leave\n[double] {\"chunks\":16,\"spacing_ms\":200}'
	ask "$ORGW_KEY" chat tk/leave "$b" ',"stream":true'
	full=$(printf '%s\n' "$HTTP_BODY" | grep -o '"cost":[0-9.e-]*' | tail -n 1 | cut -d: -f2)
	c=$(billed tk/leave)
	double_ctl POST config '{"generation_ready_ms":800}' >/dev/null
	kl=$(newkey leaver --models 'tk/*')
	curl -sS -N --max-time 1.3 -H "Authorization: Bearer $kl" -H 'Content-Type: application/json' \
		--data-binary "$(body_chat tk/leave "$b" ',"stream":true')" \
		"$ORGW_URL/v1/chat/completions" >"$TK/leave.out" 2>/dev/null
	gen=$(grep -o '"id":"gen-[^"]*"' "$TK/leave.out" | head -n 1 | cut -d'"' -f4)
	settle leaver 1
	double_ctl POST config '{"generation_ready_ms":0}' >/dev/null
	cost=$(kstat leaver 'k.today.spend_usd')
	t_check "$be: a client gone after 1.3 s of a 3.2 s stream: spend = the double's billed for it" \
		close_to "$cost" "$(node -e "process.stdout.write(String($(billed tk/leave) - $c))")"
	t_check "$be: ... more than nothing, less than the whole answer ($cost < $full)" \
		node -e "process.exit($cost > 0 && $cost < $full ? 0 : 1)"
	curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" "$DOUBLE_URL/api/v1/generation?id=$gen" >"$TK/gen.json"
	t_check "$be: ... = the total_cost of its generation $gen" \
		close_to "$cost" "$(json_get "$TK/gen.json" 'j.data.total_cost')"
	t_eq "$be: ... which the double marks cancelled" true "$(json_get "$TK/gen.json" 'j.data.cancelled')"
	t_eq "$be: ... counted once, as one request" 1 "$(kstat leaver 'k.today.requests')"
	t_match "$be: ... its log line: client_abort, key=leaver" 'status=499 .*outcome=client_abort key=leaver$' \
		"$(grep 'model=tk/leave ' "$ORGW_LOG" | tail -n 1)"

	leak_check "$be"
}

# leak_check BACKEND: no plaintext key in the logs, the state, the keys
# store, /stats, /metrics, /status, the double's log.
leak_check() {
	local be=$1 k leak="" rk db tok
	local -a keys
	orgw_curl /stats >"$ORGW_T/leak.stats"
	orgw_curl /metrics >"$ORGW_T/leak.metrics"
	tok=$(curl -sS -o /dev/null -D - --data-raw "key=$ORGW_KEY" "$ORGW_URL/status" |
		tr -d '\r' | sed -n 's/^Set-Cookie: \([^;]*\).*/\1/Ip')
	curl -sS -H "Cookie: $tok" "$ORGW_URL/status" >"$ORGW_T/leak.status"
	double_ctl GET 'log?limit=10000' >"$ORGW_T/leak.double"
	mapfile -t keys <"$TK/keys.list"
	for k in "${keys[@]}"; do
		leak=$(grep -rlF --exclude-dir=t -- "$k" "$ORGW_T" 2>/dev/null)
		[ -z "$leak" ] || break
		if [ "$be" = redis ]; then
			for db in 0 3; do
				for rk in $(orgw_redis_cli -n $db --scan --pattern '*'); do
					orgw_redis_cli -n $db get "$rk" 2>/dev/null | grep -qF -- "$k" && leak="redis $db $rk"
				done
			done
			[ -z "$leak" ] || break
		fi
	done
	t_eq "$be: no plaintext key (${#keys[@]} made) in the logs, state, keys store, /stats, /metrics, /status" "" "$leak"
	t_check "$be: ... and the files looked at exist" \
		test -s "$ORGW_LOG" -a -s "$ORGW_T/leak.stats" -a -s "$ORGW_T/leak.metrics" -a -s "$ORGW_T/leak.status"
}

surface() {
	local kt kadm kplain kcc kno out n0 ck page want
	kt=$(newkey web --models 'deepseek/*,anthropic/*' --rpm 600 --concurrent 16 \
		--budget-usd-day 5 --budget-usd-month 50 --expires 2099-12-31)
	kadm=$(newkey ops --admin --models 'none/*')
	kplain=$(newkey plain)

	# --- /v1/models, /v1/key ---------------------------------------------
	# The double lists the models it has seen: one of anthropic/ too.
	ask "$ORGW_KEY" chat anthropic/claude-opus-4.5
	HTTP_KEY=$kt orgw_http GET /v1/models
	t_eq "/v1/models with a team key: only its models (both globs there)" "200 true true true" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" '[j.data.every((m) => /^(deepseek|anthropic)\//.test(m.id)), j.data.some((m) => m.id.startsWith("deepseek/")), j.data.some((m) => m.id.startsWith("anthropic/"))].join(" ")')"
	orgw_http GET /v1/models
	t_eq "/v1/models with the operator's key: others too" true \
		"$(json_get "$HTTP_BODY" 'j.data.some((m) => !/^(deepseek|anthropic)\//.test(m.id))')"
	# Its first answer's usage has reasoning tokens (2 of its output).
	double_ctl POST config '{"reasoning_tokens":2}' >/dev/null
	ask "$kt" chat "$M" "one"
	double_ctl POST config '{"reasoning_tokens":0}' >/dev/null
	for p in /v1/key /v1/auth/key; do
		HTTP_KEY=$kt orgw_http GET "$p"
		t_eq "$p with a team key: OpenRouter's shape, its name, the month's limit, rpm" \
			"200 web 50 true monthly true true 600 1m 2100-01-01" \
			"$HTTP_STATUS $(json_get "$HTTP_BODY" '((d) => [d.label, d.limit, Math.abs(d.limit_remaining - (50 - d.usage)) < 1e-12, d.limit_reset, d.usage > 0 && d.usage === d.usage_daily, d.usage === d.usage_monthly, d.rate_limit.requests, d.rate_limit.interval, d.expires_at.slice(0, 10)].join(" "))(j.data)')"
	done
	t_eq "/v1/key: orgw's own part: models, budgets, concurrency, requests" \
		'["deepseek/*","anthropic/*"] 5 50 16 1' \
		"$(json_get "$HTTP_BODY" '((o) => [JSON.stringify(o.models), o.budget_usd_day, o.budget_usd_month, o.concurrent, o.requests_today].join(" "))(j.data.orgw)')"
	t_eq "/v1/key: today's and this month's figures, the answer's reasoning tokens included" \
		"1 1 2 2 true" \
		"$(json_get "$HTTP_BODY" '((o) => [o.today.requests, o.month.requests, o.today.reasoning_tokens, o.month.reasoning_tokens, o.today.completion_tokens >= 2].join(" "))(j.data.orgw)')"
	orgw_http GET /v1/key
	out=$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" "$DOUBLE_URL/api/v1/key")
	t_eq "/v1/key with the operator's key: the double's answer for the upstream key" \
		"200 $(json_get "$out" 'j.data.label') null" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.data.label + " " + j.data.limit')"
	t_eq "... never the upstream key itself" 0 "$(grep -c -- "$UPSTREAM_KEY" "$HTTP_BODY_FILE")"

	# --- admin paths -----------------------------------------------------
	for p in /stats /metrics; do
		t_eq "$p with an --admin team key: 200" 200 \
			"$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $kadm" "$ORGW_URL$p")"
	done
	t_match "POST /__cron with an --admin team key: served (200, or 429 too soon)" '^(200|429)$' \
		"$(curl -sS -o /dev/null -w '%{http_code}' -X POST -d '' -H "Authorization: Bearer $kadm" "$ORGW_URL/__cron")"
	HTTP_KEY=$kplain orgw_http GET /stats
	t_eq "/stats with a team key without --admin: 403 permission_error admin_key_required" \
		"403 permission_error admin_key_required" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type + " " + j.error.code')"
	t_eq "/__cron with it: 403 admin_key_required" "403 admin_key_required" \
		"$(curl -sS -o "$TK/cron" -w '%{http_code}' -X POST -d '' -H "Authorization: Bearer $kplain" "$ORGW_URL/__cron") $(json_get "$TK/cron" 'j.error.code')"
	HTTP_KEY=$kplain orgw_http GET /metrics
	t_eq "/metrics with it: 403 admin_key_required (a valid key, not a wrong one)" \
		"403 admin_key_required" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	HTTP_KEY=$kadm orgw_http GET /v1/models
	t_eq "an --admin key's models are still its globs (none/*: none)" "200 0" \
		"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.data.length')"
	ck=$(curl -sS -o /dev/null -D - --data-raw "key=$kadm" "$ORGW_URL/status" | tr -d '\r')
	t_eq "/status login form with an --admin team key: 303 and a cookie" "303 1" \
		"$(sed -n 's/^HTTP[^ ]* \([0-9]*\).*/\1/p' <<<"$ck") $(grep -ci '^Set-Cookie: orgw_status=' <<<"$ck")"
	ck=$(sed -n 's/^Set-Cookie: \([^;]*\).*/\1/Ip' <<<"$ck")
	t_eq "/status login with a plain team key: 403" 403 \
		"$(curl -sS -o /dev/null -w '%{http_code}' --interface 127.0.0.9 --data-raw "key=$kplain" "$ORGW_URL/status")"

	# --- the SDK, Claude Code --------------------------------------------
	out=$(orgw_chat --key "$kt" --model "$M")
	t_eq "openai SDK (chat.mjs), a team key: the answer" "true 200 Hello from deepseek" \
		"$(json_get "$out" '[j.ok, j.status, j.content].join(" ")')"
	out=$(ORGW_KEY=$kt orgw_chat --model "$M" --stream)
	t_eq "... streamed: whole, [DONE], usage" "true Hello from deepseek true true" \
		"$(json_get "$out" '[j.ok, j.content, j.done, j.usage?.cost > 0].join(" ")')"
	n0=$(upstream_n)
	out=$(orgw_chat --key "$kt" --model openai/gpt-5)
	t_eq "... a model outside its globs: the SDK's 403 model_not_allowed, nothing upstream" \
		"false 403 model_not_allowed $n0" \
		"$(json_get "$out" '[j.ok, j.status, j.error?.code].join(" ")') $(upstream_n)"

	kcc=$(newkey claude --models 'anthropic/*')
	out=$(node "$AG/agent.mjs" --client claude --base "$ORGW_URL" --key "$kcc" \
		--model anthropic/claude-haiku-4.5 --timeout 60000)
	t_match "claude -p, ANTHROPIC_API_KEY = a key of anthropic/*: exits 0 with the double's answer" \
		'^true Hello from ' "$(json_get "$out" 'j.ok + " " + j.answer')"
	t_check "... its spend = the double's billed for that model" \
		close_to "$(kstat claude 'k.today.spend_usd')" "$(billed anthropic/claude-haiku-4.5)"
	t_eq "... more than nothing, its requests counted" "true true" \
		"$(kstat claude '[k.today.spend_usd > 0, k.today.requests >= 1].join(" ")')"
	kno=$(newkey noclaude --models 'deepseek/*')
	n0=$(upstream_n)
	out=$(node "$AG/agent.mjs" --client claude --base "$ORGW_URL" --key "$kno" \
		--model anthropic/claude-haiku-4.5 --retries 0 --timeout 60000)
	t_eq "claude -p with a key of deepseek/*: fails (not timed out), orgw's 403, nothing upstream" \
		"false false true $n0" \
		"$(json_get "$out" '[j.exit_code === 0, j.timed_out, /403/.test(j.error)].join(" ")') $(upstream_n)"
	t_check "... counted as a model refusal, no request" \
		test "$(kstat noclaude '[k.today.refused_model >= 1, k.today.requests].join(" ")')" = "true 0"

	# --- /stats, /metrics, /status -----------------------------------------
	stats
	t_eq "/stats keys.web: every field" \
		"state admin models rpm concurrent budget_usd_day budget_usd_month remaining_usd_day remaining_usd_month last_used today month" \
		"$(json_get "$TK/stats.json" 'Object.keys(j.keys.web).join(" ")')"
	t_eq "... today and month: every counter" \
		"requests prompt_tokens cached_tokens completion_tokens reasoning_tokens spend_usd saved_usd refused_rpm refused_concurrent refused_budget refused_model" \
		"$(json_get "$TK/stats.json" 'Object.keys(j.keys.web.today).join(" ") + (JSON.stringify(Object.keys(j.keys.web.today)) === JSON.stringify(Object.keys(j.keys.web.month)) ? "" : " (month differs)")')"
	t_eq "... its values" 'active false ["deepseek/*","anthropic/*"] 600 16 5 50 true true true' \
		"$(json_get "$TK/stats.json" '((k) => [k.state, k.admin, JSON.stringify(k.models), k.rpm, k.concurrent, k.budget_usd_day, k.budget_usd_month, Math.abs(k.remaining_usd_day - (5 - k.today.spend_usd)) < 1e-12, Math.abs(Date.now() / 1000 - k.last_used) < 120, k.today.requests === 3].join(" "))(j.keys.web)')"
	t_eq "... its reasoning tokens: the 2 of its first answer, today and this month" "2 2" \
		"$(json_get "$TK/stats.json" '[j.keys.web.today.reasoning_tokens, j.keys.web.month.reasoning_tokens].join(" ")')"
	t_eq "... the admin key: admin true; states of the others" "true active" \
		"$(json_get "$TK/stats.json" 'j.keys.ops.admin + " " + j.keys.plain.state')"
	orgw_curl /metrics >"$TK/metrics"
	want=$(json_get "$TK/stats.json" '((m) => [
`orgw_key_requests_total{key="web"} ${m.requests}`,
`orgw_key_tokens_total{key="web",type="input"} ${m.prompt_tokens}`,
`orgw_key_tokens_total{key="web",type="cache_read"} ${m.cached_tokens}`,
`orgw_key_tokens_total{key="web",type="output"} ${m.completion_tokens}`,
`orgw_key_tokens_total{key="web",type="reasoning"} ${m.reasoning_tokens}`,
`orgw_key_refused_total{key="web",reason="rpm"} 0`,
`orgw_key_refused_total{key="web",reason="concurrent"} 0`,
`orgw_key_refused_total{key="web",reason="budget"} 0`,
`orgw_key_refused_total{key="web",reason="model"} 1`].join("\n"))(j.keys.web.month)')
	t_eq "/metrics: orgw_key_requests_total, _tokens_total, _refused_total of web" "$want" \
		"$(grep -E '^orgw_key_(requests|tokens|refused)_total\{key="web"' "$TK/metrics")"
	t_check "... orgw_key_spend_usd_total, _savings_usd_total, _budget_remaining_usd day and month" \
		node -e '
const fs = require("fs");
const m = fs.readFileSync(process.argv[1], "utf8"), k = JSON.parse(fs.readFileSync(process.argv[2], "utf8")).keys.web;
const v = (re) => { const x = m.match(re); return x ? Number(x[1]) : NaN; };
const ok = [
  [v(/^orgw_key_spend_usd_total\{key="web"\} (\S+)$/m), k.month.spend_usd],
  [v(/^orgw_key_savings_usd_total\{key="web"\} (\S+)$/m), k.month.saved_usd],
  [v(/^orgw_key_budget_remaining_usd\{key="web",window="day"\} (\S+)$/m), k.remaining_usd_day],
  [v(/^orgw_key_budget_remaining_usd\{key="web",window="month"\} (\S+)$/m), k.remaining_usd_month],
].every(([a, b]) => Math.abs(a - b) <= 1e-9);
const none = !/orgw_key_budget_remaining_usd\{key="plain"/.test(m);
if (!ok || !none) { console.log(m.split("\n").filter((l) => l.includes("key=\"web\"") || l.includes("key=\"plain\"")).join("\n")); process.exit(1); }' \
		"$TK/metrics" "$TK/stats.json"
	page=$(curl -sS -H "Cookie: $ck" "$ORGW_URL/status")
	t_check "/status (logged in with the --admin key): the Keys table with web, ops, claude" \
		bash -c 'p=$1; [[ $p == *"<h2>Keys</h2>"* && $p == *">web<"* && $p == *">ops<"* && $p == *">claude<"* ]]' _ "$page"
	t_check "... its tokens column has the reasoning tokens" \
		bash -c 'p=$1; [[ $p == *"<th>prompt / cached / completion / reasoning tokens</th>"* ]]' _ "$page"

	# --- the log line ----------------------------------------------------
	t_eq "the log: web's 3 answers and its refusal, each line ending key=web" "3 1" \
		"$(grep -c 'api=.* status=200 .* key=web$' "$ORGW_LOG") $(grep -c 'api=.* status=403 .*outcome=model_not_allowed key=web$' "$ORGW_LOG")"
	t_eq "... the operator's lines carry no key=" "" \
		"$(grep 'api=chat model=tk/leave ' "$ORGW_LOG" | grep -v 'key=leaver$' | grep ' key=')"
}

if ! [ -f "$AG/node_modules/@anthropic-ai/claude-code/package.json" ]; then
	t_fail "Claude Code is installed in tests/agents (npm ci there)"
	exit 1
fi

# GDBM.
orgw_start KEYS_SECRET="$SECRET" REQUEST_TIMEOUT_MS=$TIMEOUT_MS
TK=$ORGW_T/t
enforce gdbm
surface
leak_check gdbm
t_check "gdbm: no crash in the log" sh -c "! grep -Ei 'segfault|sanitizer|abort\(' '$ORGW_LOG'"

# Redis.
if command -v redis-server >/dev/null; then
	ORGW_STATE_BACKEND=redis orgw_start KEYS_SECRET="$SECRET" REQUEST_TIMEOUT_MS=$TIMEOUT_MS
	TK=$ORGW_T/t
	enforce redis
	t_check "redis: no crash in the log" sh -c "! grep -Ei 'segfault|sanitizer|abort\(' '$ORGW_LOG'"
else
	t_skip "redis: redis-server is not installed"
fi
