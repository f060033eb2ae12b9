#!/bin/bash
# t0830-endpoint-key: endpoint data that holds the upstream key (a hostile
# or broken upstream) never shows it.  The double serves a model whose two
# best endpoints carry OPENROUTER_API_KEY, one as its tag and one inside
# its provider_name (past the 127 bytes orgw keeps of a name, so a check
# after the cut would keep a prefix); a third is clean.  After inline
# scoring, requests on every API, orgw-score's run, its status command,
# /stats, /metrics and /status: the clean endpoint holds the lock, and no
# response header or body, no worker log line and no orgw-score output
# holds the key or its first 16 bytes.
. "$(dirname "$0")/../lib.sh"

orgw_start
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
M=hostile/names
ALL=$ORGW_T/all
: >"$ALL"
keep() { cat "$HTTP_HEADERS_FILE" "$HTTP_BODY_FILE" >>"$ALL"; printf '\n' >>"$ALL"; }

LONG=$(printf 'x%.0s' $(seq 120))$UPSTREAM_KEY
ep() { # TAG NAME THROUGHPUT
	printf '{"tag":"%s","provider_name":"%s","pricing":{"prompt":"0.000001","completion":"0.000001"},"status":0,"uptime_last_30m":99,"max_completion_tokens":4096,"throughput_last_30m":{"p50":%s}}' "$1" "$2" "$3"
}
double_ctl PUT "endpoints/$M" "[$(ep "$UPSTREAM_KEY" Evil 900),$(ep evil2 "$LONG" 800),$(ep clean Clean 10)]" >/dev/null ||
	t_fail "the double took the hostile endpoints"

chat='{"model":"'$M'","messages":[{"role":"user","content":"hi"}]}'
orgw_http POST /v1/chat/completions "$chat"
keep
t_eq "a chat request is served" 200 "$HTTP_STATUS"
t_eq "pinned to the clean endpoint" "clean scored" \
	"$(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"
orgw_http POST /v1/chat/completions "$chat"
keep
t_eq "and stays locked there" "clean locked" \
	"$(http_header X-Orgw-Provider) $(http_header X-Orgw-Route)"
orgw_http POST /v1/messages '{"model":"'$M'","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}'
keep
t_eq "Messages on the same lock" "200 clean" "$HTTP_STATUS $(http_header X-Orgw-Provider)"
orgw_http POST /v1/responses '{"model":"'$M'","input":"hi"}'
keep
t_eq "Responses on the same lock" "200 clean" "$HTTP_STATUS $(http_header X-Orgw-Provider)"
orgw_http POST /v1/chat/completions '{"model":"'$M'","stream":true,"messages":[{"role":"user","content":"hi"}]}'
keep
t_eq "a stream on the same lock" "200 clean" "$HTTP_STATUS $(http_header X-Orgw-Provider)"

ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" >"$ORGW_T/score.out" 2>&1
t_eq "orgw-score scores the model" 0 "$?"
t_eq "its table shows the two as excluded: secret" 2 "$(grep -c 'secret' "$ORGW_T/score.out")"
ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" --json --model "$M" >"$ORGW_T/score.json" 2>&1
ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" status >"$ORGW_T/status.out" 2>&1
ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" status --json >"$ORGW_T/status.json" 2>&1
t_eq "orgw-score status lists the clean candidate only" 1 \
	"$(json_get "$ORGW_T/status.json" "j.models['$M'].candidates.length")"

for p in /stats /metrics /v1/models /healthz; do
	orgw_http GET "$p" ""
	keep
	t_eq "GET $p" 200 "$HTTP_STATUS"
done
CK=$(curl -sS -o /dev/null -D - --data-raw "key=$ORGW_KEY" "$ORGW_URL/status" |
	sed -n 's/^Set-Cookie: \([^;]*\);.*/\1/Ip')
curl -sS -D - -H "Cookie: $CK" "$ORGW_URL/status" >>"$ALL"
t_check "the /status page shows the model" grep -q '<h2>hostile/names</h2>' "$ALL"

for f in "$ALL" "$ORGW_LOG" "$ORGW_T/score.out" "$ORGW_T/score.json" "$ORGW_T/status.out" \
	"$ORGW_T/status.json"; do
	t_eq "no trace of the key in $(basename "$f")" 0 \
		"$(grep -c -F -e "${UPSTREAM_KEY:0:16}" "$f")"
done
