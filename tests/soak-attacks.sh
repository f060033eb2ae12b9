#!/bin/bash
# tests/soak-attacks.sh - normal traffic beside three attacks at once
# (`SOAK_MODE=attacks make soak`, 10 minutes; tests/integration/t0700
# runs it for 20 s):
#   - clients that never read a large answer: sockets with a 4 KiB receive
#     buffer that send GET /metrics (several MB: 2,500 models in the
#     state) with METRICS_KEY, hold it SOAK_HOLD_S, and come back, from
#     127.0.0.4;
#   - invented model ids at full speed with the client key, from
#     127.0.0.3, each one new (ids OpenRouter answers 404 or 400 for,
#     some with the client's own provider object);
#   - wrong keys at full speed, from 127.0.0.2 (Bearer, x-api-key and the
#     /status login);
#   - a hostile client and upstream, from 127.0.0.5: a team key of soak/*
#     asking for openai/gpt-5 through "m\u006fdels" or a second "models"
#     member, and streams and answers in which the double reflects the
#     upstream key (\u-escaped, or cut across two deltas) or sends text
#     deltas after the stream's end;
# while tests/soak/driver.mjs runs SOAK_CLIENTS OpenAI-SDK clients
# (streamed and not, with the SDK's default two retries: a 503 with
# Retry-After is orgw's answer when every thread is busy, and the report
# says how many there were) from 127.0.0.1 and /healthz is asked every
# 0.5 s.
# Passes when every normal request is served (ok == sent: none failed,
# broken or hung), /healthz answered 200 every time, /stats counts each
# normal request once (or under LOST_UPDATES, when the state was too
# busy), the guessing address was refused (429) and never let in, the
# invented ids left at most a handful of keys in the state, no smuggled
# model was served or reached the double, and no answer showed the
# upstream key or a delta sent after the end.
# Loopback only; every process started here is stopped here by PID.
. "$(dirname "$0")/lib.sh"

SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_CLIENTS=${SOAK_CLIENTS:-8}
SOAK_HOLD_S=${SOAK_HOLD_S:-6}
SOAK_TIMEOUT_MS=${SOAK_TIMEOUT_MS:-30000}
for v in SOAK_SECONDS SOAK_CLIENTS SOAK_HOLD_S; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || { echo "soak: $v must be a positive integer" >&2; exit 2; }
done
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER

MKEY=metrics-soak-key
ORGW_WORKERS=${SOAK_WORKERS:-2} orgw_start WORKER_THREADS=16 METRICS_KEY=$MKEY MAX_MODELS=3000 \
	KEYS_SECRET=soak-attacks-secret-0123456789
M=soak/model-a
chat='{"model":"'$M'","messages":[{"role":"user","content":"hi"}]}'
orgw_http POST /v1/chat/completions "$chat"
t_eq "a first request scores and locks $M" 200 "$HTTP_STATUS"

# A large /metrics: 2,500 copies of the model's keys.
orgw_state_copies "$M" 2500 soak/copy
# The state's keys but the conversations' records: the normal traffic
# starts a conversation with nearly every request (the scorer's sweep
# bounds those, MAX_CONVERSATIONS), and invented ids keep none.
state_keys() {
	ORGW_CONFIG="$ORGW_CONFIG_FILE" "$SCORER" --dump 2>/dev/null | grep -vc '"key":"CONV:'
}
keys0=$(state_keys)
size=$(curl -sS -H "Authorization: Bearer $MKEY" "$ORGW_URL/metrics" | wc -c)
echo "# soak (attacks): ${SOAK_SECONDS}s, $SOAK_CLIENTS clients, /metrics $size bytes, $keys0 keys"
orgw_curl /stats -o "$ORGW_T/stats0.json"
before=$(json_get "$ORGW_T/stats0.json" "j.models['$M'].requests")
lost0=$(json_get "$ORGW_T/stats0.json" 'j.lost_updates || 0')
port=${ORGW_URL##*:}
END=$(($(date +%s) + SOAK_SECONDS))

cat >"$ORGW_T/nonreader.py" <<'PY'
import socket, sys, time
port, key, hold, end = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
while time.time() < end:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind(("127.0.0.4", 0))
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % key).encode())
        time.sleep(min(hold, max(0, end - time.time())))
    except OSError:
        time.sleep(0.2)
    s.close()
PY
ATTACKS=${SOAK_ATTACKS:-"nonreaders invented guess hostile"}
on() { [[ " $ATTACKS " == *" $1 "* ]]; }
apids=()
on nonreaders && for i in $(seq 12); do
	python3 "$ORGW_T/nonreader.py" "$port" "$MKEY" "$SOAK_HOLD_S" "$END" &
	apids+=($!)
