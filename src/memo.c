/*
 * memo.c - decoded records kept with their text (memo.h).  Pure.
 */
#include <stdlib.h>
#include <string.h>

#include "memo.h"

static void
slot_drop(struct memo *m, struct memo_slot *sl)
{
	if (sl->val != NULL && m->clear != NULL)
		m->clear(sl->val);
	free(sl->val);
	free(sl->key);
	free(sl->text);
	memset(sl, 0, sizeof(*sl));
}

static bool
val_copy(const struct memo *m, void *dst, const void *src)
{
	if (m->copy != NULL)
		return m->copy(dst, src);
	memcpy(dst, src, m->size);
	return true;
}

/* The slot of key, or NULL (m->mu held). */
static struct memo_slot *
slot_of(struct memo *m, const char *key)
{
	size_t i;

	for (i = 0; i < MEMO_SLOTS; i++)
		if (m->slot[i].key != NULL && strcmp(m->slot[i].key, key) == 0)
			return &m->slot[i];
	return NULL;
}

bool
memo_get(struct memo *m, const char *key, const char *text, void *out)
{
	struct memo_slot *sl;
	bool ok = false;

	if (text == NULL)
		return false;
	pthread_mutex_lock(&m->mu);
	if ((sl = slot_of(m, key)) != NULL && strcmp(sl->text, text) == 0)
		ok = val_copy(m, out, sl->val);
	pthread_mutex_unlock(&m->mu);
	return ok;
}

void
memo_put(struct memo *m, const char *key, const char *text, const void *val)
{
	struct memo_slot *sl, fresh;
	size_t i;

	if (text == NULL)
		return;
	memset(&fresh, 0, sizeof(fresh));
	/* Copied before the mutex is taken: readers wait only for the
	 * swap. */
	if ((fresh.key = strdup(key)) == NULL ||
	    (fresh.text = strdup(text)) == NULL ||
	    (fresh.val = malloc(m->size)) == NULL ||
	    !val_copy(m, fresh.val, val)) {
		/* A failed copy owns nothing (memo.h). */
		free(fresh.val);
		free(fresh.key);
		free(fresh.text);
		return;
	}
	pthread_mutex_lock(&m->mu);
	if ((sl = slot_of(m, key)) == NULL) {
		for (i = 0; i < MEMO_SLOTS && m->slot[i].key != NULL; i++)
			;
		if (i == MEMO_SLOTS) {
			i = m->next;
			m->next = (m->next + 1) % MEMO_SLOTS;
		}
		sl = &m->slot[i];
	}
	slot_drop(m, sl);
	*sl = fresh;
	pthread_mutex_unlock(&m->mu);
}

void
memo_free(struct memo *m)
{
	size_t i;

	pthread_mutex_lock(&m->mu);
	for (i = 0; i < MEMO_SLOTS; i++)
		slot_drop(m, &m->slot[i]);
	m->next = 0;
	pthread_mutex_unlock(&m->mu);
}
