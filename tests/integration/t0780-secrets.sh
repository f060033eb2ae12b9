#!/bin/bash
# t0780-secrets: secret hygiene.
#   1. Every file orgw creates is mode 600, whatever the umask: the state
#      file, its lock file, a damaged file moved aside, a file rebuilt by
#      gdbm_recover, a file reorganised by orgw-score.
#   2. A config file that holds a key and is readable by group or others,
#      and a NAME_FILE secret file in the same state, are warned about in
#      the worker log; a mode 600 one is not.
#   3. Requests across every path, method and auth case, and every upstream
#      fault kind of the double (streamed and not), and then every response
#      header and body, the worker log, lighttpd's log and orgw-score's
#      output are searched for the upstream key and the client key: zero
#      hits.  (The double's own request log is upstream: it must see the
#      upstream key, and it must never see the client key.)
#   4. The upstream key reflected \u-escaped or cut across two deltas, in
#      stream content, JSON answers, relayed 4xx bodies and error events,
#      on each API (15 cases): no client reads it.
. "$(dirname "$0")/../lib.sh"
. "$ORGW_ROOT/tests/soak/statelib.sh"

umask 000
orgw_start UPSTREAM_TIMEOUT_MS=1500 RETRY_429_DELAYS=0 MAX_ATTEMPTS=2 FAIL_LIMIT=1000
M=deepseek/deepseek-v3.2
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
ALL=$ORGW_T/all-responses
: >"$ALL"
keep() { cat "$HTTP_HEADERS_FILE" "$HTTP_BODY_FILE" >>"$ALL"; printf '\n' >>"$ALL"; }
modes() { # the files in the state directory that are not mode 600
	find "$(dirname "$ORGW_STATE")" -maxdepth 1 -type f -name "$(basename "$ORGW_STATE")*" \
		! -perm 600 -printf '%f %m\n'
}

# 1. File modes under umask 000.
ask
keep
t_eq "state file mode 600 (umask 000)" 600 "$(stat -c %a "$ORGW_STATE")"
t_eq "lock file mode 600" 600 "$(stat -c %a "$ORGW_STATE.lock")"
truncate -s 100 "$ORGW_STATE"
ask
t_check "a damaged file was moved aside" test -e "$ORGW_STATE.corrupt"
t_eq "the moved-aside file is mode 600" 600 "$(stat -c %a "$ORGW_STATE.corrupt")"
if kw_build; then
	for i in $(seq 15); do
		"$KW" "$ORGW_STATE" 0 loop >/dev/null 2>&1 &
		p=$!
		sleep "0.0$((RANDOM % 9 + 1))"
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
		ask
	done
	echo "# recoveries logged: $(grep -c 'recovered' "$ORGW_LOG")"
fi
ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" >"$ORGW_T/score.out" 2>&1
echo "# orgw-score exit $?"
t_eq "after recovery and orgw-score's reorganize, every state file is mode 600" "" "$(modes)"

# 2. Key-holding files open to others.
orgw__workers_stop
chmod 644 "$ORGW_CONFIG_FILE"
: >"$ORGW_LOG"
orgw__workers_start "$ORGW_T/orgw.sock" "$ORGW_CONFIG_FILE" "$ORGW_LOG" || t_fail "workers restart"
orgw__wait_http "$ORGW_URL/healthz" 10
t_match "a mode 644 config file holding keys: warned about in the worker log" \
	"orgw: warning: $ORGW_CONFIG_FILE holds a key and is open to group or others \\(mode 0644\\)" "$(cat "$ORGW_LOG")"
printf '%s\n' "$UPSTREAM_KEY" >"$ORGW_T/upstream.key"
chmod 640 "$ORGW_T/upstream.key"
orgw_restart_workers -OPENROUTER_API_KEY OPENROUTER_API_KEY_FILE="$ORGW_T/upstream.key"
t_match "a mode 640 NAME_FILE secret: warned about" \
	"orgw: warning: the file named by OPENROUTER_API_KEY_FILE is open to group or others" "$(cat "$ORGW_LOG")"
chmod 600 "$ORGW_T/upstream.key"
: >"$ORGW_LOG"
orgw_restart_workers
ask
keep
t_eq "mode 600 files: no warning" 0 "$(grep -c 'open to group or others' "$ORGW_LOG")"
t_eq "the key from the file works" "200 locked" "$ASK"

# 3. Every path and fault; collect everything.
ok_body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
st_body="{\"model\":\"$M\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
for p in /v1/chat/completions /api/v1/chat/completions; do
	orgw_http POST "$p" "$ok_body"; keep
	orgw_http POST "$p" "$st_body"; keep
done
for p in /v1/models /api/v1/models /stats /healthz /nowhere /v1/chat/completions; do
	orgw_http GET "$p"; keep
	HTTP_KEY=wrong orgw_http GET "$p"; keep
	HTTP_KEY="$UPSTREAM_KEY" orgw_http GET "$p"; keep	# the upstream key as client key
done
orgw_http POST /__cron ""; keep
HTTP_KEY="${ORGW_KEY}x" orgw_http POST /v1/chat/completions "$ok_body"; keep
HTTP_KEY= orgw_http POST /v1/chat/completions "$ok_body"; keep
orgw_http POST /v1/chat/completions '{"model":"x/y","messages":[}'; keep
orgw_http PUT /stats ""; keep
faults=(
	'{"kind":"status","status":429}' '{"kind":"status","status":429,"retry_after":1}'
	'{"kind":"status","status":500}' '{"kind":"status","status":502}' '{"kind":"status","status":503}'
	'{"kind":"status","status":401}' '{"kind":"status","status":402}' '{"kind":"status","status":403}'
	'{"kind":"status","status":404}' '{"kind":"status","status":400}'
	'{"kind":"error_in_200","code":429}' '{"kind":"error_in_200","code":502}' '{"kind":"error_in_200","code":401}'
	'{"kind":"reset"}' '{"kind":"hang","ms":5000}' '{"kind":"slow_first_byte","ms":300}'
	'{"kind":"cut_after","chunks":1}' '{"kind":"stall","chunks":1,"ms":4000}' '{"kind":"malformed","chunks":1}'
	'{"kind":"no_done"}' '{"kind":"midstream_error","chunks":1}'
)
n=0
for f in "${faults[@]}"; do
	for b in "$ok_body" "$st_body"; do
		double_ctl POST faults "${f%\}},\"times\":2}" >/dev/null
		orgw_http POST /v1/chat/completions "$b"
		keep
		n=$((n + 1))
	done
