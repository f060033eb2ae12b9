#!/bin/bash
# t0862-model-members: a team key's model globs hold whatever way a body
# names its models.  A key of qwen/* asks for openai/gpt-5 through a
# second "models" member, one spelled "m\u006fdels", a second "model"
# spelled "m\u006fdel", or a "models" that is no array of ids, on chat,
# Messages, Responses and Messages count_tokens: each is refused before
# anything reaches the double (400 invalid_request for the shapes orgw
# cannot read as one list, 403 model_not_allowed for an escaped member
# naming a model outside the globs), in the API's own error shape.  The
# same bodies with only qwen ids are served.  On GDBM and on Redis.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
SECRET=t0862-model-members-secret-0123456789
Q=qwen/qwen3-32b

upstream_n() { json_get "$(double_ctl GET stats)" 'Object.values(j.apis).reduce((a, b) => a + b, 0)'; }
# ask KEY API MEMBERS: a request of API whose body is {MEMBERS,<input>}.
ask() {
	local path b
	case $2 in
	chat) path=/v1/chat/completions b="{$3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" ;;
	messages) path=/v1/messages b="{$3,\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" ;;
	count) path=/v1/messages/count_tokens b="{$3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" ;;
	responses) path=/v1/responses b="{$3,\"input\":\"hi\"}" ;;
	esac
	HTTP_KEY=$1 orgw_http POST "$path" "$b"
}
# shape API: "STATUS CODE" of the last answer, read in API's error shape
# (Anthropic's for messages and count_tokens: type "error", error.type).
shape() {
	case $1 in
	messages | count) echo "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.type === "error" ? j.error.type : "not-anthropic"')" ;;
	*) echo "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error?.code ?? "none"')" ;;
	esac
}

run() { # BACKEND
	local be=$1 k n0 api want400 want403
	k=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add qw --models 'qwen/*' 2>"$ORGW_T/key.err")
	[[ $k == orgw-* ]] || t_fail "$be: key add" "$(cat "$ORGW_T/key.err")"
	for api in chat messages responses count; do
		case $api in
		messages | count) want400="400 invalid_request_error" want403="403 permission_error" ;;
		*) want400="400 invalid_request" want403="403 model_not_allowed" ;;
		esac
		n0=$(upstream_n)
		ask "$k" $api "\"model\":\"$Q\",\"models\":[\"$Q\"],\"models\":[\"openai/gpt-5\"]"
		t_eq "$be $api: a second \"models\" member: $want400" "$want400" "$(shape $api)"
		ask "$k" $api "\"model\":\"$Q\",\"models\":[\"$Q\"],\"m\\u006fdels\":[\"openai/gpt-5\"]"
		t_eq "$be $api: \"models\" then \"m\\u006fdels\": $want400" "$want400" "$(shape $api)"
		ask "$k" $api "\"model\":\"$Q\",\"m\\u006fdels\":[\"openai/gpt-5\"]"
		t_eq "$be $api: \"m\\u006fdels\" alone, outside the globs: $want403" "$want403" "$(shape $api)"
		ask "$k" $api "\"model\":\"$Q\",\"m\\u006fdel\":\"openai/gpt-5\""
		t_eq "$be $api: \"model\" then \"m\\u006fdel\": $want400" "$want400" "$(shape $api)"
		ask "$k" $api "\"m\\u006fdel\":\"openai/gpt-5\""
		t_eq "$be $api: \"m\\u006fdel\" alone, outside the globs: $want403" "$want403" "$(shape $api)"
		ask "$k" $api "\"model\":\"$Q\",\"models\":\"openai/gpt-5\""
		t_eq "$be $api: a \"models\" string: $want400" "$want400" "$(shape $api)"
		ask "$k" $api "\"model\":\"$Q\",\"models\":[\"$Q\",{\"id\":\"openai/gpt-5\"}]"
		t_eq "$be $api: a \"models\" entry that is no id: $want400" "$want400" "$(shape $api)"
		t_eq "$be $api: none of the seven reached the double" "$n0" "$(upstream_n)"
		[ $api = count ] && continue
		ask "$k" $api "\"m\\u006fdel\":\"$Q\",\"m\\u006fdels\":[\"$Q\",\"qwen/qwen3-8b\"]"
		t_eq "$be $api: escaped members naming only qwen ids: served" 200 "$HTTP_STATUS"
	done
	t_check "$be: no crash in the log" sh -c "! grep -Ei 'segfault|sanitizer|abort\\(' '$ORGW_LOG'"
}

orgw_start KEYS_SECRET="$SECRET"
run gdbm
if command -v redis-server >/dev/null; then
	ORGW_STATE_BACKEND=redis orgw_start KEYS_SECRET="$SECRET"
	run redis
else
	t_skip "redis: redis-server is not installed"
fi
