#!/bin/sh
# bench/run.sh - orgw side by side with the direct path, a bare proxy and a
# peer gateway, all on loopback, in one run (`make bench`).
#
#   (a) direct   client -> the OpenRouter double
#   (b) proxy    client -> lighttpd mod_proxy -> double   (bench/lighttpd-proxy.conf)
#   (c) orgw     client -> lighttpd mod_fastcgi -> orgw.fcgi -> double
#                (deploy/lighttpd.conf and the stack of tests/lib.sh)
#   (d) portkey  client -> Portkey AI gateway (node) -> double
#   (e) orgw-redis  as (c), a second lighttpd + orgw.fcgi stack with the
#                same settings and worker count, but STATE_BACKEND=redis on
#                a private redis-server on loopback (phases 2
#                and 3 only)
#
# Every measurement alternates the paths (a,b,c,d,e,a,b,c,d,e,...) so a busy
# moment of the machine hits them alike, and records how busy the machine
# was with work that is not ours.  Steps:
#   1. the double's own ceiling (tests/double/selfbench.js)
#   2. sequential latency (bench/seq.mjs): 15 warm-up, 7 rounds of 25
#   3. throughput at each concurrency for BENCH_DURATION s (wrk + post.lua),
#      BENCH_REPEAT times, median; then the Redis stack is stopped
#   4. streaming: time to first token, event spacing (bench/stream.mjs);
#      then chat, Messages and Responses side by side through the bare
#      proxy and orgw: added latency and first token (bench/apis.mjs)
#   5. memory: orgw workers idle, and every process of each gateway during
#      BENCH_HOLD concurrent slow streams (/proc/PID/smaps_rollup)
#   6. state-lock hold time per request: the workers restarted with a
#      -DORGW_TRACE_LOCK build (src/store_gdbm.c logs each transaction)
#   7. concurrent long streams (bench/longstreams.mjs): N streams
#      started within one second, each BENCH_LONG_SECONDS long, tokens
#      50-100 ms apart after a first-token wait with keep-alive comments,
#      through the bare proxy, orgw and Portkey in turn; memory of every
#      process of each sampled idle and with all N open; then the same
#      with a BENCH_LONG_BODY_KB request body (proxy and orgw)
#   7c. (after 7; 7b stops the stack) a team (bench/team.mjs): BENCH_TEAM_SESSIONS Claude Code-shaped
#      Messages sessions at once, BENCH_TEAM_TURNS streamed turns each (a
#      ~BENCH_TEAM_SYS_KB system prompt with a cache breakpoint, the
#      conversation growing), against a model whose cheapest endpoint
#      serves BENCH_TEAM_CAP at once (the double answers one more with a
#      provider 429), a second serving twice that, a third without limit;
#      the double's prompt cache on (explicit on the first, implicit on
#      the others), first token after BENCH_TEAM_FIRST_MS.  Run with
#      CONVERSATIONS=1 and =0 (the workers restarted), alternated
#      BENCH_TEAM_ROUNDS times, each run on a model of its own (fresh
#      lock, conversations, pressure and caches): wall time, 429s the
#      clients saw and the double gave, turns answered, cached share,
#      cost, sessions that stayed on one provider
#   3b. a state with 30 days of history (bench/agestate.mjs) loaded into
#      orgw's state: the bare proxy and orgw again at 64 connections
#   7b. instructions per request under callgrind (bench/callgrind.sh): the
#      bare proxy's lighttpd, one orgw worker on a fresh and on the 30-day
#      state (BENCH_CALLGRIND=0 leaves it out)
#   8. bench/report.mjs writes RESULTS.md; gnuplot draws the chart
#
# Knobs (environment):
#   BENCH_QUICK=1        a smoke run (seconds, tiny counts; tests/integration/t0600)
#   BENCH_OUT=DIR        raw results and logs (default bench/out)
#   BENCH_RESULTS=FILE   the Markdown table (default bench/RESULTS.md; quick
#                        runs default to $BENCH_OUT/RESULTS.md)
#   BENCH_CHART=FILE     the chart, .png or .svg (default bench/results.png;
#                        quick: $BENCH_OUT/results.svg)
#   BENCH_PORTKEY=0      leave out the peer gateway
#   BENCH_REDIS=0        leave out orgw on Redis (default: on when
#                        redis-server is installed)
#   BENCH_DURATION, BENCH_CONC ("16 64 256"), BENCH_REPEAT (3),
#   BENCH_WORKERS (4, the default set-up, each with WORKER_THREADS 80: the
#   pool for phases 1-4), BENCH_HOLD (256: streams held in phase 5, with
#   as many threads as it takes), BENCH_SEQ ("15 7 25": warm-up,
#   rounds, per round)
#   Phase 7: BENCH_LONG=0 leaves it out, BENCH_LONG_ONLY=1 runs only it
#   (after the set-up); BENCH_LONG_N ("256 1000": stream counts),
#   BENCH_LONG_SECONDS (30), BENCH_LONG_FIRST_MS (1000: wait for the first
#   token, a keep-alive comment every 250 ms), BENCH_LONG_BODY_KB (200) and
#   BENCH_LONG_BODY_N (256: the run with big bodies, at that count, if it is
#   in BENCH_LONG_N), BENCH_LONG_PORTKEY (1), BENCH_LONG_BUDGET_S (420: runs
#   that would end later are skipped and reported so).  The orgw pool: a
#   build that knows WORKER_THREADS gets WORKER_THREADS=
#   BENCH_LONG_THREADS (80, the default) and max(4, (N + 1) / threads,
#   rounded up) workers (one thread of the host is kept for the next
#   request: 4 x 80 for 256 streams, the default set-up); today's build
#   (one request per process) gets N workers.  BENCH_LONG_WORKERS fixes
#   the count instead.
#   Phase 7c: BENCH_TEAM=0 leaves it out, BENCH_TEAM_ONLY=1 runs only it
#   (after the set-up); BENCH_TEAM_SESSIONS (16), BENCH_TEAM_TURNS (10),
#   BENCH_TEAM_CAP (4), BENCH_TEAM_ROUNDS (2: on, off, on, off),
#   BENCH_TEAM_FIRST_MS (1500), BENCH_TEAM_SYS_KB (100).  The orgw stack
#   keeps its other settings (RETRY_429_DELAYS 2,4,8, MAX_ATTEMPTS 4,
#   PRESSURE_SECONDS 30) and BENCH_WORKERS workers.
#
# Bench-only packages (wrk, gnuplot) come from deploy/install-deps.sh with
# ORGW_DEPS_BENCH=1; Portkey from npm into bench/node_modules.  Every
# process is started here and stopped by PID; every load is bounded in time.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi
set -u

cd "$(dirname "$0")/.." || exit 2
# shellcheck source=../tests/lib.sh
. tests/lib.sh