done
double_ctl DELETE faults >/dev/null
echo "# $n fault requests, $(wc -c <"$ALL") bytes of responses kept"
# An upstream error that quotes the upstream key back (some APIs echo a
# bad key in their message): orgw must not hand it to the client.
double_ctl POST faults "{\"kind\":\"status\",\"status\":401,\"message\":\"Incorrect API key provided: $UPSTREAM_KEY\"}" >/dev/null
orgw_http POST /v1/chat/completions "$ok_body"
cat "$HTTP_HEADERS_FILE" "$HTTP_BODY_FILE" >"$ORGW_T/echo-response"
double_ctl POST faults "{\"kind\":\"midstream_error\",\"chunks\":1,\"message\":\"bad key $UPSTREAM_KEY\"}" >/dev/null
orgw_http POST /v1/chat/completions "$st_body"
cat "$HTTP_HEADERS_FILE" "$HTTP_BODY_FILE" >>"$ORGW_T/echo-response"
ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" --json >>"$ORGW_T/score.out" 2>&1

# 4. The upstream key reflected in the forms a client decodes: JSON \u
# escapes (of its first character, or of all), cut in two across two
# stream deltas, in stream content, a JSON answer, a relayed 4xx body and
# a mid-stream error event, on each API (the double's mark_form).  Each
# answer is read as its client would (key_leaks).
reflect_body() { # API FORM STREAM
	local say="[double] {\\\"mark\\\":\\\"$UPSTREAM_KEY\\\",\\\"mark_form\\\":\\\"$2\\\",\\\"chunks\\\":7}"
	case $1 in
	chat) printf '{"model":"%s","stream":%s,"messages":[{"role":"user","content":"%s"}]}' "$M" "$3" "$say" ;;
	messages) printf '{"model":"%s","stream":%s,"max_tokens":100,"messages":[{"role":"user","content":"%s"}]}' "$M" "$3" "$say" ;;
	responses) printf '{"model":"%s","stream":%s,"input":[{"role":"user","content":"%s"}]}' "$M" "$3" "$say" ;;
	esac
}
declare -A RPATH=([chat]=/v1/chat/completions [messages]=/v1/messages [responses]=/v1/responses)
leaked=0 cases=0 out=
for api in chat messages responses; do
	for c in "stream-u_all" "stream-split" "json-u_first" "4xx-u_all" "event-u_first"; do
		st=false
		[[ $c == stream-* || $c == event-* ]] && st=true
		case $c in
		4xx-*) double_ctl POST faults "{\"kind\":\"status\",\"status\":400,\"message\":\"bad key $UPSTREAM_KEY\",\"times\":1}" >/dev/null ;;
		event-*) double_ctl POST faults "{\"kind\":\"midstream_error\",\"chunks\":2,\"message\":\"bad key $UPSTREAM_KEY\",\"times\":1}" >/dev/null ;;
		esac
		orgw_http POST "${RPATH[$api]}" "$(reflect_body $api "${c#*-}" $st)"
		cat "$HTTP_HEADERS_FILE" "$HTTP_BODY_FILE" >"$ORGW_T/reflect-$api-$c"
		cases=$((cases + 1))
		[ "$(key_leaks "$UPSTREAM_KEY" "$ORGW_T/reflect-$api-$c")" = 1 ] &&
			{ leaked=$((leaked + 1)); out="$out $api/$c"; }
	done
done
double_ctl DELETE faults >/dev/null
echo "# reflected key: $leaked of $cases cases leaked:$out"
t_eq "the upstream key reflected escaped or split, 15 cases: none reaches the client" "0 of 15" "$leaked of $cases"
t_eq "... the double was asked to reflect it 15 times (its log's marks)" 15 \
	"$(json_get "$(double_ctl GET log)" "j.requests.filter((e) => e.mark === '$UPSTREAM_KEY').length")"
ask
t_eq "... and ordinary answers are untouched after" "200 locked" "$ASK"

t_eq "the upstream key is in no response (headers and bodies)" 0 "$(grep -c -- "$UPSTREAM_KEY" "$ALL")"
t_eq "the client key is in no response" 0 "$(grep -c -- "$ORGW_KEY" "$ALL")"
for f in "$ORGW_LOG" "$ORGW_LIGHTTPD_LOG" "$ORGW_T/score.out"; do
	t_eq "the upstream key is not in $(basename "$f")" 0 "$(grep -c -- "$UPSTREAM_KEY" "$f")"
	t_eq "the client key is not in $(basename "$f")" 0 "$(grep -c -- "$ORGW_KEY" "$f")"
done
t_eq "the upstream never saw the client key" 0 \
	"$(double_ctl GET log | grep -c -- "$ORGW_KEY")"
t_eq "message content is in no log line" 0 "$(grep -c '"hi"' "$ORGW_LOG")"
t_eq "an upstream error quoting the upstream key is not passed on with it" 0 \
	"$(grep -c -- "$UPSTREAM_KEY" "$ORGW_T/echo-response")"
