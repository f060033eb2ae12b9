#!/bin/bash
# t0520-caddy: the shipped deploy/Caddyfile (reverse_proxy with transport
# fastcgi to the spawn-fcgi socket, flush_interval -1) passes the deployment
# checks (tests/lib.sh deploy_checks) with the openai client; prints the
# spacing and the round-trip time.  The 45 s first token: t0560.
. "$(dirname "$0")/../lib.sh"

orgw_start
deploy_start caddy
t_check "caddy validate accepts the filled-in Caddyfile" \
	env HOME="$ORGW_T/caddy/home" XDG_DATA_HOME="$ORGW_T/caddy/data" \
	XDG_CONFIG_HOME="$ORGW_T/caddy/config" \
	caddy validate --adapter caddyfile --config "$ORGW_T/caddy/Caddyfile"
out=$(caddy fmt "$ORGW_ROOT/deploy/Caddyfile" 2>&1 | diff - "$ORGW_ROOT/deploy/Caddyfile" 2>&1)
t_eq "deploy/Caddyfile is formatted as caddy fmt wants it" "" "$out"
deploy_checks caddy
many_streams caddy "${DEPLOY_URL[caddy]}" 100
