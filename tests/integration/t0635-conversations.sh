#!/bin/bash
# t0635-conversations: what /stats, /metrics, /status and
# `orgw-score conversations` show of the conversation records.  The
# records (CONV:<model>:<hash>, PRESSURE:<model>:<tag>) are written into
# the state with `orgw-score --load`, in the shape the gateway writes
# them: a Messages conversation on deepseek whose system prompt changed at
# turn 3, whose provider missed at turn 5 and which moved at turn 6; one
# started on deepinfra/fp8 because the lock was under pressure, resumed
# past the cache lifetime; one idle longer than CONVERSATION_IDLE_SECONDS;
# deepinfra/fp8 under pressure for 25 s more; and the model's ledger
# cells of the day, whose breaks by cause count more than the records
# hold (the breaks of conversations the scorer's sweep dropped).  Then:
#   - /stats: the rows (newest first, every member, the breaks in words),
#     active conversations per provider, spread, breaks by cause (the
#     ledger's, not the records'), provider 429s and pressure until when;
#   - /metrics: the new series, promtool-clean;
#   - a team key without --admin sees none of it (/stats 403, /metrics 401);
#   - the CLI: the table, --json (the /stats rows), --model;
#   - /status in Chromium at 1280 and 390 px (tests/js/conversations-page.mjs);
#   - bounds: with 1,000 and then 10,000 more records, /stats lists 100
#     and it and /metrics keep their size.
#   ORGW_STATUS_SHOTS=DIR  also keep the screenshots there (docs/).
. "$(dirname "$0")/../lib.sh"

M=deepseek/deepseek-v3.2
B=bulk/model
NOW=$(date +%s)
score() {
	local bin=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	env -i PATH="$PATH" "$bin" --config "$ORGW_CONFIG_FILE" "$@"
}

orgw_start KEYS_SECRET=t0635-conversations-secret-0123456789

# seed KIND FROM TO: JSON lines for orgw-score --load.  KIND "main": the
# three conversations and the pressure record; "bulk": conversations
# FROM..TO-1 of $B, idle for a day, without breaks.
seed() {
	node -e '
const [kind, from, to, now, M, B] = process.argv.slice(1);
const NOW = Number(now);
const brk = (turn, cause, o) => Object.assign({ turn, cause, expected_tokens: 30000,
  cached_tokens: 0, idle_s: 20, provider: "deepseek", from: "deepseek" }, o);
const conv = (model, hash, r, c) => ({ key: `CONV:${model}:${hash}`, value: Object.assign({ v: 1, model,
  api: "messages", first_seen: r.last_turn - 600, turns: 6, spread: false }, r, { cache: Object.assign({ v: 1,
  turns: r.turns ?? 6, first_seen: r.last_turn - 600, last_seen: r.last_turn, prompt_tokens: 200000,
  cached_tokens: 150000, cache_write_tokens: 30000, last_prompt_tokens: 40000, cost: 0.0421,
  saved: 0.0125, provider: r.tag, breaks_total: 0, breaks: [] }, c) }) });
const out = [];
if (kind === "main") {
  out.push(conv(M, "a".repeat(64), { tag: "deepseek", show: "cc-sess-0001", last_turn: NOW - 30 },
    { breaks_total: 3, breaks: [
      brk(3, "prefix_changed", { at: 0, unit: "system", cached_tokens: 512 }),
      brk(5, "provider_miss", {}),
      brk(6, "moved", { from: "deepinfra/fp8" }) ] }));
  out.push(conv(M, "b".repeat(64), { tag: "deepinfra/fp8", show: "h:0123456789", last_turn: NOW - 60,
    spread: true, api: "chat", turns: 4 },
    { breaks_total: 1, breaks: [ brk(4, "expired", { idle_s: 420, provider: "deepinfra/fp8", from: "deepinfra/fp8" }) ] }));
  out.push(conv(M, "c".repeat(64), { tag: "deepseek", show: "codex-idle-1", last_turn: NOW - 700,
    api: "responses", turns: 2 }, { cached_tokens: 0, saved: 0 }));
  out.push({ key: `PRESSURE:${M}:deepinfra/fp8`, value: { v: 1, until: NOW + 25, n429: 5 } });
  // The cells of its requests: breaks moved 2, prefix_changed 4, expired 1, provider_miss 3.
  const day = new Date(NOW * 1000).toISOString().slice(0, 10);
  out.push({ key: `LEDGER:${M}:${day}:messages:deepseek`, value: { v: 1, r: 12, ok: 12, bmv: 2, bpc: 4, bpm: 3 } });
  out.push({ key: `LEDGER:${M}:${day}:chat:deepinfra/fp8`, value: { v: 1, r: 4, ok: 4, bex: 1 } });
} else {
  for (let i = Number(from); i < Number(to); i++)
    out.push(conv(B, String(i).padStart(64, "0"), { tag: "novita", show: "b" + String(i).padStart(11, "0"),
      last_turn: NOW - 86400 + i % 1000 }, {}));
}
process.stdout.write(out.map((l) => JSON.stringify(l)).join("\n") + "\n");
' "$1" "${2:-0}" "${3:-0}" "$NOW" "$M" "$B"
}

