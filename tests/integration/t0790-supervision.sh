#!/bin/bash
# t0790-supervision: the worker supervision deploy/README-workers.md
# describes (spawn-fcgi + multiwatch), checked:
#   1. a worker killed with SIGKILL is replaced within a second, and the
#      socket keeps serving meanwhile;
#   2. multiwatch's retry limit: with the defaults (-r 3, -t 10000) a slot
#      whose worker dies 4 times, each within 10 s of being forked, is
#      given up ("died to often") and the capacity is gone until restart;
#      with a larger -r it is not;
#   3. a graceful stop (SIGTERM to multiwatch, which sends SIGUSR1 to the
#      workers) lets a stream in flight finish with [DONE].
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $BIN == /* ]] || BIN=$ORGW_ROOT/$BIN
M=deepseek/deepseek-v3.2

# 1. Kill one, count the time until the slot is filled again.
sup=$(orgw_supervisor_pid)
n0=$(orgw_worker_pids | wc -l)
victim=$(orgw_worker_pids | head -n 1)
start=$(date +%s%N)
kill -KILL "$victim"
back=
for i in $(seq 100); do
	l=$(orgw_worker_pids)
	if [ "$(wc -l <<<"$l")" -ge "$n0" ] && ! grep -qx "$victim" <<<"$l"; then
		back=$(ms_since "$start")
		break
	fi
	sleep 0.02
done
echo "# worker $victim killed; slot filled again after ${back:-never} ms"
t_check "a SIGKILLed worker is replaced within a second (${back:-never} ms)" test -n "$back" -a "${back:-9999}" -lt 1000
ask
t_eq "and the gateway serves" "200 scored" "$ASK"

# 2. The retry limit, on a multiwatch of our own (one slot, no lighttpd).
live_child() { # PID of a live (not zombie) child of $1 that is not in $2
	local c
	for c in $(orgw__children "$1"); do
		orgw__alive "$c" && [[ " $2 " != *" $c "* ]] && { echo "$c"; return 0; }
	done
	return 1
}
slot_test() { # MULTIWATCH-ARGS...: prints how many live children are left
	local sock=$ORGW_T/mw.sock mw p i k killed=
	rm -f "$sock"
	env -i PATH="$PATH" ORGW_CONFIG="$ORGW_CONFIG_FILE" spawn-fcgi -n -s "$sock" -- \
		"$(command -v multiwatch)" -f 1 "$@" -- "$BIN" >>"$ORGW_T/mw.log" 2>&1 </dev/null &
	mw=$!
	for k in 1 2 3 4 5; do
		p=
		for i in $(seq 50); do
			p=$(live_child "$mw" "$killed") && break
			sleep 0.02
		done
		echo "# kill $k: worker ${p:-none (slot given up)}" >&2
		[ -n "$p" ] || break
		kill -KILL "$p"
		killed="$killed $p"
		sleep 0.2
	done
	sleep 0.5
	n=0
	for p in $(orgw__children "$mw"); do
		orgw__alive "$p" && n=$((n + 1))
	done
	echo "$n"
	orgw__kill "$mw"
}
left=$(slot_test)
t_eq "multiwatch defaults: a slot killed 5 times in 2 s is given up" 0 "$left"
t_match "  and says so" 'died to often' "$(cat "$ORGW_T/mw.log")"
left=$(slot_test -r 1000)
t_eq "multiwatch -r 1000: the slot is still filled after 5 kills" 1 "$left"

# 3. Graceful stop with a stream in flight (3 s long): once its request
# has reached the double, and half a second into it.  (A fixed second from
# the client's start was too short for node and the SDK to send the
# request on a busy machine: the stop came first.)
double_ctl POST config '{"chunks":10,"spacing_ms":300}' >/dev/null
s0=$(double_seq)
orgw_chat --model "$M" --stream >"$ORGW_T/inflight.json" &
chat=$!
double_wait_request "$s0" chat/completions
sleep 0.5
kill -TERM "$(orgw_supervisor_pid)"
wait "$chat"
out=$(cat "$ORGW_T/inflight.json")
echo "# in flight during the stop: $(json_get "$out" 'JSON.stringify({ok: j.ok, done: j.done, chunks: j.chunks})')"
t_eq "a stream in flight when multiwatch is stopped finishes with [DONE]" "true true" \
	"$(json_get "$out" 'j.ok + " " + j.done')"
for i in $(seq 50); do
	orgw__alive "$sup" || break
	sleep 0.1
done
t_check "multiwatch and its workers are gone afterwards" bash -c "! kill -0 $sup 2>/dev/null"
ORGW_SUPERVISOR_PID=
