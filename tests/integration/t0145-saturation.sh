#!/bin/bash
# t0145-saturation: a host whose worker threads are all busy answers a new
# chat completion at once with 503, an OpenAI error and Retry-After
# (streamed or not); /healthz says saturated; /stats counts the requests
# in flight host-wide; the held streams finish intact; a worker killed
# with SIGKILL leaves no phantom request in flight.
. "$(dirname "$0")/../lib.sh"

# 2 processes x 3 threads: capacity 6, so 5 streams fill it (the last
# idle thread never takes a stream).
ORGW_WORKERS=2 orgw_start WORKER_THREADS=3
M=deepseek/deepseek-v3.2
printf '{"model":"%s","stream":true,"messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/s.json"
printf '{"model":"%s","messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/b.json"

# Score the model first (a first request scores it inline).
orgw_http POST /v1/chat/completions @"$ORGW_T/b.json"
t_eq "warm-up request 200" 200 "$HTTP_STATUS"

# Streams of 10 tokens 700 ms apart: about 7 s each.
double_ctl POST config '{"chunks":10,"spacing_ms":700}' >/dev/null

hold() { # N: one held stream into $ORGW_T/held.N
	curl -sS -N --max-time 60 -o "$ORGW_T/held.$1" \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary @"$ORGW_T/s.json" "$ORGW_URL/v1/chat/completions"
}
in_flight() { json_get "$(orgw_curl /stats)" 'j.in_flight'; }
wait_in_flight() { # N: until /stats says N in flight (10 s at most)
	local i v
	for ((i = 0; i < 100; i++)); do
		v=$(in_flight)
		[ "$v" = "$1" ] && return 0
		sleep 0.1
	done
	echo "# in_flight stayed $v, wanted $1"
	return 1
}
# wait_started PREFIX: until the 5 held streams $ORGW_T/held.PREFIX[1-5]
# have their first bytes (10 s at most).  No /stats meanwhile: its request
# takes a worker thread, and with 4 streams held that is the capacity's
# last one, so a stream still connecting would get a 503.
wait_started() {
	local i n f
	for ((i = 0; i < 100; i++)); do
		n=0
		for f in "$ORGW_T/held.$1"[1-5]; do
			[ -s "$f" ] && n=$((n + 1))
		done
		[ "$n" = 5 ] && return 0
		sleep 0.1
	done
}

pids=()
for i in 1 2 3 4 5; do
	hold "$i" &
	pids+=($!)
done
wait_started ""
t_check "/stats in_flight reaches the 5 streams held" wait_in_flight 5
t_eq "/metrics orgw_requests_in_flight says 5 too" 5 \
	"$(orgw_curl /metrics | awk '$1 == "orgw_requests_in_flight" { print $2 }')"

t0=$(date +%s%N)
orgw_http POST /v1/chat/completions @"$ORGW_T/s.json"
ms=$((($(date +%s%N) - t0) / 1000000))
t_eq "a 6th stream gets 503" 503 "$HTTP_STATUS"
t_check "at once (${ms} ms), not after a held stream's 7 s" test "$ms" -lt 3000
t_eq "with Retry-After" 1 "$(http_header Retry-After)"
t_eq "an OpenAI error: type" server_overloaded "$(json_get "$HTTP_BODY" 'j.error.type')"
t_eq "an OpenAI error: code" server_overloaded "$(json_get "$HTTP_BODY" 'j.error.code')"
t_match "as JSON" '^application/json' "$(http_header Content-Type)"

orgw_http POST /v1/chat/completions @"$ORGW_T/b.json"
t_eq "a non-streamed request gets 503 too" 503 "$HTTP_STATUS"
t_eq "with Retry-After too" 1 "$(http_header Retry-After)"
printf '{"model":"%s","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/m.json"
orgw_http POST /v1/messages @"$ORGW_T/m.json"
t_eq "a Messages request gets 503 with Retry-After, an Anthropic overloaded_error" \
	"503 1 error overloaded_error" \
	"$HTTP_STATUS $(http_header Retry-After) $(json_get "$HTTP_BODY" 'j.type + " " + j.error.type')"
