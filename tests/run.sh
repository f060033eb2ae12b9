#!/bin/sh
# shellcheck shell=bash # re-executes itself under bash (below)
# tests/run.sh - run every test program and count its "ok -" lines.
#
# `make test` builds, then runs this; `make check` runs it with
# ORGW_UNIT_ONLY=1 ORGW_BUILD=build/asan.  In order:
#   1. unit tests      build/release/tests/test_*, build/asan/tests/test_*
#   2. fuzz replays    build/*/tests/replay_fuzz_<t> over tests/fuzz/corpus/<t>/*
#   3. integration     tests/integration/t*.sh (bash), each under a timeout:
#      first every script not in the serial list, ORGW_JOBS of them at a
#      time (lanes), then the serial ones one after the other with nothing
#      else running
#
# Every program's output is shown under a "=== name" header, and these lines
# are counted: "ok - ..." passes, "not ok - ..." fails, "skip - ..." skips.
# A program also counts as one failure when it exits non-zero (or times out)
# without a "not ok" line of its own, when it prints no "ok" line at all (it
# ran no checks; a replay that exits 0 counts as one pass instead), and when
# an integration script leaves a process running behind it.  The last line is
# "N passed, M failed" (", K skipped" when some were); exit 1 when M > 0.
#
# With lanes, each program's output is still one block under its header:
# the program running longest is shown as it runs, the others' output is
# kept until it ends and then printed whole, so blocks come in the order
# the programs end, not by name.
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
#                      the state tests t0120 t0130 t0140 t0148 t0340 t0355 t0410
#                      t0415, and t0658: the conversations' records and a
#                      provider's pressure)
#   ORGW_JOBS=N        integration scripts running at once (default 2, the
#                      cores of the machine the suite is sized for; 1 runs
#                      every script one after the other in name order, the
#                      serial list included, as before lanes)
#   ORGW_SERIAL_TESTS=L  the integration scripts (tNNNN numbers) that run
#                      alone, after the others (default below)
#
# The serial list: scripts whose checks hold only on an otherwise idle
# machine, or that load it so that a script beside them would be measured
# under their load.  A second script running beside them would make them
# flaky, not wrong.
#   t0045  installs and purges the Debian package on this machine (dpkg
#          takes one lock for the whole system) and builds it first
#   t0110  events 200 ms apart must arrive 150-250 ms apart
#   t0147  120 streams at once: the last first token before the shortest
#          stream's end
#   t0148  5 clients of instant requests on 6 threads for 4 s: no thread may
#          stay busy with its commit for 250 ms
#   t0320  a parallel scoring run's wall time against the serial one and
#          against waves of 200 ms
#   t0510 t0520 t0530 t0540 t0550 t0556
#          deploy_checks (tests/lib.sh): event gaps of 150-250 ms through
#          each web server, round-trip times
#   t0600  the bench smoke: wrk, callgrind and 64-client runs load both cores
#   t0675  64 clients at once on a team key's limits
#   t0676  a flood of a thousand wrong keys from 64 connections, with the
#          good key's pace during it set beside its pace alone
#   t0700  the soaks: 64 clients, worker kills and scoring runs
#   t0800  busy work against a deadline: 8 /healthz within 1.5 s and 2.5 s,
#          and a reader of a 20 MB stream that must never stall for the
#          1 s send timeout
#   t0810  20 requests with a huge MODELS_SEEN must be as fast as without
#          (1.5 x + 100 ms)
#   t0820  7 MB of /metrics rendered and sent within 13 s, twice over
#   t0910  requests that wait out Redis command timeouts (500 ms) must end
#          within 2 s, an SDK client's start-up included (0.8 s alone, 1.4 s
#          beside another lane)
# Every other script's timing checks are lower bounds (load only lengthens
# a wait), or upper bounds seconds above what they measure on scripts that
# mostly wait (on streams the double spaces out, on timeouts).
#
# Scripts that share something in the tree never run at the same time: the
# groups below (t0555 and t0556 both `make dist` into dist/ and build/dist;
# lib.sh's dist_unpack also takes a lock for it).
#
# Lanes must not meet on a port: each lane's orgw__free_port (tests/lib.sh)
# draws from its own range (ORGW_PORT_RANGE) below Linux's ephemeral ports
# (32768-60999), which connect() and bind(0) never hand out, so neither the
# other lane nor any client socket can take a port between the draw and the
# server's bind, or during a restart on the same port.  Everything else a
# script starts lives in a mktemp directory of its own.
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
TMP=$(mktemp -d "${TMPDIR:-/tmp}/orgw-run.XXXXXX") || exit 2
TO=${ORGW_TIMEOUT:-300}
JOBS=${ORGW_JOBS:-2}
if ! [[ $JOBS =~ ^[1-9][0-9]?$ ]]; then
	printf 'tests/run.sh: ORGW_JOBS must be 1 to 99, not "%s"\n' "$JOBS" >&2
	exit 2
