#!/bin/bash
# t0045-deb: make deb builds orgw_VERSION_ARCH.deb that lintian passes;
# dpkg -i installs it on this machine (user orgw, /var/lib/orgw, the
# conffile 0640 root:orgw, cron, unit, man pages); the unit's command line,
# started by hand as the unit's user, serves /healthz and a chat request
# through lighttpd with the packaged conf-available snippet, against the
# OpenRouter double; the cron line scores as user orgw; dpkg --purge then
# leaves no file, directory, user or group behind.
#
# It installs into the real system: root only, it must run alone (tests/
# run.sh's serial list), and it refuses to start when an orgw package or
# user is already there.  Whatever happens, the exit trap stops what it
# started and purges the package.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ]; then
	t_skip "t0045: dpkg -i needs root"
	exit 0
fi
if dpkg -s orgw >/dev/null 2>&1 || getent passwd orgw >/dev/null ||
    getent group orgw >/dev/null || [ -e /etc/orgw ] || [ -e /var/lib/orgw ]; then
	t_fail "t0045: an orgw package, user, group or directory is already here; not touching it"
	exit 1
fi

installed=
fastcgi_was_on=
[ -e /etc/lighttpd/conf-enabled/10-fastcgi.conf ] && fastcgi_was_on=1
deb__lighty_restore() {
	rm -f /etc/lighttpd/conf-enabled/50-orgw.conf
	[ -n "$fastcgi_was_on" ] || rm -f /etc/lighttpd/conf-enabled/10-fastcgi.conf
}
deb__purge() {
	deb__lighty_restore
	[ -n "$installed" ] || return 0
	dpkg --purge orgw >/dev/null 2>&1
	# If the purge itself failed, what it should have removed.
	dpkg-statoverride --remove /etc/orgw/orgw.conf >/dev/null 2>&1
	getent passwd orgw >/dev/null && userdel orgw 2>/dev/null
	getent group orgw >/dev/null && groupdel orgw 2>/dev/null
	rm -rf /etc/orgw /var/lib/orgw /var/log/orgw /run/orgw
	installed=
}
deb__exit() {
	local rc=$?
	trap - EXIT
	[ "$T_FAILED" -gt 0 ] && orgw__dump_logs
	orgw_stop
	deb__purge
	[ $rc -eq 0 ] && [ "$T_FAILED" -gt 0 ] && rc=1
	exit $rc
}

double_start
trap deb__exit EXIT
want=$(cat "$ORGW_ROOT/VERSION")
arch=$(dpkg --print-architecture)
deb=$ORGW_ROOT/build/deb/orgw_${want}_$arch.deb

# The package and lintian's verdict (make deb already fails on an error).
if ! make -s -C "$ORGW_ROOT" deb >"$ORGW_T/deb.log" 2>&1; then
	t_fail "make deb" "$(tail -30 "$ORGW_T/deb.log")"
	exit 1
fi
t_check "make deb built build/deb/orgw_${want}_$arch.deb" test -f "$deb"
t_eq "lintian: no error and no warning left unexplained" "" \
	"$(lintian "$deb" 2>/dev/null | grep -E '^[EW]:')"
t_eq "the package's version is VERSION" "$want" "$(dpkg-deb -f "$deb" Version)"
t_match "Depends: shlibs and what the service needs" \
	'libcurl4.*|spawn-fcgi|multiwatch' "$(dpkg-deb -f "$deb" Depends)"

installed=1
if ! dpkg -i "$deb" >"$ORGW_T/dpkg.log" 2>&1; then
	t_fail "dpkg -i" "$(cat "$ORGW_T/dpkg.log")"
	exit 1
fi
t_ok "dpkg -i"
mapfile -t files < <(dpkg -L orgw)

