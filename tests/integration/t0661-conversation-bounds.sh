#!/bin/bash
# t0661-conversation-bounds: the conversation records stay bounded.
#   - 10,000 conversations (a record the gateway wrote, loaded under
#     10,000 keys with orgw-score --load), all active, with the default
#     MAX_CONVERSATIONS (1000): /stats lists 100 and it and /metrics keep
#     their size from 1,000 to 10,000 records; the scorer's run (orgw-score,
#     whose sweep bounds them) leaves 1,000, the most recently used, and
#     the same sizes;
#   - then 300 conversations through lighttpd, the workers and the double
#     with MAX_CONVERSATIONS=100: after the scorer's run 100 records, the
#     most recently used (the oldest of the 300, used again last, among
#     them); a dropped conversation's next turn starts a record again.
. "$(dirname "$0")/../lib.sh"

M=test/bounds
orgw_start
double_ctl PUT "endpoints/$M" '[
 {"tag":"alpha","provider_name":"Alpha","status":0,"uptime_last_30m":99.9,
  "pricing":{"prompt":"0.000002","completion":"0.00001","input_cache_read":"0.0000002"},
  "supports_implicit_caching":true}]' >/dev/null
double_ctl POST config '{"prompt_cache":true}' >/dev/null
score() {
	local bin=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" "$@"
}
# convs: "key last_turn show" of every conversation record
convs() {
	score --dump 2>/dev/null | node -e '
let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
  for (const l of s.split("\n")) {
    if (!l.startsWith("{\"key\":\"CONV:")) continue;
    const r = JSON.parse(l), v = typeof r.value === "string" ? JSON.parse(r.value) : r.value;
    console.log(r.key, v.last_turn, v.show);
  }
});'
}
# newest_kept BEFORE AFTER: "ok" when every record in AFTER (convs) is at
# least as recently used as every record of BEFORE that is not
newest_kept() {
	awk 'NR == FNR { last[$1] = $2; next } { kept[$1] = 1 }
	END { lo = -1; hi = -1
		for (k in last) if (k in kept) { if (lo < 0 || last[k] < lo) lo = last[k] }
			else if (last[k] > hi) hi = last[k]
		print (lo >= hi ? "ok" : "kept from " lo ", dropped up to " hi) }' "$1" "$2"
}
CHAT='{"model":"'$M'","messages":[{"role":"system","content":"Bounds test."},{"role":"user","content":"hello"}]}'
chat() { orgw_http POST /v1/chat/completions "$CHAT" -H "x-session-id: $1"; }

# --- 10,000 records, MAX_CONVERSATIONS at its default ----------------------------------
# one conversation through the gateway, its id as long as the clones'
chat seed-0000000
t_eq "a conversation through the gateway" 200 "$HTTP_STATUS"
NOW=$(date +%s)
# clones FROM TO: its record as conversations FROM..TO-1 whose /stats rows
# are the same size as its own, each used within the last 5 minutes (all
# active)
score --dump 2>/dev/null | grep '"key":"CONV:' | grep '"show":"seed-0000000"' >"$ORGW_T/one.jsonl"
clones() {
	node -e '
const [from, to, now, file] = process.argv.slice(1);
const one = JSON.parse(require("fs").readFileSync(file, "utf8"));
const model = one.key.split(":").slice(1, -1).join(":");
const out = [];
for (let i = Number(from); i < Number(to); i++) {
  const v = typeof one.value === "string" ? JSON.parse(one.value) : structuredClone(one.value);
  const t = Number(now) - 1 - (i % 250);
  v.show = "c" + String(i).padStart(11, "0");
  v.last_turn = t;
  if (v.cache) v.cache.last_seen = t;
  const value = typeof one.value === "string" ? JSON.stringify(v) : v;
  out.push(JSON.stringify({ key: `CONV:${model}:${String(i).padStart(64, "0")}`, value }));
}
process.stdout.write(out.join("\n") + "\n");
' "$1" "$2" "$NOW" "$ORGW_T/one.jsonl"
}
# sizes NAME: the rows /stats lists (kept as $ORGW_T/stats.NAME), the bytes of its list, of the model's
# conversations object, of the whole /stats and of /metrics
sizes() {
	local s m
	s=$(orgw_curl /stats)
	printf '%s' "$s" >"$ORGW_T/stats.$1"
	m=$(orgw_curl /metrics)
	json_get "$s" "[j.conversations.length, JSON.stringify(j.conversations).length,
	JSON.stringify(j.models['$M'].conversations).length].join(' ')"
	printf ' %s %s' "${#s}" "${#m}"
}
t_check "one record to clone" test -s "$ORGW_T/one.jsonl"
clones 0 1000 | score --load >/dev/null 2>&1
read -ra A <<<"$(sizes a)"
clones 1000 10000 | score --load >/dev/null 2>&1
convs >"$ORGW_T/before"
t_eq "10,000 records loaded (and the gateway's)" 10001 "$(grep -c '' "$ORGW_T/before")"
read -ra Z <<<"$(sizes z)"
t_eq "/stats lists 100 with 1,000 and with 10,000 records" "100 100" "${A[0]} ${Z[0]}"
t_eq "... its list: the same size" "${A[1]}" "${Z[1]}"
# its two counts of active conversations (1001, 10001) gain a digit each
t_eq "... the model's conversations object: two bytes more" "$((A[2] + 2))" "${Z[2]}"
t_check "... /stats and /metrics within a few bytes (${A[3]} ${A[4]} / ${Z[3]} ${Z[4]})" \
	test $((Z[3] - A[3])) -le 16 -a $((A[3] - Z[3])) -le 16 \
	-a $((Z[4] - A[4])) -le 16 -a $((A[4] - Z[4])) -le 16
