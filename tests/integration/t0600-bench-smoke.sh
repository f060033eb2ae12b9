# t0600-bench-smoke.sh - the benchmark (bench/run.sh, `make bench`) still
# works end to end: a BENCH_QUICK=1 run (seconds, tiny counts, 8 workers)
# of every step, on every path, into a temporary directory; phase 7 with 6
# concurrent long streams of 1 s (and 6 with 200 KB bodies); phase 7c's
# team of 4 sessions of 3 turns, conversations on and off; orgw on Redis
# in the sequential and throughput steps; the 30-day state's throughput
# and instructions per request under callgrind.  No timing is
# asserted: on a shared 2-core machine these figures mean nothing; what is
# checked is that each step produced its figures and that nothing failed.
#
# It installs the bench-only packages (wrk, gnuplot-nox) and the Portkey
# npm package when they are missing, as `make bench` does; when Portkey
# cannot be installed (no registry) its checks are skipped.
. "$(dirname "$0")/../lib.sh"

OUT=$(mktemp -d "${TMPDIR:-/tmp}/orgw-bench-smoke.XXXXXX")
LOG=$OUT.log	# not inside $OUT: bench/run.sh empties that first
trap 'rm -rf "$OUT" "$LOG"' EXIT

BENCH_QUICK=1 BENCH_OUT=$OUT bash "$ORGW_ROOT/bench/run.sh" >"$LOG" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	t_ok "bench/run.sh (quick) exits 0"
else
	t_fail "bench/run.sh (quick) exits 0" "exit $rc" "$(tail -n 40 "$LOG")"
	exit 1
fi

have_portkey=0
grep -q '"name": "portkey"' "$OUT/targets.json" && have_portkey=1
names="direct proxy orgw"
[ $have_portkey = 1 ] && names="$names portkey"
[ $have_portkey = 1 ] || t_skip "Portkey not installed: peer gateway left out"
have_redis=0
if command -v redis-server >/dev/null; then
	have_redis=1
	t_check "orgw on Redis is a target" grep -q '"name": "orgw-redis"' "$OUT/targets.json"
else
	t_skip "redis-server not installed: orgw on Redis left out"
fi

t_check "RESULTS.md has the goals table" grep -q '^| added latency per sequential request' "$OUT/RESULTS.md"
t_check "RESULTS.md: the 30-day state has its throughput row" \
	grep -qE '^\| 30-day state \| [0-9]+ \| [0-9]+ \| [0-9.]+x \|' "$OUT/RESULTS.md"
if command -v valgrind >/dev/null; then
	t_check "RESULTS.md: instructions per request of the proxy and orgw, fresh and 30 days" \
		test "$(grep -cE '^\| (proxy|orgw|orgw-30d) \| [0-9,]+ \| [0-9.]+x \| 0 of [0-9]+ \|' "$OUT/RESULTS.md")" = 3
else
	t_skip "valgrind not installed: instructions per request left out"
fi
t_check "the chart was drawn" test -s "$OUT/results.svg"
t_check "the three APIs: every request through the bare proxy and orgw answered, with first tokens" \
	json_ok "$OUT/apis.json" '["chat","messages","responses"].every((a) => ["proxy","orgw"].every((n) => j.apis[a][n].n > 0 && j.apis[a][n].bad === 0 && j.apis[a][n].seq_ms > 0 && j.apis[a][n].ttft_ms > 0))'
t_check "RESULTS.md has the three APIs table, one row each" \
	test "$(grep -cE '^\| (chat|messages|responses) \| [0-9.]+ \| [0-9.]+ \| -?[0-9.]+ \| [0-9.]+ \| [0-9.]+ \| -?[0-9.]+ \|' "$OUT/RESULTS.md")" = 3
t_check "the double's ceiling was measured" json_ok "$OUT/selfbench.json" 'j.req_per_s > 0'

