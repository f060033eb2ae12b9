/*
 * teamkey.c - the pure core of team keys (see teamkey.h): names and
 * model globs, the keyed hash of a key, a new key's text, the days and
 * months of its use and the checks made before a request goes upstream.
 * Beside it teamkey_codec.c (the codecs of its three records) and
 * teamkey_rate.c (the minute's count, the leases and the spend windows),
 * sharing teamkey_impl.h.
 *
 * Pure: no clock, no environment, no file.  The HMAC and the
 * constant-time compare are libcrypto's, the globs fnmatch(3)'s
 * (docs/style.md 0).  Nothing here is process-wide state, so every
 * function is safe from any thread.
 */
#define _GNU_SOURCE		/* FNM_CASEFOLD (glibc, musl, the BSDs) */

#include <fnmatch.h>
#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "teamkey.h"
#include "teamkey_impl.h"
#include "record.h"

#define TK_PLAIN_B64 43		/* base64url characters of 32 bytes */

bool
teamkey_name_ok(const char *name)
{
	size_t i;

	if (name == NULL)
		return false;
	for (i = 0; name[i] != '\0'; i++) {
		unsigned char c = (unsigned char)name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');

		if (i >= TEAMKEY_NAME_MAX || (!alnum && i == 0) ||
		    (!alnum && c != '.' && c != '_' && c != '-'))
			return false;
	}
	return i > 0;
}

bool
teamkey_glob_ok(const char *glob)
{
	size_t i;

	if (glob == NULL)
		return false;
	for (i = 0; glob[i] != '\0'; i++)
		if (i >= TEAMKEY_GLOB_MAX || glob[i] < 0x21 || glob[i] > 0x7e ||
		    glob[i] == ',')
			return false;
	return i > 0;
}

enum orgw_err
teamkey_set_globs(struct teamkey *k, const char *list)
{
	char globs[TEAMKEY_GLOBS_MAX][TEAMKEY_GLOB_MAX + 1];
	const char *p, *end;
	size_t n = 0, len;

	if (list == NULL)
		return ORGW_EINVAL;
	if (strcmp(list, "") == 0 || strcmp(list, "*") == 0) {
		k->n_globs = 0;
		return ORGW_OK;
	}
	/* Into a copy first: k's globs stay as they were on an error. */
	for (p = list;; p = end + 1) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (n == TEAMKEY_GLOBS_MAX || len == 0 || len > TEAMKEY_GLOB_MAX)
			return ORGW_EINVAL;
		memcpy(globs[n], p, len);
		globs[n][len] = '\0';
		if (!teamkey_glob_ok(globs[n++]))
			return ORGW_EINVAL;
		if (end == NULL)
			break;
	}
	memcpy(k->globs, globs, n * sizeof(globs[0]));
	k->n_globs = n;
	return ORGW_OK;
}

bool
teamkey_model_ok(const struct teamkey *k, const char *model)
{
	size_t i;

	if (k->n_globs == 0)
		return true;
	if (model == NULL)
		return false;
	/* No FNM_PATHNAME: '*' crosses '/', so "openai*mini" takes
	 * "openai/gpt-4o-mini" too.  OpenRouter's ids are lower case, and a
	 * client that sends "OpenAI/GPT-4o" means the same model. */
	for (i = 0; i < k->n_globs && i < TEAMKEY_GLOBS_MAX; i++)
		if (fnmatch(k->globs[i], model, FNM_CASEFOLD) == 0)
			return true;
	return false;
}

bool
teamkey_hash(const char *secret, const char *plain,
	     char hex[TEAMKEY_HASH_HEX + 1])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	size_t slen;

	hex[0] = '\0';
	/* An empty secret would make every hash one anyone can compute. */
	if (secret == NULL || plain == NULL || secret[0] == '\0' ||
	    (slen = strlen(secret)) > (size_t)INT_MAX)
		return false;
	if (HMAC(EVP_sha256(), secret, (int)slen, (const unsigned char *)plain,
		 strlen(plain), mac, &maclen) == NULL ||
	    maclen * 2 != TEAMKEY_HASH_HEX) {
		OPENSSL_cleanse(mac, sizeof(mac));
		return false;
	}
	orgw_hex(mac, maclen, hex);
	OPENSSL_cleanse(mac, sizeof(mac));
	return true;
}

