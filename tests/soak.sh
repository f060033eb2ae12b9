#!/bin/bash
# tests/soak.sh - `make soak`: orgw under load, upstream faults, a scorer
# running all the time and workers being killed.  Bounded:
# SOAK_SECONDS of load (default 60), then at most SOAK_TIMEOUT_MS for the
# last requests to end; loopback only (lighttpd, the workers and the
# OpenRouter double all listen on 127.0.0.1 or a socket in a temp dir).
#
# What runs:
#   - the stack of tests/lib.sh (lighttpd -> spawn-fcgi + multiwatch ->
#     SOAK_WORKERS orgw.fcgi workers -> the OpenRouter double);
#   - the double draws a fault for every chat request (random_faults):
#     10% 429 (no Retry-After), 5% 503, 2% TCP reset before headers,
#     1% cut after the first content chunk, 2% slow first byte (1.5 s,
#     above SLOW_THRESHOLD_MS); RETRY_429_DELAYS=1,1,1 keeps 429 waits short;
#   - tests/soak/driver.mjs: SOAK_CLIENTS (64) clients through the OpenAI
#     SDK, half of them streaming, over three models; kills one worker with
#     SIGKILL every 10 s (multiwatch restarts it); runs orgw-score every 5 s.
#
# Report (stdout, "# " lines, and $SOAK_REPORT when set): requests sent, ok,
# failed with a well-formed OpenAI error, broken (split into those in a
# killed worker and the rest), hung; kills and worker restarts; scorer runs;
# /stats totals against the requests that completed; the state file
# checked with gdbmtool.
#
# Assertions ("ok -"/"not ok -" lines, counted by tests/run.sh when this runs
# as tests/integration/t0700-soak-short.sh): 0 broken outside the killed
# workers, 0 hung, at most WORKER_THREADS broken requests per kill, every worker slot
# restarted, no sanitizer report or crash in the worker log, no unexpected
# worker exit, the state file readable and every value JSON, /stats
# requests equal to the requests that completed (up to the requests caught
# by a kill, which may or may not have been counted; see below), no
# "not counted" warning.
#
# Knobs: SOAK_MODE (faults: this soak; long: tests/soak-long.sh),
# SOAK_SECONDS (60), SOAK_CLIENTS (64), SOAK_WORKERS (8),
# SOAK_STREAM_RATIO (0.5), SOAK_KILL_EVERY_MS (10000; 0 = no kills),
# SOAK_SCORE_EVERY_MS (5000; 0 = no scorer), SOAK_SEED (0 = random),
# SOAK_TIMEOUT_MS (30000, the client timeout: longer is "hung"),
# SOAK_REPORT (copy the JSON report there), ORGW_FCGI_BIN and ORGW_SCORE_BIN
# (e.g. build/asan/orgw.fcgi, build/asan/orgw-score), ORGW_KEEP=1.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"	# `make soak` runs `sh tests/soak.sh`; lib.sh is bash
fi
# SOAK_MODE=long: the long-stream soak instead (tests/soak-long.sh:
# mixed streams of seconds to minutes for SOAK_MINUTES, a worker killed every
# 2 minutes, PSS slope, /stats exact apart from the killed requests).
if [ "${SOAK_MODE:-faults}" = long ]; then
	exec bash "$(dirname "$0")/soak-long.sh" "$@"
fi
# SOAK_MODE=attacks: normal traffic beside clients that never read, invented
# model ids and key guessing (tests/soak-attacks.sh; SOAK_SECONDS default
# 600 there).
if [ "${SOAK_MODE:-faults}" = attacks ]; then
	exec bash "$(dirname "$0")/soak-attacks.sh" "$@"
fi
. "$(dirname "$0")/lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

SOAK_SECONDS=${SOAK_SECONDS:-60}
SOAK_CLIENTS=${SOAK_CLIENTS:-64}
SOAK_TIMEOUT_MS=${SOAK_TIMEOUT_MS:-30000}
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
export ORGW_WORKERS=${SOAK_WORKERS:-8}

for v in SOAK_SECONDS SOAK_CLIENTS SOAK_TIMEOUT_MS ORGW_WORKERS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || { echo "soak: $v must be a positive integer" >&2; exit 2; }
done
[ "$SOAK_SECONDS" -le 3600 ] || { echo "soak: SOAK_SECONDS is at most 3600" >&2; exit 2; }

orgw_start RETRY_429_DELAYS=1,1,1 UPSTREAM_TIMEOUT_MS=10000 \
	SLOW_THRESHOLD_MS=1000 FAIL_LIMIT=3 COOLDOWN_SECONDS=15 MAX_ATTEMPTS=4

