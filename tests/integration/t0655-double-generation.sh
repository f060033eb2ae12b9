#!/bin/bash
# t0655-double-generation: the double's GET /api/v1/generation and /api/v1/key
# (tests/double/README.md), talked to directly, without orgw.  Every answer of
# the three APIs, streamed or not, is a generation whose total_cost is the
# usage.cost its answer carried; a client that leaves mid-stream is billed the
# prompt plus the words written (cancelled); a fault that cuts the stream gives
# finish_reason "error"; generation_ready_ms delays the lookup; reset clears.
. "$(dirname "$0")/../lib.sh"

double_start
D=$DOUBLE_URL
M=test/flat   # generated endpoints, flat prices: alpha 1e-7 prompt, 2e-7 completion
PIN=',"provider":{"order":["alpha"],"allow_fallbacks":false}'
PROMPT="Say hello to the generation endpoint, please."
double_ctl POST config '{"messages_stream_cost":true}' >/dev/null

# ask API STREAM [CURL_ARG...]: one request (pinned to alpha) to the double;
# the answer in $ORGW_T/body, its X-Generation-Id printed.
ask() {
	local api=$1 stream=$2 path body
	shift 2
	case $api in
	chat) path=chat/completions
		body="{\"model\":\"$M\",\"stream\":$stream$PIN,\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" ;;
	messages) path=messages
		body="{\"model\":\"$M\",\"max_tokens\":1000,\"stream\":$stream$PIN,\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" ;;
	responses) path=responses
		body="{\"model\":\"$M\",\"stream\":$stream$PIN,\"input\":\"$PROMPT\"}" ;;
	esac
	curl -sS -o "$ORGW_T/body" -D "$ORGW_T/head" -H "Authorization: Bearer $UPSTREAM_KEY" \
		-H 'Content-Type: application/json' --data-binary "$body" "$@" "$D/api/v1/$path" 2>/dev/null
	HTTP_HEADERS_FILE=$ORGW_T/head http_header X-Generation-Id
}

# answer_cost: the usage.cost of the answer in $ORGW_T/body (JSON or SSE; the
# last one), "none" without; answer_words: the words (content events) it holds.
answer_cost() {
	node -e '
const t = require("fs").readFileSync(process.argv[1], "utf8");
let c;
const pick = (o) => { const u = o && (o.usage || (o.response && o.response.usage)); if (u && typeof u.cost === "number") c = u.cost; };
try { pick(JSON.parse(t)); } catch (_) {
  for (const l of t.split("\n")) if (l.startsWith("data: {")) { try { pick(JSON.parse(l.slice(6))); } catch (_) {} }
}
process.stdout.write(c === undefined ? "none" : String(c));' "$ORGW_T/body"
}
answer_words() {
	grep -cE '"content":"[^"]|"text_delta"|output_text.delta' "$ORGW_T/body"
}

# gen ID [PREFIX]: GET PREFIX/generation?id=ID (default /api/v1); sets
# GEN_STATUS and GEN (the body).  gen_wait ID: the same, retrying a 404 for 3 s.
gen() {
	GEN_STATUS=$(curl -sS -o "$ORGW_T/gen" -w '%{http_code}' -H "Authorization: Bearer $UPSTREAM_KEY" \
		"$D${2:-/api/v1}/generation?id=$1")
	GEN=$(<"$ORGW_T/gen")
}
gen_wait() {
	local i
	for ((i = 0; i < 30; i++)); do
		gen "$1"
		[ "$GEN_STATUS" != 404 ] && return 0
		sleep 0.1
	done
}

# check_gen DESC EXPECTED FIELDS API STREAM [CURL_ARG...]: one request (ask),
# then t_eq of the generation's FIELDS (names, space-separated; `at_alpha`:
# whether total_cost is its tokens at alpha's prices) with EXPECTED.  Leaves
# the generation's body in $g.
check_gen() {
	local desc=$1 want=$2 fields=$3
	shift 3
	gen_wait "$(ask "$@")"
	g=$GEN
	t_eq "$desc" "$want" "$(json_get "$g" "'$fields'.split(' ').map(k => String(k === 'at_alpha'
		? j.data.total_cost === Math.round((j.data.tokens_prompt * 1e-7 + j.data.tokens_completion * 2e-7) * 1e12) / 1e12
		: j.data[k])).join(' ')")"
}

