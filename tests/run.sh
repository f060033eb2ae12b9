#!/bin/sh
# shellcheck shell=bash # re-executes itself under bash (below)
# tests/run.sh - run every test program and count its "ok -" lines.
#
# `make test` builds, then runs this; `make check` runs it with
# ORGW_UNIT_ONLY=1 ORGW_BUILD=build/asan.  In order:
#   1. unit tests      build/release/tests/test_*, build/asan/tests/test_*
#   2. fuzz replays    build/*/tests/replay_fuzz_<t> over tests/fuzz/corpus/<t>/*
#   3. integration     tests/integration/t*.sh (bash), each under a timeout
#
# Every program's output is shown under a "=== name" header, and these lines
# are counted: "ok - ..." passes, "not ok - ..." fails, "skip - ..." skips.
# A program also counts as one failure when it exits non-zero (or times out)
# without a "not ok" line of its own, when it prints no "ok" line at all (it
# ran no checks; a replay that exits 0 counts as one pass instead), and when
# an integration script leaves a process running behind it.  The last line is
# "N passed, M failed" (", K skipped" when some were); exit 1 when M > 0.
#
#   ORGW_UNIT_ONLY=1   steps 1 and 2 only
#   ORGW_BUILD=DIR     only that build's binaries (default: build/release and
#                      build/asan)
#   ORGW_TESTS=PATS    only the integration scripts whose file name matches
#                      one of these space-separated globs; a plain word
#                      matches anywhere: 't0000 stream', 't01*'
#   ORGW_TIMEOUT=S     per program timeout in seconds (default 300)
#   ORGW_REDIS_TESTS=L the integration scripts (tNNNN numbers) that run a
#                      second time with ORGW_STATE_BACKEND=redis (default:
#                      the state tests t0120 t0130 t0140 t0340 t0355 t0410 t0415)
#
# Each program runs in a process group of its own (GNU timeout makes one and
# signals all of it), so a timed-out or interrupted test takes the servers it
# started with it.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi
set -u

cd "$(dirname "$0")/.." || exit 2

PASSED=0
FAILED=0
SKIPPED=0
FAILURES=()
CUR_PG=
TAIL_PID=
TMP=$(mktemp -d "${TMPDIR:-/tmp}/orgw-run.XXXXXX") || exit 2
TO=${ORGW_TIMEOUT:-300}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

summary() {
	local f
	for f in "${FAILURES[@]}"; do
		printf '# failed: %s\n' "$f"
	done
	if [ "$SKIPPED" -gt 0 ]; then
		printf '%d passed, %d failed, %d skipped\n' "$PASSED" "$FAILED" "$SKIPPED"
	else
		printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
	fi
}

interrupted() {
	if [ -n "$CUR_PG" ]; then
		kill -TERM -- "-$CUR_PG" 2>/dev/null
		sleep 1
		kill -KILL -- "-$CUR_PG" 2>/dev/null
	fi
	[ -n "$TAIL_PID" ] && kill "$TAIL_PID" 2>/dev/null
	rm -rf "$TMP"
	FAILED=$((FAILED + 1))
	FAILURES+=("interrupted")
	printf '\n'
	summary
	exit 130
}
trap interrupted INT TERM
trap 'rm -rf "$TMP"' EXIT

# Processes still in process group $1 that are not zombies.
group_members() {
	ps -eo pid=,pgid=,stat=,args= | awk -v pg="$1" '$2 == pg && $3 !~ /^Z/'
}

