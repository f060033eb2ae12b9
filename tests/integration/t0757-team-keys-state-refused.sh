#!/bin/bash
# t0757-team-keys-state-refused: team keys fail closed when the state
# cannot record them, and the spend billed meanwhile is not lost.
#
# For each cause of a store that refuses writes:
#   A. GDBM, a reader holding the lock files of the state and of the
#      keys store (flock -s) longer than the lock timeout;
#   B. GDBM, the state and the keys store on a full tmpfs (root only);
#   C. Redis at maxmemory with noeviction;
# a --rpm 2 --concurrent 1 key sends 10 streams at once and every one is
# refused 503 state_unavailable (with Retry-After) in the API's shape,
# nothing reaching the double; 4 keys with a $0.001 day budget are
# refused the same way (none served, $0 billed); the keys are made while
# the store still takes writes.  The operator's key is still served (its
# routing state is soft).  In each, a stream of a budget key admitted
# before the store refused ends while it refuses: its spend is kept in
# the worker (one worker here: what is kept is per process), the key is
# refused while it cannot be recorded, and once the store takes writes
# again the key's next request records it first: the keys store's spend
# is what the double billed for both requests.
# In every case the limited key is served again once the store records.
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0757-state-refused-secret-0123456789
SLOW='[double] {\"chunks\":10,\"spacing_ms\":200}' # about 2 s
# The stream that ends while the store refuses: long enough to make the
# store refuse before it ends, on a loaded machine too.
KEPT_SLOW='[double] {\"chunks\":30,\"spacing_ms\":200}' # about 6 s
D=

newkey() { # NAME ARGS...: prints the new key
	local k
	k=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add "$@" 2>"$ORGW_T/key.err")
	[[ $k == orgw-* ]] || t_fail "key add $*" "$(cat "$ORGW_T/key.err")"
	printf '%s' "$k"
}
body() { # MODEL [CONTENT] [EXTRA]
	printf '{"model":"%s","messages":[{"role":"user","content":"%s"}]%s}' "$1" "${2:-hi}" "${3:-}"
}
ask() { # KEY MODEL [CONTENT]: one chat request
	HTTP_KEY=$1 orgw_http POST /v1/chat/completions "$(body "$2" "${3:-hi}")"
}
upstream_n() { json_get "$(double_ctl GET stats)" 'Object.values(j.apis).reduce((a, b) => a + b, 0)'; }
billed() { json_get "$(double_ctl GET stats)" "j.billed_by_model['$1'] ?? 0"; }
spent() { # NAME: the keys store's spend today, as /stats shows it
	json_get "$(orgw_curl /stats)" "j.keys['$1'].today.spend_usd"
}
close_to() { # A B: |A - B| <= 1e-9
	node -e 'const [a, b] = process.argv.slice(1).map(Number);
process.exit(Number.isFinite(a) && Number.isFinite(b) && b > 0 && Math.abs(a - b) <= 1e-9 ? 0 : 1);' "$1" "$2" ||
		{ echo "$1 != $2"; return 1; }
}
# parallel KEY MODEL N: N streams at once; sets CODES (sorted, counted)
# and ERRS (the error codes of the bodies)
parallel() {
	local i pids=()
	for ((i = 0; i < $3; i++)); do
		curl -sS -N --max-time 20 -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
			-D "$ORGW_T/par.$i.h" -o "$ORGW_T/par.$i" -w '%{http_code}' \
			--data-binary "$(body "$2" "slow\\n$SLOW" ',"stream":true')" \
			"$ORGW_URL/v1/chat/completions" >"$ORGW_T/par.$i.code" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	CODES=$(cat "$ORGW_T"/par.*.code | fold -w3 | sort | uniq -c | awk '{printf "%s%sx%s", s, $1, $2; s=" "}')
	ERRS=$(for ((i = 0; i < $3; i++)); do json_get "$ORGW_T/par.$i" 'j.error ? j.error.code : "stream"' 2>/dev/null; echo; done | sort | uniq -c | awk '{printf "%s%sx%s", s, $1, $2; s=" "}')
	RETRY=$(grep -hi '^retry-after:' "$ORGW_T"/par.0.h | tr -d '\r' | awk '{print $2}')
	rm -f "$ORGW_T"/par.*
}
# mkkeys BE: while the store still takes writes, the keys of scenario
# BE: KR (--rpm 2 --concurrent 1) and 4 keys with a $0.001 day budget
# (BK[bBE1..4]); each must be made (a key add that failed would make
# the refusals below hollow).
declare -A BK
mkkeys() {
	local i
	KR=$(newkey "rc$1" --rpm 2 --concurrent 1)
	for i in 1 2 3 4; do
		BK[b$1$i]=$(newkey "b$1$i" --budget-usd-day 0.001)
	done
	t_eq "$1: the keys are made" 5 \
		"$(printf '%s\n' "$KR" "${BK[b$1"1"]}" "${BK[b$1"2"]}" "${BK[b$1"3"]}" "${BK[b$1"4"]}" | grep -c '^orgw-')"
}
# budgets BE N: N requests on each budget key of BE; sets SERVED (of
# 4N) and BCODES (their statuses, counted)
budgets() {
	local i j codes=
	SERVED=0
	for i in 1 2 3 4; do
		for ((j = 0; j < $2; j++)); do
			ask "${BK[b$1$i]}" "tk/b$1$i"
			codes="$codes$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error ? j.error.code : "-"' 2>/dev/null)
"
			[ "$HTTP_STATUS" = 200 ] && SERVED=$((SERVED + 1))
		done
	done
	BCODES=$(printf '%s' "$codes" | sort | uniq -c | awk '{printf "%s%sx%s %s", s, $1, $2, $3; s=", "}')
}

