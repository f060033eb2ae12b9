#!/bin/bash
# t0125-lock-reprice: when a lock moves, the stored candidates are re-ranked
# at the current UTC time from their stored price terms (docs/design.md
# section 6), so a time-of-day price counts from its first minute, not from
# the next scoring run.  The workers' clock is pinned with ORGW_TEST_NOW:
# candidates are scored at 12:00 UTC (peak), then the workers restart
# at 20:00 UTC the same day (inside the off-peak window) with no scoring in
# between.
#   - idle expiry: the double's deepseek/deepseek-v3.2 with CACHE_BONUS 1
#     ranks deepinfra/fp8 first at 12:00 and deepseek (half price from
#     16:30 to 00:30) first at 20:00 (README's ranking table): the lock
#     that moves at 20:00 goes to deepseek;
#   - breaker trip: steady > mid > night at 12:00, steady > night > mid at
#     20:00 (night's off-peak window): a trip of steady at 20:00 re-locks
#     night, not mid.
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

DAY=1764547200 # 2025-12-01 00:00:00 UTC
T12=$((DAY + 12 * 3600))
T20=$((DAY + 20 * 3600))
M=deepseek/deepseek-v3.2
N=test/tod

ORGW_WORKER_ENV="ORGW_TEST_NOW=$T12"
orgw_start CACHE_BONUS=1 HIT_RATE=0.9 LOCK_IDLE_SECONDS=3600 FAIL_LIMIT=3 \
	MAX_ATTEMPTS=4 COOLDOWN_SECONDS=600

# USD/token, 100 tok/s, no caching: cost steady 1.6e-7, mid 3.2e-7, night
# 6.4e-7 at peak and 2.4e-7 from 16:30 to 00:30.
double_ctl PUT "endpoints/$N" '[
 {"tag":"steady","provider_name":"Steady","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000001","completion":"0.0000002","discount":0},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":100}},
 {"tag":"mid","provider_name":"Mid","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000002","completion":"0.0000004","discount":0},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":100}},
 {"tag":"night","provider_name":"Night","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000004","completion":"0.0000008","discount":0,
   "overrides":[{"utc_start":30,"utc_end":1630,"prompt":"0.0000004","completion":"0.0000008"},
                {"utc_start":1630,"utc_end":30,"prompt":"0.00000015","completion":"0.0000003"}]},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":100}}]' >/dev/null

chat() { # MODEL: one request; HTTP_* set
	orgw_http POST /v1/chat/completions \
		"{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}
route() { echo "$HTTP_STATUS $(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"; }
stats() { # MODEL EXPR
	json_get "$(orgw_curl /stats)" "(m => $2)(j.models['$1'])"
}

# --- 12:00 UTC: scored and locked at peak prices ----------------------------
chat $M
t_eq "12:00: first request scores inline and locks deepinfra/fp8" \
	"200 deepinfra/fp8 scored" "$(route)"
t_eq "12:00: stored ranking" "deepinfra/fp8,deepseek,novita" \
	"$(stats $M 'm.candidates.map(c => c.tag).join()')"
t_eq "the candidate keeps deepseek's off-peak window" "1630-30 1.4e-7" \
	"$(stats $M 'm.candidates[1].pricing.windows.map(w => w.utc_start + "-" + w.utc_end + " " + w.prompt)[1]')"
chat $N
t_eq "12:00: $N locks steady" "200 steady scored" "$(route)"
t_eq "12:00: $N ranking" "steady,mid,night" \
	"$(stats $N 'm.candidates.map(c => c.tag).join()')"
scored_at=$(stats $M m.scored_at)
seq0=$(json_get "$(double_ctl GET 'log?limit=1')" 'j.requests[0].seq')

# --- 20:00 UTC: the locks move, inside the off-peak window ------------------
ORGW_WORKER_ENV="ORGW_TEST_NOW=$T20"
orgw_restart_workers
chat $M
t_eq "20:00: the idle lock moves to the best provider now: deepseek" \
	"200 deepseek relocked" "$(route)"
t_eq "the double served it from deepseek" deepseek \
	"$(json_get "$(double_ctl GET 'log?path=chat&limit=1')" 'j.requests[0].tag')"
chat $M
t_eq "the new lock holds" "200 deepseek locked" "$(route)"

chat $N
t_eq "20:00: $N's idle lock moves, steady is still best" \
	"200 steady relocked" "$(route)"
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":-1,"match":{"tag":"steady"}}]}' >/dev/null
chat $N
t_eq "20:00: steady trips; the request continues on night (best now), not mid" \
	"200 night relocked" "$(route)"
t_eq "the lock is night" night "$(stats $N m.lock.tag)"
t_eq "steady cools down" 5xx "$(stats $N m.cooldowns.steady.reason)"
double_ctl DELETE faults >/dev/null

t_eq "no endpoints fetch since 12:00: re-ranked from the stored terms" 0 \
	"$(json_get "$(double_ctl GET "log?since=$seq0&path=endpoints")" 'j.requests.length')"
t_eq "the stored candidates are the 12:00 scoring's" "$scored_at" \
	"$(stats $M m.scored_at)"
