# shellcheck shell=bash
# tests/soak/statelib.sh - helpers for the crash-safety tests t07NN
# (sourced after tests/lib.sh).
#
#   kw_build              compile tests/soak/killwriter.c against the
#                         release liborgw.a into $ORGW_T/killwriter; sets KW.
#                         Status 1 (and a skip line) when the library is
#                         missing.
#   ask [MODEL]           one non-streamed chat request (orgw_http); sets
#                         ASK (status and X-Orgw-Route, e.g. "200 locked")
#   worker_set            the sorted worker PIDs on one line
#   crash_lines           how many sanitizer/segfault/abort lines the worker
#                         log holds
#   assert_no_crash DESC PIDS
#                         the workers are still PIDS (none died and was
#                         restarted by multiwatch) and the log has no crash
#   ms_since NS           milliseconds since date +%s%N value NS
#   state_keys FILE       the keys of the GDBM file FILE, sorted, one a line
#   state_not_json        how many values of the GDBM state ($ORGW_STATE)
#                         are not JSON objects (LOST_UPDATES: a decimal
#                         count), each printed to stderr as "# not JSON:";
#                         -1 for an empty or unreadable state
#   hostile_start         starts tests/soak/hostile-upstream.js (its pid in
#                         HPID, stopped by the EXIT trap it installs with
#                         orgw's) and points the workers at it; sets HURL

kw_build() {
	local lib=$ORGW_ROOT/build/release/liborgw.a
	KW=$ORGW_T/killwriter
	if [ ! -f "$lib" ]; then
		t_skip "killwriter: no $lib (make all)"
		return 1
	fi
	# shellcheck disable=SC2046 # pkg-config output is a word list
	cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
		-I"$ORGW_ROOT/src" -o "$KW" "$ORGW_ROOT/tests/soak/killwriter.c" \
		"$lib" $(pkg-config --libs fcgi libcurl libcjson hiredis) -lgdbm -lm ||
		{ t_fail "killwriter builds"; return 1; }
}

ask() {
	local m=${1:-deepseek/deepseek-v3.2}
	orgw_http POST /v1/chat/completions \
		"{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
	ASK="$HTTP_STATUS $(http_header X-Orgw-Route)"
}

worker_set() {
	orgw_worker_pids | sort -n | tr '\n' ' '
}

crash_lines() {
	grep -cE 'runtime error|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|SEGV|Segmentation|core dumped|stack-overflow|Aborted|died to often' \
		"$ORGW_LOG"
}

assert_no_crash() {
	t_eq "$1: no worker crashed (same PIDs)" "$2" "$(worker_set)"
	t_eq "$1: no sanitizer/segfault line in the worker log" 0 "$(crash_lines)"
}

state_not_json() {
	gdbmtool -r "$ORGW_STATE" list 2>/dev/null | node -e '
// "KEY VALUE" lines (keys hold no blanks: model ids are checked).
const t = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean);
let bad = 0;
for (const l of t) {
  const v = l.slice(l.indexOf(" ") + 1);
  const no = () => { bad++; process.stderr.write("# not JSON: " + l.slice(0, 300) + "\n"); };
  // LOST_UPDATES is a plain count (requests a busy state could not record).
  if (l.startsWith("LOST_UPDATES ")) { if (!/^[0-9]+$/.test(v)) no(); continue; }
  try { const o = JSON.parse(v); if (!o || typeof o !== "object") no(); } catch (e) { no(); }
}
process.stdout.write(String(t.length ? bad : -1));
'
}

state_keys() {
	gdbmtool -r "$1" list 2>/dev/null | cut -d' ' -f1 | sort
}

ms_since() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

hostile_stop() {
	local rc=$?
	[ -n "${HPID:-}" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
	HPID=
	return $rc
}

hostile_start() {
	trap 'hostile_stop; orgw__on_exit' EXIT
	node "$ORGW_ROOT/tests/soak/hostile-upstream.js" --port-file "$ORGW_T/hostile.port" \
		--key "$UPSTREAM_KEY" >"$ORGW_T/hostile.log" 2>&1 &
	HPID=$!
	for _ in $(seq 50); do
		[ -s "$ORGW_T/hostile.port" ] && break
		sleep 0.1
	done
	HURL=http://127.0.0.1:$(tr -dc 0-9 <"$ORGW_T/hostile.port")
	orgw_restart_workers UPSTREAM_URL="$HURL/api/v1"
}
