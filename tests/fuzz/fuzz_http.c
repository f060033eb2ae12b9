/*
 * fuzz_http.c - libFuzzer target for the request-variable side of http.c
 * and for log_safe() (docs/style.md section 11: the request's CGI
 * variables).
 *
 * The input is split at NUL bytes into up to seven CGI variables
 * (REQUEST_METHOD, PATH_INFO, REQUEST_URI, SCRIPT_NAME, HTTP_AUTHORIZATION,
 * CONTENT_LENGTH, CONTENT_TYPE; an empty piece means "unset"), loaded with
 * http_env_load() through a fake getparam, then:
 *   - http_route_path() into buffers of 0, 1, 8 and 2048 bytes: the result
 *     is NUL-terminated inside the buffer, is a prefix-free copy of the
 *     path (never longer than n - 1), and "/api/v1/x" maps to "/v1/x";
 *   - http_auth_ok() against a fixed key and against the token itself:
 *     a header equal to "Bearer <key>" must pass, any other must not
 *     (checked against a plain reference comparison);
 *   - log_safe() into buffers of 1, 5 and 512 bytes: the output holds only
 *     printable ASCII and no raw '"' (so a hostile value can never forge or
 *     split a log line), and fits.
 * A broken invariant aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NVARS 7

static const char *const var_names[NVARS] = {
	"REQUEST_METHOD", "PATH_INFO",		"REQUEST_URI",	  "SCRIPT_NAME",
	"HTTP_AUTHORIZATION", "CONTENT_LENGTH", "CONTENT_TYPE",
};

struct fake_env {
	const char *v[NVARS];	/* NULL = unset */
};

static void
check_route(const struct orgw_env *e)
{
	static const size_t sizes[] = {1, 8, 2048};
	const char *src = e->path_info != NULL && e->path_info[0] != '\0' ?
				  e->path_info :
				  e->request_uri;
	char dst[2048];
	size_t k, len;

	http_route_path(e, dst, 0);	/* must not write */
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		memset(dst, 'X', sizeof(dst));
		http_route_path(e, dst, sizes[k]);
		if (memchr(dst, '\0', sizes[k]) == NULL)
			abort();
		len = strlen(dst);
		if (len >= sizes[k])
			abort();
		/* What is left is a piece of the path it came from (one
		 * leading "/api" and one "/v1" dropped, a query cut), or "/"
		 * for a bare "/api/v1" or "/v1".  ("/api/v1/api/v1" leaves
		 * "/api/v1": only one of each is dropped.) */
		if (len > 0 && strcmp(dst, "/") != 0 &&
		    strstr(src != NULL ? src : "", dst) == NULL)
			abort();
	}
}

/* The reference: header is "Bearer" (any case) + spaces + exactly key. */
static bool
auth_ref(const char *h, const char *key)
{
	if (h == NULL || key == NULL || key[0] == '\0' ||
	    strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	while (*h == ' ')
		h++;
	return strcmp(h, key) == 0;
}

static void
check_auth(const struct orgw_env *e)
{
	static const char key[] = "client-test-key";
	const char *h = e->authorization, *tok;

	if (http_auth_ok(h, key) != auth_ref(h, key))
		abort();
	if (http_auth_ok(h, "") || http_auth_ok(h, NULL) ||
	    http_auth_ok(NULL, key))
		abort();
	/* The token itself as the key: passes exactly when the reference
	 * says so (tokens with NULs cannot occur: they ended the piece). */
	if (h != NULL && strncasecmp(h, "Bearer ", 7) == 0) {
		tok = h + 7;
		while (*tok == ' ')
			tok++;
		if (http_auth_ok(h, tok) != (tok[0] != '\0'))
			abort();
	}
}

static void
check_log_safe(const char *s)
{
	static const size_t sizes[] = {1, 5, 512};
	char dst[512];
	size_t k, i, len;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		memset(dst, 'X', sizeof(dst));
		log_safe(dst, sizes[k], s);
		if (memchr(dst, '\0', sizes[k]) == NULL)
			abort();
		len = strlen(dst);
		for (i = 0; i < len; i++) {
			unsigned char c = (unsigned char)dst[i];
			if (c < 0x20 || c >= 0x7f || c == '"')
				abort();
			/* A backslash only starts an escape "\xHH". */
			if (c == '\\' && (i + 3 >= len ||
					  dst[i + 1] != 'x'))
				abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake_env fe;
	struct orgw_env e;
	char *copy, *p, *end, *envp[NVARS + 1];
	size_t i, n;

	/* A private NUL-terminated copy, cut into pieces at NUL bytes. */
	if ((copy = malloc(size + 1)) == NULL)
		return 0;
	if (size > 0)
		memcpy(copy, data, size);
	copy[size] = '\0';
	memset(&fe, 0, sizeof(fe));
	p = copy;
	end = copy + size;
	for (i = 0; i < NVARS && p <= end; i++) {
		fe.v[i] = *p != '\0' ? p : NULL;
		p += strlen(p) + 1;
	}
	/* The pieces as the environment a web server hands over. */
	memset(envp, 0, sizeof(envp));
	for (i = 0, n = 0; i < NVARS; i++) {
		size_t nl = strlen(var_names[i]), vl;

		if (fe.v[i] == NULL)
			continue;
		vl = strlen(fe.v[i]);
		if ((envp[n] = malloc(nl + vl + 2)) == NULL)
			goto out;
		memcpy(envp[n], var_names[i], nl);
		envp[n][nl] = '=';
		memcpy(envp[n] + nl + 1, fe.v[i], vl + 1);
		n++;
	}
	if (http_env_load(&e, envp) != ORGW_OK)
		goto out;
	for (i = 0; i < NVARS; i++) {
		const char *const *slot[NVARS] = {
			(const char *const *)&e.method,
			(const char *const *)&e.path_info,
			(const char *const *)&e.request_uri,
			(const char *const *)&e.script_name,
			(const char *const *)&e.authorization,
			(const char *const *)&e.content_length,
			(const char *const *)&e.content_type,
		};
		const char *got = *slot[i];
		if ((got == NULL) != (fe.v[i] == NULL) ||
		    (got != NULL && (got == fe.v[i] || strcmp(got, fe.v[i]))))
			abort();	/* must be a copy, equal */
	}
	check_route(&e);
	check_auth(&e);
	for (i = 0; i < NVARS; i++)
		check_log_safe(fe.v[i]);
	check_log_safe(copy);
	http_env_free(&e);
	http_env_free(&e);	/* twice: the second is a no-op */
out:
	for (i = 0; envp[i] != NULL; i++)
		free(envp[i]);
	free(copy);
	return 0;
}
