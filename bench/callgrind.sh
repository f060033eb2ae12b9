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
#
#   CG_PATH=/v1/messages   the API path (default /v1/chat/completions)
#   CG_BODY_FILE=FILE      the request body (default: a short chat request
#                          for CG_MODEL)
#   CG_FUNCS="f g"         also print each function's inclusive
#                          instructions per request (callgrind_annotate),
#                          e.g. fp_compute for what fingerprinting costs
#   CG_TEAMKEY="ARGS"      send a team key's requests instead of the
#                          operator's: the key is made with `orgw-score key
#                          add bench ARGS` (e.g. "--budget-usd-day 100
#                          --rpm 100000"; "-" for none), with KEYS_SECRET
#                          set for the gateway
set -u
. "$(dirname "$0")/../tests/lib.sh"

WARM=${CG_WARM:-20}
N=${CG_N:-200}
M=${CG_MODEL:-deepseek/deepseek-v3.2}
API_PATH=${CG_PATH:-/v1/chat/completions}
FUNCS=${CG_FUNCS:-}
TEAMKEY=${CG_TEAMKEY:-}
OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/orgw-cg.XXXXXX")
BODY_FILE=${CG_BODY_FILE:-$OUTDIR/body.json}
[ -n "${CG_BODY_FILE:-}" ] ||
	printf '{"model":"%s","messages":[{"role":"user","content":"Say hello."}],"max_tokens":16}' \
		"$M" >"$BODY_FILE"

# measure LABEL PID URL KEY DIR: CG_WARM requests to URL (with KEY), the
# counters of the callgrind process PID zeroed, CG_N requests counted, the
# counts dumped into DIR/cg.*; prints the LABEL line, then one line per
# function of CG_FUNCS with its inclusive instructions per request.
measure() {
	local label=$1 pid=$2 url=$3 key=$4 dir=$5 i ir bad=0 code f fir
	for ((i = 0; i < WARM; i++)); do
		curl -sS -o /dev/null "$url" -H "Authorization: Bearer $key" \
			-H 'Content-Type: application/json' --data-binary "@$BODY_FILE"
	done
	callgrind_control -z "$pid" >/dev/null 2>&1
	for ((i = 0; i < N; i++)); do
		code=$(curl -sS -o /dev/null -w '%{http_code}' "$url" \
			-H "Authorization: Bearer $key" \
			-H 'Content-Type: application/json' --data-binary "@$BODY_FILE")
		[ "$code" = 200 ] || bad=$((bad + 1))
	done
	callgrind_control -d "$pid" >/dev/null 2>&1
	sleep 1
	ir=$(grep -h '^summary:' "$dir"/cg.*.* 2>/dev/null | tail -1 | awk '{print $2}')
	printf '%s %d instructions/request (%d of %d not 200)\n' "$label" \
		$((${ir:-0} / N)) "$bad" "$N"
	for f in $FUNCS; do
		# The dump that holds the counted requests is the last one.
		fir=$(callgrind_annotate --inclusive=yes --threshold=100 \
			"$(ls -t "$dir"/cg.*.* | head -1)" 2>/dev/null |
			awk -v f="$f" '$0 ~ (":" f " ") || $0 ~ (":" f "$") {
				gsub(",", "", $1); print $1; exit }')
		printf '%s   %s %d instructions/request (inclusive)\n' "$label" \
			"$f" $((${fir:-0} / N))
	done
}

# One orgw worker of BINARY under callgrind, behind lighttpd.
one() {
	local label=$1 bin=$2 state=$3 out pid key=$ORGW_KEY
	local -a secret=() args=()
	[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
	out=$OUTDIR/$label
	mkdir -p "$out"
	cat >"$out/wrap.sh" <<-EOF
	#!/bin/sh
	exec valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$out/cg.%p $bin
	EOF
	chmod +x "$out/wrap.sh"
	[ -n "$TEAMKEY" ] && secret=(KEYS_SECRET=callgrind-bench-secret-0123456789)
	ORGW_FCGI_BIN=$out/wrap.sh ORGW_WORKERS=1 orgw_start "${secret[@]}"
	if [ -n "$state" ]; then
		env -i PATH="$PATH" "$ORGW_ROOT/scheduler/orgw-score" \
			--config "$ORGW_CONFIG_FILE" --load <"$state" >/dev/null 2>&1
	fi
	if [ -n "$TEAMKEY" ]; then
		[ "$TEAMKEY" = - ] || read -r -a args <<<"$TEAMKEY"
		key=$(env -i PATH="$PATH" "$ORGW_ROOT/scheduler/orgw-score" \
			--config "$ORGW_CONFIG_FILE" key add bench "${args[@]}")
		[[ $key == orgw-* ]] || { echo "$label: key add failed" >&2; return 1; }
	fi
	pid=$(pgrep -f "callgrind-out-file=$out/cg" | head -1)
	measure "$label" "$pid" "$ORGW_URL$API_PATH" "$key" "$out"
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
	measure "$label" "$pid" "http://127.0.0.1:$port/api$API_PATH" \
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
