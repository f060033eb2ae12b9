#!/bin/bash
# tests/soak-long.sh - the long-stream soak (`make soak
# SOAK_MODE=long`; tests/soak.sh hands over to this): mixed long requests
# for SOAK_MINUTES while a worker is killed with SIGKILL every ~2 minutes,
# and the memory of the workers over the whole run.  Loopback only; every
# request and the run are bounded (see below).
#
# What runs:
#   - the stack of tests/lib.sh (lighttpd -> spawn-fcgi + multiwatch ->
#     orgw.fcgi workers -> the OpenRouter double).  Pool: a build that knows
#     WORKER_THREADS runs SOAK_THREADS (64) threads per worker and
#     max(2, clients / threads + 1) workers; today's build (one request per
#     process) runs clients + 4 workers, so no request waits for a worker;
#   - tests/soak/long.mjs: SOAK_CLIENTS clients, each sending one request
#     after another: 70% streamed (keep-alive comments for up to 3 s, then a
#     token every 50-100 ms), the rest not (whitespace padding every 5 s,
#     then the body), lengths log-uniform from SOAK_LEN_MIN_S to
#     SOAK_LEN_MAX_S, SOAK_LEAVE_RATIO of them left early by their client;
#     every answer checked word by word against what the double sent for
#     that request; a random busy worker killed every SOAK_KILL_EVERY_MS
#     (never one younger than 11 s: multiwatch drops a slot whose child dies
#     young); the PSS of all workers summed every SOAK_SAMPLE_EVERY_MS.
#
# Report ("# " lines; the JSON in $SOAK_REPORT when set): requests by class,
# the kills and the requests each cut, PSS samples and the least-squares
# slope of PSS over time (KiB per minute; all samples, and after the first
# min(60 s, 20%) of warm-up), /stats against the client's counts.
#
# Assertions: no request hung (each ended within its length plus
# SOAK_MARGIN_MS), none answered wrongly, every broken request was in flight
# in a killed worker, every killed worker came back, no sanitizer report or
# crash in the log; /stats exact apart from the requests the kills cut:
# requests = ok + left + errors, ok + client_abort = ok + left (a client
# that leaves after orgw's last byte counts ok), each short by at most the
# requests a kill cut in those classes; when
# /stats has in_flight: 0 at the end.  With SOAK_MAX_SLOPE_KIB_MIN
# set, the slope after warm-up must be at most that.
#
# Knobs: SOAK_MINUTES (30) or SOAK_SECONDS, SOAK_CLIENTS (48), SOAK_WORKERS,
# SOAK_THREADS (64), SOAK_LEN_MIN_S (2), SOAK_LEN_MAX_S (120),
# SOAK_STREAM_RATIO (0.7), SOAK_LEAVE_RATIO (0.1), SOAK_MARGIN_MS (20000),
# SOAK_KILL_EVERY_MS (120000; 0 = no kills), SOAK_SAMPLE_EVERY_MS (10000),
# SOAK_SEED, SOAK_REPORT, SOAK_MAX_SLOPE_KIB_MIN, ORGW_FCGI_BIN, ORGW_KEEP=1.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

SOAK_MINUTES=${SOAK_MINUTES:-30}
SOAK_SECONDS=${SOAK_SECONDS:-$((SOAK_MINUTES * 60))}
SOAK_CLIENTS=${SOAK_CLIENTS:-48}
LEN_MIN=${SOAK_LEN_MIN_S:-2}
LEN_MAX=${SOAK_LEN_MAX_S:-120}
for v in SOAK_SECONDS SOAK_CLIENTS LEN_MIN LEN_MAX; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || { echo "soak: $v must be a positive integer" >&2; exit 2; }
done
[ "$SOAK_SECONDS" -le 7200 ] || { echo "soak: at most 120 minutes" >&2; exit 2; }
[ "$LEN_MIN" -le "$LEN_MAX" ] || { echo "soak: SOAK_LEN_MIN_S > SOAK_LEN_MAX_S" >&2; exit 2; }

