#!/bin/bash
# t0556-dist-apache-userdir: the shared-hosting tarball of `make dist`
# uploaded as INSTALL says into a user's home directory and
# served by Apache through mod_userdir (http://host/~user/cgi-bin/...),
# with nothing root-owned beyond enabling CGI and AllowOverride: the
# tarball's .htaccess (its @CONFIG@ filled in) and orgw.conf (the two keys
# and UPSTREAM_URL added).  Two hosts:
#   userdir-cgi    event MPM + mod_cgid, the .htaccess as shipped (plain
#                  CGI); the deployment checks of tests/lib.sh, streaming
#                  included
#   userdir-fcgid  mod_fcgid mapping *.fcgi (AddHandler in the server
#                  config, as hosts do), the .htaccess's SetHandler line
#                  changed to fcgid-script: FastCGI workers that get
#                  ORGW_CONFIG with each request, not in their environment
# Both with Apache's Timeout at 4 s (and FcgidIOTimeout 4 s): a stream
# whose upstream is silent for 9 s before the first token completes,
# since orgw keeps the connection non-silent (docs/design.md section 5), and
# so does a 6 s non-streamed one that upstream pads as OpenRouter does; a
# CGI script that is silent for 6 s is cut, which shows the limit is in
# force.
# These three run on both hosts at once (the silent script alongside the
# streams).
# (orgw holds a stream's head for up to 3 s, so a host Timeout under
# about 4 s would cut it.)
. "$(dirname "$0")/../lib.sh"

orgw_start
dist_unpack "$ORGW_T/dist"
M=$DEPLOY_MODEL
TIMEOUT=4

# userdir_start NAME KIND(cgi|fcgid): the account, the config, the server.
userdir_start() {
	local s=$1 kind=$2 dir=$ORGW_T/$1 home port try
	for try in 1 2 3; do
		port=$(orgw__free_port) || break
		rm -rf "$dir"
		home=$dir/home/user
		mkdir -p "$dir/run" "$dir/public_html" "$home" || return 1
		cp -a "$DIST_TOP/orgw" "$DIST_TOP/public_html" "$home/" || return 1
		{
			printf 'OPENROUTER_API_KEY=%s\n' "$UPSTREAM_KEY"
			printf 'CUSTOM_ACCESS_KEY=%s\n' "$ORGW_KEY"
			printf 'UPSTREAM_URL=%s/api/v1\n' "$DOUBLE_URL"
		} >>"$home/orgw/orgw.conf"
		deploy_fill "$DIST_TOP/public_html/cgi-bin/.htaccess" \
			"$home/public_html/cgi-bin/.htaccess" \
			CONFIG="$home/orgw/orgw.conf" || return 1
		[ "$kind" = fcgid ] && sed -i 's/SetHandler cgi-script/SetHandler fcgid-script/' \
			"$home/public_html/cgi-bin/.htaccess"
		# The control: a CGI program silent for longer than Timeout.
		printf '#!/bin/sh\nsleep %s\nprintf "Content-Type: text/plain\\r\\n\\r\\nlate\\n"\n' \
			$((TIMEOUT + 2)) >"$home/public_html/cgi-bin/silent.cgi"
		chmod 755 "$home/public_html/cgi-bin/silent.cgi"
		printf '<Files "silent.cgi">\n\tSetHandler cgi-script\n</Files>\n' \
			>>"$home/public_html/cgi-bin/.htaccess"
		deploy__apache_main "$dir" "$kind" "$port" || return 1
		{
			# What the host enables: user directories, CGI, overrides
			# (Debian's userdir.conf, plus ExecCGI for .htaccess).
			printf 'LoadModule userdir_module %s/mod_userdir.so\n' "$DEPLOY_APACHE_MODULES"
			[ "$kind" = fcgid ] && printf 'LoadModule cgid_module %s/mod_cgid.so\nScriptSock "%s/run/cgisock"\n' \
				"$DEPLOY_APACHE_MODULES" "$dir"
			printf 'UserDir "%s/home/*/public_html"\n' "$dir"
			printf '<Directory "%s/home/*/public_html">\n' "$dir"
			printf '\tAllowOverride FileInfo AuthConfig Limit Indexes Options=ExecCGI\n'
			printf '\tOptions MultiViews Indexes SymLinksIfOwnerMatch IncludesNoExec\n'
			printf '\tRequire all granted\n</Directory>\n'
			printf 'Timeout %s\n' "$TIMEOUT"
			[ "$kind" = fcgid ] && printf 'FcgidIOTimeout %s\n' "$TIMEOUT"
		} >>"$dir/apache2.conf"
		if [ "$kind" = fcgid ]; then
			{
				printf 'Listen 127.0.0.1:%s\n' "$port"
				printf 'DocumentRoot "%s/public_html"\n' "$dir"
				printf '<Directory "%s/public_html">\n\tRequire all granted\n</Directory>\n' "$dir"
			} >"$dir/site.conf"
		fi
		if deploy__is_root; then
			# The host runs the user's programs as the user (suEXEC);
			# here Apache's own user plays the account's owner.
			chmod 0711 "$ORGW_T" && chown -R www-data:www-data "$dir/home" || return 1
		fi
		DEPLOY_LOGS[$s]="$dir/error.log $dir/apache2.out"
		setsid env -i PATH="$PATH" LANG=C APACHE_RUN_DIR="$dir/run" \
			/usr/sbin/apache2 -f "$dir/apache2.conf" -DFOREGROUND \
			>"$dir/apache2.out" 2>&1 </dev/null &
		DEPLOY_PID[$s]=$!
		DEPLOY_URL[$s]=http://127.0.0.1:$port/~user/cgi-bin/orgw.fcgi
		deploy__wait_ready "$s" "$port" && return 0
		deploy_logs "$s" >&2
		deploy__kill_tree "${DEPLOY_PID[$s]}"
		unset "DEPLOY_PID[$s]"
	done
	t_fail "$s did not answer /healthz with 200"
	exit 1
}

