#!/bin/bash
# t0730-state-random: the GDBM state file replaced by random bytes, or a
# valid file with parts overwritten (bit rot after the header, a zeroed
# directory block, a good header over garbage), while the gateway runs.
# Every request still gets 200, the file is recovered or moved aside
# and recreated, and no worker crashes: GDBM's own parsing of a hostile
# file runs inside the workers, so this is also a test of it.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start
for m in deepseek/deepseek-v3.2 soak/a soak/b soak/c; do
	ask "$m"
	ask "$m"
done
t_eq "baseline: pinned" "200 locked" "$ASK"
GOOD=$ORGW_T/good.gdbm
cp "$ORGW_STATE" "$GOOD"
size=$(stat -c %s "$GOOD")
pids=$(worker_set)

# overwrite FILE OFFSET COUNT [SOURCE]: COUNT bytes at OFFSET from SOURCE
# (default /dev/urandom), file size unchanged.
overwrite() {
	dd if="${4:-/dev/urandom}" of="$1" bs=1 seek="$2" count="$3" conv=notrunc status=none
}

check_round() { # DESC
	local res='' i
	for i in 1 2 3; do
		ask
		res="$res${res:+, }$ASK"
	done
	t_match "$1: three requests all 200 ($res)" '^200 [a-z]+, 200 [a-z]+, 200 [a-z]+$' "$res"
	t_match "$1: pinned by the third" '200 (locked|relocked|scored)$' "$res"
	t_check "$1: gdbmtool reads the state" gdbmtool -r "$ORGW_STATE" count
}

# 64 random bytes over the live primary's header, its twin whole: the
# next writer restores the twin (the damaged file kept aside), so the
# first request still follows its lock and every key is kept; starting
# empty would lose them, and copying that over the twin would lose them
# for good.
keys_good=$(state_keys "$GOOD")
overwrite "$ORGW_STATE" 0 64
ask
t_eq "64 random bytes over the header: the first request follows its lock" "200 locked" "$ASK"
t_eq "64 random bytes over the header: every key restored from the twin" "$keys_good" "$(state_keys "$ORGW_STATE")"
t_eq "64 random bytes over the header: the twin still holds them" "$keys_good" "$(state_keys "$ORGW_STATE.twin")"
t_match "64 random bytes over the header: logged" 'moved to .*restoring the last whole state from the twin' "$(cat "$ORGW_LOG")"

head -c 65536 /dev/urandom >"$ORGW_STATE"
check_round "64 KiB of random bytes"
head -c 1 /dev/urandom >"$ORGW_STATE"
check_round "one random byte"
cp "$GOOD" "$ORGW_STATE"
overwrite "$ORGW_STATE" 4096 $((size - 4096))
check_round "a good header over random bytes"
cp "$GOOD" "$ORGW_STATE"
overwrite "$ORGW_STATE" 4096 4096 /dev/zero
check_round "the directory block zeroed"
cp "$GOOD" "$ORGW_STATE"
overwrite "$ORGW_STATE" 0 512
check_round "the header's first 512 bytes random"
# Bit rot: 16 random bytes at random places after the header, 12 times.
for r in $(seq 12); do
	cp "$GOOD" "$ORGW_STATE"
	for k in $(seq 16); do
		overwrite "$ORGW_STATE" $((4096 + (RANDOM * 32768 + RANDOM) % (size - 4096))) 1
	done
	cp "$ORGW_STATE" "$ORGW_T/rot-$r.gdbm"	# kept with ORGW_KEEP=1
	check_round "bit rot, round $r"
done
grep -E 'recovered|moved to|recovery failed' "$ORGW_LOG" | sed -e 's/^orgw\[[0-9]*\]: //; s/([0-9]* keys, [0-9]* lost)/(N keys, M lost)/' |
	sort | uniq -c | sed -e 's/^/#   /'
orgw_http GET /healthz
t_eq "healthz 200 after all that" 200 "$HTTP_STATUS"
assert_no_crash "random bytes" "$pids"
