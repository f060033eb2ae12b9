#!/bin/bash
# t0740-stale-lock: the lock file left behind by a process killed while it
# held the lock.  orgw locks with flock(2) on STATE_PATH.lock: the
# lock belongs to the open file description and dies with the process, so
# a leftover lock file is just an empty file.  Shown here:
#   1. while a writer (tests/soak/killwriter.c, through store.c) holds the
#      exclusive lock, requests still get 200, unpinned after the lock
#      timeout (degrade, do not fail), and healthz says the store is busy;
#   2. SIGKILL the holder: the lock file is still there, and the very next
#      request is pinned again at once;
#   3. a lock file full of garbage, or deleted under the running workers,
#      changes nothing (it is recreated, mode 600).
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start
ask
ask
t_eq "baseline: pinned" "200 locked" "$ASK"
pids=$(worker_set)
kw_build || exit 0

# 1. A holder.
"$KW" "$ORGW_STATE" 10 hold >"$ORGW_T/kw.out" 2>&1 &
KWPID=$!
for i in $(seq 50); do
	grep -q holding "$ORGW_T/kw.out" && break
	sleep 0.1
done
t_check "the writer holds the lock" grep -q holding "$ORGW_T/kw.out"
start=$(date +%s%N)
ask
ms=$(ms_since "$start")
t_eq "a request while the lock is held still gets 200, unpinned" "200 unpinned" "$ASK"
echo "# answered after $ms ms (STORE_LOCK_TIMEOUT_MS 3000 per transaction)"
t_check "it waited for the lock timeout first ($ms ms >= 3000)" test "$ms" -ge 3000
t_match "the log says why it went unpinned" 'state unavailable \(.*\): routing' "$(cat "$ORGW_LOG")"
t_match "and who holds the lock" "state lock .*\\.lock: not had in 3000 ms; held by pid $KWPID \\(killwriter\\)" "$(cat "$ORGW_LOG")"
orgw_http GET /healthz
t_eq "healthz 503 while the store cannot be locked" 503 "$HTTP_STATUS"
t_match "healthz says why" 'state store' "$(json_get "$HTTP_BODY" j.reason)"

# 2. Kill the holder: the lock dies with it.
kill -KILL "$KWPID"
wait "$KWPID" 2>/dev/null
t_check "the lock file is still there (stale)" test -e "$ORGW_STATE.lock"
start=$(date +%s%N)
ask
ms=$(ms_since "$start")
t_eq "the next request is pinned again" "200 locked" "$ASK"
t_check "at once ($ms ms < 1000)" test "$ms" -lt 1000
t_check "flock(1) can take the stale lock file at once" flock -n -x "$ORGW_STATE.lock" true
# /healthz keeps its state check for a second per worker process (all
# its threads), so the busy answer above may still be served for that long.
sleep 1.1
orgw_http GET /healthz
t_eq "healthz 200 again" 200 "$HTTP_STATUS"

# 3. A garbage lock file, then none at all.
head -c 4096 /dev/urandom >"$ORGW_STATE.lock"
ask
t_eq "a lock file full of garbage: still pinned" "200 locked" "$ASK"
rm -f "$ORGW_STATE.lock"
ask
t_eq "the lock file deleted: still pinned" "200 locked" "$ASK"
t_check "the lock file was recreated" test -e "$ORGW_STATE.lock"
t_eq "recreated with mode 600" 600 "$(stat -c %a "$ORGW_STATE.lock")"
assert_no_crash "stale lock" "$pids"
