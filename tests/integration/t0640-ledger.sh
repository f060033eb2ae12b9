#!/bin/bash
# t0640-ledger: the counters' layout (ledger.h).  A state written by the
# previous release (tests/fixtures/state-previous-release.jsonl: the
# orgw-score --dump of the state that release's orgw.fcgi and orgw-score
# wrote for six requests of deepseek/deepseek-v3.2 by chat, Messages and
# Responses, and one of openai/gpt-4o-mini) is loaded, and this release
# must:
#   - show every counter that release's /stats showed, unchanged;
#   - count new requests in LEDGER: cells and the HIT: key, added to the old
#     records, which it never writes (a host of the old release sharing
#     the state keeps writing them: its counts are added too);
#   - count reasoning tokens (chat and Responses usage) in /stats and
#     /metrics;
#   - fold cells of days older than the 30 /stats shows day by day into
#     the "total" cell when orgw-score runs, totals unchanged.
. "$(dirname "$0")/../lib.sh"

M=deepseek/deepseek-v3.2
FIX=$ORGW_ROOT/tests/fixtures/state-previous-release.jsonl
DAY=$(date -u +%F)
score() {
	local bin=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" "$@"
}
model() { json_get "$(orgw_curl /stats)" "j.models['$M'].$1"; }

orgw_start
# The fixture's requests were made on 2026-12-02: move its day to today,
# so that the days /stats shows hold it whenever this runs.
sed "s/2026-12-02/$DAY/g" "$FIX" >"$ORGW_T/old.jsonl"
score --load <"$ORGW_T/old.jsonl"
t_eq "the previous release's state loads" 0 $?
OLD=$(grep -F "\"key\":\"STATS:$M\"" "$ORGW_T/old.jsonl")
t_check "the fixture has the old STATS record" test -n "$OLD"

# Every number of the old record shows in /stats at the same path.
S=$(orgw_curl /stats)
printf '%s' "$OLD" >"$ORGW_T/old-stats.json"
printf '%s' "$S" >"$ORGW_T/stats1.json"
diff=$(node -e '
const old = JSON.parse(require("fs").readFileSync(process.argv[1])).value;
const now = JSON.parse(require("fs").readFileSync(process.argv[2])).models[process.argv[3]];
const bad = [];
(function walk(o, n, path) {
  for (const [k, v] of Object.entries(o)) {
    if (k === "v") continue;
    const p = path ? path + "." + k : k;
    if (typeof v === "number") {
      const w = n?.[k];
      if (typeof w !== "number" || Math.abs(w - v) > 1e-12 * Math.max(1, Math.abs(v))) bad.push(`${p}: ${v} -> ${w}`);
    } else if (v && typeof v === "object") walk(v, n?.[k], p);
  }
})(old, now, "");
console.log(bad.join("; "));' "$ORGW_T/old-stats.json" "$ORGW_T/stats1.json" "$M")
t_eq "every counter of the old record shows unchanged in /stats" "" "$diff"
t_eq "requests by API as the old release counted them" "4 1 1" \
	"$(json_get "$S" "['chat','messages','responses'].map(a => j.models['$M'].by_api[a].requests).join(' ')")"
OLDHIT=$(json_get "$S" "j.models['$M'].by_provider.deepseek.hit.tokens")
t_check "the old measured hit rate shows ($OLDHIT tokens behind it)" test "${OLDHIT:-0}" -gt 0

# Two new requests, with reasoning in their usage.
double_ctl POST config '{"reasoning_tokens":2,"cached_tokens":30}' >/dev/null
r1=$(orgw_chat --model "$M")
orgw_http POST /v1/responses "{\"model\":\"$M\",\"input\":\"hi\"}"
t_eq "a chat and a Responses request answer" "true 200" \
	"$(json_get "$r1" 'j.ok') $HTTP_STATUS"
orgw_stats_settle "$M" 8
S=$(orgw_curl /stats)
t_eq "requests: the old 6 and the new 2" 8 "$(json_get "$S" "j.models['$M'].requests")"
t_eq "by API: chat and Responses grew by one" "5 1 2" \
	"$(json_get "$S" "['chat','messages','responses'].map(a => j.models['$M'].by_api[a].requests).join(' ')")"
t_eq "reasoning tokens: 2 per request, by model and API" "4 2 2" \
	"$(json_get "$S" "[j.models['$M'].tokens.reasoning, j.models['$M'].by_api.chat.tokens.reasoning, j.models['$M'].by_api.responses.tokens.reasoning].join(' ')")"
t_eq "the day's money counts all 8" 8 "$(json_get "$S" "j.models['$M'].days['$DAY'].deepseek.requests")"
t_check "the hit rate went on from the old one" \
	json_ok "$S" "j.models['$M'].by_provider.deepseek.hit.tokens > $OLDHIT"

D=$(orgw_state_dump)
t_eq "the old STATS record is never written" "$OLD" "$(grep -F "\"key\":\"STATS:$M\"" <<<"$D")"
t_eq "nor the old METRICS record" \
	"$(grep -F "\"key\":\"METRICS:$M\"" "$ORGW_T/old.jsonl")" \
	"$(grep -F "\"key\":\"METRICS:$M\"" <<<"$D")"
