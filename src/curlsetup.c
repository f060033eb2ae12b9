/*
 * curlsetup.c - the libcurl set-up shared by upstream.c and fetchmany.c.
 *
 * Ownership: curlsetup_headers() returns a list its caller owns;
 * curlsetup_easy() keeps nothing (libcurl borrows the list and the
 * error buffer for as long as they stay set on the handle);
 * curlsetup_ca_file() borrows its path for the life of the process.
 */
#include <sys/stat.h>

#include <string.h>

#include "buf.h"
#include "curlsetup.h"

/* Written once at start-up, before any thread; read-only afterwards. */
static const char *cs_ca_file;
static bool cs_ca_is_dir;

void
curlsetup_ca_file(const char *path)
{
	struct stat st;

	cs_ca_file = path;
	cs_ca_is_dir = path != NULL && stat(path, &st) == 0 &&
		       S_ISDIR(st.st_mode);
}

struct curl_slist *
curlsetup_headers(const char *key, const char *const *extra)
{
	static const char *const fixed[] = {
		/* OpenRouter's app attribution (docs/upstream.md section 7). */
		"HTTP-Referer: https://github.com/orgw",
		"X-OpenRouter-Title: orgw",
	};
	struct curl_slist *h = NULL, *t;
	struct buf auth = {0};
	size_t i;

	if (buf_adds(&auth, "Authorization: Bearer ") != ORGW_OK ||
	    buf_adds(&auth, key != NULL ? key : "") != ORGW_OK) {
		if (auth.p != NULL)
			memset(auth.p, 0, auth.len);
		buf_free(&auth);
		return NULL;
	}
	/* The slist holds its own copy; wipe ours of the key. */
	h = curl_slist_append(NULL, auth.p);
	memset(auth.p, 0, auth.len);
	buf_free(&auth);
	if (h == NULL)
		return NULL;
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if ((t = curl_slist_append(h, fixed[i])) == NULL)
			goto fail;
		h = t;
	}
	for (i = 0; extra != NULL && extra[i] != NULL; i++) {
		if ((t = curl_slist_append(h, extra[i])) == NULL)
			goto fail;
		h = t;
	}
	return h;
fail:
	curl_slist_free_all(h);
	return NULL;
}

bool
curlsetup_easy(CURL *e, struct curl_slist *headers,
	       int64_t connect_timeout_ms, int64_t total_timeout_ms,
	       char *errbuf)
{
	return curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	       curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK &&
	       curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") == CURLE_OK &&
	       /* Never follow a redirect: it would carry the key along. */
	       curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
	       curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") ==
		       CURLE_OK &&
	       curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) == CURLE_OK &&
	       (cs_ca_file == NULL || !cs_ca_is_dir ||
		/* a directory only: no default bundle read besides */
		(curl_easy_setopt(e, CURLOPT_CAINFO, NULL) == CURLE_OK &&
		 curl_easy_setopt(e, CURLOPT_CAPATH, cs_ca_file) ==
			 CURLE_OK)) &&
	       (cs_ca_file == NULL || cs_ca_is_dir ||
		curl_easy_setopt(e, CURLOPT_CAINFO, cs_ca_file) == CURLE_OK) &&
	       curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
				(long)connect_timeout_ms) == CURLE_OK &&
	       curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
				(long)total_timeout_ms) == CURLE_OK &&
	       curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf) == CURLE_OK;
}
