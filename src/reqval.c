/*
 * reqval.c - validate a generation request body (chat completions,
 * Messages or Responses: the field names are the API's, api.h) and build
 * the body forwarded to OpenRouter.
 *
 * The client's document goes upstream whole: OpenRouter accepts many
 * fields the gateway has no business checking (tools, reasoning, plugins,
 * ..., docs/upstream.md sections 5, 13, 14), so only what orgw itself relies on is
 * validated here.  cJSON parses the body and gives every value orgw
 * reads; its nesting limit (1000) bounds recursion.  The body sent
 * upstream is not cJSON's reprint, which would cut strings at \u0000 and
 * round integers above 2^53: it is the client's members, byte for byte,
 * found by jsonscan.c, with the few orgw must change replaced, dropped
 * or added (reqval_forward).  JSON that cJSON takes and a JavaScript
 * JSON.parse would not ("01", control bytes) goes as sent: OpenRouter's
 * answer is then the client's answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "jsonscan.h"
#include "reqval.h"

/* The message of a refusal that is no fault of the client's. */
static const char msg_oom[] = "out of memory";

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

/* The root members orgw reads.  Each may appear once: cJSON reads the
 * first copy while OpenRouter (JavaScript JSON.parse) keeps the last, so
 * a duplicate would let what orgw checked ("max_tokens" under the clamp,
 * "stream", "model") differ from what is used upstream (RFC 7493
 * section 2.3: names must be unique).  Their names are the API's (api.h): a
 * NULL name is a member this API does not have. */
enum { K_MODEL, K_MODELS, K_INPUT, K_STREAM, K_LIMIT0, K_LIMIT1,
       K_PROVIDER, K_THINKING, K_N };

static void
key_names(const struct api *a, const char *keys[K_N])
{
	keys[K_MODEL] = "model";
	/* OpenRouter's fallback list, on all three APIs (OpenRouter's API
	 * reference: ChatRequest, MessagesRequest, ResponsesRequest): with
	 * "model" the only members that choose a model. */
	keys[K_MODELS] = "models";
	keys[K_INPUT] = a->input;
	keys[K_STREAM] = "stream";
	keys[K_LIMIT0] = a->limits[0];
	keys[K_LIMIT1] = a->limits[1];
	keys[K_PROVIDER] = "provider";
	keys[K_THINKING] = a->thinking ? "thinking" : NULL;
}

/*
 * Fills r->mem with the members of root's object in body, one per child
 * of root, and finds the ones orgw reads (v[k], r->at_*: index or
 * r->n_mem).  Returns NULL, or the message for the client (*p the key).
 */
static const char *
find_members(struct api_req *r, const cJSON *root, const char *const *keys,
	     const cJSON **v, const char **p)
{
	const struct jsonscan_member *m;
	struct jsonscan_member extra;
	struct jsonscan s;
	const cJSON *it;
	size_t at[K_N], i, k;

	for (k = 0; k < K_N; k++)
		at[k] = r->n_mem;
	if (!jsonscan_begin(&s, r->body, r->body_len))
		return "request body could not be read";
	for (it = root->child, i = 0; it != NULL; it = it->next, i++) {
		if (i >= r->n_mem || !jsonscan_next(&s, &r->mem[i]))
			return "request body could not be read";
		m = &r->mem[i];
		/* cJSON ends a key at a NUL, JSON.parse does not: the two
		 * would disagree on which member this is. */
		if (jsonscan_has_nul(r->body + m->key_off, m->key_len))
			return "a top-level key holds \\u0000";
		if (strcmp(it->string, "session_id") == 0)
			r->has_session = true;
		for (k = 0; k < K_N; k++) {
			if (keys[k] == NULL || strcmp(it->string, keys[k]) != 0)
				continue;
			if (v[k] != NULL) {
				*p = keys[k];
				return "a field orgw reads appears more than "
				       "once";
			}
			v[k] = it;
			at[k] = i;
		}
	}
	/* The scanner and cJSON must see the same members. */
	if (i != r->n_mem || jsonscan_next(&s, &extra))
		return "request body could not be read";
	r->at_model = at[K_MODEL];
	r->at_models = at[K_MODELS];
	r->at_provider = at[K_PROVIDER];
	r->at_limit[0] = at[K_LIMIT0];
	r->at_limit[1] = at[K_LIMIT1];
	r->at_thinking = at[K_THINKING];
	r->at_input = at[K_INPUT];
	return NULL;
}

/* An enabled extended thinking's budget (docs/upstream.md 13: thinking
 * {type: "enabled", budget_tokens}), else 0.  What else thinking holds
 * is OpenRouter's to check. */
