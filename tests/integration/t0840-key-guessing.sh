#!/bin/bash
# t0840-key-guessing: keys cannot be guessed at full speed.
#   1. A /status cookie whose HMAC is right but whose expiry lies past the
#      12 h lifetime (99999999999) logs nobody in; one made for 11 h does.
#   2. Every refused key (a wrong client key, METRICS_KEY, /status login)
#      logs one line with the client's address; a missing key does not.
#   3. After GUARD_FAILS_PER_MINUTE (10) different refused keys from one
#      address, that address gets 429 with Retry-After at once, whatever
#      key it sends but the operator's (CUSTOM_ACCESS_KEY: served, its
#      /status login too), on every path but /healthz; 200 more guesses
#      take well under a second in all (no sleep holds a thread).
#   4. deploy/fail2ban/filter.d/orgw.conf matches exactly those lines
#      (fail2ban-regex when installed, else the same regex with grep -E).
#   5. Only wrong keys count, per key as well as per address: a valid
#      team key without --admin on /metrics and at the /status login is
#      a 403 and no refusal, 30 times over; a revoked key an agent keeps
#      retrying is held itself (429 after 10) while a valid team key and
#      the operator's key from that address are served; 10 different
#      wrong keys then hold the address for the team key (a right guess
#      is not told apart) but never for the operator's key.
# One worker, as the count is per process.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=1 orgw_start METRICS_KEY=metrics-test-key KEYS_SECRET=t0840-key-guessing-secret-0123456789
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
FILTER=$ORGW_ROOT/deploy/fail2ban/filter.d/orgw.conf

# 1. The cookie's expiry is capped.
cookie_for() { # EXPIRY: a token as orgw makes it, for the client key
	printf '%s.%s' "$1" "$(printf 'orgw-status-v1%s' "$1" |
		openssl dgst -sha256 -hmac "$ORGW_KEY" -r | cut -d' ' -f1)"
}
page() { # COOKIE: 1 when /status shows the page, 0 for the login form
	if curl -sS -H "Cookie: orgw_status=$1" "$ORGW_URL/status" | grep -q 'section class="model"'; then
		echo 1
	else
		echo 0
	fi
}
orgw_http POST /v1/chat/completions '{"model":"test/a","messages":[{"role":"user","content":"hi"}]}'
t_eq "a model to show" 200 "$HTTP_STATUS"
t_eq "a cookie made for 11 h ahead opens the page" 1 "$(page "$(cookie_for $(($(date +%s) + 39600)))")"
t_eq "a cookie with a valid HMAC for expiry 99999999999 does not" 0 "$(page "$(cookie_for 99999999999)")"
t_eq "nor one for 13 h ahead" 0 "$(page "$(cookie_for $(($(date +%s) + 46800)))")"

# 2. Refusals are logged with the address; a missing key is not one.
: >"$ORGW_LOG"
HTTP_KEY= orgw_http GET /stats ""
t_eq "no key: 401" 401 "$HTTP_STATUS"
t_eq "... and no refusal logged" 0 "$(grep -c 'auth: ' "$ORGW_LOG")"
HTTP_KEY=wrong-metrics orgw_http GET /metrics ""
t_eq "a wrong METRICS_KEY: 401" 401 "$HTTP_STATUS"
code=$(curl -sS -o /dev/null -w '%{http_code}' --data-raw 'key=wrong-login' "$ORGW_URL/status")
t_eq "a wrong /status login: 401" 401 "$code"
for i in $(seq 8); do
	HTTP_KEY=wrong-$i orgw_http GET /stats ""
done
t_eq "8 wrong client keys: 401" 401 "$HTTP_STATUS"
t_eq "10 refusals logged, each with the address" 10 \
	"$(grep -cE 'orgw\[[0-9]+\]: auth: time=[0-9]+ refused=(client_key|metrics_key|status_login) addr=127\.0\.0\.1 path=/' "$ORGW_LOG")"
t_eq "one for each kind" "1 1 8" \
	"$(grep -c 'refused=metrics_key' "$ORGW_LOG") $(grep -c 'refused=status_login' "$ORGW_LOG") $(grep -c 'refused=client_key' "$ORGW_LOG")"
t_eq "never the key sent" 0 "$(grep -c 'wrong-' "$ORGW_LOG")"

# 3. The 11th and later get 429 at once, whatever key they send.
HTTP_KEY=wrong-9 orgw_http GET /stats ""
t_eq "the next guess: 429" 429 "$HTTP_STATUS"
ra=$(http_header Retry-After)
t_check "with Retry-After of 1..60 s ($ra)" test "${ra:-0}" -ge 1 -a "${ra:-0}" -le 60
t_eq "an OpenAI error" too_many_refused_keys "$(json_get "$HTTP_BODY" 'j.error.code')"
orgw_http GET /stats ""
t_eq "the operator's key from that address: served (never locked out)" 200 "$HTTP_STATUS"
HTTP_KEY=wrong-1 orgw_http POST /v1/messages '{"model":"test/a","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}'
t_eq "Messages: 429, an Anthropic rate_limit_error" "429 rate_limit_error" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.type')"
code=$(curl -sS -o /dev/null -w '%{http_code}' --data-raw "key=wrong-login-2" "$ORGW_URL/status")
t_eq "a /status login: 429" 429 "$code"
code=$(curl -sS -o /dev/null -c "$ORGW_T/jar" -w '%{http_code}' --data-raw "key=$ORGW_KEY" "$ORGW_URL/status")
t_eq "... but the operator's: logged in (303)" 303 "$code"
t_eq "... and its cookie opens the page from that address" 1 \
	"$(page "$(awk '$6 == "orgw_status" { print $7 }' "$ORGW_T/jar")")"
