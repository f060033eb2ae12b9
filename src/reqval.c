/*
 * reqval.c - validate an OpenAI chat-completions body and build the body
 * forwarded to OpenRouter.
 *
 * The client's document goes upstream whole: OpenRouter accepts many
 * fields the gateway has no business checking (tools, reasoning, plugins,
 * ..., OPENROUTER.md section 5), so only what orgw itself relies on is
 * validated here.  cJSON's nesting limit (1000) bounds recursion.
 *
 * The body is parsed and checked whole, but the tree holds only the root
 * members orgw reads (read_keys), and "messages" (a long conversation is
 * most of the body) as an empty array node: enough for its type and for
 * dup_key().  Most requests go upstream as the client's own bytes
 * (splice_pin()); only a body that must be printed is parsed again into
 * the whole tree, once, the first time reqval_forward() prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonin.h"
#include "jsonout.h"
#include "reqval.h"

bool
reqval_model_ok(const char *id)
{
	size_t i, n = strlen(id);

	if (n == 0 || n >= ORGW_MODEL_MAX || id[0] == '/' ||
	    strstr(id, "..") != NULL)
		return false;
	for (i = 0; i < n; i++) {
		char c = id[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("._:/@+~-", c) != NULL)
			continue;
		return false;
	}
	return true;
}

static enum orgw_err
fail(char *err, size_t errlen, const char **param, const char *p,
     const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	if (param)
		*param = p;
	return ORGW_EINVAL;
}

/*
 * The first key orgw reads or rewrites that appears more than once in
 * root, or NULL.  cJSON finds the first copy while OpenRouter (JavaScript
 * JSON.parse) keeps the last, so a duplicate would let what orgw checked
 * ("max_tokens" under the clamp, "stream", "model") differ from what is
 * used upstream (RFC 7493 section 2.3: names must be unique).  Static.
 */
static const char *
dup_key(const cJSON *root)
{
	static const char *const keys[] = {"model", "messages", "stream",
					   "max_tokens",
					   "max_completion_tokens",
					   "provider"};
	const cJSON *it;
	size_t k;
	int n;

	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		n = 0;
		cJSON_ArrayForEach(it, root)
		{
			if (it->string != NULL &&
			    strcmp(it->string, keys[k]) == 0 && ++n > 1)
				return keys[k];
		}
	}
	return NULL;
}

/* The root members reqval reads, built in full (dup_key() checks them
 * all), and the one it only needs the type of. */
static const char *const read_keys[] = {"model", "stream", "max_tokens",
					"max_completion_tokens", "provider",
					NULL};
static const char *const shallow_keys[] = {"messages", NULL};

enum orgw_err
reqval_parse(const char *body, size_t len, const char *default_model,
	     struct chat_req *r, char *err, size_t errlen, const char **param)
{
	static const char *const limits[] = {"max_tokens",
					     "max_completion_tokens"};
	cJSON *root, *m, *msgs, *st, *mt;
	const char *model, *dup;
	size_t k;

