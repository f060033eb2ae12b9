#!/bin/bash
# t0570-long-session: a long conversation with real durations keeps its
# provider and its cache.
#
# 20 turns on one model, streamed and not, each turn's answer appended to
# the conversation.  Five turns last longer in all than SLOW_THRESHOLD_MS
# and UPSTREAM_TIMEOUT_MS: their first token (or, non-streamed, their first
# byte: the padding OpenRouter sends while the provider works) comes in
# time, then a long answer.  That is generation, not lag and not a timeout
# (docs/design.md section 5), so: no breaker trip, the lock never moves,
# every answer is whole, each generation goes upstream exactly once, and the
# cached share of prompt tokens is exactly what one warm provider gives (the
# double's prompt_cache; tests/js/session.mjs computes the ideal from the
# prompts it sent).  Thresholds are scaled down with the durations to keep it
# short: SLOW_THRESHOLD_MS 750 and UPSTREAM_TIMEOUT_MS 1250, long turns
# of 2 s.
. "$(dirname "$0")/../lib.sh"

orgw_start SLOW_THRESHOLD_MS=750 UPSTREAM_TIMEOUT_MS=1250 \
	REQUEST_TIMEOUT_MS=30000 FAIL_LIMIT=3
M=deepseek/deepseek-v3.2
double_ctl POST config '{"prompt_cache":true}' >/dev/null

plan=$(node -e '
const short = { first_token_delay_ms: 0, padding_bytes: 0, chunks: 3, spacing_ms: 0 };
// first token after 150 ms, then 30 tokens 60 ms apart: 1.95 s in all
const longStream = { first_token_delay_ms: 150, padding_bytes: 0, chunks: 30, spacing_ms: 60,
  keepalive_interval_ms: 500 };
// 200 and padding at once, more padding every 200 ms, the JSON after 1.75 s
const longJson = { first_token_delay_ms: 1750, padding_bytes: 16, chunks: 30, spacing_ms: 0,
  keepalive_interval_ms: 200 };
const plan = [];
for (let i = 0; i < 20; i++) {
  const stream = i % 2 === 0;
  const long = [3, 6, 11, 14, 19].includes(i);
  plan.push({ stream, config: long ? (stream ? longStream : longJson) : short });
}
process.stdout.write(JSON.stringify(plan));')
t_eq "the plan has 5 long turns, streamed and not" "5 2" \
	"$(json_get "$plan" '[j.filter((s) => s.config.chunks === 30).length, j.filter((s) => s.config.chunks === 30 && s.stream).length].join(" ")')"

out=$(node "$ORGW_ROOT/tests/js/session.mjs" --base "$ORGW_URL/v1" --key "$ORGW_KEY" \
	--model "$M" --double "$DOUBLE_URL" --plan "$plan")
json_get "$out" 'j.turns.map((t, i) => `turn ${i + 1}: ${t.stream ? "stream" : "json  "} ${t.status} ${t.provider} ${t.route} attempts=${t.attempts} ${t.t_total_ms} ms prompt=${t.prompt} cached=${t.cached} ideal=${j.ideal_cached[i]}${t.error ? " " + t.error.message : ""}`).join("\n") + "\n"' |
	sed 's/^/# /'

t_eq "every answer is whole (finish_reason stop, content)" 20 \
	"$(json_get "$out" 'j.turns.filter((t) => t.ok).length')"
t_eq "every stream ended with [DONE]" 10 \
	"$(json_get "$out" 'j.turns.filter((t) => t.stream && t.done).length')"
t_eq "the long answers are long (30 tokens each)" 5 \
	"$(json_get "$out" 'j.turns.filter((t) => t.content.split(" ").length >= 30).length')"
t_check "the long turns did outlast UPSTREAM_TIMEOUT_MS" json_ok "$out" \
	'j.turns.filter((t) => t.t_total_ms > 1250).length === 5'
t_eq "every turn went to deepseek in one attempt" "20" \
	"$(json_get "$out" 'j.turns.filter((t) => t.provider === "deepseek" && t.attempts === 1).length')"

orgw_http GET /stats
st=$HTTP_BODY
t_eq "no breaker trip, no lag, no timeout, no failover" "0 0 0 0" \
	"$(json_get "$st" "((m) => [m.breaker_trips, m.errors.slow, m.errors.timeout, m.failovers].join(' '))(j.models['$M'])")"
t_eq "the lock stayed on deepseek" deepseek "$(json_get "$st" "j.models['$M'].lock.tag")"
t_eq "/stats counted 20 requests, 20 ok" "20 20" \
	"$(json_get "$st" "j.models['$M'].requests + ' ' + j.models['$M'].ok")"

double_ctl GET "log?path=/chat/completions" >"$ORGW_T/double-log.json"
t_eq "each generation went upstream exactly once, none closed by orgw" "20 0" \
	"$(json_get "$ORGW_T/double-log.json" 'j.requests.length + " " + j.requests.filter((r) => r.closed_by_client).length')"

t_check "some turns hit the cache at all (the ideal is not zero)" json_ok "$out" 'j.ideal_cached_total > 0'
t_eq "cached prompt tokens are exactly one warm provider's" \
	"$(json_get "$out" 'j.ideal_cached_total')" "$(json_get "$out" 'j.cached_total')"
t_eq "/stats counts the same cached and prompt tokens" \
	"$(json_get "$out" 'j.cached_total + " " + j.prompt_total')" \
	"$(json_get "$st" "j.models['$M'].tokens.cached + ' ' + j.models['$M'].tokens.prompt")"

# Unpinned routing against orgw's lock, on the same double: provider caches
# that expire (prompt_cache_ttl_ms 1000, minutes in real life) and a user
# who thinks 400 ms between turns (seconds to minutes in real life).  The
# same 20 short turns through orgw (one provider: every prefix is fresh)
# and straight to the double with OpenRouter's default routing (no
# provider pinned: the double, like OpenRouter, rotates the model's
# providers, so a provider sees the conversation again only after its cache
# expired).
double_ctl POST config '{"prompt_cache_ttl_ms":1000}' >/dev/null
quick=$(node -e 'process.stdout.write(JSON.stringify(Array.from({ length: 20 }, (_, i) =>
  ({ stream: i % 2 === 0, pause_ms: i ? 400 : 1300,
     config: { first_token_delay_ms: 0, padding_bytes: 0, chunks: 3, spacing_ms: 0 } }))))')
