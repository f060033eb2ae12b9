#!/bin/sh
# bench/ab.sh - orgw builds against each other: the before/after figures of
# a change to src/.  Not part of `make bench`.
#
#   sh bench/ab.sh NAME=BINARY NAME=BINARY ... [> table.md]
#
# e.g. build the old tree's orgw.fcgi into /tmp/before in a worktree of
# its own (git worktree add /tmp/old REV; make -C /tmp/old; cp
# /tmp/old/build/release/orgw.fcgi /tmp/before: a stash would be shared
# with every other worktree of the repository) and run
#   sh bench/ab.sh before=/tmp/before after=build/release/orgw.fcgi
#
# For each round (AB_ROUNDS, default 2) and each binary in turn: the stack
# of tests/lib.sh with AB_WORKERS workers (default 256, as in make bench),
# sequential latency (bench/seq.mjs: 15 warm-up, 3 rounds of 25, orgw and
# direct alternated), then wrk at concurrency AB_CONC (64) for AB_SECS
# (5) s.  Prints a Markdown table of the medians over the rounds.
#
# BINARY@redis runs that binary with STATE_BACKEND=redis on a private
# redis-server (tests/lib.sh), e.g. the state back-ends side by side:
#   sh bench/ab.sh gdbm=build/release/orgw.fcgi redis=build/release/orgw.fcgi@redis
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh

ROUNDS=${AB_ROUNDS:-2}
WORKERS=${AB_WORKERS:-256}
CONC=${AB_CONC:-64}
SECS=${AB_SECS:-5}
T=$(mktemp -d "${TMPDIR:-/tmp}/orgw-ab.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
[ $# -gt 0 ] || {
	echo "usage: $0 NAME=BINARY ..." >&2
	exit 2
}

one() { # NAME BINARY: one measurement, appends a JSON line to $T/ab.jsonl
	local name=$1 bin=$2 seq wrkl
	(
		unset ORGW_STATE_BACKEND
		case $bin in
		*@redis) bin=${bin%@redis}; export ORGW_STATE_BACKEND=redis ;;
		esac
		export ORGW_FCGI_BIN=$bin ORGW_WORKERS=$WORKERS
		orgw_start >/dev/null
		node -e '
const [f, d, o, uk, ok] = process.argv.slice(1);
require("fs").writeFileSync(f, JSON.stringify({
  body: { model: "deepseek/deepseek-v3.2", max_tokens: 64, messages: [
    { role: "system", content: "You are a helpful assistant. Answer briefly." },
    { role: "user", content: "Say hello in three words, please." } ] },
  targets: [{ name: "direct", url: `${d}/api/v1/chat/completions`, headers: { Authorization: `Bearer ${uk}` } },
            { name: "orgw", url: `${o}/v1/chat/completions`, headers: { Authorization: `Bearer ${ok}` } }] }));
' "$T/targets.json" "$DOUBLE_URL" "$ORGW_URL" "$UPSTREAM_KEY" "$ORGW_KEY"
		node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1]));
require("fs").writeFileSync(process.argv[2], JSON.stringify(j.body));' "$T/targets.json" "$T/body.json"
		seq=$(node bench/seq.mjs --targets "$T/targets.json" --warmup 15 --rounds 3 --per_round 25)
		wrkl=$(BENCH_BODY_FILE=$T/body.json timeout $((SECS + 30)) wrk -t 2 -c "$CONC" \
			-d "${SECS}s" --timeout 10s -s bench/post.lua \
			-H "Authorization: Bearer $ORGW_KEY" "$ORGW_URL/v1/chat/completions" |
			sed -n 's/^BENCH_JSON //p')
		printf '{"name":"%s","seq":%s,"wrk":%s}\n' "$name" "$seq" "${wrkl:-null}" >>"$T/ab.jsonl"
	)
}

for ((r = 1; r <= ROUNDS; r++)); do
	for a in "$@"; do
		printf 'ab: round %d %s\n' "$r" "${a%%=*}" >&2
		one "${a%%=*}" "${a#*=}"
	done
done

node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse);
const med = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const names = [...new Set(lines.map((l) => l.name))];
console.log(`| build | orgw sequential ms | direct ms | added ms | req/s at c=${process.argv[2]} | p50 / p99 ms at c=${process.argv[2]} |`);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const n of names) {
  const ls = lines.filter((l) => l.name === n);
  const o = med(ls.map((l) => l.seq.targets.orgw.median_ms)), d = med(ls.map((l) => l.seq.targets.direct.median_ms));
  const w = ls.filter((l) => l.wrk);
  console.log(`| ${n} | ${o.toFixed(3)} | ${d.toFixed(3)} | ${med(ls.map((l) => l.seq.targets.orgw.median_ms - l.seq.targets.direct.median_ms)).toFixed(3)} | ` +
    `${med(w.map((l) => l.wrk.req_per_s)).toFixed(0)} (${w.map((l) => l.wrk.req_per_s.toFixed(0)).join(", ")}) | ` +
    `${med(w.map((l) => l.wrk.lat_p50_ms)).toFixed(2)} / ${med(w.map((l) => l.wrk.lat_p99_ms)).toFixed(2)} |`);
}' "$T/ab.jsonl" "$CONC"