QUICK=${BENCH_QUICK:-0}
OUT=${BENCH_OUT:-bench/out}
if [ "$QUICK" = 1 ]; then
	RESULTS=${BENCH_RESULTS:-$OUT/RESULTS.md}
	CHART=${BENCH_CHART:-$OUT/results.svg}
	DUR=${BENCH_DURATION:-1}
	CONC=${BENCH_CONC:-"2 4"}
	REPEAT=${BENCH_REPEAT:-1}
	WORKERS=${BENCH_WORKERS:-8}
	HOLD=${BENCH_HOLD:-6}
	SEQ=${BENCH_SEQ:-"2 2 3"}
	STREAM_ROUNDS="1 2"
	APIS_SEQ="1 1 2"
	SELF_S=1
	TRACE_S=1
	LONG_N=${BENCH_LONG_N:-6}
	LONG_S=${BENCH_LONG_SECONDS:-1}
	LONG_FIRST_MS=${BENCH_LONG_FIRST_MS:-500}
	LONG_BODY_N=${BENCH_LONG_BODY_N:-6}
	LONG_WARM_SPACING_MS=150
	LONG_WINDOW_MS=250	# the streams start over this long
	TEAM_SESSIONS=${BENCH_TEAM_SESSIONS:-4}
	TEAM_TURNS=${BENCH_TEAM_TURNS:-3}
	TEAM_CAP=${BENCH_TEAM_CAP:-2}
	TEAM_ROUNDS=${BENCH_TEAM_ROUNDS:-1}
	TEAM_FIRST_MS=${BENCH_TEAM_FIRST_MS:-300}
	TEAM_SYS_KB=${BENCH_TEAM_SYS_KB:-20}
	SETTLE_S=0	# the pause before each wrk run: the figures mean nothing here
else
	RESULTS=${BENCH_RESULTS:-bench/RESULTS.md}
	CHART=${BENCH_CHART:-bench/results.png}
	DUR=${BENCH_DURATION:-10}
	CONC=${BENCH_CONC:-"16 64 256"}
	REPEAT=${BENCH_REPEAT:-3}
	# Phases 1-4 (short requests) run on a pool sized for the two cores:
	# with one worker per connection every request lands on a cache-cold
	# process (bench/rtt.sh: 0.59 ms added with 4 workers, 0.77 with 16,
	# 1.16 with 256).  The memory phase needs one worker per stream and
	# restarts the pool with $HOLD workers.
	WORKERS=${BENCH_WORKERS:-4}
	HOLD=${BENCH_HOLD:-256}
	SEQ=${BENCH_SEQ:-"15 7 25"}
	STREAM_ROUNDS="5 4"
	APIS_SEQ="10 5 20"
	SELF_S=3
	TRACE_S=5
	LONG_N=${BENCH_LONG_N:-"256 1000"}
	LONG_S=${BENCH_LONG_SECONDS:-30}
	LONG_FIRST_MS=${BENCH_LONG_FIRST_MS:-1000}
	LONG_BODY_N=${BENCH_LONG_BODY_N:-256}
	LONG_WARM_SPACING_MS=500
	LONG_WINDOW_MS=1000
	TEAM_SESSIONS=${BENCH_TEAM_SESSIONS:-16}
	TEAM_TURNS=${BENCH_TEAM_TURNS:-10}
	TEAM_CAP=${BENCH_TEAM_CAP:-4}
	TEAM_ROUNDS=${BENCH_TEAM_ROUNDS:-2}
	TEAM_FIRST_MS=${BENCH_TEAM_FIRST_MS:-1500}
	TEAM_SYS_KB=${BENCH_TEAM_SYS_KB:-100}
	SETTLE_S=0.5
fi
PORTKEY=${BENCH_PORTKEY:-1}
REDIS=${BENCH_REDIS:-1}
LONG=${BENCH_LONG:-1}
LONG_ONLY=${BENCH_LONG_ONLY:-0}
[ "$LONG_ONLY" = 1 ] && LONG=1
TEAM=${BENCH_TEAM:-1}
TEAM_ONLY=${BENCH_TEAM_ONLY:-0}
[ "$TEAM_ONLY" = 1 ] && TEAM=1
if [ "$TEAM_ONLY" = 1 ] && [ "$LONG_ONLY" = 1 ]; then
	echo "bench: BENCH_LONG_ONLY and BENCH_TEAM_ONLY: one or the other" >&2
	exit 2
fi
LONG_BODY_KB=${BENCH_LONG_BODY_KB:-200}
LONG_THREADS=${BENCH_LONG_THREADS:-80}
LONG_WORKERS=${BENCH_LONG_WORKERS:-}
LONG_BUDGET=${BENCH_LONG_BUDGET_S:-420}
MODEL=deepseek/deepseek-v3.2
SPACING_MS=20

mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/*.json "$OUT"/*.jsonl "$OUT"/*.txt "$OUT"/*.log "$OUT"/*.dat "$OUT"/wrk.out "$OUT"/wrk.line "$OUT"/ready

# Phase 7 holds up to 1,000 streams: two descriptors each in a lighttpd
# (client and backend), one each in the client, the double and Portkey.
# Every server started below inherits this limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null

say() { printf 'bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

# ---------------------------------------------------------------------------
# Dependencies and builds
# ---------------------------------------------------------------------------

ORGW_DEPS_BENCH=1 sh deploy/install-deps.sh || die "install-deps failed"
for t in wrk gnuplot lighttpd node; do
	command -v "$t" >/dev/null || die "$t is missing"
done

PK_DIR=bench/node_modules/@portkey-ai/gateway
PK_JS=$PK_DIR/build/start-server.js

# Portkey 1.15.2 on Node 20: hono's Response stand-in copies the upstream
# fetch Response's headers guard, so ResponseService.updateHeaders() throws
# "TypeError: immutable" on every streamed reply (Portkey-AI/gateway#1389,
# #1550; upstream fix in the open PRs #1390/#1551).  The same one-line
# workaround as those PRs: give the streamed Response its own headers.
portkey_patch() {
	local from='new Response(p,e)}const Ad=' to
	to='new Response(p,{status:e.status,statusText:e.statusText,headers:new Headers(e.headers)})}const Ad='
	grep -qF "$to" "$PK_JS" && return 0
	grep -qF "$from" "$PK_JS" || {
		say "Portkey build differs from 1.15.2; streaming patch not applied"
		return 0
	}
	node -e '
const fs = require("fs");
const [f, a, b] = process.argv.slice(1);
fs.writeFileSync(f, fs.readFileSync(f, "utf8").replace(a, b));' "$PK_JS" "$from" "$to"
}

if [ "$PORTKEY" = 1 ]; then
	if [ ! -f "$PK_DIR/package.json" ] ||
	    [ bench/package-lock.json -nt bench/node_modules/.package-lock.json ]; then
		say "npm ci in bench/ (Portkey gateway)"
		(cd bench && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
			(cd bench && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
			{
				say "Portkey install failed: leaving it out"
				PORTKEY=0
			}
	fi
	[ "$PORTKEY" = 1 ] && [ -f "$PK_JS" ] && portkey_patch
	[ -f "$PK_JS" ] || PORTKEY=0
fi
if [ "$REDIS" = 1 ] && ! command -v redis-server >/dev/null; then
	say "redis-server is missing (ORGW_DEPS_TEST=1 sh deploy/install-deps.sh): orgw on Redis left out"
	REDIS=0
fi

# The workers run build/release/orgw.fcgi, the file cgi-bin/orgw.fcgi is
# copied from: `make all` cannot replace cgi-bin/orgw.fcgi while another
# test's workers run it ("Text file busy").
make -s build/release/orgw.fcgi >/dev/null || die "build failed"
export ORGW_FCGI_BIN=${ORGW_FCGI_BIN:-build/release/orgw.fcgi}
# The lock-trace build: same flags plus ORGW_TRACE_LOCK, own object dir.
make -s FLAVOUR=locktrace \
	OPT="-O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -DORGW_TRACE_LOCK" \
	build/locktrace/orgw.fcgi >/dev/null || die "lock-trace build failed"

# ---------------------------------------------------------------------------
# Machine facts (bench/report.mjs reads meta.txt)
# ---------------------------------------------------------------------------

meta() { printf '%s=%s\n' "$1" "$2" >>"$OUT/meta.txt"; }
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
meta cores "$(nproc)"
meta mem "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
meta kernel "$(uname -r)"
meta os "$(. /etc/os-release && echo "$PRETTY_NAME")"
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta lighttpd "$(lighttpd -v 2>&1 | head -n 1 | cut -d' ' -f1)"
meta node "$(node --version)"
meta wrk "$(wrk -v 2>&1 | head -n 1 | cut -d' ' -f1-2)"
meta libcurl "$(curl --version | head -n 1 | cut -d' ' -f2-3)"
meta gdbm "$(dpkg-query -W -f='${Version}' libgdbm6 2>/dev/null)"
meta libfcgi "$(dpkg-query -W -f='${Version}' libfcgi0ldbl 2>/dev/null || dpkg-query -W -f='${Version}' libfcgi-bin 2>/dev/null)"
meta gnuplot "$(gnuplot --version)"
meta model "$MODEL"
meta cc "$(cc --version | head -n 1)"
meta orgw "$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- src cgi-bin 2>/dev/null || echo '+changes')"
[ "$PORTKEY" = 1 ] && meta portkey "$(node -p "require('./$PK_DIR/package.json').version")"
[ "$REDIS" = 1 ] && meta redis "$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
meta quick "$QUICK"
meta duration "$DUR"
meta conc "$CONC"
meta repeat "$REPEAT"
meta workers "$WORKERS"
meta hold "$HOLD"
meta seq "$SEQ"
meta spacing_ms "$SPACING_MS"
meta nofile "$(ulimit -n)"

# ---------------------------------------------------------------------------
# The targets
# ---------------------------------------------------------------------------

PROXY_PID= PK_PID=
bench_on_exit() {
	local rc=$?
	trap - EXIT
	[ -n "$PROXY_PID" ] && orgw__kill "$PROXY_PID"
	[ -n "$PK_PID" ] && orgw__kill "$PK_PID"
	PROXY_PID= PK_PID=
	# tests/lib.sh stops the double, lighttpd and the workers.
	(exit $rc)
	orgw__on_exit
}

say "starting the double, lighttpd and $WORKERS orgw workers"
# (c) keeps its state in GDBM whatever ORGW_STATE_BACKEND says.  The
# throughput runs send thousands of requests a second: with the default
# WORKER_MAX_REQUESTS (10000, an hour or more of real traffic) every
# worker would recycle every few seconds, draining and restarting in the
# middle of the measurement; the bench measures the steady state.
ORGW_STATE_BACKEND=gdbm ORGW_WORKERS=$WORKERS orgw_start \
	WORKER_MAX_REQUESTS=1000000000
trap bench_on_exit EXIT
double_ctl POST reset >/dev/null || die "double reset"

PROXY_PORT=
for try in 1 2 3; do
	PROXY_PORT=$(orgw__free_port) || die "no free port"
	mkdir -p "$ORGW_T/proxy/www"
	sed -e "s|@PORT@|$PROXY_PORT|g" -e "s|@BACKEND_PORT@|$ORGW_DOUBLE_PORT|g" \
		-e "s|@DOCROOT@|$ORGW_T/proxy/www|g" \
		-e "s|@ERRORLOG@|$ORGW_T/proxy/error.log|g" \
		-e "s|@PIDFILE@|$ORGW_T/proxy/lighttpd.pid|g" \
		bench/lighttpd-proxy.conf >"$ORGW_T/proxy/lighttpd.conf"
	lighttpd -D -f "$ORGW_T/proxy/lighttpd.conf" >"$ORGW_T/proxy/out.log" 2>&1 </dev/null &
	PROXY_PID=$!
	orgw__wait_http "http://127.0.0.1:$PROXY_PORT/__double/health" 5 && break
	orgw__kill "$PROXY_PID"
	PROXY_PID= PROXY_PORT=
done
[ -n "$PROXY_PORT" ] || die "the bare proxy did not start"

# (e) orgw on Redis: tests/lib.sh's second host (orgw_start_host2: its own
# spawn-fcgi + multiwatch workers and lighttpd, deploy/lighttpd.conf) with
# the settings of (c) plus STATE_BACKEND=redis, on a private redis-server
# (orgw_redis_start: loopback, free port, --save '' --appendonly no).  Its
# own STATE_PATH, so its worker table (STATE_PATH.workers) is its own, as
# on a second host.  Stopped by PID after phase 3 (bench_redis_stop) or by
# orgw_stop on exit.
REDIS_URL=
if [ "$REDIS" = 1 ]; then
	say "starting redis-server and $WORKERS orgw workers on it"
	orgw_redis_start "$ORGW_T/redis" || die "redis-server did not start"
	orgw__conf_set STATE_BACKEND=redis REDIS_URL="$ORGW_REDIS_URL" \
		STATE_PATH="$ORGW_T/state-redis.gdbm" || die "settings"
	orgw__conf_write "$ORGW_T/orgw-redis.conf"
	# Back to the GDBM settings: orgw_restart_workers (phases 5-7)
	# rewrites $ORGW_CONFIG_FILE from them.
	orgw__conf_set -STATE_BACKEND -REDIS_URL STATE_PATH="$ORGW_STATE"
	gdbm_conf=$ORGW_CONFIG_FILE
	ORGW_CONFIG_FILE=$ORGW_T/orgw-redis.conf ORGW_WORKERS=$WORKERS orgw_start_host2
	ORGW_CONFIG_FILE=$gdbm_conf
	[ -n "${ORGW2_URL:-}" ] || die "orgw on Redis did not start"
	REDIS_URL=$ORGW2_URL
fi
bench_redis_stop() {
	[ -n "${ORGW2_LIGHTTPD_PID:-}" ] && orgw__kill "$ORGW2_LIGHTTPD_PID"
	if [ -n "${ORGW2_SUPERVISOR_PID:-}" ]; then
		local sup1=$ORGW_SUPERVISOR_PID
		ORGW_SUPERVISOR_PID=$ORGW2_SUPERVISOR_PID
		orgw__workers_stop
		ORGW_SUPERVISOR_PID=$sup1
	fi
	ORGW2_LIGHTTPD_PID='' ORGW2_SUPERVISOR_PID=''
	orgw_redis_stop
}

if [ "$PORTKEY" = 1 ]; then
	PK_PORT=$(orgw__free_port) || die "no free port"
	# --headless and NODE_ENV=production: no log UI, no per-request log
	# stream; portkey-preload.cjs keeps it on 127.0.0.1.
	NODE_ENV=production node -r ./bench/portkey-preload.cjs "$PK_JS" \
		--port="$PK_PORT" --headless >"$ORGW_T/portkey.log" 2>&1 </dev/null &
	PK_PID=$!
	orgw__wait_http "http://127.0.0.1:$PK_PORT/" 20 || die "Portkey did not start"
fi

DOUBLE_CHAT=$DOUBLE_URL/api/v1/chat/completions
TARGETS=$OUT/targets.json
node -e '
const [file, model, dchat, pport, oport, okey, ukey, pkport, durl, rport] = process.argv.slice(1);
const t = [
  { name: "direct", url: dchat, headers: { Authorization: `Bearer ${ukey}` } },
  { name: "proxy", url: `http://127.0.0.1:${pport}/api/v1/chat/completions`, headers: { Authorization: `Bearer ${ukey}` } },
  { name: "orgw", url: `${oport}/v1/chat/completions`, headers: { Authorization: `Bearer ${okey}` } },
];
if (pkport) t.push({ name: "portkey", url: `http://127.0.0.1:${pkport}/v1/chat/completions`,
  headers: { Authorization: `Bearer ${ukey}`, "x-portkey-provider": "openai",
    "x-portkey-custom-host": `${durl}/api/v1` } });
if (rport) t.push({ name: "orgw-redis", url: `${rport}/v1/chat/completions`, headers: { Authorization: `Bearer ${okey}` } });
const body = { model, messages: [
  { role: "system", content: "You are a helpful assistant. Answer briefly." },
  { role: "user", content: "Say hello in three words, please." } ], max_tokens: 64 };
require("fs").writeFileSync(file, JSON.stringify({ body, targets: t }, null, 1));
' "$TARGETS" "$MODEL" "$DOUBLE_CHAT" "$PROXY_PORT" "$ORGW_URL" "$ORGW_KEY" \
	"$UPSTREAM_KEY" "$([ "$PORTKEY" = 1 ] && echo "$PK_PORT")" "$DOUBLE_URL" "$REDIS_URL"
node -e 'const fs=require("fs");const j=JSON.parse(fs.readFileSync(process.argv[1]));
fs.writeFileSync(process.argv[2], JSON.stringify({...j.body, stream:false}));' \
	"$TARGETS" "$OUT/body.json"
NAMES=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).targets.map(t=>t.name).join(" ")' "$TARGETS")
# Phases 4 and 5 (streaming, memory) without orgw on Redis.
NAMES45=$(tr ' ' '\n' <<<"$NAMES" | grep -vx orgw-redis | tr '\n' ' ')
NAMES45=${NAMES45% }

# One request through each (the first through orgw also scores the model
# inline): every target must answer 200 with a completion, streamed too.
node --input-type=module -e '
import { loadTargets, request, agentFor } from "./bench/lib.mjs";
const { body, targets } = loadTargets(process.argv[1]);
let bad = 0;
for (const t of targets) for (const stream of [false, true]) {
  let text = "";
  const r = await request(t, JSON.stringify({ ...body, stream }), agentFor(), null,
    (c) => { text += c; }).catch((e) => ({ status: 0, e }));
  const ok = r.status === 200 && (stream ? text.includes("data: [DONE]") : /"choices"/.test(text));
  if (!ok) { bad++; process.stderr.write(`bench: ${t.name} stream=${stream}: HTTP ${r.status} ${r.e || text.slice(0, 300)}\n`); }
}
process.exit(bad ? 1 : 0);
' "$TARGETS" || die "a target does not answer correctly"
say "targets: $NAMES"

# ---------------------------------------------------------------------------
# CPU accounting: how busy the machine was with work that is not ours
# ---------------------------------------------------------------------------

server_pids() { # every process of the targets
	echo "$ORGW_DOUBLE_PID $ORGW_LIGHTTPD_PID $ORGW_SUPERVISOR_PID $PROXY_PID ${PK_PID:-}"
	echo "${ORGW2_LIGHTTPD_PID:-} ${ORGW2_SUPERVISOR_PID:-} ${ORGW_REDIS_PID:-}"
	orgw_worker_pids
	[ -n "${ORGW2_SUPERVISOR_PID:-}" ] && orgw__children "$ORGW2_SUPERVISOR_PID"
}

ticks_of() { # PID...: summed utime+stime (clock ticks)
	local f=()
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] && f+=("/proc/$p/stat")
	done
	[ ${#f[@]} -eq 0 ] && {
		echo 0
		return
	}
	awk '{ sub(/^.*\) /, ""); s += $12 + $13 } END { print s + 0 }' "${f[@]}" 2>/dev/null
}

busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# run_wrk SECONDS ARGS...: runs wrk in the background and prints the
# BENCH_JSON line; WRK_TICKS gets wrk's own CPU (last sample before it
# exited, every 0.2 s).
run_wrk() {
	local secs=$1 pid t
	shift
	WRK_TICKS=0
	timeout $((secs + 30)) wrk "$@" >"$OUT/wrk.out" 2>&1 &
	pid=$!
	sleep 0.05
	# timeout(1) forks wrk: read the child's ticks.
	local w
	w=$(orgw__children "$pid" | head -n 1)
	while orgw__alive "$pid"; do
		[ -n "$w" ] || w=$(orgw__children "$pid" | head -n 1)
		[ -n "$w" ] && t=$(ticks_of "$w") && [ "${t:-0}" -gt 0 ] && WRK_TICKS=$t
		sleep 0.2
	done
	wait "$pid"
	sed -n 's/^BENCH_JSON //p' "$OUT/wrk.out"
}

# Memory of the processes of each path (/proc/PID/smaps_rollup): phases 5 and 7.
mem_sample() { # PHASE ROLE PID...: one JSON line per process
	local phase=$1 role=$2 p
	shift 2
	for p in "$@"; do
		[ -r "/proc/$p/smaps_rollup" ] || continue
		awk -v ph="$phase" -v ro="$role" -v pid="$p" '
			/^Rss:/ { rss = $2 } /^Pss:/ { pss = $2 }
			/^Private_Dirty:/ { pd = $2 } /^Private_Clean:/ { pc = $2 }
			END { printf "{\"phase\":\"%s\",\"role\":\"%s\",\"pid\":%s,\"rss_kb\":%d,\"pss_kb\":%d,\"private_dirty_kb\":%d,\"private_clean_kb\":%d}\n",
				ph, ro, pid, rss, pss, pd, pc }' "/proc/$p/smaps_rollup"
	done >>"$OUT/mem.jsonl"
}

mem_gateway() { # PHASE NAME: every process of that gateway
	case $2 in
	orgw)
		# shellcheck disable=SC2046
		mem_sample "$1" orgw-worker $(orgw_worker_pids)
		mem_sample "$1" orgw-lighttpd "$ORGW_LIGHTTPD_PID"
		mem_sample "$1" orgw-multiwatch "$ORGW_SUPERVISOR_PID"
		;;
	proxy) mem_sample "$1" proxy-lighttpd "$PROXY_PID" ;;
	portkey) mem_sample "$1" portkey-node "$PK_PID" ;;
	esac
}


# ---------------------------------------------------------------------------
# 7. Concurrent long streams (a function: BENCH_LONG_ONLY=1 runs only this)
# ---------------------------------------------------------------------------

# Does this orgw.fcgi run a pool of threads per process?  The
# setting's name is in the binary's table of settings; today's build would
# only warn "unknown setting" and serve one request per process.
long_threaded() { grep -aq WORKER_THREADS "${ORGW_FCGI_BIN}"; }

long_say_skip() { # TAG NAME N REASON: a run left out, for the report
	printf '{"tag":"%s","target":"%s","n":%d,"skipped":"%s"}\n' "$1" "$2" "$3" "$4" >>"$OUT/long.jsonl"
	say "   $1 $2: skipped ($4)"
}

# long_run TAG NAME N BODY_KB: N concurrent long streams through NAME;
# memory sampled (phase TAG) once each has its first token.
long_run() {
	local tag=$1 name=$2 n=$3 kb=$4 hp i est lag res
	est=$((LONG_S + LONG_FIRST_MS / 1000 + 4))
	if [ $(($(date +%s) - LONG_T0 + est)) -gt "$LONG_BUDGET" ]; then
		long_say_skip "$tag" "$name" "$n" "time budget BENCH_LONG_BUDGET_S=$LONG_BUDGET"
		return 0
	fi
	rm -f "$OUT/ready"
	double_ctl POST loop_lag_reset >/dev/null
	node bench/longstreams.mjs --targets "$TARGETS" --only "$name" --n "$n" \
		--seconds "$LONG_S" --first_ms "$LONG_FIRST_MS" --body_kb "$kb" --window_ms "$LONG_WINDOW_MS" \
		--ready "$OUT/ready" >"$OUT/long-run.json" 2>"$OUT/long-run.err" &
	hp=$!
	for ((i = 0; i < (est + 30) * 10; i++)); do
		[ -s "$OUT/ready" ] && break
		orgw__alive "$hp" || break
		sleep 0.1
	done
	sleep 0.5
	mem_gateway "$tag" "$name"
	wait "$hp" || say "   $tag $name: the client failed ($(tail -n 3 "$OUT/long-run.err"))"
	lag=$(double_ctl GET stats | node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8")); process.stdout.write(JSON.stringify(j.loop_lag_ms || null));')
	res=$(cat "$OUT/long-run.json")
	[ -n "$res" ] || res=null
	printf '{"tag":"%s","target":"%s","n":%d,"body_kb":%d,"workers":%d,"threads":%d,"double_lag_ms":%s,"result":%s}\n' \
		"$tag" "$name" "$n" "$kb" "$LONG_POOL" "$LONG_POOL_THREADS" "${lag:-null}" "$res" >>"$OUT/long.jsonl"
	say "   $tag $name: $(node -e 'const j = JSON.parse(process.argv[1]); if (!j) process.exit(0);
console.log(`${j.completed}/${j.n} complete, ${j.wrong} wrong, first token median ${j.first_token_ms.median} p99 ${j.first_token_ms.p99} ms, gap median ${j.gap_ms.median} p99 ${j.gap_ms.p99} ms, client lag p99 ${j.client_lag_ms.p99} ms`)' "$res")"
}

long_phase() {
	local n nm names_long
	LONG_T0=$(date +%s)
	names_long="proxy orgw"
	[ "$PORTKEY" = 1 ] && [ "${BENCH_LONG_PORTKEY:-1}" = 1 ] && names_long="$names_long portkey"
	LONG_POOL_THREADS=1
	long_threaded && LONG_POOL_THREADS=$LONG_THREADS
	meta long_n "$LONG_N"
	meta long_seconds "$LONG_S"
	meta long_first_ms "$LONG_FIRST_MS"
	meta long_body_kb "$LONG_BODY_KB"
	meta long_threads "$LONG_POOL_THREADS"
	meta long_budget_s "$LONG_BUDGET"
	say "7/7 concurrent long streams: $LONG_N streams of ${LONG_S}s; orgw $([ "$LONG_POOL_THREADS" -gt 1 ] && echo "with $LONG_POOL_THREADS threads per worker" || echo "one request per worker process")"
	double_ctl POST config '{"chunks":3,"spacing_ms":0}' >/dev/null || die "double config"
	for n in $LONG_N; do
		if [ -n "$LONG_WORKERS" ]; then
			LONG_POOL=$LONG_WORKERS
		elif [ "$LONG_POOL_THREADS" -gt 1 ]; then
			# One thread of the host stays free for the next
			# request (load.h): n streams need n + 1 threads.
			LONG_POOL=$(((n + LONG_POOL_THREADS) / LONG_POOL_THREADS))
			[ "$LONG_POOL" -lt 4 ] && LONG_POOL=4
		else
			LONG_POOL=$n
		fi
		say "   $n streams: orgw restarted with $LONG_POOL workers"
		if [ "$LONG_POOL_THREADS" -gt 1 ]; then
			ORGW_WORKERS=$LONG_POOL orgw_restart_workers WORKER_THREADS="$LONG_POOL_THREADS" ||
				die "restart with $LONG_POOL workers"
		else
			ORGW_WORKERS=$LONG_POOL orgw_restart_workers || die "restart with $LONG_POOL workers"
		fi
		# Every worker (thread) serves a request before the idle figure:
		# n short streams at once, 4 chunks $LONG_WARM_SPACING_MS ms
		# apart (2 s each; 0.6 s in a quick run).
		double_ctl POST config "{\"chunks\":4,\"spacing_ms\":$LONG_WARM_SPACING_MS}" >/dev/null ||
			die "double config"
		node bench/stream.mjs --mode hold --targets "$TARGETS" --only orgw \
			--n "$n" --timeout_ms 120000 >"$OUT/long-warm-$n.json" || say "   warm-up of $n failed"
		double_ctl POST config '{"chunks":3,"spacing_ms":0}' >/dev/null
		sleep 1
		for nm in $names_long; do
			mem_gateway "long-idle-$n" "$nm"
		done
		for nm in $names_long; do
			long_run "long-$n" "$nm" "$n" 0
		done
		if [ "$n" = "$LONG_BODY_N" ] && [ "$LONG_BODY_KB" -gt 0 ]; then
			for nm in proxy orgw; do
				long_run "longbody-$n" "$nm" "$n" "$LONG_BODY_KB"
			done
		fi
	done
	meta long_wall_s "$(($(date +%s) - LONG_T0))"
}

# ---------------------------------------------------------------------------
# 7c. A team's sessions, conversations on and off (BENCH_TEAM_ONLY=1 runs
# only this)
# ---------------------------------------------------------------------------

# team_run MODE ROUND: one run of bench/team.mjs on a model of its own,
# the workers restarted with CONVERSATIONS for MODE (on 1, off 0).
team_run() {
	local mode=$1 round=$2 conv=1 m res
	[ "$mode" = off ] && conv=0
	m=bench/team-$mode-$round
	ORGW_WORKERS=$WORKERS orgw_restart_workers CONVERSATIONS=$conv ||
		die "restart with CONVERSATIONS=$conv"
	# Priced as in tests/integration/t0658: the cheapest caches only what
	# a breakpoint marks and bills the writes; the others cache
	# implicitly.  The first serves TEAM_CAP at once, the second twice
	# that: one more gets a provider 429 naming it.
	double_ctl PUT "endpoints/$m" "[
 {\"tag\":\"anth\",\"provider_name\":\"Anth\",\"status\":0,\"uptime_last_30m\":99.9,
  \"pricing\":{\"prompt\":\"0.000003\",\"completion\":\"0.000015\",\"input_cache_read\":\"0.0000003\",
   \"input_cache_write\":\"0.00000375\"},
  \"supports_implicit_caching\":false,\"x_double_max_inflight\":$TEAM_CAP},
 {\"tag\":\"second\",\"provider_name\":\"Second\",\"status\":0,\"uptime_last_30m\":99.9,
  \"pricing\":{\"prompt\":\"0.000006\",\"completion\":\"0.00003\",\"input_cache_read\":\"0.0000006\"},
  \"supports_implicit_caching\":true,\"x_double_max_inflight\":$((TEAM_CAP * 2))},
 {\"tag\":\"third\",\"provider_name\":\"Third\",\"status\":0,\"uptime_last_30m\":99.9,
  \"pricing\":{\"prompt\":\"0.000008\",\"completion\":\"0.00004\",\"input_cache_read\":\"0.0000008\"},
  \"supports_implicit_caching\":true}]" >/dev/null || die "double endpoints"
	node bench/team.mjs --url "$ORGW_URL" --key "$ORGW_KEY" --double "$DOUBLE_URL" \
		--model "$m" --mode "$mode" --sessions "$TEAM_SESSIONS" --turns "$TEAM_TURNS" \
		--sys_kb "$TEAM_SYS_KB" >"$OUT/team-run.json" 2>"$OUT/team-run.err" ||
		say "   $mode #$round: not every turn was answered ($(tail -n 3 "$OUT/team-run.err"))"
	res=$(cat "$OUT/team-run.json")
	[ -n "$res" ] || res=null
	printf '{"mode":"%s","round":%d,"conversations":%d,"cap":%d,"first_ms":%d,"result":%s}\n' \
		"$mode" "$round" "$conv" "$TEAM_CAP" "$TEAM_FIRST_MS" "$res" >>"$OUT/team.jsonl"
	say "   $mode #$round: $(node -e 'const j = JSON.parse(process.argv[1]); if (!j) process.exit(0);
console.log(`${(j.wall_ms / 1000).toFixed(1)} s, ${j.turns_ok}/${j.sessions * j.turns} turns, 429s: ${j.client_429} to clients, ${j.upstream_429} upstream; cached ${(100 * j.cached_share).toFixed(1)}%, $${j.cost_usd}, ${j.one_provider}/${j.sessions} on one provider`)' "$res")"
}

team_phase() {
	local r t0
	t0=$(date +%s)
	meta team_sessions "$TEAM_SESSIONS"
	meta team_turns "$TEAM_TURNS"
	meta team_cap "$TEAM_CAP"
	meta team_first_ms "$TEAM_FIRST_MS"
	meta team_sys_kb "$TEAM_SYS_KB"
	say "7c/7 a team: $TEAM_SESSIONS sessions of $TEAM_TURNS turns, the lock's provider serving $TEAM_CAP at once; conversations on and off, $TEAM_ROUNDS round(s)"
	double_ctl POST config "{\"prompt_cache\":true,\"explicit_cache\":true,\"messages_stream_cost\":true,\"first_token_delay_ms\":$TEAM_FIRST_MS,\"chunks\":20,\"spacing_ms\":25}" >/dev/null ||
		die "double config"
	for ((r = 1; r <= TEAM_ROUNDS; r++)); do
		team_run on "$r"
		team_run off "$r"
	done
	double_ctl POST config '{"prompt_cache":false,"explicit_cache":false,"messages_stream_cost":false,"first_token_delay_ms":0,"chunks":3,"spacing_ms":0}' >/dev/null
	ORGW_WORKERS=$WORKERS orgw_restart_workers -CONVERSATIONS || die "restart"
	meta team_wall_s "$(($(date +%s) - t0))"
}

if [ "$TEAM_ONLY" = 1 ]; then
	team_phase
	meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
	node bench/report-team.mjs --out "$OUT" --results "$RESULTS" || die "report failed"
	say "wrote $RESULTS (phase 7c only)"
	exit 0
fi

if [ "$LONG_ONLY" = 1 ]; then
	long_phase
	meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
	node bench/report-long.mjs --out "$OUT" --results "$RESULTS" || die "report failed"
	say "wrote $RESULTS (phase 7 only)"
	exit 0
fi

# ---------------------------------------------------------------------------
# 1. The double's own ceiling
# ---------------------------------------------------------------------------

say "1/7 the double's ceiling (selfbench, ${SELF_S}s)"
node tests/double/selfbench.js --url "$DOUBLE_URL" --pid "$ORGW_DOUBLE_PID" \
	--key "$UPSTREAM_KEY" --model "$MODEL" -c 64 -d "$SELF_S" |
	tail -n 1 >"$OUT/selfbench.json" || die "selfbench"

# ---------------------------------------------------------------------------
# 2. Sequential latency
# ---------------------------------------------------------------------------

read -r SW SR SP <<<"$SEQ"
say "2/7 sequential latency ($SW warm-up, $SR rounds of $SP)"
b0=$(busy_ticks)
t0=$(date +%s%N)
ours0=$(ticks_of $(server_pids))
node bench/seq.mjs --targets "$TARGETS" --warmup "$SW" --rounds "$SR" \
	--per_round "$SP" >"$OUT/seq.json" || die "sequential latency run failed"
ours1=$(ticks_of $(server_pids))
t1=$(date +%s%N)
b1=$(busy_ticks)
echo "{\"busy_ticks\":$((b1 - b0)),\"ours_ticks\":$((ours1 - ours0)),\"wall_ns\":$((t1 - t0)),\"hz\":$(getconf CLK_TCK),\"cores\":$(nproc)}" >"$OUT/seq-cpu.json"

# ---------------------------------------------------------------------------
# 3. Throughput
# ---------------------------------------------------------------------------

wrk_args() { # NAME: the headers and URL of one target for wrk
	node -e '
const [file, name] = process.argv.slice(1);
const t = JSON.parse(require("fs").readFileSync(file)).targets.find((x) => x.name === name);
for (const [k, v] of Object.entries(t.headers)) console.log("-H\n" + k + ": " + v);
console.log(t.url);' "$TARGETS" "$1"
}

declare -A WRK_ARGS
for n in $NAMES; do
	WRK_ARGS[$n]=$(wrk_args "$n")
done

say "3/7 throughput: concurrency $CONC, ${DUR}s each, $REPEAT round(s)"
export BENCH_BODY_FILE=$OUT/body.json
for ((rep = 1; rep <= REPEAT; rep++)); do
	for c in $CONC; do
		for n in $NAMES; do
			mapfile -t args <<<"${WRK_ARGS[$n]}"
			th=2
			[ "$c" -lt 2 ] && th=1
			sleep "$SETTLE_S"
			b0=$(busy_ticks)
			d0=$(ticks_of "$ORGW_DOUBLE_PID")
			o0=$(ticks_of $(server_pids))
			t0=$(date +%s%N)
			run_wrk "$DUR" -t "$th" -c "$c" -d "${DUR}s" --timeout 10s \
				-s bench/post.lua "${args[@]}" >"$OUT/wrk.line"
			line=$(cat "$OUT/wrk.line")
			t1=$(date +%s%N)
			o1=$(ticks_of $(server_pids))
			d1=$(ticks_of "$ORGW_DOUBLE_PID")
			b1=$(busy_ticks)
			[ -n "$line" ] || line='{"requests":0,"req_per_s":0,"failed":true}'
			printf '{"rep":%d,"conc":%d,"target":"%s","double_ticks":%d,"ours_ticks":%d,"wrk_ticks":%d,"busy_ticks":%d,"wall_ns":%d,"hz":%d,"cores":%d,"wrk":%s}\n' \
				"$rep" "$c" "$n" $((d1 - d0)) $((o1 - o0)) "$WRK_TICKS" \
				$((b1 - b0)) $((t1 - t0)) "$(getconf CLK_TCK)" "$(nproc)" \
				"$line" >>"$OUT/wrk.jsonl"
			say "   c=$c $n: $(sed -n 's/.*"req_per_s":\([0-9.]*\).*/\1/p' <<<"$line") req/s"
		done
	done
