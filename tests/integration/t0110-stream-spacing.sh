#!/bin/bash
# t0110-stream-spacing: streaming is not buffered anywhere on the way
# (lighttpd server.stream-response-body = 2, FCGX_FFlush per event): events
# the double sends 200 ms apart reach the openai client 200 ms apart.
. "$(dirname "$0")/../lib.sh"

orgw_start
double_ctl POST config '{"spacing_ms":200,"chunks":6}' >/dev/null

# Warm up: the first request scores the model inline.
orgw_chat --model deepseek/deepseek-v3.2 >/dev/null

out=$(orgw_chat --model deepseek/deepseek-v3.2 --stream)
t_eq "spaced stream succeeds" true "$(json_get "$out" 'j.ok')"
n=$(json_get "$out" 'j.event_times_ms.length')
t_check "client saw at least 8 chunks (got $n)" test "$n" -ge 8
# The role-only first chunk is held back with the keep-alives until the
# first content chunk (so a provider failing in between can still be
# replaced), so the first two chunks arrive together; every gap after that
# must be the double's 200 ms.
gaps=$(json_get "$out" \
	'j.event_times_ms.slice(1).map((t, i) => Math.round(t - j.event_times_ms[i])).join(" ")')
echo "# gaps between chunks at the client (ms): $gaps"
bad=$(json_get "$out" \
	'j.event_times_ms.slice(2).map((t, i) => t - j.event_times_ms[i + 1]).filter(g => g < 150 || g > 250).length')
t_eq "every gap is 200 ms +- 50 ms (not one burst)" 0 "$bad"
span=$(json_get "$out" \
	'Math.round(j.event_times_ms[j.event_times_ms.length - 1] - j.event_times_ms[1])')
t_check "events spread over >= $(( (n - 2) * 150 )) ms (got $span)" \
	test "$span" -ge $(( (n - 2) * 150 ))
