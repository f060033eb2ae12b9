#!/bin/bash
# t0930-redis-auth: a Redis with a password: REDIS_PASSWORD_FILE
# (first line of the file) authenticates, SELECT picks the database of
# REDIS_URL, a wrong password shows in /healthz (never the password) and
# requests still go through, unpinned; a password in the URL is refused.
. "$(dirname "$0")/../lib.sh"

export ORGW_STATE_BACKEND=redis
PW=s3cret-$RANDOM$RANDOM
ORGW_REDIS_ARGS="--requirepass $PW" orgw_start
printf '%s\n' "$PW" >"$ORGW_T/redis.pass"
chmod 600 "$ORGW_T/redis.pass"
orgw_restart_workers REDIS_URL="redis://127.0.0.1:$ORGW_REDIS_PORT/3" \
	REDIS_PASSWORD_FILE="$ORGW_T/redis.pass"
M=deepseek/deepseek-v3.2

orgw_http GET /healthz
t_eq "REDIS_PASSWORD_FILE: /healthz ok" "200 ok" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.status')"
orgw_chat --model $M >/dev/null
out=$(orgw_chat --model $M)
t_eq "requests are pinned" "true locked" "$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"]')"
t_eq "the state is in database 3, under orgw:" "1" \
	"$(redis-cli -p "$ORGW_REDIS_PORT" -a "$PW" --no-auth-warning -n 3 --raw EXISTS "orgw:BEST_PROVIDER:$M")"
t_eq "and not in database 0" "0" \
	"$(redis-cli -p "$ORGW_REDIS_PORT" -a "$PW" --no-auth-warning -n 0 --raw DBSIZE)"

printf 'wrong\n' >"$ORGW_T/redis.pass"
orgw_restart_workers
orgw_http GET /healthz
t_eq "a wrong password: /healthz 503" 503 "$HTTP_STATUS"
t_match "saying AUTH was refused" 'redis AUTH refused' "$(json_get "$HTTP_BODY" 'j.reason')"
t_check "never quoting a password" bash -c "! grep -q -e '$PW' -e wrong '$ORGW_LOG' '$HTTP_BODY_FILE'"
out=$(orgw_chat --model $M)
t_eq "requests still go through, unpinned" "true unpinned" "$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"]')"

orgw_restart_workers -REDIS_PASSWORD_FILE REDIS_URL="redis://:$PW@127.0.0.1:$ORGW_REDIS_PORT/0"
orgw_http GET /healthz
t_eq "a password in REDIS_URL is refused at start" 503 "$HTTP_STATUS"
t_match "the log says where it belongs" 'REDIS_URL: a password in the URL is refused; set REDIS_PASSWORD or REDIS_PASSWORD_FILE' "$(cat "$ORGW_LOG")"
t_check "and does not quote it" bash -c "! grep -q -e '$PW' '$ORGW_LOG'"

# A password with spaces inside, which requirepass allows: REDIS_PASSWORD
# takes it whole and AUTH sends it as one argument.
PW2="pass with $RANDOM spaces"
redis-cli -p "$ORGW_REDIS_PORT" -a "$PW" --no-auth-warning CONFIG SET requirepass "$PW2" >/dev/null
printf '%s\n' "$PW2" >"$ORGW_T/redis.pass"
orgw_restart_workers REDIS_URL="redis://127.0.0.1:$ORGW_REDIS_PORT/3" \
	REDIS_PASSWORD_FILE="$ORGW_T/redis.pass"
orgw_http GET /healthz
t_eq "a password with spaces: /healthz ok" "200 ok" "$HTTP_STATUS $(json_get "$HTTP_BODY" 'j.status')"
out=$(orgw_chat --model $M)
t_eq "a password with spaces: requests are pinned" "true locked" "$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"]')"
t_check "a password with spaces is never quoted" bash -c "! grep -q -e '$PW2' '$ORGW_LOG' '$HTTP_BODY_FILE'"

# A key of the wrong type under orgw's name (someone's HSET): read as
# absent and replaced by the next write, logged; the model stays pinned
# and counted.
rcli() { redis-cli -p "$ORGW_REDIS_PORT" -a "$PW2" --no-auth-warning -n 3 --raw "$@"; }
# The key the next requests write: today's ledger cell of the model, chat,
# its locked provider.
tag=$(json_get "$(orgw_curl /stats)" "j.models['$M'].lock.tag")
CELL="orgw:LEDGER:$M:$(date -u +%F):chat:$tag"
before=$(json_get "$(orgw_curl /stats)" "j.models['$M'].requests")
rcli DEL "$CELL" >/dev/null
rcli HSET "$CELL" a b >/dev/null
t_eq "a hash under $CELL" hash "$(rcli TYPE "$CELL")"
orgw_chat --model $M >/dev/null
out=$(orgw_chat --model $M)
t_eq "wrong type: requests still pinned" "true locked" "$(json_get "$out" 'j.ok + " " + j.headers["x-orgw-route"]')"
t_eq "wrong type: the key was replaced by a string" string "$(rcli TYPE "$CELL")"
t_eq "wrong type: the requests are counted again" 2 "$(json_get "$(orgw_curl /stats)" "j.models['$M'].requests")"
t_match "wrong type: logged" "$CELL is not a string \\(WRONGTYPE\\)" "$(cat "$ORGW_LOG")"
echo "# the cell before the hash: $before requests (its counts went with the hash)"
