#!/bin/bash
# t0345-score-cooling: orgw-score never ranks a provider that is cooling
# down (PROVIDER_COOLDOWN until > now, docs/design.md section 6) and shows
# it as such: excluded "cooling" in the table and in --json; the candidates
# it writes keep it after the ranked ones (routing skips it while it cools,
# and a lock move after the cooldown can take it again without waiting for
# the next run); once the cooldown is over it is ranked again.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

orgw_start FAIL_LIMIT=1 COOLDOWN_SECONDS=600 MAX_ATTEMPTS=4
M=deepseek/deepseek-v3.2

scorer() { # ARGS: orgw-score with the test config; status in RC
	"$SCORER" --config "$ORGW_CONFIG_FILE" --model $M "$@" >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
	RC=$?
}
cands() { json_get "$(orgw_curl /stats)" "j.models['$M'].candidates.map(c => c.tag).join()"; }

out=$(orgw_chat --model $M)
t_eq "the first request locks deepseek" "true deepseek" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-provider"]')"
# Trip the breaker of deepseek (FAIL_LIMIT 1): one 503.
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":1,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(orgw_chat --model $M)
t_eq "a 503 trips deepseek; the request continues on deepinfra/fp8" \
	"true deepinfra/fp8" "$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-provider"]')"
t_eq "/stats: deepseek cooling" 5xx \
	"$(json_get "$(orgw_curl /stats)" "j.models['$M'].cooldowns.deepseek.reason")"

scorer --json --dry-run
t_eq "--dry-run --json exits 0" 0 "$RC"
t_eq "--json: deepseek is not ranked" "deepinfra/fp8,novita" \
	"$(json_get "$ORGW_T/s.out" "j.models['$M'].candidates.map(c => c.tag).join()")"
t_eq "--json: deepseek is excluded as cooling" "deepseek cooling" \
	"$(json_get "$ORGW_T/s.out" "j.models['$M'].excluded.map(e => e.tag + ' ' + e.excluded).join()")"
t_match "--json: why says for how long and the reason" \
	'^(59[0-9]|600) s left \(5xx\)$' \
	"$(json_get "$ORGW_T/s.out" "j.models['$M'].excluded[0].why")"
t_eq "--json: the winner is deepinfra/fp8" deepinfra/fp8 \
	"$(json_get "$ORGW_T/s.out" "j.models['$M'].winner")"
t_eq "a dry run writes nothing: deepseek still first in the state" \
	"deepseek,deepinfra/fp8,novita" "$(cands)"

scorer
t_eq "orgw-score exits 0" 0 "$RC"
while IFS= read -r l; do printf '# %s\n' "$l"; done <"$ORGW_T/s.out"
t_match "table: deepseek excluded as cooling" \
	'^ +- +deepseek +DeepSeek +excluded: cooling: [0-9]+ s left \(5xx\)$' \
	"$(grep -E '^ +- +deepseek ' "$ORGW_T/s.out")"
t_match "table: deepinfra/fp8 ranked first" '^ +1 +deepinfra/fp8 ' \
	"$(grep -E '^ +1 ' "$ORGW_T/s.out")"
t_eq "table: two ranked, one excluded" 1 \
	"$(grep -c '2 ranked, 1 excluded' "$ORGW_T/s.out")"
t_eq "the written candidates keep deepseek, after the ranked ones" \
	"deepinfra/fp8,novita,deepseek" "$(cands)"
t_eq "the scorer left the live lock alone" deepinfra/fp8 \
	"$(json_get "$(orgw_curl /stats)" "j.models['$M'].lock.tag")"

# The cooldown over (the scorer's clock 700 s ahead): ranked again.
ORGW_TEST_NOW=$(($(date +%s) + 700)) scorer --json
t_eq "after the cooldown deepseek is ranked again, first" \
	"deepseek,deepinfra/fp8,novita 0" \
	"$(json_get "$ORGW_T/s.out" "j.models['$M'].candidates.map(c => c.tag).join() + ' ' + j.models['$M'].excluded.length")"
t_eq "and written" "deepseek,deepinfra/fp8,novita" "$(cands)"