seed main >"$ORGW_T/main.jsonl"
score --load <"$ORGW_T/main.jsonl"
t_eq "the records load" 0 $?

# --- /stats --------------------------------------------------------------------
S=$ORGW_T/stats.json
orgw_curl /stats >"$S"
t_eq "/stats: the three conversations, newest first" \
	"cc-sess-0001 h:0123456789 codex-idle-1" \
	"$(json_get "$S" "j.conversations.map(c => c.id).join(' ')")"
t_eq "a row has every member, with the record's values" \
	"$M messages deepseek 6 200000 150000 30000 0.0421 0.0125 $((NOW - 30)) 3" \
	"$(json_get "$S" "(c => [c.model, c.api, c.provider, c.turns, c.prompt_tokens, c.cached_tokens,
	c.cache_write_tokens, c.cost, c.saved, c.last_seen, c.breaks.length].join(' '))(j.conversations[0])")"
t_eq "a break: turn, cause, at, unit, expected and cached tokens" \
	'{"turn":3,"cause":"prefix_changed","at":0,"unit":"system","expected_tokens":30000,"cached_tokens":512}' \
	"$(json_get "$S" "(b => JSON.stringify({turn: b.turn, cause: b.cause, at: b.at, unit: b.unit,
	expected_tokens: b.expected_tokens, cached_tokens: b.cached_tokens}))(j.conversations[0].breaks[0])")"
t_eq "the breaks in words" \
	"turn 3: the system prompt changed at block 0|turn 5: deepseek did not read its cache|turn 6: moved from deepinfra/fp8 to deepseek|turn 4: resumed after 7 min, past the 5 min cache lifetime" \
	"$(json_get "$S" "j.conversations.flatMap(c => c.breaks.map(b => b.words)).join('|')")"
t_eq "per model: active per provider (the idle one not), spread, breaks by cause (the ledger's)" \
	"2 1 1 1 2 4 1 3" \
	"$(json_get "$S" "(c => [c.active, c.providers.deepseek.active, c.providers['deepinfra/fp8'].active, c.spread,
	c.breaks.moved, c.breaks.prefix_changed, c.breaks.expired, c.breaks.provider_miss].join(' '))(j.models['$M'].conversations)")"
t_eq "per provider: provider 429s and pressure until when" \
	"5 true $((NOW + 25)) 0 false null" \
	"$(json_get "$S" "(p => [p['deepinfra/fp8'].provider_429s, p['deepinfra/fp8'].under_pressure,
	p['deepinfra/fp8'].pressure_until, p.deepseek.provider_429s, p.deepseek.under_pressure,
	p.deepseek.pressure_until].join(' ').replace(/ $/, ' null'))(j.models['$M'].conversations.providers)")"

# --- /metrics --------------------------------------------------------------------
orgw_curl /metrics >"$ORGW_T/metrics.txt"
for want in \
	"orgw_conversations_active{model=\"$M\",provider=\"deepseek\"} 1" \
	"orgw_conversations_active{model=\"$M\",provider=\"deepinfra/fp8\"} 1" \
	"orgw_cache_breaks_total{model=\"$M\",cause=\"prefix_changed\"} 4" \
	"orgw_cache_breaks_total{model=\"$M\",cause=\"moved\"} 2" \
	"orgw_cache_breaks_total{model=\"$M\",cause=\"expired\"} 1" \
	"orgw_cache_breaks_total{model=\"$M\",cause=\"provider_miss\"} 3" \
	"orgw_conversations_spread{model=\"$M\"} 1" \
	"orgw_provider_429s{model=\"$M\",provider=\"deepinfra/fp8\"} 5" \
	"orgw_provider_under_pressure{model=\"$M\",provider=\"deepinfra/fp8\"} 1" \
	"orgw_provider_under_pressure{model=\"$M\",provider=\"deepseek\"} 0"; do
	t_check "/metrics: $want" grep -qxF "$want" "$ORGW_T/metrics.txt"