bin=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
settings=()
if grep -aq WORKER_THREADS "$bin"; then
	threads=${SOAK_THREADS:-64}
	w=$((SOAK_CLIENTS / threads + 1))
	[ "$w" -lt 2 ] && w=2
	export ORGW_WORKERS=${SOAK_WORKERS:-$w}
	settings+=(WORKER_THREADS="$threads")
	pool="$ORGW_WORKERS workers x $threads threads"
else
	export ORGW_WORKERS=${SOAK_WORKERS:-$((SOAK_CLIENTS + 4))}
	pool="$ORGW_WORKERS workers, one request each"
fi

orgw_start "${settings[@]}"
# Non-streamed answers: headers and 8 bytes of whitespace at once, then
# more every keepalive interval (5 s, set per request) until the body.
double_ctl POST config '{"padding_bytes":8}' >/dev/null || t_fail "the double took the config"

REPORT=$ORGW_T/soak-long-report.json
echo "# soak (long streams): ${SOAK_SECONDS}s, $SOAK_CLIENTS clients, lengths ${LEN_MIN}-${LEN_MAX}s, $pool, $(basename "$bin")"
node "$ORGW_ROOT/tests/soak/long.mjs" --base "$ORGW_URL" --key "$ORGW_KEY" --out "$REPORT" \
	--double "$DOUBLE_URL" --supervisor "$(orgw_supervisor_pid)" \
	--seconds "$SOAK_SECONDS" --clients "$SOAK_CLIENTS" \
	--min-len-s "$LEN_MIN" --max-len-s "$LEN_MAX" \
	--stream-ratio "${SOAK_STREAM_RATIO:-0.7}" --leave-ratio "${SOAK_LEAVE_RATIO:-0.1}" \
	--margin-ms "${SOAK_MARGIN_MS:-20000}" --kill-every-ms "${SOAK_KILL_EVERY_MS:-120000}" \
	--sample-every-ms "${SOAK_SAMPLE_EVERY_MS:-10000}" --seed "${SOAK_SEED:-0}"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$REPORT" ]; then
	t_fail "the load driver ran (exit $rc)"
	exit 1
fi
[ -n "${SOAK_REPORT:-}" ] && cp "$REPORT" "$SOAK_REPORT"
r() { json_get "$REPORT" "$1"; }

orgw_http GET /stats
STATS=$ORGW_T/stats.json
cp "$HTTP_BODY_FILE" "$STATS"
sum() { json_get "$STATS" "Object.values(j.models).reduce((a, m) => a + ($1 || 0), 0)"; }
st_req=$(sum m.requests)
st_ok=$(sum m.ok)
st_abort=$(sum 'm.errors && m.errors.client_abort')
in_flight=$(json_get "$STATS" 'j.in_flight === undefined ? "absent" : j.in_flight')

sent=$(r j.sent)
ok_n=$(r j.ok)
left=$(r j.left)
err_n=$(r j.error)
kc() { r "j.killed_by_class['$1'] || 0"; }
k_ok=$(kc ok)
k_left=$(kc left)
k_all=$(r j.killed_requests)
sanitizer=$(grep -cE 'runtime error|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|SEGV|Segmentation|core dumped|stack-overflow' "$ORGW_LOG")

cat <<EOF
# ---- long-stream soak report ----
# requests sent:            $sent ($(r j.stream) streamed, $(r j.non_stream) not)
# ok (checked word by word): $ok_n (of which $(r j.ok_tail_cut) whole but cut after the last byte)
# left early by the client: $left
# well-formed errors:       $err_n $(r 'JSON.stringify(j.errors_by_status)')
# wrong answers:            $(r j.wrong)
# broken in killed workers: $(r j.broken_killed); otherwise: $(r j.broken_other)
# hung:                     $(r j.hung)
# end after the length ms:  $(r 'JSON.stringify(j.end_over_length_ms)')
# kills:                    $(r j.kills_done): $(r 'j.kills.map(k => `t=${Math.round(k.t / 1000)}s in flight ${k.in_flight}+${k.closed_after} back in ${k.restored_ms} ms`).join("; ")')
# requests the kills cut:   $k_all by class $(r 'JSON.stringify(j.killed_by_class)')
# workers:                  $(r j.workers_expected) expected, min seen $(r j.workers_min_seen), at end $(r j.workers_at_end); other exits $(r j.other_worker_exits)
# PSS of all workers KiB:   $(r 'j.pss_samples.map(s => s.pss_kb).join(" ")')
# PSS slope KiB/min:        all $(r j.pss_slope_kib_per_min); after $(r j.warmup_s) s of warm-up $(r j.pss_slope_after_warmup_kib_per_min)
# /stats:                   requests $st_req, ok $st_ok, client_abort $st_abort, in_flight $in_flight
# sanitizer/crash lines:    $sanitizer
EOF
bad=$(r 'j.broken_other_samples.concat(j.wrong_samples, j.hung_samples).map(b => JSON.stringify(b)).join("\n")')
[ -n "$bad" ] && printf '%s\n' "$bad" | sed -e 's/^/#   /'

