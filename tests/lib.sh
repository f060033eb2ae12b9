# shellcheck shell=bash disable=SC2034 # HTTP_*, ORGW_* globals are for the tests
# tests/lib.sh - helpers for the integration tests (tests/integration/tNNNN-*.sh).
#
# Sourced by bash scripts:   . "$(dirname "$0")/../lib.sh"
# and by deploy/run-local.sh (which uses the orgw__* start/stop pieces).
#
# Checks print one line each, which tests/run.sh counts:
#   t_ok DESC                     ok - DESC
#   t_fail DESC [DETAIL...]       not ok - DESC, then "# DETAIL" lines
#   t_skip DESC                   skip - DESC
#   t_check DESC CMD [ARG...]     ok when CMD exits 0; else its output as "#"
#   t_eq DESC EXPECTED ACTUAL     ok when the strings are equal
#   t_match DESC ERE ACTUAL       ok when ACTUAL matches the extended regex
#
# The stack under test (every process is started here and killed by PID):
#
#   orgw_start [NAME=VALUE | -NAME ...]
#       temp dir $ORGW_T; the OpenRouter double (tests/double/openrouter-double.js,
#       port 0, key $UPSTREAM_KEY); an orgw config file $ORGW_T/orgw.conf with
#       OPENROUTER_API_KEY, CUSTOM_ACCESS_KEY, UPSTREAM_URL (the double),
#       STATE_PATH=$ORGW_T/state.gdbm, then the arguments (NAME=VALUE sets or
#       overrides a setting, NAME= sets it empty, -NAME leaves it out);
#       `spawn-fcgi -n -s $ORGW_T/orgw.sock -- multiwatch -f $ORGW_WORKERS -- BIN`
#       with only ORGW_CONFIG (plus PATH, HOME, LANG, sanitizer options and
#       $ORGW_WORKER_ENV) in the workers' environment, their stderr in
#       $ORGW_LOG; lighttpd on a free loopback port with deploy/lighttpd.conf.
#       Returns when GET /healthz gets any HTTP answer (10 s at most), so
#       workers that refuse their config still "start" (healthz is then 503
#       from lighttpd; read $ORGW_LOG).  When the stack itself cannot start,
#       prints "not ok - orgw_start: ..." with the logs and exits 1.
#       Installs orgw_stop as the EXIT trap.
#     exports ORGW_URL (http://127.0.0.1:PORT), ORGW_KEY, DOUBLE_URL,
#       UPSTREAM_KEY, ORGW_T, ORGW_LOG (worker stderr), ORGW_LIGHTTPD_LOG,
#       ORGW_DOUBLE_LOG, ORGW_CONFIG_FILE, ORGW_STATE (the GDBM file)
#   orgw_restart_workers [NAME=VALUE | -NAME ...]
#       changes those settings in the config file and restarts only the
#       FastCGI workers (same socket; lighttpd and the double keep running).
#   orgw_stop
#       TERM, then KILL after 2 s, to everything orgw_start started; removes
#       $ORGW_T unless ORGW_KEEP=1.  Safe to call twice.
#   orgw_worker_pids      the current worker PIDs, one a line
#   orgw_supervisor_pid   the multiwatch PID (it restarts killed workers)
#
# Talking to it:
#   orgw_curl PATH [CURL_ARG...]          curl -sS with the client key; prints the body
#   orgw_http METHOD PATH [BODY [CURL_ARG...]]
#       one request; sets HTTP_STATUS, HTTP_BODY (the text), HTTP_BODY_FILE,
#       HTTP_HEADERS_FILE.  BODY is JSON text, @FILE, or "" for none.  The
#       Authorization header carries ${HTTP_KEY-$ORGW_KEY}: run
#       `HTTP_KEY=wrong orgw_http ...` for a wrong key, `HTTP_KEY= ...` for none.
#   http_header NAME       a header of the last orgw_http response (case-insensitive)
#   double_ctl METHOD PATH [JSON]
#       the double's control API; PATH "/__double/faults" or just "faults".
#       Prints the body; fails on HTTP >= 400.
#   orgw_chat [chat.mjs ARGS...]
#       node tests/js/chat.mjs --base $ORGW_URL/v1 --key $ORGW_KEY ARGS: one
#       chat completion through the official OpenAI SDK, one JSON line out.
#   json_get SRC EXPR      SRC is JSON text, a file name, or "-" (stdin); EXPR a
#       JavaScript expression over `j`, e.g. 'j.error?.code'.  Prints strings
#       raw and anything else as JSON; status 1 when EXPR is undefined, 2 when
#       SRC is not JSON.  (jq is installed too, but this needs no quoting
#       gymnastics for keys like "deepinfra/fp8".)
#   json_ok SRC EXPR       status 0 when EXPR is truthy
#
# Knobs (environment):
#   ORGW_FCGI_BIN   the gateway binary (default cgi-bin/orgw.fcgi; e.g.
#                   build/asan/orgw.fcgi)
#   ORGW_WORKERS    FastCGI worker processes (default 4)
#   ORGW_WORKER_ENV extra NAME=VALUE words for the workers' environment (the
#                   environment wins over the config file)
#   ORGW_DOUBLE_JS  the upstream double (default tests/double/openrouter-double.js)
#   ORGW_KEEP=1     keep $ORGW_T (logs, state, configs) after the test
#   ORGW_CURL_MAX_TIME  seconds for one orgw_curl/orgw_http/double_ctl (default 120)

