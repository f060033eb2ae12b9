#!/bin/bash
# t0128-money-saved: spend, uncached cost and saving in /stats.
# test/save's only well-priced endpoint "saver" has a 25 %
# discount and a time-of-day override window that ends at the next UTC
# minute (the prices in force, not the top-level ones), and caches 90 % of
# a prompt (x_double_cache_hit_rate).  Six requests go before the window
# ends, six after it.  orgw and the double both read the real clock plus
# one offset (ORGW_TEST_NOW for the one worker, the double's
# clock_offset_ms), chosen so that the window ends about 16 s after the
# worker started instead of at the next real UTC minute (a wait of 12 to
# 72 s).  /stats
# saved_usd must then equal, to 1e-9, what the double would have billed
# with every prompt token at the prompt price in force minus what it billed
# (usage.cost), worked out here from each answer's usage and the fixture
# prices.
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

N=test/save
# The worker's clock starts 16 s before a minute ends (one worker: the
# offset is fixed when a worker starts).
ORGW_WORKERS=1 ORGW_WORKER_ENV="ORGW_TEST_NOW=$((($(date +%s) / 60 + 2) * 60 - 16))" \
	orgw_start CACHE_BONUS=2 HIT_RATE=0.9
# Its offset, from /stats' generated_at read within one real second; the
# double gets the same.
for ((i = 0; i < 20; i++)); do
	a=$(date +%s)
	g=$(json_get "$(orgw_curl /stats)" 'j.generated_at')
	[ "$(date +%s)" = "$a" ] && break
done
OFF=$((g - a))
t_check "orgw runs on the shifted clock ($OFF s ahead)" test "$OFF" -gt 0
double_ctl POST config "{\"clock_offset_ms\":$((OFF * 1000))}" >/dev/null
fnow() { echo $(($(date +%s) + OFF)); }	# the shifted clock, UTC epoch s
fmin() { echo $(($(fnow) / 60 % 1440)); }	# ... its minute of the UTC day

# A window from an hour ago to the end of this UTC minute (HHMM, may wrap),
# with at least 12 s of it left for the first six requests.
sec=$(($(fnow) % 60))
[ "$sec" -lt 48 ] || sleep $((61 - sec))
now_min=$(fmin)
hhmm() { local m=$((($1 + 1440) % 1440)); echo $((m / 60 * 100 + m % 60)); }
WS=$(hhmm $((now_min - 60)))
WE=$(hhmm $((now_min + 1)))
double_ctl PUT "endpoints/$N" '[
 {"tag":"saver","provider_name":"Saver","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000004","input_cache_read":"0.0000003",
   "discount":0.25,
   "overrides":[{"utc_start":'"$WS"',"utc_end":'"$WE"',"prompt":"0.000001",
     "completion":"0.000002","input_cache_read":"0.0000001"}]},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":100},
  "x_double_cache_hit_rate":0.9},
 {"tag":"dear","provider_name":"Dear","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.00002","completion":"0.00004"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":100}}]' >/dev/null

: >"$ORGW_T/usage"
ask() { # I IN: request I, IN 1 inside the window
	P=$(printf 'x%.0s' $(seq 1 $((200 * $1))))
	orgw_http POST /v1/chat/completions \
		"{\"model\":\"$N\",\"messages\":[{\"role\":\"user\",\"content\":\"$P\"}]}"
	t_eq "request $1 answered by saver" "200 saver" \
		"$HTTP_STATUS $(http_header X-Orgw-Provider)"
	echo "{\"in\":$2,\"u\":$(json_get "$HTTP_BODY" 'JSON.stringify(j.usage)')}" >>"$ORGW_T/usage"
}
for i in 1 2 3 4 5 6; do ask "$i" 1; done
t_eq "the first six went inside the window" "$(hhmm "$now_min")" "$(hhmm "$(fmin)")"
sleep $((61 - $(fnow) % 60))
for i in 7 8 9 10 11 12; do ask "$i" 0; done

# Prices in force: the window's, then the top-level ones, with the
# discount (as the double bills).
want=$(node -e '
const u = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const k = 0.75;
let spend = 0, unc = 0, cached = 0, inside = 0;
for (const { in: w, u: x } of u) {
  const p = (w ? 0.000001 : 0.000003) * k, c = (w ? 0.000002 : 0.000004) * k;
  spend += x.cost; unc += x.prompt_tokens * p + x.completion_tokens * c;
  cached += x.prompt_tokens_details.cached_tokens; inside += w;
}
console.log(JSON.stringify({spend, unc, saved: unc - spend, cached, n: u.length, inside}));
' "$ORGW_T/usage")
orgw__log "expected: $want"
t_check "the answers read cached tokens" \
	test "$(json_get "$want" 'j.cached')" -gt 0

S=$(orgw_curl /stats)
DAY=$(date -u -d "@$(fnow)" +%Y-%m-%d)
close() { # EXPR on /stats' model, EXPECTED: 1 when within 1e-9
	node -e '
const s = JSON.parse(process.argv[1]), w = JSON.parse(process.argv[2]);
const m = s.models[process.argv[3]];
const got = (m => eval(process.argv[4]))(m), exp = (w => eval(process.argv[5]))(w);
console.log(Math.abs(got - exp) <= 1e-9 ? 1 : `got ${got} want ${exp}`);
' "$S" "$want" "$N" "$1" "$2"
}
t_eq "/stats saved_usd = uncached - billed (to 1e-9)" 1 "$(close 'm.saved_usd' 'w.saved')"
t_eq "/stats spend_usd = what the double billed" 1 "$(close 'm.spend_usd' 'w.spend')"
t_eq "/stats uncached_usd at the discounted prompt prices in force" 1 \
	"$(close 'm.uncached_usd' 'w.unc')"
t_eq "by_provider.saver.saved_usd" 1 "$(close 'm.by_provider.saver.saved_usd' 'w.saved')"
# Summed over the days (the run may cross midnight UTC).
days='Object.values(m.days).reduce((a, d) => a + (d.saver ? d.saver.FIELD : 0), 0)'
t_eq "days.*.saver: the saving and 12 requests" "1 12" \
	"$(close "${days//FIELD/saved_usd}" 'w.saved') $(json_get "$S" "(m => ${days//FIELD/requests})(j.models['$N'])")"
t_eq "/stats knows DAY $DAY" saver \
	"$(json_get "$S" "Object.keys(j.models['$N'].days['$DAY'] || {}).join()")"
# One price for all twelve (the window's) would be wrong by far more.
t_check "the window's end changed the uncached cost (not one price for all)" \
	node -e '
const s = JSON.parse(process.argv[1]).models[process.argv[2]];
const u = require("fs").readFileSync(process.argv[3], "utf8").trim().split("\n").map(JSON.parse);
const one = u.reduce((a, { u: x }) => a + (x.prompt_tokens * 0.000001 + x.completion_tokens * 0.000002) * 0.75, 0);
process.exit(Math.abs(s.uncached_usd - one) > 1e-6 ? 0 : 1);' "$S" "$N" "$ORGW_T/usage"
t_check "saved is a real saving (> 0)" \
	node -e 'process.exit(JSON.parse(process.argv[1]).saved > 0 ? 0 : 1)' "$want"
