#!/bin/bash
# t0550-apache-cgi: shared hosting.  orgw.fcgi uploaded into an account's
# public_html/cgi-bin/ with the shipped deploy/htaccess beside it (config
# file outside the web root), under Apache with AllowOverride All, runs as a
# plain CGI program per request, in both ways hosts run CGI:
#   apache-cgi          event MPM + mod_cgid (Debian's `a2enmod cgi`)
#   apache-cgi-prefork  prefork MPM + mod_cgi
# Each passes the deployment checks (tests/lib.sh deploy_checks) with the
# openai client, although the harness compresses JSON and event streams the
# way some hosts do, and answers the same as the FastCGI workers behind
# lighttpd.  The 45 s first token: t0560.
. "$(dirname "$0")/../lib.sh"

orgw_start
deploy_start lighttpd apache-cgi apache-cgi-prefork
M=$DEPLOY_MODEL

for s in apache-cgi apache-cgi-prefork; do
	deploy_checks "$s"
done

# The same answers as FastCGI.  curl for the raw bytes of the gateway's own
# answers, the openai client for chat.
raw() { # SERVER METHOD PATH [KEY [BODY]]: curl's status, the HTTP status, orgw's headers, the body
	local url=${DEPLOY_URL[$1]} key=${4-$ORGW_KEY} body=${5-}
	local -a a=(-sS -X "$2" --max-time 30 -D - -o "$ORGW_T/raw.body")
	[ -n "$key" ] && a+=(-H "Authorization: Bearer $key")
	[ -n "$body" ] && a+=(-H 'Content-Type: application/json' --data-binary "$body")
	curl "${a[@]}" "$url$3" 2>/dev/null >"$ORGW_T/raw.head"
	printf 'curl exit %s\n' "$?"	# 18: the answer was cut short
	tr -d '\r' <"$ORGW_T/raw.head" |
		grep -iE '^(HTTP/|content-type:|allow:|www-authenticate:)' |
		sed -E 's/^(HTTP\/[0-9.]+) /HTTP /; s/^([^:]*):/\L\1:/' | sort
	cat "$ORGW_T/raw.body"
}
chat_body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
# What does not depend on timing, ids or the route taken.
sdk_view='JSON.stringify({ok: j.ok, status: j.status, content: j.content, finish_reason: j.finish_reason, provider: j.provider, usage: j.usage, error: j.error, done: j.done, chunks: j.chunks, attempts: j.headers["x-orgw-attempts"], via: j.headers["x-orgw-provider"]})'

for s in apache-cgi apache-cgi-prefork; do
	for req in "GET /healthz" "GET /no/such/path" "GET /v1/chat/completions" \
		"GET /v1/models"; do
		# shellcheck disable=SC2086 # METHOD PATH
		# /healthz under FastCGI adds the host's load, which a CGI run
		# (one request, one process) has not: compared without it.
		t_eq "$s answers $req like FastCGI" \
			"$(raw lighttpd $req | sed -E 's/,"in_flight":[0-9]+,"capacity":[0-9]+,"saturated":(true|false)//')" \
			"$(raw "$s" $req)"
	done
	t_eq "$s answers POST /v1/models like FastCGI" \
		"$(raw lighttpd POST /v1/models "$ORGW_KEY" '{}')" \
		"$(raw "$s" POST /v1/models "$ORGW_KEY" '{}')"
	t_eq "$s answers a wrong key like FastCGI" \
		"$(raw lighttpd POST /v1/chat/completions wrong "$chat_body")" \
		"$(raw "$s" POST /v1/chat/completions wrong "$chat_body")"
	t_eq "$s answers malformed JSON like FastCGI" \
		"$(raw lighttpd POST /v1/chat/completions "$ORGW_KEY" '{"model":')" \
		"$(raw "$s" POST /v1/chat/completions "$ORGW_KEY" '{"model":')"
	t_eq "$s answers a chat completion like FastCGI (openai client)" \
		"$(deploy_chat lighttpd --model "$M" | json_get - "$sdk_view")" \
		"$(deploy_chat "$s" --model "$M" | json_get - "$sdk_view")"
	t_eq "$s answers a streamed chat completion like FastCGI (openai client)" \
		"$(deploy_chat lighttpd --model "$M" --stream | json_get - "$sdk_view")" \
		"$(deploy_chat "$s" --model "$M" --stream | json_get - "$sdk_view")"
	t_eq "$s streams the same bytes as FastCGI, less ids and times" \
		"$(raw lighttpd POST /v1/chat/completions "$ORGW_KEY" "${chat_body%\}},\"stream\":true}" |
			sed -E 's/"(id|created)":("[^"]*"|[0-9]+)/"\1":X/g')" \
		"$(raw "$s" POST /v1/chat/completions "$ORGW_KEY" "${chat_body%\}},\"stream\":true}" |
			sed -E 's/"(id|created)":("[^"]*"|[0-9]+)/"\1":X/g')"
done

# The config file named in the .htaccess was read: the state went where its
# STATE_PATH says, outside the web root.
t_check "the state file is where the config outside the web root says" \
	test -s "$ORGW_T/apache-cgi/private/state/state.gdbm"

# deploy/README.md's shorter base URL: a rewrite in public_html/.htaccess.
root=$ORGW_T/apache-cgi/public_html
# shellcheck disable=SC2016 # $1 is the rewrite's, not the shell's
printf 'RewriteEngine On\nRewriteRule ^(v1/.*)$ cgi-bin/orgw.fcgi/$1 [L]\n' >"$root/.htaccess"
deploy__is_root && chown www-data:www-data "$root/.htaccess"
base=${DEPLOY_URL[apache-cgi]%/cgi-bin/orgw.fcgi}
double_ctl POST config '{"spacing_ms":0,"chunks":3}' >/dev/null
out=$(ORGW_URL=$base orgw_chat --model "$M" --stream)
t_eq "the README's rewrite serves https://host/v1 too, key and all" "true Hello from deepseek true" \
	"$(json_get "$out" '[j.ok, j.content, j.done].join(" ")')"
