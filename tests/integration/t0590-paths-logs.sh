#!/bin/bash
# t0590-paths-logs: every documented base URL works with the OpenAI SDK,
# and every request leaves one log line, refusals included
# (docs/design.md sections 2 and 9).
. "$(dirname "$0")/../lib.sh"

orgw_start MAX_BODY_BYTES=4096
M=deepseek/deepseek-v3.2

# An OpenAI SDK only appends /chat/completions (and /models) to whatever
# base URL it is given.
for base in "" /v1 /api /api/v1; do
	out=$(node "$ORGW_ROOT/tests/js/chat.mjs" --base "$ORGW_URL$base" --key "$ORGW_KEY" --model $M)
	t_eq "base URL http://host$base: a chat completion" "true Hello from deepseek" \
		"$(json_get "$out" 'j.ok + " " + j.content')"
	code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ORGW_KEY" "$ORGW_URL$base/models")
	t_eq "base URL http://host$base: GET .../models" 200 "$code"
done
orgw_http GET /v2/models
t_eq "an unknown prefix is still 404" 404 "$HTTP_STATUS"

lines() { grep -c ': req: ' "$ORGW_LOG"; }
last() { grep ': req: ' "$ORGW_LOG" | tail -n 1; }
check_logged() { # DESC STATUS: one more line, with that status
	local before=$1 desc=$2 want=$3
	t_eq "$desc: one log line" $((before + 1)) "$(lines)"
	t_match "$desc: ... with status=$want" "status=$want( |$)" "$(last)"
}

n=$(lines)
orgw_http POST /v1/chat/completions '{"model":'
check_logged "$n" "400 (bad JSON)" 400
n=$(lines)
HTTP_KEY=wrong orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[]}"
check_logged "$n" "401 (wrong key)" 401
t_check "... and the log line holds no key" bash -c "! grep -q 'wrong' <<<\"\$1\"" _ "$(last)"
n=$(lines)
orgw_http GET /v1/nothing-here
check_logged "$n" "404" 404
n=$(lines)
orgw_http GET /v1/chat/completions
check_logged "$n" "405" 405
n=$(lines)
head -c 5000 /dev/zero | tr '\0' 'x' >"$ORGW_T/big.json"
orgw_http POST /v1/chat/completions "@$ORGW_T/big.json"
check_logged "$n" "413" 413
n=$(lines)
orgw_http GET /stats
check_logged "$n" "GET /stats" 200
n=$(lines)
HTTP_KEY= orgw_http GET /healthz
check_logged "$n" "GET /healthz" 200
