/*
 * convbody.c - a conversation's edits of the upstream body and what it
 * reads in upstream's errors (convbody.h), pure.
 *
 * The reasoning items are left out byte for byte: the kept items are
 * the client's own bytes (jsonscan.h), since cJSON would cut a string at
 * \u0000 and round integers above 2^53 if it printed them again.
 */
#include <stdlib.h>
#include <string.h>

#include "convbody.h"
#include "jsonscan.h"
#include "score.h"

/* True when object o has a breakpoint member. */
static bool
marks(const cJSON *o)
{
	return cJSON_IsObject(o) &&
	       (cJSON_GetObjectItemCaseSensitive(o, "cache_control") != NULL ||
		cJSON_GetObjectItemCaseSensitive(o, "prompt_cache_breakpoint") !=
			NULL);
}

/* True when o or one of the items of its array a marks. */
static bool
any_marks(const cJSON *a)
{
	const cJSON *it;

	if (!cJSON_IsArray(a))
		return false;
	cJSON_ArrayForEach(it, a)
	{
		if (marks(it))
			return true;
	}
	return false;
}

bool
convbody_has_breakpoint(const cJSON *body)
{
	static const char *const lists[] = {"messages", "input"};
	const cJSON *m;
	size_t i;

	if (marks(body) ||
	    any_marks(cJSON_GetObjectItemCaseSensitive(body, "system")) ||
	    any_marks(cJSON_GetObjectItemCaseSensitive(body, "tools")))
		return true;
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(body, lists[i]);

		if (!cJSON_IsArray(l))
			continue;
		cJSON_ArrayForEach(m, l)
		{
			if (marks(m) ||
			    any_marks(cJSON_GetObjectItemCaseSensitive(
				    m, "content")))
				return true;
		}
	}
	return false;
}

static bool
explicit_terms(const struct score_terms *t, bool implicit_cache)
{
	return t->base_kind[SCORE_CACHE_WRITE] == SCORE_PRICE_OK &&
	       !implicit_cache;
}

bool
convbody_explicit_cache(const struct rec_cand *c)
{
	return c != NULL && explicit_terms(&c->terms, c->implicit_cache);
}

bool
convbody_explicit_endpoint(const struct score_endpoint *e)
{
	return e != NULL && explicit_terms(&e->terms, e->implicit_cache);
}

bool
convbody_auto_cache(enum api_id api, bool auto_cache, bool explicit_endpoint,
		    bool has_breakpoint)
{
	return auto_cache && api != API_RESPONSES && explicit_endpoint &&
	       !has_breakpoint;
}

/* A reasoning item bound to the provider that wrote it. */
static bool
bound_reasoning(const cJSON *it)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "type");

	return cJSON_IsString(t) && strcmp(t->valuestring, "reasoning") == 0 &&
	       cJSON_IsString(
		       cJSON_GetObjectItemCaseSensitive(it, "encrypted_content"));
}

size_t
convbody_input_items(const cJSON *input, size_t *first_bound)
{
	const cJSON *it;
	size_t n = 0;

	*first_bound = CONVBODY_ALL;
	if (!cJSON_IsArray(input))
		return 0;
	cJSON_ArrayForEach(it, input)
	{
		if (*first_bound == CONVBODY_ALL && bound_reasoning(it))
			*first_bound = n;
		n++;
	}
	return n;
}

char *
convbody_drop_reasoning(const char *input, size_t len, size_t limit,
			size_t *dropped)
{
	cJSON *a = cJSON_ParseWithLength(input, len);
	const cJSON *it;
	struct jsonscan s;
	size_t off, n, i, nd = 0;
	char *out = NULL, *o;
	bool first = true;

	*dropped = 0;
	if (!cJSON_IsArray(a) || !jsonscan_begin_array(&s, input, len))
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, a)
	{
		if (i++ < limit && bound_reasoning(it))
			nd++;
	}
	if (nd == 0)
		goto out;
	/* The kept items' bytes and their commas fit in len + 3. */
	if ((out = malloc(len + 3)) == NULL) {
		*dropped = 1;
		goto out;
	}
	o = out;
	*o++ = '[';
	i = 0;
	cJSON_ArrayForEach(it, a)
	{
		if (!jsonscan_next_elem(&s, &off, &n)) {
			/* cJSON and the scanner disagree: send nothing
			 * edited rather than something else. */
			free(out);
			out = NULL;
			nd = 0;
			goto out;
		}
		if (i++ < limit && bound_reasoning(it))
			continue;
		if (!first)
			*o++ = ',';
		memcpy(o, input + off, n);
		o += n;
		first = false;
	}
	*o++ = ']';
	*o = '\0';
	*dropped = nd;
out:
	cJSON_Delete(a);
	return out;
}

/* True when it is a string holding needle, or anything else whose
 * printed form does. */
static bool
mentions(const cJSON *it, const char *needle)
{
	char *p;
	bool yes;

	if (it == NULL || cJSON_IsNull(it))
		return false;
	if (cJSON_IsString(it))
		return strstr(it->valuestring, needle) != NULL;
	if ((p = cJSON_PrintUnformatted(it)) == NULL)
		return false;
	yes = strstr(p, needle) != NULL;
	cJSON_free(p);
	return yes;
}

bool
convbody_invalid_encrypted(const cJSON *err)
{
	static const char needle[] = "invalid_encrypted_content";
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(err, "error");
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(e, "metadata");

	return cJSON_IsObject(e) &&
	       (mentions(cJSON_GetObjectItemCaseSensitive(e, "message"),
			 needle) ||
		mentions(cJSON_GetObjectItemCaseSensitive(e, "code"), needle) ||
		mentions(cJSON_GetObjectItemCaseSensitive(md, "raw"), needle));
}

bool
convbody_retry_without_reasoning(long status, bool mention, bool has_items,
				 bool retried)
{
	return status == 400 && mention && has_items && !retried;
}

enum failover_named
convbody_429_named(const cJSON *err)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(err, "error");
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(e, "metadata");
	const cJSON *pn = cJSON_GetObjectItemCaseSensitive(md, "provider_name");

	if (cJSON_IsString(pn) && pn->valuestring[0] != '\0')
		return FAILOVER_NAMED;
	if (cJSON_IsNull(pn))
		return FAILOVER_NAMED_NULL;
	return FAILOVER_NAMED_ABSENT;
}
