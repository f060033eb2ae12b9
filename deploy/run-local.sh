#!/bin/sh
# shellcheck shell=bash # re-executes itself under bash (below)
# run-local.sh - `make run`: orgw on http://127.0.0.1:8080 for trying it out.
#
# The same stack as the tests and the shipped deployment: spawn-fcgi +
# multiwatch workers (cgi-bin/orgw.fcgi) behind lighttpd with
# deploy/lighttpd.conf.  Everything lives in ./run/: state.gdbm, orgw.sock,
# orgw.conf (mode 600, it holds the keys), lighttpd.conf, the logs, and
# client-key.  It stays in the foreground; Ctrl-C stops what it started.
#
#   OPENROUTER_API_KEY   your OpenRouter key (or OPENROUTER_API_KEY_FILE).
#                        Unset or empty: the bundled OpenRouter double
#                        (tests/double) is started and used instead.
#   CUSTOM_ACCESS_KEY    the key clients send.  Unset: a random one, kept in
#                        run/client-key so it stays the same across runs.
#   KEYS_SECRET          the team keys' HMAC secret (or KEYS_SECRET_FILE).
#                        Unset: a random one, kept in run/keys-secret, so
#                        `orgw-score --config run/orgw.conf key add NAME`
#                        works at once and its keys last across runs.
#   ORGW_PORT            listening port (default 8080)
#   ORGW_WORKERS         FastCGI worker processes (default 4), each with
#                        WORKER_THREADS threads (default 80): 319 streams
#   any other setting of orgw.conf(5) (TARGET_MODEL, HIT_RATE, ...) set in the
#   environment is written to run/orgw.conf as well.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi
set -u

cd "$(dirname "$0")/.." || exit 1
# shellcheck source=../tests/lib.sh
. tests/lib.sh

RUN=$ORGW_ROOT/run
PORT=${ORGW_PORT:-8080}
SETTINGS="UPSTREAM_URL STATE_PATH TARGET_MODEL HIT_RATE CACHE_BONUS MIN_UPTIME
SLOW_THRESHOLD_MS UPSTREAM_TIMEOUT_MS REQUEST_TIMEOUT_MS CLIENT_SEND_TIMEOUT_MS
FAIL_LIMIT COOLDOWN_SECONDS
LOCK_IDLE_SECONDS RETRY_429_DELAYS MAX_ATTEMPTS MAX_BODY_BYTES STATE_MODE
MAX_JSON_NODES MAX_ANSWER_BYTES HOST_PARSE_MEMORY_BYTES
MAX_MODELS CRON_MIN_INTERVAL_SECONDS
HIT_RATE_HALF_LIFE_TOKENS HIT_RATE_EVIDENCE_TOKENS LOCK_MARGIN
WORKER_THREADS WORKER_MAX_REQUESTS WORKER_MAX_AGE_SECONDS UPSTREAM_CA_FILE
STATE_BACKEND REDIS_URL REDIS_PASSWORD REDIS_PASSWORD_FILE
OPENROUTER_API_KEY_FILE CUSTOM_ACCESS_KEY_FILE METRICS_KEY METRICS_KEY_FILE
KEYS_PATH"

die() {
	printf 'run-local: %s\n' "$*" >&2
	exit 1
}

# Hundreds of streams: two descriptors each in a worker, two in lighttpd.
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

mkdir -p "$RUN" || die "cannot create $RUN"
chmod 700 "$RUN"

if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
	die "something already listens on 127.0.0.1:$PORT (set ORGW_PORT)"
fi

stopping=
# shellcheck disable=SC2317 # called from the traps
stop_all() {
	[ -n "$stopping" ] && return
	stopping=1
	printf '\nrun-local: stopping\n' >&2
	[ -n "${ORGW_LIGHTTPD_PID:-}" ] && orgw__kill "$ORGW_LIGHTTPD_PID"
	orgw__workers_stop
	[ -n "${ORGW_DOUBLE_PID:-}" ] && orgw__kill "$ORGW_DOUBLE_PID"
	ORGW_LIGHTTPD_PID='' ORGW_DOUBLE_PID=''
}
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

# shellcheck disable=SC2034 # read by the orgw__conf_* functions of lib.sh
ORGW__CONF_KEYS=()
# shellcheck disable=SC2034
ORGW__CONF=()

# The client key.
if [ -n "${CUSTOM_ACCESS_KEY:-}" ]; then
	client_key=$CUSTOM_ACCESS_KEY
elif [ -n "${CUSTOM_ACCESS_KEY_FILE:-}" ]; then
	client_key=$(head -n 1 "$CUSTOM_ACCESS_KEY_FILE") || die "cannot read $CUSTOM_ACCESS_KEY_FILE"
