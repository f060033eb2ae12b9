#!/bin/bash
# t0675-team-keys-load: a team key's limits under load, 64 clients at once
# (tests/js/keyload.mjs: each retries a 429 until it gets a 200 or a 402),
# on GDBM (one host) and on Redis (two hosts on one state).
#
# Budget: one answer costs c1 (measured first with the operator's key:
# the same model, content and stream).  A key of --concurrent 8 and a day
# budget of 19.5 × c1 allows 20 answers; requests last about 0.75 s, so 8
# run at once.  Every client ends with 200 or 402, at least 20 are served
# and at most 8 more (the overshoot is bounded by --concurrent: at most
# that many can be in flight when the budget runs out), every stream ends
# whole, the key's spend is the sum of its answers' usage.cost and what the
# double billed for them, and the refusals the clients saw (402, 429) are
# counted as refused_budget and refused_concurrent, none as a request.
#
# Rate: a key of --rpm 30, 64 clients started early in a UTC minute, each
# giving up after 25 tries (about 5 s; started by the minute's 45th second): exactly 30 served in that
# minute, every 429 with a Retry-After of 1..65 and counted as refused_rpm.
#
# The figures go out as "# " lines.
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0675-team-keys-secret-0123456789
N=64
LOAD=$ORGW_ROOT/tests/js/keyload.mjs
# About 0.75 s an answer: 6 words 120 ms apart.
CONTENT=$'load\n[double] {"chunks":6,"spacing_ms":120}'