done
# orgw on Redis is in phases 2 and 3 only.
if [ "$REDIS" = 1 ]; then
	cp "$ORGW_T/orgw2.log" "$OUT/orgw-redis.log" 2>/dev/null
	orgw_redis_cli dbsize >"$OUT/redis-dbsize.txt" 2>&1
	meta redis_port "$ORGW_REDIS_PORT"
	bench_redis_stop
fi

# 3b. The same state after 30 days: orgw's state gets 30 days of history
# for one model, three providers and three APIs (bench/agestate.mjs), and
# the bare proxy and orgw are measured again at 64 connections, alternated.
# What a request costs must not grow with the state's age.
AGED_C=64
[ "$QUICK" = 1 ] && AGED_C=4
say "3b/7 a state with 30 days of history: c=$AGED_C, ${DUR}s each, $REPEAT round(s)"
node bench/agestate.mjs ledger "$MODEL" >"$OUT/aged-state.jsonl" || die "agestate"
env -i PATH="$PATH" "$ORGW_ROOT/scheduler/orgw-score" --config "$ORGW_CONFIG_FILE" \
	--load <"$OUT/aged-state.jsonl" >>"$OUT/aged-load.log" 2>&1 || die "loading the 30-day state"
for ((rep = 1; rep <= REPEAT; rep++)); do
	for n in proxy orgw; do
		mapfile -t args <<<"${WRK_ARGS[$n]}"
		sleep "$SETTLE_S"
		run_wrk "$DUR" -t 2 -c "$AGED_C" -d "${DUR}s" --timeout 10s \
			-s bench/post.lua "${args[@]}" >"$OUT/wrk.line"
		line=$(cat "$OUT/wrk.line")
		[ -n "$line" ] || line='{"requests":0,"req_per_s":0,"failed":true}'
		printf '{"rep":%d,"conc":%d,"target":"%s","wrk":%s}\n' "$rep" "$AGED_C" \
			"$n" "$line" >>"$OUT/wrk-aged.jsonl"
		say "   c=$AGED_C $n: $(sed -n 's/.*"req_per_s":\([0-9.]*\).*/\1/p' <<<"$line") req/s"
	done
