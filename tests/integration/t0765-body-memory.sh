#!/bin/bash
# t0765-body-memory: a request body's parse and what a worker keeps after
# it are bounded, per request and per host, before any key's limits.
#   - 16 concurrent bodies of 8 MiB of small JSON values ("0," each, four
#     million values: about 330 MB of cJSON tree apiece) on 2 workers: each
#     gets 413 request_too_large naming MAX_JSON_NODES in the API's shape
#     (chat and Messages), and the workers' resident memory stays small
#     (it was 5.3 GB, kept for good);
#   - with MAX_JSON_NODES raised so that one such body may be parsed, the
#     host's HOST_PARSE_MEMORY_BYTES (512 MiB) lets about one of them in
#     at a time over both workers: the others get 503 server_overloaded
#     with Retry-After, never a 400 that blames the client, and the memory
#     of the one parsed goes back to the system after it;
#   - nesting deeper than cJSON's 1000 is a 400 that says so;
#   - an ordinary request is served after each burst.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=2 orgw_start
BODY=$ORGW_T/small8m.json
node -e '
const head = "{\"model\":\"openai/gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"x\":[";
const n = Math.floor((8388608 - head.length - 12) / 2);
process.stdout.write(head + "0,".repeat(n - 1) + "0]}");' >"$BODY"

# The workers' resident memory, KiB, summed.
rss_kb() {
	local p t=0
	for p in $(orgw_worker_pids); do
		t=$((t + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status")))
	done
	echo "$t"
}

# burst PATH: 16 concurrent posts of $BODY; "STATUS TYPE" lines in
# $ORGW_T/burst.txt (the error's type, or "-").
burst() {
	local i
	rm -f "$ORGW_T"/burst.*.out
	for i in $(seq 16); do
		curl -sS -o "$ORGW_T/burst.$i.out" -D "$ORGW_T/burst.$i.hdr" \
			-w '%{http_code}\n' -H "Authorization: Bearer $ORGW_KEY" \
			-H 'x-api-key: '"$ORGW_KEY" -H 'anthropic-version: 2023-06-01' \
			-H 'Content-Type: application/json' --data-binary "@$BODY" \
			"$ORGW_URL$1" >"$ORGW_T/burst.$i.code" &
	done
	wait_curls
	: >"$ORGW_T/burst.txt"
	for i in $(seq 16); do
		printf '%s %s\n' "$(cat "$ORGW_T/burst.$i.code")" \
			"$(json_get "$ORGW_T/burst.$i.out" 'j.error?.type ?? j.error?.code ?? "-"' 2>/dev/null || echo '?')" \
			>>"$ORGW_T/burst.txt"
	done
}
# Waits for the curls started by burst (not the stack's own children).
wait_curls() {
	local j
	for j in $(jobs -p); do
		if ps -o args= -p "$j" | grep -q '^curl'; then wait "$j"; fi
	done
}
normal() {
	orgw_http POST /v1/chat/completions \
		'{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}'
	t_eq "$1: an ordinary request is served" 200 "$HTTP_STATUS"
}

# --- 1. over MAX_JSON_NODES: 413, nothing parsed -------------------------
before=$(rss_kb)
burst /v1/chat/completions
t_eq "16 bodies of 4M values: 16 x 413 request_too_large" "16 413 invalid_request_error" \
	"$(sort "$ORGW_T/burst.txt" | uniq -c | sed 's/^ *//')"
t_match "the 413 names the limit" 'more than 500000 JSON values \(MAX_JSON_NODES\)' \
	"$(json_get "$ORGW_T/burst.1.out" j.error.message)"
after=$(rss_kb)
t_check "the workers stay under 200 MB together (before: ${before} KiB, after: ${after} KiB)" \
	test "$after" -lt 204800
orgw_http POST /v1/messages "@$BODY" -H 'anthropic-version: 2023-06-01'
t_eq "Messages: 413 in Anthropic's shape" "413 error request_too_large" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" j.type) $(json_get "$HTTP_BODY" j.error.type)"
normal "after the 413s"

# --- 2. the host's budget: 503, and the memory goes back -----------------
orgw_restart_workers MAX_JSON_NODES=5000000
before=$(rss_kb)
burst /v1/chat/completions
summary=$(sort "$ORGW_T/burst.txt" | uniq -c | sed 's/^ *//' | tr '\n' ';')
t_check "each answer a 200 or a 503 server_overloaded ($summary)" \
	bash -c '! grep -qvE "^(200 -|503 server_overloaded)$" "$1"' _ "$ORGW_T/burst.txt"
t_check "at least one parsed and served ($summary)" grep -q '^200 ' "$ORGW_T/burst.txt"
t_check "the host's budget refused some across both workers ($summary)" \
	grep -q '^503 server_overloaded' "$ORGW_T/burst.txt"
i=$(grep -n '^503' "$ORGW_T/burst.txt" | head -n 1 | cut -d: -f1)
if [ -n "$i" ]; then
	t_check "the 503 has Retry-After" grep -qiE '^retry-after: 1' "$ORGW_T/burst.$i.hdr"
	t_match "the 503 says memory, not the client" 'request memory' \
		"$(json_get "$ORGW_T/burst.$i.out" j.error.message)"
fi
after=$(rss_kb)
t_check "the parsed body's memory went back (before: ${before} KiB, after: ${after} KiB)" \
	test "$after" -lt 204800
normal "after the 503s"

# --- 3. nesting --------------------------------------------------------
node -e 'process.stdout.write("{\"model\":\"openai/gpt-4o\",\"messages\":[],\"x\":" + "[".repeat(1001) + "]".repeat(1001) + "}")' >"$ORGW_T/deep.json"
orgw_http POST /v1/chat/completions "@$ORGW_T/deep.json"
t_eq "1001 deep: 400" 400 "$HTTP_STATUS"
t_match "... that says so" 'more than 1000 deep' "$(json_get "$HTTP_BODY" j.error.message)"
t_check "no worker crashed" bash -c '! grep -qiE "sanitizer|segmentation|runtime error" "$1"' _ "$ORGW_LOG"
