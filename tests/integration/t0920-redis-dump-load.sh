#!/bin/bash
# t0920-redis-dump-load: orgw-score --dump of a GDBM state loaded into
# Redis with --load gives the same /stats:
#   STATE_BACKEND=gdbm orgw-score --dump | STATE_BACKEND=redis orgw-score --load
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
unset ORGW_STATE_BACKEND
orgw_start FAIL_LIMIT=3 COOLDOWN_SECONDS=600
M=deepseek/deepseek-v3.2

# A state with every kind of key: locks, candidates, stats, a failure
# count, a cooldown, seen models.
for m in $M seen/a seen/b; do
	for i in 1 2 3; do orgw_chat --model $m >/dev/null; done
done
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":3,"match":{"tag":"alpha"}}]}' >/dev/null
orgw_chat --model seen/a >/dev/null
double_ctl POST faults '{"faults":[{"kind":"status","status":502,"times":1,"match":{"tag":"deepseek"}}]}' >/dev/null
orgw_chat --model $M >/dev/null
double_ctl DELETE faults >/dev/null
stats_of() { # URL: /stats without generated_at, keys sorted (GDBM lists
	# keys in hash order, Redis in sorted order: the same document)
	ORGW_URL=$1 orgw_http GET /stats
	json_get "$HTTP_BODY" '(() => { delete j.generated_at; const s = v => Array.isArray(v) ? v.map(s) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map(k => [k, s(v[k])])) : v; return JSON.stringify(s(j)); })()'
}
g=$(stats_of "$ORGW_URL")
t_eq "the GDBM state has a cooldown and a (reset) failure count" "5xx 0" \
	"$(json_get "$g" "j.models['seen/a'].cooldowns.alpha.reason + ' ' + j.models['$M'].failures.deepseek")"

"$SCORER" --config "$ORGW_CONFIG_FILE" --dump >"$ORGW_T/dump.jsonl" 2>"$ORGW_T/dump.err"
t_eq "--dump exits 0" 0 $?
t_match "--dump says how many keys" 'dumped [0-9]+ keys' "$(cat "$ORGW_T/dump.err")"
t_eq "every line is {key, value}" "$(wc -l <"$ORGW_T/dump.jsonl")" \
	"$(node -e 'let n=0;for (const l of require("fs").readFileSync(process.argv[1],"utf8").split("\n")) { if (!l) continue; const j=JSON.parse(l); if (typeof j.key==="string" && "value" in j && Object.keys(j).length===2) n++ } console.log(n)' "$ORGW_T/dump.jsonl")"
for k in BEST_PROVIDER PROVIDER_CANDIDATE LEDGER HIT MODEL_SEEN PROVIDER_FAILURE PROVIDER_COOLDOWN; do
	t_check "the dump has $k keys" grep -q "^{\"key\":\"$k:" "$ORGW_T/dump.jsonl"
done

# The same settings, on Redis, for a second gateway host on the loaded state.
orgw_redis_start "$ORGW_T/redis" || t_fail "redis-server did not start"
cp "$ORGW_CONFIG_FILE" "$ORGW_T/redis.conf"
printf 'STATE_BACKEND=redis\nREDIS_URL=%s\n' "$ORGW_REDIS_URL" >>"$ORGW_T/redis.conf"
env -i PATH="$PATH" STATE_BACKEND=gdbm "$SCORER" --config "$ORGW_CONFIG_FILE" --dump 2>/dev/null |
	env -i PATH="$PATH" "$SCORER" --config "$ORGW_T/redis.conf" --load 2>"$ORGW_T/load.err"
t_eq "gdbm --dump | redis --load exits 0" 0 "${PIPESTATUS[1]}"
t_match "--load says how many keys" "loaded $(wc -l <"$ORGW_T/dump.jsonl") keys" "$(cat "$ORGW_T/load.err")"
"$SCORER" --config "$ORGW_T/redis.conf" --dump 2>/dev/null | sort >"$ORGW_T/redis.jsonl"
t_eq "a dump of Redis is the GDBM dump" "$(sort "$ORGW_T/dump.jsonl")" "$(cat "$ORGW_T/redis.jsonl")"
cooldown_ttl=$(orgw_redis_cli --raw PTTL "orgw:PROVIDER_COOLDOWN:seen/a:alpha")
t_check "the loaded cooldown expires in Redis ($cooldown_ttl ms)" test "$cooldown_ttl" -gt 0 -a "$cooldown_ttl" -le 600000

cp "$ORGW_T/redis.conf" "$ORGW_CONFIG_FILE"
orgw_start_host2
t_eq "the gateway on Redis shows the same /stats" "$g" "$(stats_of "$ORGW2_URL")"

printf 'not json\n' | "$SCORER" --config "$ORGW_T/redis.conf" --load 2>"$ORGW_T/bad.err"
t_eq "a bad line: exit 1" 1 $?
t_match "naming the line, nothing loaded" 'line 1: not a dump line; nothing loaded' "$(cat "$ORGW_T/bad.err")"