done
# Invented ids, each one new: ids OpenRouter does not know (the double
# answers their endpoints 404 for missing/..., 400 for invalid/...), every
# third with the client's own provider object.
on invented && for pre in missing invalid; do
	(n=0; while [ "$(date +%s)" -lt "$END" ]; do
		n=$((n + 1))
		prov=
		[ $((n % 3)) = 0 ] && prov=',"provider":{"order":["alpha"]}'
		curl -sS -o /dev/null --max-time 5 --interface 127.0.0.3 \
			-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
			--data-binary '{"model":"'$pre/$n-$RANDOM'","messages":[{"role":"user","content":"x"}]'"$prov"'}' \
			"$ORGW_URL/v1/chat/completions"
	done) &
	apids+=($!)
done
# Wrong keys; each status on its own line.
on guess && for how in bearer x-api-key login; do
	(while [ "$(date +%s)" -lt "$END" ]; do
		case $how in
		bearer) curl -sS -o /dev/null -w '%{http_code}\n' --max-time 5 --interface 127.0.0.2 \
			-H "Authorization: Bearer guess-$RANDOM" "$ORGW_URL/v1/models" ;;
		x-api-key) curl -sS -o /dev/null -w '%{http_code}\n' --max-time 5 --interface 127.0.0.2 \
			-H "x-api-key: guess-$RANDOM" -H 'Content-Type: application/json' \
			--data-binary '{"model":"'$M'","max_tokens":8,"messages":[{"role":"user","content":"x"}]}' \
			"$ORGW_URL/v1/messages" ;;
		login) curl -sS -o /dev/null -w '%{http_code}\n' --max-time 5 --interface 127.0.0.2 \
			--data-urlencode "key=guess-$RANDOM" "$ORGW_URL/status" ;;
		esac
	done) >>"$ORGW_T/guess.codes" &
	apids+=($!)
done
# A hostile client (a team key smuggling a model) and upstream (the key
# reflected, deltas after the end), in turn; each answer in its own file.
mkdir -p "$ORGW_T/hostile"
on hostile && {
	# Its own model, so the normal traffic's count of $M stays exact.
	HM=soak/model-h
	TK=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add soakteam --models 'soak/*' 2>/dev/null)
	t_match "a team key for the hostile client" '^orgw-' "$TK"
	(n=0; while [ "$(date +%s)" -lt "$END" ]; do
		n=$((n + 1))
		k=$ORGW_KEY say=hi code=
		case $((n % 5)) in
		0) k=$TK x=',"m\u006fdels":["openai/gpt-5"]' code=y ;;
		1) k=$TK x=',"models":["'$HM'"],"models":["openai/gpt-5"]' code=y ;;
		2) x=',"stream":true' say='[double] {\"mark\":\"'$UPSTREAM_KEY'\",\"mark_form\":\"split\",\"chunks\":7}' ;;
		3) x= say='[double] {\"mark\":\"'$UPSTREAM_KEY'\",\"mark_form\":\"u_all\",\"chunks\":5}' ;;
		4) x=',"stream":true' say='[double] {\"after_end\":3}' ;;
		esac
		curl -sS -D - -o - --max-time 10 --interface 127.0.0.5 \
			-H "Authorization: Bearer $k" -H 'Content-Type: application/json' \
			--data-binary '{"model":"'$HM'","messages":[{"role":"user","content":"'"$say"'"}]'"$x"'}' \
			"$ORGW_URL/v1/chat/completions" >"$ORGW_T/hostile/$n" 2>/dev/null
		# Its status, or "none" when curl had no answer in 10 s.
		[ -n "$code" ] && { head -n 1 "$ORGW_T/hostile/$n" | cut -d' ' -f2 | grep . ||
			echo none; } >>"$ORGW_T/smuggle.codes"
	done) &
	apids+=($!)
}
# /healthz every 0.5 s.
(while [ "$(date +%s)" -lt "$END" ]; do
	curl -sS -o /dev/null -w '%{http_code}\n' --max-time 5 "$ORGW_URL/healthz"
	sleep 0.5
done) >"$ORGW_T/healthz.codes" &
apids+=($!)

REPORT=$ORGW_T/attack-soak.json
node "$ORGW_ROOT/tests/soak/driver.mjs" --base "$ORGW_URL/v1" --key "$ORGW_KEY" \
	--out "$REPORT" --seconds "$SOAK_SECONDS" --clients "$SOAK_CLIENTS" \
	--stream-ratio 0.5 --timeout-ms "$SOAK_TIMEOUT_MS" --models "$M" \
	--seed "${SOAK_SEED:-0}" --max-retries 2
rc=$?
orgw__kill "${apids[@]}" >/dev/null 2>&1
# Each worker keeps its own wrong-key guard (src/guard.h: an address's
# 11th different wrong key within a minute is refused), and a busy
# machine's short run may have sent too few guesses to trip any: a burst
# of 10 per worker and one more from the same address, within seconds,
# must give some worker its 11th.
on guess && for ((i = 0; i <= 10 * ${SOAK_WORKERS:-2}; i++)); do
	curl -sS -o /dev/null -w '%{http_code}\n' --max-time 5 --interface 127.0.0.2 \
		-H "Authorization: Bearer guess-burst-$i-$RANDOM" "$ORGW_URL/v1/models"