	memset(r, 0, sizeof(*r));
	r->body = body;
	r->body_len = len;
	r->verbatim = -1;
	if (param)
		*param = NULL;
	if (len == 0)
		return fail(err, errlen, param, NULL,
			    "request body is empty; expected a JSON object");
	/* len + 1: as cJSON_ParseWithLengthOpts with
	 * require_null_terminated, the length counts the NUL.  Refuses
	 * what cJSON would, whatever the members left out hold. */
	root = jsonin_parse_top(body, len + 1, read_keys, shallow_keys, true);
	if (root == NULL)
		return fail(err, errlen, param, NULL,
			    "request body is not valid JSON");
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return fail(err, errlen, param, NULL,
			    "request body must be a JSON object");
	}
	r->root = root;
	if ((dup = dup_key(root)) != NULL) {
		reqval_free(r);
		return fail(err, errlen, param, dup,
			    "a field orgw reads appears more than once");
	}
	msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
	if (!cJSON_IsArray(msgs)) {
		reqval_free(r);
		return fail(err, errlen, param, "messages",
			    msgs ? "'messages' must be an array" :
				   "'messages' is required");
	}
	m = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (m != NULL && !cJSON_IsNull(m)) {
		if (!cJSON_IsString(m)) {
			reqval_free(r);
			return fail(err, errlen, param, "model",
				    "'model' must be a string");
		}
		model = m->valuestring;
	} else if (default_model != NULL) {
		model = default_model;
	} else {
		reqval_free(r);
		return fail(err, errlen, param, "model",
			    "'model' is required");
	}
	if (!reqval_model_ok(model)) {
		reqval_free(r);
		return fail(err, errlen, param, "model",
			    "'model' is not a valid model id");
	}
	snprintf(r->model, sizeof(r->model), "%s", model);
	st = cJSON_GetObjectItemCaseSensitive(root, "stream");
	if (st != NULL && !cJSON_IsNull(st) && !cJSON_IsBool(st)) {
		reqval_free(r);
		return fail(err, errlen, param, "stream",
			    "'stream' must be a boolean");
	}
	r->stream = cJSON_IsTrue(st);
	/* Both are checked: both are clamped in reqval_forward(). */
	for (k = 0; k < 2; k++) {
		mt = cJSON_GetObjectItemCaseSensitive(root, limits[k]);
		if (mt != NULL && !cJSON_IsNull(mt) &&
		    (!cJSON_IsNumber(mt) || mt->valuedouble < 1)) {
			reqval_free(r);
			return fail(err, errlen, param, limits[k],
				    k == 0 ? "'max_tokens' must be a positive "
					     "integer" :
					     "'max_completion_tokens' must be a "
					     "positive integer");
		}
	}
	/* "provider": null is no routing wish: orgw pins as usual (and
	 * reqval_forward drops the null). */
	{
		cJSON *pv = cJSON_GetObjectItemCaseSensitive(root, "provider");
		if (pv != NULL && !cJSON_IsNull(pv) && !cJSON_IsObject(pv)) {
			reqval_free(r);
			return fail(err, errlen, param, "provider",
				    "'provider' must be an object");
		}
		r->has_provider = cJSON_IsObject(pv);
	}
	return ORGW_OK;
}

/* True when the number at key would be clamped to max_out. */
static bool
over(const cJSON *root, const char *key, int64_t max_out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);

	return max_out > 0 && cJSON_IsNumber(it) &&
	       it->valuedouble > (double)max_out;
}

/* Clamps the number at key to max_out when it is larger. */
static void
clamp(cJSON *root, const char *key, int64_t max_out)
{
	if (over(root, key, max_out))
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(root, key),
				     (double)max_out);
}

/* A tag that goes into JSON as it is: no quote, backslash, control or
 * non-ASCII byte (OpenRouter's tags are like "deepinfra/fp8"). */
static bool
plain_tag(const char *t)
{
	for (; *t != '\0'; t++) {
		unsigned char c = (unsigned char)*t;
		if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
			return false;
	}
	return true;
}

/*
 * True when the n bytes at p hold "\u0000" (or a backslash-escaped
 * backslash before "u0000": the cheap test errs toward the printer).
 * cJSON ends a string there, so a model "a/b\u0000X" is checked and
 * routed as "a/b": the bytes would say something else upstream.
 */
static bool
has_nul_escape(const char *p, size_t n)
{
	const char *e = p + n, *q;

	for (q = p; (q = memchr(q, '\\', (size_t)(e - q))) != NULL; q++)
		if (e - q >= 6 && memcmp(q + 1, "u0000", 5) == 0)
			return true;
	return false;
}

/*
 * The client's own object with the pin added before its closing brace,
 * or NULL when the fast way does not apply (*oom false) or memory ran
 * out (*oom true).  It applies when the document was never edited and
 * this call would change nothing but add the pin: the client sent a
 * string model, no "provider" (not even null), nothing to clamp, and
 * the bytes are strict JSON without a \u0000 (a JSON.parse upstream
 * must read what cJSON read here).  Saves printing the whole body per
 * attempt, which for the long prompts prompt caching is about is most of
 * the request.
 */