done

# ---------------------------------------------------------------------------
# 4. Streaming
# ---------------------------------------------------------------------------

read -r STR STP <<<"$STREAM_ROUNDS"
say "4/7 streaming: 20 chunks ${SPACING_MS} ms apart, $STR rounds of $STP"
double_ctl POST config "{\"chunks\":20,\"spacing_ms\":$SPACING_MS}" >/dev/null ||
	die "double config"
node bench/stream.mjs --mode spacing --targets "$TARGETS" --only "${NAMES45// /,}" --rounds "$STR" \
	--per_round "$STP" --spacing_ms "$SPACING_MS" >"$OUT/stream.json" ||
	die "streaming run failed"
# The three generation APIs (chat, Messages, Responses) through the bare
# proxy and orgw: added latency and first token, alternated.
double_ctl POST config '{"chunks":3,"spacing_ms":0}' >/dev/null || die "double config"
read -r AW AR AP <<<"$APIS_SEQ"
say "   the three APIs: $AW warm-up, $AR rounds of $AP, streamed and not"
node bench/apis.mjs --targets "$TARGETS" --only proxy,orgw --warmup "$AW" \
	--rounds "$AR" --per_round "$AP" >"$OUT/apis.json" || die "the APIs run failed"

# ---------------------------------------------------------------------------
# 5. Memory
# ---------------------------------------------------------------------------