done >>"$ORGW_T/guess.codes"
t_eq "the load driver ran" 0 "$rc"
r() { json_get "$REPORT" "$1"; }
sent=$(r j.sent)
ok_n=$(r j.ok)
hz_total=$(grep -c . "$ORGW_T/healthz.codes")
hz_bad=$(grep -vc '^200$' "$ORGW_T/healthz.codes")
g_total=$(grep -c . "$ORGW_T/guess.codes")
g_429=$(grep -c '^429$' "$ORGW_T/guess.codes")
g_in=$(grep -cE '^(200|303)$' "$ORGW_T/guess.codes")
orgw_stats_settle "$M" $((before + ok_n))
orgw_curl /stats -o "$ORGW_T/stats1.json"
st=$(json_get "$ORGW_T/stats1.json" "j.models['$M'].requests")
# A count the state could not take within STORE_LOCK_TIMEOUT_MS (a
# saturated host, writers behind /metrics scans of 15,000 keys) is added
# to LOST_UPDATES instead, which counts every request's, not only these.
lost=$(($(json_get "$ORGW_T/stats1.json" 'j.lost_updates || 0') - lost0))
keys1=$(state_keys)
invented=$(grep -cE 'model=(missing|invalid)/' "$ORGW_LOG")
hfiles=("$ORGW_T"/hostile/*)
[ -e "${hfiles[0]}" ] || hfiles=()
h_total=${#hfiles[@]}
h_leaks=0
[ "$h_total" -gt 0 ] && h_leaks=$(key_leaks "$UPSTREAM_KEY" "${hfiles[@]}")
h_after=$(cat "$ORGW_T"/hostile/* 2>/dev/null | grep -c 'AFTER-END')
s_total=$(grep -c . "$ORGW_T/smuggle.codes" 2>/dev/null)
s_in=$(grep -cE '^2' "$ORGW_T/smuggle.codes" 2>/dev/null)
s_codes=$(sort "$ORGW_T/smuggle.codes" 2>/dev/null | uniq -c |
	awk '{ printf "%s%s: %s", s, $2, $1; s = ", " }')
s_up=$(json_get "$(double_ctl GET stats)" "j.models['openai/gpt-5'] ?? 0")
retried=$(grep -c 'path=/chat/completions status=503' "$ORGW_LOG")
sidecap=$(grep -c 'server_overloaded\|side requests' "$ORGW_LOG")
cat <<EOF
# ---- attack soak report ----
# normal requests sent:     $sent (503 answered and retried by the SDK: $retried), served $ok_n, failed $(r j.error) $(r 'JSON.stringify(j.errors_by_status)'), broken $(r j.broken), hung $(r j.hung)
# latency ms:               $(r 'JSON.stringify(j.latency_ms)')
# /healthz:                 $hz_total asked, $hz_bad not 200 ($(grep -v '^200$' "$ORGW_T/healthz.codes" | sort | uniq -c | tr '\n' ' '))
# wrong keys from 127.0.0.2: $g_total tried, $g_429 answered 429, $g_in let in
# invented ids:             $invented requests logged; state keys $keys0 before, $keys1 after
# hostile (127.0.0.5):      $h_total answers, $h_leaks showing the upstream key, $h_after AFTER-END deltas; smuggled models: $s_total tried (${s_codes:-none}), ${s_in:-0} served, $s_up upstream
# /stats $M:      $st (before the soak $before); counts lost to a busy state: $lost (LOST_UPDATES, all requests)
EOF
t_check "normal requests were sent ($sent)" test "${sent:-0}" -gt 0
t_eq "every normal request was served" "$sent" "$ok_n"
t_eq "/healthz answered 200 every time ($hz_total)" 0 "$hz_bad"
t_check "/stats counts each normal request once, or as lost ($((before + ok_n - st)) missing, $lost lost)" \
	test "$st" -le $((before + ok_n)) -a $((before + ok_n - st)) -le "$lost"
t_check "the guessing address was answered 429 ($g_429 of $g_total)" test "$g_429" -gt 0
t_eq "no guess was let in" 0 "$g_in"
t_check "invented ids were sent ($invented)" test "$invented" -gt 0
t_check "they left at most 20 keys in the state ($keys0 -> $keys1)" test $((keys1 - keys0)) -le 20
if on hostile; then
	t_check "hostile requests were sent ($h_total, $s_total smuggling)" test "$h_total" -gt 0 -a "${s_total:-0}" -gt 0
	t_eq "no smuggled model was served" 0 "${s_in:-0}"
	t_eq "... nor reached the double" 0 "$s_up"
	t_eq "no answer showed the upstream key (escaped or split)" 0 "$h_leaks"
	t_eq "no delta sent after a stream's end reached a client" 0 "$h_after"
fi
