#!/bin/bash
# t0677-team-keys-dead-worker: a team key's concurrency lease held by a
# worker that died is given back as soon as the host's worker table shows
# the worker gone, not after REQUEST_TIMEOUT_MS; and `orgw-score key
# release NAME` gives a key's leases back by hand.
#
# On GDBM and on Redis, with REQUEST_TIMEOUT_MS at 10 minutes (so a lease
# ending by its time cannot pass the test): a --concurrent 1 key's stream
# is running when every worker is killed with kill -9; as soon as the
# supervisor has started workers again, the key is served (200), and the
# log says which worker's lease was given back.  A --concurrent 1 key
# whose stream is in flight is refused (429); `key release` gives its
# lease back (exit 0, "1 concurrency lease released") and the next
# request is served; a key holding none releases 0.  `key --help` lists
# the command.
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0677-dead-worker-secret-0123456789
SLOW='[double] {\"chunks\":40,\"spacing_ms\":200}' # about 8 s

key() { # ARGS...: orgw-score key ARGS; stdout printed, stderr in KEY_ERR, RC
	local out
	out=$("$SCORER" --config "$ORGW_CONFIG_FILE" key "$@" 2>"$ORGW_T/key.err")
	RC=$?
	KEY_ERR=$(cat "$ORGW_T/key.err")
	printf '%s' "$out"
}
body() { printf '{"model":"%s","messages":[{"role":"user","content":"%s"}]%s}' "$1" "${2:-hi}" "${3:-}"; }
ask() { HTTP_KEY=$1 orgw_http POST /v1/chat/completions "$(body "$2")"; }
bg_stream() { # KEY MODEL OUT: sets BG_PID
	curl -sS -N --max-time 30 -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		-o "$3" -w '%{http_code}' --data-binary "$(body "$2" "slow\\n$SLOW" ',"stream":true')" \
		"$ORGW_URL/v1/chat/completions" >"$3.code" 2>/dev/null &
	BG_PID=$!
}

run() { # BE
	local be=$1 kl kr old p pid i t0 el
	kl=$(key add "lease$be" --concurrent 1)
	[[ $kl == orgw-* ]] || t_fail "$be: key add" "$KEY_ERR"
	ask "$kl" tk/dead
	t_eq "$be: baseline: the --concurrent 1 key is served" 200 "$HTTP_STATUS"

	# --- kill -9 of the worker holding the lease --------------------------
	bg_stream "$kl" tk/dead "$ORGW_T/dead.out"
	pid=$BG_PID
	t_check "$be: its stream is running" double_wait_active 1
	ask "$kl" tk/dead
	t_eq "$be: a second request while it runs: 429" 429 "$HTTP_STATUS"
	old=$(orgw_worker_pids | tr '\n' ' ')
	for p in $old; do kill -KILL "$p"; done
	wait "$pid" 2>/dev/null
	t0=$(date +%s%N)
	for ((i = 0; i < 100; i++)); do # multiwatch starts them again
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$ORGW_URL/healthz")" = 200 ] && break
		sleep 0.1
	done
	ask "$kl" tk/dead
	el=$((($(date +%s%N) - t0) / 1000000))
	echo "# $be: served $el ms after the workers were killed (REQUEST_TIMEOUT_MS 600000)"
	t_eq "$be: every worker killed (-9) mid-stream: the key is served at once, its lease given back" \
		200 "$HTTP_STATUS"
	t_match "$be: ... the log names the worker gone" \
		"team key lease$be: lease of worker ($(echo "$old" | sed 's/ *$//; s/ /|/g')) given back: the worker is gone" \
		"$(cat "$ORGW_LOG")"

	# --- key release ------------------------------------------------------
	kr=$(key add "rel$be" --concurrent 1)
	bg_stream "$kr" tk/rel "$ORGW_T/rel.out"
	pid=$BG_PID
	t_check "$be: a --concurrent 1 key's stream is running" double_wait_active 1
	ask "$kr" tk/rel
	t_eq "$be: a second request: 429 concurrency_limit_exceeded" \
		"429 concurrency_limit_exceeded" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code')"
	key release "rel$be" >/dev/null
	t_eq "$be: key release: exit 0, its lease released" \
		"0 orgw-score: key rel$be: 1 concurrency lease released" "$RC $KEY_ERR"
	ask "$kr" tk/rel
	t_eq "$be: ... and the next request is served" 200 "$HTTP_STATUS"
	wait "$pid"
	t_eq "$be: ... the stream in flight still ends 200" 200 "$(cat "$ORGW_T/rel.out.code")"
	key release "rel$be" >/dev/null
	t_eq "$be: key release of a key holding none: 0 released" \
		"0 orgw-score: key rel$be: 0 concurrency leases released" "$RC $KEY_ERR"
}

orgw_start KEYS_SECRET="$SECRET" REQUEST_TIMEOUT_MS=600000
t_match "key --help lists key release" 'key release NAME' "$("$SCORER" key --help 2>&1)"
run gdbm
orgw_stop
ORGW_STATE_BACKEND=redis orgw_start KEYS_SECRET="$SECRET" REQUEST_TIMEOUT_MS=600000
run redis
