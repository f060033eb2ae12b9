#!/bin/bash
# t0127-lock-hit-rate: measured cache hit rates in the score.
# Two providers of test/hit cache implicitly: "cheap" is 10 % cheaper at
# every price but its cache serves only 20 % of a prompt
# (x_double_cache_hit_rate 0.2), "warm" serves 90 %.  With the assumed
# HIT_RATE 0.9 cheap ranks first and is locked.  Its measured rate (STATS
# by_provider.cheap.hit) replaces HIT_RATE once it has served
# HIT_RATE_EVIDENCE_TOKENS (1000 here) prompt tokens: before that an idle
# lock move stays on cheap, after it the move goes to warm (cost with 0.2:
# 1.256e-6 against warm's 8.272e-7, well past LOCK_MARGIN).  orgw-score
# and /stats then show which rate each candidate's score used.
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

DAY=1764547200 # 2025-12-01 00:00:00 UTC
T=$((DAY + 12 * 3600))
N=test/hit
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

ORGW_WORKER_ENV="ORGW_TEST_NOW=$T"
orgw_start CACHE_BONUS=2 HIT_RATE=0.9 LOCK_IDLE_SECONDS=60 \
	HIT_RATE_EVIDENCE_TOKENS=1000 LOCK_MARGIN=0.10

double_ctl PUT "endpoints/$N" '[
 {"tag":"cheap","provider_name":"Cheap","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000002","completion":"0.000001","input_cache_read":"0.0000002"},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":100},
  "x_double_cache_hit_rate":0.2},
 {"tag":"warm","provider_name":"Warm","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000022","completion":"0.0000011","input_cache_read":"0.00000022"},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":100},
  "x_double_cache_hit_rate":0.9}]' >/dev/null

LONG=$(printf 'x%.0s' $(seq 1 800))
chat() { # one request with an ~800-character prompt; HTTP_* set
	orgw_http POST /v1/chat/completions \
		"{\"model\":\"$N\",\"messages\":[{\"role\":\"user\",\"content\":\"$LONG\"}]}"
}
route() { echo "$HTTP_STATUS $(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"; }
stats() { # EXPR on /stats' model
	json_get "$(orgw_curl /stats)" "(m => $1)(j.models['$N'])"
}
later() { # the workers' clock moves past LOCK_IDLE_SECONDS
	T=$((T + 3600))
	ORGW_WORKER_ENV="ORGW_TEST_NOW=$T"
	orgw_restart_workers
}

chat
t_eq "first request scores inline and locks cheap (assumed 0.9)" \
	"200 cheap scored" "$(route)"
t_eq "the stored candidates used the assumed rate" "assumed 0.9 0" \
	"$(stats 'm.candidates[0].hit_source + " " + m.candidates[0].hit_rate + " " + m.candidates[0].hit_tokens')"
chat
t_eq "cheap served the second" "200 cheap locked" "$(route)"
pt=$(stats 'm.by_provider.cheap.tokens.prompt')
t_check "cheap has served fewer than 1000 prompt tokens ($pt)" \
	test "$pt" -gt 100 -a "$pt" -lt 1000
t_eq "the measured rate of cheap is its 20 %" 0.2 \
	"$(stats 'Math.round(m.by_provider.cheap.hit.rate * 100) / 100')"
t_eq "its evidence is the undecayed prompt tokens" "$pt" \
	"$(stats 'm.by_provider.cheap.hit.tokens')"

later
chat
t_eq "below the evidence threshold an idle move keeps cheap (HIT_RATE is the prior)" \
	"200 cheap relocked" "$(route)"
for _ in 1 2 3 4; do chat; done
pt=$(stats 'm.by_provider.cheap.tokens.prompt')
t_check "cheap has now served at least 1000 prompt tokens ($pt)" test "$pt" -ge 1000

later
chat
t_eq "past the threshold an idle move goes to warm (better measured rate)" \
	"200 warm relocked" "$(route)"
t_eq "the double served it from warm" warm \
	"$(json_get "$(double_ctl GET 'log?path=chat&limit=1')" 'j.requests[0].tag')"
for _ in 1 2 3 4 5 6; do chat; done
t_eq "the lock holds on warm" "200 warm locked" "$(route)"
t_eq "warm measured at 90 %" 0.9 \
	"$(stats 'Math.round(m.by_provider.warm.hit.rate * 100) / 100')"

# The scorer uses the measured rates too, and says so per candidate.
ORGW_TEST_NOW=$T "$SCORER" --config "$ORGW_CONFIG_FILE" --model $N --json \
	>"$ORGW_T/s.json" 2>"$ORGW_T/s.err"
t_eq "orgw-score --json: warm first, both measured" \
	"warm:measured:0.9,cheap:measured:0.2" \
	"$(json_get "$(cat "$ORGW_T/s.json")" "j.models['$N'].candidates.map(e => e.tag + ':' + e.hit_source + ':' + Math.round(e.hit_rate * 100) / 100).join()")"
ORGW_TEST_NOW=$T "$SCORER" --config "$ORGW_CONFIG_FILE" --model $N \
	>"$ORGW_T/s.txt" 2>>"$ORGW_T/s.err"
t_match "orgw-score's table shows the rate, its source and tokens" \
	' cheap +Cheap .* 0\.2 +measured +[0-9]{4,}' "$(grep ' cheap ' "$ORGW_T/s.txt")"
t_eq "/stats candidates after the scoring: measured, with tokens" \
	"warm:measured,cheap:measured" \
	"$(stats 'm.candidates.map(c => c.tag + ":" + c.hit_source).join()')"
t_check "/stats: hit_tokens of cheap is its undecayed prompt total" \
	test "$(stats 'm.candidates[1].hit_tokens')" = \
	"$(stats 'm.by_provider.cheap.hit.tokens')"

# Figures: what a request cost on each provider (USD, from the double's usage.cost).
orgw__log "cost per request: cheap $(stats 'm.by_provider.cheap.cost_usd / m.by_provider.cheap.requests')" \
	"warm $(stats 'm.by_provider.warm.cost_usd / m.by_provider.warm.requests')"

