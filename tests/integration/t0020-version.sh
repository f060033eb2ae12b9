#!/bin/bash
# t0020-version: one release string, the top-level VERSION file, is what
# both programs' --version print and what GET /healthz reports (with or
# without a key: it says which build answers, nothing about the host).
. "$(dirname "$0")/../lib.sh"

want=$(cat "$ORGW_ROOT/VERSION")
t_match "VERSION is MAJOR.MINOR.PATCH" '^[0-9]+\.[0-9]+\.[0-9]+$' "$want"
t_eq "orgw.fcgi --version" "orgw.fcgi $want" \
	"$("${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}" --version)"
t_eq "orgw-score --version" "orgw-score $want" \
	"$("$ORGW_ROOT/scheduler/orgw-score" --version)"
t_match "CHANGELOG's newest entry is this version" "^$want " \
	"$(grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+ ' "$ORGW_ROOT/CHANGELOG")"

orgw_start
HTTP_KEY= orgw_http GET /healthz
t_eq "GET /healthz without a key is 200" 200 "$HTTP_STATUS"
t_eq "GET /healthz reports the version" "$want" \
	"$(json_get "$HTTP_BODY" 'j.version')"

# A refused configuration still says which build is answering.
orgw_restart_workers HIT_RATE=7
HTTP_KEY= orgw_http GET /healthz
t_eq "GET /healthz with a refused configuration is 503" 503 "$HTTP_STATUS"
t_eq "... and still reports the version" "$want" \
	"$(json_get "$HTTP_BODY" 'j.version')"
