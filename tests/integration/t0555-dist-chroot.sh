#!/bin/bash
# t0555-dist-chroot: the shared-hosting tarball of `make dist`
# runs on a machine that has none of its libraries.  It is unpacked into
# an empty tree that gets nothing else but /etc/resolv.conf and /dev/null,
# and orgw.fcgi runs there under chroot as a plain CGI program, as an
# unprivileged user (65534), with the tarball's own orgw.conf (relative
# STATE_PATH and UPSTREAM_CA_FILE) plus the two keys and UPSTREAM_URL:
# /healthz, a chat completion and a stream against the double over http,
# then over https with the double's certificate signed by a test CA, which
# the shipped ca-certs directory refuses and accepts once the CA is added
# to it, and which UPSTREAM_CA_FILE naming the CA's PEM file accepts.  Also:
# the binaries are static, /healthz says plainly when the state directory
# is not writable, orgw-score scores in the chroot and --cron-line prints
# absolute paths.  The build itself is `make dist`, reused when up to date.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ]; then
	t_skip "chroot needs root"
	exit 0
fi
orgw_start
dist_unpack "$ORGW_T/dist"
M=deepseek/deepseek-v3.2

for b in public_html/cgi-bin/orgw.fcgi orgw/orgw-score; do
	t_match "$b is static (ldd)" 'not a dynamic executable|statically linked' \
		"$(ldd "$DIST_TOP/$b" 2>&1)"
	t_check "$b has no program interpreter (ELF INTERP)" \
		bash -c "! readelf -l '$DIST_TOP/$b' | grep -q INTERP"
done

# The chroot: the upload in /home/user, and nothing else but these two.
R=$ORGW_T/root
H=/home/user
CHROOT=$(command -v chroot)
mkdir -p "$R$H" "$R/etc" "$R/dev"
cp -a "$DIST_TOP/orgw" "$DIST_TOP/public_html" "$R$H/"
cp /etc/resolv.conf "$R/etc/resolv.conf"
mknod -m 666 "$R/dev/null" c 1 3
CONF=$R$H/orgw/orgw.conf
{
	printf 'OPENROUTER_API_KEY=%s\n' "$UPSTREAM_KEY"
	printf 'CUSTOM_ACCESS_KEY=%s\n' "$ORGW_KEY"
	printf 'UPSTREAM_URL=%s/api/v1\n' "$DOUBLE_URL"
} >>"$CONF"
chown -R 65534:65534 "$R$H"
t_eq "the chroot holds the upload, /etc/resolv.conf and /dev/null only" \
	"./dev/null ./etc/resolv.conf .$H/orgw/orgw-score .$H/orgw/orgw.conf .$H/public_html/cgi-bin/.htaccess .$H/public_html/cgi-bin/orgw.fcgi" \
	"$(cd "$R" && find . ! -type d ! -path ".$H/orgw/ca-certs/*" | sort | tr '\n' ' ' | sed 's/ $//')"
n=$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt)
t_eq "orgw/ca-certs holds Debian's $n CA certificates, named by hash" "$n" \
	"$(find "$R$H/orgw/ca-certs" -type f -name '[0-9a-f]*.[0-9]' | wc -l)"

cgi() { # METHOD PATH_INFO [BODY]: one CGI run in the chroot, output on stdout
	local body=${3-}
	printf '%s' "$body" | env -i ORGW_CONFIG=$H/orgw/orgw.conf \
		GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD="$1" PATH_INFO="$2" \
		SCRIPT_NAME=/cgi-bin/orgw.fcgi REQUEST_URI="/cgi-bin/orgw.fcgi$2" \
		SERVER_PROTOCOL=HTTP/1.1 CONTENT_LENGTH="${#body}" \
		CONTENT_TYPE=application/json HTTP_AUTHORIZATION="Bearer $ORGW_KEY" \
		"$CHROOT" --userspec=65534:65534 "$R" $H/public_html/cgi-bin/orgw.fcgi \
		2>>"$ORGW_T/cgi.log"
}
body="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
sbody="${body%\}},\"stream\":true}"

checks() { # LABEL: healthz, chat, stream
	local out
	out=$(cgi GET /healthz)
	t_match "$1: /healthz ok" '^Status: 200.*"status":"ok"' "$(tr -d '\r\n' <<<"$out")"
	out=$(cgi POST /v1/chat/completions "$body")
	t_match "$1: chat completion: 200" '^Status: 200' "$out"
	t_match "$1: chat completion: the answer" '"content":"Hello from [a-z]+"' "$out"
	out=$(cgi POST /v1/chat/completions "$sbody")
	t_match "$1: stream: event-stream" 'Content-Type: text/event-stream' "$out"
	t_match "$1: stream: the tokens and [DONE]" 'Hello.*data: \[DONE\]' "$(tr -d '\r\n' <<<"$out")"
}
checks "chroot, http"
t_check "the state went where the relative STATE_PATH says" \
	test -s "$R$H/orgw/state/state.gdbm"

out=$(env -i ORGW_CONFIG=$H/orgw/orgw.conf "$CHROOT" --userspec=65534:65534 "$R" \
	$H/orgw/orgw-score --model "$M" 2>&1)
t_match "orgw-score scores in the chroot" "$M" "$out"
# --cron-line: from its own place (/proc/self/exe; the chroot has no /proc).
t_eq "orgw-score --cron-line: absolute paths, the orgw.conf beside it" \
	"0 */3 * * * $DIST_TOP/orgw/orgw-score --config $DIST_TOP/orgw/orgw.conf >>$DIST_TOP/orgw/orgw-score.log 2>&1" \
	"$(env -i "$DIST_TOP/orgw/orgw-score" --cron-line)"

