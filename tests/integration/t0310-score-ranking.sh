#!/bin/bash
# t0310-score-ranking: orgw-score ranks endpoints by the formula of
# docs/design.md section 6, checked against an independent JavaScript
# rendering of that formula: the candidate order (orgw-score --json and GET
# /stats) equals the formula's; a time window (ORGW_TEST_NOW pins the clock)
# reorders; CACHE_BONUS 1 vs 2 changes the winner; status != 0 and uptime
# below MIN_UPTIME are excluded with the reason printed; a null throughput
# ranks last; free endpoints give no NaN/inf.  Prints the ranking table of
# the double's default deepseek/deepseek-v3.2 data as "#" lines.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"
orgw_test_clock # ORGW_TEST_NOW: the test builds of the binaries

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

orgw_start

# 2025-12-01 00:00:00 UTC; the day's HHMM is added to it.
DAY=1764547200
at() { # HHMM -> unix seconds that day
	local h=$((10#${1:0:2})) m=$((10#${1:2:2}))
	echo $((DAY + h * 3600 + m * 60))
}

# score HHMM OUT [NAME=VALUE...] -- ARGS: runs orgw-score at that UTC time
# with extra environment; stdout to OUT, status in SCORE_RC.
score() {
	local now=$1 out=$2
	shift 2
	local -a envv=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		envv+=("$1")
		shift
	done
	shift
	env "${envv[@]}" ORGW_TEST_NOW="$(at "$now")" "$SCORER" \
		--config "$ORGW_CONFIG_FILE" "$@" >"$out" 2>"$out.err"
	SCORE_RC=$?
}

# The formula of docs/design.md section 6, written independently of score.c.
cat >"$ORGW_T/ref.js" <<'EOF'
// node ref.js ENDPOINTS.json HHMM HIT_RATE CACHE_BONUS MIN_UPTIME
// -> {"order":[tags...], "score":{tag:score}, "excluded":[tags...]}
const fs = require('fs');
const [file, hhmm, hit, bonus, minUp] = process.argv.slice(2);
const eps = JSON.parse(fs.readFileSync(file, 'utf8'));
const t = Number(hhmm), H = Number(hit), B = Number(bonus), MU = Number(minUp);
const inWin = (s, e) => s === e ? false : s < e ? (t >= s && t < e) : (t >= s || t < e);
function price(pr, key) {
  let v = pr[key] == null ? NaN : Number(pr[key]);
  for (const o of pr.overrides || []) {
    if (o.min_prompt_tokens != null) continue;          // request-dependent tier
    if ((o.utc_start != null || o.utc_end != null) && !inWin(o.utc_start, o.utc_end)) continue;
    if (o[key] != null) v = Number(o[key]);             // later entries win per key
  }
  if (!Number.isFinite(v) || v < 0) return null;
  const d = typeof pr.discount === 'number' ? pr.discount : 0;
  return v * (1 - d);
}
const ranked = [], excluded = [];
for (const e of eps) {
  const p = e.pricing || {}, prompt = price(p, 'prompt'), comp = price(p, 'completion');
  if ((e.status != null && e.status !== 0) || (e.uptime_last_30m != null && e.uptime_last_30m < MU) ||
      prompt == null || comp == null) { excluded.push(e.tag); continue; }
  const cr = price(p, 'input_cache_read') ?? prompt;
  const eff = H * cr + (1 - H) * prompt, cost = eff * 0.4 + comp * 0.6;
  const implicit = typeof e.supports_implicit_caching === 'boolean' ? e.supports_implicit_caching : cr < prompt;
  const b = implicit ? B : 1, tp = e.throughput_last_30m ? e.throughput_last_30m.p50 : null;
  const score = tp == null ? 0 : cost === 0 ? tp * b : tp / cost * b;
  ranked.push({ tag: e.tag, has: tp != null, free: cost === 0, score });
}
ranked.sort((a, b) => (b.has - a.has) || (b.free - a.free) || (b.score - a.score));
const score = {};
for (const r of ranked) score[r.tag] = r.score;
process.stdout.write(JSON.stringify({ order: ranked.map((r) => r.tag), score, excluded }));
EOF

# ref_order FILE HHMM [CACHE_BONUS]: the formula's order, comma-joined
ref_order() {
	json_get "$(node "$ORGW_T/ref.js" "$1" "$2" 0.9 "${3:-2}" 95)" 'j.order.join(",")'
}
# got_order OUT MODEL: orgw-score --json's candidate order
got_order() {
	json_get "$1" "(j.models['$2'].candidates || []).map(c => c.tag).join(',')"
}
# put MODEL FILE: the model's endpoints on the double
put() {
	double_ctl PUT "endpoints/$1" "$(cat "$2")" >/dev/null
}

# --- 1. A model whose order the formula fixes ------------------------------
# fast: 100 tok/s at cost 1.6e-7 (6.25e8); slow: 50 at the same cost;
# pricey: 150 at 6.4e-7 (2.3e8); cachey: implicit caching, cheaper reads;
# nulltp: the cheapest but no throughput (ranks last); down: uptime 80;
# broken: status -1; noprice: no completion price.
R=test/rank
cat >"$ORGW_T/rank.json" <<'EOF'
[
 {"tag":"nulltp","provider_name":"NullTP","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.00000001","completion":"0.00000001"},
  "supports_implicit_caching":false,"throughput_last_30m":null},
 {"tag":"pricey","provider_name":"Pricey","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000004","completion":"0.0000008"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":150}},
 {"tag":"slow","provider_name":"Slow","status":0,"uptime_last_30m":99.5,
  "pricing":{"prompt":"0.0000001","completion":"0.0000002"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":50}},
 {"tag":"down","provider_name":"Down","status":0,"uptime_last_30m":80,
  "pricing":{"prompt":"0.00000001","completion":"0.00000002"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":500}},
 {"tag":"fast","provider_name":"Fast","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.0000001","completion":"0.0000002","discount":0},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":100}},
 {"tag":"broken","provider_name":"Broken","status":-1,"uptime_last_30m":100,
  "pricing":{"prompt":"0.00000001","completion":"0.00000002"},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":500}},
 {"tag":"cachey","provider_name":"Cachey","uptime_last_30m":null,
  "pricing":{"prompt":"0.0000003","completion":"0.0000006","input_cache_read":"0.00000003"},
  "throughput_last_30m":{"p50":30}},
 {"tag":"noprice","provider_name":"NoPrice","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.0000001"},"throughput_last_30m":{"p50":90}}
]
EOF
put $R "$ORGW_T/rank.json"
score 1200 "$ORGW_T/r.json" -- --json --model $R
t_eq "orgw-score --model $R exits 0" 0 "$SCORE_RC"
want=$(ref_order "$ORGW_T/rank.json" 1200)
t_eq "the formula's order is the one designed" "fast,slow,pricey,cachey,nulltp" "$want"
t_eq "orgw-score ranks $R in the formula's order" "$want" "$(got_order "$ORGW_T/r.json" $R)"
t_eq "winner is fast" fast "$(json_get "$ORGW_T/r.json" "j.models['$R'].winner")"
t_check "every score equals the formula's (relative 1e-9)" json_ok "$ORGW_T/r.json" "
	(() => { const ref = $(node "$ORGW_T/ref.js" "$ORGW_T/rank.json" 1200 0.9 2 95);
	  return j.models['$R'].candidates.every(c =>
	    Math.abs(c.score - ref.score[c.tag]) <= 1e-9 * Math.max(1, ref.score[c.tag])); })()"
t_check "a null throughput ranks last and says so (throughput null, score 0)" json_ok \
	"$ORGW_T/r.json" "(c => c.tag === 'nulltp' && c.throughput === null && c.score === 0)(j.models['$R'].candidates.at(-1))"
t_check "cache_read below prompt without the flag counts as implicit caching" json_ok \
	"$ORGW_T/r.json" "j.models['$R'].candidates.find(c => c.tag === 'cachey').implicit_cache === true &&
	 j.models['$R'].candidates.find(c => c.tag === 'cachey').bonus === 2"
t_eq "excluded: down (uptime), broken (status), noprice (price)" \
	"down:uptime broken:status noprice:price" \
	"$(json_get "$ORGW_T/r.json" "j.models['$R'].excluded.map(e => e.tag + ':' + e.excluded).join(' ')")"

score 1200 "$ORGW_T/r.txt" -- --model $R
t_match "the table prints the uptime exclusion with its reason" \
	'down +Down +excluded: uptime: uptime 80\.0 < 95' "$(cat "$ORGW_T/r.txt")"
t_match "the table prints the status exclusion with its reason" \
	'broken +Broken +excluded: status: status -1' "$(cat "$ORGW_T/r.txt")"
t_match "the table marks the null-throughput row" \
	'nulltp +NullTP .* - .*no throughput: ranked last' "$(grep nulltp "$ORGW_T/r.txt")"
t_match "the table has a header naming every term" \
	'rank +tag +provider +prompt +cache_rd +complet +eff_in +cost +tput_p50 +uptime +cache +bonus +score +hit +hit_src +hit_tok' \
	"$(cat "$ORGW_T/r.txt")"
t_match "the per-model line gives time, price clock and fetch time" \
	"^== $R: scored at 2025-12-01 12:00:[0-9]{2} UTC \\([0-9]+\\), price clock 1200 UTC, fetch [0-9]+ ms" \
	"$(grep "^== $R" "$ORGW_T/r.txt")"
t_match "prices are shown per million tokens (fast: 0.1 / 0.2, cost 0.16)" \
	'^ +1 +fast +Fast +0\.1 +0\.1 +0\.2 +0\.1 +0\.16 +100\.0 +99\.9 +no +1 +6\.25e\+08 +0\.9 +assumed +0$' \
	"$(grep ' fast ' "$ORGW_T/r.txt")"
t_match "the last line sums up the run" \
	'^orgw-score [0-9-]+ [0-9:]+Z: 1 models, 1 scored, 0 failed, wall [0-9]+ ms' \
	"$(tail -n 1 "$ORGW_T/r.txt")"

# The run above wrote the candidates: GET /stats shows the same order.
orgw_http GET /stats
t_eq "GET /stats lists the candidates in the formula's order" "$want" \
	"$(json_get "$HTTP_BODY" "j.models['$R'].candidates.map(c => c.tag).join(',')")"
t_eq "the scorer did not lock anything" undefined \
	"$(json_get "$HTTP_BODY" "String(j.models['$R'].lock)")"

# --- 2. A time window (wrapping midnight) reorders ------------------------
# night: 2e-7/4e-7 at 50 tok/s (1.56e8) by day; 1e-7/1e-7 from 23:00 to
# 02:00 UTC (5e8).  flat: 1e-7/2e-7 at 40 tok/s (2.5e8) all day.  A later
# override for 23:00-23:30 makes the night endpoint dear again (per key).
W=test/window
cat >"$ORGW_T/window.json" <<'EOF'
[
 {"tag":"flat","provider_name":"Flat","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.0000001","completion":"0.0000002"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":40}},
 {"tag":"night","provider_name":"Night","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.0000002","completion":"0.0000004","overrides":[
    {"utc_start":2300,"utc_end":200,"prompt":"0.0000001","completion":"0.0000001"},
    {"utc_start":2300,"utc_end":2330,"completion":"0.000001"},
    {"min_prompt_tokens":1000,"prompt":"0.0000000001","completion":"0.0000000001"}]},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":50}}
]
EOF
put $W "$ORGW_T/window.json"
for case in "1200 flat,night outside the window" \
	"0030 night,flat inside the window after midnight" \
	"2345 night,flat inside the window before midnight" \
	"0200 flat,night at the window's end (half-open)" \
	"2315 flat,night where a later override wins per key"; do
	set -- $case
	hhmm=$1 order=$2
	shift 2
	score "$hhmm" "$ORGW_T/w.json" -- --json --dry-run --model $W
	t_eq "window: $hhmm UTC, $*: formula says $order" "$order" \
		"$(ref_order "$ORGW_T/window.json" "$hhmm")"
	t_eq "window: $hhmm UTC, $*: orgw-score ranks $order" "$order" \
		"$(got_order "$ORGW_T/w.json" $W)"
done
t_eq "the JSON names the price clock used" 2315 \
	"$(json_get "$ORGW_T/w.json" "j.models['$W'].utc_hhmm")"

# The same through the state: a real run at 00:30, then at 12:00.
score 0030 "$ORGW_T/w1.json" -- --json --model $W
t_eq "GET /stats after a run at 00:30 UTC: night first" "night,flat" \
	"$(json_get "$(orgw_curl /stats)" "j.models['$W'].candidates.map(c => c.tag).join(',')")"
score 1200 "$ORGW_T/w2.json" -- --json --model $W
t_eq "GET /stats after a run at 12:00 UTC: flat first" "flat,night" \
	"$(json_get "$(orgw_curl /stats)" "j.models['$W'].candidates.map(c => c.tag).join(',')")"

# --- 3. CACHE_BONUS 1 vs 2 --------------------------------------------------
# cache: implicit caching, reads at a tenth: cost 2.55e-7 at 40 tok/s
# (1.57e8, 3.13e8 doubled); plain: cost 2.2e-7 at 50 tok/s (2.27e8).
C=test/bonus
cat >"$ORGW_T/bonus.json" <<'EOF'
[
 {"tag":"plain","provider_name":"Plain","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.0000001","completion":"0.0000003"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":50}},
 {"tag":"cache","provider_name":"Cache","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.0000002","completion":"0.0000004","input_cache_read":"0.00000002"},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":40}}
]
EOF
put $C "$ORGW_T/bonus.json"
score 1200 "$ORGW_T/b1.json" CACHE_BONUS=1 -- --json --dry-run --model $C
score 1200 "$ORGW_T/b2.json" CACHE_BONUS=2 -- --json --dry-run --model $C
t_eq "CACHE_BONUS=1: formula and orgw-score agree: plain wins" \
	"plain,cache plain,cache" \
	"$(ref_order "$ORGW_T/bonus.json" 1200 1) $(got_order "$ORGW_T/b1.json" $C)"
t_eq "CACHE_BONUS=2: formula and orgw-score agree: cache wins" \
	"cache,plain cache,plain" \
	"$(ref_order "$ORGW_T/bonus.json" 1200 2) $(got_order "$ORGW_T/b2.json" $C)"
t_eq "the JSON carries the bonus applied" "1 2" \
	"$(json_get "$ORGW_T/b1.json" "j.models['$C'].candidates.find(c => c.tag === 'cache').bonus") $(json_get "$ORGW_T/b2.json" "j.models['$C'].candidates.find(c => c.tag === 'cache').bonus")"

# --- 4. Free endpoints: no division by zero --------------------------------
F=test/free
cat >"$ORGW_T/free.json" <<'EOF'
[
 {"tag":"free-slow","provider_name":"FreeSlow","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0","completion":"0"},
  "supports_implicit_caching":false,"throughput_last_30m":{"p50":10}},
 {"tag":"free-fast","provider_name":"FreeFast","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0.0000001","completion":"0.0000002","discount":1},
  "supports_implicit_caching":true,"throughput_last_30m":{"p50":20}},
 {"tag":"free-null","provider_name":"FreeNull","status":0,"uptime_last_30m":99,
  "pricing":{"prompt":"0","completion":"0"},
  "supports_implicit_caching":false,"throughput_last_30m":null}
]
EOF
put $F "$ORGW_T/free.json"
score 1200 "$ORGW_T/f.json" -- --json --model $F
score 1200 "$ORGW_T/f.txt" -- --dry-run --model $F
t_eq "free endpoints: scored (exit 0)" 0 "$SCORE_RC"
t_eq "free endpoints rank by throughput (a 100% discount is free too)" \
	"free-fast,free-slow,free-null" "$(got_order "$ORGW_T/f.json" $F)"
t_eq "orgw-score agrees with the formula" "$(ref_order "$ORGW_T/free.json" 1200)" \
	"$(got_order "$ORGW_T/f.json" $F)"
t_check "every number in the JSON is finite (no NaN/inf, which print as null)" json_ok \
	"$ORGW_T/f.json" "j.models['$F'].candidates.every(c =>
	  ['prompt','cache_read','completion','effective_input','cost','bonus','score'].every(k => Number.isFinite(c[k])))"
t_eq "scores are throughput x bonus: 40, 10, 0" "40 10 0" \
	"$(json_get "$ORGW_T/f.json" "j.models['$F'].candidates.map(c => c.score).join(' ')")"
t_check "no nan or inf in the table" bash -c "! grep -Eiw 'nan|-?inf(inity)?' '$ORGW_T/f.txt'"
t_check "no nan or inf in the state either" bash -c \
	"! curl -sS -H 'Authorization: Bearer $ORGW_KEY' '$ORGW_URL/stats' | grep -Eiw 'nan|inf(inity)?'"

# --- 5. The double's default data -----------------------------------------
D=deepseek/deepseek-v3.2
score 1200 "$ORGW_T/d1.txt" -- --dry-run --model $D
score 2000 "$ORGW_T/d2.txt" -- --dry-run --model $D
echo "# orgw-score --dry-run --model $D (ORGW_TEST_NOW at 12:00 UTC, peak prices):"
sed -e 's/^/#   /' "$ORGW_T/d1.txt"
echo "# the same at 20:00 UTC (DeepSeek's off-peak override, half price):"
grep -E '^ +[0-9]+ ' "$ORGW_T/d2.txt" | sed -e 's/^/#   /'
t_eq "default data at 12:00: deepseek, deepinfra/fp8, novita" "deepseek deepinfra/fp8 novita" \
	"$(grep -E '^ +[0-9]+ ' "$ORGW_T/d1.txt" | awk '{print $2}' | xargs)"
t_match "at 12:00 deepseek's prompt price is 0.28/M" '^ +1 +deepseek +DeepSeek +0\.28 +0\.028 +0\.42 ' \
	"$(grep ' deepseek ' "$ORGW_T/d1.txt")"
t_match "at 20:00 the off-peak override halves it to 0.14/M" '^ +1 +deepseek +DeepSeek +0\.14 +0\.014 +0\.21 ' \
	"$(grep ' deepseek ' "$ORGW_T/d2.txt")"