say "5/7 memory: idle, then $HOLD concurrent slow streams per gateway"
# A threaded build holds the streams with its WORKER_THREADS
# (80) threads a worker, one of the host's kept free: enough workers for
# HOLD + 1 threads; a build of one request per process needs HOLD.
HOLD_WORKERS=$HOLD
long_threaded && HOLD_WORKERS=$(((HOLD + 80) / 80))
meta hold_workers "$HOLD_WORKERS"
if [ "$WORKERS" -lt "$HOLD_WORKERS" ]; then
	# Before the idle figures every fresh worker (thread) serves a
	# request: $HOLD short streams at once hold them all, whichever
	# order the kernel hands connections out in.
	say "restarting orgw with $HOLD_WORKERS workers for the streams"
	ORGW_WORKERS=$HOLD_WORKERS orgw_restart_workers ||
		die "restart with $HOLD_WORKERS workers"
	double_ctl POST config '{"chunks":4,"spacing_ms":500}' >/dev/null ||
		die "double config"
	node bench/stream.mjs --mode hold --targets "$TARGETS" --only orgw \
		--n "$HOLD" --timeout_ms 60000 >/dev/null || die "warm-up"
fi
for n in $NAMES45; do
	[ "$n" = direct ] || mem_gateway idle "$n"
