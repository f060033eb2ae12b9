/*
 * statuslogin.c - the /status login token and form parsing (see
 * statuslogin.h).  HMAC-SHA256 and the constant-time compare come from
 * OpenSSL's libcrypto (docs/style.md 0: use the library).  Nothing here is
 * process-wide state, so it is safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "statuslogin.h"

#define TOKEN_CONTEXT "orgw-status-v1"

bool
statuslogin_key_eq(const char *given, const char *key)
{
	size_t i, glen, klen;
	unsigned char diff = 0;

	if (given == NULL || key == NULL || key[0] == '\0')
		return false;
	glen = strlen(given);
	klen = strlen(key);
	/* Every byte of the key whatever given's length, so the time taken
	 * does not depend on where they first differ (http_auth_ok too). */
	for (i = 0; i < klen; i++)
		diff |= (unsigned char)key[i] ^
			(unsigned char)(i < glen ? given[i] : 0);
	return diff == 0 && glen == klen;
}

enum orgw_err
statuslogin_token(const char *key, int64_t expiry, char *dst, size_t n)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0, i;
	char msg[64];
	int hdr;
	size_t at;

	if (key == NULL || key[0] == '\0' || n < STATUSLOGIN_TOKEN_MAX)
		return ORGW_EINVAL;
	hdr = snprintf(msg, sizeof(msg), "%s%lld", TOKEN_CONTEXT,
		       (long long)expiry);
	if (hdr < 0 || (size_t)hdr >= sizeof(msg))
		return ORGW_EINVAL;
	if (HMAC(EVP_sha256(), key, (int)strlen(key),
		 (const unsigned char *)msg, (size_t)hdr, mac, &maclen) ==
	    NULL)
		return ORGW_ENOMEM;
	at = (size_t)snprintf(dst, n, "%lld.", (long long)expiry);
	for (i = 0; i < maclen && at + 2 < n; i++, at += 2)
		snprintf(dst + at, n - at, "%02x", mac[i]);
	OPENSSL_cleanse(mac, sizeof(mac));
	return i == maclen ? ORGW_OK : ORGW_EINVAL;
}

/* The value of cookie name in a Cookie header (RFC 6265 5.4: pairs
 * separated by "; ") into dst; false when absent or too long. */
static bool
cookie_get(const char *h, const char *name, char *dst, size_t n)
{
	size_t nl = strlen(name), vl;
	const char *p = h, *end;

	while (p != NULL && *p != '\0') {
		while (*p == ' ' || *p == ';')
			p++;
		end = strchr(p, ';');
		vl = end ? (size_t)(end - p) : strlen(p);
		if (vl > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
			vl -= nl + 1;
			if (vl >= n)
				return false;
			memcpy(dst, p + nl + 1, vl);
			dst[vl] = '\0';
			return true;
		}
		p = end;
	}
	return false;
}

bool
statuslogin_cookie_ok(const char *cookie, const char *key, int64_t now)
{
	char got[STATUSLOGIN_TOKEN_MAX], want[STATUSLOGIN_TOKEN_MAX], *dot;
	long long exp = 0;
	size_t i;
	bool ok;

	if (cookie == NULL || key == NULL || key[0] == '\0' ||
	    !cookie_get(cookie, STATUSLOGIN_COOKIE, got, sizeof(got)) ||
	    (dot = strchr(got, '.')) == NULL || dot == got || dot - got > 18)
		return false;
	for (i = 0; got + i < dot; i++) {
		if (got[i] < '0' || got[i] > '9')
			return false;
		exp = exp * 10 + (got[i] - '0');
	}
	if (exp <= now ||
	    exp > now + STATUSLOGIN_TTL_SECONDS + STATUSLOGIN_SKEW_SECONDS ||
	    statuslogin_token(key, (int64_t)exp, want,
					   sizeof(want)) != ORGW_OK)
		return false;
	ok = strlen(got) == strlen(want) &&
	     CRYPTO_memcmp(got, want, strlen(want)) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
statuslogin_form_get(const char *body, size_t len, const char *name,
		     char *dst, size_t n)
{
	size_t nl = strlen(name), i = 0, j, k, o;

	if (n == 0)
		return false;
	/* WHATWG URL "application/x-www-form-urlencoded parsing". */
	while (i < len) {
		for (j = i; j < len && body[j] != '&'; j++)
			;
		if (j - i > nl && memcmp(body + i, name, nl) == 0 &&
		    body[i + nl] == '=') {
			for (k = i + nl + 1, o = 0; k < j; k++) {
				char c = body[k];
				int h, l;

				if (c == '+') {
					c = ' ';
				} else if (c == '%') {
					if (k + 2 >= j)
						return false;
					h = hexval(body[k + 1]);
					l = hexval(body[k + 2]);
					if (h < 0 || l < 0)
						return false;
					c = (char)(h * 16 + l);
					k += 2;
				}
				if (c == '\0' || o + 1 >= n)
					return false;
				dst[o++] = c;
			}
			dst[o] = '\0';
			return true;
		}
		i = j + 1;
	}
	return false;
}