static double
thinking_budget(const cJSON *t)
{
	const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "type");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(t, "budget_tokens");

	if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "enabled") != 0 ||
	    !cJSON_IsNumber(b) || !(b->valuedouble >= 1))
		return 0;
	return b->valuedouble;
}

/*
 * Keeps the ids of "models" (m, NULL when absent) in r: null is none, an
 * array must hold only valid model ids, none cut by cJSON at a \u0000
 * (the upstream reads it whole).  Returns NULL, or the message.
 */
static const char *
check_models(struct api_req *r, const cJSON *m)
{
	static const char bad[] = "'models' must be an array of model ids";
	const struct jsonscan_member *mm;
	const cJSON *e;
	cJSON *doc;
	size_t n;

	if (m == NULL || cJSON_IsNull(m))
		return NULL;
	if (!cJSON_IsArray(m))
		return bad;
	mm = &r->mem[r->at_models];
	if (jsonscan_has_nul(r->body + mm->val_off, mm->val_len))
		return bad;
	n = (size_t)cJSON_GetArraySize(m);
	cJSON_ArrayForEach(e, m)
		if (!cJSON_IsString(e) || !reqval_model_ok(e->valuestring))
			return bad;
	if (n == 0)
		return NULL;
	/* A copy the request keeps: the parsed body is freed on return. */
	if ((doc = cJSON_Duplicate(m, 1)) == NULL ||
	    (r->models = calloc(n, sizeof(*r->models))) == NULL) {
		cJSON_Delete(doc);
		return msg_oom;
	}
	r->models_doc = doc;
	cJSON_ArrayForEach(e, doc)
		r->models[r->n_models++] = e->valuestring;
	return NULL;
}

/* Checks the members orgw reads (v[k], NULL when absent) and keeps what
 * it needs in r.  Returns NULL, or the message (*p the param), which
 * may be written into msg (n bytes). */
static const char *
check_members(struct api_req *r, const char *const *keys,
	      const cJSON *const *v, const char *default_model,
	      const char **p, char *msg, size_t n)
{
	const struct jsonscan_member *mm;
	const cJSON *m = v[K_MODEL], *st = v[K_STREAM], *pv = v[K_PROVIDER];
	const cJSON *in = v[K_INPUT];
	const char *model, *msg_models;
	size_t k;

	*p = keys[K_INPUT];
	if (!cJSON_IsArray(in) &&
	    !(r->api->input_string_ok && cJSON_IsString(in))) {
		snprintf(msg, n, in == NULL ? "'%s' is required" :
			 r->api->input_string_ok ?
					      "'%s' must be a string or an array" :
					      "'%s' must be an array",
			 keys[K_INPUT]);
		return msg;
	}
	*p = "model";
	if (m != NULL && !cJSON_IsNull(m)) {
		if (!cJSON_IsString(m))
			return "'model' must be a string";
		/* cJSON cut it at the NUL; upstream would read it whole. */
		mm = &r->mem[r->at_model];
		if (jsonscan_has_nul(r->body + mm->val_off, mm->val_len))
			return "'model' is not a valid model id";
		model = m->valuestring;
		r->has_model = true;
	} else if (default_model != NULL) {
		model = default_model;
	} else {
		return "'model' is required";
	}
	if (!reqval_model_ok(model))
		return "'model' is not a valid model id";
	snprintf(r->model, sizeof(r->model), "%s", model);
	*p = "models";
	if ((msg_models = check_models(r, v[K_MODELS])) != NULL)
		return msg_models;
	*p = "stream";
	if (st != NULL && !cJSON_IsNull(st) && !cJSON_IsBool(st))
		return "'stream' must be a boolean";
	r->stream = cJSON_IsTrue(st);
	/* Both are checked: both are clamped in reqval_forward(). */
	for (k = 0; k < 2; k++) {
		const cJSON *mt = v[K_LIMIT0 + k];

		*p = keys[K_LIMIT0 + k];
		if (mt != NULL && !cJSON_IsNull(mt) &&
		    (!cJSON_IsNumber(mt) || mt->valuedouble < 1)) {
			snprintf(msg, n, "'%s' must be a positive integer",
				 keys[K_LIMIT0 + k]);
			return msg;
		}
		r->limit[k] = cJSON_IsNumber(mt) ? mt->valuedouble : 0;
	}
	r->budget = thinking_budget(v[K_THINKING]);
	/* "provider": null is no routing wish: orgw pins as usual (and
	 * reqval_forward drops the null). */
	*p = "provider";
	if (pv != NULL && !cJSON_IsNull(pv) && !cJSON_IsObject(pv))
		return "'provider' must be an object";
	r->has_provider = cJSON_IsObject(pv);
	*p = NULL;
	return NULL;
}