newkey() { # NAME ARGS...: prints the key
	local k
	k=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add "$@" 2>"$ORGW_T/key.err")
	[[ $k == orgw-* ]] || t_fail "key add $*" "$(cat "$ORGW_T/key.err")"
	printf '%s' "$k"
}
billed() { json_get "$(double_ctl GET stats)" "j.billed_by_model['$1'] ?? 0"; }
kstat() { json_get "$(orgw_curl /stats)" "((k) => ($2))(j.keys['$1'])"; }
close_to() { # A B [EPS]
	node -e 'const [a, b, e] = process.argv.slice(1).map(Number);
process.exit(Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= e ? 0 : 1);' "$1" "$2" "${3:-1e-9}" ||
		{ echo "$1 != $2"; return 1; }
}
settle() { # NAME N: until the key counts N requests (10 s at most)
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(kstat "$1" 'k.today.requests')" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
r() { json_get "$OUT" "$1"; } # an expression over keyload's line

budget_load() { # BACKEND BASES
	local be=$1 bases=$2 m=tk/load-$1 c1 b0 k budget ok spent over sum
	c1=$(curl -sS -N -H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary "$(node -e 'process.stdout.write(JSON.stringify({model: process.argv[1], stream: true, messages: [{role: "user", content: process.argv[2]}]}))' "$m" "$CONTENT")" \
		"$ORGW_URL/v1/chat/completions" | grep -o '"cost":[0-9.e-]*' | tail -n 1 | cut -d: -f2)
	t_check "$be: one answer's cost c1 = $c1, measured with the operator's key" \
		node -e "process.exit($c1 > 0 ? 0 : 1)"
	b0=$(billed "$m")
	budget=$(node -e "process.stdout.write((19.5 * $c1).toFixed(12))")
	k=$(newkey "load-$be" --models 'tk/*' --concurrent 8 --budget-usd-day "$budget")
	OUT=$(node "$LOAD" --base "$bases" --key "$k" --model "$m" --clients $N --stream --content "$CONTENT")
	printf '# %s: keyload: %s\n' "$be" "$(r '({...j, costs: j.costs.length + " costs"})' | head -c 600)"
	ok=$(r 'j.ok')
	settle "load-$be" "$ok"
	t_eq "$be: budget 19.5 × c1, --concurrent 8, $N clients: every one ended with 200 or 402" \
		"[] $N" "$(r 'JSON.stringify(j.other) + " " + (j.ok + j.r402)')"
	over=$((ok - 20))
	t_check "$be: ... at least the 20 the budget allows were served ($ok)" test "$ok" -ge 20
	t_check "$be: ... overshoot $over <= --concurrent 8" test "$over" -le 8
	t_eq "$be: ... every 200 stream whole ([DONE]), each of cost c1; every 429 with a Retry-After of 1..65" \
		"0 $ok 0" "$(r "[j.incomplete, j.costs.filter((c) => Math.abs(c - $c1) < 1e-12).length, j.retry_after_bad].join(' ')")"
	spent=$(kstat "load-$be" 'k.today.spend_usd')
	sum=$(r 'j.costs.reduce((a, b) => a + b, 0)')
	t_check "$be: ... the key's spend ($spent) = the sum of its 200s' usage.cost ($sum)" close_to "$spent" "$sum"
	t_check "$be: ... = what the double billed for them" \
		close_to "$spent" "$(node -e "process.stdout.write(String($(billed "$m") - $b0))")"
	t_eq "$be: ... requests = the 200s; refused_budget = the 402s, refused_concurrent = the 429s, no rpm refusal" \
		"$(r '[j.ok, j.r402, j.r429].join(" ")') 0" \
		"$(kstat "load-$be" '[k.today.requests, k.today.refused_budget, k.today.refused_concurrent, k.today.refused_rpm].join(" ")')"
	printf '# %s: budget-under-concurrency: allowed 20 (budget $%s = 19.5 x c1 $%s), served %s, spent $%s (%s x c1), overshoot %s, refused 402: %s, refused 429: %s\n' \
		"$be" "$budget" "$c1" "$ok" "$spent" "$(node -e "process.stdout.write(($spent / $c1).toFixed(3))")" \
		"$over" "$(r 'j.r402')" "$(r 'j.r429')"
}

rpm_load() { # BACKEND BASES
	local be=$1 bases=$2 m=tk/rpm-$1 k s m0 m1 t0
	k=$(newkey "rpm-$be" --models 'tk/*' --rpm 30)
	# The run takes a few seconds: start it early in a minute, so that all
	# of it falls in that one (rpm windows are UTC minutes).
	s=$(date +%S)
	s=${s#0}
	[ "$s" -le 45 ] || sleep $((61 - s))
	t0=$(date +%s%N)
	m0=$(($(date +%s) / 60))
	OUT=$(node "$LOAD" --base "$bases" --key "$k" --model "$m" --clients $N --max-tries 25 --content hi)
	m1=$(($(date +%s) / 60))
	printf '# %s: the rpm run took %d ms\n' "$be" $((($(date +%s%N) - t0) / 1000000))
	printf '# %s: keyload: %s\n' "$be" "$(r '({...j, other: j.other.length + " gave up", costs: j.costs.length + " costs"})')"
	t_eq "$be: --rpm 30, $N clients, 25 tries each: the run stayed in one UTC minute" "$m0" "$m1"
	settle "rpm-$be" 30
	t_eq "$be: ... exactly 30 served, the other $((N - 30)) gave up on 429s" "30 $((N - 30))" \
		"$(r '[j.ok, j.other.filter((o) => o === "gave up").length].join(" ")')"
	t_eq "$be: ... every 429 with a Retry-After of 1..65" 0 "$(r 'j.retry_after_bad')"
	t_eq "$be: ... requests 30, refused_rpm = the 429s the clients saw, nothing else refused" \
		"30 $(r 'j.r429') 0 0" \
		"$(kstat "rpm-$be" '[k.today.requests, k.today.refused_rpm, k.today.refused_concurrent, k.today.refused_budget].join(" ")')"
	t_eq "$be: ... the double answered exactly 30 of its requests" 30 \
		"$(json_get "$(double_ctl GET 'log?limit=10000')" "j.requests.filter((q) => q.api === 'chat' && q.model === '$m').length")"
	printf '# %s: rpm-under-load: allowed 30, served %s, refused 429: %s\n' "$be" "$(r 'j.ok')" "$(r 'j.r429')"
}

# GDBM, one host.
orgw_start KEYS_SECRET="$SECRET"
budget_load gdbm "$ORGW_URL"
rpm_load gdbm "$ORGW_URL"

# Redis, two hosts.
if command -v redis-server >/dev/null; then
	ORGW_STATE_BACKEND=redis orgw_start KEYS_SECRET="$SECRET"
	orgw_start_host2
	budget_load redis "$ORGW_URL,$ORGW2_URL"
	rpm_load redis "$ORGW_URL,$ORGW2_URL"
	t_check "redis: both hosts served" \
		test "$(grep -c 'model=tk/load-redis .*status=200' "$ORGW_LOG")" -gt 0 -a \
		"$(grep -c 'model=tk/load-redis .*status=200' "$ORGW_T/orgw2.log")" -gt 0
else
	t_skip "redis: redis-server is not installed"
fi
