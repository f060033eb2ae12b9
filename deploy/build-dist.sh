#!/bin/sh
# build-dist.sh - `make dist`: the shared-hosting artifact,
#   dist/orgw-VERSION-linux-x86_64.tar.gz
# a fully static build (static-pie, glibc) of orgw.fcgi and orgw-score that
# runs on any x86-64 Linux whatever its libraries, with a .htaccess, a
# commented orgw.conf, CA certificates and INSTALL (deploy/dist/).
#
# Debian ships static libssl, libcrypto, libz, libcares, libfcgi and
# libgdbm, but its libcurl.a needs static krb5 and LDAP libraries it does
# not ship, and libcjson-dev has no .a.  So libcurl (HTTP and HTTPS only,
# OpenSSL, zlib, c-ares) and cJSON are built here from Debian's own source
# packages, fetched with `apt-get source` through a private apt
# configuration under dist/build/apt (the machine's apt config is not
# touched).  c-ares, not glibc's getaddrinfo, resolves names: a static
# glibc would dlopen the host's NSS modules for anything but "files" and
# "dns" in /etc/nsswitch.conf, and those must match the glibc it was built
# with; c-ares reads /etc/resolv.conf and /etc/hosts itself.  OpenSSL's
# config file is not loaded (--disable-openssl-auto-load-config) for the
# same reason: a host's openssl.cnf may name provider modules to dlopen.
#
# The built libraries are kept under dist/build/prefix, so a second run
# only recompiles orgw (make FLAVOUR=dist, objects in build/dist) and packs
# the tarball: a few seconds.  The last line printed is the tarball's path.
#
# Exit: 0 done; 75 the source packages could not be downloaded (offline:
# the tests skip); anything else a build error.
#
# Knobs: ORGW_VERSION (default: the VERSION file), ORGW_DIST_MIRROR (default
# http://deb.debian.org/debian, with ...-security beside it), CC.
set -eu

