#!/bin/bash
# t0720-state-truncated: the GDBM state file cut short at every kind of
# place (1 byte, inside the 4 KiB header, right after it, half way, one
# byte short) while the gateway runs.  Every request still gets
# 200, the file is recovered or moved aside and recreated (logged), the
# model is pinned again, and no worker crashes (same PIDs, no sanitizer or
# segfault line).
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start
ask
ask soak/other
ask
t_eq "baseline: pinned" "200 locked" "$ASK"
GOOD=$ORGW_T/good.gdbm
cp "$ORGW_STATE" "$GOOD"
size=$(stat -c %s "$GOOD")
pids=$(worker_set)
echo "# state file: $size bytes; workers $pids"

for cut in 1 100 4095 4096 $((size / 2)) $((size - 1)); do
	cp "$GOOD" "$ORGW_STATE"
	truncate -s "$cut" "$ORGW_STATE"
	res=
	for i in 1 2 3; do
		ask
		res="$res${res:+, }$ASK"
	done
	t_match "cut to $cut bytes: three requests all 200 ($res)" '^200 [a-z]+, 200 [a-z]+, 200 [a-z]+$' "$res"
	t_match "cut to $cut bytes: pinned again by the third" '200 (locked|relocked|scored)$' "$res"
	t_check "cut to $cut bytes: gdbmtool reads the file again" gdbmtool -r "$ORGW_STATE" count
done
t_match "the repairs were logged" 'recovered|moved to' "$(grep -E 'recovered|moved to' "$ORGW_LOG")"
grep -E 'recovered|moved to|recovery failed' "$ORGW_LOG" | sed -e 's/^orgw\[[0-9]*\]: /#   /' | sort | uniq -c | head
t_eq "the damaged copy left for inspection is mode 600" 600 "$(stat -c %a "$ORGW_STATE.corrupt" 2>/dev/null || echo none)"
orgw_http GET /healthz
t_eq "healthz 200 after all that" 200 "$HTTP_STATUS"
orgw_http GET /stats
t_eq "/stats answers" 200 "$HTTP_STATUS"
assert_no_crash "truncated state" "$pids"