# refused DESC: the checks while the store refuses writes
refused() {
	local be=$1 n0
	n0=$(upstream_n)
	parallel "$KR" "tk/r-$be" 10
	echo "# $be: 10 parallel streams of a --rpm 2 --concurrent 1 key: $CODES ($ERRS)"
	t_eq "$be: 10 parallel streams of a --rpm 2 --concurrent 1 key: every one 503 state_unavailable" \
		"10x503 10xstate_unavailable" "$CODES $ERRS"
	t_eq "$be: ... with Retry-After" 5 "$RETRY"
	budgets "$be" 2
	echo "# $be: 4 keys with a \$0.001 day budget, 2 requests each: $BCODES"
	t_eq "$be: 4 keys with a \$0.001 day budget, 2 requests each: every one 503 state_unavailable" \
		"8x503 state_unavailable" "$BCODES"
	t_eq "$be: ... nothing of these reached the double" "$n0" "$(upstream_n)"
	ask "$ORGW_KEY" "tk/op-$be"
	t_eq "$be: the operator's key is still served" 200 "$HTTP_STATUS"
}

# kept BE: a budget key's stream admitted, then the store refuses (run
# refuse_on), the stream ends: its spend is kept and settled later.
kept_start() {
	KB=$(newkey "kept$1" --budget-usd-day 10)
	curl -sS -N --max-time 20 -H "Authorization: Bearer $KB" -H 'Content-Type: application/json' \
		-o "$ORGW_T/kept.out" -w '%{http_code}' \
		--data-binary "$(body "tk/kept-$1" "slow\\n$KEPT_SLOW" ',"stream":true')" \
		"$ORGW_URL/v1/chat/completions" >"$ORGW_T/kept.code" 2>/dev/null &
	KEPT_PID=$!
	t_check "$1: a budget key's stream is running" double_wait_active 1
}
kept_check() { # BE [kept]: with the store refusing, after kept_start
	local i
	wait "$KEPT_PID"
	t_eq "$1: the stream admitted before ends 200 and whole" "200 1" \
		"$(cat "$ORGW_T/kept.code") $(grep -c '^data: \[DONE\]' "$ORGW_T/kept.out")"
	if [ "${2:-}" = kept ]; then
		# Its end is counted after the answer, once each store's
		# write has failed (a lock timeout each on GDBM).
		for ((i = 0; i < 150; i++)); do
			grep -q "use of key kept$1 not recorded .*kept in this worker" "$ORGW_LOG" && break
			sleep 0.1
		done
		t_match "$1: its spend is kept in the worker" "use of key kept$1 not recorded .*kept in this worker" "$(cat "$ORGW_LOG")"
	fi
	ask "$KB" "tk/kept-$1"
	t_eq "$1: its key is refused while the spend cannot be recorded" \
		"503 state_unavailable" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
}
kept_settle() { # BE [kept]: after the store takes writes again
	local i
	ask "$KB" "tk/kept-$1"
	t_eq "$1: with the store back, the key is served" 200 "$HTTP_STATUS"
	[ "${2:-}" = kept ] &&
		t_match "$1: ... after the kept spend was recorded" "kept use of key kept$1 recorded: requests=1" "$(cat "$ORGW_LOG")"
	for ((i = 0; i < 50; i++)); do
		close_to "$(spent "kept$1")" "$(billed "tk/kept-$1")" >/dev/null && break
		sleep 0.1
	done
	t_check "$1: the keys store's spend is what the double billed for both requests" \
		close_to "$(spent "kept$1")" "$(billed "tk/kept-$1")"
	ask "$KR" "tk/r-$1"
	t_eq "$1: the --rpm 2 --concurrent 1 key is served again" 200 "$HTTP_STATUS"
}

hold() { # FILE: a reader holding FILE's shared lock; sets HOLD (its pid)
	(
		exec 9<"$1"
		flock -s 9
		exec sleep 300
	) &
	HOLD="$HOLD $!"
}

