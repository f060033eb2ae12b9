#!/bin/bash
# t0770-upstream-limits: hostile or broken data from the upstream side,
# served by tests/soak/hostile-upstream.js:
#   - an SSE line of 100 MB before any content, and after some content;
#   - a non-streamed body of 100 MB;
#   - a 1 MB response header;
#   - an endpoints response of 50 MB (111785 endpoints; one 50 MB string),
#     refused past SCORERUN_MAX_BYTES (4 MiB) while it arrives;
#   - a model list of 50 MB.
# Each gets a clear OpenAI-shaped error (or, mid-stream, an SSE error event
# and no [DONE]) or is handled within its cap; the upstream transfer is
# abandoned early instead of read to the end; worker memory stays bounded
# (peak RSS, VmHWM, reported and checked); no worker crashes.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

orgw_start MAX_ATTEMPTS=2 UPSTREAM_TIMEOUT_MS=20000
hostile_start
pids=$(worker_set)

peak_mb() { # the largest VmHWM of the workers, in MiB
	local p m=0 v
	for p in $(orgw_worker_pids); do
		v=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null)
		[ -n "$v" ] && [ "$v" -gt "$m" ] && m=$v
	done
	echo $((m / 1024))
}
hsent() { json_get "$(curl -s "$HURL/__hostile/stats")" 'j.bytes_sent'; }
MB=1048576
body() { # MODEL STREAM
	printf '{"model":"%s","stream":%s,"messages":[{"role":"user","content":"hi"}]}' "$1" "$2"
}

ask soak/normal
t_eq "a normal model works through the hostile upstream" "200 scored" "$ASK"
echo "# worker peak RSS at start: $(peak_mb) MiB"

# 1. A 100 MB SSE line before any content.
s0=$(hsent)
start=$(date +%s%N)
orgw_http POST /v1/chat/completions "$(body hostile/sse-line true)"
ms=$(ms_since "$start")
sent=$(( ($(hsent) - s0) / MB ))
echo "# 100 MB SSE line: $HTTP_STATUS after $ms ms; upstream wrote $sent MiB over 2 attempts; peak RSS $(peak_mb) MiB"
t_eq "100 MB SSE line before content: a 502 gateway error" 502 "$HTTP_STATUS"
t_match "  with an OpenAI error saying why" 'too large' "$(json_get "$HTTP_BODY" j.error.message)"
t_check "  the transfers were abandoned early ($sent MiB of 200 MiB)" test "$sent" -lt 120

# 2. The same line after content reached the client.
out=$(orgw_chat --model hostile/sse-line-mid --stream)
echo "# mid-stream: $(json_get "$out" 'JSON.stringify({ok: j.ok, mid: j.mid_stream, done: j.done, content: j.content, err: j.error && j.error.message})')"
t_eq "100 MB SSE line mid-stream: an error event, content kept, no [DONE]" "false true false Hello" \
	"$(json_get "$out" 'j.ok + " " + j.mid_stream + " " + j.done + " " + j.content')"

# 3. A 100 MB non-streamed body.
s0=$(hsent)
orgw_http POST /v1/chat/completions "$(body hostile/json-huge false)"
sent=$(( ($(hsent) - s0) / MB ))
echo "# 100 MB body: $HTTP_STATUS; upstream wrote $sent MiB; peak RSS $(peak_mb) MiB"
t_eq "100 MB response body: a 502 gateway error" 502 "$HTTP_STATUS"
t_check "  OpenAI-shaped" json_ok "$HTTP_BODY" 'typeof j.error.message === "string"'

# 4. A 1 MB response header.
orgw_http POST /v1/chat/completions "$(body hostile/header false)"
echo "# 1 MB header: $HTTP_STATUS $(json_get "$HTTP_BODY" j.error.message)"
t_eq "1 MB response header: a 502 gateway error" 502 "$HTTP_STATUS"

# 5. A 50 MB endpoints response: 111785 endpoints (first use scores inline).
start=$(date +%s%N)
ask hostile/endpoints-many
ms=$(ms_since "$start")
echo "# 50 MB endpoints (many): $ASK after $ms ms; peak RSS $(peak_mb) MiB; state $(( $(stat -c %s "$ORGW_STATE") / 1024 )) KiB"
t_eq "50 MB endpoints list: refused (over the 4 MiB cap), the request served unpinned" "200 unpinned" "$ASK"
t_match "  the log says why" 'inline scoring of hostile/endpoints-many failed: endpoints fetch: response too large' "$(cat "$ORGW_LOG")"
start=$(date +%s%N)
ask hostile/endpoints-many
ms2=$(ms_since "$start")
echo "# next request: $ASK after $ms2 ms"
t_check "  later requests are not slowed by it ($ms2 ms < 1000)" test "$ms2" -lt 1000
orgw_http GET /stats
echo "# /stats: $(wc -c <"$HTTP_BODY_FILE") bytes"
t_check "  /stats stays small ($(wc -c <"$HTTP_BODY_FILE") bytes < 1 MiB)" test "$(wc -c <"$HTTP_BODY_FILE")" -lt $MB

# 6. One endpoint whose provider_name is a 50 MB string.
ask hostile/endpoints-bigstr
echo "# 50 MB endpoints (one big string): $ASK; peak RSS $(peak_mb) MiB"
t_eq "50 MB string in an endpoint: refused, the request served unpinned" "200 unpinned" "$ASK"

# 7. A 50 MB model list (over the 32 MiB cap of GET /v1/models).
orgw_http GET /v1/models
echo "# 50 MB model list: $HTTP_STATUS $(json_get "$HTTP_BODY" j.error.message)"
t_eq "50 MB model list: a 502 gateway error" 502 "$HTTP_STATUS"

peak=$(peak_mb)
echo "# worker peak RSS after everything: $peak MiB"
# The largest legitimate buffer is a non-streamed response (MAX_ANSWER_BYTES,
# 16 MiB by default).
# AddressSanitizer's shadow memory and quarantine roughly quadruple that.
bound=160
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $BIN == /* ]] || BIN=$ORGW_ROOT/$BIN
ldd "$BIN" 2>/dev/null | grep -q libasan && bound=640
t_check "worker memory stayed bounded (peak $peak MiB < $bound)" test "$peak" -lt "$bound"
assert_no_crash "hostile upstream" "$pids"
