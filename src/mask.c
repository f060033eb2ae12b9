/*
 * mask.c - keeps the upstream key out of what orgw relays (SPEC 3).  An
 * upstream that quotes the key back ("Incorrect API key provided:
 * sk-...") must not hand it to the client, on any path: chat (bodies,
 * stream events, messages orgw decodes and re-sends) and GET /v1/models
 * (answers and its cache).  Pure: no I/O.
 */
#define _GNU_SOURCE	/* memmem */
#include <string.h>

#include "mask.h"

void
mask_key(const char *key, char *p, size_t n)
{
	size_t kl = key != NULL ? strlen(key) : 0, i = 0;
	char *q;

	if (kl == 0 || p == NULL)
		return;
	/* memmem, not memchr on the key's first byte: every key begins
	 * "sk-", and a text stops memchr at each of its many s. */
	while (i + kl <= n && (q = memmem(p + i, n - i, key, kl)) != NULL) {
		memset(q, '*', kl);
		i = (size_t)(q - p) + kl;
	}
}

void
mask_key_str(const char *key, char *s)
{
	if (s != NULL)
		mask_key(key, s, strlen(s));
}
