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
#       with only ORGW_CONFIG (plus PATH, HOME, LANG, the GLIBC_TUNABLES of
#       deploy/orgw.service, sanitizer options and $ORGW_WORKER_ENV) in the
#       workers' environment, their stderr in
#       $ORGW_LOG; lighttpd on a free loopback port with deploy/lighttpd.conf.
#       Returns when GET /healthz gets any HTTP answer (10 s at most), so
#       workers that refuse their config still "start" (healthz is then 503
#       from lighttpd; read $ORGW_LOG).  When the stack itself cannot start,
#       prints "not ok - orgw_start: ..." with the logs and exits 1.
#       Installs orgw_stop as the EXIT trap.
#     exports ORGW_URL (http://127.0.0.1:PORT), ORGW_KEY, DOUBLE_URL,
#       UPSTREAM_KEY, ORGW_T, ORGW_LOG (worker stderr), ORGW_LIGHTTPD_LOG,
#       ORGW_DOUBLE_LOG, ORGW_CONFIG_FILE, ORGW_STATE (the GDBM file)
#   double_start
#       only the first part of orgw_start: the temp dir $ORGW_T and the double
#       (key $UPSTREAM_KEY), for tests of the double itself; exports ORGW_T,
#       DOUBLE_URL, UPSTREAM_KEY, ORGW_DOUBLE_LOG.  Installs orgw_stop as the
#       EXIT trap, as orgw_start does.
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
#   double_seq             the seq of the last request the double logged (0: none)
#   double_wait_request SEQ PATH
#       until the double has logged a request after SEQ whose path contains
#       PATH (10 s at most; status 1 when none came): a request is in flight
#       in a worker, however long its client took to start.
#   double_wait_active N   until the double is answering N requests at once
#       (5 s at most; status 1 when it is not)
#   orgw_chat [chat.mjs ARGS...]
#       node tests/js/chat.mjs --base $ORGW_URL/v1 --key $ORGW_KEY ARGS: one
#       chat completion through the official OpenAI SDK, one JSON line out.
#   json_get SRC EXPR      SRC is JSON text, a file name, or "-" (stdin); EXPR a
#       JavaScript expression over `j`, e.g. 'j.error?.code'.  Prints strings
#       raw and anything else as JSON; status 1 when EXPR is undefined, 2 when
#       SRC is not JSON.  (jq is installed too, but this needs no quoting
#       gymnastics for keys like "deepinfra/fp8".)
#   json_ok SRC EXPR       status 0 when EXPR is truthy
#   key_leaks KEY FILE...  how many of the FILEs (each one answer: headers and
#       body) show KEY as a client reads it: in its bytes, in any JSON string
#       (each SSE data line, or the body from its first '{'), decoded, or in
#       the API's text deltas joined (chat delta.content, Messages delta.text,
#       Responses output_text deltas)
#
# Knobs (environment):
#   ORGW_FCGI_BIN   the gateway binary (default cgi-bin/orgw.fcgi; e.g.
#                   build/asan/orgw.fcgi; a test that moves the clock runs
#                   its test build, orgw_test_clock)
#   ORGW_WORKERS    FastCGI worker processes (default 4)
#   ORGW_WORKER_ENV extra NAME=VALUE words for the workers' environment (the
#                   environment wins over the config file)
#   ORGW_DOUBLE_JS  the upstream double (default tests/double/openrouter-double.js)
#   ORGW_KEEP=1     keep $ORGW_T (logs, state, configs) after the test
#   ORGW_CURL_MAX_TIME  seconds for one orgw_curl/orgw_http/double_ctl (default 120)
#   ORGW_PORT_RANGE LO-HI: the ports orgw__free_port draws from (tests/run.sh
#                   sets one per lane; default: any port the kernel picks)

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