# A. GDBM, a reader holding the lock files of the state and of the keys
# store (reads go on; no write can have its lock).
ORGW_WORKERS=1 orgw_start KEYS_SECRET="$SECRET"
mkkeys A
ask "$KR" tk/r-A
t_eq "A: baseline: the limited key is served" 200 "$HTTP_STATUS"
kept_start A
HOLD=
hold "$ORGW_STATE.lock"
hold "$ORGW_T/keys.gdbm.lock"
sleep 0.3
t_check "A: the lock files are held" test -e "$ORGW_T/keys.gdbm.lock"
kept_check A kept
refused A
# shellcheck disable=SC2086 # two pids
kill $HOLD
# shellcheck disable=SC2086
wait $HOLD 2>/dev/null
kept_settle A kept
orgw_stop

# B. GDBM on a full tmpfs.  GDBM reuses the blocks its own deletes and
# rewrites free, so a store that has run a while goes on taking writes on
# a full disk (and its limits hold): the store refuses only a write that
# needs room it no longer has.  gdbm_fill takes that room, as the
# gateway's own growth would: records of falling sizes, each size until
# GDBM answers "No space left on device", under the file's write lock.
gdbm_fill() { # FILE
	local s n v
	for s in 4000 1000 250 60 16 4; do
		v=$(head -c "$s" /dev/zero | tr '\0' p)
		for ((n = 0; n < 1000; n++)); do
			flock -x "$1.lock" gdbmtool -N "$1" store "t0757pad.$s.$n" "$v" 2>"$ORGW_T/pad.err"
			[ -s "$ORGW_T/pad.err" ] && break
		done
		grep -q 'No space left on device' "$ORGW_T/pad.err" ||
			t_fail "B: filling ${1##*/} with records of $s bytes" "$(cat "$ORGW_T/pad.err")"
	done
}
gdbm_unfill() { # FILE: the records gdbm_fill stored, deleted
	local del
	del=$(flock -x "$1.lock" gdbmtool -N "$1" list 2>/dev/null | awk '$1 ~ /^t0757pad\./ {print "delete " $1}')
	printf '%s\n' "$del" | flock -x "$1.lock" gdbmtool -N "$1" >/dev/null 2>&1
	t_eq "B: ${1##*/} holds none of the filling" 0 \
		"$(flock -x "$1.lock" gdbmtool -N "$1" list 2>/dev/null | grep -c '^t0757pad\.')"
}
unmount() {
	local rc=$?
	orgw__workers_stop
	[ -n "$D" ] && mountpoint -q "$D" && umount "$D"
	return $rc
}
if [ "$(id -u)" != 0 ]; then
	t_skip "B: mounting a small tmpfs needs root"
else
	ORGW_WORKERS=1 orgw_start KEYS_SECRET="$SECRET"
	D=$ORGW_T/statedir
	mkdir -p "$D"
	trap 'unmount; orgw__on_exit' EXIT
	if ! mount -t tmpfs -o size=1m,mode=0700 tmpfs "$D"; then
		t_skip "B: cannot mount a tmpfs here"
	else
		ORGW_WORKERS=1 orgw_restart_workers STATE_PATH="$D/state.gdbm" KEYS_PATH="$D/keys.gdbm" KEYS_SECRET="$SECRET"
		mkkeys B
		ask "$KR" tk/r-B
		t_eq "B: baseline: the limited key is served" 200 "$HTTP_STATUS"
		kept_start B
		dd if=/dev/zero of="$D/filler" bs=4k status=none 2>/dev/null
		t_eq "B: the tmpfs is full" 0 "$(df --output=avail -k "$D" | tail -1 | tr -d ' ')"
		gdbm_fill "$D/state.gdbm"
		gdbm_fill "$D/keys.gdbm"
		kept_check B kept
		refused B
		rm -f "$D/filler"
		gdbm_unfill "$D/state.gdbm"
		gdbm_unfill "$D/keys.gdbm"
		kept_settle B kept
		unmount
	fi
	orgw_stop
	trap orgw__on_exit EXIT
fi

# C. Redis at maxmemory, noeviction.
export ORGW_STATE_BACKEND=redis
ORGW_WORKERS=1 orgw_start KEYS_SECRET="$SECRET"
mkkeys C
ask "$KR" tk/r-C
t_eq "C: baseline: the limited key is served" 200 "$HTTP_STATUS"
kept_start C
orgw_redis_cli CONFIG SET maxmemory-policy noeviction >/dev/null
orgw_redis_cli CONFIG SET maxmemory 1 >/dev/null
kept_check C kept
refused C
orgw_redis_cli CONFIG SET maxmemory 0 >/dev/null
kept_settle C kept
