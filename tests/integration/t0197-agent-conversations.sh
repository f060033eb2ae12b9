#!/bin/bash
# t0197-agent-conversations: the real agents' saved sessions (codex exec
# resume --last, opencode run --continue, claude -p --continue) as orgw's
# conversations, with the double's prompt cache as providers have it
# (explicit_cache: an endpoint that bills cache writes and does not cache
# implicitly caches only what a breakpoint marks):
#   - Codex across a breaker trip: its provider cooled between two turns,
#     the conversation moves to the other candidate; the resumed turn
#     answers, and the reasoning item Codex resends (encrypted by the first
#     provider, the double's reasoning_items) never reaches the second: orgw
#     leaves it out (reasoning_dropped=1, break=moved) and the conversation's
#     record keeps how many input items that turn had.  The next turns stay
#     there; Codex resends every turn's items, and orgw leaves out the first
#     provider's from the first attempt (it stands among those items) while
#     the second provider's own go up: no 400 invalid_encrypted_content, one
#     request a turn;
#   - opencode on a model whose endpoint caches only through a breakpoint:
#     opencode marks nothing for it, orgw adds the top-level cache_control,
#     and the continued turns read the cache; on an anthropic/ id opencode
#     marks messages itself, and those requests go up without it;
#   - Claude Code with its provider's cache forgotten before the third of
#     four turns: that turn, and only that one, is a break, provider_miss.
. "$(dirname "$0")/../lib.sh"

AG=$ORGW_ROOT/tests/agents
agents_required

orgw_start
double_ctl POST config '{"prompt_cache":true,"explicit_cache":true,"log_body_max_bytes":4194304}' >/dev/null
ORGW_SCORE=$ORGW_ROOT/scheduler/orgw-score
score() { env -i PATH="$PATH" "$ORGW_SCORE" --config "$ORGW_CONFIG_FILE" "$@" >/dev/null 2>&1; }
stat() { json_get "$(orgw_curl /stats)" "j.models['$1']?.$2"; }
# conv ID EXPR: EXPR over c, the conversation ID of /stats.
conv() { json_get "$(orgw_curl /stats)" "((c) => $2)(j.conversations.find((x) => x.id === '$1'))"; }
# lines API MODEL: orgw's log lines of MODEL's requests.
lines() { grep "req: .* api=$1 model=$2 " "$ORGW_LOG"; }
# field NAME: the value of NAME=... in each line of stdin.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

# turn CLIENT MODEL HOME N: the client's Nth run in HOME (from the 2nd its
# own continue); OUT its JSON line, S0 the double's last seq before it.
turn() {
	local c=$1 m=$2 h=$3 n=$4
	local -a more=()
	[ "$n" -gt 1 ] && more=(--continue)
	S0=$(double_seq)
	OUT=$(node "$AG/agent.mjs" --client "$c" --base "$ORGW_URL" --key "$ORGW_KEY" \
		--model "$m" --home "$h" --timeout 90000 --prompt "Turn $n: say hello." "${more[@]}")
	printf '# %s, turn %s: %s\n' "$c" "$n" "$(json_get "$OUT" \
		'`exit ${j.exit_code}, ${j.t_total_ms} ms, answer ${JSON.stringify(j.answer)}, error ${JSON.stringify(j.error)}`')"
	json_ok "$OUT" 'j.ok' || json_get "$OUT" 'j.stdout_tail + "\n" + j.stderr_tail' | sed 's/^/#   /' | tail -n 20
}
# up API: the generation requests of API the double got since $S0, a file.
up() {
	double_ctl GET "log?since=$S0" |
		json_get - "JSON.stringify(j.requests.filter((r) => r.api === '$1'))" >"$ORGW_T/up.json"
	printf '%s' "$ORGW_T/up.json"
}
# The reasoning items of a request's input, joined by +: each the tag of
# the endpoint whose blob it carries, or "none" (no encrypted_content);
# "-" when it has none.
RS='((r) => (r.body.input.filter((i) => i.type === "reasoning").map((i) => typeof i.encrypted_content === "string" ? Buffer.from(i.encrypted_content, "base64").toString().split(":")[1] : "none").join("+") || "-"))'