fi
SERIAL_TESTS=${ORGW_SERIAL_TESTS-t0045 t0110 t0147 t0148 t0320 t0510 t0520 t0530 t0540 t0550 t0556 t0600 t0675 t0676 t0700 t0800 t0810 t0820 t0910}
declare -A GROUP=([t0555]=dist [t0556]=dist)
PORT_BASE=20000 # to 31999: below the ephemeral ports
PORT_SPAN=$((12000 / JOBS))
[ "$PORT_SPAN" -gt 2000 ] && PORT_SPAN=2000

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The queue: programs to run, in order.  Q_CMD holds each command line
# quoted for eval.
Q_KIND=()
Q_NAME=()
Q_CMD=()
# The running programs, by lane (1..JOBS): the timeout process (its PID is
# its process group), the queue index, the start time.  LIVE is the lane
# whose output is shown as it comes (by TAIL_PID); PENDING the queue
# indexes of programs that ended while another was shown.
declare -A L_PID=() L_JOB=() L_T0=() L_SEQ=()
STARTS=0
LIVE=
TAIL_PID=
PENDING=()

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

flush_pending() {
	local j
	for j in "${PENDING[@]}"; do
		printf '=== %s\n' "${Q_NAME[$j]}"
		cat "$TMP/$j.out" "$TMP/$j.end"
		rm -f "$TMP/$j.out" "$TMP/$j.end"
	done
	PENDING=()
}

