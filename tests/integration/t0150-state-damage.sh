#!/bin/bash
# t0150-state-damage: the GDBM state file truncated, or overwritten with
# garbage, while the gateway runs: it is recovered or recreated, and
# requests keep succeeding (the state is soft).
. "$(dirname "$0")/../lib.sh"

orgw_start
M=deepseek/deepseek-v3.2
ask() {
	orgw_http POST /v1/chat/completions \
		"{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}
ask
t_eq "baseline request ok" 200 "$HTTP_STATUS"
t_check "state file exists" test -s "$ORGW_STATE"
t_eq "state file mode 0600" 600 "$(stat -c %a "$ORGW_STATE")"

# 1. Truncated to half its size.
size=$(stat -c %s "$ORGW_STATE")
truncate -s $((size / 2)) "$ORGW_STATE"
fails=0
for i in $(seq 10); do
	ask
	[ "$HTTP_STATUS" = 200 ] || fails=$((fails + 1))
done
t_eq "10 requests after truncation all succeed" 0 "$fails"
t_check "the state is usable again (gdbmtool reads it)" \
	sh -c "gdbmtool -r '$ORGW_STATE' count"
orgw_http GET /healthz
t_eq "healthz 200 after truncation" 200 "$HTTP_STATUS"

# 2. Overwritten with random bytes.
head -c 65536 /dev/urandom >"$ORGW_STATE"
fails=0
for i in $(seq 10); do
	ask
	[ "$HTTP_STATUS" = 200 ] || fails=$((fails + 1))
done
t_eq "10 requests after a garbage overwrite all succeed" 0 "$fails"
t_check "the damaged file was moved aside" test -e "$ORGW_STATE.corrupt"
t_check "a fresh state file serves again" sh -c "gdbmtool -r '$ORGW_STATE' count"
t_match "the recreation was logged" 'moved to .*corrupt|recovered' "$(cat "$ORGW_LOG")"
ask
t_eq "the model is locked again after recreation" "200 locked" \
	"$HTTP_STATUS $(http_header X-Orgw-Route)"

# 3. Zero-length file.
: >"$ORGW_STATE"
ask
t_eq "a zero-length state file is no problem" 200 "$HTTP_STATUS"
orgw_http GET /stats
t_eq "/stats answers after all that" 200 "$HTTP_STATUS"
t_check "the workers all survived (no crash in the log)" \
	sh -c "! grep -Ei 'segfault|sanitizer|abort' '$ORGW_LOG'"
