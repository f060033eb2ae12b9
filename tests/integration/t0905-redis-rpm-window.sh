#!/bin/bash
# t0905-redis-rpm-window: a team key's --rpm is one sliding window for
# every host sharing a Redis, timed by Redis's clock.
#
#   1. Two hosts on one Redis, the second's clock 30 s ahead
#      (ORGW_TEST_NOW): 40 requests of an rpm-5 key, alternating between
#      them, are served 5 times, and the refusals are 429
#      rate_limit_exceeded with a Retry-After in 1..65.
#   2. Across a minute boundary: 5 requests at once 0.5 s before a minute
#      ends and 5 more 0.3 s after it, on a fresh rpm-5 key: 5 served.
#   3. The record's cost is fixed per key: TEAMKEY_RATE:<name> is the same
#      size (within a few digits) after 1 request and after 30, on an
#      rpm-1000 key.
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0905-rpm-window-secret-0123456789
export ORGW_STATE_BACKEND=redis

newkey() {
	local k
	k=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add "$@" 2>"$ORGW_T/key.err")
	[[ $k == orgw-* ]] || t_fail "key add $*" "$(cat "$ORGW_T/key.err")"
	printf '%s' "$k"
}
body() { printf '{"model":"%s","messages":[{"role":"user","content":"hi"}]}' "$1"; }
# ask_at URL KEY MODEL: one request; prints "STATUS RETRY-AFTER CODE"
ask_at() {
	local h
	h=$(curl -sS -o "$ORGW_T/ask.body" -D - -w '\n%{http_code}' -H "Authorization: Bearer $2" \
		-H 'Content-Type: application/json' --data-binary "$(body "$3")" \
		"$1/v1/chat/completions" 2>/dev/null | tr -d '\r')
	printf '%s %s %s\n' "$(tail -n 1 <<<"$h")" \
		"$(grep -i '^retry-after:' <<<"$h" | awk '{print $2}')" \
		"$(json_get "$ORGW_T/ask.body" 'j.error ? j.error.code : "-"' 2>/dev/null)"
}

orgw_start KEYS_SECRET="$SECRET"
ORGW_WORKER_ENV="ORGW_TEST_NOW=$(($(date +%s) + 30))" orgw_start_host2

# 1. Skewed clocks.
k=$(newkey skew --rpm 5)
: >"$ORGW_T/skew.out"
for i in $(seq 40); do
	if ((i % 2)); then url=$ORGW_URL; else url=$ORGW2_URL; fi
	ask_at "$url" "$k" tk/skew >>"$ORGW_T/skew.out"
done
served=$(grep -c '^200 ' "$ORGW_T/skew.out")
echo "# 1: two hosts 30 s apart, 40 requests of an rpm-5 key: $served served"
t_eq "1: two hosts 30 s apart share one window: 5 of 40 served" 5 "$served"
t_eq "1: ... the other 35 are 429 rate_limit_exceeded" 35 \
	"$(grep -c '^429 [0-9]* rate_limit_exceeded$' "$ORGW_T/skew.out")"
bad=$(awk '$1 == 429 && ($2 < 1 || $2 > 65)' "$ORGW_T/skew.out" | head -3)
t_eq "1: ... each with a Retry-After in 1..65" "" "$bad"

# 2. A minute boundary (Redis's clock is this host's here): 5 requests
# sent at once 0.5 s before a minute ends, 5 more 0.3 s after it.
k=$(newkey edge --rpm 5)
burst() { # TAG: 5 requests at once, each status into edge.TAG.N
	local n
	for n in 1 2 3 4 5; do
		curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $k" \
			-H 'Content-Type: application/json' --data-binary "$(body tk/edge)" \
			"$ORGW_URL/v1/chat/completions" >"$ORGW_T/edge.$1.$n" 2>/dev/null &
		pids+=($!)
	done
}
ms=$(($(date +%s%N) / 1000000 % 60000))
wait_ms=$((59500 - ms))
((wait_ms < 0)) && wait_ms=$((wait_ms + 60000))
sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
pids=()
t0=$(($(date +%s%N) / 1000000))
burst before
ms=$(($(date +%s%N) / 1000000 % 60000))
sleep "0.$(printf '%03d' $(((60300 - ms) % 1000)))"
t1=$(($(date +%s%N) / 1000000))
burst after
wait "${pids[@]}"
served=$(cat "$ORGW_T"/edge.*.* | fold -w3 | grep -c 200)
echo "# 2: 5 requests sent at $(date -u -d "@$((t0 / 1000))" +%T).$(printf '%03d' $((t0 % 1000))), 5 at $(date -u -d "@$((t1 / 1000))" +%T).$(printf '%03d' $((t1 % 1000))) ($((t1 - t0)) ms apart, across a minute's end): $served served ($(cat "$ORGW_T"/edge.before.* | fold -w3 | tr '\n' ' ')/ $(cat "$ORGW_T"/edge.after.* | fold -w3 | tr '\n' ' '))"
t_eq "2: across a minute's end an rpm-5 key is served 5 times, not 10" 5 "$served"

# 3. The record's size.
k=$(newkey cost --rpm 1000)
ask_at "$ORGW_URL" "$k" tk/cost >/dev/null
one=$(orgw_redis_cli STRLEN orgw:TEAMKEY_RATE:cost)
for i in $(seq 30); do ask_at "$ORGW_URL" "$k" tk/cost >/dev/null; done
many=$(orgw_redis_cli STRLEN orgw:TEAMKEY_RATE:cost)
echo "# 3: TEAMKEY_RATE:cost is $one bytes after 1 request, $many after 31"
t_check "3: the rate record stays the same size ($one, $many bytes)" \
	test "$one" -gt 0 -a "$many" -le $((one + 4))