t_check "requests were sent and most ended well" test "$sent" -gt 0 -a "$ok_n" -gt $((sent / 2))
t_eq "no request hung (each ended within its length + margin)" 0 "$(r j.hung)"
t_eq "no answer was wrong (every word the double sent for that request, in order)" 0 "$(r j.wrong)"
t_eq "no broken request outside the killed workers" 0 "$(r j.broken_other)"
t_eq "every request accounted for" "$sent" "$(r 'j.ok + j.wrong + j.error + j.left + j.broken + j.hung')"
t_check "every killed worker came back" \
	json_ok "$REPORT" 'j.kills.every(k => !k.pid || k.restored_ms !== null) && j.workers_at_end === j.workers_expected'
t_eq "no sanitizer report or crash in the log" 0 "$sanitizer"
kev=${SOAK_KILL_EVERY_MS:-120000}
if [ "$kev" -gt 0 ] && [ $((SOAK_SECONDS * 1000)) -gt "$kev" ]; then
	t_check "workers were killed ($(r j.kills_done))" test "$(r j.kills_done)" -ge 1
fi
# /stats: orgw counts a request when it ends; a kill loses the count of the
# requests it cut (those the client saw broken, and those whose answer was
# already whole: "ok" by the client).  So each counter is the client's
# figure, short by at most the requests a kill cut in that class.
# A broken request a kill cut after orgw counted it (its last bytes still
# in lighttpd) makes requests one more: allowed the same way.
exp_req=$((ok_n + left + err_n))
k_broken=$(kc broken)
t_check "/stats requests ($st_req) = ok + left + errors ($exp_req), give or take the $k_all requests the kills cut" \
	test "$st_req" -le $((exp_req + k_broken)) -a "$st_req" -ge $((exp_req - k_ok - k_left - $(kc error)))
# A client that leaves may still be counted ok: when it closes after orgw
# handed its last byte to lighttpd, orgw never learns of it.  So ok and
# client_abort split the left requests between them.
t_check "/stats ok ($st_ok) = client ok ($ok_n) plus left requests orgw finished, less the $k_ok whole answers a kill cut" \
	test "$st_ok" -le $((ok_n + left)) -a "$st_ok" -ge $((ok_n - k_ok))
t_check "/stats client_abort ($st_abort) at most the $left requests left early" test "$st_abort" -le "$left"
t_check "/stats ok + client_abort ($((st_ok + st_abort))) = ok + left ($((ok_n + left))), short by at most the $((k_ok + k_left)) a kill cut" \
	test $((st_ok + st_abort)) -le $((ok_n + left)) -a $((st_ok + st_abort)) -ge $((ok_n + left - k_ok - k_left))
if [ "$in_flight" = absent ]; then
	t_skip "/stats has no in_flight (a build before threaded workers)"
else
	t_eq "/stats in_flight is 0 at the end (no phantom request from a killed worker)" 0 "$in_flight"
fi
if [ -n "${SOAK_MAX_SLOPE_KIB_MIN:-}" ]; then
	t_check "PSS slope after warm-up at most $SOAK_MAX_SLOPE_KIB_MIN KiB/min" \
		json_ok "$REPORT" "j.pss_slope_after_warmup_kib_per_min !== null && j.pss_slope_after_warmup_kib_per_min <= $SOAK_MAX_SLOPE_KIB_MIN"
fi