# Billed = the answer's usage.cost, on every API, streamed or not.
FIELDS='id total_cost created_at model origin usage is_byok upstream_id cache_discount app_id streamed '\
'cancelled provider_name latency moderation_latency generation_time finish_reason native_finish_reason '\
'tokens_prompt tokens_completion native_tokens_prompt native_tokens_completion native_tokens_cached '\
'native_tokens_reasoning num_media_prompt num_media_completion num_search_results'
costs=()
for api in chat messages responses; do
	for stream in false true; do
		id=$(ask $api $stream)
		cost=$(answer_cost)
		costs+=("$cost")
		gen_wait "$id"; g=$GEN
		t_eq "$api stream=$stream: the lookup answers 200" 200 "$GEN_STATUS"
		t_eq "$api stream=$stream: billed = the answer's usage.cost ($cost)" "$cost $cost" \
			"$(json_get "$g" 'j.data.total_cost + " " + j.data.usage')"
		t_eq "$api stream=$stream: id, streamed, cancelled, finish_reason, provider" \
			"$id $stream false stop Alpha" \
			"$(json_get "$g" '[j.data.id, j.data.streamed, j.data.cancelled, j.data.finish_reason, j.data.provider_name].join(" ")')"
		t_check "$api stream=$stream: every field of OpenRouter's shape, typed" json_ok "$g" \
			"'$FIELDS'.split(' ').every(k => k in j.data) && typeof j.data.total_cost === 'number' &&
			 typeof j.data.created_at === 'string' && Number.isInteger(j.data.tokens_prompt) &&
			 j.data.tokens_completion === 3 && j.data.native_tokens_completion === 3"
		if [ $api != chat ]; then
			# the body's own id (msg_..., resp_...) finds the same generation
			bid=$(node -e '
const t = require("fs").readFileSync(process.argv[1], "utf8");
const m = /"id":"((msg|resp)_[A-Za-z0-9]+)"/.exec(t); process.stdout.write(m ? m[1] : "");' "$ORGW_T/body")
			t_eq "$api stream=$stream: the body's id $bid finds it too" "$id" "$(gen "$bid"; json_get "$GEN" 'j.data.id')"
		fi
	done
done
t_eq "Messages: native_finish_reason is Anthropic's" end_turn \
	"$(gen_wait "$(ask messages false)"; json_get "$GEN" 'j.data.native_finish_reason')"
costs+=("$(answer_cost)")
t_eq "under /v1 too" 200 "$(gen "$id" /v1; echo "$GEN_STATUS")"

st=$(double_ctl GET stats)
sum=$(node -e 'let s = 0; for (const c of process.argv.slice(1)) s += Number(c); process.stdout.write(String(Math.round(s * 1e12) / 1e12));' "${costs[@]}")
t_eq "stats: 7 generations, billed_usd their sum, billed_by_model the same" "7 $sum $sum" \
	"$(json_get "$st" "j.generations + ' ' + j.billed_usd + ' ' + j.billed_by_model['$M']")"
k=$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" "$D/api/v1/key")
t_check "GET /api/v1/key: OpenRouter's shape, usage = billed_usd" json_ok "$k" \
	"j.data.usage === $sum && j.data.usage_daily === $sum && j.data.usage_monthly === $sum &&
	 j.data.limit === null && j.data.limit_remaining === null && j.data.is_free_tier === false &&
	 typeof j.data.label === 'string' && typeof j.data.rate_limit.requests === 'number' &&
	 typeof j.data.rate_limit.interval === 'string'"
t_eq "GET /api/v1/key without a key: 401" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$D/api/v1/key")"

# Prices: 20 words, complete; prompt only (a cut before any word); a cut after 5.
double_ctl POST config '{"chunks":20}' >/dev/null
check_gen "20 words: billed at alpha's prices" "stop 20 true" "finish_reason tokens_completion at_alpha" chat true
FULL=$(json_get "$g" 'j.data.total_cost')
double_ctl POST faults '{"kind":"cut_after","chunks":0}' >/dev/null
check_gen "cut before any word: error, not cancelled, 0 completion tokens, prompt-only price" "error false 0 true" \
	"finish_reason cancelled tokens_completion at_alpha" chat true
PROMPT_ONLY=$(json_get "$g" 'j.data.total_cost')
for api in chat messages responses; do
	double_ctl POST faults '{"kind":"cut_after","chunks":5}' >/dev/null
	check_gen "$api: a cut after 5 words: error, not cancelled, 5 tokens billed at alpha's prices" "error error false 5 true" \
		"finish_reason native_finish_reason cancelled tokens_completion at_alpha" $api true
done
double_ctl POST faults '{"kind":"midstream_error","chunks":3,"match":{"api":"responses"}}' >/dev/null
check_gen "responses: a midstream error after 3 words: error, 3 tokens" "error 3" "finish_reason tokens_completion" responses true
t_eq "responses: billed the failed event's usage.cost" "$(answer_cost)" "$(json_get "$g" 'j.data.total_cost')"
double_ctl POST faults '{"kind":"stall","chunks":2,"ms":300}' >/dev/null
check_gen "messages: a stall after 2 words, then the double drops it: error, 2 tokens" "error false 2" \
	"finish_reason cancelled tokens_completion" messages true --max-time 5

# The client leaves mid-stream: cancelled, the prompt plus the words written.
double_ctl POST config '{"chunks":20,"spacing_ms":100}' >/dev/null
for api in chat messages responses; do
	check_gen "$api: client left mid-stream: cancelled, no finish_reason, streamed, at alpha's prices" "true null null true true" \
		"cancelled finish_reason native_finish_reason streamed at_alpha" $api true --max-time 1
	seen=$(answer_words)
	echo "# $api: the client saw $seen words before it left; $(json_get "$g" 'JSON.stringify({t: j.data.tokens_completion, cost: j.data.total_cost, latency: j.data.latency, generation_time: j.data.generation_time})')"
	t_check "$api: billed the words written ($seen seen): more than the prompt, less than the answer" json_ok "$g" \
		"j.data.tokens_completion >= $seen && j.data.tokens_completion > 0 && j.data.tokens_completion < 20 &&
		 j.data.total_cost > $PROMPT_ONLY && j.data.total_cost < $FULL"
done
# Non-streamed: the client leaves while the body is delayed (padding sends the headers first).
double_ctl POST config '{"spacing_ms":0,"first_token_delay_ms":3000,"padding_bytes":16}' >/dev/null
check_gen "non-streamed, left before the body: cancelled, 0 tokens, the prompt-only price" "true false 0 $PROMPT_ONLY" \
	"cancelled streamed tokens_completion total_cost" chat false --max-time 0.5
double_ctl POST config '{"first_token_delay_ms":0,"padding_bytes":0}' >/dev/null

# generation_ready_ms: 404 for that long after the end, then 200.
double_ctl POST config '{"generation_ready_ms":1500}' >/dev/null
id=$(ask responses true)
gen "$id"
t_eq "generation_ready_ms: 404 right after the end" 404 "$GEN_STATUS"
sleep 1.7
gen "$id"
t_eq "generation_ready_ms: 200 once it has passed" 200 "$GEN_STATUS"
double_ctl POST config '{"generation_ready_ms":0}' >/dev/null

# Errors.
gen gen-0-nope
t_eq "unknown id: 404 in OpenRouter's shape" \
	'404 {"error":{"code":404,"message":"Generation gen-0-nope not found"}}' "$GEN_STATUS $GEN"
out=$(curl -sS -w ' %{http_code}' -H "Authorization: Bearer $UPSTREAM_KEY" "$D/api/v1/generation")
t_match "missing id: 400" '^\{"error":\{"code":400,.* 400$' "$out"
out=$(curl -sS -w ' %{http_code}' "$D/api/v1/generation?id=$id")
t_eq "no key: 401" '{"error":{"code":401,"message":"Missing Authentication header"}} 401' "$out"
t_eq "a wrong key: 401" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "$D/api/v1/generation?id=$id")"