enum orgw_err
reqval_parse(const struct api *api, const char *body, size_t len,
	     const char *default_model, struct api_req *r, char *err,
	     size_t errlen, const char **param)
{
	const cJSON *v[K_N] = {NULL};
	const char *keys[K_N];
	enum orgw_err e = ORGW_EINVAL;
	const char *msg = NULL, *p = NULL;
	char buf[128];
	cJSON *root = NULL;
	int n;

	memset(r, 0, sizeof(*r));
	r->api = api;
	r->body = body;
	r->body_len = len;
	key_names(api, keys);
	if (len == 0) {
		msg = "request body is empty; expected a JSON object";
		goto out;
	}
	/* cJSON takes a NUL byte as whitespace (and inside strings), JSON
	 * never holds one (RFC 8259 sections 2 and 7), and the forwarded
	 * body is a C string. */
	if (memchr(body, '\0', len) != NULL) {
		msg = "request body holds a NUL byte";
		goto out;
	}
	/* docs/style.md 5: with require_null_terminated the length counts the
	 * NUL after the body. */
	root = cJSON_ParseWithLengthOpts(body, len + 1, NULL, 1);
	if (root == NULL) {
		msg = "request body is not valid JSON";
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		msg = "request body must be a JSON object";
		goto out;
	}
	n = cJSON_GetArraySize(root);
	r->n_mem = (size_t)n;
	if ((r->mem = calloc(n > 0 ? (size_t)n : 1, sizeof(*r->mem))) ==
	    NULL) {
		e = ORGW_ENOMEM;
		msg = msg_oom;
		goto out;
	}
	if ((msg = find_members(r, root, keys, v, &p)) == NULL)
		msg = check_members(r, keys, v, default_model, &p, buf,
				    sizeof(buf));
	if (msg == NULL)
		e = ORGW_OK;
	else if (msg == msg_oom)
		e = ORGW_ENOMEM;
out:
	/* Kept for the caller's own reads (the conversation key, the
	 * fingerprints): a large body is parsed once. */
	if (e == ORGW_OK)
		r->tree = root;
	else
		cJSON_Delete(root);
	if (e != ORGW_OK) {
		reqval_free(r);
		snprintf(err, errlen, "%s", msg);
	}
	if (param)
		*param = e == ORGW_OK ? NULL : p;
	return e;
}

void
reqval_alias(struct api_req *r, const char *to)
{
	if (strcmp(r->model, to) == 0)
		return;
	snprintf(r->asked, sizeof(r->asked), "%s", r->model);
	snprintf(r->model, sizeof(r->model), "%s", to);
}

/* Appends the n bytes at p at *o. */
static void
put(char **o, const char *p, size_t n)
{
	memcpy(*o, p, n);
	*o += n;
}

/*
 * The thinking member's value with budget_tokens set to budget (printed
 * by cJSON: a small object of the client's, its numbers small), or
 * NULL when out of memory.  Caller frees with cJSON_free().
 */
static char *
thinking_with(const struct api_req *r, int64_t budget)
{
	const struct jsonscan_member *m = &r->mem[r->at_thinking];
	cJSON *t = cJSON_ParseWithLength(r->body + m->val_off, m->val_len);
	char *s = NULL;

	if (cJSON_IsObject(t) &&
	    cJSON_ReplaceItemInObjectCaseSensitive(
		    t, "budget_tokens", cJSON_CreateNumber((double)budget)))
		s = cJSON_PrintUnformatted(t);
	cJSON_Delete(t);
	return s;
}

char *
reqval_forward(struct api_req *r, const char *pin_tag, int64_t max_out)
{
	return reqval_forward_edit(r, pin_tag, max_out, NULL);
}

