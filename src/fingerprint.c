/*
 * fingerprint.c - a request's prompt units as hashes and sizes
 * (fingerprint.h), pure.
 *
 * One pass over the parsed body: each unit's subtree is walked once and
 * its bytes fed to FNV-1a as they lie in the tree.  The walk recurses as
 * deep as the tree, which cJSON's parser bounds (CJSON_NESTING_LIMIT).
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "fingerprint.h"

#define FNV_PRIME 0x100000001b3ULL

/* Tags that keep the canonical walk unambiguous: every value starts with
 * its type, every string ends with a NUL (cJSON strings hold none). */
enum { T_OBJ = '{', T_OBJ_END = '}', T_ARR = '[', T_ARR_END = ']',
       T_STR = '"', T_NUM = '#', T_TRUE = 't', T_FALSE = 'f', T_NULL = 'z' };

uint64_t
fp_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV_PRIME;
	}
	return h;
}

struct walk {
	uint64_t h;
	uint64_t bytes;
};

static void
feed_byte(struct walk *w, unsigned char c)
{
	w->h = (w->h ^ c) * FNV_PRIME;
	w->bytes++;
}

/* A NUL-terminated string and its NUL, hashed in the loop that finds its
 * end (no strlen pass first). */
static void
feed_str(struct walk *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t h = w->h;

	for (; *p != '\0'; p++)
		h = (h ^ *p) * FNV_PRIME;
	w->h = (h ^ 0) * FNV_PRIME;
	w->bytes += (uint64_t)(p - (const unsigned char *)s) + 1;
}

/* Markers a client places to ask for caching; not prompt content. */
static bool
is_marker(const char *key)
{
	return key != NULL && (strcmp(key, "cache_control") == 0 ||
			       strcmp(key, "prompt_cache_breakpoint") == 0);
}

/* The text of a one-block content array [{"type":"text","text":T}]
 * (markers aside), else NULL. */
static const char *
one_text_block(const cJSON *arr)
{
	const cJSON *blk = arr->child, *it;
	const char *text = NULL;
	bool typed = false;

	if (blk == NULL || blk->next != NULL || !cJSON_IsObject(blk))
		return NULL;
	cJSON_ArrayForEach(it, blk)
	{
		if (is_marker(it->string))
			continue;
		if (strcmp(it->string, "type") == 0 && cJSON_IsString(it) &&
		    strcmp(it->valuestring, "text") == 0)
			typed = true;
		else if (strcmp(it->string, "text") == 0 && cJSON_IsString(it))
			text = it->valuestring;
		else
			return NULL;
	}
	return typed ? text : NULL;
}

static void
walk_value(struct walk *w, const cJSON *v)
{
	const cJSON *it;
	const char *text;
	unsigned char num[sizeof(double)];

	if (cJSON_IsObject(v)) {
		feed_byte(w, T_OBJ);
		cJSON_ArrayForEach(it, v)
		{
			if (is_marker(it->string))
				continue;
			feed_str(w, it->string != NULL ? it->string : "");
			/* A content string and its one-block array form
			 * are the same prompt text. */
			if (it->string != NULL &&
			    strcmp(it->string, "content") == 0 &&
			    cJSON_IsArray(it) &&
			    (text = one_text_block(it)) != NULL) {
				feed_byte(w, T_STR);
				feed_str(w, text);
				continue;
			}
			walk_value(w, it);
		}
		feed_byte(w, T_OBJ_END);
	} else if (cJSON_IsArray(v)) {
		feed_byte(w, T_ARR);
		cJSON_ArrayForEach(it, v) walk_value(w, it);
		feed_byte(w, T_ARR_END);
	} else if (cJSON_IsString(v) || cJSON_IsRaw(v)) {
		feed_byte(w, T_STR);
		feed_str(w, v->valuestring != NULL ? v->valuestring : "");
	} else if (cJSON_IsNumber(v)) {
		feed_byte(w, T_NUM);
		memcpy(num, &v->valuedouble, sizeof(num));
		w->h = fp_hash_bytes(w->h, num, sizeof(num));
		w->bytes += sizeof(num);
	} else if (cJSON_IsTrue(v)) {
		feed_byte(w, T_TRUE);
	} else if (cJSON_IsFalse(v)) {
		feed_byte(w, T_FALSE);
	} else {
		feed_byte(w, T_NULL);
	}
}

