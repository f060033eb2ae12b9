#!/bin/bash
# t0815-invented-ids: invented model ids do not grow the state, and the
# documents that walk the whole state do not hold its lock while they are
# built.
#   1. 3,000 invented ids in parallel: ids whose endpoints answer 404,
#      ids they answer 400, and ids sent with the client's own provider
#      object (never fetched).  Each is counted under (other), none leaves
#      a key of its own (orgw-score --dump), and /metrics stays small.
#   2. A scorer run drops the keys an invented id left before (an older
#      release's error record, a cell) and folds its counts into (other).
#   3. A large state of models OpenRouter knows (3,000, each with its
#      cells), six /metrics loops and two /stats loops beside 60 chat
#      requests: no writer waits for the lock long enough to give up
#      ("not had in 3000 ms"), and every request is counted.
. "$(dirname "$0")/../lib.sh"

ORGW_WORKERS=4 orgw_start MAX_MODELS=4000
SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
dump() { "$SCORER" --config "$ORGW_CONFIG_FILE" --dump 2>>"$ORGW_T/score.err"; }
R=test/real
out=$(orgw_chat --model $R)
t_eq "a real model is scored and locked" "200 scored" \
	"$(json_get "$out" 'j.status + " " + j.headers["x-orgw-route"]')"
keys0=$(dump | wc -l)

# 1. 3,000 invented ids.
one() { # N: one request on an invented id of kind N % 3; prints "N STATUS"
	local body
	case $(($1 % 3)) in
	0) body="{\"model\":\"missing/a$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" ;;
	1) body="{\"model\":\"invalid/b$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" ;;
	2) body="{\"model\":\"missing/c$1\",\"provider\":{\"order\":[\"alpha\"]},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" ;;
	esac
	curl -sS -o /dev/null -w "$1 %{http_code}\n" --max-time 60 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary "$body" "$ORGW_URL/v1/chat/completions"
}
export -f one
export ORGW_KEY ORGW_URL
start=$(date +%s)
seq 3000 | xargs -P 32 -I{} bash -c 'one {}' >"$ORGW_T/codes" 2>&1
echo "# 3000 invented ids in $(($(date +%s) - start)) s"
t_eq "3000 invented ids: OpenRouter's 400 relayed to each" 3000 "$(grep -c ' 400$' "$ORGW_T/codes")"
orgw_stats_settle "(other)" 3000 20
orgw_http GET /stats
t_eq "/stats: all 3000 counted under (other)" 3000 \
	"$(json_get "$HTTP_BODY" "j.models['(other)'].requests")"
dump >"$ORGW_T/dump1"
keys1=$(wc -l <"$ORGW_T/dump1")
echo "# state keys: $keys0 before, $keys1 after"
t_eq "no key names an invented id" 0 "$(grep -c 'missing/\|invalid/' "$ORGW_T/dump1")"
t_check "the state grew by a few keys at most ($keys0 -> $keys1)" test "$keys1" -le $((keys0 + 8))
orgw_http GET /metrics
echo "# /metrics: ${#HTTP_BODY} bytes"
t_eq "/metrics names no invented id" 0 "$(grep -c 'missing/\|invalid/' "$HTTP_BODY_FILE")"
t_check "/metrics stays small (${#HTTP_BODY} bytes)" test "${#HTTP_BODY}" -lt 65536

# 2. Keys an invented id left before (written here as an older release
# did): the scorer drops them and folds the count into (other).
cell=$(json_get "$(grep "\"LEDGER:$R:" "$ORGW_T/dump1" | grep -v ':-:' | head -1)" 'JSON.stringify(j.value)')
day=$(json_get "$(grep "\"LEDGER:$R:" "$ORGW_T/dump1" | head -1)" 'j.key.split(":")[2]')
orgw_http GET /stats
other0=$(json_get "$HTTP_BODY" "j.models['(other)'].requests")
printf '%s\n' \
	"{\"key\":\"PROVIDER_CANDIDATE:old/invented\",\"value\":\"{\\\"v\\\":1,\\\"candidates\\\":[],\\\"scored_at\\\":0,\\\"attempted_at\\\":1,\\\"error\\\":\\\"endpoints HTTP 400\\\"}\"}" \
	"{\"key\":\"LEDGER:old/invented:$day:chat:unknown\",\"value\":$cell}" |
	"$SCORER" --config "$ORGW_CONFIG_FILE" --load || t_fail "orgw-score --load"