trap deploy__on_exit EXIT
userdir_start userdir-cgi cgi
userdir_start userdir-fcgid fcgid

deploy_checks userdir-cgi

s=userdir-fcgid
out=$(curl -sS --max-time 10 -H "Authorization: Bearer $ORGW_KEY" "${DEPLOY_URL[$s]}/healthz")
t_eq "$s: /healthz with the client key: ok (the config came with the request)" \
	ok "$(json_get "$out" j.status)"
t_eq "$s: ... from a FastCGI worker (its load fields)" \
	"number number" "$(json_get "$out" 'typeof j.in_flight + " " + typeof j.capacity')"
double_ctl POST config '{"spacing_ms":0,"chunks":3,"first_token_delay_ms":0}' >/dev/null
out=$(deploy_chat "$s" --model "$M")
t_eq "$s: a chat completion (openai client)" "true 200 Hello from deepseek" \
	"$(json_get "$out" '[j.ok, j.status, j.content].join(" ")')"
out=$(deploy_chat "$s" --model "$M" --stream)
t_eq "$s: a streamed chat completion (openai client)" "true true Hello from deepseek" \
	"$(json_get "$out" '[j.ok, j.done, j.content].join(" ")')"
n=$(grep -c 'outcome=ok' "$ORGW_T/$s/error.log")
t_check "$s: served by mod_fcgid's workers ($n logged in Apache's error log)" test "$n" -ge 2
t_check "$s: the workers are FastCGI processes of the tarball's binary" \
	pgrep -f "$ORGW_T/$s/home/user/public_html/cgi-bin/orgw.fcgi"

# The two hosts at once (each phase asks the double for the same thing of
# both): the silent CGI programs while the streams wait, then the
# non-streamed completions.
HOSTS="userdir-cgi userdir-fcgid"
pids=()
for s in $HOSTS; do
	curl -s -o /dev/null -w '%{http_code}' --max-time 20 \
		"${DEPLOY_URL[$s]%/orgw.fcgi}/silent.cgi" >"$ORGW_T/silent.$s" &
	pids+=($!)
done
# A stream whose upstream says nothing for 9 s: orgw's own keep-alive
# comments (from 3 s in) are all that Apache sees.
double_ctl POST config '{"spacing_ms":0,"chunks":3,"first_token_delay_ms":9000,"keepalive_interval_ms":0,"keepalive_comments":0}' >/dev/null
for s in $HOSTS; do
	(
		t0=$(date +%s%N)
		deploy_chat "$s" --model "$M" --stream >"$ORGW_T/stream.$s"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$ORGW_T/stream-ms.$s"
	) &
	pids+=($!)
done
wait "${pids[@]}"
for s in $HOSTS; do
	t_match "$s: a CGI program silent for $((TIMEOUT + 2)) s is cut by Timeout $TIMEOUT (HTTP $(<"$ORGW_T/silent.$s"))" \
		'^(504|500|000)$' "$(<"$ORGW_T/silent.$s")"
	ms=$(<"$ORGW_T/stream-ms.$s")
	t_eq "$s: a stream whose upstream is silent for 9 s completes under Timeout $TIMEOUT s" \
		"true true Hello from deepseek" "$(json_get "$ORGW_T/stream.$s" '[j.ok, j.done, j.content].join(" ")')"
	t_check "$s: ... and took longer than the timeouts (${ms} ms)" test "$ms" -ge 9000
done
# Non-streamed: OpenRouter pads its committed 200 with whitespace (here
# every 2.5 s); orgw then sends its head and a newline every 250 ms
# (docs/design.md section 5).
double_ctl POST config '{"spacing_ms":0,"chunks":3,"first_token_delay_ms":6000,"keepalive_interval_ms":2500,"keepalive_comments":0,"padding_bytes":1}' >/dev/null
pids=()
for s in $HOSTS; do
	deploy_chat "$s" --model "$M" >"$ORGW_T/json.$s" &
	pids+=($!)
done
wait "${pids[@]}"
for s in $HOSTS; do
	t_eq "$s: a 6 s non-streamed completion (upstream padding) completes too" \
		"true 200 Hello from deepseek" "$(json_get "$ORGW_T/json.$s" '[j.ok, j.status, j.content].join(" ")')"
done
double_ctl POST config '{"spacing_ms":0,"chunks":3,"first_token_delay_ms":0,"keepalive_interval_ms":5000,"keepalive_comments":1,"padding_bytes":0}' >/dev/null