/* kind as given when it is a plain name ([a-z0-9_], short), else
 * "other": kinds go to the state, /stats and log lines. */
static void
set_kind(struct fp_unit *u, const char *kind)
{
	size_t i;

	for (i = 0; kind != NULL && kind[i] != '\0'; i++) {
		char c = kind[i];

		if (i + 1 >= sizeof(u->kind) ||
		    !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			break;
	}
	if (kind == NULL || i == 0 || kind[i] != '\0')
		kind = "other";
	memcpy(u->kind, kind, strlen(kind) + 1);
}

static enum orgw_err
add_unit(struct fp_list *out, const cJSON *v, const char *kind)
{
	struct walk w = {FP_HASH_SEED, 0};
	struct fp_unit *u;

	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 32;

		if (cap > SIZE_MAX / sizeof(*u))
			return ORGW_ENOMEM;
		if ((u = realloc(out->v, cap * sizeof(*u))) == NULL)
			return ORGW_ENOMEM;
		out->v = u;
		out->cap = cap;
	}
	walk_value(&w, v);
	u = &out->v[out->n++];
	u->hash = w.h;
	u->bytes = w.bytes;
	set_kind(u, kind);
	return ORGW_OK;
}

static const char *
str_member(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* Each element of arr (or arr itself when it is not an array, as a
 * Messages system string or a Responses input string) as a unit:
 * kind_field's string value names it (a message's role, an item's type),
 * else fixed.  For Responses items a "message" item is named by its
 * role, the part of it that tells a steering message from the user. */
static enum orgw_err
add_list(struct fp_list *out, const cJSON *arr, const char *fixed,
	 bool by_role)
{
	const cJSON *it;
	const char *kind, *type;
	enum orgw_err err;

	if (arr == NULL || cJSON_IsNull(arr))
		return ORGW_OK;
	if (!cJSON_IsArray(arr))
		return add_unit(out, arr, fixed);
	cJSON_ArrayForEach(it, arr)
	{
		kind = fixed;
		if (by_role) {
			type = str_member(it, "type");
			kind = str_member(it, "role");
			if (type != NULL && strcmp(type, "message") != 0)
				kind = type;
			if (kind == NULL)
				kind = "other";
		}
		if ((err = add_unit(out, it, kind)) != ORGW_OK)
			return err;
	}
	return ORGW_OK;
}

/* Where each API keeps its units: the member before the tools (Messages'
 * system blocks, the Responses instructions; chat has none, its system
 * prompt is a message) and the list after them. */
static const struct {
	const char *lead;
	const char *list;
} layout[API_N] = {
	[API_CHAT] = {NULL, "messages"},
	[API_MESSAGES] = {"system", "messages"},
	[API_RESPONSES] = {"instructions", "input"},
};

enum orgw_err
fp_compute(const cJSON *body, enum api_id api, struct fp_list *out)
{
	const cJSON *tools;
	enum orgw_err err = ORGW_OK;

	out->n = 0;
	if (!cJSON_IsObject(body) || (size_t)api >= API_N)
		goto out;
	if (layout[api].lead != NULL)
		err = add_list(out,
			       cJSON_GetObjectItemCaseSensitive(
				       body, layout[api].lead),
			       "system", false);
	tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
	if (err == ORGW_OK && tools != NULL && !cJSON_IsNull(tools))
		err = add_unit(out, tools, "tools");
	if (err == ORGW_OK)
		err = add_list(out,
			       cJSON_GetObjectItemCaseSensitive(
				       body, layout[api].list),
			       "user", true);
out:
	if (err != ORGW_OK)
		out->n = 0;
	return err;
}

void
fp_list_clear(struct fp_list *out)
{
	if (out == NULL)
		return;
	free(out->v);
	out->v = NULL;
	out->n = out->cap = 0;
}
