#!/bin/bash
# t0330-score-live: orgw-score running in a loop next to live traffic.
# 500 gateway requests from 16 parallel clients all succeed while the
# scorer rewrites candidates (and tidies the GDBM file) again and again;
# the live lock never changes because of the scorer, even though the
# scorer now ranks another provider first; the state file stays readable.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

ORGW_WORKERS=8 orgw_start TARGET_MODEL=deepseek/deepseek-v3.2,other/model
M=deepseek/deepseek-v3.2

# Lock the model to deepseek (its best endpoint on the default data).
out=$(orgw_chat --model $M)
t_eq "first request locks deepseek" "deepseek" \
	"$(json_get "$out" 'j.headers["x-orgw-provider"]')"
stats=$(orgw_curl /stats)
lock0=$(json_get "$stats" "j.models['$M'].lock.tag + ' ' + j.models['$M'].lock.locked_at")
t_match "/stats shows the lock" '^deepseek [0-9]+$' "$lock0"

# Now make deepseek the worst endpoint: a scoring ranks deepinfra/fp8 first,
# but the live lock must stay (docs/design.md section 4 step 4: long jobs
# never switch).
eps=$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" "$DOUBLE_URL/api/v1/models/$M/endpoints")
double_ctl PUT "endpoints/$M" "$(json_get "$eps" 'j.data.endpoints.map(e =>
	e.tag === "deepseek" ? {...e, throughput_last_30m: {p50: 1, p75: 1, p90: 1, p99: 1}} : e)')" >/dev/null

# The scorer loop, in the background, until $ORGW_T/stop exists.
: >"$ORGW_T/score.rcs"
(
	while [ ! -e "$ORGW_T/stop" ]; do
		"$SCORER" --config "$ORGW_CONFIG_FILE" >>"$ORGW_T/score.log" 2>&1
		echo $? >>"$ORGW_T/score.rcs"
	done
) &
loop=$!

# A lock watcher: samples the lock from /stats while the burst runs.
(
	while [ ! -e "$ORGW_T/stop" ]; do
		curl -sS --max-time 10 -H "Authorization: Bearer $ORGW_KEY" "$ORGW_URL/stats" |
			jq -r --arg m "$M" '.models[$m].lock | "\(.tag) \(.locked_at)"' 2>/dev/null ||
			echo unreadable
		sleep 0.02
	done >"$ORGW_T/locks"
) &
watcher=$!

body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
printf '%s' "$body" >"$ORGW_T/b.json"
one() { # N: one request; prints "N STATUS PROVIDER ROUTE"
	curl -sS -o /dev/null --max-time 60 \
		-w "$1 %{http_code} %header{x-orgw-provider} %header{x-orgw-route}\n" \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary @"$ORGW_T/b.json" "$ORGW_URL/v1/chat/completions"
}
export -f one
export ORGW_T ORGW_KEY ORGW_URL
# Let the scorer get going first, so the burst overlaps its runs.
for _ in $(seq 100); do
	[ -s "$ORGW_T/score.rcs" ] && break
	sleep 0.05
done
seq 500 | xargs -P 16 -I{} bash -c 'one {}' >"$ORGW_T/codes" 2>&1
runs_during=$(wc -l <"$ORGW_T/score.rcs")
touch "$ORGW_T/stop"
wait "$loop" "$watcher"

echo "# scorer runs during the burst: $runs_during (exit codes: $(sort "$ORGW_T/score.rcs" | uniq -c | xargs))"
t_check "the scorer ran during the burst ($runs_during runs)" test "$runs_during" -ge 2
t_eq "every scorer run exited 0" "" "$(grep -v '^0$' "$ORGW_T/score.rcs" | head -3)"
t_eq "500 requests answered 200" 500 "$(grep -c '^[0-9]* 200 ' "$ORGW_T/codes")"
t_eq "all 500 went to the locked provider (deepseek, route locked)" 500 \
	"$(grep -c '^[0-9]* 200 deepseek locked$' "$ORGW_T/codes")"
nlocks=$(wc -l <"$ORGW_T/locks")
t_check "the lock was sampled during the burst ($nlocks samples)" test "$nlocks" -ge 2
t_eq "the lock (tag, locked_at) never changed" "$lock0" "$(sort -u "$ORGW_T/locks" | xargs)"

stats=$(orgw_curl /stats)
t_eq "the scorer did write: deepinfra/fp8 is now the first candidate" deepinfra/fp8 \
	"$(json_get "$stats" "j.models['$M'].candidates[0].tag")"
t_eq "but the lock is still deepseek" "$lock0" \
	"$(json_get "$stats" "j.models['$M'].lock.tag + ' ' + j.models['$M'].lock.locked_at")"
t_eq "/stats counts 501 requests for the model" 501 "$(json_get "$stats" "j.models['$M'].requests")"
t_check "the state file is readable with gdbmtool" \
	bash -c "gdbmtool -r '$ORGW_STATE' count >/dev/null"
t_match "gdbmtool sees BEST_PROVIDER for the model" '"tag":"deepseek"' \
	"$(gdbmtool -r "$ORGW_STATE" fetch "BEST_PROVIDER:$M" 2>&1)"
t_check "the gateway still reports healthy" bash -c \
	"curl -sf --max-time 10 '$ORGW_URL/healthz' >/dev/null"
t_match "the scorer log ends runs with a summary line" \
	'orgw-score [0-9-]+ [0-9:]+Z: 2 models, 2 scored, 0 failed' "$(tail -n 1 "$ORGW_T/score.log")"
