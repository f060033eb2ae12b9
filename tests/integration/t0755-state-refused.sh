#!/bin/bash
# t0755-state-refused: a state store that opens and reads but refuses
# writes is not reported healthy.
#
# A. GDBM on a full tmpfs (mounted by the test; root only): requests are
#    still served, /healthz answers 503 with a generic reason (the cause,
#    ENOSPC, with the client key), the log names "No space left on
#    device" and never says a writer died (none did); with room again the
#    next writes go in and /healthz is 200 again.
# B. Redis at maxmemory with noeviction (every MULTI/EXEC with a write
#    ends in EXECABORT): the same, the cause named as OOM.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

D=
unmount() { # also from the EXIT trap, so orgw_stop can remove $D
	local rc=$?
	# The workers hold the state files open: a mount they use is busy.
	orgw__workers_stop
	[ -n "$D" ] && mountpoint -q "$D" && umount "$D"
	return $rc
}
fill() { # fill $D to the last block
	dd if=/dev/zero of="$D/filler" bs=4k status=none 2>/dev/null
	[ "$(df --output=avail -k "$D" | tail -1 | tr -d ' ')" = 0 ]
}
healthz_both() { # DESC PATTERN: 503, generic without the key, PATTERN with it
	sleep 1.1 # past the per-worker /healthz cache
	HTTP_KEY='' orgw_http GET /healthz
	t_eq "$1: /healthz without the key: 503, a generic reason" \
		"503 state store unavailable; see the log" "$HTTP_STATUS $(json_get "$HTTP_BODY" j.reason)"
	orgw_http GET /healthz
	t_match "$1: /healthz with the key names the cause" "$2" "$HTTP_STATUS $(json_get "$HTTP_BODY" j.reason)"
	echo "# healthz: $HTTP_BODY"
}
ask_n() { # N MODEL-PREFIX: N requests on new models; sets res
	local i
	res=
	for i in $(seq "$1"); do
		ask "$2$i"
		res="$res${res:+, }${ASK%% *}"
	done
}

# A. GDBM, the disk full.
if [ "$(id -u)" != 0 ]; then
	t_skip "A: mounting a small tmpfs needs root"
else
	orgw_start STATE_PATH=/nonexistent-until-set/state.gdbm
	D=$ORGW_T/statedir
	mkdir -p "$D"
	trap 'unmount; orgw__on_exit' EXIT
	if ! mount -t tmpfs -o size=512k,mode=0700 tmpfs "$D"; then
		t_skip "A: cannot mount a tmpfs here"
	else
		S=$D/state.gdbm
		orgw_restart_workers STATE_PATH="$S"
		pids=$(worker_set)
		ask
		ask
		t_eq "A: baseline pinned" "200 locked" "$ASK"
		sleep 1.1
		orgw_http GET /healthz
		t_eq "A: baseline healthz 200" 200 "$HTTP_STATUS"
		t_check "A: the tmpfs filled up" fill
		ask_n 6 full/m
		t_match "A: full disk: every request still 200 ($res)" '^200(, 200)*$' "$res"
		t_match "A: the log names the system error" 'No space left on device' "$(cat "$ORGW_LOG")"
		t_eq "A: and says no writer died" 0 "$(grep -c 'a writer died' "$ORGW_LOG")"
		healthz_both "A: full disk" '^503 state store .*: writes refused .*No space left on device'
		rm -f "$D/filler"
		ask_n 3 room/m
		t_match "A: room again: served ($res)" '^200, 200, 200$' "$res"
		ask
		t_eq "A: room again: pinned" "200 locked" "$ASK"
		sleep 1.1
		orgw_http GET /healthz
		t_eq "A: room again: healthz 200" 200 "$HTTP_STATUS"
		t_eq "A: every state value is JSON" 0 "$(ORGW_STATE=$S state_not_json)"
		assert_no_crash "A: full disk" "$pids"
		grep -E 'state|healthz' "$ORGW_LOG" | grep -v 'req:' | sed -e 's/^orgw\[[0-9]*\]: //' -e "s|$ORGW_T|T|g" |
			sed -e 's/store [A-Z_]*:[^:]*:/store KEY:/' | sort | uniq -c | sort -rn | head -8 | sed 's/^/#   /'
		unmount
	fi
fi

# B. Redis at maxmemory, noeviction.
export ORGW_STATE_BACKEND=redis
orgw_start
pids=$(worker_set)
ask
ask
t_eq "B: baseline pinned" "200 locked" "$ASK"
sleep 1.1
orgw_http GET /healthz
t_eq "B: baseline healthz 200" 200 "$HTTP_STATUS"
orgw_redis_cli CONFIG SET maxmemory-policy noeviction >/dev/null
orgw_redis_cli CONFIG SET maxmemory 1 >/dev/null
ask_n 4 oom/m
t_match "B: at maxmemory: every request still 200 ($res)" '^200(, 200)*$' "$res"
t_match "B: the log names OOM" 'OOM command not allowed' "$(cat "$ORGW_LOG")"
healthz_both "B: at maxmemory" '^503 redis: writes refused .*OOM'
orgw_redis_cli CONFIG SET maxmemory 0 >/dev/null
ask
ask
t_eq "B: memory again: pinned" "200 locked" "$ASK"
sleep 1.1
orgw_http GET /healthz
t_eq "B: memory again: healthz 200" 200 "$HTTP_STATUS"
assert_no_crash "B: maxmemory" "$pids"
