#!/bin/bash
# t0320-score-parallel: orgw-score fetches many models' endpoints in
# parallel (libcurl multi), bounded, each fetch with its own timeout.
# 50 models with a 200 ms endpoints delay finish in well under the serial
# 50 x 200 ms (the ratio is printed); the double never sees more fetches
# at once than --parallel allows; a model that times out fails alone.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

orgw_start

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# max_inflight PREFIX: the most endpoints fetches for models under PREFIX
# that the double had open at one moment (from its request log).
max_inflight() {
	json_get "$(double_ctl GET "log?path=$1")" '(() => {
	  const ev = [];
	  for (const r of j.requests) {
	    if (!r.path.endsWith("/endpoints")) continue;
	    ev.push([r.t_ms, 1], [r.finished_at_ms ?? r.closed_at_ms ?? Infinity, -1]);
	  }
	  ev.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
	  let cur = 0, max = 0;
	  for (const [, d] of ev) { cur += d; if (cur > max) max = cur; }
	  return max; })()'
}

# --- 50 models, 200 ms each, default parallelism (8) ----------------------
double_ctl POST config '{"endpoints_delay_ms":200}' >/dev/null
args=()
for i in $(seq -w 1 50); do
	args+=(--model "par/model-$i")
done
t0=$(now_ms)
"$SCORER" --config "$ORGW_CONFIG_FILE" --json "${args[@]}" >"$ORGW_T/p.json" 2>"$ORGW_T/p.err"
rc=$?
wall=$(($(now_ms) - t0))
serial=$((50 * 200))
ratio=$(awk -v w="$wall" -v s="$serial" 'BEGIN { printf "%.3f", w / s }')
echo "# 50 models x 200 ms endpoints delay, --parallel 8 (default): wall $wall ms," \
	"serial would be $serial ms: ratio $ratio (ideal 7 waves: 0.140)"
echo "# reproduce: tests/integration/t0320-score-parallel.sh, or against a double with" \
	"endpoints_delay_ms 200: time scheduler/orgw-score --config CONF --model par/model-01 ... --model par/model-50"
t_eq "all 50 scored (exit 0)" "0 50 0" \
	"$rc $(json_get "$ORGW_T/p.json" 'j.models_scored') $(json_get "$ORGW_T/p.json" 'j.models_failed')"
t_check "wall time well under serial: ratio $ratio < 0.5" \
	awk -v r="$ratio" 'BEGIN { exit !(r < 0.5) }'
t_check "the run's own wall_ms agrees (< 5000 ms)" json_ok "$ORGW_T/p.json" 'j.wall_ms < 5000'
peak=$(max_inflight par/)
echo "# most endpoints fetches open at once on the double: $peak"
t_check "fetches really overlapped (peak $peak >= 2)" test "$peak" -ge 2
t_check "never more than 8 at once (peak $peak)" test "$peak" -le 8
t_check "each fetch_ms counts its own transfer, not the queue (all < 2000)" json_ok \
	"$ORGW_T/p.json" 'Object.values(j.models).every(m => m.fetch_ms >= 150 && m.fetch_ms < 2000)'
t_eq "the double got exactly 50 endpoints fetches" 50 \
	"$(json_get "$(double_ctl GET 'log?path=par/')" 'j.requests.filter(r => r.path.endsWith("/endpoints")).length')"
orgw_http GET /stats
t_eq "GET /stats has candidates for all 50" 50 \
	"$(json_get "$HTTP_BODY" 'Object.keys(j.models).filter(m => m.startsWith("par/") && j.models[m].candidates && j.models[m].candidates[0].tag === "alpha").length')"

# --- --parallel 3 bounds it to 3 -----------------------------------------
args=()
for i in $(seq -w 1 12); do
	args+=(--model "three/model-$i")
done
t0=$(now_ms)
"$SCORER" --config "$ORGW_CONFIG_FILE" --dry-run --parallel 3 "${args[@]}" >"$ORGW_T/p3.txt" 2>&1
rc=$?
wall=$(($(now_ms) - t0))
peak=$(max_inflight three/)
echo "# 12 models, --parallel 3: wall $wall ms (4 waves of 200 ms), peak $peak at once"
t_eq "--parallel 3: all 12 scored" 0 "$rc"
t_check "--parallel 3: never more than 3 at once (peak $peak)" test "$peak" -le 3 -a "$peak" -ge 2
t_check "--parallel 3: 4 waves take at least 800 ms (took $wall)" test "$wall" -ge 780

# --- a model that times out fails alone ------------------------------------
double_ctl POST config '{"endpoints_delay_ms":0}' >/dev/null
double_ctl PUT endpoints/slow/one '{"delay_ms":5000}' >/dev/null
t0=$(now_ms)
"$SCORER" --config "$ORGW_CONFIG_FILE" --json --timeout-ms 700 \
	--model slow/one --model quick/one --model quick/two >"$ORGW_T/t.json" 2>"$ORGW_T/t.err"
rc=$?
wall=$(($(now_ms) - t0))
t_eq "a timed-out model makes the exit status 1" 1 "$rc"
t_match "its error says timeout" 'timeout after [0-9]+ ms' \
	"$(json_get "$ORGW_T/t.json" "j.models['slow/one'].error")"
t_eq "the other models are scored anyway" "alpha alpha" \
	"$(json_get "$ORGW_T/t.json" "j.models['quick/one'].winner + ' ' + j.models['quick/two'].winner")"
t_check "the run waited for the timeout, not for the 5 s answer (took $wall ms)" \
	test "$wall" -lt 3000
