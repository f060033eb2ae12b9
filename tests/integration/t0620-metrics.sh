#!/bin/bash
# t0620-metrics: GET /metrics with the real thing.
# Requests through the double (ok, cached tokens, a 429 retried, a stream,
# a breaker trip that moves the lock, a client error, 16 at once), then: no key or a
# wrong key is a 401, METRICS_KEY and the client key read it under /,
# /v1 and /api/v1; `promtool check metrics` passes; the counters equal
# /stats (requests, ok, tokens, spend, savings, latency counts, trips);
# and Debian's prometheus, run on loopback with the key as its scrape
# credentials, scrapes it and answers the same values on its query API.
. "$(dirname "$0")/../lib.sh"

MK=metrics-key-0620
orgw_start METRICS_KEY=$MK FAIL_LIMIT=2 COOLDOWN_SECONDS=600 MAX_ATTEMPTS=4 \
	RETRY_429_DELAYS=1
M=deepseek/deepseek-v3.2

# --- traffic ---------------------------------------------------------------
# Prompts longer than the 40 tokens the double reports as cached.
double_ctl POST config '{"cached_tokens":40}' >/dev/null
LONG=$(printf 'a long prompt %.0s' $(seq 1 60))
chat() { orgw_chat --model $M --message "$LONG" "$@"; }
out=$(chat)
t_eq "a first request locks deepseek" "true deepseek" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-provider"]')"
chat --stream >/dev/null
double_ctl POST faults '{"faults":[{"kind":"status","status":429,"times":1,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(chat)
t_eq "a 429 retried, then ok" true "$(json_get "$out" 'j.ok')"
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":2,"match":{"tag":"deepseek"}}]}' >/dev/null
out=$(chat)
t_eq "two 503: the breaker trips, the request ends on deepinfra/fp8" \
	"true deepinfra/fp8" \
	"$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-provider"]')"
double_ctl POST faults '{"faults":[{"kind":"status","status":400,"times":1,"match":{"tag":"deepinfra/fp8"}}]}' >/dev/null
chat >/dev/null
double_ctl DELETE faults >/dev/null
# 16 at once: every one counted, in /stats and /metrics alike.
pids=()
for i in $(seq 16); do
	curl -sS -o /dev/null --max-time 60 -H "Authorization: Bearer $ORGW_KEY" \
		-H 'Content-Type: application/json' --data-binary \
		"{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"$LONG $i\"}]}" \
		"$ORGW_URL/v1/chat/completions" &
	pids+=($!)
done
wait "${pids[@]}" # not a bare wait: the double and lighttpd are children too

S=$(orgw_curl /stats)
st() { json_get "$S" "j.models['$M'].$1"; }
t_eq "/stats: 21 requests, 20 ok, 1 trip, some prompt tokens cached" \
	"21 20 1 true" "$(st requests) $(st ok) $(st breaker_trips) \
$([ "$(st tokens.cached)" -gt 0 ] && [ "$(st tokens.cached)" -lt "$(st tokens.prompt)" ] && echo true)"

# --- the endpoint ------------------------------------------------------------
HTTP_KEY='' orgw_http GET /metrics
t_eq "no key: 401" 401 "$HTTP_STATUS"
HTTP_KEY=wrong-key orgw_http GET /metrics
t_eq "a wrong key: 401" 401 "$HTTP_STATUS"
HTTP_KEY=$MK orgw_http POST /v1/chat/completions \
	"{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
t_eq "METRICS_KEY is no client key" 401 "$HTTP_STATUS"
for p in /metrics /v1/metrics /api/v1/metrics; do
	HTTP_KEY=$MK orgw_http GET $p
	t_eq "METRICS_KEY: GET $p 200, Prometheus text 0.0.4" \
		"200 text/plain; version=0.0.4; charset=utf-8" \
		"$HTTP_STATUS $(http_header Content-Type)"
