/*
 * conv.c - the conversation key of a request (conv.h), pure.
 *
 * Hashing is SHA-256 through libcrypto's EVP interface (already linked
 * for the team keys): the derived key and a key's scoped name must be
 * the same on every host that shares one Redis, and a long key must not
 * collide with another by being cut.
 *
 * The derived key hashes a canonical walk of the JSON values, not their
 * bytes, and leaves every "cache_control" member out: clients move their
 * cache breakpoints from turn to turn (Claude Code marks the last block
 * of the conversation, opencode the last messages), and a marker is not
 * part of what was said.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "conv.h"

enum orgw_err
conv_sha256_hex(const void *p, size_t n, char *hex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	hex[0] = '\0';
	if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32)
		return ORGW_ENOMEM;
	orgw_hex(md, len, hex);
	return ORGW_OK;
}

/* A non-empty string value, or NULL. */
static const char *
str_of(const cJSON *it)
{
	if (!cJSON_IsString(it) || it->valuestring == NULL ||
	    it->valuestring[0] == '\0')
		return NULL;
	return it->valuestring;
}

/* A non-empty header value, or NULL. */
static const char *
hdr(const char *v)
{
	return v != NULL && v[0] != '\0' ? v : NULL;
}

/*
 * Claude Code's metadata.user_id: a JSON string of an object holding
 * "session_id" (2.x), or older releases' "user_<h>_account_<u>_session_<s>".
 * Returns the session id, or NULL when there is none; borrowed from body,
 * or from *own (parsed here; the caller deletes it, NULL or not).
 */
static const char *
claude_user_session(const cJSON *body, cJSON **own)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(body, "metadata");
	const char *uid =
		str_of(cJSON_GetObjectItemCaseSensitive(md, "user_id"));
	const char *s;

	*own = NULL;
	if (!cJSON_IsObject(md) || uid == NULL)
		return NULL;
	if (uid[0] == '{') {
		*own = cJSON_Parse(uid);
		return str_of(cJSON_GetObjectItemCaseSensitive(*own,
							       "session_id"));
	}
	if ((s = strstr(uid, "_session_")) != NULL && s[9] != '\0')
		return s + 9;
	return NULL;
}

/* True when s may be kept as it is: 1..CONV_KEY_MAX bytes of printable
 * ASCII (no control byte, nothing a JSON writer or a log must escape
 * beyond '"' and '\\'). */
static bool
key_plain(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > CONV_KEY_MAX)
		return false;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* Sets k->id from a key the client sent. */
static enum orgw_err
take_key(struct conv_key *k, enum conv_src src, const char *s)
{
	size_t len = strlen(s);

	k->src = src;
	if (key_plain(s, len)) {
		memcpy(k->id, s, len + 1);
		return ORGW_OK;
	}
	return conv_sha256_hex(s, len, k->id);
}

/* Feeds a length-prefixed byte string into the digest. */
static bool
feed(EVP_MD_CTX *c, char tag, const char *p, size_t n)
{
	unsigned char len[8];
	size_t i;

	for (i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)n >> (8 * i));
	return EVP_DigestUpdate(c, &tag, 1) && EVP_DigestUpdate(c, len, 8) &&
	       EVP_DigestUpdate(c, p, n);
}

/*
 * Feeds a canonical form of it (NULL: absent) into the digest, every
 * "cache_control" member left out.  Depth is bounded by cJSON's own
 * nesting limit, so the recursion is too.
 */
static bool
feed_json(EVP_MD_CTX *c, const cJSON *it)
{
	const cJSON *ch;
	char num[32];
	int len;

	if (it == NULL)
		return feed(c, 'a', "", 0);
	if (cJSON_IsString(it))
		return feed(c, 's', it->valuestring,
			    it->valuestring ? strlen(it->valuestring) : 0);
	if (cJSON_IsNumber(it)) {
		len = snprintf(num, sizeof(num), "%.17g", it->valuedouble);
		return len > 0 && (size_t)len < sizeof(num) &&
		       feed(c, 'n', num, (size_t)len);
	}
	if (cJSON_IsBool(it))
		return feed(c, cJSON_IsTrue(it) ? 't' : 'f', "", 0);
	if (cJSON_IsArray(it) || cJSON_IsObject(it)) {
		if (!feed(c, cJSON_IsArray(it) ? '[' : '{', "", 0))
			return false;
		cJSON_ArrayForEach(ch, it)
		{
			if (cJSON_IsObject(it) && ch->string != NULL &&
			    strcmp(ch->string, "cache_control") == 0)
				continue;
			if (cJSON_IsObject(it) &&
			    !feed(c, 'k', ch->string ? ch->string : "",
				  ch->string ? strlen(ch->string) : 0))
				return false;
			if (!feed_json(c, ch))
				return false;
		}
		return feed(c, ']', "", 0);
	}
	return feed(c, 'z', "", 0);
}

/* True for a message or input item in the system slot of the key. */
static bool
is_system(const cJSON *m)
{
	const char *role =
		str_of(cJSON_GetObjectItemCaseSensitive(m, "role"));

	return role != NULL &&
	       (strcmp(role, "system") == 0 || strcmp(role, "developer") == 0);
}

