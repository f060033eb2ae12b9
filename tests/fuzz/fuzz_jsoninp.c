/*
 * fuzz_jsoninp.c - libFuzzer target for jsonin.c: jsonin_parse() must
 * accept what cJSON_ParseWithLength() accepts and build the same tree
 * (types, keys, strings, valueint, valuedouble bit for bit, child order
 * and prev links), and refuse what it refuses.  A difference aborts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool
links_ok(const cJSON *a)
{
	const cJSON *c, *last = NULL;

	for (c = a->child; c != NULL; c = c->next) {
		if (c != a->child && c->prev != last)
			return false;
		last = c;
	}
	return a->child == NULL || a->child->prev == last;
}

static bool
same_tree(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if (a == NULL || b == NULL)
		return a == b;
	if (a->type != b->type || a->valueint != b->valueint ||
	    memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 ||
	    !same_str(a->string, b->string) ||
	    !same_str(a->valuestring, b->valuestring) || !links_ok(a) ||
	    !links_ok(b))
		return false;
	for (x = a->child, y = b->child; x != NULL && y != NULL;
	     x = x->next, y = y->next)
		if (!same_tree(x, y))
			return false;
	return x == NULL && y == NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *want = cJSON_ParseWithLength((const char *)data, size);
	cJSON *got = jsonin_parse((const char *)data, size);

	if (!same_tree(want, got))
		abort();
	cJSON_Delete(want);
	cJSON_Delete(got);
	return 0;
}
