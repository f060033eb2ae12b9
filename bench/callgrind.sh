#!/bin/bash
# bench/callgrind.sh - user-space instructions per proxied request of one
# orgw worker, counted by valgrind's callgrind (the same figure on a busy
# machine as on an idle one, unlike wall time).
#
#   bash bench/callgrind.sh LABEL=BINARY[@STATE.jsonl] ... [proxy=lighttpd]
#
# For each: one worker (ORGW_WORKERS=1) of BINARY under callgrind behind
# lighttpd and the OpenRouter double, the state loaded from STATE (an
# orgw-score --dump; none: a fresh state), CG_WARM requests (default 20),
# the counters zeroed, CG_N sequential non-streamed chat completions
# (default 200) counted.  proxy=lighttpd counts the bare proxy instead:
# lighttpd itself under callgrind with bench/lighttpd-proxy.conf, straight
# to the double.  Prints "LABEL N instructions/request" lines.
# bench/agestate.mjs writes 30-day states of either layout.
set -u
. "$(dirname "$0")/../tests/lib.sh"

WARM=${CG_WARM:-20}
N=${CG_N:-200}
M=${CG_MODEL:-deepseek/deepseek-v3.2}
OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/orgw-cg.XXXXXX")
BODY="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}],\"max_tokens\":16}"

# measure LABEL PID URL KEY DIR: CG_WARM requests to URL (with KEY), the
# counters of the callgrind process PID zeroed, CG_N requests counted, the
# counts dumped into DIR/cg.*; prints the LABEL line.
measure() {
	local label=$1 pid=$2 url=$3 key=$4 dir=$5 i ir bad=0 code
	for ((i = 0; i < WARM; i++)); do
		curl -sS -o /dev/null "$url" -H "Authorization: Bearer $key" \
			-H 'Content-Type: application/json' -d "$BODY"
	done
	callgrind_control -z "$pid" >/dev/null 2>&1
	for ((i = 0; i < N; i++)); do
		code=$(curl -sS -o /dev/null -w '%{http_code}' "$url" \
			-H "Authorization: Bearer $key" \
			-H 'Content-Type: application/json' -d "$BODY")
		[ "$code" = 200 ] || bad=$((bad + 1))
	done
	callgrind_control -d "$pid" >/dev/null 2>&1
	sleep 1
	ir=$(grep -h '^summary:' "$dir"/cg.*.* 2>/dev/null | tail -1 | awk '{print $2}')
	printf '%s %d instructions/request (%d of %d not 200)\n' "$label" \
		$((${ir:-0} / N)) "$bad" "$N"
}

# One orgw worker of BINARY under callgrind, behind lighttpd.
one() {
	local label=$1 bin=$2 state=$3 out pid
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	out=$OUTDIR/$label
	mkdir -p "$out"
	cat >"$out/wrap.sh" <<-EOF
	#!/bin/sh
	exec valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$out/cg.%p $bin
	EOF
	chmod +x "$out/wrap.sh"
	ORGW_FCGI_BIN=$out/wrap.sh ORGW_WORKERS=1 orgw_start
	if [ -n "$state" ]; then
		env -i PATH="$PATH" "$ORGW_ROOT/scheduler/orgw-score" \
			--config "$ORGW_CONFIG_FILE" --load <"$state" >/dev/null 2>&1
	fi
	pid=$(pgrep -f "callgrind-out-file=$out/cg" | head -1)
	measure "$label" "$pid" "$ORGW_URL/v1/chat/completions" "$ORGW_KEY" "$out"
	orgw_stop >/dev/null 2>&1
}

# The bare proxy: lighttpd with mod_proxy to the double, under callgrind.
proxy() {
	local label=$1 out=$OUTDIR/$1 port pid
	mkdir -p "$out/www"
	orgw_start
	port=$(orgw__free_port)
	sed -e "s|@PORT@|$port|g" -e "s|@BACKEND_PORT@|$ORGW_DOUBLE_PORT|g" \
		-e "s|@DOCROOT@|$out/www|g" -e "s|@ERRORLOG@|$out/error.log|g" \
		-e "s|@PIDFILE@|$out/lighttpd.pid|g" \
		"$ORGW_ROOT/bench/lighttpd-proxy.conf" >"$out/lighttpd.conf"
	valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" \
		lighttpd -D -f "$out/lighttpd.conf" >"$out/out.log" 2>&1 </dev/null &
	pid=$!
	orgw__wait_http "http://127.0.0.1:$port/__double/health" 30
	measure "$label" "$pid" "http://127.0.0.1:$port/api/v1/chat/completions" \
		"$UPSTREAM_KEY" "$out"
	orgw__kill "$pid" >/dev/null 2>&1
	orgw_stop >/dev/null 2>&1
}

for arg in "$@"; do
	label=${arg%%=*}
	rest=${arg#*=}
	bin=${rest%%@*}
	state=
	[[ $rest == *@* ]] && state=${rest#*@}
	if [ "$bin" = lighttpd ]; then
		proxy "$label"
	else
		one "$label" "$bin" "$state"
	fi
done
[ -n "${CG_KEEP:-}" ] && echo "callgrind files kept in $OUTDIR" || rm -rf "$OUTDIR"
