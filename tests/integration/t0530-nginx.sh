#!/bin/bash
# t0530-nginx: the shipped deploy/nginx.conf server block (fastcgi_pass to
# the spawn-fcgi socket, fastcgi_buffering off, long fastcgi_read_timeout,
# client_max_body_size) inside Debian's http {} defaults passes the
# deployment checks (tests/lib.sh deploy_checks) with the openai client;
# prints the spacing and the round-trip time.  The 45 s first token: t0560.
. "$(dirname "$0")/../lib.sh"

orgw_start
deploy_start nginx
t_check "nginx -t accepts the filled-in configuration" \
	nginx -t -q -p "$ORGW_T/nginx" -c "$ORGW_T/nginx/nginx.conf"
deploy_checks nginx
many_streams nginx "${DEPLOY_URL[nginx]}" 100