static char *
splice_pin(struct chat_req *r, const char *pin_tag, int64_t max_out,
	   bool *oom)
{
	static const char pre[] = ",\"provider\":{\"order\":[\"";
	static const char post[] = "\"],\"allow_fallbacks\":false}";
	const cJSON *root = r->root;
	const char *open, *close;
	size_t n, tn, len;
	char *out, *o;

	*oom = false;
	if (r->edited || r->has_provider ||
	    cJSON_GetObjectItemCaseSensitive(root, "provider") != NULL ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "model")) ||
	    over(root, "max_tokens", max_out) ||
	    over(root, "max_completion_tokens", max_out) ||
	    (pin_tag != NULL && !plain_tag(pin_tag)))
		return NULL;
	/* The root is an object: its '{' is the first one (only a BOM and
	 * whitespace come before), its '}' the last byte above 0x20. */
	if ((open = memchr(r->body, '{', r->body_len)) == NULL)
		return NULL;
	for (close = r->body + r->body_len;
	     close > open && (unsigned char)close[-1] <= 0x20; close--)
		;
	if (close == open || close[-1] != '}')
		return NULL;
	close--;
	n = (size_t)(close - open);
	if (r->verbatim < 0)
		r->verbatim = jsonin_strict(open, n + 1) &&
			      !has_nul_escape(open, n + 1);
	if (!r->verbatim)
		return NULL;
	tn = pin_tag != NULL ? strlen(pin_tag) : 0;
	len = n + (pin_tag != NULL ? sizeof(pre) - 1 + tn + sizeof(post) - 1 :
				     0) +
	      2;
	if ((out = cJSON_malloc(len)) == NULL) {
		*oom = true;
		return NULL;
	}
	memcpy(out, open, n);
	o = out + n;
	if (pin_tag != NULL) {
		memcpy(o, pre, sizeof(pre) - 1);
		o += sizeof(pre) - 1;
		memcpy(o, pin_tag, tn);
		o += tn;
		memcpy(o, post, sizeof(post) - 1);
		o += sizeof(post) - 1;
	}
	*o++ = '}';
	*o = '\0';
	return out;
}

char *
reqval_forward(struct chat_req *r, const char *pin_tag, int64_t max_out)
{
	cJSON *root, *prov = NULL, *order;
	char *s;
	bool oom;

	if ((s = splice_pin(r, pin_tag, max_out, &oom)) != NULL || oom)
		return s;
	if (!r->edited) {
		/* The first print: swap the partial tree for the whole one.
		 * The same text jsonin took once, so only memory can fail;
		 * r is then left as it was. */
		if ((root = jsonin_parse_ex(r->body, r->body_len + 1, NULL,
					    true)) == NULL)
			return NULL;
		cJSON_Delete(r->root);
		r->root = root;
		r->edited = true;
	}
	root = r->root;

	if (!r->has_provider) {
		cJSON_DeleteItemFromObjectCaseSensitive(root, "provider");
		if (pin_tag != NULL) {
			if ((prov = cJSON_CreateObject()) == NULL ||
			    (order = cJSON_AddArrayToObject(prov, "order")) ==
				    NULL ||
			    !cJSON_AddItemToArray(order,
						  cJSON_CreateString(pin_tag)) ||
			    cJSON_AddFalseToObject(prov, "allow_fallbacks") ==
				    NULL ||
			    !cJSON_AddItemToObject(root, "provider", prov)) {
				cJSON_Delete(prov);
				return NULL;
			}
		}
	}
	clamp(root, "max_tokens", max_out);
	clamp(root, "max_completion_tokens", max_out);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "model");
	if (cJSON_AddStringToObject(root, "model", r->model) == NULL)
		return NULL;
	return jsonout_print(root);
}

void
reqval_free(struct chat_req *r)
{
	if (r == NULL)
		return;
	cJSON_Delete(r->root);
	r->root = NULL;
}
