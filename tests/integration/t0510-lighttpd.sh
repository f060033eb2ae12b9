#!/bin/bash
# t0510-lighttpd: the shipped deploy/lighttpd.conf (the one orgw_start runs)
# in front of spawn-fcgi + multiwatch workers passes the deployment checks
# (tests/lib.sh deploy_checks) with the openai client: the key passes, a
# 1 MiB body is accepted, events the double spaces 200 ms apart arrive
# 200 ms apart; prints the spacing and the round-trip time.  The 45 s first
# token of every server is t0560.
. "$(dirname "$0")/../lib.sh"

orgw_start
deploy_start lighttpd
deploy_checks lighttpd
