#!/bin/bash
# t0795-malloc-tune: glibc's per-thread cache of freed chunks is the
# service environment's to set, not the worker's.  Every shipped service
# definition gives the workers the same GLIBC_TUNABLES (64 chunks of each
# size up to 128 bytes; the README, "Deployment", says why), the tests and
# bench/ start the workers with it as the unit does, and the worker runs
# with exactly the environment it was given: it never runs itself again
# (its binary cannot even call exec), so an operator's GLIBC_TUNABLES is
# what it runs with, nothing added.  The instructions the cache saves are
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
	local p n=0 want
	want=$(grep -o 'glibc\.' <<<"$1" | wc -l)
	for p in $(orgw_worker_pids); do
		case $(environ_of "$p") in
		*":GLIBC_TUNABLES=$1:"* | "GLIBC_TUNABLES=$1:"*) ;;
		*) echo "# worker $p: $(environ_of "$p")"; return 1 ;;
		esac
		# No tunable beyond WANT's (the cut pieces follow it).
		[ "$(environ_of "$p" | grep -o 'glibc\.' | wc -l)" = "$want" ] || {
			echo "# worker $p: $(environ_of "$p")"
			return 1
		}
		n=$((n + 1))
	done
	[ "$n" -gt 0 ]
}

# The shipped definitions, all with the unit's value.
V=$(orgw_unit_tunables)
t_eq "deploy/orgw.service sets the tcache tunables" \
	glibc.malloc.tcache_count=64:glibc.malloc.tcache_max=128 "$V"
has() { grep -F -- "$2" "$ORGW_ROOT/deploy/$1" >/dev/null; }
t_check "lighttpd.conf: the spawn-fcgi line sets it" \
	has lighttpd.conf "#   GLIBC_TUNABLES=$V \\"
t_check "lighttpd.conf: bin-environment for workers lighttpd starts" \
	has lighttpd.conf "\"bin-environment\" => ( \"GLIBC_TUNABLES\" => \"$V\" )"
t_check "nginx.conf: the spawn-fcgi line sets it" has nginx.conf "#   GLIBC_TUNABLES=$V \\"
t_check "Caddyfile: the spawn-fcgi line sets it" has Caddyfile "#   GLIBC_TUNABLES=$V \\"
t_check "apache-fcgid.conf: FcgidInitialEnv sets it" \
	has apache-fcgid.conf "FcgidInitialEnv GLIBC_TUNABLES \"$V\""

bin=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}
[[ $bin == /* ]] || bin=$ORGW_ROOT/$bin
t_eq "the gateway imports no exec function (it never runs itself again)" "" \
	"$(nm -D "$bin" | grep -E ' U (execv|execve|execvp|execvpe|execl|execlp|execle|fexecve)@')"

ORGW_WORKERS=2 orgw_start
ask
t_eq "a request is served" 200 "$HTTP_STATUS"
t_check "each worker runs with the unit's tunables" all_workers "$V"
p=$(orgw_worker_pids | head -n 1)
t_eq "the worker is the binary itself, multiwatch's own child" \
	"$(readlink -f "$bin")" "$(readlink -f "/proc/$p/exe")"
orgw_stop

ORGW_WORKER_ENV="GLIBC_TUNABLES=glibc.malloc.arena_max=2" ORGW_WORKERS=2 orgw_start
ask
t_eq "with the operator's own tunables: served" 200 "$HTTP_STATUS"
t_check "the operator's tunables are what the worker runs with, nothing added" \
	all_workers glibc.malloc.arena_max=2
orgw_stop
