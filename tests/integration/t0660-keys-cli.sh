#!/bin/bash
# t0660-keys-cli: `orgw-score key ...` on a running stack, on GDBM and
# on Redis: add (the key printed once, alone on stdout), list (text and
# --json), set, disable, enable, an expired key, verify, rotate (the old
# key refused), revoke (its name reusable), export and import (idempotent,
# --replace, a damaged line refused with its number); bad names, globs
# and numbers refused with exit 2; no KEYS_SECRET refused; another secret
# lists the keys but matches none.  The keys store survives what the
# state goes through: a damaged state file repaired by a request, a
# scoring run (sweep, tidy).  A damaged keys file is refused and left as
# it is, and restored from an export.  No key is ever in the keys store,
# list, export or any log.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0660-keys-secret-0123456789abcdef
SECRET2=t0660-another-secret-0123456789ab
M=deepseek/deepseek-v3.2

op() { # ARGS: orgw-score key ARGS with $CONF; RC, $ORGW_T/op.out, op.err
	"$SCORER" --config "$CONF" key "$@" <"${OP_IN:-/dev/null}" \
		>"$ORGW_T/op.out" 2>"$ORGW_T/op.err"
	RC=$?
}
out() { cat "$ORGW_T/op.out"; }
err() { cat "$ORGW_T/op.err"; }
conf_with() { # FILE NAME=VALUE...: the test config with these settings
	local f=$1
	shift
	grep -v '^KEYS_' "$ORGW_CONFIG_FILE" >"$f"
	printf '%s\n' "$@" >>"$f"
	chmod 600 "$f"
}
listed() { # NAME: its list line's STATE column
	op list
	awk -v n="$1" '$1 == n { print $2 }' "$ORGW_T/op.out"
}
ask() {
	orgw_http POST /v1/chat/completions \
		"{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}

suite() { # BACKEND: gdbm or redis
	local be=$1 k_alice k_bob k_new k_carol n exp line64 sum
	KEYS=()
	CONF=$ORGW_T/keys.conf
	conf_with "$CONF" "KEYS_SECRET=$SECRET"

	# --- the secret ------------------------------------------------------
	conf_with "$ORGW_T/nosecret.conf"
	CONF=$ORGW_T/nosecret.conf op list
	t_eq "$be: no KEYS_SECRET: exit 2" 2 "$RC"
	t_match "$be: no KEYS_SECRET: says what to set" \
		'KEYS_SECRET is not set: set KEYS_SECRET or KEYS_SECRET_FILE.*same on every gateway host.*invalidates' "$(err)"
	CONF=$ORGW_T/nosecret.conf op add alice
	t_eq "$be: no KEYS_SECRET: add refused too, nothing on stdout" "2 " "$RC $(out)"

	# --- add -------------------------------------------------------------
	op add alice --models 'openai/*,deepseek/*' --budget-usd-day 5 \
		--budget-usd-month 50.5 --rpm 60 --concurrent 4 --expires 2099-12-31
	t_eq "$be: add alice exits 0" 0 "$RC"
	k_alice=$(out)
	KEYS+=("$k_alice")
	t_match "$be: add prints the key alone on stdout" '^orgw-[A-Za-z0-9_-]{43}$' "$k_alice"
	t_eq "$be: one line on stdout" 1 "$(wc -l <"$ORGW_T/op.out")"
	t_match "$be: stderr says it is shown once" 'alice added; the key above is shown this once' "$(err)"
	op add alice
	t_eq "$be: an existing name is refused (exit 1, no key printed)" "1 " "$RC $(out)"
	t_match "$be: ... saying it exists" 'alice exists already' "$(err)"
	op add bob --admin
	k_bob=$(out)
	KEYS+=("$k_bob")
	t_eq "$be: add bob --admin" 0 "$RC"

	line64=$(printf 'a%.0s' $(seq 65))
	for bad in 'a b' 'x"y' '<b>' "$line64" '-x' '.dot' ''; do
		op add -- "$bad"
		t_eq "$be: bad name '${bad:0:12}' refused (exit 2)" "2 " "$RC $(out)"
	done
	op add -x
	t_eq "$be: '-x' as an option is refused too" 2 "$RC"
	for bad in '--models=a b' '--models=a,,b' '--budget-usd-day=-1' \
		'--budget-usd-day=nan' '--budget-usd-month=inf' '--budget-usd-day=1e999' \
		'--rpm=-5' '--rpm=1.5' '--concurrent=x' '--expires=2026-02-30' \
		'--expires=tomorrow'; do
		op add carol "$bad"
		t_eq "$be: add carol $bad refused (exit 2)" "2 " "$RC $(out)"
	done
	op list
	t_eq "$be: nothing refused was added" "" "$(grep -E '^(carol|-x) ' "$ORGW_T/op.out")"

	# --- list ------------------------------------------------------------
	op list
	t_eq "$be: list exits 0" 0 "$RC"
	while IFS= read -r l; do printf '# %s\n' "$l"; done <"$ORGW_T/op.out"
	t_match "$be: list: alice's line" \
		'^alice +active +no +0\.0000 +5\.0000 +0\.0000 +50\.5000 +60 +4 +0 +0 +- +2100-01-01 00:00:00 +openai/\*,deepseek/\*$' \
		"$(grep '^alice ' "$ORGW_T/op.out")"
	t_match "$be: list: bob, admin, every model" '^bob +active +yes .* \*$' \
		"$(grep '^bob ' "$ORGW_T/op.out")"
	op list --json
	t_eq "$be: list --json: names, states" "alice:active,bob:active" \
		"$(json_get "$ORGW_T/op.out" "j.keys.map(k => k.name + ':' + k.state).join()")"
	t_eq "$be: list --json: alice's limits" '["openai/*","deepseek/*"] 5 50.5 60 4 4102444800 false' \
		"$(json_get "$ORGW_T/op.out" "(a => [JSON.stringify(a.models), a.budget_usd_day, a.budget_usd_month, a.rpm, a.concurrent, a.expires, a.admin].join(' '))(j.keys[0])")"
	t_eq "$be: list --json: today's and this month's use" "0 0 0 0" \
		"$(json_get "$ORGW_T/op.out" "(a => [a.today.requests, a.today.spend_usd, a.month.requests, a.month.spend_usd].join(' '))(j.keys[0])")"
	t_eq "$be: list --json: never a hash" "" \
		"$(grep -E '[0-9a-f]{64}|"hash"' "$ORGW_T/op.out")"

	# --- set, disable, enable, expired ----------------------------------
	op set alice --rpm 0 --models '*' --admin --budget-usd-day 0
	t_eq "$be: set exits 0" 0 "$RC"
	op list --json
	t_eq "$be: set: 0 cleared rpm and the day budget, '*' all models, --admin" \
		'0 0 [] true 50.5' \
		"$(json_get "$ORGW_T/op.out" "(a => [a.rpm, a.budget_usd_day, JSON.stringify(a.models), a.admin, a.budget_usd_month].join(' '))(j.keys[0])")"
	op set alice --no-admin --models 'deepseek/*'
	op set alice
	t_eq "$be: set with nothing to set: exit 2" 2 "$RC"
	op set nobody --rpm 1
	t_eq "$be: set of no such key: exit 1" 1 "$RC"
	op disable alice
	t_eq "$be: disable exits 0" 0 "$RC"
	t_eq "$be: disabled in list" disabled "$(listed alice)"
	op enable alice
	t_eq "$be: enabled again" active "$(listed alice)"
	op set bob --expires 1
	t_eq "$be: an expiry in the past: expired" expired "$(listed bob)"
	op set bob --expires 0
	t_eq "$be: --expires 0: never" active "$(listed bob)"

	# --- verify, rotate --------------------------------------------------
	OP_IN=<(printf '%s\n' "$k_alice") op verify
	t_eq "$be: verify finds alice" "0 alice active" "$RC $(out)"
	op rotate alice
	t_eq "$be: rotate exits 0" 0 "$RC"
	k_new=$(out)
	KEYS+=("$k_new")
	t_match "$be: rotate prints a new key alone" '^orgw-[A-Za-z0-9_-]{43}$' "$k_new"
	t_check "$be: ... another key" test "$k_new" != "$k_alice"
	OP_IN=<(printf '%s\n' "$k_alice") op verify
	t_eq "$be: the old key is refused after rotate" "1 " "$RC $(out)"
	OP_IN=<(printf '%s\n' "$k_new") op verify
	t_eq "$be: the new key is alice's" "0 alice active" "$RC $(out)"
	op list --json
	t_eq "$be: rotate keeps the limits, notes when" "50.5 yes" \
		"$(json_get "$ORGW_T/op.out" "(a => a.budget_usd_month + ' ' + (a.rotated > 0 ? 'yes' : 'no'))(j.keys[0])")"

	# --- another secret --------------------------------------------------
	conf_with "$ORGW_T/other.conf" "KEYS_SECRET=$SECRET2"
	CONF=$ORGW_T/other.conf op list
	t_eq "$be: another secret still lists the keys" "0 2" \
		"$RC $(grep -cE '^(alice|bob) ' "$ORGW_T/op.out")"
	OP_IN=<(printf '%s\n' "$k_new") CONF=$ORGW_T/other.conf op verify
	t_eq "$be: ... but none matches under it" 1 "$RC"
	t_match "$be: ... saying why it may be" 'another KEYS_SECRET' "$(err)"

	# --- revoke ----------------------------------------------------------
	op revoke bob
	t_eq "$be: revoke exits 0" 0 "$RC"
	OP_IN=<(printf '%s\n' "$k_bob") op verify
	t_eq "$be: a revoked key is refused" 1 "$RC"
	t_eq "$be: revoked: not listed" "" "$(listed bob)"
	op revoke bob
	t_eq "$be: revoke again: no such key, exit 1" 1 "$RC"
	op add bob
	k_bob=$(out)
	KEYS+=("$k_bob")
	t_eq "$be: a revoked name can be added again" "0 active" "$RC $(listed bob)"

	# --- export, import --------------------------------------------------
	op export
	t_eq "$be: export exits 0" 0 "$RC"
	cp "$ORGW_T/op.out" "$ORGW_T/export.jsonl"
	t_eq "$be: export: one record each" "2" \
		"$(grep -c '"key":"TEAMKEY:' "$ORGW_T/export.jsonl")"
	t_match "$be: export carries hashes" '"hash":"[0-9a-f]{64}"' "$(cat "$ORGW_T/export.jsonl")"
	OP_IN=$ORGW_T/export.jsonl op import
	t_match "$be: import of what is there changes nothing" '0 written, 2 already so, 0 kept' "$(err)"
	op set alice --rpm 7
	OP_IN=$ORGW_T/export.jsonl op import
	t_match "$be: import keeps a changed record without --replace" '0 written, 1 already so, 1 kept as stored \(--replace overwrites\)' "$(err)"
	t_eq "$be: ... rpm 7 kept" 7 "$(op list --json; json_get "$ORGW_T/op.out" 'j.keys[0].rpm')"
	OP_IN=$ORGW_T/export.jsonl op import --replace
	t_match "$be: import --replace overwrites it" '1 written, 1 already so, 0 kept' "$(err)"
	t_eq "$be: ... rpm back to 0" 0 "$(op list --json; json_get "$ORGW_T/op.out" 'j.keys[0].rpm')"
	OP_IN=$ORGW_T/export.jsonl op import --replace
	t_match "$be: import --replace twice: nothing more" '0 written, 2 already so' "$(err)"
	OP_IN=<(printf '%s\n' "$k_new") op verify
	t_eq "$be: the key still works after the imports" "0 alice active" "$RC $(out)"
	{
		head -n 1 "$ORGW_T/export.jsonl"
		echo '{"key":"TEAMKEY:carol","value":{"v":1,"name":"carol"}}'
	} >"$ORGW_T/bad.jsonl"
	OP_IN=$ORGW_T/bad.jsonl op import
	t_eq "$be: a damaged line refused (exit 1)" 1 "$RC"
	t_match "$be: ... with its line number, nothing imported" 'line 2: .*nothing imported' "$(err)"
	printf '{"key":"BEST_PROVIDER:x","value":{}}\n' >"$ORGW_T/bad.jsonl"
	OP_IN=$ORGW_T/bad.jsonl op import
	t_match "$be: a line of the routing state refused" 'line 1: not a key record' "$(err)"
	printf 'not json\n' >"$ORGW_T/bad.jsonl"
	OP_IN=$ORGW_T/bad.jsonl op import
	t_match "$be: a line that is not JSON refused" 'line 1: not an export line' "$(err)"
	t_eq "$be: carol never came in" "" "$(listed carol)"

	# Into an empty store (GDBM: another file; Redis: a flushed db).
	if [ "$be" = gdbm ]; then
		conf_with "$ORGW_T/fresh.conf" "KEYS_SECRET=$SECRET" "KEYS_PATH=$ORGW_T/fresh.gdbm"
	else
		conf_with "$ORGW_T/fresh.conf" "KEYS_SECRET=$SECRET" \
			"REDIS_URL=redis://127.0.0.1:$ORGW_REDIS_PORT/3"
	fi
	OP_IN=$ORGW_T/export.jsonl CONF=$ORGW_T/fresh.conf op import
	t_match "$be: import into an empty store" '2 written' "$(err)"
	OP_IN=<(printf '%s\n' "$k_new") CONF=$ORGW_T/fresh.conf op verify
	t_eq "$be: the imported store knows the key" "0 alice active" "$RC $(out)"
	CONF=$ORGW_T/fresh.conf op export
	t_eq "$be: its export is the same" "$(cat "$ORGW_T/export.jsonl")" "$(out)"

	# --- the keys survive the state's upkeep -----------------------------
	ask
	t_eq "$be: the gateway serves" 200 "$HTTP_STATUS"
	"$SCORER" --config "$CONF" >"$ORGW_T/score.out" 2>&1
	t_eq "$be: a scoring run (prune, sweep, tidy)" 0 "$?"
	t_eq "$be: the keys are all there after it" "active active" "$(listed alice) $(listed bob)"
	if [ "$be" = gdbm ]; then
		sum=$(md5sum <"$ORGW_T/keys.gdbm")
		head -c 65536 /dev/urandom >"$ORGW_STATE"
		ask
		t_eq "gdbm: a request after the state is damaged" 200 "$HTTP_STATUS"
		t_check "gdbm: the state was moved aside and recreated" test -e "$ORGW_STATE.corrupt"
		"$SCORER" --config "$CONF" status >/dev/null 2>&1
		t_eq "gdbm: the keys file untouched by the repair" "$sum" "$(md5sum <"$ORGW_T/keys.gdbm")"
		t_eq "gdbm: the keys still listed" "active active" "$(listed alice) $(listed bob)"
		t_check "gdbm: the keys file has its own lock and twin" \
			test -e "$ORGW_T/keys.gdbm.lock" -a -e "$ORGW_T/keys.gdbm.twin"

		# A damaged keys file with a whole twin: the next writer
		# restores it from the twin (nothing lost; the damaged copy
		# kept aside), as for the state; no repair, no recreation.
		head -c 16384 /dev/urandom >"$ORGW_T/keys.gdbm"
		op set alice --rpm 3
		t_eq "gdbm: a damaged keys file, its twin whole: the next write works" 0 "$RC"
		t_check "gdbm: ... the damaged file kept aside" test -e "$ORGW_T/keys.gdbm.corrupt"
		t_eq "gdbm: ... every key still there" "active active" "$(listed alice) $(listed bob)"
		OP_IN=<(printf '%s\n' "$k_new") op verify
		t_eq "gdbm: ... and alice's key works" "0 alice active" "$RC $(out)"

		# Both copies damaged: refused, never repaired or recreated.
		head -c 16384 /dev/urandom >"$ORGW_T/keys.gdbm"
		head -c 16384 /dev/urandom >"$ORGW_T/keys.gdbm.twin"
		sum=$(cat "$ORGW_T/keys.gdbm" "$ORGW_T/keys.gdbm.twin" | md5sum)
		op list
		t_eq "gdbm: both copies damaged: list exits 1" 1 "$RC"
		t_match "gdbm: ... saying how to restore it" 'never repairs or recreates it.*key import.*key export' "$(err)"
		op add dave
		t_eq "gdbm: ... add refused too, no key printed" "1 " "$RC $(out)"
		ask
		"$SCORER" --config "$CONF" >/dev/null 2>&1
		"$SCORER" --config "$CONF" status >/dev/null 2>&1
		t_eq "gdbm: ... both left as they are by requests, scoring, tidy" "$sum" \
			"$(cat "$ORGW_T/keys.gdbm" "$ORGW_T/keys.gdbm.twin" | md5sum)"
		mv "$ORGW_T/keys.gdbm" "$ORGW_T/keys.damaged"
		mv "$ORGW_T/keys.gdbm.twin" "$ORGW_T/keys.twin.damaged"
		OP_IN=$ORGW_T/export.jsonl op import
		t_eq "gdbm: restored from the export" "0 active active" "$RC $(listed alice) $(listed bob)"
		OP_IN=<(printf '%s\n' "$k_new") op verify
		t_eq "gdbm: ... alice's key works again" "0 alice active" "$RC $(out)"
	else
		n=$(orgw_redis_cli --scan --pattern 'orgw:TEAMKEY*' | wc -l)
		t_check "redis: the keys live under orgw:TEAMKEY" test "$n" -ge 4
		t_eq "redis: no TEAMKEY key without the orgw: prefix" "" \
			"$(orgw_redis_cli --scan --pattern 'TEAMKEY*')"
	fi

	# --- the keys are never stored, listed, exported or logged ------------
	for k in "${KEYS[@]}"; do
		KEYS_LEAK=$(grep -rlF -- "$k" "$ORGW_T" 2>/dev/null)
		[ -z "$KEYS_LEAK" ] || break
		if [ "$be" = redis ]; then
			for rk in $(orgw_redis_cli -n 0 --scan --pattern '*') $(orgw_redis_cli -n 3 --scan --pattern '*'); do
				orgw_redis_cli -n 0 get "$rk" 2>/dev/null | grep -qF -- "$k" && KEYS_LEAK="redis $rk"
				orgw_redis_cli -n 3 get "$rk" 2>/dev/null | grep -qF -- "$k" && KEYS_LEAK="redis $rk"
			done
			[ -z "$KEYS_LEAK" ] || break
		fi
	done
	t_eq "$be: no key in any file, store or log (${#KEYS[@]} keys made)" "" "$KEYS_LEAK"
}

# GDBM.
orgw_start
suite gdbm
ask
t_check "gdbm: the workers survived (no crash in the log)" \
	sh -c "! grep -Ei 'segfault|sanitizer|abort' '$ORGW_LOG'"

# Redis.
if command -v redis-server >/dev/null; then
	ORGW_STATE_BACKEND=redis orgw_start
	suite redis
	t_check "redis: the workers survived (no crash in the log)" \
		sh -c "! grep -Ei 'segfault|sanitizer|abort' '$ORGW_LOG'"
else
	t_skip "redis: redis-server is not installed"
fi
