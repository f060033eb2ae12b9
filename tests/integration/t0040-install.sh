#!/bin/bash
# t0040-install: make install into a temporary DESTDIR puts the programs,
# the man pages, the examples (with this install's paths) and an example
# configuration where PREFIX, SYSCONFDIR and MANDIR say; it never
# overwrites a configuration that is there; make uninstall removes every
# file it put there, and leaves only a configuration the administrator
# changed.
. "$(dirname "$0")/../lib.sh"

d=$(mktemp -d "${TMPDIR:-/tmp}/orgw-t0040.XXXXXX")
trap 'rm -rf "$d"' EXIT
vars=(PREFIX=/opt/pfx SYSCONFDIR=/opt/etc MANDIR=/opt/man)
inst() { make -s -C "$ORGW_ROOT" "$@" "${vars[@]}" >"$d/log" 2>&1; }
want=$(cat "$ORGW_ROOT/VERSION")

t_check "make install DESTDIR=... PREFIX SYSCONFDIR MANDIR" inst install DESTDIR="$d/root"
r=$d/root
for f in opt/pfx/bin/orgw-score opt/pfx/lib/cgi-bin/orgw.fcgi; do
	t_check "$f is installed, executable" test -x "$r/$f"
done
t_eq "the installed orgw-score runs" "orgw-score $want" "$("$r/opt/pfx/bin/orgw-score" --version)"
for f in man5/orgw.conf.5 man7/orgw.7 man8/orgw-score.8 man8/orgw.fcgi.8; do
	t_check "opt/man/$f is installed with the version" \
		grep -qx "\.Os orgw $want" "$r/opt/man/$f"
done
t_check "man finds orgw-score(8) under MANDIR" \
	sh -c "MANPATH='$r/opt/man' man -w orgw-score | grep -q '$r/opt/man/man8/orgw-score.8'"
ex=$r/opt/pfx/share/doc/orgw/examples
for f in crontab orgw.service lighttpd.conf nginx.conf Caddyfile apache-fcgid.conf htaccess orgw.conf.example; do
	t_check "examples/$f is installed" test -f "$ex/$f"
done
t_check "the unit's example runs the installed orgw.fcgi" \
	grep -q ' /opt/pfx/lib/cgi-bin/orgw.fcgi$' "$ex/orgw.service"
t_check "the cron example runs the installed orgw-score with SYSCONFDIR's file" \
	grep -q '^0 .*ORGW_CONFIG=/opt/etc/orgw/orgw.conf .* /opt/pfx/bin/orgw-score ' "$ex/crontab"
conf=$r/opt/etc/orgw/orgw.conf
t_eq "SYSCONFDIR/orgw/orgw.conf is the example but for its keys" \
	"$(grep -vE '^(OPENROUTER_API_KEY|CUSTOM_ACCESS_KEY)=' "$ex/orgw.conf.example")" \
	"$(grep -vE '^#(OPENROUTER_API_KEY|CUSTOM_ACCESS_KEY)=' "$conf")"
t_eq "... whose placeholder keys are commented out (it fails closed)" \
	"#OPENROUTER_API_KEY=sk-or-v1-change-me #CUSTOM_ACCESS_KEY=change-me-too" \
	"$(grep -E '^#?(OPENROUTER_API_KEY|CUSTOM_ACCESS_KEY)=' "$conf" | tr '\n' ' ' | sed 's/ $//')"
t_check "... and orgw.fcgi --check-config takes it" \
	env ORGW_CONFIG="$conf" "$r/opt/pfx/lib/cgi-bin/orgw.fcgi" --check-config
t_eq "... mode 0600 (it will hold keys)" 600 "$(stat -c %a "$conf")"

# uninstall after install: nothing of orgw's is left, only the generic
# directories (bin, share/man/man8...) that may hold other programs' files.
t_check "make uninstall" inst uninstall DESTDIR="$d/root"
t_eq "no file is left" "" "$(find "$r" ! -type d)"
t_eq "no directory of orgw's own is left" "" "$(find "$r" -name '*orgw*')"

# A configuration that is there is neither overwritten nor removed.
mkdir -p "$r/opt/etc/orgw"
echo 'CUSTOM_ACCESS_KEY=mine-0123456789' >"$r/opt/etc/orgw/orgw.conf"
t_check "make install over an existing configuration" inst install DESTDIR="$d/root"
t_eq "the existing configuration is kept" 'CUSTOM_ACCESS_KEY=mine-0123456789' \
	"$(cat "$r/opt/etc/orgw/orgw.conf")"
t_check "make uninstall" inst uninstall DESTDIR="$d/root"
t_eq "only the administrator's configuration is left" "$r/opt/etc/orgw/orgw.conf" \
	"$(find "$r" ! -type d)"

# An installed example configuration edited afterwards stays too.
rm -rf "$r"
inst install DESTDIR="$d/root"
echo 'TARGET_MODEL=deepseek/deepseek-v3.2' >>"$conf"
t_check "make uninstall after an edit" inst uninstall DESTDIR="$d/root"
t_eq "the edited configuration is left, alone" "$conf" "$(find "$r" ! -type d)"
