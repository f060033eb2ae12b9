#!/bin/bash
# t0340-score-run: what a scoring run touches.  orgw-score scores
# MODELS_SEEN plus TARGET_MODEL; the double sees raw '/' paths (never %2F)
# and always the upstream key; --dry-run leaves the state file unchanged
# byte for byte; a failing model keeps its old candidates; the scorer never
# writes a live lock; exit status 0/1/2; POST /__cron runs the same scoring
# with the client key (401 without).
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

orgw_start TARGET_MODEL=target/one
T=target/one

scorer() { # ARGS: runs orgw-score with the test config; status in RC
	"$SCORER" --config "$ORGW_CONFIG_FILE" "$@" >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
	RC=$?
}
cands() { # MODEL: the candidate tags in /stats
	json_get "$(orgw_curl /stats)" "(j.models['$1']?.candidates || []).map(c => c.tag).join(',')"
}

# Two models seen by the gateway (each scored inline and locked).
for m in seen/a seen/b; do
	out=$(orgw_chat --model $m)
	t_eq "request for $m succeeds" true "$(json_get "$out" 'j.ok')"
done
double_ctl DELETE log >/dev/null

# --- which models, which requests ------------------------------------------
scorer --json
t_eq "orgw-score with no --model exits 0" 0 "$RC"
t_eq "it scores TARGET_MODEL, then MODELS_SEEN" "$T,seen/a,seen/b" \
	"$(json_get "$ORGW_T/s.out" 'Object.keys(j.models).join(",")')"
log=$(double_ctl GET 'log?path=endpoints')
t_eq "the double saw one endpoints fetch per model" 3 "$(json_get "$log" 'j.requests.length')"
t_eq "at the raw '/' paths" \
	"/api/v1/models/seen/a/endpoints /api/v1/models/seen/b/endpoints /api/v1/models/$T/endpoints" \
	"$(json_get "$log" 'j.requests.map(r => r.path).sort().join(" ")')"
t_eq "the target got candidates (but no lock: it was never requested)" "alpha,beta,gamma undefined" \
	"$(cands $T) $(json_get "$(orgw_curl /stats)" "String(j.models['$T'].lock)")"
t_check "the state dump has keys" test "$(orgw_state_dump | grep -c '"key":"PROVIDER_CANDIDATE:')" -ge 3
no_target_lock() { ! orgw_state_dump | grep -qF "\"key\":\"BEST_PROVIDER:$T\""; }
t_check "no BEST_PROVIDER key for the target in the state" no_target_lock

# --- a failing model keeps its old candidates -------------------------------
double_ctl PUT endpoints/seen/b '{"status":500}' >/dev/null
before=$(cands seen/b)
scorer --json
t_eq "a failing model makes the exit status 1" 1 "$RC"
t_eq "the others still scored" "true true false" \
	"$(json_get "$ORGW_T/s.out" "[j.models['$T'].ok, j.models['seen/a'].ok, j.models['seen/b'].ok].join(' ')")"
t_eq "its error is reported" "endpoints HTTP 500" \
	"$(json_get "$ORGW_T/s.out" "j.models['seen/b'].error")"
t_eq "its old candidates are kept" "$before" "$(cands seen/b)"
t_eq "/stats says why the last scoring failed" "endpoints HTTP 500" \
	"$(json_get "$(orgw_curl /stats)" "j.models['seen/b'].scoring_error")"
scorer --model seen/b
t_match "the table says the old candidates were kept" \
	'^== seen/b: FAILED after [0-9]+ ms: endpoints HTTP 500 \(old candidates kept\)$' \
	"$(grep '^== seen/b' "$ORGW_T/s.out")"
double_ctl DELETE endpoints/seen/b >/dev/null
scorer --model missing/model
t_eq "an unknown model (404) is a failure too" 1 "$RC"