char *
reqval_forward_edit(struct api_req *r, const char *pin_tag, int64_t max_out,
		    const struct reqval_edits *ed)
{
	static const struct reqval_edits none;
	const struct jsonscan_member *m;
	cJSON *add = NULL, *prov, *order;
	char *tail = NULL, *out = NULL, *o, num[24], *think = NULL;
	char *model = NULL;
	size_t i, n, cap;
	bool ok, clamp;

	/* The clamp (docs/design.md 4 step 8), and extended thinking's budget, which
	 * must stay below max_tokens (docs/design.md 11): lowered with it, never
	 * under the minimum; a budget that cannot fit leaves the request
	 * as the client sent it, and OpenRouter answers. */
	clamp = max_out > 0;
	if (clamp && r->budget > 0 && r->limit[0] > (double)max_out &&
	    r->budget >= (double)max_out) {
		if (max_out - 1 < REQVAL_THINKING_MIN)
			clamp = false;
		else if ((think = thinking_with(r, max_out - 1)) == NULL)
			goto out;
	}
	/* What goes after the client's members, printed by cJSON: the
	 * model it did not send, the pin. */
	if ((add = cJSON_CreateObject()) == NULL)
		goto out;
	ok = r->has_model ||
	     cJSON_AddStringToObject(add, "model", r->model) != NULL;
	if (ok && !r->has_provider && pin_tag != NULL) {
		prov = cJSON_AddObjectToObject(add, "provider");
		order = prov ? cJSON_AddArrayToObject(prov, "order") : NULL;
		ok = order != NULL &&
		     cJSON_AddItemToArray(order, cJSON_CreateString(pin_tag)) &&
		     cJSON_AddFalseToObject(prov, "allow_fallbacks") != NULL;
	}
	if (ed == NULL)
		ed = &none;
	/* A conversation's edits (convbody.h), after the pin. */
	if (ok && ed->session_id != NULL && !r->has_session)
		ok = cJSON_AddStringToObject(add, "session_id",
					     ed->session_id) != NULL;
	if (ok && ed->cache_control) {
		cJSON *cc = cJSON_AddObjectToObject(add, "cache_control");

		ok = cc != NULL &&
		     cJSON_AddStringToObject(cc, "type", "ephemeral") != NULL;
	}
	/* An alias: the model member the client sent names the target. */
	if (ok && r->has_model && r->asked[0] != '\0') {
		cJSON *ms = cJSON_CreateString(r->model);

		ok = ms != NULL && (model = cJSON_PrintUnformatted(ms)) != NULL;
		cJSON_Delete(ms);
	}
	if (!ok || (tail = cJSON_PrintUnformatted(add)) == NULL)
		goto out;
	snprintf(num, sizeof(num), "%" PRId64, max_out);

	/* Each member at most once, so their bytes add up to at most
	 * body_len, which buf.h caps far below SIZE_MAX; a replaced value
	 * is at most the largest of these. */
	cap = r->body_len + r->n_mem * (1 + sizeof(num)) + strlen(tail) + 3 +
	      (think ? strlen(think) : 0) + (model ? strlen(model) : 0) +
	      (ed->input ? strlen(ed->input) : 0);
	if ((out = cJSON_malloc(cap)) == NULL)
		goto out;
	o = out;
	*o++ = '{';
	for (i = 0; i < r->n_mem; i++) {
		m = &r->mem[i];
		/* A "provider": null or "model": null is dropped; the pin
		 * and the model are added after the last member. */
		if ((i == r->at_provider && !r->has_provider) ||
		    (i == r->at_model && !r->has_model))
			continue;
		if (o > out + 1)
			*o++ = ',';
		n = i == r->at_limit[0] ? 0 : i == r->at_limit[1] ? 1 : 2;
		if (n < 2 && clamp && r->limit[n] > (double)max_out) {
			put(&o, r->body + m->key_off, m->val_off - m->key_off);
			put(&o, num, strlen(num));
		} else if (i == r->at_thinking && think != NULL) {
			put(&o, r->body + m->key_off, m->val_off - m->key_off);
			put(&o, think, strlen(think));
		} else if (i == r->at_model && model != NULL) {
			put(&o, r->body + m->key_off, m->val_off - m->key_off);
			put(&o, model, strlen(model));
		} else if (i == r->at_input && ed->input != NULL) {
			put(&o, r->body + m->key_off, m->val_off - m->key_off);
			put(&o, ed->input, strlen(ed->input));
		} else {
			put(&o, r->body + m->key_off,
			    m->val_off + m->val_len - m->key_off);
		}
	}
	n = strlen(tail);	/* "{...}", or "{}" when nothing is added */
	if (n > 2) {
		if (o > out + 1)
			*o++ = ',';
		put(&o, tail + 1, n - 2);
	}
	*o++ = '}';
	*o = '\0';
out:
	cJSON_free(tail);
	cJSON_free(think);
	cJSON_free(model);
	cJSON_Delete(add);
	return out;
}

bool
reqval_input(const struct api_req *r, const char **p, size_t *n)
{
	if (r->at_input >= r->n_mem)
		return false;
	*p = r->body + r->mem[r->at_input].val_off;
	*n = r->mem[r->at_input].val_len;
	return true;
}

void
reqval_free(struct api_req *r)
{
	if (r == NULL)
		return;
	free(r->mem);
	r->mem = NULL;
	r->n_mem = 0;
	free(r->models);
	r->models = NULL;
	r->n_models = 0;
	cJSON_Delete(r->models_doc);
	r->models_doc = NULL;
	cJSON_Delete(r->tree);
	r->tree = NULL;
}