# --- Codex across a breaker trip ----------------------------------------------
CODEX_M=openai/gpt-5.1-codex
ep='{"tag":"%s","provider_name":"%s","max_completion_tokens":128000,"pricing":{"prompt":"0.00000125","completion":"0.00001","input_cache_read":"0.000000125"},"supports_implicit_caching":true,"uptime_last_30m":100,"status":0,"throughput_last_30m":{"p50":%d}}'
double_ctl PUT "endpoints/$CODEX_M" "[$(printf "$ep" openai OpenAI 80),$(printf "$ep" azure Azure 40)]" >/dev/null
double_ctl POST config '{"reasoning_items":true}' >/dev/null
H=$ORGW_T/home-codex
turn codex "$CODEX_M" "$H" 1
LOCK=$(stat "$CODEX_M" lock.tag)
OTHER=openai
[ "$LOCK" = openai ] && OTHER=azure
U=$(up responses)
t_eq "codex, turn 1: answered on the lock ($LOCK), encrypted reasoning asked for" \
	"true Hello from $LOCK 1 $LOCK 200 true" \
	"$(json_get "$OUT" 'j.ok + " " + j.answer') $(json_get "$U" 'j.length + " " + j[0].tag + " " + j[0].status + " " + j[0].body.include.includes("reasoning.encrypted_content")')"
N1=$(json_get "$U" 'j[0].body.input.length')
CONV=$(lines responses "$CODEX_M" | tail -n 1 | field conv)
t_check "  orgw took it as a conversation ($CONV)" test -n "$CONV"

t_check "orgw-score cool $CODEX_M $LOCK: a breaker trip" score cool "$CODEX_M" "$LOCK" 600 test
turn codex "$CODEX_M" "$H" 2
U=$(up responses)
t_eq "codex, turn 2 (resume --last): answered by the other candidate" \
	"true Hello from $OTHER" "$(json_get "$OUT" 'j.ok + " " + j.answer')"
t_eq "  one request upstream, served 200 by $OTHER, no 400" "1 $OTHER 200 null" \
	"$(json_get "$U" 'j.length + " " + j[0].tag + " " + j[0].status + " " + j[0].fault')"
t_check "  it resent the conversation ($N1 input items on turn 1)" \
	json_ok "$U" "j[0].body.input.filter((i) => i.type === 'message').length > $N1"
t_eq "  and no reasoning item: $LOCK's was left out" "-" "$(json_get "$U" "$RS(j[0])")"
L=$(lines responses "$CODEX_M" | tail -n 1)
t_eq "  the log: the same conversation moved to $OTHER, the item dropped, break=moved" \
	"conv=$CONV provider=$OTHER status=200 attempts=1 reasoning_dropped=1 break=moved" \
	"conv=$(field conv <<<"$L") provider=$(field provider <<<"$L") status=$(field status <<<"$L") attempts=$(field attempts <<<"$L") reasoning_dropped=$(field reasoning_dropped <<<"$L") break=$(field break <<<"$L")"
# Codex's input on turn 2: what went up and the item left out.
N2=$(($(json_get "$U" 'j[0].body.input.length') + 1))
t_eq "  the record: the first $N2 input items (turn 2's) may hold another provider's reasoning" \
	"$N2" "$(orgw_state_dump | grep "\"CONV:$CODEX_M:" | sed -n 's/.*"foreign_items":\([0-9]*\).*/\1/p')"
t_eq "  /stats: 2 turns on $OTHER, one break, turn 2 moved from $LOCK" \
	"2 $OTHER 1 2 moved $LOCK $OTHER" \
	"$(conv "$CONV" '[c.turns, c.provider, c.breaks_total, c.breaks[0].turn, c.breaks[0].cause, c.breaks[0].from, c.breaks[0].provider].join(" ")')"

# The next turns stay where the conversation is; Codex resends every
# turn's reasoning item, the first written by $LOCK.
score uncool "$CODEX_M" "$LOCK"
turn codex "$CODEX_M" "$H" 3
U=$(up responses)
t_eq "codex, turn 3: answered where the conversation is" \
	"true Hello from $OTHER" "$(json_get "$OUT" 'j.ok + " " + j.answer')"
