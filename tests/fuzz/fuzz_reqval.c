/*
 * fuzz_reqval.c - libFuzzer target for reqval.c (docs/style.md
 * section 11: the raw request body).
 *
 * The input is the body, copied with a NUL after it as buf.h guarantees.
 * An odd-sized input is parsed with a default model (TARGET_MODEL naming
 * one model), an even-sized one without; (size / 2) % 3 picks the API
 * whose field names it is read with (chat, Messages, Responses).
 * Invariants (a violation aborts):
 *   - refused: ORGW_EINVAL (or ORGW_ENOMEM), a message, nothing kept
 *     (mem NULL);
 *   - accepted: the model is one reqval_model_ok() accepts;
 *   - reqval_forward(tag, 4096) is a JSON object whose "model" is the
 *     resolved model, whose "provider" is the pin (or the client's own,
 *     untouched) and whose output limits (the API's) are <= 4096, with
 *     an enabled thinking budget below max_tokens; a clamp whose budget
 *     cannot fit (under 1024) leaves the limits as sent;
 *   - a second call with another tag (and no cap) re-pins, a NULL tag
 *     unpins, and the client's provider object survives both;
 *   - every forwarded body holds, in order, exactly the client's
 *     members other than model, provider, max_tokens and
 *     max_completion_tokens, each printing as cJSON's parse of the body
 *     prints it: the whole messages array included;
 *   - and byte for byte: every member reqval does not edit appears in the
 *     forwarded text as the client's own bytes, in order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonscan.h"
#include "api.h"
#include "reqval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CLAMP 4096

static const struct api *api;

static int
count_key(const cJSON *o, const char *k)
{
	const cJSON *it;
	int n = 0;

	cJSON_ArrayForEach(it, o)
	{
		if (it->string != NULL && strcmp(it->string, k) == 0)
			n++;
	}
	return n;
}

static void
check_pin(const cJSON *out, const char *tag)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(out, "provider");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(p, "order");
	const cJSON *t = cJSON_GetArrayItem(o, 0);

	if (count_key(out, "provider") != 1 || cJSON_GetArraySize(o) != 1 ||
	    !cJSON_IsString(t) || strcmp(t->valuestring, tag) != 0 ||
	    !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
		p, "allow_fallbacks")))
		abort();
}

/*
 * True when a and b print the same.  Not cJSON_Compare(): it calls an
 * object with duplicate keys unequal to its own copy.  An allocation
 * failure counts as the same (nothing to check).
 */
static bool
same_printed(const cJSON *a, const cJSON *b)
{
	char *pa = cJSON_PrintUnformatted(a), *pb = cJSON_PrintUnformatted(b);
	bool same = pa == NULL || pb == NULL || strcmp(pa, pb) == 0;

	cJSON_free(pa);
	cJSON_free(pb);
	return same;
}

/* True when k names a member reqval may edit for the API. */
static bool
edited(const char *k)
{
	return k != NULL &&
	       (strcmp(k, "model") == 0 || strcmp(k, "provider") == 0 ||
	        (api->limits[0] && strcmp(k, api->limits[0]) == 0) ||
	        (api->limits[1] && strcmp(k, api->limits[1]) == 0) ||
	        (api->thinking && strcmp(k, "thinking") == 0));
}

/* The next member of o from it on whose key reqval leaves alone. */
static const cJSON *
untouched(const cJSON *it)
{
	for (; it != NULL; it = it->next)
		if (!edited(it->string))
			return it;
	return NULL;
}

/* True when reqval_forward(r, .., clamp) clamps (docs/design.md
 * section 11: not when an enabled thinking budget cannot stay below the
 * clamped max_tokens). */
static bool
clamps(const struct api_req *r, int64_t clamp)
{
	return clamp > 0 &&
	       !(r->budget > 0 && r->limit[0] > (double)clamp &&
	         r->budget >= (double)clamp &&
	         clamp - 1 < REQVAL_THINKING_MIN);
}

/* in and out hold the same untouched members, in order (none of them
 * dropped, added or changed). */
static void
check_others(const cJSON *in, const cJSON *out)
{
	const cJSON *a = untouched(in->child), *b = untouched(out->child);

	for (; a != NULL && b != NULL;
	     a = untouched(a->next), b = untouched(b->next))
		if (strcmp(a->string, b->string) != 0 || !same_printed(a, b))
			abort();
	if (a != NULL || b != NULL)
		abort();
}

/* The first copy of the n bytes at p in a..e, or NULL. */
static const char *
find(const char *a, const char *e, const char *p, size_t n)
{
	for (; (size_t)(e - a) >= n; a++)
		if (memcmp(a, p, n) == 0)
			return a;
	return NULL;
}

/* Every member of r that reqval_forward(.., clamp) leaves alone appears
 * in s as its bytes in r->body, in order. */