key_leaks() {
	node -e '
const fs = require("fs"), [key, ...files] = process.argv.slice(1);
const leaks = (t) => {
	const docs = [];
	for (const l of t.split("\n")) if (l.startsWith("data: ")) try { docs.push(JSON.parse(l.slice(6))); } catch (_) {}
	const i = t.indexOf("{");
	if (i >= 0) try { docs.push(JSON.parse(t.slice(i))); } catch (_) {}
	const strs = [];
	const walk = (v) => { if (typeof v === "string") strs.push(v); else if (v && typeof v === "object") Object.values(v).forEach(walk); };
	docs.forEach(walk);
	const text = docs.map((d) => d.choices?.[0]?.delta?.content ?? d.delta?.text ??
		(d.type === "response.output_text.delta" ? d.delta : "") ?? "").join("");
	return t.includes(key) || strs.some((s) => s.includes(key)) || text.includes(key);
};
console.log(files.filter((f) => leaks(fs.readFileSync(f, "utf8"))).length);' "$@"
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

# orgw__free_port: a port free on 127.0.0.1 right now.  With
# ORGW_PORT_RANGE=LO-HI (tests/run.sh gives each lane its own, below the
# ephemeral ports) one drawn from that range, else one the kernel picks.
orgw__free_port() {
	node -e 'const net = require("net");
const m = /^([0-9]+)-([0-9]+)$/.exec(process.argv[1] || "");
const lo = m ? Number(m[1]) : 0, hi = m ? Number(m[2]) : 0;
let tries = 0;
const attempt = () => {
  const s = net.createServer();
  s.once("error", () => { if (++tries < 200) attempt(); else process.exit(1); });
  s.listen(lo ? lo + Math.floor(Math.random() * (hi - lo + 1)) : 0, "127.0.0.1",
    () => { process.stdout.write(String(s.address().port)); s.close(); });
};
attempt();' "${ORGW_PORT_RANGE:-}"
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

# agents_required: the pinned coding agents are installed in tests/agents
# (deploy/install-deps.sh with ORGW_DEPS_TEST=1), else the test fails
# and exits.
agents_required() {
	local p
	for p in @anthropic-ai/claude-code @openai/codex opencode-ai; do
		if [ ! -f "$ORGW_ROOT/tests/agents/node_modules/$p/package.json" ]; then
			t_fail "the agents are installed in tests/agents ($p missing: ORGW_DEPS_TEST=1 sh deploy/install-deps.sh)"
			exit 1
		fi
	done
}

# orgw_test_clock: for a test that moves the clock with ORGW_TEST_NOW.
# The shipped binaries have no test clock; their test builds (make unit:
# build/release/orgw.fcgi-test and orgw-score-test) do.  Points
# ORGW_FCGI_BIN and ORGW_SCORE_BIN at those: at BIN-test beside a BIN
# given, else at build/release's.  Call before anything reads them.
orgw_test_clock() {
	local pair var b
	for pair in ORGW_FCGI_BIN:orgw.fcgi ORGW_SCORE_BIN:orgw-score; do
		var=${pair%%:*}
		b=${!var:-}
		if [ -n "$b" ]; then
			b=$b-test
		else
			b=build/release/${pair#*:}-test
		fi
		[[ $b == /* ]] || b=$ORGW_ROOT/$b
		if [ ! -x "$b" ]; then
			t_fail "orgw_test_clock: no test build at $b (make unit)"
			exit 1
		fi
		export "$var=$b"
	done
}

# orgw_unit_tunables: the GLIBC_TUNABLES that deploy/orgw.service gives
# the workers (every way the tests and bench/ start workers uses it).
orgw_unit_tunables() {
	local v
	v=$(sed -n 's/^Environment=GLIBC_TUNABLES=//p' "$ORGW_ROOT/deploy/orgw.service")
	[ -n "$v" ] || { orgw__log "no GLIBC_TUNABLES in deploy/orgw.service"; return 1; }
	printf '%s\n' "$v"
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
	# The workers' environment as the shipped unit sets it (ORGW_WORKER_ENV,
	# added after it, wins).
	i=$(orgw_unit_tunables) || return 1
	envv+=("GLIBC_TUNABLES=$i")
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

# ---------------------------------------------------------------------------
# Redis.  ORGW_STATE_BACKEND=redis in the environment makes
# orgw_start run the gateway with STATE_BACKEND=redis on a private
# redis-server (loopback, a free port, no persistence, its files in
# $ORGW_T/redis); tests/run.sh runs the state tests once more that way.
# ---------------------------------------------------------------------------

# orgw_redis_start DIR [PORT]: sets ORGW_REDIS_PID, ORGW_REDIS_PORT,
# ORGW_REDIS_URL.  PORT: restart on the port of an earlier one.
# ORGW_REDIS_ARGS: more redis-server options (e.g. --requirepass X).
orgw_redis_start() {
	local dir=$1 port=${2:-} i
	command -v redis-server >/dev/null || { orgw__log "redis-server missing (make deps)"; return 1; }
	mkdir -p "$dir"
	[ -n "$port" ] || port=$(orgw__free_port) || return 1
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$dir" --logfile "$dir/redis.log" --daemonize no \
		${ORGW_REDIS_ARGS:-} </dev/null >/dev/null 2>&1 &
	ORGW_REDIS_PID=$!
	ORGW_REDIS_PORT=$port
	ORGW_REDIS_URL=redis://127.0.0.1:$port/0
	export ORGW_REDIS_PORT ORGW_REDIS_URL
	for ((i = 0; i < 100; i++)); do
		case $(redis-cli -p "$port" ping 2>&1) in
		PONG | NOAUTH*) return 0 ;;
		esac
		orgw__alive "$ORGW_REDIS_PID" || break
		sleep 0.05
	done
	orgw__log "redis-server did not start on port $port"
	return 1
}

orgw_redis_stop() {
	[ -n "${ORGW_REDIS_PID:-}" ] && orgw__kill "$ORGW_REDIS_PID"
	ORGW_REDIS_PID=
}

orgw_redis_cli() { redis-cli -p "$ORGW_REDIS_PORT" "$@"; }

# orgw_state_dump: the whole state as JSON lines (orgw-score --dump), on
# either back-end.
# orgw_state_copies MODEL N PREFIX: N copies of every key of MODEL, as the
# models PREFIX1 .. PREFIXN, loaded in one transaction (orgw-score
# --load): a state with many models without N scorings.
orgw_state_copies() {
	local m=$1 n=$2 pre=$3 i
	local bin=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" --dump >"$ORGW_T/one.jsonl" 2>/dev/null
	for i in $(seq 1 "$n"); do
		sed "s#$m\"#$pre$i\"#g; s#$m:#$pre$i:#g" "$ORGW_T/one.jsonl"
	done >"$ORGW_T/many.jsonl"
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" --load <"$ORGW_T/many.jsonl" >/dev/null 2>&1
}

orgw_state_dump() {
	local bin=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" --dump 2>/dev/null
}

# orgw_start_host2: a second gateway host on the same state: its own
# workers (spawn-fcgi + multiwatch on $ORGW_T/orgw2.sock, log
# $ORGW_T/orgw2.log) and its own lighttpd; sets ORGW2_URL.  Stopped by
# orgw_stop.
orgw_start_host2() {
	local sup=${ORGW_SUPERVISOR_PID:-} lt=${ORGW_LIGHTTPD_PID:-} port
	: >"$ORGW_T/orgw2.log"
	orgw__workers_start "$ORGW_T/orgw2.sock" "$ORGW_CONFIG_FILE" "$ORGW_T/orgw2.log" ||
		orgw__start_failed "host 2: the FastCGI workers did not start"
	ORGW2_SUPERVISOR_PID=$ORGW_SUPERVISOR_PID
	ORGW_SUPERVISOR_PID=$sup
	for _ in 1 2 3; do
		port=$(orgw__free_port) || orgw__start_failed "no free port"
		orgw__lighttpd_start "$ORGW_T/host2" "$port" "$ORGW_T/orgw2.sock" && break
		port=
	done
	ORGW2_LIGHTTPD_PID=${ORGW_LIGHTTPD_PID:-}
	ORGW_LIGHTTPD_PID=$lt
	[ -n "$port" ] || orgw__start_failed "host 2: lighttpd did not start"
	export ORGW2_URL=http://127.0.0.1:$port
	orgw__wait_http "$ORGW2_URL/healthz" 10 ||
		orgw__start_failed "host 2: no answer from $ORGW2_URL/healthz within 10 s"
}

orgw__dump_logs() { # the tails of every log, as "#" lines
	local f
	[ -n "${ORGW_T:-}" ] && [ -d "$ORGW_T" ] || return 0
	for f in "$ORGW_T"/orgw.log "$ORGW_T"/lighttpd.log "$ORGW_T"/lighttpd.out "$ORGW_T"/double.log \
		"$ORGW_T"/orgw2.log "$ORGW_T"/redis/redis.log; do
		[ -s "$f" ] || continue
		printf '# --- %s (last 40 lines)\n' "${f##*/}"
		tail -n 40 "$f" | sed -e 's/^/#   /'
	done
}

orgw__start_failed() { # the EXIT trap prints the logs and stops the rest
	t_fail "orgw_start: $1"
	exit 1
}

double_start() {
	[ -n "${ORGW_T:-}" ] && orgw_stop
	ORGW_T=$(mktemp -d "${TMPDIR:-/tmp}/orgw-test.XXXXXX") ||
		orgw__start_failed "mktemp"
	export ORGW_T
	trap orgw__on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	export ORGW_DOUBLE_LOG=$ORGW_T/double.log
	orgw__double_start "$ORGW_T" "$UPSTREAM_KEY" ||
		orgw__start_failed "the upstream double did not start"
	export DOUBLE_URL=http://127.0.0.1:$ORGW_DOUBLE_PORT
}

orgw_start() {
	double_start
	export ORGW_LOG=$ORGW_T/orgw.log
	export ORGW_LIGHTTPD_LOG=$ORGW_T/lighttpd.log
	export ORGW_CONFIG_FILE=$ORGW_T/orgw.conf
	export ORGW_STATE=$ORGW_T/state.gdbm
	: >"$ORGW_LOG"

	ORGW__CONF_KEYS=()
	ORGW__CONF=()
	orgw__conf_set OPENROUTER_API_KEY="$UPSTREAM_KEY" \
		CUSTOM_ACCESS_KEY="$ORGW_KEY" \
		UPSTREAM_URL="$DOUBLE_URL/api/v1" \
		STATE_PATH="$ORGW_STATE" || orgw__start_failed "settings"
	if [ "${ORGW_STATE_BACKEND:-gdbm}" = redis ]; then
		orgw_redis_start "$ORGW_T/redis" ||
			orgw__start_failed "redis-server did not start"
		orgw__conf_set STATE_BACKEND=redis REDIS_URL="$ORGW_REDIS_URL"
	fi
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
	[ -n "${ORGW2_LIGHTTPD_PID:-}" ] && orgw__kill "$ORGW2_LIGHTTPD_PID"
	if [ -n "${ORGW2_SUPERVISOR_PID:-}" ]; then
		local sup1=${ORGW_SUPERVISOR_PID:-}
		ORGW_SUPERVISOR_PID=$ORGW2_SUPERVISOR_PID
		orgw__workers_stop
		ORGW_SUPERVISOR_PID=$sup1
	fi
	ORGW2_LIGHTTPD_PID='' ORGW2_SUPERVISOR_PID=
	orgw__workers_stop
	orgw_redis_stop
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

# orgw_stats_settle MODEL N [SECONDS]: waits (10 s at most) until /stats
# counts N requests of MODEL.  A worker counts a request after its client
# has the whole answer (chat.c bookkeep), so right after many concurrent
# requests the last counts may still be on their way; on Redis, under
# contention, for a while.  Asserts nothing: the checks after it do.
orgw_stats_settle() {
	local model=$1 want=$2 until=$(($(date +%s) + ${3:-10})) got
	while :; do
		got=$(json_get "$(ORGW_CURL_MAX_TIME=5 orgw_curl /stats)" \
			"(j.models['$model'] || {}).requests || 0" 2>/dev/null)
		[ "${got:-0}" -ge "$want" ] && return 0
		[ "$(date +%s)" -ge "$until" ] && return 0
		sleep 0.2
	done
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

double_seq() {
	double_ctl GET 'log?limit=1' | json_get - 'j.requests.at(-1)?.seq ?? 0'
}

double_wait_request() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(double_ctl GET "log?since=$1" | json_get - \
			"j.requests.filter((r) => r.path.includes('$2')).length")" -gt 0 ] && return 0
		sleep 0.1
	done
	return 1
}

double_wait_active() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(double_ctl GET active | json_get - 'j.active.length')" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

orgw_chat() {
	node "$ORGW_ROOT/tests/js/chat.mjs" --base "$ORGW_URL/v1" --key "$ORGW_KEY" "$@"
}

# ---------------------------------------------------------------------------
# Deployment servers (deploy/; tests/integration/t05*)
# ---------------------------------------------------------------------------
# Each web server runs in the foreground as a child of the test, with its
# config, pid file and logs in $ORGW_T/SERVER/, on a free loopback port; the
# system's own services are never touched.  Called after orgw_start (the
# double, spawn-fcgi workers on $ORGW_T/orgw.sock, lighttpd).
#
#   deploy_fill SRC DST NAME=VALUE...
#       copies SRC to DST with every @NAME@ replaced by VALUE; fails, naming
#       them, when placeholders are left over.  The only change the tests
#       make to a shipped deploy/ file.
#   deploy_start SERVER...
#       SERVER: lighttpd (the one orgw_start runs), caddy, nginx (both talk
#       to the spawn-fcgi workers), apache-fcgid (mod_fcgid starts its own
#       workers), apache-cgi (event MPM + mod_cgid) and apache-cgi-prefork
#       (prefork MPM + mod_cgi), which run orgw.fcgi per request from a
#       shared-hosting style public_html/cgi-bin/ with deploy/htaccess
#       (AllowOverride All).
#       The shipped file is used as is, filled in by deploy_fill; what a
#       distribution supplies around it (modules, pid file, logs; for nginx
#       and Apache a copy of Debian's defaults that matter) comes from a
#       minimal main config written here.  Apache's workers read a copy of
#       the config file whose STATE_PATH is under $ORGW_T/SERVER/private/.
#       As root, nginx and Apache run their workers as www-data, like
#       Debian's packages (the socket gets group www-data, as the unit
#       deploy/orgw.service gives it).  Returns when GET /healthz answers
#       200 through the server; otherwise t_fail with its logs, and exit.
#       Sets DEPLOY_URL[SERVER]: the client base URL without /v1.
#   deploy_stop_all   stops them all (also done on EXIT)
#   deploy_logs SERVER   the tails of that server's logs, as "#" lines
#   deploy_sdk BASE MODE [ARG]
#       the official openai client (tests/js) on BASE/v1 in one node
#       process, one JSON line out:
#         big BYTES  one chat completion whose user message is BYTES long:
#                    {ok, status, code, content}
#         rtt N      one warm-up, then N non-streamed chat completions one
#                    after the other: {ok, ms: [...], median}
#   deploy_chat SERVER [chat.mjs ARGS...]   orgw_chat through that server
#   deploy_gaps JSON   the gaps between a chat.mjs result's events after the
#                      second, in ms
#   deploy_checks SERVER   the checks every set-up must pass (see below)

declare -gA DEPLOY_URL=()
declare -gA DEPLOY_PID=()
declare -gA DEPLOY_LOGS=()
DEPLOY_MODEL=deepseek/deepseek-v3.2
DEPLOY_APACHE_MODULES=/usr/lib/apache2/modules

deploy_fill() {
	local src=$1 dst=$2 a left
	local -a sedv=()
	shift 2
	for a in "$@"; do
		sedv+=(-e "s|@${a%%=*}@|$(orgw__sed_escape "${a#*=}")|g")
	done
	sed "${sedv[@]}" "$src" >"$dst" || return 1
	left=$(grep -o '@[A-Z_][A-Z_]*@' "$dst" | sort -u | tr '\n' ' ')
	if [ -n "$left" ]; then
		orgw__log "deploy_fill: $src: placeholders left: $left"
		return 1
	fi
}

deploy__is_root() { [ "$(id -u)" = 0 ]; }

# Every descendant of PID, each before its own children.
deploy__descendants() {
	local c
	for c in $(orgw__children "$1"); do
		echo "$c"
		deploy__descendants "$c"
	done
}

# TERM PID; after 5 s KILL it and whatever it had started.
deploy__kill_tree() {
	local pid=$1 i p left
	local -a tree
	orgw__alive "$pid" || { { wait "$pid"; } 2>/dev/null; return 0; }
	mapfile -t tree < <(deploy__descendants "$pid")
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		orgw__alive "$pid" || break
		sleep 0.1
	done
	orgw__alive "$pid" && kill -KILL "$pid" 2>/dev/null
	{ wait "$pid"; } 2>/dev/null
	for ((i = 0; i < 20; i++)); do
		left=
		for p in "${tree[@]}"; do
			orgw__alive "$p" && left=1
		done
		[ -z "$left" ] && break
		sleep 0.1
	done
	for p in "${tree[@]}"; do
		orgw__alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	return 0
}

deploy_stop_all() {
	local s
	for s in "${!DEPLOY_PID[@]}"; do
		[ -n "${DEPLOY_PID[$s]}" ] && deploy__kill_tree "${DEPLOY_PID[$s]}"
		unset "DEPLOY_PID[$s]"
	done
}

deploy__on_exit() {
	local rc=$? s
	if [ "$T_FAILED" -gt 0 ]; then
		for s in "${!DEPLOY_LOGS[@]}"; do
			deploy_logs "$s"
		done
	fi
	deploy_stop_all
	# orgw_start's own handler: dumps its logs on failure, stops the rest.
	(exit $rc)
	orgw__on_exit
}

deploy_logs() {
	local f
	for f in ${DEPLOY_LOGS[$1]:-}; do
		[ -s "$f" ] || continue
		printf '# --- %s: %s (last 30 lines)\n' "$1" "${f#"$ORGW_T"/}"
		tail -n 30 "$f" | sed -e 's/^/#   /'
	done
}

# The Apache workers' config: the test's, with a state file of their own
# (they run as www-data when the test is root).
deploy__apache_private() {
	local dir=$1
	mkdir -p "$dir/private/state" || return 1
	sed -e "s|^STATE_PATH=.*|STATE_PATH=$(orgw__sed_escape "$dir/private/state/state.gdbm")|" \
		"$ORGW_CONFIG_FILE" >"$dir/private/orgw.conf" || return 1
	chmod 600 "$dir/private/orgw.conf"
}

# The server-wide part of Debian's /etc/apache2/apache2.conf (and of the
# modules it enables by default), every path in DIR.  KIND: fcgid or cgi.
deploy__apache_main() {
	local dir=$1 kind=$2 m
	local mods="authz_core authz_host alias env setenvif reqtimeout mime deflate filter"
	case $kind in
	fcgid) mods="mpm_event $mods fcgid" ;;
	cgi) mods="mpm_event $mods cgid rewrite" ;;
	cgi-prefork) mods="mpm_prefork $mods cgi rewrite" ;;
	esac
	{
		printf '# apache2.conf written by tests/lib.sh: what Debian'\''s apache2.conf\n'
		printf '# supplies around a site, with every path in this directory.\n'
		printf 'ServerRoot "%s"\n' "$dir"
		printf 'ServerName 127.0.0.1\n'
		printf 'DefaultRuntimeDir "%s/run"\n' "$dir"
		printf 'PidFile "%s/apache2.pid"\n' "$dir"
		printf 'Mutex file:%s/run default\n' "$dir"
		printf 'ErrorLog "%s/error.log"\n' "$dir"
		printf 'LogLevel warn\n'
		if deploy__is_root; then
			printf 'User www-data\nGroup www-data\n'
		fi
		for m in $mods; do
			printf 'LoadModule %s_module %s/mod_%s.so\n' "$m" "$DEPLOY_APACHE_MODULES" "$m"
		done
		printf 'TypesConfig /etc/mime.types\n'
		# Debian's mods-available/deflate.conf and reqtimeout.conf ...
		printf 'AddOutputFilterByType DEFLATE text/html text/plain text/xml text/css text/javascript\n'
		printf 'AddOutputFilterByType DEFLATE application/x-javascript application/javascript application/ecmascript\n'
		printf 'AddOutputFilterByType DEFLATE application/rss+xml application/wasm application/xml\n'
		printf 'RequestReadTimeout header=20-40,minrate=500\nRequestReadTimeout body=10,minrate=500\n'
		# ... and what a host that compresses JSON adds: the shipped
		# files must keep it off orgw's answers (event streams would
		# be held back).
		printf 'AddOutputFilterByType DEFLATE application/json text/event-stream\n'
		# Debian's apache2.conf
		printf 'Timeout 300\nKeepAlive On\nMaxKeepAliveRequests 100\nKeepAliveTimeout 5\n'
		printf 'HostnameLookups Off\nAccessFileName .htaccess\n'
		printf '<Directory />\n\tOptions FollowSymLinks\n\tAllowOverride None\n\tRequire all denied\n</Directory>\n'
		printf '<FilesMatch "^\\.ht">\n\tRequire all denied\n</FilesMatch>\n'
		case $kind in
		fcgid)
			# Debian's mods-available/fcgid.conf, and the paths
			# Debian keeps under /var/lib/apache2/fcgid.
			printf 'FcgidConnectTimeout 20\nAddHandler fcgid-script .fcgi\n'
			printf 'FcgidIPCDir "%s/run/fcgid"\n' "$dir"
			printf 'FcgidProcessTableFile "%s/run/fcgid-shm"\n' "$dir"
			printf 'Include "%s/site.conf"\n' "$dir"
			;;
		cgi | cgi-prefork)
			[ "$kind" = cgi ] && printf 'ScriptSock "%s/run/cgisock"\n' "$dir"
			# A shared host's account: its web root, and what
			# hosts typically let .htaccess files do.
			printf 'Listen 127.0.0.1:%s\n' "$3"
			printf 'DocumentRoot "%s/public_html"\n' "$dir"
			printf '<Directory "%s/public_html">\n' "$dir"
			printf '\tOptions SymLinksIfOwnerMatch\n\tAllowOverride All\n\tRequire all granted\n</Directory>\n'
			;;
		esac
	} >"$dir/apache2.conf"
}

# deploy__start_one SERVER PORT: writes the configs, starts the server.
deploy__start_one() {
	local s=$1 port=$2 dir=$ORGW_T/$1 bin sock=$ORGW_T/orgw.sock m
	bin=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	rm -rf "$dir"
	mkdir -p "$dir/run" || return 1
	case $s in
	caddy)
		mkdir -p "$dir/home" "$dir/data" "$dir/config"
		deploy_fill "$ORGW_ROOT/deploy/Caddyfile" "$dir/site.caddy" \
			PORT="$port" SOCKET="$sock" || return 1
		# A global option a packaged Caddy does not need, added to the
		# shipped file's global block (which must open the file): no
		# admin endpoint (port 2019 is shared by everything on the
		# machine).
		sed '0,/^{$/s//{\n\tadmin off/' "$dir/site.caddy" >"$dir/Caddyfile"
		grep -q '^	admin off$' "$dir/Caddyfile" || return 1
		DEPLOY_LOGS[$s]="$dir/caddy.log"
		HOME=$dir/home XDG_DATA_HOME=$dir/data XDG_CONFIG_HOME=$dir/config \
			caddy run --config "$dir/Caddyfile" --adapter caddyfile \
			>"$dir/caddy.log" 2>&1 </dev/null &
		;;
	nginx)
		mkdir -p "$dir/tmp"
		deploy_fill "$ORGW_ROOT/deploy/nginx.conf" "$dir/site.conf" \
			PORT="$port" SOCKET="$sock" || return 1
		# The shipped file's `include fastcgi_params` is relative to
		# the main config's directory, as /etc/nginx is on Debian.
		cp /etc/nginx/fastcgi_params "$dir/fastcgi_params" || return 1
		{
			printf '# nginx.conf written by tests/lib.sh: Debian'\''s /etc/nginx/nginx.conf\n'
			printf '# around the site, with every path in this directory.\n'
			deploy__is_root && printf 'user www-data www-data;\n'
			printf 'worker_processes 2;\npid %s/nginx.pid;\n' "$dir"
			printf 'error_log %s/error.log info;\n' "$dir"
			printf 'events {\n\tworker_connections 768;\n}\n'
			printf 'http {\n\tsendfile on;\n\ttcp_nopush on;\n\ttypes_hash_max_size 2048;\n'
			printf '\tinclude /etc/nginx/mime.types;\n\tdefault_type application/octet-stream;\n'
			printf '\taccess_log %s/access.log;\n\tgzip on;\n' "$dir"
			for m in client_body fastcgi proxy scgi uwsgi; do
				printf '\t%s_temp_path %s/tmp/%s;\n' "$m" "$dir" "$m"
			done
			printf '\tinclude %s/site.conf;\n}\n' "$dir"
		} >"$dir/nginx.conf"
		if deploy__is_root; then
			# The unit's Group=www-data, in the test's terms.
			chgrp www-data "$sock" && chmod 0711 "$ORGW_T" || return 1
		fi
		DEPLOY_LOGS[$s]="$dir/error.log $dir/nginx.out"
		nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' \
			>"$dir/nginx.out" 2>&1 </dev/null &
		;;
	apache-fcgid | apache-cgi | apache-cgi-prefork)
		deploy__apache_private "$dir" || return 1
		if [ "$s" = apache-fcgid ]; then
			# `make install` puts orgw.fcgi in a cgi-bin directory.
			mkdir -p "$dir/cgi-bin" && cp "$bin" "$dir/cgi-bin/orgw.fcgi" || return 1
			deploy_fill "$ORGW_ROOT/deploy/apache-fcgid.conf" "$dir/site.conf" \
				PORT="$port" CGIDIR="$dir/cgi-bin" \
				CONFIG="$dir/private/orgw.conf" || return 1
			deploy__apache_main "$dir" fcgid || return 1
		else
			# The upload: the binary into the account's cgi-bin,
			# deploy/htaccess beside it, the config outside the
			# web root.
			mkdir -p "$dir/public_html/cgi-bin" &&
				cp "$bin" "$dir/public_html/cgi-bin/orgw.fcgi" || return 1
			deploy_fill "$ORGW_ROOT/deploy/htaccess" \
				"$dir/public_html/cgi-bin/.htaccess" \
				CONFIG="$dir/private/orgw.conf" || return 1
			deploy__apache_main "$dir" "${s#apache-}" "$port" || return 1
		fi
		if deploy__is_root; then
			chmod 0711 "$ORGW_T" && chown -R www-data:www-data "$dir" || return 1
			chown root:root "$dir/apache2.conf"
		fi
		DEPLOY_LOGS[$s]="$dir/error.log $dir/apache2.out"
		# A process group of its own: on stop, prefork's parent sends
		# SIGTERM to its whole group (it expects to lead one, as a
		# daemon), which would include this test.  deploy_stop_all
		# (the EXIT trap) stops it and everything it started.
		setsid env -i PATH="$PATH" LANG=C APACHE_RUN_DIR="$dir/run" \
			/usr/sbin/apache2 -f "$dir/apache2.conf" -DFOREGROUND \
			>"$dir/apache2.out" 2>&1 </dev/null &
		;;
	*)
		orgw__log "deploy_start: unknown server $s"
		return 1
		;;
	esac
	DEPLOY_PID[$s]=$!
	case $s in
	apache-cgi*) DEPLOY_URL[$s]=http://127.0.0.1:$port/cgi-bin/orgw.fcgi ;;
	*) DEPLOY_URL[$s]=http://127.0.0.1:$port ;;
	esac
}

