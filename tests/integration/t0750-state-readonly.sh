#!/bin/bash
# t0750-state-readonly: the state directory becomes read-only (a full or
# remounted disk, a wrong deployment).  The gateway keeps
# serving (unpinned when it must write), every request still 200;
# /healthz answers 503 and
# says why; the worker log names the path and the system error; nothing
# crashes; when the directory is writable again, requests are pinned again
# without a restart.
#
# Read-only is made with chmod for an ordinary user and with chattr +i
# (immutable) for root, whom permissions do not stop.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

D=
ro_on() { # make $D and the files in it read-only
	local f
	for f in "$D"/*; do
		[ -e "$f" ] || continue
		if [ "$(id -u)" = 0 ]; then
			chattr +i "$f" 2>/dev/null
		else
			chmod a-w "$f"
		fi
	done
	if [ "$(id -u)" = 0 ]; then
		chattr +i "$D"
	else
		chmod a-w "$D"
	fi
	echo "# read-only now: $(lsattr -d "$D" "$D"/* 2>/dev/null | tr '\n' ' ')"
}
ro_off() { # undo (also from the EXIT trap, so orgw_stop can remove $D)
	local rc=$?
	if [ -n "$D" ] && [ -d "$D" ]; then
		if [ "$(id -u)" = 0 ]; then
			chattr -i "$D" "$D"/* 2>/dev/null
		else
			chmod u+w "$D" "$D"/* 2>/dev/null
		fi
	fi
	return $rc
}

orgw_start STATE_PATH=/nonexistent-until-set/state.gdbm
D=$ORGW_T/statedir
mkdir -p "$D"
trap 'ro_off; orgw__on_exit' EXIT
S=$D/state.gdbm
if [ "$(id -u)" = 0 ] && ! chattr +i "$D" 2>/dev/null; then
	t_skip "chattr +i is not supported here: cannot make a directory read-only for root"
	exit 0
fi
chattr -i "$D" 2>/dev/null

# A. The directory is read-only before any state exists (before the
# workers even start on it).
ro_on
orgw_restart_workers STATE_PATH="$S"
pids=$(worker_set)
ask
t_eq "read-only empty state directory: 200, unpinned" "200 unpinned" "$ASK"
ask
t_eq "and again" "200 unpinned" "$ASK"
orgw_http GET /healthz
t_eq "healthz 503" 503 "$HTTP_STATUS"
t_match "healthz says which store and why" "state store $S" "$(json_get "$HTTP_BODY" j.reason)"
HTTP_KEY= orgw_http GET /healthz
t_eq "without the client key: 503, a generic reason, no path" \
	"503 state store unavailable; see the log" "$HTTP_STATUS $(json_get "$HTTP_BODY" j.reason)"
echo "# healthz: $HTTP_BODY"
t_match "the worker log names the path and the error" \
	"$S.lock: (Operation not permitted|Permission denied|Read-only file system)" "$(cat "$ORGW_LOG")"
orgw_http GET /stats
t_eq "/stats still answers" 200 "$HTTP_STATUS"
ro_off

# B. Writable: state appears; then all of it read-only.
ask
ask
t_eq "writable again: pinned, no restart needed" "200 locked" "$ASK"
before=$(json_get "$(orgw_curl /stats)" "j.models['deepseek/deepseek-v3.2'].requests")
ro_on
ask
# A lock that is still fresh can be followed from a read-only state (no
# write needed); otherwise the request goes unpinned.  Served either way.
t_match "read-only directory and files: 200 (locked from the read-only state, or unpinned)" \
	'^200 (locked|unpinned)$' "$ASK"
orgw_http GET /healthz
t_eq "healthz 503" 503 "$HTTP_STATUS"
echo "# healthz: $HTTP_BODY"
orgw_http GET /stats
t_eq "/stats still reads the (read-only) state" "$before" \
	"$(json_get "$HTTP_BODY" "j.models['deepseek/deepseek-v3.2'].requests")"
ro_off

# C. Back to normal.
ask
t_eq "writable again: pinned" "200 locked" "$ASK"
sleep 1.1 # past the per-worker /healthz cache
orgw_http GET /healthz
t_eq "healthz 200 again" 200 "$HTTP_STATUS"
t_eq "state file mode 600" 600 "$(stat -c %a "$S")"
t_eq "lock file mode 600" 600 "$(stat -c %a "$S.lock")"
assert_no_crash "read-only state" "$pids"
grep -E 'state|lock' "$ORGW_LOG" | grep -v 'req:' | sed -e 's/^orgw\[[0-9]*\]: //' | sort | uniq -c | head -8 | sed 's/^/#   /'
