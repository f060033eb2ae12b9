#!/bin/bash
# t0775-answer-memory: a hostile non-streamed answer (the double's
# huge_answer fault: a chat answer whose logprobs hold millions of small
# values) cannot take a worker's memory nor outlive REQUEST_TIMEOUT_MS.
#   - 60 MB (30 million values): over MAX_ANSWER_BYTES (16 MiB), refused
#     while it arrives: 502 saying "too large", within REQUEST_TIMEOUT_MS,
#     the worker's resident memory small (it was 2.5 GB, kept for good);
#   - 8 MB (4 million values, under the byte cap): over MAX_JSON_NODES,
#     not parsed: 502 naming the values;
#   - 8 MB with MAX_JSON_NODES raised: parsed and served (200), and the
#     tree's memory (about 330 MB) is given back after the request;
#   - an ordinary request is served after each.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=1 orgw_start MAX_ATTEMPTS=1 REQUEST_TIMEOUT_MS=10000
M=openai/gpt-4o
body='{"model":"'$M'","messages":[{"role":"user","content":"hi"}]}'
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $BIN == /* ]] || BIN=$ORGW_ROOT/$BIN
# AddressSanitizer's shadow memory and quarantine multiply a worker's.
bound_kb=204800
ldd "$BIN" 2>/dev/null | grep -q libasan && bound_kb=819200

# The workers' resident memory (field VmRSS or VmHWM), KiB: the largest.
mem_kb() {
	local p m=0 v
	for p in $(orgw_worker_pids); do
		v=$(awk -v f="$1:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null)
		[ -n "$v" ] && [ "$v" -gt "$m" ] && m=$v
	done
	echo "$m"
}
rss_kb() { mem_kb VmRSS; }
now_ms() { date +%s%3N; }
normal() {
	orgw_http POST /v1/chat/completions "$body"
	t_eq "$1: an ordinary request is served" 200 "$HTTP_STATUS"
}
huge() { # BYTES: the next generation gets a huge_answer of BYTES
	double_ctl DELETE faults >/dev/null
	double_ctl POST faults '{"kind":"huge_answer","bytes":'"$1"',"times":-1}' >/dev/null
}
normal "at start"

# --- 1. 60 MB: over MAX_ANSWER_BYTES ------------------------------------
huge 60000000
t0=$(now_ms)
orgw_http POST /v1/chat/completions "$body"
ms=$(( $(now_ms) - t0 ))
rss=$(rss_kb)
echo "# 60 MB answer: $HTTP_STATUS after $ms ms; worker RSS $rss KiB"
t_eq "60 MB answer: 502" 502 "$HTTP_STATUS"
t_match "  saying it is too large" 'too large' "$(json_get "$HTTP_BODY" j.error.message)"
t_check "  within REQUEST_TIMEOUT_MS ($ms ms < 10000)" test "$ms" -lt 10000
t_check "  the worker's memory stays small ($rss KiB < $bound_kb)" test "$rss" -lt "$bound_kb"
double_ctl DELETE faults >/dev/null
normal "after 60 MB"

# --- 2. 8 MB of small values: over MAX_JSON_NODES ------------------------
huge 8000000
orgw_http POST /v1/chat/completions "$body"
rss=$(rss_kb)
echo "# 8 MB answer: $HTTP_STATUS; worker RSS $rss KiB"
t_eq "8 MB answer of 4M values: 502" 502 "$HTTP_STATUS"
t_match "  naming the values" 'more than 500000 JSON values' "$(json_get "$HTTP_BODY" j.error.message)"
t_check "  not parsed: the worker's memory stays small ($rss KiB < $bound_kb)" test "$rss" -lt "$bound_kb"
double_ctl DELETE faults >/dev/null
normal "after 8 MB"

# --- 3. the same, allowed: parsed, and its memory given back -------------
orgw_restart_workers MAX_JSON_NODES=5000000 REQUEST_TIMEOUT_MS=60000
huge 8000000
orgw_http POST /v1/chat/completions "$body"
rss=$(rss_kb)
hwm=$(mem_kb VmHWM)
echo "# 8 MB answer, allowed: $HTTP_STATUS; worker RSS $rss KiB, peak $hwm KiB"
t_eq "8 MB answer under a raised MAX_JSON_NODES: served" 200 "$HTTP_STATUS"
t_check "  it was parsed (peak $hwm KiB over 200 MB)" test "$hwm" -gt 204800
t_check "  its memory went back after it ($rss KiB < $bound_kb)" test "$rss" -lt "$bound_kb"
double_ctl DELETE faults >/dev/null
normal "after the allowed one"
t_check "no worker crashed" bash -c '! grep -qiE "sanitizer|segmentation|runtime error" "$1"' _ "$ORGW_LOG"