static void
check_bytes(const char *s, const struct api_req *r, int64_t clamp)
{
	const struct jsonscan_member *m;
	const char *at = s, *e = s + strlen(s), *f;
	size_t i, n;

	for (i = 0; i < r->n_mem; i++) {
		m = &r->mem[i];
		if ((i == r->at_provider && !r->has_provider) ||
		    (i == r->at_model && !r->has_model) ||
		    (clamps(r, clamp) && i == r->at_limit[0] &&
		     r->limit[0] > (double)clamp) ||
		    (clamps(r, clamp) && i == r->at_limit[1] &&
		     r->limit[1] > (double)clamp) ||
		    (i == r->at_thinking && clamps(r, clamp) &&
		     r->budget >= (double)clamp && r->limit[0] > (double)clamp))
			continue;
		n = m->val_off + m->val_len - m->key_off;
		f = find(at, e, r->body + m->key_off, n);
		if (f == NULL)
			abort();
		at = f + n;
	}
}

/* Parses s and checks what every forwarded body must hold. */
static cJSON *
check_out(const char *s, const struct api_req *r, int64_t clamp)
{
	cJSON *out, *m, *it, *t;
	size_t k;

	if (s == NULL)
		abort();
	check_bytes(s, r, clamp);
	out = cJSON_Parse(s);
	if (!cJSON_IsObject(out))
		abort();
	m = cJSON_GetObjectItemCaseSensitive(out, "model");
	if (count_key(out, "model") != 1 || !cJSON_IsString(m) ||
	    strcmp(m->valuestring, r->model) != 0)
		abort();
	for (k = 0; clamps(r, clamp) && k < 2; k++) {
		if (api->limits[k] == NULL)
			continue;
		it = cJSON_GetObjectItemCaseSensitive(out, api->limits[k]);
		if (cJSON_IsNumber(it) && it->valuedouble > (double)clamp)
			abort();
	}
	/* A budget lowered by the clamp stays below it, never under the
	 * minimum. */
	if (clamps(r, clamp) && r->budget >= (double)clamp &&
	    r->limit[0] > (double)clamp) {
		t = cJSON_GetObjectItemCaseSensitive(out, "thinking");
		it = cJSON_GetObjectItemCaseSensitive(t, "budget_tokens");
		if (!cJSON_IsNumber(it) || it->valuedouble != (double)clamp - 1 ||
		    it->valuedouble < REQVAL_THINKING_MIN)
			abort();
	}
	return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_req r;
	char err[128], *body, *s;
	const char *param = NULL, *def = size % 2 ? "dflt/model-1" : NULL;
	cJSON *out, *in_prov = NULL, *first, *in = NULL, *m;
	enum orgw_err e;

	if ((body = malloc(size + 1)) == NULL)
		return 0;
	if (size)
		memcpy(body, data, size);
	body[size] = '\0';
	err[0] = '\0';
	api = api_get((enum api_id)((size / 2) % 3));
	e = reqval_parse(api, body, size, def, &r, err, sizeof(err), &param);
	if (e != ORGW_OK) {
		if ((e != ORGW_EINVAL && e != ORGW_ENOMEM) || err[0] == '\0' ||
		    r.mem != NULL)
			abort();
		free(body);
		return 0;
	}
	if (!reqval_model_ok(r.model) || r.mem == NULL)
		abort();
	/* What cJSON makes of the body; NULL only when out of memory. */
	if ((in = cJSON_ParseWithLengthOpts(body, size + 1, NULL, 1)) == NULL)
		goto out;
	m = cJSON_GetObjectItemCaseSensitive(in, api->input);
	if (!cJSON_IsArray(m) && !(api->input_string_ok && cJSON_IsString(m)))
		abort();
	if (r.has_provider) {
		first = cJSON_GetObjectItemCaseSensitive(in, "provider");
		if ((in_prov = cJSON_Duplicate(first, 1)) == NULL)
			goto out;
	}

	s = reqval_forward(&r, "deepseek", CLAMP);
	out = check_out(s, &r, CLAMP);
	check_others(in, out);
	if (r.has_provider) {
		if (!same_printed(in_prov, cJSON_GetObjectItemCaseSensitive(
						   out, "provider")))
			abort();
	} else {
		check_pin(out, "deepseek");
	}
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, "deepinfra/fp8", 0);
	out = check_out(s, &r, 0);	/* each call from the client's bytes */
	check_others(in, out);
	if (!r.has_provider)
		check_pin(out, "deepinfra/fp8");
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, NULL, 1);
	out = check_out(s, &r, 1);
	check_others(in, out);
	if (r.has_provider ?
		    !same_printed(in_prov, cJSON_GetObjectItemCaseSensitive(
						   out, "provider")) :
		    count_key(out, "provider") != 0)
		abort();
	cJSON_Delete(out);
	cJSON_free(s);
out:
	cJSON_Delete(in);
	cJSON_Delete(in_prov);
	reqval_free(&r);
	free(body);
	return 0;
}
