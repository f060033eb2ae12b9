#!/bin/bash
# t0140-concurrency: 200 requests from 32 parallel clients all succeed and
# /stats counts exactly 200: no update lost between concurrent workers.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=8 orgw_start
M=deepseek/deepseek-v3.2
body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
stream_body="{\"model\":\"$M\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
printf '%s' "$body" >"$ORGW_T/b.json"
printf '%s' "$stream_body" >"$ORGW_T/s.json"

one() { # N: one request, streaming every third; prints "N STATUS"
	local f=b.json
	[ $(($1 % 3)) -eq 0 ] && f=s.json
	curl -sS -o "$ORGW_T/out.$1" -w "$1 %{http_code}\n" --max-time 60 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary @"$ORGW_T/$f" "$ORGW_URL/v1/chat/completions"
}
export -f one
export ORGW_T ORGW_KEY ORGW_URL
seq 200 | xargs -P 32 -I{} bash -c 'one {}' >"$ORGW_T/codes" 2>&1
t_eq "200 requests answered 200" 200 "$(grep -c ' 200$' "$ORGW_T/codes")"
t_eq "every streamed answer ended with [DONE]" 66 \
	"$(grep -l 'data: \[DONE\]' "$ORGW_T"/out.* | wc -l)"
t_eq "every plain answer has the content" 134 \
	"$(grep -l '"content":"Hello from deepseek"' "$ORGW_T"/out.* | wc -l)"
orgw_stats_settle "$M" 200
orgw_http GET /stats
t_eq "/stats counts exactly 200 requests" 200 "$(json_get "$HTTP_BODY" "j.models['$M'].requests")"
t_eq "/stats counts exactly 200 ok" 200 "$(json_get "$HTTP_BODY" "j.models['$M'].ok")"
t_eq "/stats counts 600 completion tokens" 600 "$(json_get "$HTTP_BODY" "j.models['$M'].tokens.completion")"
t_eq "per-provider count is 200 too" 200 \
	"$(json_get "$HTTP_BODY" "j.models['$M'].by_provider.deepseek.requests")"
t_eq "the double saw exactly 200 chat requests" 200 \
	"$(json_get "$(double_ctl GET stats)" "j.paths['/api/v1/chat/completions']")"
# Requests that see the model unscored at the same moment each score it
# inline (each request is pinned; none waits on another), so the fetches
# are bounded by the requests served at once (the 32 clients: workers
# have WORKER_THREADS threads each), not by the number of requests.
n=$(json_get "$(double_ctl GET 'log?path=endpoints')" 'j.requests.length')
echo "# inline endpoints fetches during the burst: $n"
t_check "inline scorings bounded by the 32 clients (got $n)" test "$n" -ge 1 -a "$n" -le 32