ORGW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ORGW_ROOT

T_PASSED=0
T_FAILED=0
T_SKIPPED=0

UPSTREAM_KEY=sk-or-v1-test-upstream-SECRET
ORGW_KEY=client-test-key
export UPSTREAM_KEY ORGW_KEY

# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

t__line() { # one line: newlines in a description would break the count
	local s=${1//$'\n'/ }
	printf '%s' "${s//$'\r'/ }"
}

t__detail() { # every line of every argument as a "# " line
	local a l
	for a in "$@"; do
		while IFS= read -r l || [ -n "$l" ]; do
			printf '#   %s\n' "$l"
		done <<<"$a"
	done
}

t_ok() {
	T_PASSED=$((T_PASSED + 1))
	printf 'ok - %s\n' "$(t__line "$1")"
}

t_fail() {
	T_FAILED=$((T_FAILED + 1))
	printf 'not ok - %s\n' "$(t__line "$1")"
	shift
	[ $# -gt 0 ] && t__detail "$@"
	return 0
}

t_skip() {
	T_SKIPPED=$((T_SKIPPED + 1))
	printf 'skip - %s\n' "$(t__line "$1")"
}

t_check() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		t_ok "$desc"
		return 0
	fi
	t_fail "$desc" "command: $* (exit $rc)" "${out:0:4000}"
	return 1
}

t_eq() {
	if [ "$2" = "$3" ]; then
		t_ok "$1"
		return 0
	fi
	t_fail "$1" "expected: ${2:0:2000}" "     got: ${3:0:2000}"
	return 1
}

t_match() {
	if [[ $3 =~ $2 ]]; then
		t_ok "$1"
		return 0
	fi
	t_fail "$1" "expected to match: $2" "                got: ${3:0:2000}"
	return 1
}

# ---------------------------------------------------------------------------
# JSON (node is always there: the double needs it)
# ---------------------------------------------------------------------------

json_get() {
	node -e '
const fs = require("fs");
const [src, expr] = process.argv.slice(1);
let text = src;
if (src === "-") text = fs.readFileSync(0, "utf8");
else if (!/^\s*[[{"]/.test(src) && src.length < 4096 && fs.existsSync(src)) text = fs.readFileSync(src, "utf8");
let j;
try { j = JSON.parse(text); } catch (e) {
  process.stderr.write("json_get: not JSON (" + e.message + "): " + String(text).slice(0, 300) + "\n");
  process.exit(2);
}
let v;
try { v = new Function("j", "return (" + expr + ");")(j); } catch (e) {
  process.stderr.write("json_get: " + expr + ": " + e.message + "\n");
  process.exit(3);
}
if (v === undefined) process.exit(1);
process.stdout.write(typeof v === "string" ? v : JSON.stringify(v));
' "$1" "$2"
}

json_ok() {
	local v
	v=$(json_get "$1" "!!($2)") || return 2
	[ "$v" = true ]
}

# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------

orgw__log() { printf '# %s\n' "$*" >&2; }

orgw__alive() { # PID exists and is not a zombie
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(<"/proc/$1/stat") 2>/dev/null || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

orgw__children() { # direct children of PID
	local f
	for f in /proc/"$1"/task/*/children; do
		[ -r "$f" ] && tr ' ' '\n' <"$f"
	done | grep -E '^[0-9]+$'
}

orgw__kill() { # TERM the PIDs, KILL the survivors after 2 s, reap our children
	local p i left
	for p in "$@"; do
		orgw__alive "$p" && kill -TERM "$p" 2>/dev/null
	done
	for ((i = 0; i < 20; i++)); do
		left=
		for p in "$@"; do
			orgw__alive "$p" && left="$left $p"
		done
		[ -z "$left" ] && break
		sleep 0.1
	done
	for p in $left; do
		kill -KILL "$p" 2>/dev/null
	done
	for p in "$@"; do
		{ wait "$p"; } 2>/dev/null
	done
	return 0
}

orgw__wait_http() { # URL SECONDS: until any HTTP status answers
	local url=$1 deadline=$((SECONDS + $2)) code
	while :; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null)
		[ -n "$code" ] && [ "$code" != 000 ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

orgw__free_port() { # a port free on 127.0.0.1 right now
	node -e 'const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });'
}

# orgw__double_start DIR KEY: sets ORGW_DOUBLE_PID, ORGW_DOUBLE_PORT
orgw__double_start() {
	local dir=$1 key=$2 pf=$1/double.port js i
	js=${ORGW_DOUBLE_JS:-$ORGW_ROOT/tests/double/openrouter-double.js}
	[ -f "$js" ] || { orgw__log "no double at $js"; return 1; }
	rm -f "$pf"
	node "$js" --port 0 --port-file "$pf" --key "$key" \
		>"$dir/double.log" 2>&1 </dev/null &
	ORGW_DOUBLE_PID=$!
	ORGW_DOUBLE_PORT=
	for ((i = 0; i < 100; i++)); do
		if [ -s "$pf" ]; then
			ORGW_DOUBLE_PORT=$(tr -dc 0-9 <"$pf")
			[ -n "$ORGW_DOUBLE_PORT" ] && return 0
		fi
		orgw__alive "$ORGW_DOUBLE_PID" || break
		sleep 0.1
	done
	orgw__log "the double did not start"
	return 1
}

# Settings for the config file: ordered names plus values.
declare -ga ORGW__CONF_KEYS=()
declare -gA ORGW__CONF=()

orgw__conf_set() { # NAME=VALUE (set) or -NAME (remove)
	local a k
	for a in "$@"; do
		if [[ $a == -* ]]; then
			k=${a#-}
			unset "ORGW__CONF[$k]"
			continue
		fi
		if [[ $a != *=* || ${a%%=*} == "" ]]; then
			orgw__log "not a NAME=VALUE setting: $a"
			return 1
		fi
		k=${a%%=*}
		[[ " ${ORGW__CONF_KEYS[*]} " == *" $k "* ]] || ORGW__CONF_KEYS+=("$k")
		ORGW__CONF[$k]=${a#*=}
	done
}

orgw__conf_write() { # FILE
	local k
	{
		printf '# orgw.conf written by tests/lib.sh\n'
		for k in "${ORGW__CONF_KEYS[@]}"; do
			[[ -v "ORGW__CONF[$k]" ]] && printf '%s=%s\n' "$k" "${ORGW__CONF[$k]}"
		done
	} >"$1"
	chmod 600 "$1"
}

# orgw__workers_start SOCK CONF LOG: sets ORGW_SUPERVISOR_PID
orgw__workers_start() {
	local sock=$1 conf=$2 log=$3 bin mw i
	local -a envv=()
	bin=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	[ -x "$bin" ] || { orgw__log "no gateway binary at $bin (make all?)"; return 1; }
	mw=$(command -v multiwatch) || { orgw__log "multiwatch missing (make deps)"; return 1; }
	command -v spawn-fcgi >/dev/null || { orgw__log "spawn-fcgi missing (make deps)"; return 1; }
	# A clean environment: a real OPENROUTER_API_KEY or UPSTREAM_URL in the
	# caller's environment would win over the config file.
	envv=(PATH="$PATH" HOME="${HOME:-/}" LANG=C.UTF-8 ORGW_CONFIG="$conf")
	for i in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TZ; do
		[ -n "${!i:-}" ] && envv+=("$i=${!i}")
	done
	# shellcheck disable=SC2206 # ORGW_WORKER_ENV is a list of words
	[ -n "${ORGW_WORKER_ENV:-}" ] && envv+=($ORGW_WORKER_ENV)
	# spawn-fcgi creates and binds the socket, then (-n) execs multiwatch
	# with it as stdin; multiwatch forks the workers and restarts any that
	# die.  So $! is the supervisor; the workers are its children.
	# Success means the socket is there.  Workers that refuse to start (a
	# test of an invalid setting) are not an error here: multiwatch gives
	# up on them, lighttpd answers 503, and the test reads $ORGW_LOG.
	rm -f "$sock"
	env -i "${envv[@]}" spawn-fcgi -n -s "$sock" -M 0660 -- \
		"$mw" -f "${ORGW_WORKERS:-4}" -- "$bin" >>"$log" 2>&1 </dev/null &
	ORGW_SUPERVISOR_PID=$!
	for ((i = 0; i < 50; i++)); do
		[ -S "$sock" ] && return 0
		orgw__alive "$ORGW_SUPERVISOR_PID" || break
		sleep 0.05
	done
	orgw__log "spawn-fcgi did not create $sock"
	return 1
}

orgw__workers_stop() {
	[ -n "${ORGW_SUPERVISOR_PID:-}" ] || return 0
	local sup=$ORGW_SUPERVISOR_PID i p
	local -a kids
	# TERM only the supervisor: multiwatch passes it on to the workers and
	# exits when they have.  (Signalling the workers as well makes it
	# respawn them.)  Whatever is left after 2 s gets KILL.
	orgw__alive "$sup" && kill -TERM "$sup" 2>/dev/null
	for ((i = 0; i < 20; i++)); do
		orgw__alive "$sup" || break
		sleep 0.1
	done
	mapfile -t kids < <(orgw__children "$sup")
	if orgw__alive "$sup"; then
		kill -KILL "$sup" 2>/dev/null
	fi
	{ wait "$sup"; } 2>/dev/null
	for p in "${kids[@]}"; do
		orgw__alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	ORGW_SUPERVISOR_PID=
}

orgw_supervisor_pid() {
	[ -n "${ORGW_SUPERVISOR_PID:-}" ] && echo "$ORGW_SUPERVISOR_PID"
}

orgw_worker_pids() {
	[ -n "${ORGW_SUPERVISOR_PID:-}" ] && orgw__children "$ORGW_SUPERVISOR_PID"
}

orgw__sed_escape() { printf '%s' "$1" | sed -e 's/[\\|&]/\\&/g'; }

# orgw__lighttpd_start DIR PORT SOCK: sets ORGW_LIGHTTPD_PID
orgw__lighttpd_start() {
	local dir=$1 port=$2 sock=$3 i
	mkdir -p "$dir/www"
	sed -e "s|@PORT@|$port|g" \
		-e "s|@SOCKET@|$(orgw__sed_escape "$sock")|g" \
		-e "s|@DOCROOT@|$(orgw__sed_escape "$dir/www")|g" \
		-e "s|@ERRORLOG@|$(orgw__sed_escape "$dir/lighttpd.log")|g" \
		-e "s|@PIDFILE@|$(orgw__sed_escape "$dir/lighttpd.pid")|g" \
		"$ORGW_ROOT/deploy/lighttpd.conf" >"$dir/lighttpd.conf" || return 1
	lighttpd -D -f "$dir/lighttpd.conf" >>"$dir/lighttpd.out" 2>&1 </dev/null &
	ORGW_LIGHTTPD_PID=$!
	for ((i = 0; i < 100; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && orgw__alive "$ORGW_LIGHTTPD_PID" && return 0
		orgw__alive "$ORGW_LIGHTTPD_PID" || break
		sleep 0.1
	done
	orgw__log "lighttpd did not start on port $port"
	orgw__kill "$ORGW_LIGHTTPD_PID"
	ORGW_LIGHTTPD_PID=
	return 1
}

orgw__dump_logs() { # the tails of every log, as "#" lines
	local f
	[ -n "${ORGW_T:-}" ] && [ -d "$ORGW_T" ] || return 0
	for f in "$ORGW_T"/orgw.log "$ORGW_T"/lighttpd.log "$ORGW_T"/lighttpd.out "$ORGW_T"/double.log; do
		[ -s "$f" ] || continue
		printf '# --- %s (last 40 lines)\n' "${f##*/}"
		tail -n 40 "$f" | sed -e 's/^/#   /'
	done
}

orgw__start_failed() { # the EXIT trap prints the logs and stops the rest
	t_fail "orgw_start: $1"
	exit 1
}

orgw_start() {
	[ -n "${ORGW_T:-}" ] && orgw_stop
	ORGW_T=$(mktemp -d "${TMPDIR:-/tmp}/orgw-test.XXXXXX") ||
		orgw__start_failed "mktemp"
	export ORGW_T
	trap orgw__on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	export ORGW_LOG=$ORGW_T/orgw.log
	export ORGW_LIGHTTPD_LOG=$ORGW_T/lighttpd.log
	export ORGW_DOUBLE_LOG=$ORGW_T/double.log
	export ORGW_CONFIG_FILE=$ORGW_T/orgw.conf
	export ORGW_STATE=$ORGW_T/state.gdbm
	: >"$ORGW_LOG"

	orgw__double_start "$ORGW_T" "$UPSTREAM_KEY" ||
		orgw__start_failed "the upstream double did not start"
	export DOUBLE_URL=http://127.0.0.1:$ORGW_DOUBLE_PORT

	ORGW__CONF_KEYS=()
	ORGW__CONF=()
	orgw__conf_set OPENROUTER_API_KEY="$UPSTREAM_KEY" \
		CUSTOM_ACCESS_KEY="$ORGW_KEY" \
		UPSTREAM_URL="$DOUBLE_URL/api/v1" \
		STATE_PATH="$ORGW_STATE" || orgw__start_failed "settings"
	orgw__conf_set "$@" || orgw__start_failed "bad argument"
	orgw__conf_write "$ORGW_CONFIG_FILE"

	orgw__workers_start "$ORGW_T/orgw.sock" "$ORGW_CONFIG_FILE" "$ORGW_LOG" ||
		orgw__start_failed "the FastCGI workers did not start"

	local port
	for _ in 1 2 3; do
		port=$(orgw__free_port) || orgw__start_failed "no free port"
		orgw__lighttpd_start "$ORGW_T" "$port" "$ORGW_T/orgw.sock" && break
		port=
	done
	[ -n "$port" ] || orgw__start_failed "lighttpd did not start"
	export ORGW_URL=http://127.0.0.1:$port
	orgw__wait_http "$ORGW_URL/healthz" 10 ||
		orgw__start_failed "no answer from $ORGW_URL/healthz within 10 s"
}

orgw_restart_workers() {
	[ -n "${ORGW_T:-}" ] || { t_fail "orgw_restart_workers: not started"; return 1; }
	orgw__conf_set "$@" || { t_fail "orgw_restart_workers: bad argument"; return 1; }
	orgw__conf_write "$ORGW_CONFIG_FILE"
	orgw__workers_stop
	orgw__workers_start "$ORGW_T/orgw.sock" "$ORGW_CONFIG_FILE" "$ORGW_LOG" ||
		orgw__start_failed "the FastCGI workers did not restart"
	orgw__wait_http "$ORGW_URL/healthz" 10 ||
		orgw__start_failed "no answer from $ORGW_URL/healthz after the restart"
}

orgw_stop() {
	[ -n "${ORGW_LIGHTTPD_PID:-}" ] && orgw__kill "$ORGW_LIGHTTPD_PID"
	orgw__workers_stop
	[ -n "${ORGW_DOUBLE_PID:-}" ] && orgw__kill "$ORGW_DOUBLE_PID"
	ORGW_SUPERVISOR_PID='' ORGW_LIGHTTPD_PID='' ORGW_DOUBLE_PID=
	if [ -n "${ORGW_T:-}" ] && [ -d "$ORGW_T" ]; then
		if [ "${ORGW_KEEP:-0}" = 1 ]; then
			printf '# kept %s\n' "$ORGW_T"
		else
			rm -rf "$ORGW_T"
		fi
	fi
	ORGW_T=
}

orgw__on_exit() {
	local rc=$?
	trap - EXIT
	[ "$T_FAILED" -gt 0 ] && orgw__dump_logs
	orgw_stop
	[ $rc -eq 0 ] && [ "$T_FAILED" -gt 0 ] && rc=1
	exit $rc
}

# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------

orgw_curl() {
	local path=$1
	shift
	curl -sS --max-time "${ORGW_CURL_MAX_TIME:-120}" \
		-H "Authorization: Bearer $ORGW_KEY" "$@" "$ORGW_URL$path"
}

orgw_http() {
	local method=$1 path=$2 body=${3-}
	local key=${HTTP_KEY-$ORGW_KEY}
	local -a args=(-sS -X "$method" --max-time "${ORGW_CURL_MAX_TIME:-120}"
		-o "$ORGW_T/http.body" -D "$ORGW_T/http.headers" -w '%{http_code}')
	shift 2
	[ $# -gt 0 ] && shift
	[ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	HTTP_BODY_FILE=$ORGW_T/http.body
	HTTP_HEADERS_FILE=$ORGW_T/http.headers
	: >"$HTTP_BODY_FILE"
	: >"$HTTP_HEADERS_FILE"
	HTTP_STATUS=$(curl "${args[@]}" "$@" "$ORGW_URL$path")
	HTTP_BODY=$(<"$HTTP_BODY_FILE")
	[ "$HTTP_STATUS" != 000 ]
}

http_header() {
	local name=$1 line
	name=${name,,}
	# With -D and a 1xx/redirect there can be several blocks: take the last.
	tr -d '\r' <"$HTTP_HEADERS_FILE" | while IFS= read -r line; do
		if [[ ${line,,} == "$name:"* ]]; then
			line=${line#*:}
			printf '%s\n' "${line#"${line%%[![:space:]]*}"}"
		fi
	done | tail -n 1
}

double_ctl() {
	local method=$1 path=$2 body=${3-}
	[[ $path == /* ]] || path=/__double/$path
	local -a args=(-sS --fail-with-body -X "$method" --max-time "${ORGW_CURL_MAX_TIME:-120}")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	curl "${args[@]}" "$DOUBLE_URL$path"
}

orgw_chat() {
	node "$ORGW_ROOT/tests/js/chat.mjs" --base "$ORGW_URL/v1" --key "$ORGW_KEY" "$@"
}
