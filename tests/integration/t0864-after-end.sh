#!/bin/bash
# t0864-after-end: nothing is relayed after an API's end event.  The
# double, as a hostile upstream, sends three more text deltas after a
# stream's own end (chat: after data: [DONE]; Messages: after
# message_stop; Responses: after response.completed and its [DONE]).  The
# client's stream ends with the API's end (Responses: then one [DONE]),
# holds none of the extra deltas, is counted as a whole answer (log
# outcome=ok), and the worker log says how many events it dropped.  A
# stream without extra events is relayed as before.
. "$(dirname "$0")/../lib.sh"

orgw_start
M=deepseek/deepseek-v3.2
say='[double] {\"after_end\":3}'
body() { # API STREAM-CONTENT
	case $1 in
	chat) printf '{"model":"%s","stream":true,"messages":[{"role":"user","content":"%s"}]}' "$M" "$2" ;;
	messages) printf '{"model":"%s","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"%s"}]}' "$M" "$2" ;;
	responses) printf '{"model":"%s","stream":true,"input":"%s"}' "$M" "$2" ;;
	esac
}
declare -A P=([chat]=/v1/chat/completions [messages]=/v1/messages [responses]=/v1/responses)
# The last data line's type (or [DONE]), and the one before it.
tail2() {
	grep '^data: ' "$HTTP_BODY_FILE" | tail -2 | sed 's/^data: //' |
		node -e 'const l = require("fs").readFileSync(0, "utf8").trim().split("\n");
console.log(l.map((x) => x === "[DONE]" ? x : (JSON.parse(x).type ?? JSON.parse(x).object)).join(" "));'
}
declare -A END=([chat]="chat.completion.chunk [DONE]" [messages]="message_delta message_stop"
	[responses]="response.completed [DONE]")
for api in chat messages responses; do
	: >"$ORGW_LOG"
	orgw_http POST "${P[$api]}" "$(body $api "$say")"
	t_eq "$api: 200, none of the 3 deltas sent after the end reaches the client" "200 0" \
		"$HTTP_STATUS $(grep -c 'AFTER-END' "$HTTP_BODY_FILE")"
	t_eq "$api: the stream ends with its own end" "${END[$api]}" "$(tail2)"
	t_eq "$api: one whole answer (outcome=ok)" 1 "$(grep -c "api=$api .*status=200 .*outcome=ok" "$ORGW_LOG")"
	t_match "$api: the drop is logged with its count" \
		"warn: upstream sent 3 event\\(s\\) after the end of a $api stream" "$(cat "$ORGW_LOG")"
	: >"$ORGW_LOG"
	orgw_http POST "${P[$api]}" "$(body $api hi)"
	t_eq "$api: an ordinary stream: whole, its end last, nothing dropped" "200 ${END[$api]} 0" \
		"$HTTP_STATUS $(tail2) $(grep -c 'after the end' "$ORGW_LOG")"
done
t_check "no crash in the log" sh -c "! grep -Ei 'segfault|sanitizer|abort\\(' '$ORGW_LOG'"