# The last 10,000 are kept.
before=$(json_get "$(double_ctl GET stats)" j.generations)
read -r first second < <(node -e '
const http = require("http");
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
const [url, key] = process.argv.slice(1);
const body = JSON.stringify({ model: "test/many", messages: [{ role: "user", content: "x" }] });
let sent = 0, done = 0, first = null, second = null;
const one = (i) => {
  const r = http.request(url + "/api/v1/chat/completions", { method: "POST", agent,
    headers: { authorization: "Bearer " + key, "content-type": "application/json" } }, (res) => {
    if (i === 0) first = res.headers["x-generation-id"];
    if (i === 1) second = res.headers["x-generation-id"];
    res.resume();
    res.on("end", () => { if (++done === 10001) { process.stdout.write(first + " " + second); agent.destroy(); } else if (sent < 10001) one(sent++); });
  });
  r.end(body);
};
one(sent++);
setTimeout(() => { for (let k = 0; k < 31; k++) one(sent++); }, 200);' "$D" "$UPSTREAM_KEY")
sleep 0.3
gen "$first"
t_eq "10001 generations later the first is gone" 404 "$GEN_STATUS"
gen "$second"
t_eq "while the 10000 after it are there" 200 "$GEN_STATUS"
t_eq "and the stats count every one" "$((before + 10001))" \
	"$(json_get "$(double_ctl GET stats)" j.generations)"

# Reset clears them.
double_ctl POST reset >/dev/null
gen "$id"
t_eq "after reset: the lookup is 404" 404 "$GEN_STATUS"
t_eq "after reset: no generations, nothing billed" "0 0 {}" \
	"$(json_get "$(double_ctl GET stats)" 'j.generations + " " + j.billed_usd + " " + JSON.stringify(j.billed_by_model)')"
