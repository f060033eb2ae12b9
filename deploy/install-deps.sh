#!/bin/sh
# install-deps.sh - install what orgw needs to build, test and run, on Debian 12.
#
# Idempotent and quiet: only what is missing is installed, one line is printed
# per action, and nothing at all when everything is present (then it takes a
# few milliseconds: one dpkg-query call and a few file tests).  `make deps`,
# `make test`, `make check` and `make run` call it first.
#
#   ORGW_DEPS_TEST=1   also install the servers and tools only the tests use
#                      (make test, make check): redis-server, caddy,
#                      nginx-light, apache2 and mod_fcgid, systemd, chromium,
#                      prometheus (below), cppcheck (make lint, which
#                      make test runs), and the real coding agents in
#                      tests/agents (Claude Code, Codex CLI, opencode: npm
#                      ci, 479 MB to fetch, 1.2 GB unpacked, 11 s on 2 cores
#                      when npm's cache has them).  make run needs none of
#                      them.
#   ORGW_DEPS_DEB=1    also install what `make deb` needs: debhelper,
#                      dpkg-dev and fakeroot build the package, lintian
#                      checks it, mandoc lints the man pages (t0030), cron
#                      is the package's dependency that t0045 installs it
#                      beside; the
#                      tests (ORGW_DEPS_TEST=1) install them too.
#   ORGW_DEPS_EXTRA=1  also install the optional tools: clang and its runtime
#                      (make fuzz), valgrind (make valgrind), clang-format,
#                      clang-tidy (make format-check).
#   ORGW_DEPS_BENCH=1  also install what only the benchmarks need (make
#                      bench; bench/run.sh sets it): wrk (HTTP load with a
#                      Lua script for the POST body), gnuplot-nox (the
#                      chart) and valgrind (instructions per request,
#                      bench/callgrind.sh).  bench/run.sh installs the peer gateway it
#                      compares with (Portkey, npm) into bench/node_modules.
#   ORGW_DEPS_DIST=1   also install what `make dist` needs to build the static
#                      shared-hosting artifact (deploy/build-dist.sh):
#                      dpkg-dev (apt-get source unpacks with dpkg-source),
#                      patch, xz-utils, libssl-dev zlib1g-dev libc-ares-dev
#                      (the static libssl.a, libcrypto.a, libz.a, libcares.a
#                      that libcurl is built against), ca-certificates and
#                      openssl (the CA certificates shipped in the tarball,
#                      one file each, named by their hash).
#
# Packages, and why:
#   gcc make pkg-config libc6-dev         the build
#   libfcgi-dev libgdbm-dev libcjson-dev libcurl4-openssl-dev libssl-dev
#                                         libraries orgw links (libcrypto:
#                                         the /status login's HMAC)
#   libhiredis-dev                        STATE_BACKEND=redis (hiredis 0.14)
#   libfcgi-bin                           cgi-fcgi, to talk FastCGI by hand
#   redis-server                          the Redis back-end's tests (t09xx
#                                         start a private one on loopback;
#                                         never the packaged service)
#   gdbmtool                              inspect the state file
#   lighttpd spawn-fcgi multiwatch        the tested deployment: spawn-fcgi
#                                         owns the socket, multiwatch forks N
#                                         workers and restarts any that die
#   caddy nginx-light apache2 libapache2-mod-fcgid
#                                         the other tested deployments
#                                         (deploy/Caddyfile, nginx.conf,
#                                         apache-fcgid.conf, htaccess; tests
#                                         t0520-t0550 run them in the
#                                         foreground, never as services)
#   systemd                               systemd-analyze verify of
#                                         deploy/orgw.service (already there
#                                         on a Debian machine; not in a bare
#                                         container image)
#   curl ca-certificates jq               integration tests, make run
#   chromium                              t0630: the /status page in a real
#                                         headless browser (driven by
#                                         puppeteer-core in tests/js, which
#                                         uses this one and downloads none)
#   prometheus                            promtool check metrics and a real
#                                         scrape of GET /metrics (t0620;
#                                         run in the foreground on loopback,
#                                         never as the packaged service)
#   nodejs npm                            only when there is no `node` at all
#                                         (the upstream double and the OpenAI
#                                         SDK client in tests/js need it; an
#                                         existing Node.js is never replaced)
#
# Installing a package that ships a service (lighttpd, caddy, nginx, apache2,
# prometheus) must not start it: a temporary /usr/sbin/policy-rc.d answers
# "no" while apt runs, and is removed again afterwards (unless one was already
# there, which is then left alone).
set -eu

cd "$(dirname "$0")/.."