done
# The floor: a process that only links and initialises libcurl.
# shellcheck disable=SC2046
if cc -O2 -o "$OUT/curlfloor" bench/curlfloor.c $(pkg-config --libs libcurl) \
	2>"$OUT/curlfloor.log"; then
	"$OUT/curlfloor" &
	fp=$!
	sleep 0.3
	mem_sample idle curl-floor "$fp"
	kill "$fp" 2>/dev/null
	wait "$fp" 2>/dev/null
else
	say "could not build bench/curlfloor.c (see $OUT/curlfloor.log)"
fi
# Slow streams: 40 chunks 250 ms apart (10 s each), sampled once all
# $HOLD have their first token.
double_ctl POST config '{"chunks":40,"spacing_ms":250}' >/dev/null || die "double config"
[ "$QUICK" = 1 ] && double_ctl POST config '{"chunks":8,"spacing_ms":150}' >/dev/null
for n in $NAMES45; do
	[ "$n" = direct ] && continue
	rm -f "$OUT/ready"
	node bench/stream.mjs --mode hold --targets "$TARGETS" --only "$n" \
		--n "$HOLD" --ready "$OUT/ready" --timeout_ms 60000 \
		>"$OUT/hold-$n.json" &
	hp=$!
	for ((i = 0; i < 600; i++)); do
		[ -s "$OUT/ready" ] && break
		orgw__alive "$hp" || break
		sleep 0.1
	done
	sleep 0.5
	mem_gateway hold "$n"
	wait "$hp" || say "hold run for $n failed"
