#!/bin/bash
# t0595-client-leaves: a client that closes its connection in the middle of
# a long request (docs/design.md section 5, "A client that leaves") stops
# the upstream transfer before the answer would have ended, no further
# attempt is made, and the request counts once as client_abort, not as a
# provider failure.  In every phase orgw can be told of it: a stream before
# its first token (comments only, after orgw's header block went out), a
# non-streamed generation whose committed 200 upstream pads, a 429 wait of a
# stream, and a stream being relayed.  Under lighttpd (the default stack) and
# nginx (same workers).  No wall-clock bound on how fast: the double's log
# says whether upstream saw orgw close before its answer's scheduled
# end.  (bench/departures.sh measures how fast, per server.)
. "$(dirname "$0")/../lib.sh"

SERVERS="lighttpd nginx"
ORGW_WORKERS=12 orgw_start UPSTREAM_TIMEOUT_MS=60000 SLOW_THRESHOLD_MS=60000 \
	REQUEST_TIMEOUT_MS=120000
# shellcheck disable=SC2086
deploy_start $SERVERS

# plan FILE PHASE:STREAM:CLOSE_MS...: one client per server and phase,
# model t0595/SERVER-PHASE.
plan() {
	local file=$1 p s sep=
	shift
	{
		printf '{"clients":['
		for p in "$@"; do
			IFS=: read -r phase stream close <<<"$p"
			for s in $SERVERS; do
				printf '%s{"name":"%s/%s","close_after_ms":%s,' "$sep" "$s" "$phase" "$close"
				printf '"url":"%s/v1/chat/completions","key":"%s",' "${DEPLOY_URL[$s]}" "$ORGW_KEY"
				printf '"body":{"model":"t0595/%s-%s","stream":%s,' "$s" "$phase" "$stream"
				printf '"messages":[{"role":"user","content":"take your time"}]}}'
				sep=,
			done
		done
		printf ']}\n'
	} >"$file"
}
upstream_of() { # MODEL: the double's chat requests for it, oldest first
	double_ctl GET 'log?path=/chat/completions' |
		json_get - "JSON.stringify(j.requests.filter((e) => e.model === '$1').sort((a, b) => a.seq - b.seq))"
}
stat() { # MODEL EXPR over its /stats entry m
	orgw_http GET /stats
	json_get "$HTTP_BODY" "((m) => ($2))(j.models['$1'])"
}

# Score every model first (the first request of a model does it inline).
for p in stream json-padded 429-stream 429-json relaying; do
	for s in $SERVERS; do
		deploy_chat "$s" --model "t0595/$s-$p" >/dev/null
	done
done
double_ctl DELETE log >/dev/null

# Round 1: 8 s before the first token (upstream's comments or padding every
# second); upstream answers 429 with Retry-After 8 on the 429 models.  The
# clients leave at 4 s (orgw's header block went out at 3 s).
double_ctl POST config '{"first_token_delay_ms":8000,"keepalive_interval_ms":1000,"padding_bytes":16,"chunks":3,"spacing_ms":0}' >/dev/null
for s in $SERVERS; do
	for p in 429-stream 429-json; do
		double_ctl POST faults "{\"kind\":\"status\",\"status\":429,\"retry_after\":8,\"match\":{\"model\":\"t0595/$s-$p\"}}" >/dev/null
	done
done
plan "$ORGW_T/plan1.json" stream:true:4000 json-padded:false:4000 \
	429-stream:true:4000 429-json:false:4000
node "$ORGW_ROOT/bench/departures.mjs" "$ORGW_T/plan1.json" >"$ORGW_T/clients1.json"
# A retry would come 8 s after the 429 (plus jitter): wait it out.
sleep 6

check_stopped() { # SERVER PHASE END_MS: upstream closed by orgw before END_MS
	local s=$1 p=$2 end=$3 m="t0595/$1-$2" log
	log=$(upstream_of "$m")
	t_eq "$s, $p: the client left, the upstream transfer was closed, no further attempt" \
		"1 true" "$(json_get "$log" '[j.length, j[0].closed_by_client].join(" ")')"
	t_check "$s, $p: ... before the answer's scheduled end ($end ms after its start)" \
		json_ok "$log" "j[0].closed_at_ms < j[0].t_ms + $end"
}
check_counted() { # SERVER PHASE
	local m="t0595/$1-$2"
	t_eq "$1, $2: (after one ok warm-up) counted once as client_abort, not as a provider failure" \
		"2 1 1 0 0" "$(stat "$m" '[m.requests, m.errors.client_abort, m.ok, m.errors["5xx"] + m.errors.timeout + m.errors.mid_stream + m.errors.other, Object.values(m.failures ?? {}).reduce((a, b) => a + b, 0)].join(" ")')"
}

# A new conversation's turn goes at once to the next candidate after a
# provider 429 (it has no warm provider to wait for), so a 429 model may
# see one attempt per candidate at the start; the retry that waits out
# Retry-After (8 s) would come after the client left at 4 s.  The first
# attempt is the 429, and every attempt began within 4 s of it.
NO_RETRY='j.length > 0 && j[0].status === 429 && j.every((e) => e.t_ms < j[0].t_ms + 4000)'
attempts() { json_get "$1" 'j.map((e) => e.status + "@" + (e.t_ms - j[0].t_ms) + "ms").join(" ")'; }

for s in $SERVERS; do
	check_stopped "$s" stream 8000
	check_counted "$s" stream
	check_stopped "$s" json-padded 8000
	check_counted "$s" json-padded
	log=$(upstream_of "t0595/$s-429-stream")
	t_check "$s, 429 wait of a stream: the client left, no retry was made after ($(attempts "$log"))" \
		json_ok "$log" "$NO_RETRY"
	check_counted "$s" 429-stream
done
# A non-streamed 429 wait: orgw writes nothing then (docs/design.md
# section 5), so only a server that watches its client can tell orgw; nginx
# does.
log=$(upstream_of "t0595/nginx-429-json")
t_check "nginx, 429 wait of a non-streamed request: no retry was made after the client left ($(attempts "$log"))" \
	json_ok "$log" "$NO_RETRY"
check_counted nginx 429-json

# Round 2: a stream relayed token by token, 40 tokens 200 ms apart (8 s);
# the clients leave at 2 s.
double_ctl DELETE log >/dev/null
double_ctl POST config '{"first_token_delay_ms":0,"padding_bytes":0,"chunks":40,"spacing_ms":200}' >/dev/null
plan "$ORGW_T/plan2.json" relaying:true:2000
node "$ORGW_ROOT/bench/departures.mjs" "$ORGW_T/plan2.json" >"$ORGW_T/clients2.json"
sleep 2
for s in $SERVERS; do
	t_check "$s, relaying: the client got tokens before it left" \
		json_ok "$ORGW_T/clients2.json" "j['$s/relaying'].bytes > 500 && !j['$s/relaying'].ended"
	check_stopped "$s" relaying 8000
	check_counted "$s" relaying
done
