#!/bin/bash
# t0800-security: the findings of a security review, each as the attack it was,
# against the real gateway (lighttpd + workers) with a hostile upstream
# (tests/soak/hostile-upstream.js) or a hostile client or neighbour:
#   1. the upstream key quoted back by GET /v1/models (401 and 200, and
#      the cached copy), and JSON-escaped (sk\u002dor...) in an upstream
#      error that orgw decodes and re-sends: masked everywhere;
#   2. a key given by mistake as OPENROUTER_API_KEY_FILE is never echoed
#      (/healthz without the client key, the log); /healthz with the key
#      gives the detail;
#   3. symlinks at STATE_PATH.lock and STATE_PATH are not followed, a
#      state directory writable by others is refused; the gateway serves
#      on (unpinned) and says why;
#   5. role-only chunks without end: the held chunks are bounded, the
#      worker does not grow;
#   6. a tag holding CR LF written into the state file: no injected
#      response header, no broken log line;
#   9. /healthz takes a shared state lock at most, waits for it 200 ms at
#      most, and keeps its answer a second per worker;
#   7. core dumps off: RLIMIT_CORE 0 in /proc/PID/limits of a worker;
#   8. a client that stops reading: the CGI run ends as client_abort
#      within about CLIENT_SEND_TIMEOUT_MS; a slow reader that keeps
#      reading gets the whole stream;
#  10. CONTENT_LENGTH "+5", " 5", " -5": 400; an upstream 3xx: 502.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start MAX_ATTEMPTS=2 UPSTREAM_TIMEOUT_MS=5000
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $BIN == /* ]] || BIN=$ORGW_ROOT/$BIN
hostile_start
pids=$(worker_set)
body() { # MODEL STREAM
	printf '{"model":"%s","stream":%s,"messages":[{"role":"user","content":"hi"}]}' "$1" "$2"
}
models_mode() { curl -s -X POST --data-binary "{\"mode\":\"$1\"}" "$HURL/__hostile/models"; }
hits() { grep -c -- "$UPSTREAM_KEY" "$@"; }

# 1. The upstream key quoted back.
models_mode echo401
orgw_http GET /v1/models
t_eq "GET /v1/models: upstream's 401 is relayed" 401 "$HTTP_STATUS"
t_eq "  without the key it quoted" 0 "$(hits "$HTTP_BODY_FILE")"
t_match "  the rest of the message is kept, the key masked" 'Incorrect API key provided: \*\*\*\*' "$HTTP_BODY"
# (before any 200 fills a worker's cache)
models_mode redirect
orgw_http GET /v1/models
t_eq "an upstream 302 on /v1/models: a 502 gateway error" 502 "$HTTP_STATUS"
models_mode echo200
orgw_http GET /v1/models
t_eq "GET /v1/models: a 200 list quoting the key: relayed (miss)" "200 miss" "$HTTP_STATUS $(http_header X-Orgw-Cache)"
t_eq "  masked" 0 "$(hits "$HTTP_BODY_FILE")"
t_check "  still JSON" json_ok "$HTTP_BODY" 'j.data[0].id === "m/1"'
for _ in 1 2 3 4; do # every worker's cache
	orgw_http GET /v1/models
	[ "$(http_header X-Orgw-Cache)" = hit ] && break
done
t_eq "  the cached copy (hit) is masked too" "hit 0" "$(http_header X-Orgw-Cache) $(hits "$HTTP_BODY_FILE")"
models_mode big
out=$(orgw_chat --model hostile/key-escaped --stream)
echo "# key-escaped stream: $(json_get "$out" 'JSON.stringify({ok: j.ok, mid: j.mid_stream, done: j.done, err: j.error && j.error.message})')"
t_eq "an error event quoting the key JSON-escaped: re-sent without it" 0 "$(printf '%s' "$out" | hits)"
t_match "  the message is re-sent, the key masked" 'bad key \*\*\*\*' "$(json_get "$out" 'j.error && j.error.message')"
t_match "  the log says status=200, the status the client got" \
	'status=200 ' "$(grep 'model=hostile/key-escaped ' "$ORGW_LOG")"
orgw_http POST /v1/chat/completions "$(body hostile/key-escaped-200 false)"
echo "# key-escaped 200: $HTTP_STATUS $HTTP_BODY"
t_eq "an error in a 200 quoting the key JSON-escaped: orgw's error, without it" 0 "$(hits "$HTTP_BODY_FILE")"
t_match "  the message is re-sent, the key masked" 'bad key \*\*\*\*' "$(json_get "$HTTP_BODY" 'j.error.message')"

# 10b. An upstream 3xx.
orgw_http POST /v1/chat/completions "$(body hostile/redirect false)"
t_eq "an upstream 307 on chat: a 502 gateway error" "502 upstream_error" "$HTTP_STATUS $(json_get "$HTTP_BODY" j.error.type)"

# 5. Role-only chunks without end (a bound on what is held: 64 KiB).
peak_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
for p in $(orgw_worker_pids); do echo "# worker $p VmHWM before: $(peak_kb "$p") kB"; done
start=$(date +%s%N)
orgw_http POST /v1/chat/completions "$(body hostile/role-forever true)"
ms=$(ms_since "$start")
grow=0
for p in $(orgw_worker_pids); do
	v=$(peak_kb "$p")
	echo "# worker $p VmHWM after role-forever: $v kB"
	[ "$v" -gt "$grow" ] && grow=$v
done
echo "# role-only chunks without end: $HTTP_STATUS after $ms ms"
t_check "role-only chunks without end: the request ends ($ms ms < 20000)" test "$ms" -lt 20000
bound=$((100 * 1024))
ldd "$BIN" 2>/dev/null | grep -q libasan && bound=$((400 * 1024))
t_check "  the worker did not grow (peak $grow kB < $bound kB)" test "$grow" -lt "$bound"
t_match "  the client got an error, not a hang" '(error|502)' "$HTTP_STATUS $HTTP_BODY"

# 7. Core dumps off.
for p in $(orgw_worker_pids); do
	t_match "worker $p: RLIMIT_CORE 0 in /proc/$p/limits" '^Max core file size +0 +0 ' \
		"$(grep 'Max core file size' "/proc/$p/limits")"
	break
done

# 6. A tag holding CR LF in the state file (someone who can write it).
M=deepseek/deepseek-v3.2
ask "$M"
now=$(date +%s)
orgw__workers_stop
gdbmtool "$ORGW_STATE" store "BEST_PROVIDER:$M" \
	"{\"v\":1,\"tag\":\"ok\\r\\nX-Injected: yes\",\"provider_name\":\"Evil\\u001b[31m\",\"locked_at\":$now,\"last_used\":$now}" ||
	t_fail "gdbmtool store"
orgw__workers_start "$ORGW_T/orgw.sock" "$ORGW_CONFIG_FILE" "$ORGW_LOG" || t_fail "workers restart"
orgw__wait_http "$ORGW_URL/healthz" 10
pids=$(worker_set)
ask "$M"
echo "# with the bad tag: $ASK provider=$(http_header X-Orgw-Provider)"
t_eq "a tag holding CR LF in the state: no injected header" "" "$(http_header X-Injected)"
t_eq "  the request is served (the bad lock is treated as absent)" 200 "$HTTP_STATUS"
t_eq "  no raw CR or ESC in the worker log" 0 "$(grep -c $'\r\|\e' "$ORGW_LOG")"

# 2. A key given by mistake as OPENROUTER_API_KEY_FILE.
: >"$ORGW_LOG"
orgw_restart_workers -OPENROUTER_API_KEY OPENROUTER_API_KEY_FILE="$UPSTREAM_KEY"
HTTP_KEY= orgw_http GET /healthz
t_eq "OPENROUTER_API_KEY_FILE=<a key>: /healthz without the client key: 503, generic" \
	"503 configuration refused; see the log" "$HTTP_STATUS $(json_get "$HTTP_BODY" j.reason)"
t_eq "  the key is not in it" 0 "$(hits "$HTTP_BODY_FILE")"
orgw_http GET /healthz
t_match "  with the client key: the detail, naming the setting" 'OPENROUTER_API_KEY_FILE' "$(json_get "$HTTP_BODY" j.reason)"
t_eq "  still without the key" 0 "$(hits "$HTTP_BODY_FILE")"
t_match "  the log names the setting" 'OPENROUTER_API_KEY_FILE' "$(cat "$ORGW_LOG")"
t_eq "  the log does not hold the key" 0 "$(hits "$ORGW_LOG")"
orgw_restart_workers -OPENROUTER_API_KEY_FILE OPENROUTER_API_KEY="$UPSTREAM_KEY"
pids=$(worker_set)

# 3. Symlinks in the state directory, and a directory open to others.
VICTIM=$ORGW_T/victim
printf 'precious\n' >"$VICTIM"
rm -f "$ORGW_STATE.lock"
ln -s "$VICTIM" "$ORGW_STATE.lock"
: >"$ORGW_LOG"
ask "$M"
t_eq "a symlink at STATE_PATH.lock: served unpinned" "200 unpinned" "$ASK"
t_eq "  the link's target is untouched" precious "$(cat "$VICTIM")"
t_match "  the log says why" "$ORGW_STATE.lock is a symlink; refused" "$(cat "$ORGW_LOG")"
sleep 1.1 # past the per-worker /healthz cache
orgw_http GET /healthz
t_match "  /healthz with the key says why" 'symlink' "$(json_get "$HTTP_BODY" j.reason)"
rm -f "$ORGW_STATE.lock"
mv "$ORGW_STATE" "$ORGW_T/state.real"
ln -s "$ORGW_T/made-by-orgw" "$ORGW_STATE"
sleep 1.1 # past the per-worker /healthz cache
ask "$M"
t_eq "a dangling symlink at STATE_PATH: served unpinned" "200 unpinned" "$ASK"
t_check "  its target was not created" test ! -e "$ORGW_T/made-by-orgw"
t_check "  the link was not moved aside" test -L "$ORGW_STATE"
rm -f "$ORGW_STATE"
mv "$ORGW_T/state.real" "$ORGW_STATE"
chmod 0777 "$ORGW_T"
: >"$ORGW_LOG"
ask "$M"
t_eq "a state directory writable by others: served unpinned" "200 unpinned" "$ASK"
t_match "  the log says why" 'writable by others' "$(cat "$ORGW_LOG")"
sleep 1.1
HTTP_KEY= orgw_http GET /healthz
t_eq "  /healthz without the key: 503, generic, no path" \
	"503 state store unavailable; see the log" "$HTTP_STATUS $(json_get "$HTTP_BODY" j.reason)"
chmod 0700 "$ORGW_T"
ask "$M"
t_match "fixed: pinned again without a restart" '^200 (locked|relocked|scored)$' "$ASK"
t_eq "  files created with STATE_MODE 0600" "600 600" "$(stat -c %a "$ORGW_STATE") $(stat -c %a "$ORGW_STATE.lock")"

# 9. /healthz takes a shared lock at most, and waits a second for it at most.
# Before: the exclusive lock, so a reader holding the lock made every
# /healthz wait 3 s (and a flood of /healthz competed with the workers).
sleep 1.1 # past the per-worker /healthz cache
exec 9<"$ORGW_STATE.lock" # held by this shell: nothing to leave behind
flock -s 9
start=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8; do HTTP_KEY= orgw_http GET /healthz; done
ms=$(ms_since "$start")
t_eq "/healthz while another process holds a shared state lock: 200" 200 "$HTTP_STATUS"
t_check "  8 answers without waiting ($ms ms < 1500)" test "$ms" -lt 1500
flock -u 9
sleep 1.1
flock -x 9
start=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8; do orgw_http GET /healthz; done
ms=$(ms_since "$start")
t_eq "/healthz while the exclusive lock is held: 503, busy" "503 busy" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" j.reason | grep -o busy)"
# Each waits a second at most for its shared lock (not the 3 s a
# transaction waits), and a worker keeps the answer a second after it.
t_check "  8 answers, each waiting a second at most ($ms ms < 12000; the lock timeout would be 24000)" \
	test "$ms" -lt 12000
flock -u 9
exec 9<&-

# 10a. CONTENT_LENGTH with a sign or a blank (CGI: the web server would
# normalise it).
cgi() { # CONTENT_LENGTH BODY [CLIENT_SEND_TIMEOUT_MS]
	printf '%s' "$2" | env -i PATH="$PATH" ORGW_CONFIG="$ORGW_CONFIG_FILE" \
		${3:+CLIENT_SEND_TIMEOUT_MS=$3} \
		GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD=POST PATH_INFO=/v1/chat/completions \
		SCRIPT_NAME=/cgi-bin/orgw.fcgi CONTENT_LENGTH="$1" CONTENT_TYPE=application/json \
		HTTP_AUTHORIZATION="Bearer $ORGW_KEY" "$BIN" 2>>"$ORGW_T/cgi.log"
}
for cl in "+5" " 5" " -5"; do
	t_match "CONTENT_LENGTH \"$cl\": 400" '^Status: 400' "$(cgi "$cl" '{"a":1}')"
done

# 8. A client that stops reading, and one that reads slowly.
b=$(body hostile/long-stream true)
: >"$ORGW_T/cgi.log"
start=$(date +%s%N)
cgi "${#b}" "$b" 1000 | sleep 8 &
sp=$!
for _ in $(seq 80); do
	grep -q 'outcome=' "$ORGW_T/cgi.log" && break
	sleep 0.1
done
ms=$(ms_since "$start")
line=$(grep 'outcome=' "$ORGW_T/cgi.log")
echo "# stopped reader: after $ms ms: $line"
t_match "a client that stops reading: the request ends as client_abort" 'outcome=client_abort' "$line"
t_check "  within about CLIENT_SEND_TIMEOUT_MS (1000; took $ms ms < 5000)" test "$ms" -lt 5000
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null
: >"$ORGW_T/cgi.log"
slow=$(cgi "${#b}" "$b" 1000 | python3 -c '
import sys, time
n = 0
while True:
    d = sys.stdin.buffer.read(65536)
    if not d:
        break
    n += len(d)
    time.sleep(0.01)
print(n)')
t_check "a slow reader that keeps reading gets the whole stream ($slow bytes)" test "$slow" -gt 20000000
t_match "  and it ends as ok" 'outcome=ok' "$(grep 'outcome=' "$ORGW_T/cgi.log")"

assert_no_crash "security" "$pids"