deploy__wait_ready() { # SERVER PORT
	local s=$1 port=$2 i code
	for ((i = 0; i < 150; i++)); do
		orgw__alive "${DEPLOY_PID[$s]}" || return 1
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
				"${DEPLOY_URL[$s]}/healthz" 2>/dev/null)
			[ "$code" = 200 ] && return 0
		fi
		sleep 0.1
	done
	return 1
}

deploy_start() {
	local s try port
	[ -n "${ORGW_T:-}" ] || { t_fail "deploy_start: orgw_start first"; exit 1; }
	trap deploy__on_exit EXIT
	for s in "$@"; do
		if [ "$s" = lighttpd ]; then
			DEPLOY_URL[$s]=$ORGW_URL
			DEPLOY_LOGS[$s]="$ORGW_T/lighttpd.log $ORGW_T/lighttpd.out"
			continue
		fi
		for try in 1 2 3; do
			port=$(orgw__free_port) || break
			if deploy__start_one "$s" "$port" && deploy__wait_ready "$s" "$port"; then
				continue 2
			fi
			deploy_logs "$s" >&2
			[ -n "${DEPLOY_PID[$s]:-}" ] && deploy__kill_tree "${DEPLOY_PID[$s]}"
			unset "DEPLOY_PID[$s]"
		done
		t_fail "deploy_start: $s did not answer /healthz with 200"
		exit 1
	done
}

