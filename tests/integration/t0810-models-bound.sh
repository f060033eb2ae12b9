#!/bin/bash
# t0810-models-bound: one client must not slow every other through the
# set of seen models, nor through scoring (docs/design.md section 4
# step 2; MAX_MODELS and CRON_MIN_INTERVAL_SECONDS in orgw.conf(5)):
#   1. an id OpenRouter does not know is forwarded unpinned, is not added
#      to the seen models, and is never fetched by the scorer;
#   2. a request's work under the state lock does not grow with the number
#      of models: an old MODELS_SEEN list of 200000 ids (75-99 ms per
#      request before) costs a request nothing;
#   3. the old MODELS_SEEN list is still read, and a scorer run migrates it
#      to one MODEL_SEEN:<model> key per model;
#   4. at most MAX_MODELS are kept: the scorer run drops the longest unused;
#   5. POST /__cron at most every CRON_MIN_INTERVAL_SECONDS (429 with
#      Retry-After), and one scoring run at a time, from /__cron or from
#      orgw-score.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start MAX_MODELS=3 CRON_MIN_INTERVAL_SECONDS=60
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
scorer() { # ARGS: runs orgw-score with the test config; status in RC
	"$SCORER" --config "$ORGW_CONFIG_FILE" "$@" >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
	RC=$?
}
keys() { # the state's keys with PREFIX, sorted, one line
	flock -s "$ORGW_STATE.lock" gdbmtool -r "$ORGW_STATE" list 2>/dev/null |
		awk '{print $1}' | grep "^$1" | sort | tr '\n' ' '
}
listed() { # the models a dry run would score, in order
	scorer --dry-run --json
	json_get "$ORGW_T/s.out" 'Object.keys(j.models).join(",")'
}

# 1. An unknown id.
ask missing/nope
echo "# unknown id: $ASK"
t_eq "an unknown id is forwarded unpinned" unpinned "$(http_header X-Orgw-Route)"
t_eq "  and not added to the seen models" "" "$(keys MODEL_SEEN:)"
ask missing/nope
double_ctl DELETE log >/dev/null
scorer
t_eq "  the scorer does not fetch it" 0 \
	"$(json_get "$(double_ctl GET 'log?path=endpoints')" 'j.requests.filter(r => r.path.includes("missing/")).length')"

# 2. A request's cost does not grow with an old 200000-id MODELS_SEEN.
ask m/1
ask m/1
start=$(date +%s%N)
for _ in $(seq 20); do ask m/1; done
base=$(ms_since "$start")
python3 -c '
import json
m = {"old/m%d" % i: 1700000000 + i for i in range(200000)}
v = json.dumps({"v": 1, "models": m}, separators=(",", ":"))
print("store MODELS_SEEN \"%s\"" % v.replace("\\", "\\\\").replace("\"", "\\\""))
' >"$ORGW_T/big.cmd"
flock -x "$ORGW_STATE.lock" gdbmtool "$ORGW_STATE" <"$ORGW_T/big.cmd" || t_fail "gdbmtool store"
echo "# state with the old list: $(($(stat -c %s "$ORGW_STATE") / 1024)) KiB"
ask m/1
start=$(date +%s%N)
for _ in $(seq 20); do ask m/1; done
ms=$(ms_since "$start")
echo "# 20 requests: $base ms; with a 200000-id MODELS_SEEN: $ms ms"
t_eq "  they are served (locked)" "200 locked" "$ASK"
t_check "  as fast as without it ($ms ms < 1.5 x $base ms + 100; a whole-list parse cost 30-99 ms each)" \
	test "$ms" -lt $((base * 3 / 2 + 100))
flock -x "$ORGW_STATE.lock" gdbmtool "$ORGW_STATE" delete MODELS_SEEN

# 3. A small old list is still read, then migrated.
flock -x "$ORGW_STATE.lock" gdbmtool "$ORGW_STATE" store MODELS_SEEN '{"v":1,"models":{"old/x":1}}'
t_eq "an old MODELS_SEEN list is read (first-seen order)" "old/x,m/1" "$(listed)"
scorer
t_eq "a scorer run migrates it to one key per model" "MODEL_SEEN:m/1 MODEL_SEEN:old/x " "$(keys MODEL_SEEN)"

# 4. MAX_MODELS=3: the longest unused go.
for m in m/2 m/3 m/4; do
	sleep 1.1 # last_used has second resolution
	ask $m
done
sleep 1.1
ask m/1 # m/1 is used again: old/x and m/2 are now the longest unused
scorer
t_eq "the scorer run keeps MAX_MODELS=3, dropping the longest unused" \
	"MODEL_SEEN:m/1 MODEL_SEEN:m/3 MODEL_SEEN:m/4 " "$(keys MODEL_SEEN)"
t_match "  and logs it" '2 seen models over MAX_MODELS \(3\) dropped' "$(cat "$ORGW_T/s.err")"

# 5. /__cron throttled; one scoring run at a time.
orgw_http POST /__cron "{}"
t_eq "POST /__cron: 200" 200 "$HTTP_STATUS"
orgw_http POST /__cron "{}"
ra=$(http_header Retry-After)
t_eq "again at once: 429" 429 "$HTTP_STATUS"
t_check "  with Retry-After within CRON_MIN_INTERVAL_SECONDS ($ra)" test "${ra:-0}" -ge 1 -a "${ra:-0}" -le 60
orgw_restart_workers CRON_MIN_INTERVAL_SECONDS=0
exec 8<>"$ORGW_STATE.score" # a scoring run in progress, held by this shell
flock -x 8
orgw_http POST /__cron "{}"
t_eq "while another scoring run holds the lock: POST /__cron 429" "429 10" "$HTTP_STATUS $(http_header Retry-After)"
scorer
t_eq "  and orgw-score refuses too (exit 1)" 1 "$RC"
t_match "  saying why" 'another scoring run is in progress' "$(cat "$ORGW_T/s.err")"
flock -u 8
exec 8<&-
orgw_http POST /__cron "{}"
t_eq "once it ends: POST /__cron 200 (CRON_MIN_INTERVAL_SECONDS=0)" 200 "$HTTP_STATUS"
t_eq "the scoring lock file has STATE_MODE 0600" 600 "$(stat -c %a "$ORGW_STATE.score")"