# --- the live lock is the gateway's alone --------------------------------------
lock_a=$(json_get "$(orgw_curl /stats)" "JSON.stringify(j.models['seen/a'].lock)")
double_ctl PUT endpoints/seen/a "$(json_get "$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" \
	"$DOUBLE_URL/api/v1/models/seen/a/endpoints")" 'j.data.endpoints.filter(e => e.tag !== "alpha")')" >/dev/null
scorer --model seen/a
t_eq "after alpha disappears the scorer ranks beta first" "0 beta,gamma" "$RC $(cands seen/a)"
t_eq "the lock on alpha is untouched by the scorer" "$lock_a" \
	"$(json_get "$(orgw_curl /stats)" "JSON.stringify(j.models['seen/a'].lock)")"

# --- --dry-run writes nothing ------------------------------------------------
double_ctl PUT endpoints/seen/a '[]' >/dev/null	# would change the candidates
if [ "${ORGW_STATE_BACKEND:-gdbm}" = redis ]; then
	dump0=$(orgw_state_dump)
else
	sum0=$(sha256sum <"$ORGW_STATE")
	ls0=$(stat -c '%s %Y' "$ORGW_STATE")
fi
scorer --dry-run
t_eq "--dry-run exits 0" 0 "$RC"
t_match "--dry-run still prints the ranking" '== seen/a: scored at .*0 ranked' "$(cat "$ORGW_T/s.out")"
t_match "--dry-run says so in its summary" 'dry run: nothing written$' "$(tail -n 1 "$ORGW_T/s.out")"
scorer --dry-run --json --model seen/a --model seen/b
t_eq "--dry-run --json: JSON, saved not claimed" "true undefined" \
	"$(json_get "$ORGW_T/s.out" "j.dry_run + ' ' + j.models['seen/a'].saved")"
if [ "${ORGW_STATE_BACKEND:-gdbm}" = redis ]; then
	t_eq "the state is unchanged (the whole dump)" "$dump0" "$(orgw_state_dump)"
else
	t_eq "the state file is unchanged byte for byte (sha256)" "$sum0" "$(sha256sum <"$ORGW_STATE")"
	t_eq "and not even rewritten (size, mtime)" "$ls0" "$(stat -c '%s %Y' "$ORGW_STATE")"
fi
t_eq "so seen/a keeps beta,gamma" "beta,gamma" "$(cands seen/a)"
scorer --model seen/a
t_eq "a real run after it does write (no candidates now)" "0 " "$RC $(cands seen/a)"
double_ctl DELETE endpoints/seen/a >/dev/null

# --- the wire: raw '/', the upstream key -------------------------------------
# orgw's own fetches (not this test's curl) carry X-OpenRouter-Title: orgw.
log=$(double_ctl GET 'log?path=/endpoints' |
	json_get - '({requests: j.requests.filter(r => r.headers["x-openrouter-title"] === "orgw")})')
n=$(json_get "$log" 'j.requests.length')
t_check "the double logged the scorer's fetches ($n)" test "$n" -ge 10
t_eq "no endpoints path with %2F" 0 \
	"$(json_get "$log" 'j.requests.filter(r => /%2f/i.test(r.path)).length')"
t_eq "every endpoints fetch carried the upstream key" "$n" \
	"$(json_get "$log" "j.requests.filter(r => r.auth === 'Bearer $UPSTREAM_KEY').length")"
t_check "the upstream key never appears in the scorer's output" \
	bash -c "! grep -rqF '$UPSTREAM_KEY' '$ORGW_T/s.out' '$ORGW_T/s.err'"