t_eq "  upstream: one request, 200, no 400; $LOCK's item left out, $OTHER's own sent" \
	"1 $OTHER 200 null $OTHER" \
	"$(json_get "$U" "[j.length, j.map((r) => r.tag), j.map((r) => r.status), j.map((r) => String(r.fault)), j.map($RS)].join(' ')")"
L=$(lines responses "$CODEX_M" | tail -n 1)
t_eq "  the log: 200 in 1 attempt, $LOCK's item dropped, no break" \
	"conv=$CONV provider=$OTHER status=200 attempts=1 reasoning_dropped=1 break=" \
	"conv=$(field conv <<<"$L") provider=$(field provider <<<"$L") status=$(field status <<<"$L") attempts=$(field attempts <<<"$L") reasoning_dropped=$(field reasoning_dropped <<<"$L") break=$(field break <<<"$L")"
turn codex "$CODEX_M" "$H" 4
U=$(up responses)
t_eq "codex, turn 4: one request again, only $LOCK's item left out" \
	"true Hello from $OTHER 1 200 null $OTHER+$OTHER" \
	"$(json_get "$OUT" 'j.ok + " " + j.answer') $(json_get "$U" "[j.length, j.map((r) => r.status), j.map((r) => String(r.fault)), j.map($RS)].join(' ')")"
L=$(lines responses "$CODEX_M" | tail -n 1)
t_eq "  the log: 200 in 1 attempt, $LOCK's item dropped" \
	"conv=$CONV status=200 attempts=1 reasoning_dropped=1" \
	"conv=$(field conv <<<"$L") status=$(field status <<<"$L") attempts=$(field attempts <<<"$L") reasoning_dropped=$(field reasoning_dropped <<<"$L")"
t_eq "  /stats: 4 turns, still the one break" "4 1" "$(conv "$CONV" 'c.turns + " " + c.breaks_total')"
t_eq "  the record's foreign_items unchanged ($N2)" \
	"$N2" "$(orgw_state_dump | grep "\"CONV:$CODEX_M:" | sed -n 's/.*"foreign_items":\([0-9]*\).*/\1/p')"
double_ctl POST config '{"reasoning_items":false}' >/dev/null

# --- opencode on an endpoint that caches only through a breakpoint -------------
# Qwen on Alibaba bills cache writes and caches only what a breakpoint
# marks, as Anthropic does; opencode marks nothing for a model that is not
# anthropic/.
OC_M=qwen/qwen3-coder-plus
ep='{"tag":"%s","provider_name":"%s","max_completion_tokens":65536,"pricing":{"prompt":"0.000001","completion":"0.000005","input_cache_read":"0.0000001","input_cache_write":"0.00000125"},"supports_implicit_caching":false,"uptime_last_30m":100,"status":0,"throughput_last_30m":{"p50":%d}}'
double_ctl PUT "endpoints/$OC_M" "[$(printf "$ep" alibaba Alibaba 80)]" >/dev/null
# Not scored beforehand: opencode's first request scores the model inline
# and gets the automatic cache_control all the same.
H=$ORGW_T/home-opencode
ok=0
S1=$(double_seq)
for i in 1 2 3; do
	turn opencode "$OC_M" "$H" "$i"
	json_ok "$OUT" "j.ok && j.answer === 'Hello from alibaba'" && ok=$((ok + 1))
done
S0=$S1
U=$(up chat)
t_eq "opencode run, then --continue twice: 3 answers" 3 "$ok"
n=$(json_get "$U" 'j.length')
t_eq "  $n requests upstream (its title request too), each with orgw's top-level cache_control and none of its own" \
	"$n" "$(json_get "$U" 'j.filter((r) => r.status === 200 && JSON.stringify(r.body.cache_control) === JSON.stringify({ type: "ephemeral" }) &&
		!JSON.stringify(r.body.messages).includes("cache_control")).length')"
t_check "  ... and opencode's x-session-id as session_id" json_ok "$U" \
	'j.every((r) => typeof r.body.session_id === "string" && r.body.session_id.startsWith("ses_"))'
L=$(lines chat "$OC_M" | tail -n 2)
t_eq "  the continued turns read the cache, more than half their prompt each, no break" \
	"2 2 0" \
	"$(wc -l <<<"$L") $(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } if (v["cached"] * 2 > v["prompt"]) n++ } END { print n + 0 }' <<<"$L") $(grep -c 'break=' <<<"$L")"
