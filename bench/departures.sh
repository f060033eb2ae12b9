#!/bin/bash
# bench/departures.sh - when a client leaves, how soon does orgw stop the
# upstream transfer?  Per web server (lighttpd, Caddy, nginx, Apache
# mod_fcgid, plain CGI under Apache's mod_cgid and mod_cgi) and per phase
# of a request, a client (bench/departures.mjs) closes its connection
# normally (FIN) in the middle of a long request; the OpenRouter double's
# log says when upstream saw orgw close (closed_by_client, closed_at_ms)
# and whether a further request came.  Prints a Markdown table: ms from
# the client's close to upstream's, or what happened instead.
#
#   bash bench/departures.sh          # about 70 s; loopback only
#
# Phases (the double's config and faults make each last 20 s):
#   stream <3s   a stream before its first token, the client leaves at 1 s,
#                before orgw sent its header block (KEEPALIVE_COMMIT_MS 3 s)
#   stream       a stream before its first token (comments only), leaves at 5 s
#   json padded  a non-streamed generation, upstream padding its committed
#                200, leaves at 5 s
#   json silent  a non-streamed request before upstream answers at all,
#                leaves at 5 s: orgw must not write then (docs/design.md section 5)
#   429 stream, 429 json   upstream answered 429 Retry-After 20, orgw waits
#                to retry; the client leaves at 5 s; no second request may come
#   relaying     a stream relayed token by token (one every 250 ms), leaves at 5 s
#
# Every process is started here (tests/lib.sh) and stopped by PID.
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=../tests/lib.sh
. tests/lib.sh

SERVERS=${DEPART_SERVERS:-lighttpd caddy nginx apache-fcgid apache-cgi apache-cgi-prefork}
WINDOW_MS=24000	# each round: the answers end at 20 s, a 429 retry would come at 20 s

ORGW_WORKERS=24 orgw_start UPSTREAM_TIMEOUT_MS=60000 SLOW_THRESHOLD_MS=60000 \
	REQUEST_TIMEOUT_MS=120000 RETRY_429_DELAYS=2
# shellcheck disable=SC2086
deploy_start $SERVERS

plan() { # ROUND PHASE:STREAM:CLOSE_MS... -> the plan file for that round
	local round=$1 p s name sep=
	shift
	{
		printf '{"clients":['
		for p in "$@"; do
			IFS=: read -r phase stream close <<<"$p"
			for s in $SERVERS; do
				name="$s/$phase"
				printf '%s{"name":"%s","phase":"%s","server":"%s","close_after_ms":%s,' \
					"$sep" "$name" "$phase" "$s" "$close"
				printf '"url":"%s/v1/chat/completions","key":"%s",' "${DEPLOY_URL[$s]}" "$ORGW_KEY"
				printf '"body":{"model":"bench/%s-%s","stream":%s,' "$s" "$phase" "$stream"
				printf '"messages":[{"role":"user","content":"take your time"}]}}'
				sep=,
			done
		done
		printf ']}\n'
	} >"$ORGW_T/plan-$round.json"
}

fault_for() { # PHASE FAULT-JSON(without match): one per server's model
	local s sep= f='['
	for s in $SERVERS; do
		f+="$sep${2%\}},\"match\":{\"model\":\"bench/$s-$1\"}}"
		sep=,
	done
	double_ctl POST faults "$f]" >/dev/null
}

run_round() { # ROUND: the clients, then the rest of the window
	local round=$1 t0
	t0=$(date +%s%3N)
	node bench/departures.mjs "$ORGW_T/plan-$round.json" >"$ORGW_T/clients-$round.json" || exit 1
	sleep "$(awk -v w="$WINDOW_MS" -v d="$(($(date +%s%3N) - t0))" \
		'BEGIN { s = (w - d) / 1000; print (s > 0 ? s : 0) }')"
}

# Warm up: every model scored (the first request scores inline).
for p in stream-early stream json-padded json-silent 429-stream 429-json relaying; do
	pids=()
	for s in $SERVERS; do
		curl -sS -o /dev/null --max-time 30 -H "Authorization: Bearer $ORGW_KEY" \
			-H 'Content-Type: application/json' \
			-d "{\"model\":\"bench/$s-$p\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
			"${DEPLOY_URL[$s]}/v1/chat/completions" &
		pids+=($!)
	done
	wait "${pids[@]}"
done
double_ctl DELETE log >/dev/null

# Round 1: 20 s before the first token (comments / padding every second).
double_ctl POST config '{"first_token_delay_ms":20000,"keepalive_interval_ms":1000,"padding_bytes":16,"chunks":3,"spacing_ms":0}' >/dev/null
fault_for 429-stream '{"kind":"status","status":429,"retry_after":20}'
fault_for 429-json '{"kind":"status","status":429,"retry_after":20}'
plan 1 stream-early:true:1000 stream:true:5000 json-padded:false:5000 \
	429-stream:true:5000 429-json:false:5000
run_round 1
double_ctl GET 'log?path=/chat/completions' >"$ORGW_T/log-1.json"
double_ctl DELETE log >/dev/null

# Round 2: tokens every 250 ms from the start; the silent upstream answers
# only after 20 s.
double_ctl POST config '{"first_token_delay_ms":0,"padding_bytes":0,"chunks":80,"spacing_ms":250}' >/dev/null
fault_for json-silent '{"kind":"slow_first_byte","ms":20000}'
plan 2 json-silent:false:5000 relaying:true:5000
run_round 2
double_ctl GET 'log?path=/chat/completions' >"$ORGW_T/log-2.json"

node bench/departures.mjs --report "$SERVERS" \
	"$ORGW_T/plan-1.json" "$ORGW_T/clients-1.json" "$ORGW_T/log-1.json" \
	"$ORGW_T/plan-2.json" "$ORGW_T/clients-2.json" "$ORGW_T/log-2.json"
