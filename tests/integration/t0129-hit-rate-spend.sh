#!/bin/bash
# t0129-hit-rate-spend: what measured hit rates save over a long run (issue
# 17, second goal).  The best-priced provider of test/hit, "cheap", is 10 %
# cheaper at every price but its cache serves only 20 % of a prompt; "warm"
# serves 90 % (the double's x_double_cache_hit_rate).  The same 200-turn run
# goes through orgw twice on a fresh state: once with the assumed HIT_RATE
# alone (HIT_RATE_EVIDENCE_TOKENS out of reach), once with measured rates
# (evidence after 10 turns, the default scaled down with the prompts).
# Every 20 turns the lock has been idle past LOCK_IDLE_SECONDS (the
# workers' clock moves an hour), so it is re-ranked as it would be over a
# working day.  The total the double billed (usage.cost, which /stats
# spend_usd equals, t0128) must be lower with measured rates; both totals
# and the providers used are logged as the figures of the issue.
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

DAY=1764547200 # 2025-12-01 00:00:00 UTC
N=test/hit
TURNS=200
EVERY=20
LONG=$(printf 'x%.0s' $(seq 1 8000)) # 2000 prompt tokens a turn

endpoints='[
 {"tag":"cheap","provider_name":"Cheap","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000002","completion":"0.000001","input_cache_read":"0.0000002"},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":100},
  "x_double_cache_hit_rate":0.2},
 {"tag":"warm","provider_name":"Warm","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000022","completion":"0.0000011","input_cache_read":"0.00000022"},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":100},
  "x_double_cache_hit_rate":0.9}]'

# run EVIDENCE: 200 turns on a fresh gateway; prints "spend cheap warm bad"
run() {
	local t=$((DAY + 12 * 3600)) i bad=0 cheap=0 warm=0 p
	ORGW_WORKER_ENV="ORGW_TEST_NOW=$t"
	orgw_start CACHE_BONUS=2 HIT_RATE=0.9 LOCK_IDLE_SECONDS=60 \
		HIT_RATE_EVIDENCE_TOKENS="$1" LOCK_MARGIN=0.10 >&2
	double_ctl PUT "endpoints/$N" "$endpoints" >/dev/null
	for ((i = 1; i <= TURNS; i++)); do
		if ((i > 1 && (i - 1) % EVERY == 0)); then
			t=$((t + 3600))
			ORGW_WORKER_ENV="ORGW_TEST_NOW=$t"
			orgw_restart_workers >&2
		fi
		orgw_http POST /v1/chat/completions \
			"{\"model\":\"$N\",\"messages\":[{\"role\":\"user\",\"content\":\"$LONG\"}]}"
		p=$(http_header X-Orgw-Provider)
		case "$HTTP_STATUS $p" in
		"200 cheap") cheap=$((cheap + 1)) ;;
		"200 warm") warm=$((warm + 1)) ;;
		*) bad=$((bad + 1)) ;;
		esac
	done
	echo "$(json_get "$(orgw_curl /stats)" "j.models['$N'].spend_usd") $cheap $warm $bad"
}

read -r a_spend a_cheap a_warm a_bad <<<"$(run 1000000000000)"
read -r m_spend m_cheap m_warm m_bad <<<"$(run 20000)"
orgw__log "200 turns, assumed HIT_RATE only: \$$a_spend ($a_cheap on cheap, $a_warm on warm)"
orgw__log "200 turns, measured hit rates:    \$$m_spend ($m_cheap on cheap, $m_warm on warm)"

t_eq "every turn answered (assumed rate)" 0 "$a_bad"
t_eq "every turn answered (measured rates)" 0 "$m_bad"
t_eq "with the assumed rate alone every turn stays on cheap" "$TURNS 0" "$a_cheap $a_warm"
t_check "with measured rates the lock moves to warm after the evidence ($m_cheap on cheap)" \
	test "$m_cheap" -ge 10 -a "$m_cheap" -le $((2 * EVERY))
t_check "measured rates cost less over 200 turns (\$$m_spend < \$$a_spend)" \
	node -e 'process.exit(+process.argv[1] > 0 && +process.argv[1] < +process.argv[2] ? 0 : 1)' \
	"$m_spend" "$a_spend"

