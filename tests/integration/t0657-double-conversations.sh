#!/bin/bash
# t0657-double-conversations: the double's knobs for conversations
# (tests/double/README.md), talked to directly, without orgw:
#   - x_double_max_inflight: an endpoint that serves 2 generations at once
#     answers a third with a provider 429 naming it (OpenRouter's shape);
#   - explicit_cache: an Anthropic-style endpoint (bills cache writes, no
#     implicit caching) writes only the prompt through a breakpoint, or all
#     of it with a top-level cache_control, and reads a written prefix;
#     nothing without a breakpoint; an implicit endpoint caches as before;
#   - reasoning_items: a Responses answer carries an encrypted reasoning item
#     (streamed as an output item of its own, as OpenAI streams it) that its
#     endpoint reads back and another endpoint rejects with a 400
#     invalid_encrypted_content.
. "$(dirname "$0")/../lib.sh"

double_start
D=$DOUBLE_URL
M=test/conv
double_ctl PUT "endpoints/$M" '[
 {"tag":"anth","provider_name":"Anth","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003",
   "input_cache_write":"0.00000375"},
  "supports_implicit_caching":false,"x_double_max_inflight":2},
 {"tag":"other","provider_name":"Other","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003"},
  "supports_implicit_caching":true}]' >/dev/null

# post PATH BODY [OUT]: one request to the double; prints the status, the body
# in OUT (default $ORGW_T/body).
post() {
	curl -sS -o "${3:-$ORGW_T/body}" -w '%{http_code}' -H "Authorization: Bearer $UPSTREAM_KEY" \
		-H 'Content-Type: application/json' --data-binary "$2" "$D/api/v1/$1"
}
pin() { printf '"provider":{"order":["%s"],"allow_fallbacks":false}' "$1"; }

# --- the in-flight limit ---------------------------------------------------
double_ctl POST config '{"first_token_delay_ms":1500}' >/dev/null
B="{\"model\":\"$M\",$(pin anth),\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
pids=()
for i in 1 2 3; do
	post chat/completions "$B" "$ORGW_T/if$i" >"$ORGW_T/if$i.st" &
	pids+=($!)
	sleep 0.2
done
wait "${pids[@]}"   # not the double, which runs in the background too
st="$(cat "$ORGW_T/if1.st") $(cat "$ORGW_T/if2.st") $(cat "$ORGW_T/if3.st")"
t_eq "in-flight limit 2: the third concurrent generation gets 429" "200 200 429" "$st"
t_eq "... a provider 429 in OpenRouter's shape, naming the provider" "429 Anth true" \
	"$(json_get "$ORGW_T/if3" 'j.error.code + " " + j.error.metadata.provider_name + " " + /too many concurrent/.test(j.error.metadata.raw)')"
double_ctl POST config '{"first_token_delay_ms":0}' >/dev/null
t_eq "... once they are done, it serves again" 200 "$(post chat/completions "$B")"
t_eq "... counted as a fault" 1 "$(json_get "$(double_ctl GET stats)" 'j.faults.inflight_429')"

# --- explicit caching --------------------------------------------------------
# usage TAG BODY: "cached written" of one chat answer pinned to TAG.
usage() {
	post chat/completions "{\"model\":\"$M\",$(pin "$1"),$2}" >/dev/null
	json_get "$ORGW_T/body" 'j.usage.prompt_tokens_details.cached_tokens + " " + j.usage.prompt_tokens_details.cache_write_tokens'
}
SYS=$(printf 'system prompt %.0s' $(seq 1 100))   # 1500 characters
SYSBP="{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"$SYS\",\"cache_control\":{\"type\":\"ephemeral\"}}]}"
SYSNO="{\"role\":\"system\",\"content\":\"$SYS\"}"
U1='{"role":"user","content":"first question, fairly long to count"}'
A1='{"role":"assistant","content":"first answer"}'
U2='{"role":"user","content":"second question"}'
double_ctl POST config '{"prompt_cache":true,"explicit_cache":true}' >/dev/null

r1=$(usage anth "\"messages\":[$SYSBP,$U1]")
r2=$(usage anth "\"messages\":[$SYSBP,$U1,$A1,$U2]")
t_match "explicit: a breakpoint on the system prompt writes it" '^0 3[0-9][0-9]$' "$r1"
t_match "... and the next turn reads it, writes nothing new" '^3[0-9][0-9] 0$' "$r2"
t_eq "... the same tokens read as were written" "${r1#0 }" "${r2% 0}"
t_eq "explicit: no breakpoint anywhere: nothing read or written" "0 0" \
	"$(usage anth "\"messages\":[$SYSNO,$U1,$A1,$U2]")"
