#!/bin/bash
# t0630-status-page: GET /status with real traffic, in
# headless Chromium (tests/js/status-page.mjs, puppeteer-core on Debian's
# chromium).  Two models on endpoints with known cache hit rates serve
# requests "yesterday" (ORGW_TEST_NOW) and today, so the per-day history
# has two days; a persistent 503 trips the breaker on test/alpha's lock, so
# there is a cooldown and a lock change by the breaker.  Then, with curl:
# the login answers (303 + cookie; 401; a key in the URL logs nobody in)
# and the other mount paths; then, in the browser: the form, a wrong key,
# the right key, the cookie, the page against /stats, the layout at 1280
# and 390 px, the screenshots, the logout.
#   ORGW_STATUS_SHOTS=DIR  also keep the screenshots there (docs/ for the
#                          README's).
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

if [ ! -x /usr/bin/chromium ] ||
	[ ! -f "$ORGW_ROOT/tests/js/node_modules/puppeteer-core/package.json" ]; then
	t_fail "chromium and tests/js puppeteer-core are needed: run sh deploy/install-deps.sh"
	exit 1
fi

NOW=$(date +%s)
ORGW_WORKER_ENV="ORGW_TEST_NOW=$((NOW - 86400))"
orgw_start FAIL_LIMIT=2 COOLDOWN_SECONDS=3600 MAX_ATTEMPTS=4 CACHE_BONUS=2 \
	HIT_RATE=0.5 LOCK_IDLE_SECONDS=900

ep() { # TAG NAME PROMPT_PRICE HIT_RATE
	printf '{"tag":"%s","provider_name":"%s","status":0,"uptime_last_30m":99.5,
 "pricing":{"prompt":"%s","completion":"0.000004","input_cache_read":"0.0000003"},
 "supports_implicit_caching":true,"throughput_last_30m":{"p50":80},
 "x_double_cache_hit_rate":%s}' "$1" "$2" "$3" "$4"
}
double_ctl PUT endpoints/test/alpha "[$(ep fast FastCo 0.000002 0.8),$(ep slow SlowCo 0.000003 0.5)]" >/dev/null
double_ctl PUT endpoints/test/beta "[$(ep one One 0.000001 0.6),$(ep two Two 0.000005 0.3)]" >/dev/null

chat() { # MODEL N
	local i P
	P=$(printf 'y%.0s' $(seq 1 600))
	for i in $(seq 1 "$2"); do
		orgw_http POST /v1/chat/completions \
			"{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"$P $i\"}]}"
		[ "$HTTP_STATUS" = 200 ] || t_fail "$1 request $i: $HTTP_STATUS" "$HTTP_BODY"
	done
}
chat test/alpha 3
chat test/beta 2

# Today, on the real clock.
ORGW_WORKER_ENV=
orgw_restart_workers
chat test/alpha 3
chat test/beta 3
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":-1,"match":{"tag":"fast"}}]}' >/dev/null
chat test/alpha 2
double_ctl DELETE faults >/dev/null

S=$ORGW_T/stats.json
orgw_curl /stats >"$S"
t_eq "test/alpha moved to slow, fast cooling" "slow 5xx" \
	"$(json_get "$S" "j.models['test/alpha'].lock.tag + ' ' + j.models['test/alpha'].cooldowns.fast.reason")"
t_eq "LOCK_LOG: first lock, then the breaker's move" \
	"(none)>fast no lock|fast>slow breaker: 5xx" \
	"$(json_get "$S" "j.models['test/alpha'].lock_changes.map(c => (c.from || '(none)') + '>' + c.to + ' ' + c.reason).join('|')")"
t_eq "STATS days: two days of prompt and cached tokens for test/beta" 2 \
	"$(json_get "$S" "Object.values(j.models['test/beta'].days).filter(d => d.one?.cached_tokens > 0).length")"

# The login with curl: what goes over the wire.
H=$ORGW_T/h
post() { # BODY [CURL ARGS]: sets CODE, headers in $H
	local b=$1
	shift
	CODE=$(curl -sS -o "$ORGW_T/body" -D "$H" -w '%{http_code}' \
		-H "Content-Type: ${CTYPE:-application/x-www-form-urlencoded}" \
		--data-raw "$b" "$@" "$ORGW_URL/status")
}
post "key=$ORGW_KEY"
t_eq "POST /status with the key: 303 to /status" "303 /status" \
	"$CODE $(sed -n 's/^Location: //Ip' "$H" | tr -d '\r')"
CK=$(sed -n 's/^Set-Cookie: //Ip' "$H" | tr -d '\r')
t_match "the cookie: a token, HttpOnly, SameSite=Strict, Path=/" \
	'^orgw_status=[0-9]+\.[0-9a-f]{64}; Max-Age=[0-9]+; HttpOnly; SameSite=Strict; Path=/$' "$CK"
case $CK in *"$ORGW_KEY"*) t_fail "the cookie holds the key" "$CK" ;; *) t_ok "the cookie does not hold the key" ;; esac
TOK=${CK%%;*}
CODE=$(curl -sS -o "$ORGW_T/page" -w '%{http_code}' -H "Cookie: $TOK" "$ORGW_URL/status")
t_eq "GET /status with the cookie: the page" "200 1" \
	"$CODE $(grep -c 'section class="model"><h2>test/alpha</h2>' "$ORGW_T/page")"
for p in /v1/status /api/v1/status; do
	CODE=$(curl -sS -o "$ORGW_T/page" -w '%{http_code}' -H "Cookie: $TOK" "$ORGW_URL$p")
	t_eq "GET $p with the cookie: the page" "200 1" \
		"$CODE $(grep -c '<h2>test/beta</h2>' "$ORGW_T/page")"
done
post "key=$ORGW_KEY" -H 'X-Forwarded-Proto: https' -H 'HTTPS: on'
t_check "no Secure flag over plain HTTP, whatever the headers say" \
	bash -c "! grep -qi '^Set-Cookie:.*Secure' '$H'"
post "key=wrong"
t_eq "a wrong key: 401, no cookie" "401 0" "$CODE $(grep -ci '^Set-Cookie' "$H")"
CODE=$(curl -sS -o "$ORGW_T/page" -w '%{http_code}' "$ORGW_URL/status?key=$ORGW_KEY")
t_eq "a key in the URL logs nobody in: the form" "200 1" \
	"$CODE $(grep -c 'name="key"' "$ORGW_T/page")"
CODE=$(curl -sS -o /dev/null -w '%{http_code}' -H "Cookie: orgw_status=$ORGW_KEY" "$ORGW_URL/status")
t_eq "the key itself as cookie is no login" "200 0" \
	"$CODE $(curl -sS -H "Cookie: orgw_status=$ORGW_KEY" "$ORGW_URL/status" | grep -c 'section class="model"')"
CTYPE=text/plain post "key=$ORGW_KEY"
t_eq "a body that is not a form: 415" 415 "$CODE"
CODE=$(curl -sS -o /dev/null -D "$H" -w '%{http_code}' -X PUT "$ORGW_URL/status")
t_eq "PUT /status: 405 allowing GET and POST" "405 GET, POST" \
	"$CODE $(sed -n 's/^Allow: //Ip' "$H" | tr -d '\r')"

# The browser.
SHOTS=${ORGW_STATUS_SHOTS:-$ORGW_T}
node "$ORGW_ROOT/tests/js/status-page.mjs" --base "$ORGW_URL" --key "$ORGW_KEY" \
	--stats "$S" --shots "$SHOTS" || true
for w in 1280 390; do
	t_check "screenshot at $w px taken" test -s "$SHOTS/status-$w.png"
done