double_ctl POST config '{"chunks":5,"spacing_ms":5,"random_faults":[
 {"kind":"status","status":429,"p":0.10},
 {"kind":"status","status":503,"p":0.05},
 {"kind":"reset","p":0.02},
 {"kind":"cut_after","chunks":1,"p":0.01},
 {"kind":"slow_first_byte","ms":1500,"p":0.02}]}' >/dev/null ||
	t_fail "the double took the random_faults config"

REPORT=$ORGW_T/soak-report.json
echo "# soak: ${SOAK_SECONDS}s, $SOAK_CLIENTS clients, $ORGW_WORKERS workers, $(basename "${ORGW_FCGI_BIN:-orgw.fcgi}")"
node "$ORGW_ROOT/tests/soak/driver.mjs" --base "$ORGW_URL/v1" --key "$ORGW_KEY" \
	--out "$REPORT" --seconds "$SOAK_SECONDS" --clients "$SOAK_CLIENTS" \
	--stream-ratio "${SOAK_STREAM_RATIO:-0.5}" --timeout-ms "$SOAK_TIMEOUT_MS" \
	--seed "${SOAK_SEED:-0}" \
	--supervisor "$(orgw_supervisor_pid)" --kill-every-ms "${SOAK_KILL_EVERY_MS:-10000}" \
	--scorer "$SCORER" --scorer-config "$ORGW_CONFIG_FILE" \
	--scorer-log "$ORGW_T/scorer.log" --score-every-ms "${SOAK_SCORE_EVERY_MS:-5000}" \
	--double "$DOUBLE_URL" --workers-file "$ORGW_STATE.workers"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$REPORT" ]; then
	t_fail "the load driver ran (exit $rc)"
	exit 1
fi
[ -n "${SOAK_REPORT:-}" ] && cp "$REPORT" "$SOAK_REPORT"
r() { json_get "$REPORT" "$1"; }

# /stats after the load: every model's requests and ok, summed.
orgw_http GET /stats
STATS=$ORGW_T/stats.json
cp "$HTTP_BODY_FILE" "$STATS"
st_req=$(json_get "$STATS" 'Object.values(j.models).reduce((a, m) => a + (m.requests || 0), 0)')
st_ok=$(json_get "$STATS" 'Object.values(j.models).reduce((a, m) => a + (m.ok || 0), 0)')
st_fo=$(json_get "$STATS" 'Object.values(j.models).reduce((a, m) => a + (m.failovers || 0), 0)')
st_tr=$(json_get "$STATS" 'Object.values(j.models).reduce((a, m) => a + (m.breaker_trips || 0), 0)')
st_429=$(json_get "$STATS" 'Object.values(j.models).reduce((a, m) => a + (m.retries_429 || 0), 0)')

sent=$(r j.sent)
ok_n=$(r j.ok)
err_n=$(r j.error)
hung=$(r j.hung)
broken=$(r j.broken)
bk=$(r j.broken_killed)
bo=$(r j.broken_other)
bu=$(r j.broken_unsent)
kills=$(r j.kills_done)
completed=$((sent - broken))

gdbm_count=$(gdbmtool -r "$ORGW_STATE" count 2>&1)
gdbm_rc=$?
not_json=$(state_not_json)
sanitizer=$(grep -cE 'runtime error|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|SEGV|Segmentation|core dumped|stack-overflow' \
	"$ORGW_LOG" "$ORGW_T/scorer.log" 2>/dev/null | awk -F: '{s += $NF} END {print s + 0}')
not_counted=$(grep -c 'request not counted' "$ORGW_LOG")
repairs=$(grep -cE 'recovered|moved to|recovery failed|restoring the last whole state' "$ORGW_LOG")
dbl_total=$(json_get "$(double_ctl GET stats)" 'j.total')
dbl_faults=$(json_get "$(double_ctl GET stats)" 'JSON.stringify(j.faults)')