t_check "system user orgw" sh -c 'getent passwd orgw | grep -q ":/var/lib/orgw:/usr/sbin/nologin$"'
t_eq "/var/lib/orgw belongs to orgw" "orgw:orgw" "$(stat -c %U:%G /var/lib/orgw)"
t_eq "/etc/orgw/orgw.conf is 0640 root:orgw" "640 root:orgw" \
	"$(stat -c '%a %U:%G' /etc/orgw/orgw.conf)"
t_check "/etc/orgw/orgw.conf is a conffile" \
	sh -c "dpkg-query -W -f='\${Conffiles}' orgw | grep -q '^ /etc/orgw/orgw.conf '"
t_check "its keys are not set: the gateway fails closed until they are" \
	sh -c '! grep -qE "^(OPENROUTER_API_KEY|CUSTOM_ACCESS_KEY)=" /etc/orgw/orgw.conf'
t_check "/etc/cron.d/orgw runs /usr/bin/orgw-score as orgw" \
	grep -qE '^0 \*/3 \* \* \* orgw .*/usr/bin/orgw-score ' /etc/cron.d/orgw
unit=/lib/systemd/system/orgw.service
t_check "the unit runs /usr/lib/cgi-bin/orgw.fcgi" \
	grep -q '^ExecStart=.* /usr/lib/cgi-bin/orgw.fcgi$' "$unit"
if command -v systemd-analyze >/dev/null; then
	t_check "systemd-analyze verify orgw.service" \
		sh -c "systemd-analyze verify '$unit' 2>&1 | grep -v -e 'Cannot add dependency' -e '^\$' | grep . && exit 1 || exit 0"
fi
t_check "lighttpd's conf-available/50-orgw.conf" test -f /etc/lighttpd/conf-available/50-orgw.conf
for ex in nginx.conf Caddyfile apache-fcgid.conf htaccess; do
	t_check "examples/$ex" test -f "/usr/share/doc/orgw/examples/$ex"
done
t_eq "man -w orgw-score" /usr/share/man/man8/orgw-score.8.gz "$(man -w orgw-score)"
t_eq "man -w orgw.conf" /usr/share/man/man5/orgw.conf.5.gz "$(man -w orgw.conf)"
t_check "man orgw.conf answers with the settings" \
	sh -c 'man -P cat orgw.conf 2>/dev/null | grep -q CUSTOM_ACCESS_KEY'
t_eq "orgw-score --version" "orgw-score $want" "$(/usr/bin/orgw-score --version)"

# The keys and the double, as an administrator would set them.
cat >>/etc/orgw/orgw.conf <<CONF
OPENROUTER_API_KEY=$UPSTREAM_KEY
CUSTOM_ACCESS_KEY=$ORGW_KEY
UPSTREAM_URL=$DOUBLE_URL/api/v1
CONF