done
orgw_http GET /metrics
t_eq "the client key reads it too" 200 "$HTTP_STATUS"
HTTP_KEY=$MK orgw_http GET /metrics
MET=$HTTP_BODY
printf '%s\n' "$MET" >"$ORGW_T/metrics.txt"
orgw__log "$(grep -c . "$ORGW_T/metrics.txt") lines; e.g.:"
grep -E '^orgw_(requests|tokens)_total' "$ORGW_T/metrics.txt" | head -6 | sed 's/^/#   /' >&2

if out=$(promtool check metrics <"$ORGW_T/metrics.txt" 2>&1); then
	t_ok "promtool check metrics passes"
else
	t_fail "promtool check metrics passes" "$out"
fi

# The text parsed here the simple way (names, labels, value), summed by
# a filter, against /stats.
pm() { # NAME FILTER-JS: the sum of NAME's samples whose labels l pass
	node -e '
const [txt, name, filt] = process.argv.slice(1);
let sum = 0, n = 0;
for (const line of txt.split("\n")) {
  const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
  if (!m || m[1] !== name) continue;
  const l = {};
  for (const kv of (m[2] || "").matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g))
    l[kv[1]] = kv[2].replace(/\\(.)/g, (_, c) => c === "n" ? "\n" : c);
  if (!eval(filt)) continue;
  sum += Number(m[3]); n++;
}
console.log(n ? +sum.toPrecision(15) : "none");
' "$MET" "$1" "$2"
}
mm="l.model === '$M'"
t_eq "orgw_requests_total = /stats requests" "$(st requests)" \
	"$(pm orgw_requests_total "$mm")"
t_eq "orgw_requests_total{outcome=ok} = /stats ok" "$(st ok)" \
	"$(pm orgw_requests_total "$mm && l.outcome === 'ok'")"
t_eq "the 400 relayed counts as client_error, on deepinfra/fp8" 1 \
	"$(pm orgw_requests_total "$mm && l.outcome === 'client_error' && l.provider === 'deepinfra/fp8'")"