else
	if [ ! -s "$RUN/client-key" ]; then
		(umask 077 && printf 'orgw-%s\n' "$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')" >"$RUN/client-key") ||
			die "cannot write $RUN/client-key"
	fi
	client_key=$(head -n 1 "$RUN/client-key")
fi
[ -n "${CUSTOM_ACCESS_KEY_FILE:-}" ] || orgw__conf_set CUSTOM_ACCESS_KEY="$client_key"

# The team keys' secret: changing it would invalidate every key made.
if [ -n "${KEYS_SECRET:-}" ]; then
	orgw__conf_set KEYS_SECRET="$KEYS_SECRET"
elif [ -n "${KEYS_SECRET_FILE:-}" ]; then
	orgw__conf_set KEYS_SECRET_FILE="$KEYS_SECRET_FILE"
else
	if [ ! -s "$RUN/keys-secret" ]; then
		(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$RUN/keys-secret" &&
			echo >>"$RUN/keys-secret") || die "cannot write $RUN/keys-secret"
	fi
	orgw__conf_set KEYS_SECRET_FILE="$RUN/keys-secret"
fi

# The upstream: the real OpenRouter, or the bundled double.
use_double=
if [ -n "${OPENROUTER_API_KEY:-}" ]; then
	orgw__conf_set OPENROUTER_API_KEY="$OPENROUTER_API_KEY"
elif [ -z "${OPENROUTER_API_KEY_FILE:-}" ]; then
	use_double=1
fi
orgw__conf_set STATE_PATH="$RUN/state.gdbm"
for name in $SETTINGS; do
	[ -n "${!name:-}" ] && orgw__conf_set "$name=${!name}"
done

if [ -n "$use_double" ]; then
	double_key=sk-or-v1-local-double
	orgw__double_start "$RUN" "$double_key" || {
		tail -n 20 "$RUN/double.log" >&2
		die "the OpenRouter double did not start"
	}
	orgw__conf_set OPENROUTER_API_KEY="$double_key" \
		UPSTREAM_URL="http://127.0.0.1:$ORGW_DOUBLE_PORT/api/v1"
	cat >&2 <<EOF
run-local: ************************************************************
run-local: OPENROUTER_API_KEY is not set: using the bundled OpenRouter
run-local: DOUBLE (tests/double) on http://127.0.0.1:$ORGW_DOUBLE_PORT, not
run-local: the real OpenRouter.  Answers are canned.  For the real thing:
run-local:   OPENROUTER_API_KEY=sk-or-v1-... make run
run-local: ************************************************************
EOF
fi

(umask 077 && orgw__conf_write "$RUN/orgw.conf") || die "cannot write $RUN/orgw.conf"

: >>"$RUN/orgw.log"
orgw__workers_start "$RUN/orgw.sock" "$RUN/orgw.conf" "$RUN/orgw.log" || {
	tail -n 20 "$RUN/orgw.log" >&2
	die "the FastCGI workers did not start"
}
orgw__lighttpd_start "$RUN" "$PORT" "$RUN/orgw.sock" || {
	tail -n 20 "$RUN/lighttpd.log" "$RUN/lighttpd.out" >&2 2>/dev/null
	die "lighttpd did not start on 127.0.0.1:$PORT"
}
orgw__wait_http "http://127.0.0.1:$PORT/healthz" 10 || die "no answer from /healthz"

health=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/healthz")
model=${TARGET_MODEL:-deepseek/deepseek-v3.2}
model=${model%%,*}
cat <<EOF

orgw is running.
  base URL    http://127.0.0.1:$PORT/v1
  client key  $client_key
  healthz     $health
  logs        $RUN/orgw.log (workers), $RUN/lighttpd.log
  state       $RUN/state.gdbm
  team keys   scheduler/orgw-score --config $RUN/orgw.conf key add NAME
              (prints the new key once; key --help for limits, list, ...)

Try:
  curl -sS http://127.0.0.1:$PORT/v1/chat/completions \\
    -H 'Authorization: Bearer $client_key' -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Say hello."}]}'

Ctrl-C stops it.
EOF

# Stay in the foreground until Ctrl-C or until a part dies.
pids=("$ORGW_LIGHTTPD_PID" "$ORGW_SUPERVISOR_PID")
[ -n "${ORGW_DOUBLE_PID:-}" ] && pids+=("$ORGW_DOUBLE_PID")
wait -n "${pids[@]}"
printf 'run-local: a process exited unexpectedly; see %s\n' "$RUN" >&2
exit 1