# run KIND NAME CMD...: KIND is unit, replay or integration.
run() {
	local kind=$1 name=$2 out=$TMP/out rc np nf ns left t0=$SECONDS
	shift 2
	printf '=== %s\n' "$name"
	: >"$out"
	timeout -k 10 "$TO" "$@" >"$out" 2>&1 </dev/null &
	CUR_PG=$!
	tail -n +1 -s 0.1 --pid="$CUR_PG" -f "$out" &
	TAIL_PID=$!
	wait "$CUR_PG"
	rc=$?
	wait "$TAIL_PID"
	TAIL_PID=
	left=$(group_members "$CUR_PG")
	if [ -n "$left" ]; then
		kill -KILL -- "-$CUR_PG" 2>/dev/null
	fi
	CUR_PG=
	np=$(grep -c '^ok - ' "$out")
	nf=$(grep -c '^not ok - ' "$out")
	ns=$(grep -c '^skip - ' "$out")
	PASSED=$((PASSED + np))
	FAILED=$((FAILED + nf))
	SKIPPED=$((SKIPPED + ns))
	if [ "$nf" -gt 0 ]; then
		FAILURES+=("$name ($nf)")
	fi
	if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			printf 'not ok - %s timed out after %s s\n' "$name" "$TO"
		else
			printf 'not ok - %s exited with status %d\n' "$name" "$rc"
		fi
		FAILED=$((FAILED + 1))
		FAILURES+=("$name (exit $rc)")
	elif [ "$rc" -eq 0 ] && [ "$np" -eq 0 ] && [ "$nf" -eq 0 ] && [ "$ns" -eq 0 ]; then
		if [ "$kind" = replay ]; then
			printf 'ok - %s replayed its corpus\n' "$name"
			PASSED=$((PASSED + 1))
		else
			printf 'not ok - %s ran no checks\n' "$name"
			FAILED=$((FAILED + 1))
			FAILURES+=("$name (no checks)")
		fi
	fi
	[ "$kind" = integration ] && printf '# %s: %d s\n' "$name" $((SECONDS - t0))
	if [ -n "$left" ]; then
		printf 'not ok - %s left processes running (killed now)\n' "$name"
		printf '%s\n' "$left" | sed -e 's/^/#   /'
		FAILED=$((FAILED + 1))
		FAILURES+=("$name (left processes)")
	fi
}

is_prog() { # an executable built test, not its .o/.d
	[ -f "$1" ] && [ -x "$1" ] && case $1 in *.o | *.d) false ;; esac
}

if [ -n "${ORGW_BUILD:-}" ]; then
	BUILDS=("${ORGW_BUILD%/}")
else
	BUILDS=(build/release build/asan)
fi

for b in "${BUILDS[@]}"; do
	for t in "$b"/tests/test_*; do
		# A binary left from a test whose source is gone is not run.
		is_prog "$t" && [ -f "tests/unit/${t##*/}.c" ] && run unit "$t" "$t"
	done
done

for b in "${BUILDS[@]}"; do
	for r in "$b"/tests/replay_*; do
		is_prog "$r" && [ -f "tests/fuzz/${r##*/replay_}.c" ] || continue
		target=${r##*/replay_}
		target=${target#fuzz_}
		corpus=tests/fuzz/corpus/$target
		files=()
		if [ -d "$corpus" ]; then
			while IFS= read -r f; do
				files+=("$f")
			done < <(find "$corpus" -type f | LC_ALL=C sort)
		fi
		if [ ${#files[@]} -eq 0 ]; then
			printf '=== %s\nskip - %s: no corpus in %s\n' "$r" "$r" "$corpus"
			SKIPPED=$((SKIPPED + 1))
			continue
		fi
		run replay "$r" "$r" "${files[@]}"
	done
done

if [ "${ORGW_UNIT_ONLY:-0}" != 1 ]; then
	for s in tests/integration/t*.sh; do
		[ -f "$s" ] || continue
		if [ -n "${ORGW_TESTS:-}" ]; then
			selected=
			set -f
			for pat in $ORGW_TESTS; do
				case $pat in
				*[*?[]*) ;;
				*) pat="*$pat*" ;;
				esac
				# shellcheck disable=SC2254 # a glob on purpose
				case ${s##*/} in
				$pat) selected=1 ;;
				esac
			done
			set +f
			[ -n "$selected" ] || continue
		fi
		run integration "$s" bash "$s"
		# The state tests once more on the Redis back-end (issue 19;
		# tests/lib.sh starts a private redis-server).
		for pat in ${ORGW_REDIS_TESTS-t0120 t0130 t0140 t0340 t0355 t0410 t0415}; do
			case ${s##*/} in
			"$pat"-*) run integration "$s [redis]" \
				env ORGW_STATE_BACKEND=redis bash "$s" ;;
			esac
		done
	done
fi

if [ $((PASSED + FAILED + SKIPPED)) -eq 0 ]; then
	printf 'not ok - no tests found (build first: make all unit)\n'
	FAILED=1
	FAILURES+=("no tests found")
fi

summary
[ "$FAILED" -eq 0 ]
