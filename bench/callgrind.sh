#!/bin/bash
# bench/callgrind.sh - user-space instructions per proxied request of one
# orgw worker, counted by valgrind's callgrind (the same figure on a busy
# machine as on an idle one, unlike wall time).
#
#   bash bench/callgrind.sh LABEL=BINARY[@STATE.jsonl] ...
#
# For each: one worker (ORGW_WORKERS=1) of BINARY under callgrind behind
# lighttpd and the OpenRouter double, the state loaded from STATE (an
# orgw-score --dump; none: a fresh state), CG_WARM requests (default 20),
# the counters zeroed, CG_N sequential non-streamed chat completions
# (default 200) counted.  Prints "LABEL instructions/request" lines.
# bench/agestate.mjs writes 30-day states of either layout.
set -u
. "$(dirname "$0")/../tests/lib.sh"

WARM=${CG_WARM:-20}
N=${CG_N:-200}
M=${CG_MODEL:-deepseek/deepseek-v3.2}
OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/orgw-cg.XXXXXX")
BODY="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}],\"max_tokens\":16}"

one() {
	local label=$1 bin=$2 state=$3 out pid i ir bad code
	out=$OUTDIR/$label
	mkdir -p "$out"
	cat >"$out/wrap.sh" <<-EOF
	#!/bin/sh
	exec valgrind --tool=callgrind --callgrind-out-file=$out/cg.%p $bin
	EOF
	chmod +x "$out/wrap.sh"
	ORGW_FCGI_BIN=$out/wrap.sh ORGW_WORKERS=1 orgw_start
	if [ -n "$state" ]; then
		env -i PATH="$PATH" "$ORGW_ROOT/scheduler/orgw-score" \
			--config "$ORGW_CONFIG_FILE" --load <"$state" >/dev/null 2>&1
	fi
	for ((i = 0; i < WARM; i++)); do
		orgw_curl /v1/chat/completions -H 'Content-Type: application/json' \
			-d "$BODY" >/dev/null
	done
	pid=$(pgrep -f "callgrind-out-file=$out/cg" | head -1)
	callgrind_control -z "$pid" >/dev/null 2>&1
	bad=0
	for ((i = 0; i < N; i++)); do
		code=$(orgw_curl /v1/chat/completions -o /dev/null -w '%{http_code}' \
			-H 'Content-Type: application/json' -d "$BODY")
		[ "$code" = 200 ] || bad=$((bad + 1))
	done
	callgrind_control -d "$pid" >/dev/null 2>&1
	sleep 1
	ir=$(grep -h '^summary:' "$out"/cg.*.* 2>/dev/null | tail -1 | awk '{print $2}')
	printf '%s %d instructions/request (%d of %d not 200)\n' "$label" \
		$((ir / N)) "$bad" "$N"
	orgw_stop >/dev/null 2>&1
}

for arg in "$@"; do
	label=${arg%%=*}
	rest=${arg#*=}
	bin=${rest%%@*}
	state=
	[[ $rest == *@* ]] && state=${rest#*@}
	one "$label" "$bin" "$state"
done
[ -n "${CG_KEEP:-}" ] && echo "callgrind files kept in $OUTDIR" || rm -rf "$OUTDIR"