# The unit's command line, as its user and groups, by hand (no systemd):
# RuntimeDirectory= made as the unit would.
cmd=$(sed -n 's/^ExecStart=//p' "$unit")
cmd=${cmd//\$\{ORGW_WORKERS\}/2}
install -d -o orgw -g www-data -m 0750 /run/orgw
export ORGW_LOG=$ORGW_T/orgw.log
# shellcheck disable=SC2086 # the unit's words
ORGW_CONFIG=/etc/orgw/orgw.conf setpriv --reuid=orgw --regid=www-data \
	--groups=orgw -- $cmd >"$ORGW_LOG" 2>&1 </dev/null &
ORGW_SUPERVISOR_PID=$!
for _ in $(seq 50); do [ -S /run/orgw/orgw.sock ] && break; sleep 0.1; done
t_check "the unit's command line made /run/orgw/orgw.sock" test -S /run/orgw/orgw.sock

# lighttpd with the packaged snippet, enabled as the README says (it
# enables Debian's fastcgi module file too, which the snippet depends on).
# Only the files are used here; the system's lighttpd is not reloaded.
t_check "lighty-enable-mod orgw" sh -c 'lighty-enable-mod orgw >/dev/null'
t_check "... enabled the snippet and the fastcgi module" \
	test -e /etc/lighttpd/conf-enabled/50-orgw.conf -a -e /etc/lighttpd/conf-enabled/10-fastcgi.conf
port=$(orgw__free_port)
mkdir -p "$ORGW_T/docroot"
export ORGW_LIGHTTPD_LOG=$ORGW_T/lighttpd.log
cat >"$ORGW_T/lighttpd.conf" <<CONF
server.bind          = "127.0.0.1"
server.port          = $port
server.document-root = "$ORGW_T/docroot"
server.errorlog      = "$ORGW_LIGHTTPD_LOG"
server.pid-file      = "$ORGW_T/lighttpd.pid"
include "/etc/lighttpd/conf-enabled/10-fastcgi.conf"
include "/etc/lighttpd/conf-enabled/50-orgw.conf"
CONF
t_check "lighttpd -tt takes the snippet" lighttpd -tt -f "$ORGW_T/lighttpd.conf"
lighttpd -D -f "$ORGW_T/lighttpd.conf" >>"$ORGW_LIGHTTPD_LOG" 2>&1 </dev/null &
ORGW_LIGHTTPD_PID=$!
export ORGW_URL=http://127.0.0.1:$port
orgw__wait_http "$ORGW_URL/healthz" 10

HTTP_KEY= orgw_http GET /healthz
t_eq "GET /healthz through the installed gateway is 200" 200 "$HTTP_STATUS"
t_eq "... and reports version $want" "$want" "$(json_get "$HTTP_BODY" 'j.version')"
orgw_http POST /v1/chat/completions \
	'{"model":"deepseek/deepseek-v3.2","messages":[{"role":"user","content":"Hello"}],"max_tokens":16}'
t_eq "a chat completion through it is 200" 200 "$HTTP_STATUS"
t_check "... with the double's answer" json_ok "$HTTP_BODY" 'j.choices[0].message.content'
t_check "the workers run as orgw" sh -c "ps -o user= -C orgw.fcgi | sort -u | grep -qx orgw"

# The cron entry's command, as its user.
line=$(grep -E '^[0-9]' /etc/cron.d/orgw)
user=$(awk '{ print $6 }' <<<"$line")
job=$(cut -d' ' -f7- <<<"$line")
t_eq "the cron entry's user" orgw "$user"
t_check "the cron entry's command scores, as orgw" runuser -u "$user" -- sh -c "$job"
t_check "... and appends its summary to /var/log/orgw/orgw-score.log" \
	grep -q '^orgw-score .*models' /var/log/orgw/orgw-score.log

orgw_stop
[ -n "$fastcgi_was_on" ] || rm -f /etc/lighttpd/conf-enabled/10-fastcgi.conf
# $installed stays set: whatever the purge leaves, the exit trap removes.
if ! dpkg --purge orgw >"$ORGW_T/purge.log" 2>&1; then
	t_fail "dpkg --purge orgw" "$(cat "$ORGW_T/purge.log")"
fi
left=
for f in "${files[@]}"; do
	[ -d "$f" ] && [ "$f" != "${f#*orgw}" ] && left="$left $f"
	[ -d "$f" ] || { [ -e "$f" ] && left="$left $f"; }
done
for f in /etc/orgw /var/lib/orgw /var/log/orgw /usr/share/doc/orgw; do
	[ -e "$f" ] && left="$left $f"
done
t_eq "dpkg --purge leaves no file or directory of orgw's" "" "$left"
t_check "... nor lighty-enable-mod's link to the snippet" \
	test ! -L /etc/lighttpd/conf-enabled/50-orgw.conf
t_eq "... no user or group orgw" "" "$(getent passwd orgw; getent group orgw)"
t_eq "... no stat override" "" "$(dpkg-statoverride --list | grep orgw)"
t_check "... and the package is gone" sh -c '! dpkg -s orgw >/dev/null 2>&1'
rm -rf /run/orgw