done
double_ctl POST config "{\"chunks\":3,\"spacing_ms\":0}" >/dev/null
sleep 1
mem_gateway after orgw

# ---------------------------------------------------------------------------
# 6. Time in the state lock
# ---------------------------------------------------------------------------

say "6/7 state-lock hold time (ORGW_TRACE_LOCK build)"
RELEASE_BIN=$ORGW_FCGI_BIN
ORGW_FCGI_BIN=build/locktrace/orgw.fcgi
ORGW_WORKERS=$WORKERS orgw_restart_workers
mark=$(wc -l <"$ORGW_LOG")
node bench/seq.mjs --targets "$TARGETS" --only orgw --warmup 5 --rounds 4 \
	--per_round 50 >"$OUT/trace-seq.json" || die "lock-trace sequential run"
tail -n +$((mark + 1)) "$ORGW_LOG" >"$OUT/trace-seq.log"
mark=$(wc -l <"$ORGW_LOG")
mapfile -t args <<<"${WRK_ARGS[orgw]}"
t0=$(date +%s%N)
run_wrk "$TRACE_S" -t 2 -c 64 -d "${TRACE_S}s" --timeout 10s \
	-s bench/post.lua "${args[@]}" >"$OUT/trace-wrk.json"
t1=$(date +%s%N)
sleep 0.5
tail -n +$((mark + 1)) "$ORGW_LOG" >"$OUT/trace-load.log"
echo "{\"wall_ns\":$((t1 - t0))}" >"$OUT/trace-load-wall.json"

ORGW_FCGI_BIN=$RELEASE_BIN
if [ "$LONG" = 1 ]; then
	long_phase
fi
# Before 7b: bench/callgrind.sh's own stack takes this one's directory
# down when it stops.
[ "$TEAM" = 1 ] && team_phase

# 7b. Instructions per request (callgrind: the same on a busy machine as
# on an idle one): the bare proxy's lighttpd, and one orgw worker on a
# fresh state and on the 30-day state of phase 3b (bench/callgrind.sh).
if [ "${BENCH_CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null; then
	CG_N=200 CG_WARM=20
	[ "$QUICK" = 1 ] && CG_N=10 CG_WARM=3
	say "7b: instructions per request under callgrind ($CG_N requests each)"
	# Its own stack: without ORGW_T, tests/lib.sh would stop (and remove)
	# this run's.
	env -u ORGW_T CG_N=$CG_N CG_WARM=$CG_WARM CG_MODEL=$MODEL bash bench/callgrind.sh proxy=lighttpd \
		orgw="$RELEASE_BIN" orgw-30d="$RELEASE_BIN@$OUT/aged-state.jsonl" \
		>"$OUT/callgrind.txt" 2>"$OUT/callgrind.log" ||
		say "   callgrind run failed (see $OUT/callgrind.log)"
	sed 's/^/   /' "$OUT/callgrind.txt" >&2
else
	say "7b: valgrind missing (ORGW_DEPS_BENCH=1 sh deploy/install-deps.sh): instructions per request left out"
fi

meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------
# 8. Report and chart
# ---------------------------------------------------------------------------

cp "$ORGW_LOG" "$OUT/orgw.log" 2>/dev/null
node bench/report.mjs --out "$OUT" --results "$RESULTS" --chart "$CHART" ||
	die "report failed"
chart_abs=$(cd "$(dirname "$CHART")" && pwd)/$(basename "$CHART")
(cd "$OUT" && gnuplot -e "chart='$chart_abs'" "$ORGW_ROOT/bench/chart.gp") ||
	die "gnuplot failed"
say "wrote $RESULTS and $CHART"