score >"$ORGW_T/run.out" 2>&1
t_eq "the scorer's run" 0 $?
convs >"$ORGW_T/after"
t_eq "after its sweep: MAX_CONVERSATIONS (1000) records" 1000 "$(grep -c '' "$ORGW_T/after")"
t_eq "... the most recently used" ok "$(newest_kept "$ORGW_T/before" "$ORGW_T/after")"
read -ra S <<<"$(sizes s)"
t_eq "/stats after the sweep: 100 listed, the list and the model's object as with 1,000 records" \
	"${A[0]} ${A[1]} ${A[2]}" "${S[0]} ${S[1]} ${S[2]}"
t_check "... /stats and /metrics within a few bytes (${S[3]} ${S[4]})" \
	test $((S[3] - A[3])) -le 16 -a $((A[3] - S[3])) -le 16 \
	-a $((S[4] - A[4])) -le 16 -a $((A[4] - S[4])) -le 16

# --- through the gateway, MAX_CONVERSATIONS=100 -----------------------------------
orgw_restart_workers MAX_CONVERSATIONS=100
sleep 1.1 # the 300 used after every record loaded
seq 1 300 | xargs -P 4 -I{} curl -sS -o /dev/null -w '%{http_code}\n' --max-time 60 \
	-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
	-H 'x-session-id: bulk-{}' --data-binary "$CHAT" "$ORGW_URL/v1/chat/completions" >"$ORGW_T/codes"
t_eq "300 conversations, each request 200" "300 300" \
	"$(grep -c '' "$ORGW_T/codes") $(grep -c '^200$' "$ORGW_T/codes")"
sleep 1.1 # a second of its own for the next turn's last-used time
chat bulk-1
t_eq "the oldest conversation's second turn" 200 "$HTTP_STATUS"
convs >"$ORGW_T/before"
t_eq "the 300 records and the 1,000 kept" 1300 "$(grep -c '' "$ORGW_T/before")"
score >"$ORGW_T/run.out" 2>&1
t_eq "the scorer's run" 0 $?
convs >"$ORGW_T/after"
t_eq "after its sweep: MAX_CONVERSATIONS (100) records" 100 "$(grep -c '' "$ORGW_T/after")"
t_eq "... the most recently used" ok "$(newest_kept "$ORGW_T/before" "$ORGW_T/after")"
t_eq "... the oldest conversation, used last, among them, and only the 300's" "1 100" \
	"$(grep -c ' bulk-1$' "$ORGW_T/after") $(grep -c ' bulk-[0-9]*$' "$ORGW_T/after")"
gone=$(grep -vFf <(cut -d' ' -f1 "$ORGW_T/after") "$ORGW_T/before" | grep ' bulk-' | head -n 1 | cut -d' ' -f3)
chat "$gone"
t_eq "a dropped conversation ($gone) is served and starts a record again" "200 101" \
	"$HTTP_STATUS $(convs | grep -c '')"

