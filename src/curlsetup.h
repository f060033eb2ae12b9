/*
 * curlsetup.h - the libcurl set-up every transfer to OpenRouter shares
 * (the edge; no policy): upstream.c's single reused handle and
 * fetchmany.c's pool both build their request headers and set their
 * common options here, so the two cannot drift apart.
 */
#ifndef ORGW_CURLSETUP_H
#define ORGW_CURLSETUP_H

#include <curl/curl.h>

#include "orgw.h"

/*
 * The request headers of every call: "Authorization: Bearer <key>" (key
 * NULL is sent as empty) and OpenRouter's app attribution
 * (docs/upstream.md section 7), then the lines of extra (NULL-terminated;
 * extra itself may be NULL).  Returns a list the caller frees with
 * curl_slist_free_all(), or NULL when out of memory.  The only copy of
 * the key left is the list's own.
 */
struct curl_slist *curlsetup_headers(const char *key,
				     const char *const *extra);

/*
 * Names the CA bundle every later curlsetup_easy() gives libcurl
 * (UPSTREAM_CA_FILE; NULL: libcurl's built-in default): a PEM file, or a
 * directory of certificates named by subject hash (OpenSSL's CApath
 * layout; only the one a connection needs is read, which saves a plain
 * CGI run ~25 ms over parsing a whole bundle).  Borrowed: path
 * must outlive every transfer (the mains pass their conf's string).  Call
 * once at start-up, before any thread exists; it is only read afterwards.
 */
void curlsetup_ca_file(const char *path);

/*
 * Sets on e the options every transfer to OpenRouter shares: no
 * signals, TCP keep-alive, any content encoding libcurl can decode, no
 * redirects (one would carry the key along), http and https only, the
 * header list (borrowed: it must outlive the transfer), the CA bundle of
 * curlsetup_ca_file() if one was named, the connect and
 * total timeouts (total 0: none), and errbuf (CURL_ERROR_SIZE bytes,
 * borrowed likewise; NULL for none).  Returns false when an option was
 * refused (out of memory).
 */
bool curlsetup_easy(CURL *e, struct curl_slist *headers,
		    int64_t connect_timeout_ms, int64_t total_timeout_ms,
		    char *errbuf);

#endif