done
if out=$(promtool check metrics <"$ORGW_T/metrics.txt" 2>&1); then
	t_ok "promtool check metrics passes"
else
	t_fail "promtool check metrics passes" "$out"
fi

# --- a team key -----------------------------------------------------------------
TEAM=$(score key add team-a 2>"$ORGW_T/key.err")
t_match "a team key made" '^orgw-' "$TEAM"
HTTP_KEY=$TEAM orgw_http GET /stats
t_eq "/stats with a team key: 403 admin_key_required, no conversation in it" \
	"403 admin_key_required 0" \
	"$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.error.code') $(grep -c 'cc-sess-0001' "$HTTP_BODY_FILE")"
HTTP_KEY=$TEAM orgw_http GET /metrics
t_eq "/metrics with a team key: 403" 403 "$HTTP_STATUS"

# --- the CLI ---------------------------------------------------------------------
T=$(score conversations)
t_eq "orgw-score conversations: exit 0" 0 $?
t_match "the table: a row with provider, turns, cached share, saved, last break" \
	"cc-sess-0001 +$M +deepseek +6 +75\\.0% +0\\.012500 +turn 6: moved from deepinfra/fp8 to deepseek" "$T"
t_match "the table: the idle one says no break" "codex-idle-1 +[^ ]+ +deepseek +2 +0\\.0% +0\\.000000 +-[[:space:]]" "$T"
t_match "the table: pressure" "deepinfra/fp8 +1 active +5 provider 429s +under pressure for [0-9]+ s more" "$T"
J=$(score conversations --json)
t_eq "--json: the /stats rows" "$(json_get "$S" "JSON.stringify(j.conversations)")" \
	"$(json_get "$J" "JSON.stringify(j.conversations)")"
t_eq "--json --model another: none of them" "0 0" \
	"$(json_get "$(score conversations --model other/model --json)" "j.conversations.length + ' ' + Object.keys(j.models).length")"
score conversations --model 'bad model' >/dev/null 2>&1
t_eq "a bad --model is a usage error" 2 $?

# --- /status in Chromium ------------------------------------------------------------
SHOTS=${ORGW_STATUS_SHOTS:-$ORGW_T}
node "$ORGW_ROOT/tests/js/conversations-page.mjs" --base "$ORGW_URL" --key "$ORGW_KEY" \
	--stats "$S" --shots "$SHOTS" || true
for w in 1280 390; do
	t_check "screenshot at $w px taken" test -s "$SHOTS/status-conversations-$w.png"
done

# --- bounds ---------------------------------------------------------------------------
# conv_size: the bytes of /stats's list and per-model objects, of the whole
# /stats and of /metrics.
sizes() {
	local s m
	s=$(orgw_curl /stats)
	m=$(orgw_curl /metrics)
	json_get "$s" "[j.conversations.length, JSON.stringify(j.conversations).length,
	JSON.stringify(Object.values(j.models).map(x => x.conversations)).length].join(' ')"
	printf ' %s %s' "${#s}" "${#m}"
}
seed bulk 0 1000 | score --load
A=($(sizes))
seed bulk 1000 11000 | score --load
t_eq "11,000 records loaded" 11003 "$(score --dump | grep -c '"key":"CONV:')"
Z=($(sizes))
t_eq "at most 100 listed, with 1,000 and 11,000 records" "100 100" "${A[0]} ${Z[0]}"
t_eq "the list and the per-model objects: the same size" "${A[1]} ${A[2]}" "${Z[1]} ${Z[2]}"
t_check "/stats and /metrics within a few bytes (${A[3]} ${A[4]} / ${Z[3]} ${Z[4]})" \
	test $((Z[3] - A[3])) -le 16 -a $((A[3] - Z[3])) -le 16 -a $((Z[4] - A[4])) -le 16 -a $((A[4] - Z[4])) -le 16
