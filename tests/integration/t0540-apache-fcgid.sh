#!/bin/bash
# t0540-apache-fcgid: the shipped deploy/apache-fcgid.conf under Apache
# httpd with mod_fcgid (which starts the orgw.fcgi workers itself) passes
# the deployment checks (tests/lib.sh deploy_checks) with the openai
# client, although the harness compresses JSON and event streams the way
# some hosts do; prints the spacing and the round-trip time.  The 45 s
# first token: t0560.
. "$(dirname "$0")/../lib.sh"

orgw_start
deploy_start apache-fcgid
t_check "apache2 -t accepts the filled-in configuration" \
	env -i PATH="$PATH" /usr/sbin/apache2 -t -f "$ORGW_T/apache-fcgid/apache2.conf"
deploy_checks apache-fcgid
# The workers are Apache's, not spawn-fcgi's.
n=$(grep -c 'outcome=ok' "$ORGW_T/apache-fcgid/error.log")
t_check "the requests were served by mod_fcgid's workers ($n logged in Apache's error log)" \
	test "$n" -ge 20
