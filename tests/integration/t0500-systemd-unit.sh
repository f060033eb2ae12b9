#!/bin/bash
# t0500-systemd-unit: deploy/orgw.service.
#   - `systemd-analyze verify` accepts it without a single warning, and
#     `systemd-analyze security --offline` rates its sandbox "OK" or better.
#   - No systemd runs here (PID 1 is not systemd in a container or CI), so
#     the unit cannot be started for real.  Instead its ExecStart= line is
#     run exactly as written, with only the socket and gateway paths
#     substituted and ${ORGW_WORKERS} taken from its Environment= line: the
#     socket gets mode 0660, multiwatch runs ORGW_WORKERS workers that answer
#     on it, and SIGTERM to the main process only (KillMode=mixed) lets a
#     stream in flight finish with [DONE] before everything exits.
. "$(dirname "$0")/../lib.sh"

UNIT=$ORGW_ROOT/deploy/orgw.service

if ! command -v systemd-analyze >/dev/null; then
	t_fail "systemd-analyze is missing (make deps installs systemd)"
	exit 1
fi
out=$(cd / && systemd-analyze verify "$UNIT" 2>&1)
rc=$?
t_eq "systemd-analyze verify: no errors, no warnings" "0 " "$rc $out"
out=$(systemd-analyze security --offline=yes "$UNIT" 2>&1)
level=$(sed -n 's/.*Overall exposure level for orgw.service: \([0-9.]*\) \([A-Z]*\).*/\1 \2/p' <<<"$out")
printf '# systemd-analyze security: exposure %s (0 = fully sandboxed, 10 = not at all)\n' "$level"
t_match "the sandbox rates SAFE or OK" '^[0-9.]+ (SAFE|OK)$' "$level"

# The unit's own lines.
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
workers=$(sed -n 's/^Environment=ORGW_WORKERS=//p' "$UNIT")
config=$(sed -n 's/^Environment=ORGW_CONFIG=//p' "$UNIT")
t_eq "ExecStart runs spawn-fcgi in the foreground on /run/orgw/orgw.sock" \
	"/usr/bin/spawn-fcgi -n -s /run/orgw/orgw.sock" "$(cut -d' ' -f1-4 <<<"$exec_start")"
t_match "the unit names a worker count and the config file" '^[0-9]+ /etc/orgw/orgw\.conf$' \
	"$workers $config"

orgw_start
BIN=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $BIN == /* ]] || BIN=$ORGW_ROOT/$BIN
SOCK=$ORGW_T/unit/orgw.sock
mkdir -p "$ORGW_T/unit"
cmdline=${exec_start//\/run\/orgw\/orgw.sock/$SOCK}
cmdline=${cmdline//\/usr\/local\/lib\/cgi-bin\/orgw.fcgi/$BIN}
cmdline=${cmdline//\$\{ORGW_WORKERS\}/$workers}
read -r -a cmd <<<"$cmdline"
printf '# running: %s\n' "$cmdline"
env -i PATH="$PATH" LANG=C.UTF-8 ORGW_CONFIG="$ORGW_CONFIG_FILE" \
	"${cmd[@]}" >>"$ORGW_T/unit/workers.log" 2>&1 </dev/null &
MAIN=$!
for ((i = 0; i < 50; i++)); do
	[ -S "$SOCK" ] && [ "$(orgw__children "$MAIN" | wc -l)" -ge "$workers" ] && break
	sleep 0.1
done
t_eq "the socket has mode 0660" 660 "$(stat -c %a "$SOCK" 2>&1)"
t_eq "spawn-fcgi became multiwatch (the main process systemd watches)" \
	/usr/bin/multiwatch "$(readlink "/proc/$MAIN/exe")"
mapfile -t kids < <(orgw__children "$MAIN")
t_eq "multiwatch runs ORGW_WORKERS=$workers workers" "$workers" "${#kids[@]}"

fcgi() { # METHOD PATH [BODY]: one request straight to the socket
	local body=${3-}
	printf '%s' "$body" | env -i REQUEST_METHOD="$1" REQUEST_URI="$2" \
		SCRIPT_NAME="" SERVER_PROTOCOL=HTTP/1.1 GATEWAY_INTERFACE=CGI/1.1 \
		CONTENT_TYPE=application/json CONTENT_LENGTH="${#body}" \
		HTTP_AUTHORIZATION="Bearer $ORGW_KEY" \
		cgi-fcgi -bind -connect "$SOCK"
}
t_match "the workers answer on the socket" '^Status: 200' "$(fcgi GET /healthz | tr -d '\r')"

# The stop comes once the stream's request has reached the double, and
# half a second into its 2.4 s (not at a fixed time from the client's start).
double_ctl POST config '{"spacing_ms":400,"chunks":6}' >/dev/null
s0=$(double_seq)
fcgi POST /v1/chat/completions \
	"{\"model\":\"$DEPLOY_MODEL\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
	>"$ORGW_T/unit/stream.out" 2>&1 &
client=$!
double_wait_request "$s0" chat/completions
sleep 0.5
kill -TERM "$MAIN"
t0=$SECONDS
for ((i = 0; i < 150; i++)); do
	orgw__alive "$MAIN" || break
	sleep 0.1
done
t_check "SIGTERM to multiwatch alone stops the service (within 15 s; took $((SECONDS - t0)) s)" \
	bash -c "! kill -0 $MAIN 2>/dev/null"
wait "$client"
out=$(tr -d '\r' <"$ORGW_T/unit/stream.out")
t_match "the stream in flight finished first, whole" ' w6".*data: \[DONE\]' "${out//$'\n'/ }"
left=
for p in "${kids[@]}"; do
	orgw__alive "$p" && left="$left $p"
done
t_eq "no worker is left behind" "" "$left"
orgw__kill "$MAIN"
for p in $left; do kill -KILL "$p" 2>/dev/null; done
