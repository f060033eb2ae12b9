#!/bin/bash
# t0355-operator: the operator commands of orgw-score
# on a running stack, under the workers' lock: cool the locked provider
# and the next request goes to the next candidate at once, /stats shows
# the cooldown; uncool it and it is ranked (and locked) again; unlock and
# the next request relocks; status --json agrees with /stats; rescore
# scores one model; bad arguments exit 2 with a message; every change
# logs an "operator:" line; the gateway serves throughout.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

# MAX_ATTEMPTS 1: a failure is not retried, so its count stays.
orgw_start LOCK_IDLE_SECONDS=3600 COOLDOWN_SECONDS=600 MAX_ATTEMPTS=1
M=deepseek/deepseek-v3.2

op() { # ARGS: orgw-score with the test config; RC, $ORGW_T/op.out, op.err
	"$SCORER" --config "$ORGW_CONFIG_FILE" "$@" >"$ORGW_T/op.out" 2>"$ORGW_T/op.err"
	RC=$?
}
ask() { # one request for $M, a new conversation each: "provider route"
	orgw_http POST /v1/chat/completions "{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"x $(date +%s%N)\"}]}"
	printf '%s %s %s' "$HTTP_STATUS" "$(http_header X-Orgw-Provider)" "$(http_header X-Orgw-Route)"
}
stat() { json_get "$(orgw_curl /stats)" "$1"; }

t_eq "the first request scores and locks deepseek" "200 deepseek scored" "$(ask)"

# The gateway keeps serving while the commands run: a client in the
# background, another model, one request after another.
(
	for i in $(seq 30); do
		out=$(orgw_curl /v1/chat/completions \
			-d '{"model":"other/model","messages":[{"role":"user","content":"bg"}]}')
		[ "$(json_get "$out" 'j.object')" = chat.completion ] || echo "bg $i: $out"
	done >"$ORGW_T/bg.fail" 2>&1
	echo done >"$ORGW_T/bg.done"
) &
BG=$!

# --- cool the locked provider ----------------------------------------------
op cool $M deepseek 300 "maintenance window"
t_eq "cool exits 0" 0 "$RC"
t_match "cool says the lock moved to the next candidate" \
	"deepseek cooling for 300 s; lock deepinfra/fp8 \(moved\)" "$(cat "$ORGW_T/op.out")"
t_match "cool logs an operator line" \
	'info: operator: cool model=deepseek/deepseek-v3.2 provider=deepseek seconds=300 reason="maintenance window" lock=deepinfra/fp8 \(moved\)' \
	"$(cat "$ORGW_T/op.err")"
t_eq "the very next request goes to deepinfra/fp8 on the live lock" \
	"200 deepinfra/fp8 locked" "$(ask)"
t_eq "/stats shows the cooldown and its reason" "maintenance window" \
	"$(stat "j.models['$M'].cooldowns.deepseek.reason")"
t_match "/stats: until is about 300 s ahead" '^(29[0-9]|300)$' \
	"$(stat "j.models['$M'].cooldowns.deepseek.until - j.generated_at")"
t_eq "/stats: the lock is deepinfra/fp8" deepinfra/fp8 "$(stat "j.models['$M'].lock.tag")"

# --- status agrees with /stats -----------------------------------------------
op status --json $M
t_eq "status --json exits 0" 0 "$RC"
st=$(orgw_curl /stats)
t_eq "status --json: the same lock as /stats" \
	"$(json_get "$st" "JSON.stringify(j.models['$M'].lock)")" \
	"$(json_get "$ORGW_T/op.out" "JSON.stringify(j.models['$M'].lock)")"
t_eq "status --json: the same cooldowns as /stats" \
	"$(json_get "$st" "JSON.stringify(j.models['$M'].cooldowns)")" \
	"$(json_get "$ORGW_T/op.out" "JSON.stringify(j.models['$M'].cooldowns)")"
t_eq "status --json MODEL: only that model" "$M" \
	"$(json_get "$ORGW_T/op.out" "Object.keys(j.models).join()")"
op status
t_eq "status (all models) exits 0" 0 "$RC"
while IFS= read -r l; do printf '# %s\n' "$l"; done <"$ORGW_T/op.out"
t_match "status table: the lock line" '^   lock: deepinfra/fp8 \(DeepInfra\) since ' \
	"$(grep -A1 "^== $M\$" "$ORGW_T/op.out" | grep '^   lock:')"
t_match "status table: deepseek ranked 1, cooling with its reason" \
	'^   1   deepseek .* [0-9]+ s left \(maintenance window\)$' \
	"$(grep -E '^ +1 +deepseek ' "$ORGW_T/op.out")"
t_match "status table: deepinfra/fp8 marked as the lock" '^   2 \* deepinfra/fp8 ' \
	"$(grep -E 'deepinfra/fp8  ' "$ORGW_T/op.out")"

# --- uncool: ranked again ----------------------------------------------------
op uncool $M deepseek
t_eq "uncool exits 0" 0 "$RC"
t_eq "uncool says what it cleared" "$M: deepseek: cooldown cleared, failure count none" \
	"$(cat "$ORGW_T/op.out")"
t_match "uncool logs an operator line" \
	'info: operator: uncool model=deepseek/deepseek-v3.2 provider=deepseek cooldown=cleared' \
	"$(cat "$ORGW_T/op.err")"
t_eq "/stats: no cooldown left" "{}" "$(stat "JSON.stringify(j.models['$M'].cooldowns || {})")"
t_eq "uncool never moves the live lock" "200 deepinfra/fp8 locked" "$(ask)"
op --json rescore $M
t_eq "rescore exits 0" 0 "$RC"
t_eq "rescore scores only that model and ranks deepseek first again" \
	"$M deepseek" \
	"$(json_get "$ORGW_T/op.out" "Object.keys(j.models).join() + ' ' + j.models['$M'].winner")"

