#!/bin/bash
# t0000-infra: the test stack itself comes up, answers and goes away cleanly:
# the OpenRouter double, spawn-fcgi + multiwatch workers, lighttpd with
# deploy/lighttpd.conf, and the helpers in tests/lib.sh.
. "$(dirname "$0")/../lib.sh"

orgw_start

t_check "the double answers /__double/health" double_ctl GET health

# tests/js/chat.mjs (the official OpenAI SDK) works, straight against the
# double, so a failure here is the helper's or the install's, not orgw's.
r=$(node "$ORGW_ROOT/tests/js/chat.mjs" --base "$DOUBLE_URL/api/v1" \
	--key "$UPSTREAM_KEY" --model deepseek/deepseek-v3.2 --max-tokens 16)
t_check "chat.mjs: a completion from the double" json_ok "$r" 'j.ok && j.status === 200 && j.content'
r=$(node "$ORGW_ROOT/tests/js/chat.mjs" --base "$DOUBLE_URL/api/v1" \
	--key "$UPSTREAM_KEY" --model deepseek/deepseek-v3.2 --stream)
t_check "chat.mjs: a streamed completion ends with [DONE]" json_ok "$r" \
	'j.ok && j.done && j.chunks > 0 && j.event_times_ms.length === j.chunks'
r=$(node "$ORGW_ROOT/tests/js/chat.mjs" --base "$DOUBLE_URL/api/v1" \
	--key wrong-key --model deepseek/deepseek-v3.2)
t_check "chat.mjs: an API error is reported, exit 0" json_ok "$r" \
	'!j.ok && j.status === 401 && j.error.status === 401'

orgw_http GET /healthz
t_eq "GET /healthz is 200" 200 "$HTTP_STATUS"
t_eq "GET /healthz says status ok" ok "$(json_get "$HTTP_BODY" 'j.status')"
t_match "GET /healthz is JSON" '^application/json' "$(http_header Content-Type)"

# The deployment runs ORGW_WORKERS (4) workers under one supervisor.
mapfile -t workers < <(orgw_worker_pids)
t_eq "multiwatch runs 4 workers" 4 "${#workers[@]}"

# A worker that dies is replaced (later tests SIGKILL workers on purpose).
kill -KILL "${workers[0]}"
replaced=
for _ in $(seq 50); do
	mapfile -t now < <(orgw_worker_pids)
	if [ "${#now[@]}" -eq 4 ] && [[ " ${now[*]} " != *" ${workers[0]} "* ]]; then
		replaced=1
		break
	fi
	sleep 0.1
done
t_eq "a killed worker is restarted" 1 "$replaced"
orgw_http GET /healthz
t_eq "GET /healthz still 200 after a worker died" 200 "$HTTP_STATUS"

# Restarting only the workers with a changed setting.
orgw_restart_workers LOCK_IDLE_SECONDS=7
t_check "orgw_restart_workers rewrote the config" grep -qx 'LOCK_IDLE_SECONDS=7' "$ORGW_CONFIG_FILE"
t_check "the config still has the client key once" \
	test "$(grep -c '^CUSTOM_ACCESS_KEY=' "$ORGW_CONFIG_FILE")" -eq 1
mapfile -t after < <(orgw_worker_pids)
t_eq "workers restarted: 4 running" 4 "${#after[@]}"
t_check "workers restarted: new PIDs" test "${after[*]}" != "${now[*]}"
orgw_http GET /healthz
t_eq "GET /healthz is 200 after the restart" 200 "$HTTP_STATUS"

# orgw_stop leaves nothing behind.
pids=("${after[@]}" "$ORGW_SUPERVISOR_PID" "$ORGW_LIGHTTPD_PID" "$ORGW_DOUBLE_PID")
dir=$ORGW_T
url=$ORGW_URL
orgw_stop
alive=
for p in "${pids[@]}"; do
	orgw__alive "$p" && alive="$alive $p"
done
t_eq "orgw_stop ended every process it started" "" "$alive"
if [ "${ORGW_KEEP:-0}" = 1 ]; then
	t_skip "orgw_stop removed the temp dir (ORGW_KEEP=1)"
else
	t_check "orgw_stop removed the temp dir" test ! -e "$dir"
fi
t_check "nothing listens on the old port any more" \
	test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/healthz")" = 000
