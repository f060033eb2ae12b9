/*
 * mask.c - keeps the upstream key out of what orgw relays (SPEC 3).  An
 * upstream that quotes the key back ("Incorrect API key provided:
 * sk-...") must not hand it to the client, on any path: chat (bodies,
 * stream events, messages orgw decodes and re-sends) and GET /v1/models
 * (answers and its cache).  Pure: no I/O.
 */
#include <string.h>

#include "mask.h"

void
mask_key(const char *key, char *p, size_t n)
{
	size_t kl = key != NULL ? strlen(key) : 0, i = 0;
	char *q;

	if (kl == 0 || p == NULL)
		return;
	/* memchr finds the candidates (word at a time), memcmp checks. */
	while (i + kl <= n && (q = memchr(p + i, key[0], n - i)) != NULL) {
		i = (size_t)(q - p);
		if (i + kl > n)
			break;
		if (memcmp(q, key, kl) == 0) {
			memset(q, '*', kl);
			i += kl;
		} else {
			i++;
		}
	}
}

void
mask_key_str(const char *key, char *s)
{
	if (s != NULL)
		mask_key(key, s, strlen(s));
}