cd "$(dirname "$0")/.."
TOP=$(pwd)
OUT=$TOP/dist
B=$OUT/build
P=$B/prefix
MIRROR=${ORGW_DIST_MIRROR:-http://deb.debian.org/debian}
CC=${CC:-cc}
JOBS=$(nproc 2>/dev/null || echo 2)
# The release of the VERSION file, as --version and the package say.
VERSION=${ORGW_VERSION:-$(cat VERSION)}
NAME=orgw-$VERSION-linux-x86_64

say() { printf 'dist: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ "$(uname -m)" = x86_64 ] || die "builds linux-x86_64 only (this is $(uname -m))"
mkdir -p "$B/src" "$P/lib" "$P/include"

# --- 1. Debian's source packages, through a private apt configuration ----
# The suites of the machine (VERSION_CODENAME, e.g. bookworm): the release,
# -updates and -security, as /etc/apt/sources.list.d/debian.sources names
# them on Debian 12.
fetch_sources() {
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
	a=$B/apt
	mkdir -p "$a/sources.list.d" "$a/lists/partial" "$a/cache/archives/partial"
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	{
		echo "deb-src [signed-by=$key] $MIRROR $codename main"
		echo "deb-src [signed-by=$key] $MIRROR $codename-updates main"
		echo "deb-src [signed-by=$key] $MIRROR-security $codename-security main"
	} >"$a/sources.list"
	set -- -o "Dir::Etc::SourceList=$a/sources.list" \
		-o "Dir::Etc::SourceParts=$a/sources.list.d" \
		-o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" \
		-o Debug::NoLocking=1 -q
	# As root, apt drops to the _apt user, who cannot write here.
	[ "$(id -u)" = 0 ] && set -- "$@" -o APT::Sandbox::User=root
	if ! apt-get "$@" update >"$a/update.log" 2>&1 ||
	    grep -q '^[WE]: Failed to fetch' "$a/update.log"; then
		sed 's/^/  /' "$a/update.log" >&2
		say "cannot download the source package lists (offline?)"
		exit 75
	fi
	if ! (cd "$B/src" && apt-get "$@" source --download-only curl cjson) \
	    >"$a/source.log" 2>&1; then
		sed 's/^/  /' "$a/source.log" >&2
		say "cannot download the source packages curl and cjson (offline?)"
		exit 75
	fi
}

dsc() { # PACKAGE: the newest .dsc of it in $B/src
	ls "$B/src/$1"_*.dsc 2>/dev/null | sort -V | tail -n 1
}

if [ -z "$(dsc curl)" ] || [ -z "$(dsc cjson)" ]; then
	say "downloading the source packages curl and cjson"
	fetch_sources
fi

# --- 2. cJSON: one file ---------------------------------------------------
cj=$(dsc cjson)
if [ ! -f "$P/lib/libcjson.a" ] || [ "$cj" -nt "$P/lib/libcjson.a" ]; then
	say "building cJSON from $(basename "$cj")"
	rm -rf "$B/src/cjson"
	dpkg-source -q -x "$cj" "$B/src/cjson" >/dev/null 2>&1 ||
		die "dpkg-source -x $cj failed"
	mkdir -p "$P/include/cjson"
	$CC -O2 -fPIE -c -o "$B/src/cjson/cJSON.o" "$B/src/cjson/cJSON.c"
	rm -f "$P/lib/libcjson.a"
	ar rcs "$P/lib/libcjson.a" "$B/src/cjson/cJSON.o"
	cp "$B/src/cjson/cJSON.h" "$P/include/cjson/"
fi

# --- 3. libcurl: HTTP and HTTPS only --------------------------------------
CURL_OPTS="--disable-shared --enable-static --with-pic
--with-openssl --with-zlib --enable-ares --disable-openssl-auto-load-config
--with-ca-fallback --without-ca-bundle --without-ca-path
--without-libpsl --without-nghttp2 --without-brotli --without-zstd
--without-libidn2 --without-librtmp --without-libssh2 --without-libgsasl
--disable-ldap --disable-ldaps --disable-ftp --disable-file --disable-rtsp
--disable-dict --disable-telnet --disable-tftp --disable-pop3 --disable-imap
--disable-smb --disable-smtp --disable-gopher --disable-mqtt
--disable-websockets --disable-ntlm --disable-ntlm-wb --disable-tls-srp
--disable-unix-sockets --disable-alt-svc --disable-hsts --disable-cookies
--disable-mime --disable-netrc --disable-doh --disable-manual
--disable-dependency-tracking --disable-maintainer-mode"
cu=$(dsc curl)
stamp="$(basename "$cu") $(echo $CURL_OPTS)"
if [ ! -f "$P/lib/libcurl.a" ] || [ "$(cat "$B/curl.stamp" 2>/dev/null)" != "$stamp" ]; then
	say "building libcurl from $(basename "$cu") (a minute or two)"
	s=$B/src/curl
	rm -rf "$s"
	dpkg-source -q --skip-patches -x "$cu" "$s" >/dev/null 2>&1 ||
		die "dpkg-source -x $cu failed"
	# Debian's patches for its OpenSSL flavour: the series less the last
	# two (gnutls, nss), as debian/rules builds libcurl4-openssl.
	grep -v -e '^#' -e '^[[:space:]]*$' "$s/debian/patches/series" |
		grep -v -e 90_gnutls -e 99_nss | while read -r p; do
			patch -s -d "$s" -p1 <"$s/debian/patches/$p" ||
				die "patch $p failed"
		done
	# shellcheck disable=SC2086 # word splitting of the options is intended
	(cd "$s" && ./configure CC="$CC" CFLAGS="-O2" $CURL_OPTS) \
		>"$B/curl-configure.log" 2>&1 ||
		{ tail -n 30 "$B/curl-configure.log" >&2; die "libcurl configure failed"; }
	make -C "$s/lib" -j"$JOBS" >"$B/curl-make.log" 2>&1 ||
		{ tail -n 30 "$B/curl-make.log" >&2; die "libcurl make failed"; }
	rm -rf "$P/include/curl"
	mkdir -p "$P/include/curl"
	cp "$s"/include/curl/*.h "$P/include/curl/"
	cp "$s/lib/.libs/libcurl.a" "$P/lib/libcurl.a"
	echo "$stamp" >"$B/curl.stamp"
fi

# --- 4. orgw, static-pie -------------------------------------------------
# The same sources and warnings as every flavour; objects in build/dist.
# The linker's "Using 'getaddrinfo' in statically linked applications"
# warnings name code orgw never reaches (libfcgi's TCP listener, OpenSSL's
# BIO_lookup, its DSO loader): they are filtered out.
say "building orgw.fcgi and orgw-score (static)"
log=$B/orgw-make.log
if ! make --no-print-directory FLAVOUR=dist CC="$CC" \
    PKG_CFLAGS="-I$P/include -I$P/include/cjson -DCURL_STATICLIB" \
    PKG_LIBS="$P/lib/libcurl.a $P/lib/libcjson.a -lfcgi -lhiredis -lcares -lssl -lcrypto -lz -lpthread" \
    LDFLAGS="-static-pie -Wl,-z,relro,-z,now" \
    build/dist/orgw.fcgi build/dist/orgw-score >"$log" 2>&1; then
	cat "$log" >&2
	die "building orgw failed"
fi
grep -v -e 'in statically linked applications requires' \
	-e 'in function `' -e '^  [A-Z][A-Z]  ' -e 'is up to date' "$log" >&2 || true

# --- 5. the tarball ---------------------------------------------------------
# Reused when nothing it is made of changed since it was packed (the tests
# unpack it twice in a run; packing splits 140-odd certificates: 4 s).
bundle=/etc/ssl/certs/ca-certificates.crt
tgz=$OUT/$NAME.tar.gz
if [ -f "$tgz" ] && [ -z "$(find build/dist/orgw.fcgi build/dist/orgw-score \
    deploy/htaccess deploy/dist/orgw.conf deploy/dist/INSTALL "$bundle" \
    deploy/build-dist.sh -newer "$tgz" 2>&1)" ]; then
	say "$NAME.tar.gz is up to date"
	echo "$tgz"
	exit 0
fi

# The layout mirrors a hosting account's home directory:
#   public_html/cgi-bin/orgw.fcgi, .htaccess     (under the web root)
#   orgw/orgw.conf, orgw-score, ca-certs/, state/   (outside it)
say "packing $NAME.tar.gz"
st=$B/stage
rm -rf "$st"
d=$st/$NAME
mkdir -p "$d/public_html/cgi-bin" "$d/orgw/state"
strip -o "$d/public_html/cgi-bin/orgw.fcgi" build/dist/orgw.fcgi
strip -o "$d/orgw/orgw-score" build/dist/orgw-score
cp deploy/htaccess "$d/public_html/cgi-bin/.htaccess"
cp deploy/dist/orgw.conf "$d/orgw/orgw.conf"
# Debian's CA bundle, one file per certificate named by subject hash
# (OpenSSL's CApath layout): a CGI run then reads only the certificate its
# connection needs, not all 140-odd (about 25 ms saved per request).
bundle=/etc/ssl/certs/ca-certificates.crt
[ -f "$bundle" ] || die "no $bundle (install ca-certificates)"
cad=$d/orgw/ca-certs
mkdir -p "$cad"
awk -v dir="$cad" '/-----BEGIN CERTIFICATE-----/ { n++; f = sprintf("%s/c%04d.pem", dir, n) }
	n && f != "" { print > f }
	/-----END CERTIFICATE-----/ { close(f); f = "" }' "$bundle"
for f in "$cad"/c*.pem; do
	h=$(openssl x509 -subject_hash -noout -in "$f") || die "openssl x509 $f"
	i=0
	while [ -e "$cad/$h.$i" ]; do i=$((i + 1)); done
	mv "$f" "$cad/$h.$i"
done
[ "$(ls "$cad" | wc -l)" = "$(grep -c 'BEGIN CERTIFICATE' "$bundle")" ] ||
	die "splitting $bundle went wrong"
sed "s|@VERSION@|$VERSION|g" deploy/dist/INSTALL >"$d/INSTALL"
chmod 755 "$d/public_html" "$d/public_html/cgi-bin" \
	"$d/public_html/cgi-bin/orgw.fcgi" "$d/orgw/orgw-score"
chmod 700 "$d/orgw" "$d/orgw/state"
chmod 600 "$d/orgw/orgw.conf"
chmod 755 "$cad"
chmod 644 "$d/public_html/cgi-bin/.htaccess" "$d/INSTALL" "$cad"/*
rm -f "$OUT"/orgw-*-linux-x86_64.tar.gz	# one tarball: the current one
tar -C "$st" --owner=0 --group=0 --numeric-owner --sort=name \
	-czf "$OUT/$NAME.tar.gz" "$NAME"
rm -rf "$st"
say "$(du -k "$OUT/$NAME.tar.gz" | cut -f1) KiB"
echo "$OUT/$NAME.tar.gz"
