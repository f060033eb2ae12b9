#!/bin/sh
# tests/fuzz/run-fuzz.sh - `make fuzz`: build every libFuzzer target and run
# each for a bounded time (docs/style.md sections 9 and 11).
#
#   sh tests/fuzz/run-fuzz.sh [TARGET...]
#
# TARGET is a name like "sse" or "fuzz_sse"; without any, every
# tests/fuzz/fuzz_<t>.c except fuzz_main.c (the gcc replay driver) is run,
# one after the other.
#
# Build: src/*.c is compiled with clang -fsanitize=fuzzer-no-link plus
# ASan+UBSan into build/fuzz/liborgw.a (coverage reaches our code; the
# system libcjson is not instrumented), and each target is linked with
# -fsanitize=fuzzer,address,undefined into build/fuzz/fuzz_<t>.
# -fno-sanitize-recover=all makes any UB report a crash.
#
# Run: libFuzzer gets a scratch corpus build/fuzz/corpus/<t>/ (first, so
# new inputs go there and the committed seeds stay small) and the committed
# seeds tests/fuzz/corpus/<t>/ (read only), plus tests/fuzz/<t>.dict when
# it exists.  Crash, leak, timeout and OOM inputs land in
# build/fuzz/artifacts/<t>/; each is copied to tests/fuzz/corpus/<t>/ as
# crash-<sha1> so `make test` replays it from then on (replay_fuzz_<t>).
#
# Knobs (environment):
#   FUZZ_TIME=S     seconds per target (default 60)
#   FUZZ_NICE=N     nice level of the fuzzers (default 19: the machine is shared)
#   FUZZ_RSS_MB=N   libFuzzer -rss_limit_mb (default 2048)
#   FUZZ_ARGS=...   more libFuzzer flags, e.g. "-max_len=65536 -jobs=2"
#   FUZZ_MERGE=1    afterwards, merge inputs that add coverage into the
#                   committed corpus (libFuzzer -merge=1; keeps it minimal)
#   CLANG=clang     the compiler
#   FUZZ_BUILD=DIR  build and scratch directory (default build/fuzz; give a
#                   directory outside build/ for long runs that must
#                   survive a `make clean` meanwhile)
#
# Output: per target one line "fuzz <t>: N execs in S s, K crash(es)" and
# the log in build/fuzz/<t>.log.  Exit 1 when a target failed to build or
# found a crash, 0 otherwise.
set -u

cd "$(dirname "$0")/../.." || exit 2

FUZZ_TIME=${FUZZ_TIME:-60}
FUZZ_NICE=${FUZZ_NICE:-19}
FUZZ_RSS_MB=${FUZZ_RSS_MB:-2048}
FUZZ_ARGS=${FUZZ_ARGS:-}
CLANG=${CLANG:-clang}
B=${FUZZ_BUILD:-build/fuzz}

case $FUZZ_TIME in
'' | *[!0-9]*) echo "run-fuzz: FUZZ_TIME must be a number of seconds" >&2; exit 2 ;;
esac
command -v "$CLANG" >/dev/null 2>&1 || {
	echo "run-fuzz: $CLANG not found (ORGW_DEPS_EXTRA=1 make deps)" >&2
	exit 2
}

PKG_CFLAGS=$(pkg-config --cflags fcgi libcurl libcjson libcrypto 2>/dev/null)
PKG_LIBS=$(pkg-config --libs fcgi libcurl libcjson libcrypto 2>/dev/null || echo -lfcgi -lcurl -lcjson -lcrypto)
SANF="-fsanitize=address,undefined -fno-sanitize-recover=all"
CFLAGS="-std=c11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra $SANF"
CPPFLAGS="-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Isrc $PKG_CFLAGS"

mkdir -p "$B/src" "$B/artifacts" "$B/corpus" || exit 2

# The library: rebuilt when any src file is newer than the archive.
lib=$B/liborgw.a
stale=0
[ -f "$lib" ] || stale=1
for f in src/*.c src/*.h; do
	[ "$f" -nt "$lib" ] && stale=1
done
if [ $stale = 1 ]; then
	echo "run-fuzz: building $lib"
	rm -f "$lib"
	for f in src/*.c; do
		o=$B/src/$(basename "$f" .c).o
		# shellcheck disable=SC2086 # flag lists
		"$CLANG" $CPPFLAGS $CFLAGS -fsanitize=fuzzer-no-link -c -o "$o" "$f" ||
			{ echo "run-fuzz: cannot compile $f" >&2; exit 1; }
	done
	ar rcs "$lib" "$B"/src/*.o || exit 1
fi

# Which targets.
targets=
if [ $# -gt 0 ]; then
	for a in "$@"; do
		t=${a#fuzz_}
		t=${t%.c}
		targets="$targets $t"
	done
else
	for f in tests/fuzz/fuzz_*.c; do
		t=$(basename "$f" .c)
		t=${t#fuzz_}
		[ "$t" = main ] && continue
		targets="$targets $t"
	done
fi

bad=0
for t in $targets; do
	src=tests/fuzz/fuzz_$t.c
	bin=$B/fuzz_$t
	if [ ! -f "$src" ]; then
		echo "fuzz $t: no $src"
		bad=1
		continue
	fi
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ "$lib" -nt "$bin" ]; then
		# shellcheck disable=SC2086
		if ! "$CLANG" $CPPFLAGS $CFLAGS -fsanitize=fuzzer -o "$bin" "$src" \
			"$lib" $PKG_LIBS -lgdbm -lm >"$B/$t.build.log" 2>&1; then
			echo "fuzz $t: build failed (see $B/$t.build.log)"
			sed -e 's/^/#   /' "$B/$t.build.log" | head -20
			bad=1
			continue
		fi
	fi
	seeds=tests/fuzz/corpus/$t
	work=$B/corpus/$t
	art=$B/artifacts/$t
	mkdir -p "$seeds" "$work" "$art"
	dict=
	[ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
	before=$(ls "$art" | wc -l)
	log=$B/$t.log
	# -close_fd_mask=3 would hide the target's own prints; leave them.
	# shellcheck disable=SC2086
	nice -n "$FUZZ_NICE" "$bin" -max_total_time="$FUZZ_TIME" \
		-timeout=10 -rss_limit_mb="$FUZZ_RSS_MB" -print_final_stats=1 \
		-artifact_prefix="$art/" $dict $FUZZ_ARGS "$work" "$seeds" \
		>"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	# New artifacts become regression seeds (named by content, so a
	# crash found twice is kept once).
	for a in "$art"/*; do
		[ -f "$a" ] || continue
		sum=$(sha1sum "$a" | cut -c1-16)
		kind=$(basename "$a" | sed 's/-.*//')
		dst=$seeds/$kind-$sum
		if [ ! -f "$dst" ]; then
			cp "$a" "$dst"
			echo "fuzz $t: new $kind input kept as $dst"
		fi
	done
	n=$(($(ls "$art" | wc -l) - before))
	echo "fuzz $t: ${execs:-?} execs (${secs:-?}/s) in ${FUZZ_TIME} s, exit $rc, $n new artifact(s); log $log"
	if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ]; then
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 | sed -e 's/^/#   /'
		bad=1
	fi
	if [ "${FUZZ_MERGE:-0}" = 1 ]; then
		nice -n "$FUZZ_NICE" "$bin" -merge=1 -rss_limit_mb="$FUZZ_RSS_MB" \
			"$seeds" "$work" >"$B/$t.merge.log" 2>&1 ||
			echo "fuzz $t: merge failed (see $B/$t.merge.log)"
	fi
done
exit $bad