deploy_chat() {
	local s=$1
	shift
	ORGW_URL=${DEPLOY_URL[$s]} orgw_chat "$@"
}

deploy_gaps() { # from the 2nd event on: orgw holds the role-only chunk
	# until the first content chunk (t0110), so those two arrive together.
	json_get "$1" 'j.event_times_ms.slice(2).map((t, i) => Math.round(t - j.event_times_ms[i + 1])).join(" ")'
}

deploy_sdk() {
	(cd "$ORGW_ROOT/tests/js" && node --input-type=module -e '
import OpenAI from "openai";
const [base, key, model, mode, arg] = process.argv.slice(1);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0, timeout: 120000 });
const ask = (content) => client.chat.completions.create({ model, messages: [{ role: "user", content }] });
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
if (mode === "big") {
  const n = Number(arg);
  const text = "All work and no play makes Jack a dull boy. ".repeat(Math.ceil(n / 44)).slice(0, n);
  try {
    const r = await ask(text);
    out({ ok: true, status: 200, code: null, content: r.choices[0].message.content });
  } catch (e) {
    out({ ok: false, status: e.status ?? null, code: e.code ?? e.error?.code ?? null, content: null, message: String(e.message).slice(0, 300) });
  }
} else if (mode === "rtt") {
  const n = Number(arg);
  const ms = [];
  try {
    await ask("warm up");
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await ask("ping " + i);
      ms.push(Math.round((performance.now() - t0) * 10) / 10);
    }
    const s = [...ms].sort((a, b) => a - b);
    const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    out({ ok: true, ms, median });
  } catch (e) {
    out({ ok: false, ms, median: null, message: String(e.message).slice(0, 300) });
  }
} else {
  process.stderr.write("deploy_sdk: unknown mode " + mode + "\n");
  process.exit(2);
}
' "$1" "$ORGW_KEY" "$DEPLOY_MODEL" "$2" "${3-}")
}