bool
teamkey_hash_eq(const char *a, const char *b)
{
	/* The lengths are no secret (every hash has 64 digits); the digits
	 * are compared in constant time. */
	return a != NULL && b != NULL &&
	       strnlen(a, TEAMKEY_HASH_HEX + 1) == TEAMKEY_HASH_HEX &&
	       strnlen(b, TEAMKEY_HASH_HEX + 1) == TEAMKEY_HASH_HEX &&
	       CRYPTO_memcmp(a, b, TEAMKEY_HASH_HEX) == 0;
}

/* True for the characters of base64url (RFC 4648 section 5). */
static bool
b64url_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool
teamkey_plain_shape(const char *plain)
{
	size_t i, pl = strlen(TEAMKEY_PREFIX);

	if (plain == NULL || strncmp(plain, TEAMKEY_PREFIX, pl) != 0)
		return false;
	for (i = 0; i < TK_PLAIN_B64; i++)
		if (!b64url_char(plain[pl + i]))
			return false;
	return plain[pl + TK_PLAIN_B64] == '\0';
}

void
teamkey_plain_make(const unsigned char rnd[32], char plain[TEAMKEY_PLAIN_MAX])
{
	/* EVP_EncodeBlock writes standard base64 with padding: 44
	 * characters and a NUL for 32 bytes; base64url is the same with
	 * "+/" as "-_" and no '=' (RFC 4648 section 5). */
	unsigned char b64[4 * ((32 + 2) / 3) + 1];
	size_t pl = strlen(TEAMKEY_PREFIX), i;

	(void)EVP_EncodeBlock(b64, rnd, 32);
	memcpy(plain, TEAMKEY_PREFIX, pl);
	for (i = 0; i < TK_PLAIN_B64; i++)
		plain[pl + i] = b64[i] == '+' ? '-' :
				b64[i] == '/' ? '_' : (char)b64[i];
	plain[pl + TK_PLAIN_B64] = '\0';
	OPENSSL_cleanse(b64, sizeof(b64));
}

void
teamkey_day(int64_t now_s, char day[11])
{
	record_day(now_s, day);
}

void
teamkey_month(int64_t now_s, char month[8])
{
	char day[11];

	record_day(now_s, day);
	memcpy(month, day, 7);
	month[7] = '\0';
}

/* ---- the checks ---- */

const char *
teamkey_verdict_name(enum teamkey_verdict v)
{
	switch (v) {
	case TK_OK:
		return "ok";
	case TK_UNKNOWN:
		return "unknown";
	case TK_MODEL:
		return "model";
	case TK_BUDGET:
		return "budget";
	case TK_RPM:
		return "rpm";
	case TK_CONCURRENT:
		return "concurrent";
	case TK_UNAVAILABLE:
		return "unavailable";
	}
	return "unknown";
}

enum ledger_ix
teamkey_refused_ix(enum teamkey_verdict v)
{
	switch (v) {
	case TK_MODEL:
		return LX_REFUSED_MODEL;
	case TK_BUDGET:
		return LX_REFUSED_BUDGET;
	case TK_RPM:
		return LX_REFUSED_RPM;
	case TK_CONCURRENT:
		return LX_REFUSED_CONCURRENT;
	case TK_OK:
	case TK_UNKNOWN:
	case TK_UNAVAILABLE:
		break;
	}
	return LX_N;
}

enum teamkey_verdict
teamkey_check_key(const struct teamkey *k, int64_t now_s, const char *model,
		  const char *const *models, size_t n_models)
{
	size_t i;

	if (strcmp(teamkey_state(k, now_s), "active") != 0)
		return TK_UNKNOWN;
	if (model != NULL && !teamkey_model_ok(k, model))
		return TK_MODEL;
	for (i = 0; i < n_models; i++)
		if (!teamkey_model_ok(k, models[i]))
			return TK_MODEL;
	return TK_OK;
}

const char *
teamkey_state(const struct teamkey *k, int64_t now_s)
{
	if (k->disabled)
		return "disabled";
	if (k->expires != 0 && now_s >= k->expires)
		return "expired";
	return "active";
}

/* True when spend has reached budget (0: none).  NaN or inf spend is
 * over: a spend that cannot be read must not reopen a spent budget. */
static bool
over(double spend, double budget)
{
	return budget > 0 && !(spend < budget);
}

enum teamkey_verdict
teamkey_check_budget(const struct teamkey *k, const struct ledger_cell *day,
		     const struct ledger_cell *month)
{
	if (over(day ? day->v[LX_KEY_SPEND] : 0, k->budget_day_usd) ||
	    over(month ? month->v[LX_KEY_SPEND] : 0, k->budget_month_usd))
		return TK_BUDGET;
	return TK_OK;
}