t_eq "one cell per API the new requests came by, and a HIT key" "2 1" \
	"$(grep -c "\"key\":\"LEDGER:$M:$DAY:\(chat\|responses\):deepseek\"" <<<"$D") $(grep -c "\"key\":\"HIT:$M\".*\"deepseek\"" <<<"$D")"
t_check "a cell holds only its non-zero counters" \
	json_ok "$(grep -F "\"key\":\"LEDGER:$M:$DAY:chat:deepseek\"" <<<"$D")" \
	'j.value.r === 1 && j.value.rt === 2 && !("e429" in j.value) && Object.keys(j.value).length < 30'

P=$(orgw_curl /metrics)
t_eq "/metrics: ok requests add the old and the new" 1 \
	"$(grep -cxF "orgw_requests_total{model=\"$M\",provider=\"deepseek\",outcome=\"ok\"} 8" <<<"$P")"
t_eq "/metrics: reasoning tokens by provider" 1 \
	"$(grep -cxF "orgw_tokens_total{model=\"$M\",provider=\"deepseek\",type=\"reasoning\"} 4" <<<"$P")"
t_eq "/metrics: reasoning tokens by API" 1 \
	"$(grep -cxF "orgw_api_tokens_total{model=\"$M\",api=\"chat\",type=\"reasoning\"} 2" <<<"$P")"

# A host of the old release on the same state counts a request in its
# STATS record (written here as it would write it: requests 6 -> 7).
node -e '
const l = JSON.parse(process.argv[1]);
l.value.requests += 1; l.value.ok += 1;
console.log(JSON.stringify(l));' "$OLD" | score --load
t_eq "an old host's count is added in" 9 "$(model requests)"

# Cells of days the ledger no longer shows day by day: 40 and 35 days ago.
d40=$(date -u -d '40 days ago' +%F)
d35=$(date -u -d '35 days ago' +%F)
d10=$(date -u -d '10 days ago' +%F)
printf '%s\n' \
	"{\"key\":\"LEDGER:$M:$d40:chat:deepseek\",\"value\":{\"v\":1,\"r\":3,\"ok\":3,\"pt\":30}}" \
	"{\"key\":\"LEDGER:$M:$d35:chat:deepseek\",\"value\":{\"v\":1,\"r\":2,\"ok\":2,\"pt\":20}}" \
	"{\"key\":\"LEDGER:$M:$d10:chat:deepseek\",\"value\":{\"v\":1,\"r\":1,\"ok\":1,\"pt\":10,\"pr\":1}}" |
	score --load
t_eq "old days count in the totals" 15 "$(model requests)"
before=$(json_get "$(orgw_curl /stats)" "JSON.stringify([j.models['$M'].requests, j.models['$M'].tokens, j.models['$M'].by_api.chat, Object.keys(j.models['$M'].days).sort()])")
score --model "$M" >/dev/null 2>&1
D=$(orgw_state_dump)
t_eq "orgw-score folds the two old days into the total cell" "0 0 1" \
	"$(grep -c "LEDGER:$M:$d40:" <<<"$D") $(grep -c "LEDGER:$M:$d35:" <<<"$D") $(grep -c "\"LEDGER:$M:total:chat:deepseek\"" <<<"$D")"
t_check "the total cell holds their sum" \
	json_ok "$(grep -F "\"key\":\"LEDGER:$M:total:chat:deepseek\"" <<<"$D")" 'j.value.r === 5 && j.value.pt === 50'
t_eq "a day still shown day by day stays" 1 "$(grep -c "LEDGER:$M:$d10:chat" <<<"$D")"
after=$(json_get "$(orgw_curl /stats)" "JSON.stringify([j.models['$M'].requests, j.models['$M'].tokens, j.models['$M'].by_api.chat, Object.keys(j.models['$M'].days).sort()])")
t_eq "/stats is the same after folding" "$before" "$after"
t_match "the 10-day-old day shows day by day" "$d10" "$after"