# A state directory the CGI user cannot write: /healthz says so to the
# holder of the client key.
chmod 500 "$R$H/orgw/state"
rm -f "$R$H/orgw/state/"*
out=$(cgi GET /healthz)
t_match "/healthz with the client key: the state directory is not writable" \
	"directory $H/orgw/state is not writable by this program \\(uid 65534\\)" "$out"
chmod 700 "$R$H/orgw/state"

# TLS: a CA of the test's own, the double behind a certificate it signed.
P=$ORGW_T/pki
mkdir -p "$P"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
if ! { openssl req -x509 "${ec[@]}" -keyout "$P/ca.key" -out "$P/ca.crt" \
	-days 2 -subj /CN=orgw-test-ca \
	-addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign &&
	openssl req "${ec[@]}" -keyout "$P/srv.key" -out "$P/srv.csr" \
		-subj /CN=127.0.0.1 &&
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$P/ext" &&
	openssl x509 -req -in "$P/srv.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" \
		-CAcreateserial -days 2 -extfile "$P/ext" -out "$P/srv.crt"; } \
	>"$P/openssl.log" 2>&1; then
	t_fail "openssl: the test CA" "$(cat "$P/openssl.log")"
	exit 1
fi
node "$ORGW_ROOT/tests/double/openrouter-double.js" --port 0 \
	--port-file "$P/port" --key "$UPSTREAM_KEY" \
	--tls-cert "$P/srv.crt" --tls-key "$P/srv.key" >"$P/double.log" 2>&1 </dev/null &
TLS_PID=$!
t0555_exit() {
	local rc=$?
	kill "$TLS_PID" 2>/dev/null
	wait "$TLS_PID" 2>/dev/null
	(exit $rc)
	orgw__on_exit
}
trap t0555_exit EXIT
for ((i = 0; i < 100; i++)); do
	[ -s "$P/port" ] && break
	sleep 0.1
done
tls_port=$(tr -dc 0-9 <"$P/port" 2>/dev/null)
t_check "the double listens over https" curl -sS --cacert "$P/ca.crt" \
	-o /dev/null "https://127.0.0.1:$tls_port/api/v1/models"

sed -i "s|^UPSTREAM_URL=.*|UPSTREAM_URL=https://127.0.0.1:$tls_port/api/v1|" "$CONF"
# The shipped certificates do not include the test CA: refused.
out=$(cgi POST /v1/chat/completions "$body")
t_match "https with the shipped ca-certs: the test CA is not trusted (502)" \
	'^Status: 502' "$out"
# The shipped directory with the test CA added the way it is laid out.
cp "$P/ca.crt" "$R$H/orgw/ca-certs/$(openssl x509 -subject_hash -noout -in "$P/ca.crt").0"
checks "chroot, https (the test CA added to the shipped ca-certs directory)"
# A PEM file named by UPSTREAM_CA_FILE.
rm "$R$H/orgw/ca-certs/$(openssl x509 -subject_hash -noout -in "$P/ca.crt").0"
cp "$P/ca.crt" "$R$H/orgw/test-ca.crt"
sed -i 's|^UPSTREAM_CA_FILE=.*|UPSTREAM_CA_FILE=test-ca.crt|' "$CONF"
checks "chroot, https (UPSTREAM_CA_FILE names the test CA's file)"
