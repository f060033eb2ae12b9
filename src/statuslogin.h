/*
 * statuslogin.h - the login of GET /status: the client
 * key is posted once in a form, and the browser keeps a cookie holding
 * a token derived from the key, never the key itself.
 *
 * Token: "<expiry>.<hex HMAC-SHA256(key, "orgw-status-v1" || expiry)>",
 * expiry in unix seconds as decimal digits.  A changed key invalidates
 * every cookie; a stolen cookie works until its expiry and gives the
 * status page only (the chat path wants the key in Authorization).
 * Pure apart from libcrypto: no I/O, the time is an argument.
 */
#ifndef ORGW_STATUSLOGIN_H
#define ORGW_STATUSLOGIN_H

#include "orgw.h"

#define STATUSLOGIN_COOKIE "orgw_status"
#define STATUSLOGIN_TTL_SECONDS (12 * 3600)
/* A token may expire this much later than a login now would make it: the
 * clocks of several gateway hosts differ a little. */
#define STATUSLOGIN_SKEW_SECONDS 300
/* Digits of an int64, '.', 64 hex digits, NUL. */
#define STATUSLOGIN_TOKEN_MAX 96

/* Constant-time equality of given and key (the time depends on key's
 * length only).  False when either is NULL or key is empty. */
bool statuslogin_key_eq(const char *given, const char *key);

/* The token for key expiring at expiry into dst (n bytes, at least
 * STATUSLOGIN_TOKEN_MAX).  ORGW_EINVAL for an empty key or small dst,
 * ORGW_ENOMEM when libcrypto fails. */
enum orgw_err statuslogin_token(const char *key, int64_t expiry, char *dst,
				size_t n);

/* True when the Cookie header (may be NULL) holds an orgw_status token
 * for key that has not expired at now and expires no later than a login
 * at now would make it (STATUSLOGIN_TTL_SECONDS, plus the skew): a token
 * with an expiry far ahead, made however, is refused.  Logout cannot
 * revoke a token: it only clears the browser's copy. */
bool statuslogin_cookie_ok(const char *cookie, const char *key, int64_t now);

/*
 * The value of field name in an application/x-www-form-urlencoded body
 * (len bytes, need not be NUL-terminated), decoded ('+' is a space,
 * %XX a byte) into dst (n bytes).  False when the field is absent, does
 * not fit, or is badly encoded.
 */
bool statuslogin_form_get(const char *body, size_t len, const char *name,
			  char *dst, size_t n);

#endif