/*
 * The opening of a conversation: *sys the first system/developer content
 * (Messages' "system", Responses' "instructions", or the first
 * system/developer message or input item), *first the first other
 * message or input item.  Either may be NULL.  Borrowed from body.
 */
static void
opening(const cJSON *body, const cJSON **sys, const cJSON **first)
{
	const cJSON *list, *m;

	*sys = cJSON_GetObjectItemCaseSensitive(body, "system");
	if (*sys == NULL)
		*sys = cJSON_GetObjectItemCaseSensitive(body, "instructions");
	if (cJSON_IsNull(*sys))
		*sys = NULL;
	*first = NULL;
	list = cJSON_GetObjectItemCaseSensitive(body, "messages");
	if (!cJSON_IsArray(list))
		list = cJSON_GetObjectItemCaseSensitive(body, "input");
	if (cJSON_IsString(list)) {	/* Responses: the input is one text */
		*first = list;
		return;
	}
	if (!cJSON_IsArray(list))
		return;
	cJSON_ArrayForEach(m, list)
	{
		if (is_system(m)) {
			if (*sys == NULL)
				*sys = cJSON_GetObjectItemCaseSensitive(
					m, "content");
		} else if (*first == NULL) {
			*first = m;
		}
		if (*sys != NULL && *first != NULL)
			break;
	}
}

/* k->id = "h:" and the hash of the model and the opening. */
static enum orgw_err
derive(const cJSON *body, const char *model, struct conv_key *k)
{
	const cJSON *sys, *first;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *c;
	enum orgw_err e = ORGW_ENOMEM;

	opening(body, &sys, &first);
	if ((c = EVP_MD_CTX_new()) == NULL)
		goto out;
	if (!EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
	    !feed(c, 'm', model, strlen(model)) || !feed_json(c, sys) ||
	    !feed_json(c, first) || !EVP_DigestFinal_ex(c, md, &len) ||
	    len != 32)
		goto out;
	k->src = CONV_SRC_DERIVED;
	k->id[0] = 'h';
	k->id[1] = ':';
	orgw_hex(md, len, k->id + 2);
	e = ORGW_OK;
out:
	EVP_MD_CTX_free(c);
	return e;
}

enum orgw_err
conv_key_of(const cJSON *body, const struct conv_headers *h,
	    const char *scope, const char *model, struct conv_key *k)
{
	static const struct conv_headers none;
	cJSON *own = NULL;
	const char *s;
	enum orgw_err e;
	EVP_MD_CTX *c = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	memset(k, 0, sizeof(*k));
	if (!cJSON_IsObject(body) || scope == NULL || model == NULL)
		return ORGW_EINVAL;
	if (h == NULL)
		h = &none;
	if ((s = str_of(cJSON_GetObjectItemCaseSensitive(body,
							 "session_id"))))
		e = take_key(k, CONV_SRC_BODY, s);
	else if ((s = hdr(h->x_session_id)) != NULL)
		e = take_key(k, CONV_SRC_HEADER, s);
	else if ((s = hdr(h->claude_session_id)) != NULL)
		e = take_key(k, CONV_SRC_CLAUDE, s);
	else if ((s = claude_user_session(body, &own)) != NULL)
		e = take_key(k, CONV_SRC_CLAUDE, s);
	else if ((s = hdr(h->session_id)) != NULL ||
		 (s = str_of(cJSON_GetObjectItemCaseSensitive(
			  body, "prompt_cache_key"))) != NULL)
		e = take_key(k, CONV_SRC_CODEX, s);
	else
		e = derive(body, model, k);
	if (e != ORGW_OK)
		goto out;
	/* The scoped name: the same id under two client keys or two
	 * models is two conversations. */
	e = ORGW_ENOMEM;
	if ((c = EVP_MD_CTX_new()) == NULL ||
	    !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
	    !feed(c, 'c', scope, strlen(scope)) ||
	    !feed(c, 'm', model, strlen(model)) ||
	    !feed(c, 'i', k->id, strlen(k->id)) ||
	    !EVP_DigestFinal_ex(c, md, &len) || len != 32)
		goto out;
	orgw_hex(md, len, k->hash);
	e = ORGW_OK;
out:
	EVP_MD_CTX_free(c);
	cJSON_Delete(own);
	if (e != ORGW_OK)
		memset(k, 0, sizeof(*k));
	return e;
}

const char *
conv_src_name(enum conv_src src)
{
	switch (src) {
	case CONV_SRC_BODY:
		return "session_id";
	case CONV_SRC_HEADER:
		return "x-session-id";
	case CONV_SRC_CLAUDE:
		return "claude-code";
	case CONV_SRC_CODEX:
		return "codex";
	case CONV_SRC_DERIVED:
		return "derived";
	}
	return "derived";
}

void
conv_show(const struct conv_key *k, char *dst, size_t n)
{
	/* "h:" and 10 hex digits is 12 characters too. */
	snprintf(dst, n, "%.12s", k->id);
}

const char *
conv_forward_session(const struct conv_key *k)
{
	if (k->src == CONV_SRC_HEADER || k->src == CONV_SRC_CLAUDE ||
	    k->src == CONV_SRC_CODEX)
		return k->id;
	return NULL;
}