BASE="gcc make pkg-config libc6-dev libfcgi-dev libfcgi-bin libgdbm-dev
gdbmtool libcjson-dev libcurl4-openssl-dev libssl-dev libhiredis-dev
lighttpd spawn-fcgi multiwatch curl ca-certificates jq"
DEB="debhelper dpkg-dev fakeroot lintian mandoc cron"
TEST="redis-server caddy nginx-light apache2 libapache2-mod-fcgid systemd
chromium prometheus cppcheck $DEB"
EXTRA="clang libclang-rt-14-dev valgrind clang-format clang-tidy"
BENCH="wrk gnuplot-nox valgrind"
DIST="dpkg-dev patch xz-utils libssl-dev zlib1g-dev libc-ares-dev openssl"

want=$BASE
if [ "${ORGW_DEPS_TEST:-0}" = 1 ]; then
	want="$want $TEST"
fi
if ! command -v node >/dev/null 2>&1; then
	want="$want nodejs npm"
fi
if [ "${ORGW_DEPS_DEB:-0}" = 1 ]; then
	want="$want $DEB"
fi
if [ "${ORGW_DEPS_EXTRA:-0}" = 1 ]; then
	want="$want $EXTRA"
fi
if [ "${ORGW_DEPS_BENCH:-0}" = 1 ]; then
	want="$want $BENCH"
fi
if [ "${ORGW_DEPS_DIST:-0}" = 1 ]; then
	want="$want $DIST"
fi

# One dpkg-query for all of them; unknown packages print nothing on stdout.
# shellcheck disable=SC2086 # word splitting of the package list is intended
have=$(dpkg-query -W -f='${Package} ${Status}\n' $want 2>/dev/null |
	awk '$NF == "installed" && $(NF-1) == "ok" { print $1 }') || true
# shellcheck disable=SC2086,SC2116 # echo joins the lines
have=" $(echo $have) "
missing=
for p in $want; do
	case $have in
	*" $p "*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -n "$missing" ]; then
	echo "install-deps: installing:$missing"
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			SUDO=sudo
		else
			echo "install-deps: not root and no sudo; install these by hand:$missing" >&2
			exit 1
		fi
	else
		SUDO=
	fi
	log=$(mktemp "${TMPDIR:-/tmp}/orgw-deps.XXXXXX")
	made_policy=
	cleanup() {
		if [ -n "$made_policy" ]; then
			$SUDO rm -f /usr/sbin/policy-rc.d
		fi
		rm -f "$log"
	}
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# 101 = "action forbidden": invoke-rc.d and deb-systemd-invoke
		# then do not start the services of the packages we install.
		printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
		$SUDO chmod 0755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$log" 2>&1; then
		cat "$log" >&2
		echo "install-deps: apt-get update failed" >&2
		exit 1
	fi
	# shellcheck disable=SC2086
	if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    --no-install-recommends $missing >"$log" 2>&1; then
		cat "$log" >&2
		echo "install-deps: apt-get install failed" >&2
		exit 1
	fi
	echo "install-deps: installed:$missing"
fi

# The official OpenAI SDK for the client-side tests (tests/js), and
# puppeteer-core for t0630 (it drives the chromium above).  Reinstall
# when package-lock.json changed since the last install.
# Not for `make deb` alone (ORGW_DEPS_DEB without the tests): a package
# build needs no Node.js, and npm ci would empty a node_modules that a
# worktree links to from another checkout.
js=tests/js
if { [ "${ORGW_DEPS_DEB:-0}" != 1 ] || [ "${ORGW_DEPS_TEST:-0}" = 1 ]; } && {
    [ ! -f "$js/node_modules/openai/package.json" ] ||
    [ ! -f "$js/node_modules/puppeteer-core/package.json" ] ||
    [ ! -f "$js/node_modules/.package-lock.json" ] ||
    [ -n "$(find "$js/package-lock.json" -newer "$js/node_modules/.package-lock.json")" ]; }; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "install-deps: node is present but npm is not; install npm for $js" >&2
		exit 1
	fi
	echo "install-deps: npm ci in $js"
	if ! (cd "$js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
		echo "install-deps: npm ci failed, trying npm install"
		(cd "$js" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
	fi
fi

# The coding agents the client tests run (tests/agents/README.md): each npm
# package brings its native binary as a platform package among its
# optionalDependencies, and the postinstalls (allowed by name in its
# package.json) only copy that binary into place: nothing is fetched from
# outside the npm registry.  Only for the tests: they are large.
ag=tests/agents
if [ "${ORGW_DEPS_TEST:-0}" = 1 ] && {
    [ ! -f "$ag/node_modules/@anthropic-ai/claude-code/package.json" ] ||
    [ ! -f "$ag/node_modules/@openai/codex/package.json" ] ||
    [ ! -f "$ag/node_modules/opencode-ai/package.json" ] ||
    [ ! -f "$ag/node_modules/.package-lock.json" ] ||
    [ -n "$(find "$ag/package-lock.json" -newer "$ag/node_modules/.package-lock.json")" ]; }; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "install-deps: node is present but npm is not; install npm for $ag" >&2
		exit 1
	fi
	echo "install-deps: npm ci in $ag"
	if ! (cd "$ag" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
		echo "install-deps: npm ci failed, trying npm install"
		(cd "$ag" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
	fi
fi