interrupted() {
	local l
	for l in "${!L_PID[@]}"; do
		kill -TERM -- "-${L_PID[$l]}" 2>/dev/null
	done
	[ ${#L_PID[@]} -gt 0 ] && sleep 1
	for l in "${!L_PID[@]}"; do
		kill -KILL -- "-${L_PID[$l]}" 2>/dev/null
	done
	[ -n "$TAIL_PID" ] && kill "$TAIL_PID" 2>/dev/null
	[ -n "$LIVE" ] && printf '\n'
	flush_pending
	# What the other programs cut short had printed so far.
	for l in "${!L_PID[@]}"; do
		[ "$l" = "$LIVE" ] && continue
		printf '=== %s\n' "${Q_NAME[${L_JOB[$l]}]}"
		cat "$TMP/${L_JOB[$l]}.out"
		printf '\n'
	done
	rm -rf "$TMP"
	FAILED=$((FAILED + 1))
	FAILURES+=("interrupted")
	summary
	exit 130
}
trap interrupted INT TERM
trap 'rm -rf "$TMP"' EXIT

# Processes still in process group $1 that are not zombies.
group_members() {
	ps -eo pid=,pgid=,stat=,args= | awk -v pg="$1" '$2 == pg && $3 !~ /^Z/'
}

# queue KIND NAME CMD...: KIND is unit, replay or integration.
queue() {
	Q_KIND+=("$1")
	Q_NAME+=("$2")
	shift 2
	Q_CMD+=("$(printf '%q ' "$@")")
}

# start LANE J: runs queued program J in LANE, its output in $TMP/J.out.
start() {
	local l=$1 j=$2 lo=$((PORT_BASE + ($1 - 1) * PORT_SPAN))
	eval "set -- ${Q_CMD[$j]}"
	# A simple command run in the background: $! is timeout's own PID,
	# which is its process group's.
	ORGW_PORT_RANGE=$lo-$((lo + PORT_SPAN - 1)) timeout -k 10 "$TO" "$@" \
		>"$TMP/$j.out" 2>&1 </dev/null &
	L_PID[$l]=$!
	L_JOB[$l]=$j
	L_T0[$l]=$SECONDS
	STARTS=$((STARTS + 1))
	L_SEQ[$l]=$STARTS
}

# show: when nothing is shown, the header of the program running longest,
# and its output so far and as it comes.
show() {
	local l best=
	[ -z "$LIVE" ] || return 0
	for l in "${!L_PID[@]}"; do
		if [ -z "$best" ] || [ "${L_SEQ[$l]}" -lt "${L_SEQ[$best]}" ]; then
			best=$l
		fi
	done
	[ -n "$best" ] || return 0
	LIVE=$best
	printf '=== %s\n' "${Q_NAME[${L_JOB[$best]}]}"
	tail -n +1 -s 0.1 --pid="${L_PID[$best]}" -f "$TMP/${L_JOB[$best]}.out" &
	TAIL_PID=$!
}

# finish LANE RC: counts the ended program's lines and writes what this
# adds after its output to $TMP/J.end; prints both when it was shown.
finish() {
	local l=$1 rc=$2 j=${L_JOB[$1]} pg=${L_PID[$1]} name kind out np nf ns left
	name=${Q_NAME[$j]}
	kind=${Q_KIND[$j]}
	out=$TMP/$j.out
	left=$(group_members "$pg")
	if [ -n "$left" ]; then
		kill -KILL -- "-$pg" 2>/dev/null
	fi
	np=$(grep -c '^ok - ' "$out")
	nf=$(grep -c '^not ok - ' "$out")
	ns=$(grep -c '^skip - ' "$out")
	PASSED=$((PASSED + np))
	FAILED=$((FAILED + nf))
	SKIPPED=$((SKIPPED + ns))
	if [ "$nf" -gt 0 ]; then
		FAILURES+=("$name ($nf)")
	fi
	{
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
		[ "$kind" = integration ] && printf '# %s: %d s\n' "$name" $((SECONDS - L_T0[$l]))
		if [ -n "$left" ]; then
			printf 'not ok - %s left processes running (killed now)\n' "$name"
			printf '%s\n' "$left" | sed -e 's/^/#   /'
			FAILED=$((FAILED + 1))
			FAILURES+=("$name (left processes)")
		fi
	} >"$TMP/$j.end"
	unset "L_PID[$l]" "L_JOB[$l]" "L_T0[$l]" "L_SEQ[$l]"
	if [ "$l" = "$LIVE" ]; then
		wait "$TAIL_PID"
		TAIL_PID=
		LIVE=
		cat "$TMP/$j.end"
		rm -f "$out" "$TMP/$j.end"
		flush_pending
	else
		PENDING+=("$j")
	fi
}

# group_busy J: a program of J's group runs now.
group_busy() {
	local g l n
	n=${Q_NAME[$1]##*/}
	g=${GROUP[${n%%-*}]:-}
	[ -n "$g" ] || return 1
	for l in "${!L_JOB[@]}"; do
		n=${Q_NAME[${L_JOB[$l]}]##*/}
		[ "${GROUP[${n%%-*}]:-}" = "$g" ] && return 0
	done
	return 1
}

# run_queue N: runs the queue from $NEXT on, N programs at a time, each
# started as soon as a lane is free (the first queued one whose group is
# not running), and empties it.
run_queue() {
	local n=$1 l j pid rc started
	local -a todo=()
	for ((j = NEXT; j < ${#Q_NAME[@]}; j++)); do
		todo+=("$j")
	done
	NEXT=${#Q_NAME[@]}
	while [ ${#todo[@]} -gt 0 ] || [ ${#L_PID[@]} -gt 0 ]; do
		for ((l = 1; l <= n; l++)); do
			[ -z "${L_PID[$l]:-}" ] || continue
			started=
			for j in "${!todo[@]}"; do
				group_busy "${todo[$j]}" && continue
				start "$l" "${todo[$j]}"
				unset "todo[$j]"
				todo=("${todo[@]}")
				started=1
				break
			done
			[ -n "$started" ] || break
		done
		show
		wait -n -p pid "${L_PID[@]}"
		rc=$?
		for l in "${!L_PID[@]}"; do
			if [ "${L_PID[$l]}" = "$pid" ]; then
				finish "$l" "$rc"
				break
			fi
		done
	done
	flush_pending
}
NEXT=0

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
		is_prog "$t" && [ -f "tests/unit/${t##*/}.c" ] && queue unit "$t" "$t"
	done
done
run_queue 1

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
		queue replay "$r" "$r" "${files[@]}"
		run_queue 1
	done
done

# serial S: S is in the serial list.
serial() {
	local pat n=${1##*/}
	for pat in $SERIAL_TESTS; do
		[ "${n%%-*}" = "$pat" ] && return 0
	done
	return 1
}

# queue_script S: S, and S on Redis when it is one of ORGW_REDIS_TESTS.
queue_script() {
	local pat
	queue integration "$1" bash "$1"
	# The state tests once more on the Redis back-end (tests/lib.sh
	# starts a private redis-server).
	for pat in ${ORGW_REDIS_TESTS-t0120 t0130 t0140 t0148 t0340 t0355 t0410 t0415 t0658}; do
		case ${1##*/} in
		"$pat"-*) queue integration "$1 [redis]" \
			env ORGW_STATE_BACKEND=redis bash "$1" ;;
		esac
	done
}

if [ "${ORGW_UNIT_ONLY:-0}" != 1 ]; then
	SERIAL=()
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
		if [ "$JOBS" -gt 1 ] && serial "$s"; then
			SERIAL+=("$s")
		else
			queue_script "$s"
		fi
	done
	run_queue "$JOBS"
	for s in "${SERIAL[@]}"; do
		queue_script "$s"
	done
	run_queue 1
fi

if [ $((PASSED + FAILED + SKIPPED)) -eq 0 ]; then
	printf 'not ok - no tests found (build first: make all unit)\n'
	FAILED=1
	FAILURES+=("no tests found")
fi

summary
[ "$FAILED" -eq 0 ]
