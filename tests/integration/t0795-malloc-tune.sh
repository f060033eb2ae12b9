#!/bin/bash
# t0795-malloc-tune: a FastCGI worker runs itself again with glibc's
# per-thread cache of freed chunks raised to 64 of each size up to 128
# bytes (src/mtune.h), keeps its PID, FastCGI socket and the operator's
# other tunables, and leaves an operator's own count alone.  The instructions it saves are
# measured by bench/callgrind.sh, not here.
. "$(dirname "$0")/../lib.sh"

M=deepseek/deepseek-v3.2
ask() { # a chat request to the workers just started
	printf '{"model":"%s","messages":[{"role":"user","content":"hi"}]}' "$M" >"$ORGW_T/b.json"
	orgw_http POST /v1/chat/completions @"$ORGW_T/b.json"
}

# A worker's environment as one line, each variable followed by ':'.
# (glibc 2.36 cuts GLIBC_TUNABLES at its ':' in place as it reads it, so
# the pieces show in /proc/PID/environ as variables of their own; joined
# again with ':' they read as what the worker was started with.)
environ_of() { tr '\0' ':' <"/proc/$1/environ"; }
all_workers() { # WANT: every worker has GLIBC_TUNABLES=WANT, nothing more
	local p n=0
	for p in $(orgw_worker_pids); do
		case $(environ_of "$p") in
		*":GLIBC_TUNABLES=$1:"* | "GLIBC_TUNABLES=$1:"*) ;;
		*) echo "# worker $p: $(environ_of "$p")"; return 1 ;;
		esac
		[ "$(environ_of "$p" | grep -o tcache_count | wc -l)" = 1 ] || return 1
		n=$((n + 1))
	done
	[ "$n" -gt 0 ]
}

ORGW_WORKERS=2 orgw_start
ask
t_eq "a request is served" 200 "$HTTP_STATUS"
t_check "each worker runs with the tcache count" all_workers glibc.malloc.tcache_count=64:glibc.malloc.tcache_max=128
bin=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
p=$(orgw_worker_pids | head -n 1)
t_eq "the worker is the binary itself, multiwatch's own child" \
	"$(readlink -f "$bin")" "$(readlink -f "/proc/$p/exe")"
t_eq "and no log line says it ran with the defaults" 0 \
	"$(grep -c "malloc defaults" "$ORGW_LOG")"
orgw_stop

ORGW_WORKER_ENV="GLIBC_TUNABLES=glibc.malloc.arena_max=2" ORGW_WORKERS=2 orgw_start
ask
t_eq "with other tunables: served" 200 "$HTTP_STATUS"
t_check "the operator's tunables are kept, the count added" \
	all_workers glibc.malloc.arena_max=2:glibc.malloc.tcache_count=64:glibc.malloc.tcache_max=128
orgw_stop

ORGW_WORKER_ENV="GLIBC_TUNABLES=glibc.malloc.tcache_count=7" ORGW_WORKERS=2 orgw_start
ask
t_eq "with the operator's own count: served" 200 "$HTTP_STATUS"
t_check "the operator's count is left alone" all_workers glibc.malloc.tcache_count=7
orgw_stop

