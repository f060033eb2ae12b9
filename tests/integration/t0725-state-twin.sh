#!/bin/bash
# t0725-state-twin: the GDBM state and its crash-safety twin
# (STATE_PATH.twin, src/store_gdbm_twin.c) never part for good.
#
# 1. The twin truncated by hand (": > STATE_PATH.twin"), then a request:
#    the next writer sees a twin that does not match the primary and
#    remakes it whole, so when a writer later dies in mid-transaction the
#    restore from the twin keeps every key (the lock, the candidates).
# 2. A writer dies in mid-transaction and the restore cannot be written
#    (the state directory immutable for root, as chattr +i or a full disk
#    would refuse it; a directory in the way of the copy's temporary file
#    otherwise): requests are still served, the log says writes are
#    refused, nothing is written to the unrestored primary; once the
#    directory is writable again the next writer restores the twin, so
#    nothing of the dead transaction is left and the two files hold the
#    same keys.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

D=
stuck_on() { # the state directory refuses new files
	if [ "$(id -u)" = 0 ] && chattr +i "$D" 2>/dev/null; then
		HOW="the state directory made immutable"
	else
		mkdir "$S.tmp"
		HOW="a directory in the way of the copy's temporary file"
	fi
}
stuck_off() { # undo (also from the EXIT trap, so orgw_stop can remove $D)
	local rc=$?
	if [ -n "$D" ] && [ -d "$D" ]; then
		[ "$(id -u)" = 0 ] && chattr -i "$D" 2>/dev/null
		rmdir "$S.tmp" 2>/dev/null
	fi
	return $rc
}

orgw_start STATE_PATH=/nonexistent-until-set/state.gdbm
D=$ORGW_T/statedir
S=$D/state.gdbm
mkdir -p "$D"
trap 'stuck_off; orgw__on_exit' EXIT
orgw_restart_workers STATE_PATH="$S"
ORGW_STATE=$S
kw_build || exit 0
pids=$(worker_set)
for m in deepseek/deepseek-v3.2 soak/a soak/b; do
	ask "$m"
	ask "$m"
done
t_eq "baseline: pinned" "200 locked" "$ASK"
state_keys "$S" >"$ORGW_T/keys.before"
n=$(wc -l <"$ORGW_T/keys.before")
t_check "baseline: the state holds keys ($n)" test "$n" -gt 10
t_eq "baseline: the twin holds the same keys" "$(cat "$ORGW_T/keys.before")" "$(state_keys "$S.twin")"

# 1. The twin truncated, then a write, then a writer that dies.
: >"$S.twin"
ask
t_eq "1. twin truncated: the next request is served" "200 locked" "$ASK"
t_eq "1. the twin was remade with every key" "$(cat "$ORGW_T/keys.before")" "$(state_keys "$S.twin")"
"$KW" "$S" 500 self 2>>"$ORGW_T/kw.err"
t_eq "1. a writer killed itself in mid-transaction" 137 "$?"
ask
t_eq "1. the next request still follows the lock" "200 locked" "$ASK"
t_eq "1. the restore from the twin kept every key" "$(cat "$ORGW_T/keys.before")" "$(state_keys "$S")"

# 2. A writer dies, and the restore cannot be written.
"$KW" "$S" 500 self 2>>"$ORGW_T/kw.err"
t_eq "2. a writer killed itself in mid-transaction" 137 "$?"
stuck_on
echo "# $HOW"
res=
for i in 1 2 3; do
	ask
	res="$res${res:+, }$ASK"
done
t_match "2. restore impossible: three requests all 200 ($res)" '^200 [a-z]+, 200 [a-z]+, 200 [a-z]+$' "$res"
t_match "2. the log says writes are refused" 'writes refused until they can' "$(cat "$ORGW_LOG")"
t_eq "2. the unrestored primary was not written over: the mark still names the twin" p \
	"$(head -c 1 "$S.lock")"
stuck_off
ask
t_eq "2. writable again: pinned" "200 locked" "$ASK"
t_eq "2. nothing of the dead transaction is left" 0 "$(state_keys "$S" | grep -c '^KILLTEST:')"
t_eq "2. the primary and the twin hold the same keys" "$(state_keys "$S.twin")" "$(state_keys "$S")"
# (LOST_UPDATES is new: the requests served meanwhile could not be counted.)
t_eq "2. and every key from before" "" "$(state_keys "$S" | comm -13 - "$ORGW_T/keys.before")"
t_eq "every state value is JSON" 0 "$(state_not_json)"
grep -E 'state' "$ORGW_LOG" | grep -v 'req:' | sed -e 's/^orgw\[[0-9]*\]: //' -e "s|$ORGW_T|T|g" |
	sort | uniq -c | head -10 | sed 's/^/#   /'
assert_no_crash "twin" "$pids"