for ty in input:prompt cache_read:cached output:completion; do
	t_eq "orgw_tokens_total{type=${ty%%:*}} = /stats tokens.${ty#*:}" \
		"$(st "tokens.${ty#*:}")" \
		"$(pm orgw_tokens_total "$mm && l.type === '${ty%%:*}'")"
done
t_eq "orgw_tokens_total{provider=deepseek,type=input} = by_provider" \
	"$(st 'by_provider.deepseek.tokens.prompt')" \
	"$(pm orgw_tokens_total "$mm && l.provider === 'deepseek' && l.type === 'input'")"
close() { node -e 'const [a, b] = process.argv.slice(1).map(Number);
console.log(Math.abs(a - b) <= 1e-12 ? "equal" : `${a} vs ${b}`)' "$1" "$2"; }
t_eq "orgw_spend_usd_total = /stats spend_usd" equal \
	"$(close "$(pm orgw_spend_usd_total "$mm")" "$(st spend_usd)")"
t_eq "orgw_cache_savings_usd = /stats saved_usd" equal \
	"$(close "$(pm orgw_cache_savings_usd "$mm")" "$(st saved_usd)")"
t_eq "ttfb histogram: _count = /stats latency.ttfb_count" \
	"$(st latency.ttfb_count)" \
	"$(pm orgw_time_to_first_token_seconds_count "$mm")"
t_eq "ttfb histogram: _sum in seconds = ttfb_ms_sum / 1000" equal \
	"$(close "$(pm orgw_time_to_first_token_seconds_sum "$mm")" \
		"$(st 'latency.ttfb_ms_sum / 1000')")"
t_eq "duration histogram: le=+Inf = _count = total_count" \
	"$(st latency.total_count) $(st latency.total_count)" \
	"$(pm orgw_request_duration_seconds_bucket "$mm && l.le === '+Inf'") $(pm orgw_request_duration_seconds_count "$mm")"
t_eq "duration histogram: buckets never fall" true "$(node -e '
const v = process.argv[1].split("\n").filter(l => l.startsWith("orgw_request_duration_seconds_bucket"))
  .map(l => Number(l.split(" ").pop()));
console.log(v.length === 13 && v.every((x, i) => i === 0 || x >= v[i - 1]));' "$MET")"
t_eq "orgw_breaker_trips_total{provider=deepseek} = /stats breaker_trips" \
	"$(st breaker_trips)" \
	"$(pm orgw_breaker_trips_total "$mm && l.provider === 'deepseek'")"
t_eq "orgw_cooldowns_active: deepseek cooling" 1 \
	"$(pm orgw_cooldowns_active "$mm")"
t_eq "orgw_lock_changes_total: deepseek -> deepinfra/fp8" 1 \
	"$(pm orgw_lock_changes_total "$mm")"
t_eq "orgw_requests_in_flight: nothing but the scrape itself, not counted" 0 \
	"$(pm orgw_requests_in_flight true)"
t_eq "orgw_state_lost_updates_total = /stats lost_updates (0)" \
	"$(json_get "$(orgw_curl /stats)" j.lost_updates)" \
	"$(pm orgw_state_lost_updates_total true)"

# --- a real Prometheus scrapes it -------------------------------------------
PROM_PID=
prom_stop() {
	[ -n "$PROM_PID" ] && orgw__kill "$PROM_PID"
	PROM_PID=
}
trap 'rc=$?; prom_stop; (exit $rc); orgw__on_exit' EXIT
PD=$ORGW_T/prometheus
mkdir -p "$PD/data"
cat >"$PD/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: orgw
    metrics_path: /metrics
    authorization:
      credentials: $MK
    static_configs:
      - targets: ['${ORGW_URL#http://}']
EOF
for _ in 1 2 3; do
	PP=$(orgw__free_port)
	prometheus --config.file="$PD/prometheus.yml" \
		--storage.tsdb.path="$PD/data" \
		--web.listen-address="127.0.0.1:$PP" --log.level=warn \
		>"$PD/log" 2>&1 &
	PROM_PID=$!
	orgw__wait_http "http://127.0.0.1:$PP/-/ready" 20 && break
	prom_stop
done
[ -n "$PROM_PID" ] || { t_fail "prometheus started" "$(tail -n 20 "$PD/log")"; exit 1; }
q() { # PromQL: the API's result array
	curl -sS --max-time 5 -G "http://127.0.0.1:$PP/api/v1/query" \
		--data-urlencode "query=$1"
}
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
	r=$(q 'sum(orgw_requests_total)')
	[ "$(json_get "$r" 'j.data.result.length')" = 1 ] && break
	sleep 0.5
done
t_eq "prometheus: the scrape is up (with the key as credentials)" 1 \
	"$(json_get "$(q 'up{job="orgw"}')" 'j.data.result[0].value[1]')"
t_eq "prometheus: sum(orgw_requests_total) = /stats requests" \
	"$(st requests)" "$(json_get "$(q 'sum(orgw_requests_total)')" 'j.data.result[0]?.value[1]')"
t_eq "prometheus: orgw_requests_total{outcome=\"ok\"} = /stats ok" "$(st ok)" \
	"$(json_get "$(q "sum(orgw_requests_total{model=\"$M\",outcome=\"ok\"})")" 'j.data.result[0]?.value[1]')"
t_eq "prometheus: cache_read tokens = /stats tokens.cached" "$(st tokens.cached)" \
	"$(json_get "$(q 'sum(orgw_tokens_total{type="cache_read"})')" 'j.data.result[0]?.value[1]')"
t_eq "prometheus: the ttfb histogram's series (13 buckets)" 13 \
	"$(json_get "$(q 'orgw_time_to_first_token_seconds_bucket')" 'j.data.result.length')"
t_eq "prometheus: histogram_quantile works on it" true \
	"$(json_get "$(q 'histogram_quantile(0.5, sum by (le) (orgw_request_duration_seconds_bucket))')" \
		'Number(j.data.result[0]?.value[1]) > 0')"
t_eq "prometheus: the scrape met no format error" "" \
	"$(grep -iE 'error|invalid' "$PD/log" | head -3)"
prom_stop