# --- exit status 2: usage and configuration ---------------------------------
scorer --no-such-option
t_eq "an unknown option: exit 2" 2 "$RC"
t_match "with a message and the usage" 'unknown argument: --no-such-option' "$(cat "$ORGW_T/s.err")"
scorer --parallel 0
t_eq "--parallel 0: exit 2" 2 "$RC"
t_match "with the range" '--parallel: want 1\.\.64, got "0"' "$(cat "$ORGW_T/s.err")"
scorer --timeout-ms abc
t_eq "--timeout-ms abc: exit 2" 2 "$RC"
scorer --timeout-ms=' 5'
t_eq "--timeout-ms=' 5' (a blank before the digits, as in the config): exit 2" 2 "$RC"
scorer --model
t_eq "--model without a value: exit 2" 2 "$RC"
t_match "with a message" '--model needs a value' "$(cat "$ORGW_T/s.err")"
scorer --dry-run stray
t_eq "a stray argument: exit 2" 2 "$RC"
t_match "with a message" 'unknown argument: stray' "$(cat "$ORGW_T/s.err")"
scorer --model 'bad model'
t_eq "an invalid --model id: exit 2" 2 "$RC"
"$SCORER" --config "$ORGW_T/nonexistent.conf" >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
t_eq "a missing config file: exit 2" 2 "$?"
t_match "with a message" 'configuration: .*nonexistent.conf' "$(cat "$ORGW_T/s.err")"
printf 'HIT_RATE=7\n' >"$ORGW_T/bad.conf"
OPENROUTER_API_KEY=x "$SCORER" --config "$ORGW_T/bad.conf" >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
t_eq "an invalid setting (HIT_RATE=7): exit 2" 2 "$?"
t_match "naming it" 'HIT_RATE' "$(cat "$ORGW_T/s.err")"
printf 'UPSTREAM_URL=%s/api/v1\n' "$DOUBLE_URL" >"$ORGW_T/nokey.conf"
env -u OPENROUTER_API_KEY "$SCORER" --config "$ORGW_T/nokey.conf" >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
t_eq "no upstream key: exit 2" 2 "$?"
"$SCORER" --help >"$ORGW_T/s.out" 2>&1
t_eq "--help: exit 0" 0 "$?"
t_match "--help lists the options" '--model ID.*--dry-run.*--json.*--config FILE.*--parallel N.*--timeout-ms' \
	"$(tr '\n' ' ' <"$ORGW_T/s.out")"
ORGW_CONFIG=$ORGW_CONFIG_FILE "$SCORER" --dry-run --model seen/a >"$ORGW_T/s.out" 2>"$ORGW_T/s.err"
t_eq "ORGW_CONFIG is used when --config is not given" 0 "$?"

# --- POST /__cron --------------------------------------------------------------
double_ctl PUT endpoints/seen/b '{"status":503}' >/dev/null
orgw_http POST /__cron "{}"
t_eq "POST /__cron with the client key: 200" 200 "$HTTP_STATUS"
t_eq "it summarises every seen and target model" "3 1" \
	"$(json_get "$HTTP_BODY" 'j.models_total + " " + j.models_failed')"
t_eq "per model: winner, scored_at, candidates, excluded, fetch_ms" "alpha true 3 0 true" \
	"$(json_get "$HTTP_BODY" "[j.models['$T'].winner, j.models['$T'].scored_at > 0, j.models['$T'].candidates,
	   j.models['$T'].excluded, j.models['$T'].fetch_ms >= 0].join(' ')")"
t_eq "and the error of the failing one" "endpoints HTTP 503" \
	"$(json_get "$HTTP_BODY" "j.models['seen/b'].error")"
t_eq "POST /__cron wrote the candidates too (seen/a has alpha back)" alpha,beta,gamma "$(cands seen/a)"
HTTP_KEY= orgw_http POST /__cron "{}"
t_eq "POST /__cron without a key: 401" 401 "$HTTP_STATUS"
HTTP_KEY=wrong orgw_http POST /__cron "{}"
t_eq "POST /__cron with a wrong key: 401" 401 "$HTTP_STATUS"
t_eq "401 is OpenAI-shaped" invalid_api_key "$(json_get "$HTTP_BODY" 'j.error.code')"
orgw_http GET /__cron
t_eq "GET /__cron: 405" 405 "$HTTP_STATUS"