t_eq "... and again: still nothing (no breakpoint, no cache)" "0 0" \
	"$(usage anth "\"messages\":[$SYSNO,$U1,$A1,$U2]")"
# a system prompt of its own, so nothing written above is read
SYS2="{\"role\":\"system\",\"content\":\"$(printf 'automatic %.0s' $(seq 1 100))\"}"
r3=$(usage anth "\"cache_control\":{\"type\":\"ephemeral\"},\"messages\":[$SYS2,$U1]")
r4=$(usage anth "\"cache_control\":{\"type\":\"ephemeral\"},\"messages\":[$SYS2,$U1,$A1,$U2]")
t_match "top-level cache_control: the whole prompt is written" '^0 [0-9]+$' "$r3"
# (reads are counted on the role-marked text, a few tokens more than prompt_tokens)
read4=${r4% *}
t_check "... and the next turn reads all of the previous one ($r3, then $r4)" \
	test "$read4" -ge "${r3#0 }" -a "$read4" -le "$((${r3#0 } + 8))"
t_match "... writing only what is new" '^[0-9]+ [1-9][0-9]?$' "$r4"
usage other "\"messages\":[$SYSNO,$U1]" >/dev/null
t_match "an implicit endpoint caches without breakpoints, as before" '^[1-9][0-9]* 0$' \
	"$(usage other "\"messages\":[$SYSNO,$U1,$A1,$U2]")"
double_ctl POST config '{"explicit_cache":false}' >/dev/null
usage anth "\"messages\":[$SYSNO,$U1,$A1]" >/dev/null
t_match "explicit_cache off: the same endpoint caches implicitly again" '^[1-9][0-9]* 0$' \
	"$(usage anth "\"messages\":[$SYSNO,$U1,$A1,$U2]")"
double_ctl POST config '{"prompt_cache":false}' >/dev/null

# --- encrypted reasoning -----------------------------------------------------
double_ctl POST config '{"reasoning_items":true}' >/dev/null
IN='{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}'
t_eq "reasoning: the first turn answers" 200 \
	"$(post responses "{\"model\":\"$M\",$(pin anth),\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN]}")"
RS=$(json_get "$ORGW_T/body" 'JSON.stringify(j.output[0])')
t_eq "... with an encrypted reasoning item first in its output" "reasoning true" \
	"$(json_get "$RS" 'j.type + " " + (typeof j.encrypted_content === "string" && j.encrypted_content.length > 10)')"
post responses "{\"model\":\"$M\",$(pin anth),\"stream\":true,\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN]}" >/dev/null
EV=$(sed -n 's/^data: //p' "$ORGW_T/body" | grep -v '^\[DONE\]' | paste -sd, | sed 's/^/[/; s/$/]/')
t_eq "... streamed: output item 0 of its own (the blob on .done only), the answer's events at 1" \
	"reasoning:0:false reasoning:0:true message:1:false message:1:false 1 reasoning+message" \
	"$(json_get "$EV" '[...j.filter((e) => e.type.startsWith("response.output_item.")).map((e) => `${e.item.type}:${e.output_index}:${"encrypted_content" in e.item}`),
		[...new Set(j.filter((e) => "item_id" in e).map((e) => e.output_index))].join(","),
		j.at(-1).response.output.map((o) => o.type).join("+")].join(" ")')"
T2="\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"input\":[$IN,$RS,$IN]"
t_eq "... which the endpoint that wrote it reads back" 200 \
	"$(post responses "{\"model\":\"$M\",$(pin anth),$T2}")"
t_eq "... and another endpoint rejects: 400 invalid_encrypted_content" "400 400 Other true" \
	"$(post responses "{\"model\":\"$M\",$(pin other),$T2}") $(json_get "$ORGW_T/body" \
		'j.error.code + " " + j.error.metadata.provider_name + " " + JSON.parse(j.error.metadata.raw).error.code.includes("invalid_encrypted_content")')"
t_eq "... the same turn without the item is served there" 200 \
	"$(post responses "{\"model\":\"$M\",$(pin other),\"store\":false,\"input\":[$IN,$IN]}")"
double_ctl POST config '{"reasoning_items":false}' >/dev/null
t_eq "reasoning_items off: no reasoning item, nothing rejected" "200 message" \
	"$(post responses "{\"model\":\"$M\",$(pin other),$T2}") $(json_get "$ORGW_T/body" 'j.output[0].type')"