# deploy_checks SERVER: what every deployment must do, through that server,
# with the official openai client: /healthz; the client key passes (the
# gateway saw the header: a wrong key is "incorrect", not "missing"); both
# base URLs; a 1 MiB body is accepted and one over MAX_BODY_BYTES gets the
# gateway's own 413; events the double spaces 200 ms apart arrive 150-250
# ms apart; the round-trip time of a non-streamed completion, median of 20.
# Prints the measurements as "#" lines, one of them
#   # deploy-metrics SERVER gap_median_ms=.. gap_min_ms=.. gap_max_ms=.. rtt_median_ms=..
# and sets DEPLOY_GAPS (ms, space separated) and DEPLOY_RTT (ms).
# many_streams NAME URL N: N streams at once through the gateway at URL
# (the client base URL without /v1), each about 5 s long (10 tokens 400 ms
# apart, the first after 400 ms); checks that every one is answered whole
# and that none waited for another's end: the last first token comes
# before the shortest stream ended (capacity is concurrent
# streams; a stream queued behind another would see its first token only
# after that one's 5 s, more than ten times the 400 ms).  Leaves the
# double's chunks and spacing at 3 and 0.
many_streams() {
	local s=$1 url=$2 n=$3 r st fmin fmed fp99 fmax tmin
	double_ctl POST config '{"chunks":10,"spacing_ms":400,"first_token_delay_ms":0}' >/dev/null
	r=$(node "$ORGW_ROOT/tests/js/many-streams.mjs" "$url" "$ORGW_KEY" "$DEPLOY_MODEL" "$n")
	double_ctl POST config '{"chunks":3,"spacing_ms":0}' >/dev/null
	t_eq "$s: $n streams at once: all 200" "$n" "$(json_get "$r" 'j.filter(x => x.status === 200).length')"
	t_eq "$s: ... all ended with [DONE]" "$n" "$(json_get "$r" 'j.filter(x => x.done).length')"
	st=$(json_get "$r" '(() => { const f = j.map(x => x.first).sort((a, b) => a - b);
	const t = j.map(x => x.total).sort((a, b) => a - b);
	return [f[0], f[f.length >> 1], f[Math.floor(f.length * 0.99)], f[f.length - 1], t[0]].map(Math.round).join(" "); })()')
	read -r fmin fmed fp99 fmax tmin <<<"$st"
	echo "# $s: $n streams, first token ms: min $fmin median $fmed p99 $fp99 max $fmax; shortest stream $tmin ms"
	t_check "$s: ... none waited for another (last first token $fmax ms < shortest stream $tmin ms)" \
		test "$fmax" -lt "$tmin"
}