pinned=$(node "$ORGW_ROOT/tests/js/session.mjs" --base "$ORGW_URL/v1" --key "$ORGW_KEY" \
	--model "$M" --double "$DOUBLE_URL" --plan "$quick")
raw=$(node "$ORGW_ROOT/tests/js/session.mjs" --base "$DOUBLE_URL/api/v1" --key "$UPSTREAM_KEY" \
	--model "$M" --double "$DOUBLE_URL" --plan "$quick")
pct() { json_get "$1" "Math.round(1000 * $2 / j.prompt_total) / 10"; }
orgw__log "cached share of prompt tokens over 20 turns: one warm provider $(pct "$pinned" j.ideal_cached_total) %," \
	"through orgw $(pct "$pinned" j.cached_total) %, OpenRouter's default routing $(pct "$raw" j.cached_total) %"
t_eq "both runs answer every turn" "20 20" \
	"$(json_get "$pinned" 'j.turns.filter((t) => t.ok).length') $(json_get "$raw" 'j.turns.filter((t) => t.ok).length')"
t_eq "through orgw: exactly one warm provider's cached tokens" \
	"$(json_get "$pinned" 'j.ideal_cached_total')" "$(json_get "$pinned" 'j.cached_total')"
t_check "unpinned: the cached share stays far below (under a quarter of orgw's)" \
	json_ok "$raw" "j.cached_total * 4 < $(json_get "$pinned" 'j.cached_total') && j.prompt_total > 0"
