#!/bin/bash
# t0560-first-token-45s: a stream whose first token takes 45 s is not cut by
# any of the shipped server configurations: the double sends a keep-alive
# comment (": OPENROUTER PROCESSING") every 5 s until then, orgw relays
# them, and every server passes them on.  All servers at once, so the whole
# test takes one 45 s wait: through each, one stream with the openai client
# (it must finish with the full answer and [DONE]) and one with curl (the
# raw bytes: the response starts within seconds and carries the comments).
. "$(dirname "$0")/../lib.sh"

SERVERS="lighttpd caddy nginx apache-fcgid apache-cgi apache-cgi-prefork"
# Two streams per server; lighttpd, Caddy and nginx share the spawn-fcgi
# workers.
ORGW_WORKERS=8 orgw_start
# shellcheck disable=SC2086
deploy_start $SERVERS
M=$DEPLOY_MODEL

# Score the model first (the first request does it inline) on both state
# files, so the long streams start from the same point everywhere.
for s in $SERVERS; do
	deploy_chat "$s" --model "$M" >/dev/null
done
double_ctl POST config '{"first_token_delay_ms":45000,"keepalive_interval_ms":5000,"spacing_ms":0,"chunks":3}' >/dev/null

body="{\"model\":\"$M\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"take your time\"}]}"
pids=()
for s in $SERVERS; do
	deploy_chat "$s" --model "$M" --stream --timeout 120000 >"$ORGW_T/long-$s.json" 2>&1 &
	pids+=($!)
	curl -sS -N --max-time 120 -o "$ORGW_T/long-$s.raw" \
		-w '%{http_code} %{time_starttransfer} %{time_total}' \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary "$body" "${DEPLOY_URL[$s]}/v1/chat/completions" \
		>"$ORGW_T/long-$s.curl" 2>&1 &
	pids+=($!)
done
wait "${pids[@]}"

for s in $SERVERS; do
	out=$(<"$ORGW_T/long-$s.json")
	t_eq "$s: the 45 s stream ends whole, with [DONE] (openai client)" \
		"true Hello from deepseek true" \
		"$(json_get "$out" '[j.ok, j.content, j.done].join(" ")')"
	first=$(json_get "$out" 'Math.round(j.t_first_ms ?? 0)')
	t_check "$s: ... and its first token did take 45 s (got $first ms)" test "$first" -ge 44000
	read -r code ttfb total <"$ORGW_T/long-$s.curl"
	n=$(grep -c '^: ' "$ORGW_T/long-$s.raw")
	t_eq "$s: the raw stream is a 200 that ends with data: [DONE]" "200 data: [DONE]" \
		"$code $(grep -v '^$' "$ORGW_T/long-$s.raw" | tail -n 1)"
	t_check "$s: ... whose first bytes came early (${ttfb} s), not after 45 s" \
		awk -v t="$ttfb" 'BEGIN { exit !(t < 15) }'
	t_check "$s: ... and carried keep-alive comments through the wait ($n of them)" \
		test "$n" -ge 7
	printf '# %s: first byte after %s s, first token after %s ms, %s keep-alive comments, %s s in all\n' \
		"$s" "$ttfb" "$first" "$n" "$total"
done