cat <<EOF
# ---- soak report ----
# requests sent:            $sent ($(r j.stream) streaming, $(r j.non_stream) not)
# succeeded:                $ok_n
# failed, well-formed error: $err_n  by status: $(r 'JSON.stringify(j.errors_by_status)')
# broken in killed workers: $bk (kills: $kills)
# broken before orgw:       $bu (connection closed by the web server, request never reached orgw or upstream)
# broken otherwise:         $bo
# hung:                     $hung
# latency ms:               $(r 'JSON.stringify(j.latency_ms)')
# workers:                  $ORGW_WORKERS expected, min seen $(r j.workers_min_seen), at end $(r j.workers_at_end), restarted in ms $(r 'JSON.stringify(j.kills.map(k => k.restored_ms))')
# unexpected worker exits:  $(r 'j.unexpected_worker_exits.length')
# scorer runs:              $(r 'j.scorer_runs.length') (exit codes $(r 'JSON.stringify([...new Set(j.scorer_runs.map(s => s.exit))])'), max $(r 'Math.max(0, ...j.scorer_runs.map(s => Math.round(s.ms)))') ms)
# upstream attempts:        $dbl_total, faults drawn $dbl_faults
# /stats:                   requests $st_req, ok $st_ok, retries_429 $st_429, failovers $st_fo, breaker_trips $st_tr
# completed (sent-broken):  $completed
# state file:               gdbmtool count: $gdbm_count (rc $gdbm_rc); values not JSON: $not_json; repairs logged: $repairs
# sanitizer/crash lines:    $sanitizer; 'not counted' warnings: $not_counted
EOF
if [ "$bo" -gt 0 ] || [ "$bk" -gt 0 ]; then
	echo "# broken samples:"
	r 'j.broken_samples.map(b => JSON.stringify(b)).join("\n")' | sed -e 's/^/#   /'
	echo
fi
if [ "$hung" -gt 0 ]; then
	r 'j.hung_samples.map(b => JSON.stringify(b)).join("\n")' | sed -e 's/^/#   /'
	echo
fi

t_check "requests were sent and most succeeded" test "$sent" -gt 0 -a "$ok_n" -gt $((sent / 2))
t_eq "no broken answer outside the killed workers" 0 "$bo"
# A request the web server dropped before it reached orgw (the keep-alive
# race: lighttpd closes a connection idle past server.max-keep-alive-idle
# just as the client reuses it) is outside orgw; it is reported, and the
# /stats check below proves orgw never saw it.  Seen only with the ASan
# build under heavy load (after a multi-second stall of every worker).
if [ "$bu" -gt 0 ]; then
	echo "# note: $bu request(s) dropped by the web server before reaching orgw"
fi
t_eq "no hung request" 0 "$hung"
# A kill breaks every request of the worker's threads (80 by default).
t_check "at most WORKER_THREADS broken requests per kill ($bk <= $kills x 80)" test "$bk" -le $((kills * 80))
t_eq "every request accounted for" "$sent" "$((ok_n + err_n + hung + broken))"
t_check "every killed worker came back" \
	json_ok "$REPORT" 'j.kills.every(k => !k.pid || k.restored_ms !== null) && j.workers_at_end === j.workers_expected'
t_eq "no worker died except those killed" 0 "$(r 'j.unexpected_worker_exits.length')"
t_eq "no sanitizer report or crash in the logs" 0 "$sanitizer"
t_check "every scorer run exited 0 or 1" json_ok "$REPORT" 'j.scorer_runs.every(s => s.exit === 0 || s.exit === 1)'
t_eq "the state file is readable (gdbmtool count)" 0 "$gdbm_rc"
t_eq "every state value is a JSON object" 0 "$not_json"
t_eq "no request left uncounted for want of the state lock" 0 "$not_counted"
# A request caught by a kill was counted when the worker died after its
# stats transaction (the answer was complete but lighttpd never saw the
# request end) and not counted when it died before; and a kill that lands
# between the last byte of an answer and the stats transaction (orgw ends
# the response first, then waits for the state lock to count it) loses
# the count of a request the client saw succeed.  Those are among the
# requests the killed worker was serving, which the driver reads from the
# host's worker table just before each kill (serving_killed; on a loaded
# machine a worker can have several answers sent and waiting for the
# lock).  So /stats must lie in [completed - serving_killed, completed +
# broken_killed]; both ends are reported, and any other difference is a
# lost or doubled count.
serving=$(r j.serving_killed)
case $serving in
''|null|*[!0-9]*) t_fail "the driver read the killed workers' slots (serving_killed $serving)"; serving=0 ;;
esac
lo=$((completed - serving))
hi=$((completed + bk))
echo "# /stats requests $st_req; allowed [$lo, $hi] (the kills caught $serving requests in flight, $bk of them broken)"
t_check "/stats requests ($st_req) = completed ($completed), give or take the requests a kill caught" \
	test "$st_req" -ge "$lo" -a "$st_req" -le "$hi"
t_check "/stats ok ($st_ok) >= client-seen ok ($ok_n) minus the requests the kills caught" test "$st_ok" -ge $((ok_n - serving))