deploy_checks() {
	local s=$1 url=${DEPLOY_URL[$1]} out code n bad min max med try
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/healthz")
	t_eq "$s: GET /healthz answers 200" 200 "$code"

	double_ctl POST config '{"spacing_ms":0,"chunks":3,"first_token_delay_ms":0}' >/dev/null
	out=$(deploy_chat "$s" --model "$DEPLOY_MODEL")
	t_eq "$s: the client key passes (openai client)" "true 200 Hello from deepseek" \
		"$(json_get "$out" '[j.ok, j.status, j.content].join(" ")')"
	t_match "$s: orgw's X-Orgw-* headers reach the client" '^(scored|locked) deepseek 1$' \
		"$(json_get "$out" '[j.headers["x-orgw-route"], j.headers["x-orgw-provider"], j.headers["x-orgw-attempts"]].join(" ")')"
	out=$(ORGW_KEY=wrong-key deploy_chat "$s" --model "$DEPLOY_MODEL")
	t_eq "$s: a wrong key reaches orgw and gets its 401" \
		"401 invalid_api_key incorrect API key provided" \
		"$(json_get "$out" '[j.status, j.error?.code, j.error?.message].join(" ")')"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/v1/models")
	t_eq "$s: no Authorization header: 401" 401 "$code"
	out=$(ORGW_URL=$url/api orgw_chat --model "$DEPLOY_MODEL")
	t_eq "$s: the /api/v1 base URL works too" "true 200" \
		"$(json_get "$out" '[j.ok, j.status].join(" ")')"
	# Claude Code's way in: x-api-key, ?beta=true, the Anthropic headers.
	double_ctl DELETE log >/dev/null
	out=$(curl -sS --max-time 20 -H "x-api-key: $ORGW_KEY" \
		-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: claude-code-20250219' \
		-H 'Content-Type: application/json' --data-binary \
		"{\"model\":\"$DEPLOY_MODEL\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
		"$url/v1/messages?beta=true")
	t_eq "$s: a Messages request with x-api-key passes" "message Hello from deepseek" \
		"$(json_get "$out" 'j.type + " " + j.content?.[0]?.text')"
	t_eq "$s: ... its query string and anthropic-beta reach upstream" "beta=true claude-code-20250219" \
		"$(double_ctl GET 'log?limit=1&path=messages' | json_get - 'j.requests[0]?.query + " " + j.requests[0]?.headers["anthropic-beta"]')"

	double_ctl DELETE log >/dev/null
	out=$(deploy_sdk "$url" big 1048576)
	t_eq "$s: a 1 MiB request body is accepted" "true 200 Hello from deepseek" \
		"$(json_get "$out" '[j.ok, j.status, j.content].join(" ")')"
	n=$(double_ctl GET 'log?limit=1' | json_get - 'j.requests[0]?.body?._bytes ?? 0')
	t_check "$s: ... and reaches upstream whole ($n bytes)" test "$n" -gt 1048576
	out=$(deploy_sdk "$url" big $((9 * 1048576)))
	t_eq "$s: a 9 MiB body gets orgw's own 413, not the server's" "413 request_too_large" \
		"$(json_get "$out" '[j.status, j.code].join(" ")')"

	double_ctl POST config '{"spacing_ms":200,"chunks":6}' >/dev/null
	for try in 1 2; do
		out=$(deploy_chat "$s" --model "$DEPLOY_MODEL" --stream)
		DEPLOY_GAPS=$(deploy_gaps "$out")
		bad=$(json_get "$out" \
			'j.event_times_ms.slice(2).map((t, i) => t - j.event_times_ms[i + 1]).filter(g => g < 150 || g > 250).length')
		[ "$bad" = 0 ] && break
		# One more try absorbs a scheduling hiccup on a busy machine;
		# a server that buffers fails both.
		[ "$try" = 1 ] && printf '# %s: gaps %s ms on the first try; trying once more\n' \
			"$s" "$DEPLOY_GAPS"
	done
	t_eq "$s: the spaced stream completes with [DONE]" "true true" \
		"$(json_get "$out" '[j.ok, j.done].join(" ")')"
	n=$(json_get "$out" 'j.event_times_ms.length')
	t_check "$s: the client saw at least 8 events (got $n)" test "$n" -ge 8
	t_eq "$s: events sent 200 ms apart arrive 150-250 ms apart (gaps: $DEPLOY_GAPS)" 0 "$bad"
	read -r min med max < <(tr ' ' '\n' <<<"$DEPLOY_GAPS" | sort -n |
		awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %.1f %s\n", v[1], m, v[NR] }')

	double_ctl POST config '{"spacing_ms":0}' >/dev/null
	out=$(deploy_sdk "$url" rtt 20)
	t_eq "$s: 20 non-streamed completions in a row succeed" true "$(json_get "$out" 'j.ok')"
	DEPLOY_RTT=$(json_get "$out" 'j.median?.toFixed(1)')
	printf '# %s: gaps between events at the client (ms): %s\n' "$s" "$DEPLOY_GAPS"
	printf '# %s: round-trip time of a non-streamed completion (ms): %s\n' "$s" \
		"$(json_get "$out" 'j.ms.join(" ")')"
	printf '# deploy-metrics %s gap_median_ms=%s gap_min_ms=%s gap_max_ms=%s rtt_median_ms=%s\n' \
		"$s" "$med" "$min" "$max" "$DEPLOY_RTT"
}

# dist_unpack DIR: `make dist` (built once, then reused: the first build
# downloads Debian's curl and cjson sources and takes a minute or two),
# the tarball unpacked into DIR; sets DIST_TOP to DIR/orgw-VERSION-linux-x86_64
# and DIST_TARBALL.  Offline (the sources cannot be downloaded): prints
# "skip - ..." and exits 0.
dist_unpack() {
	local out rc why
	# One build at a time: two scripts unpacking at once would both build
	# into dist/build and build/dist.
	out=$(cd "$ORGW_ROOT" && mkdir -p build &&
		flock build/.dist.lock make --no-print-directory -s dist 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		why=$(grep 'cannot download' <<<"$out" | tail -n 1)
		if [ -n "$why" ]; then
			t_skip "make dist: ${why#dist: } (the static build needs Debian's source packages)"
			exit 0
		fi
		t_fail "make dist" "$out"
		exit 1
	fi
	DIST_TARBALL=$(tail -n 1 <<<"$out")
	mkdir -p "$1" && tar -C "$1" -xzf "$DIST_TARBALL" ||
		{ t_fail "unpacking $DIST_TARBALL"; exit 1; }
	DIST_TOP=$1/$(basename "$DIST_TARBALL" .tar.gz)
}