OCONV=$(field conv <<<"$L" | sort -u)
t_check "  /stats: the conversation ($OCONV) read from the cache and wrote to it" \
	json_ok "$(orgw_curl /stats)" "((c) => c && c.cached_tokens > 0 && c.cache_write_tokens > 0)(j.conversations.find((x) => x.id === '$OCONV'))"

# On an anthropic/ id opencode marks the system and the last user messages
# itself: orgw adds nothing.
A_M=anthropic/claude-sonnet-4.5
double_ctl PUT "endpoints/$A_M" "[$(printf "$ep" anthropic Anthropic 80)]" >/dev/null
turn opencode "$A_M" "$ORGW_T/home-opencode-anthropic" 1
U=$(up chat)
t_eq "opencode run on $A_M: answered" "true Hello from anthropic" "$(json_get "$OUT" 'j.ok + " " + j.answer')"
n=$(json_get "$U" 'j.length')
t_eq "  its $n requests (title and turn) as opencode marked them: its own breakpoints, no top-level one" \
	"$n" "$(json_get "$U" 'j.filter((r) => r.status === 200 && r.body.cache_control === undefined &&
		r.body.messages[0].role === "system" && r.body.messages[0].cache_control?.type === "ephemeral" &&
		r.body.messages.at(-1).cache_control?.type === "ephemeral").length')"

# --- Claude Code: its provider forgets the cache before turn 3 ----------------
CL_M=anthropic/claude-opus-4.5
ep='{"tag":"%s","provider_name":"%s","max_completion_tokens":64000,"pricing":{"prompt":"0.000005","completion":"0.000025","input_cache_read":"0.0000005","input_cache_write":"0.00000625"},"supports_implicit_caching":false,"uptime_last_30m":100,"status":0,"throughput_last_30m":{"p50":%d}}'
double_ctl PUT "endpoints/$CL_M" "[$(printf "$ep" anthropic Anthropic 60),$(printf "$ep" google-vertex 'Google Vertex' 50)]" >/dev/null
H=$ORGW_T/home-claude
ok=0
for i in 1 2 3 4; do
	# what the double cached before this turn is too old to read: forgotten
	if [ "$i" = 3 ]; then
		double_ctl POST config '{"prompt_cache_ttl_ms":300}' >/dev/null
		sleep 0.5
	fi
	turn claude "$CL_M" "$H" "$i"
	[ "$i" = 3 ] && double_ctl POST config '{"prompt_cache_ttl_ms":0}' >/dev/null
	json_ok "$OUT" 'j.ok && j.answer.startsWith("Hello from ")' && ok=$((ok + 1))
done
LOCK=$(stat "$CL_M" lock.tag)
L=$(lines messages "$CL_M")
CCONV=$(field conv <<<"$L" | sort -u)
t_eq "claude -p, then --continue 3 times: 4 answers, one conversation ($CCONV) on the lock ($LOCK)" \
	"4 4 1 $LOCK" "$ok $(wc -l <<<"$L") $(wc -l <<<"$CCONV") $(field provider <<<"$L" | sort -u | paste -sd' ')"
t_eq "  cached tokens per turn: none, read, none (forgotten), read" "0 1 0 1" \
	"$(field cached <<<"$L" | awk '{ printf "%s%d", (NR > 1 ? " " : ""), ($1 > 0) }')"
t_eq "  the log: one break, turn 3's, provider_miss" "0 0 provider_miss 0" \
	"$(awk '{ b = "0"; for (i = 1; i <= NF; i++) if ($i ~ /^break=/) b = substr($i, 7); printf "%s%s", (NR > 1 ? " " : ""), b }' <<<"$L")"
t_eq "  /stats: 4 turns, breaks_total 1: turn 3, provider_miss on $LOCK" \
	"4 1 1 3 provider_miss null $LOCK $LOCK" \
	"$(conv "$CCONV" '[c.turns, c.breaks_total, c.breaks.length, c.breaks[0].turn, c.breaks[0].cause, String(c.breaks[0].at), c.breaks[0].provider, c.breaks[0].from].join(" ")')"