orgw_http POST /v1/responses "{\"model\":\"$M\",\"input\":\"hi\"}"
t_eq "a Responses request gets 503 with Retry-After, an OpenAI error" \
	"503 1 server_overloaded" \
	"$HTTP_STATUS $(http_header Retry-After) $(json_get "$HTTP_BODY" 'j.error.type')"

orgw_http GET /healthz ""
t_eq "/healthz still answers" 200 "$HTTP_STATUS"
t_eq "/healthz saturated" true "$(json_get "$HTTP_BODY" 'j.saturated')"
t_eq "/healthz in_flight" 5 "$(json_get "$HTTP_BODY" 'j.in_flight')"
t_eq "/healthz capacity" 6 "$(json_get "$HTTP_BODY" 'j.capacity')"
t_eq "/healthz keeps status" ok "$(json_get "$HTTP_BODY" 'j.status')"
orgw_http GET /stats ""
t_eq "/stats in_flight" 5 "$(json_get "$HTTP_BODY" 'j.in_flight')"
t_eq "/stats in_flight_peak is the capacity" 6 "$(json_get "$HTTP_BODY" 'j.in_flight_peak')"
t_check "/stats keeps its models" json_get "$HTTP_BODY" "j.models['$M'].requests"
t_check "the 503 is logged" grep -q 'path=/chat/completions status=503' "$ORGW_LOG"

wait "${pids[@]}"
done_n=$(grep -l 'data: \[DONE\]' "$ORGW_T"/held.* | wc -l)
t_eq "the 5 held streams all finished with [DONE]" 5 "$done_n"
n=0
for i in 1 2 3 4 5; do
	[ "$(grep -c '"content"' "$ORGW_T/held.$i")" -ge 10 ] && n=$((n + 1))
done
t_eq "each with its 10 tokens" 5 "$n"
t_check "in_flight back to 0" wait_in_flight 0
orgw_http GET /healthz ""
t_eq "/healthz no longer saturated" false "$(json_get "$HTTP_BODY" 'j.saturated')"
# (A quick stream: its status is the point, not its length.)
double_ctl POST config '{"chunks":10,"spacing_ms":0}' >/dev/null
orgw_http POST /v1/chat/completions @"$ORGW_T/s.json"
t_eq "a stream is served again" 200 "$HTTP_STATUS"

# SIGKILL a worker holding streams: its requests leave the count at once.
# Streams of about 7 s again: the survivors are still running when
# in_flight is read, about 3 s after they started.
double_ctl POST config '{"chunks":10,"spacing_ms":700}' >/dev/null
pids=()
for i in 1 2 3 4 5; do
	hold "k$i" &
	pids+=($!)
done
wait_started k
t_check "5 streams held again" wait_in_flight 5
mapfile -t workers < <(orgw_worker_pids)
victim=${workers[0]}
kill -KILL "$victim"
sleep 1
alive=0
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null && alive=$((alive + 1))
done
echo "# streams still running after the kill: $alive of 5"
t_check "the killed worker held some (each holds at most 3)" test "$alive" -lt 5 -a "$alive" -ge 2
t_eq "/stats in_flight counts only live workers' streams" "$alive" "$(in_flight)"
wait "${pids[@]}"
done_n=$(grep -l 'data: \[DONE\]' "$ORGW_T"/held.k* | wc -l)
t_eq "the other worker's streams completed" "$alive" "$done_n"
t_check "in_flight back to 0 after the kill" wait_in_flight 0
orgw_http GET /healthz ""
t_eq "capacity back to 6 with the respawned worker" 6 "$(json_get "$HTTP_BODY" 'j.capacity')"
