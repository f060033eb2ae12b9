/*
 * jsontree.h - tree equality for the jsonin tests (the unit test and the
 * fuzz target): type, key, valuestring, valuedouble (bit for bit),
 * valueint, the children in order, and the links as cJSON makes them;
 * and keep_only() and top_only(), the trees jsonin_parse_ex() with a keep
 * list and jsonin_parse_top() with keep and shallow lists must give.
 * Header-only: static functions for the two test programs.
 */
#ifndef ORGW_JSONTREE_H
#define ORGW_JSONTREE_H

#include <stdbool.h>
#include <string.h>

#include <cJSON.h>

static bool
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The children of a are linked as cJSON links them: next/prev agree and
 * the first child's prev is the last child. */
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

/* Equal trees: type, key, valuestring, valuedouble (bit for bit),
 * valueint, and the children in order. */
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

/* True when key (a C string, or NULL) is one of the NULL-terminated
 * keep list. */
static bool
kept_key(const char *key, const char *const *keep)
{
	for (; key != NULL && *keep != NULL; keep++)
		if (strcmp(key, *keep) == 0)
			return true;
	return false;
}

/* What jsonin_parse_top(text, len, keep, shallow, ...) must return, made
 * from the full tree of the same text: when root is an object, each
 * member whose key is in shallow loses its children (cJSON_Delete frees
 * the whole list), and each other member whose key is not in keep is
 * deleted (cJSON's own detach keeps the links right); anything else is
 * left whole.  keep NULL keeps every member, shallow NULL lists none.
 * Returns root. */
static cJSON *
top_only(cJSON *root, const char *const *keep, const char *const *shallow)
{
	cJSON *c, *next;

	if (root == NULL || !cJSON_IsObject(root))
		return root;
	for (c = root->child; c != NULL; c = next) {
		next = c->next;
		if (shallow != NULL && kept_key(c->string, shallow)) {
			cJSON_Delete(c->child);
			c->child = NULL;
		} else if (keep != NULL && !kept_key(c->string, keep)) {
			cJSON_Delete(cJSON_DetachItemViaPointer(root, c));
		}
	}
	return root;
}

/* What jsonin_parse_ex(text, len, keep, ...) must return:
 * top_only(root, keep, NULL). */
static cJSON *
keep_only(cJSON *root, const char *const *keep)
{
	return top_only(root, keep, NULL);
}

#endif