for n in $names; do
	t_check "sequential latency: $n answered every request" json_ok "$OUT/seq.json" \
		"j.targets['$n'].n > 0 && j.targets['$n'].non200 === 0 && j.targets['$n'].errors === 0 && j.targets['$n'].median_ms > 0"
	rows=$(grep -c "\"target\":\"$n\"" "$OUT/wrk.jsonl")
	t_eq "throughput: one wrk run per concurrency for $n" 2 "$rows"
	bad=$(grep "\"target\":\"$n\"" "$OUT/wrk.jsonl" |
		node -e 'let n = 0; for (const l of require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  const w = JSON.parse(l).wrk; if (!(w.requests > 0) || w.non2xx || w.connect_errors || w.read_errors || w.timeouts) n++; }
console.log(n);')
	t_eq "throughput: every wrk run for $n had requests and no errors" 0 "$bad"
	t_check "streaming: $n streams complete, with a first token" json_ok "$OUT/stream.json" \
		"j.targets['$n'].n > 0 && j.targets['$n'].incomplete === 0 && j.targets['$n'].errors === 0 && j.targets['$n'].first_token_ms > 0 && j.targets['$n'].gaps > 0"
done

if [ $have_redis = 1 ]; then
	n=orgw-redis
	t_check "sequential latency: $n answered every request" json_ok "$OUT/seq.json" \
		"j.targets['$n'].n > 0 && j.targets['$n'].non200 === 0 && j.targets['$n'].errors === 0 && j.targets['$n'].median_ms > 0"
	t_eq "throughput: one wrk run per concurrency for $n" 2 "$(grep -c "\"target\":\"$n\"" "$OUT/wrk.jsonl")"
	bad=$(grep "\"target\":\"$n\"" "$OUT/wrk.jsonl" |
		node -e 'let n = 0; for (const l of require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  const w = JSON.parse(l).wrk; if (!(w.requests > 0) || w.non2xx || w.connect_errors || w.read_errors || w.timeouts) n++; }
console.log(n);')
	t_eq "throughput: every wrk run for $n had requests and no errors" 0 "$bad"
	t_check "orgw on Redis kept its state in the redis-server" \
		test "$(cat "$OUT/redis-dbsize.txt")" -gt 0
	t_check "streaming and memory leave orgw on Redis out" \
		json_ok "$OUT/stream.json" "!('$n' in j.targets)"
	t_check "RESULTS.md: orgw on Redis has a row in the latency table" \
		grep -q '^| (e) lighttpd + orgw, state on Redis | [0-9.]* | [0-9.-]* |' "$OUT/RESULTS.md"
	t_check "RESULTS.md: the throughput table has orgw-redis and its ratio to the bare proxy" \
		grep -q '^| concurrency | .*orgw-redis req/s | .* orgw-redis/proxy |' "$OUT/RESULTS.md"
	t_check "RESULTS.md: the orgw on Redis summary line" \
		grep -q '^\*\*orgw on Redis\*\*: added latency -\?[0-9.]* ms (GDBM -\?[0-9.]* ms), c=4 throughput [0-9]* req/s = [0-9.]*× the bare proxy (GDBM: [0-9.]*×)' "$OUT/RESULTS.md"
	t_check "summary.json has the Redis figures" json_ok "$OUT/summary.json" \
		'["redis_added_ms","redis_tput_rps","redis_tput_vs_proxy"].every((k) => typeof j[k] === "number")'
	port=$(sed -n 's/^redis_port=//p' "$OUT/meta.txt")
	t_check "the private redis-server was stopped" \
		sh -c "test -n '$port' && ! redis-cli -p '$port' ping >/dev/null 2>&1"
fi

for n in $names; do
	[ "$n" = direct ] && continue
	t_check "memory: every concurrent stream through $n completed" json_ok "$OUT/hold-$n.json" \
		'j.completed === j.n && j.started === j.n'
done
t_check "memory: orgw workers sampled idle and during the streams" \
	sh -c "grep -q '\"phase\":\"idle\",\"role\":\"orgw-worker\"' '$OUT/mem.jsonl' && grep -q '\"phase\":\"hold\",\"role\":\"orgw-worker\"' '$OUT/mem.jsonl'"
t_check "lock trace: the trace build logged its transactions" grep -q 'lock: write=1 wait_us=' "$OUT/trace-seq.log"
txns=$(grep -c 'lock: write=' "$OUT/trace-seq.log")
reqs=$(grep -c ' req: .*model=' "$OUT/trace-seq.log")
# Two transactions per request: routing, then STATS; a few more when a
# model is scored or a provider fails.
t_check "lock trace: two transactions per request, fewer than three" \
	test "$reqs" -gt 0 -a "$txns" -ge $((2 * reqs)) -a "$txns" -lt $((3 * reqs))
t_check "the release build carries no lock-trace code" \
	sh -c "! grep -q 'wait_us=' '$ORGW_ROOT/build/release/orgw.fcgi'"
# Phase 7 (concurrent long streams): every run present, every stream
# complete and its own (its marked words, in order, and [DONE]).
t_check "RESULTS.md has the concurrent long streams section" grep -q '^## Concurrent long streams' "$OUT/RESULTS.md"
for tag in long-6 longbody-6; do
	for n in proxy orgw portkey; do
		[ "$n" = portkey ] && { [ $have_portkey = 1 ] && [ $tag = long-6 ] || continue; }
		line=$(grep "\"tag\":\"$tag\",\"target\":\"$n\"" "$OUT/long.jsonl")
		t_check "long streams: $tag through $n ran, every stream complete and its own" \
			json_ok "$line" 'j.result && j.result.n === 6 && j.result.completed === 6 && j.result.wrong === 0 && j.result.errors === 0 && j.result.gap_ms.n > 0 && j.result.first_token_ms.median > 0'
	done
done
t_check "long streams: the big-body run sent bodies of 190 KiB or more" \
	json_ok "$(grep '"tag":"longbody-6","target":"orgw"' "$OUT/long.jsonl")" 'j.result.body_bytes >= 190 * 1024'
t_check "long streams: the client measured its own lateness" \
	json_ok "$(grep '"tag":"long-6","target":"orgw"' "$OUT/long.jsonl")" 'typeof j.result.client_lag_ms.p99 === "number" && typeof j.double_lag_ms.p99 === "number"'
t_check "long streams: orgw workers sampled idle and with the streams open" \
	sh -c "grep -q '\"phase\":\"long-idle-6\",\"role\":\"orgw-worker\"' '$OUT/mem.jsonl' && grep -q '\"phase\":\"long-6\",\"role\":\"orgw-worker\"' '$OUT/mem.jsonl'"
# Phase 7c (a team): one run with conversations and one without, every
# turn answered; the locked provider's cap made the double answer 429s,
# and with conversations on the sessions ended up on more than one
# provider while off they all stayed on the lock's.
for mode in on off; do
	line=$(grep "\"mode\":\"$mode\"" "$OUT/team.jsonl")
	t_check "team: the $mode run answered every turn, with usage" \
		json_ok "$line" 'j.result && j.result.turns_ok === 12 && j.result.sessions_failed === 0 && j.result.prompt_tokens > 0 && j.result.cost_usd > 0'
done
t_check "team: CONVERSATIONS=0 sent every turn to the lock's provider" \
	json_ok "$(grep '"mode":"off"' "$OUT/team.jsonl")" 'j.conversations === 0 && Object.keys(j.result.providers).join() === "anth" && j.result.upstream_429 > 0'
t_check "team: CONVERSATIONS=1 spread the sessions past the lock's provider" \
	json_ok "$(grep '"mode":"on"' "$OUT/team.jsonl")" 'j.conversations === 1 && Object.keys(j.result.providers).length > 1 && j.result.one_provider === 4'
t_check "RESULTS.md has the team run table, a row per run" \
	test "$(grep -cE '^\| CONVERSATIONS=[01] #1 \| [0-9.]+ \| 12 of 12 \|' "$OUT/RESULTS.md")" = 2
t_check "summary.json has every goal figure" json_ok "$OUT/summary.json" \
	'["added_ms","tput_vs_proxy","first_token_vs_proxy_ms","idle_worker_rss_kb","hold_pss_kb"].every((k) => typeof j[k] === "number")'

printf '# %s lines of bench output; smoke figures are not measurements\n' "$(grep -c . "$LOG")"