"$SCORER" --config "$ORGW_CONFIG_FILE" >/dev/null 2>"$ORGW_T/s.err" || true
t_eq "a scorer run drops what an invented id left" 0 "$(dump | grep -c 'old/invented')"
orgw_http GET /stats
t_eq "  and its requests are now (other)'s" $((other0 + 1)) \
	"$(json_get "$HTTP_BODY" "j.models['(other)'].requests")"

# 3. A large state of real models, read by /metrics and /stats loops
# while chat requests write.
python3 - "$ORGW_T/dump1" "$R" >"$ORGW_T/big.jsonl" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
real = sys.argv[2]
mine = [l for l in lines if l["key"].split(":", 1)[1].startswith(real + ":")
        or l["key"].split(":", 1)[1] == real]
for i in range(3000):
    m = "big/m%d" % i
    for l in mine:
        k = l["key"].replace(real, m, 1)
        if k.startswith(("LEDGER:", "MODEL_SEEN:", "PROVIDER_CANDIDATE:",
                         "BEST_PROVIDER:", "LOCK_LOG:", "HIT:")):
            print(json.dumps({"key": k, "value": l["value"]}))
EOF
"$SCORER" --config "$ORGW_CONFIG_FILE" --load <"$ORGW_T/big.jsonl" || t_fail "orgw-score --load (big)"
echo "# state: $(dump | wc -l) keys, $(($(stat -c %s "$ORGW_STATE") / 1024)) KiB"
start=$(date +%s%N)
orgw_curl /metrics -o "$ORGW_T/m.txt"
echo "# one /metrics: $(($(date +%s%N) / 1000000 - start / 1000000)) ms, $(($(stat -c %s "$ORGW_T/m.txt") / 1024)) KiB"
# Read before the loops start: beside them, /stats may be refused
# (server_overloaded: they hold the threads other paths may take).  The
# document is megabytes now: json_get reads it from its file.
orgw_http GET /stats
before=$(json_get "$HTTP_BODY_FILE" "j.models['$R'].requests")
lost0=$(json_get "$HTTP_BODY_FILE" 'j.lost_updates')
reader() { # PATH SECONDS: GET PATH in a loop
	local until=$(($(date +%s) + $2))
	while [ "$(date +%s)" -lt "$until" ]; do
		curl -sS -o /dev/null --max-time 30 -H "Authorization: Bearer $ORGW_KEY" "$ORGW_URL$1"
	done
}
: >"$ORGW_T/readers"
for _ in 1 2 3 4 5 6; do reader /metrics 15 & echo $! >>"$ORGW_T/readers"; done
for _ in 1 2; do reader /stats 15 & echo $! >>"$ORGW_T/readers"; done
sleep 1
chat() { # N
	curl -sS -o /dev/null -w "$1 %{http_code} %{time_total}\n" --max-time 60 \
		-H "Authorization: Bearer $ORGW_KEY" -H 'Content-Type: application/json' \
		--data-binary "{\"model\":\"$R\",\"messages\":[{\"role\":\"user\",\"content\":\"$1\"}]}" \
		"$ORGW_URL/v1/chat/completions"
}
export -f chat
export R
seq 60 | xargs -P 4 -I{} bash -c 'chat {}' >"$ORGW_T/chat" 2>&1
while read -r pid; do wait "$pid"; done <"$ORGW_T/readers"
t_eq "60 chat requests beside the readers answered 200" 60 "$(grep -c ' 200 ' "$ORGW_T/chat")"
slow=$(awk '$3 > 2.5' "$ORGW_T/chat" | wc -l)
echo "# chat requests slower than 2.5 s: $slow; slowest $(sort -k3 -n "$ORGW_T/chat" | tail -1)"
t_eq "no writer gave up waiting for the lock" 0 "$(grep -c 'not had in' "$ORGW_LOG")"
orgw_stats_settle "$R" $((before + 60)) 20
orgw_http GET /stats
t_eq "every chat request counted" $((before + 60)) "$(json_get "$HTTP_BODY_FILE" "j.models['$R'].requests")"
t_eq "none lost" "$lost0" "$(json_get "$HTTP_BODY_FILE" 'j.lost_updates')"