t_eq "... a made-up cookie does not: 429" 429 \
	"$(curl -sS -o /dev/null -w '%{http_code}' -H 'Cookie: orgw_status=1.abc' "$ORGW_URL/status")"
orgw_http GET /healthz ""
t_eq "/healthz still answers" 200 "$HTTP_STATUS"
t0=$(date +%s%N)
n429=0
for i in $(seq 200); do
	printf 'url = "%s/stats"\nheader = "Authorization: Bearer guess-%d"\noutput = /dev/null\nwrite-out = "%%{http_code}\\n"\n' "$ORGW_URL" "$i"
done >"$ORGW_T/guesses.curl"
n429=$(curl -sS -K "$ORGW_T/guesses.curl" | grep -c '^429$')
ms=$((($(date +%s%N) - t0) / 1000000))
t_eq "200 more guesses: all 429" 200 "$n429"
t_check "answered at once (${ms} ms for 200)" test "$ms" -lt 3000
t_eq "held requests are logged apart, not as refusals" 10 \
	"$(grep -c 'auth: time=[0-9]* refused=' "$ORGW_LOG")"
t_check "... as held, with the address" grep -q 'auth: time=[0-9]* held addr=127.0.0.1 path=/stats retry_after=' "$ORGW_LOG"

# 4. The fail2ban filter matches the 10 refusals and nothing else.
if command -v fail2ban-regex >/dev/null; then
	out=$(fail2ban-regex "$ORGW_LOG" "$FILTER" 2>&1)
	t_match "fail2ban-regex: the 10 refusals matched, no other line" \
		"Lines: [0-9]+ lines, 0 ignored, 10 matched" "$out"
	t_check "fail2ban-regex: the address found" grep -q '127.0.0.1' <<<"$(fail2ban-regex --print-all-matched "$ORGW_LOG" "$FILTER" 2>&1)"
else
	re=$(sed -n 's/^failregex = //p' "$FILTER" | sed 's/<ADDR>/[0-9a-fA-F.:]+/; s/\\s\*/time=[0-9]+ /; s/\\d/[0-9]/g; s/(?:/(/')
	t_eq "the filter's regex (grep -E) matches the 10 refusals" 10 "$(grep -cE "$re" "$ORGW_LOG")"
fi

# 5. Only wrong keys count; per key as well as per address.
ORGW_WORKERS=1 orgw_restart_workers	# a fresh guard, one process (its count is per process)
key() { "$SCORER" --config "$ORGW_CONFIG_FILE" key "$@" 2>>"$ORGW_T/key.err"; }
kp=$(key add plain --models 'test/*')
kr=$(key add gone --models 'test/*')
key revoke gone >/dev/null
t_check "team keys made" test "${kp:0:5}" = orgw- -a "${kr:0:5}" = orgw-
: >"$ORGW_LOG"
n403=0
for i in $(seq 15); do
	HTTP_KEY=$kp orgw_http GET /metrics ""
	[ "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')" = "403 admin_key_required" ] && n403=$((n403 + 1))
	code=$(curl -sS -o /dev/null -w '%{http_code}' --data-raw "key=$kp" "$ORGW_URL/status")
	[ "$code" = 403 ] && n403=$((n403 + 1))
done
t_eq "a valid key without --admin, 15 times on /metrics and 15 at the /status login: 30 403s" 30 "$n403"
t_eq "... no refusal logged" 0 "$(grep -c 'refused=' "$ORGW_LOG")"
chat='{"model":"test/a","messages":[{"role":"user","content":"hi"}]}'
HTTP_KEY=$kp orgw_http POST /v1/chat/completions "$chat"
t_eq "... and that key is served after" 200 "$HTTP_STATUS"
codes=
for i in $(seq 15); do
	HTTP_KEY=$kr orgw_http POST /v1/chat/completions "$chat"
	codes="$codes $HTTP_STATUS"
done
t_eq "a revoked key retried 15 times: 10 401s, then held (429)" \
	"$(printf ' 401%.0s' $(seq 10)) 429 429 429 429 429" "$codes"
HTTP_KEY=$kp orgw_http POST /v1/chat/completions "$chat"
t_eq "... a valid team key from that address: served" 200 "$HTTP_STATUS"
orgw_http GET /stats ""
t_eq "... the operator's key: served" 200 "$HTTP_STATUS"
for i in $(seq 9); do
	HTTP_KEY=guess-$i orgw_http POST /v1/chat/completions "$chat"
done
HTTP_KEY=$kp orgw_http POST /v1/chat/completions "$chat"
t_eq "9 more different wrong keys (10 with the revoked one): the team key is held (not told apart)" 429 "$HTTP_STATUS"
orgw_http POST /v1/chat/completions "$chat"
t_eq "... the operator's key is not" 200 "$HTTP_STATUS"
t_check "no crash in the log" sh -c "! grep -Ei 'segfault|sanitizer|abort\(' '$ORGW_LOG'"