# --- unlock: the next request relocks to the best ----------------------------
op unlock $M
t_eq "unlock exits 0" 0 "$RC"
t_eq "unlock names the lock it dropped" "$M: unlocked (was deepinfra/fp8); the next request relocks" \
	"$(cat "$ORGW_T/op.out")"
t_match "unlock logs an operator line" \
	'info: operator: unlock model=deepseek/deepseek-v3.2 was=deepinfra/fp8' "$(cat "$ORGW_T/op.err")"
t_eq "/stats: no lock" undefined "$(stat "String(j.models['$M'].lock)")"
t_eq "the next request relocks to deepseek, ranked again" "200 deepseek relocked" "$(ask)"
op unlock other/never-seen
t_eq "unlock of a model without a lock exits 0" "0 other/never-seen: had no lock" "$RC $(cat "$ORGW_T/op.out")"

# --- a failure count is cleared by uncool -----------------------------------
double_ctl POST faults '{"faults":[{"kind":"status","status":503,"times":1,"match":{"tag":"deepseek"}}]}' >/dev/null
t_match "a 503 on deepseek (not retried: MAX_ATTEMPTS 1)" '^5[0-9][0-9] ' "$(ask)"
t_eq "/stats: one failure of deepseek" 1 "$(stat "j.models['$M'].failures.deepseek")"
op uncool $M deepseek
t_eq "uncool clears the failure count" "0 $M: deepseek: cooldown none, failure count cleared" \
	"$RC $(cat "$ORGW_T/op.out")"
t_eq "/stats: no failure count" undefined "$(stat "String(j.models['$M'].failures?.deepseek)")"

# --- cooling the last candidate drops the lock --------------------------------
op unlock $M
ask >/dev/null
op cool $M deepinfra/fp8 60
op cool $M novita 60
op cool $M deepseek 60
t_match "cooling every candidate drops the lock" "lock none \(requests go unpinned\) \(moved\)" \
	"$(cat "$ORGW_T/op.out")"
t_eq "and requests go unpinned" "200 auto unpinned" "$(ask)"
for t in deepseek deepinfra/fp8 novita; do op uncool $M $t; done

# --- bad arguments: exit 2 with a message, nothing written -------------------
before=$(stat "JSON.stringify(j.models['$M'].cooldowns || {}) + JSON.stringify(j.models['$M'].lock)")
bad() { # DESCRIPTION PATTERN ARGS...: exit 2 and the message matches
	local d=$1 p=$2
	shift 2
	op "$@"
	t_eq "$d: exit 2" 2 "$RC"
	t_match "$d: message" "$p" "$(head -1 "$ORGW_T/op.err")"
}
bad "unknown command" 'unknown argument: frob \(commands: status, unlock' frob
bad "cool without SECONDS" 'cool: wrong number of arguments' cool $M deepseek
bad "SECONDS 0" 'SECONDS: want 1\.\.604800, got "0"' cool $M deepseek 0
bad "SECONDS too large" 'SECONDS: want 1\.\.604800, got "604801"' cool $M deepseek 604801
bad "SECONDS not a number" 'SECONDS: want 1\.\.604800, got "10s"' cool $M deepseek 10s
bad "a bad model id" 'not a valid model id: \.\./x' unlock ../x
bad "a tag with ':'" 'not a valid provider tag' cool $M 'a:b' 10
bad "a tag with a blank" 'not a valid provider tag' uncool $M 'a b'
bad "a reason too long" 'REASON: want 1\.\.63' cool $M deepseek 10 "$(printf 'x%.0s' $(seq 70))"
bad "status with two models" 'status: wrong number of arguments' status a/b c/d
bad "unlock --json" 'unlock takes no --json' unlock --json $M
bad "--dry-run unlock" 'unlock takes no --model, --dry-run' --dry-run unlock $M
bad "rescore with --model" 'rescore takes no --model' --model $M rescore $M
t_eq "bad arguments wrote nothing" "$before" \
	"$(stat "JSON.stringify(j.models['$M'].cooldowns || {}) + JSON.stringify(j.models['$M'].lock)")"
op --config /nonexistent/orgw.conf status
t_eq "an unreadable configuration exits 2" 2 "$RC"

# --- state unusable: exit 1 ---------------------------------------------------
if [ "${ORGW_STATE_BACKEND:-gdbm}" = redis ]; then
	# A Redis nobody listens on (a port just found free).
	bad_where="redis://127.0.0.1:$(orgw__free_port)/0"
	printf 'STATE_BACKEND=redis\nREDIS_URL=%s\n' "$bad_where" >"$ORGW_T/bad.conf"
else
	bad_where="$ORGW_T/no-such-dir/state.gdbm"
	printf 'STATE_PATH=%s\n' "$bad_where" >"$ORGW_T/bad.conf"
fi
chmod 600 "$ORGW_T/bad.conf"
"$SCORER" --config "$ORGW_T/bad.conf" unlock $M >"$ORGW_T/op.out" 2>"$ORGW_T/op.err"
RC=$?
t_eq "a state that cannot be opened exits 1" 1 "$RC"
t_match "with a message naming it" "unlock: state $bad_where unusable" "$(cat "$ORGW_T/op.err")"

# --- the gateway served throughout ----------------------------------------------
for i in $(seq 600); do [ -e "$ORGW_T/bg.done" ] && break; sleep 0.1; done
wait $BG
t_eq "the background client's 30 requests all succeeded" "" "$(cat "$ORGW_T/bg.fail")"
t_eq "/stats counted them" 30 "$(stat "j.models['other/model'].ok")"
