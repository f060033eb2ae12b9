/*
 * conf_list.c - the settings that are comma-separated lists:
 * TARGET_MODEL (model ids), MODEL_ALIASES (from=to pairs, and
 * conf_alias(), the alias of a model id) and RETRY_429_DELAYS (seconds).
 * A list is checked whole and replaces the old one whole, or the struct
 * stays as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_impl.h"
#include "reqval.h"

/* The next comma-separated item of the list at *rest, cut in place and
 * trimmed, with *rest moved past it (NULL after the last item); NULL
 * once *rest is NULL. */
static char *
next_item(char **rest)
{
	char *item = *rest, *comma;

	if (item == NULL)
		return NULL;
	if ((comma = strchr(item, ',')) != NULL)
		*comma++ = '\0';
	*rest = comma;
	return conf_trim(item);
}

/*
 * TARGET_MODEL: comma-separated model ids.  Items are trimmed, empty
 * items are skipped (so "" clears the list) and repeated ids are kept
 * once, in their first position.
 */
enum orgw_err
conf_set_models(struct orgw_conf *c, const struct conf_item *it,
		const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	char *models[CONF_MAX_TARGETS];
	char *dup, *item, *rest;
	size_t n = 0, i, len;
	enum orgw_err rc = ORGW_EINVAL;

	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	for (rest = dup; (item = next_item(&rest)) != NULL;) {
		if (*item == '\0')
			continue;
		len = strlen(item);
		if (len >= ORGW_MODEL_MAX) {
			conf_errf(err, errlen,
				 "%s: model id \"%s\" is longer than %d "
				 "bytes", it->name,
				 conf_show(show, sizeof(show), item),
				 ORGW_MODEL_MAX - 1);
			goto out;
		}
		for (i = 0; i < len; i++) {
			if (!conf_is_graph((unsigned char)item[i])) {
				conf_errf(err, errlen,
					 "%s: model id \"%s\" has a space, a "
					 "control character or a non-ASCII "
					 "byte at offset %zu", it->name,
					 conf_show(show, sizeof(show), item),
					 i);
				goto out;
			}
		}
		for (i = 0; i < n; i++)
			if (strcmp(models[i], item) == 0)
				break;
		if (i < n)
			continue;
		if (n == CONF_MAX_TARGETS) {
			conf_errf(err, errlen, "%s: more than %d models",
				 it->name, CONF_MAX_TARGETS);
			goto out;
		}
		if ((models[n] = strdup(item)) == NULL) {
			rc = ORGW_ENOMEM;
			goto out;
		}
		n++;
	}
	for (i = 0; i < CONF_MAX_TARGETS; i++) {
		free(c->target_models[i]);
		c->target_models[i] = i < n ? models[i] : NULL;
	}
	c->n_target_models = n;
	n = 0;		/* now owned by c */
	rc = ORGW_OK;
out:
	for (i = 0; i < n; i++)
		free(models[i]);
	free(dup);
	return rc;
}

/* Frees the n aliases of from[] and to[]. */
void
conf_aliases_free(char **from, char **to, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(from[i]);
		free(to[i]);
		from[i] = to[i] = NULL;
	}
}

/*
 * MODEL_ALIASES: comma-separated "from=to" pairs, each side a model id
 * orgw accepts (reqval_model_ok), blanks around items and sides allowed,
 * empty items skipped ("" clears the list).  A from given twice, or one
 * mapped to itself, is refused: the operator meant something else.
 */
enum orgw_err
conf_set_aliases(struct orgw_conf *c, const struct conf_item *it,
		 const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	char *from[CONF_MAX_ALIASES], *to[CONF_MAX_ALIASES];
	char *dup, *item, *rest, *eq, *a, *b;
	size_t n = 0, i;
	enum orgw_err rc = ORGW_EINVAL;

	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	for (rest = dup; (item = next_item(&rest)) != NULL;) {
		if (*item == '\0')
			continue;
		if ((eq = strchr(item, '=')) == NULL) {
			conf_errf(err, errlen,
				 "%s: \"%s\" is not from=to", it->name,
				 conf_show(show, sizeof(show), item));
			goto out;
		}
		*eq = '\0';
		a = conf_trim(item);
		b = conf_trim(eq + 1);
		if (!reqval_model_ok(a) || !reqval_model_ok(b)) {
			conf_errf(err, errlen,
				 "%s: \"%s\" is not a model id",
				 it->name,
				 conf_show(show, sizeof(show),
					   reqval_model_ok(a) ? b : a));
			goto out;
		}
		if (strcmp(a, b) == 0) {
			conf_errf(err, errlen, "%s: \"%s\" maps to itself",
				 it->name, conf_show(show, sizeof(show), a));
			goto out;
		}
		for (i = 0; i < n; i++)
			if (strcmp(from[i], a) == 0)
				break;
		if (i < n) {
			conf_errf(err, errlen, "%s: \"%s\" is given twice",
				 it->name, conf_show(show, sizeof(show), a));
			goto out;
		}
		if (n == CONF_MAX_ALIASES) {
			conf_errf(err, errlen, "%s: more than %d aliases",
				 it->name, CONF_MAX_ALIASES);
			goto out;
		}
		from[n] = strdup(a);
		to[n] = strdup(b);
		n++;
		if (from[n - 1] == NULL || to[n - 1] == NULL) {
			rc = ORGW_ENOMEM;
			goto out;
		}
	}
	conf_aliases_free(c->model_alias_from, c->model_alias_to,
			  c->n_model_aliases);
	for (i = 0; i < n; i++) {
		c->model_alias_from[i] = from[i];
		c->model_alias_to[i] = to[i];
	}
	c->n_model_aliases = n;
	n = 0;		/* now owned by c */
	rc = ORGW_OK;
out:
	conf_aliases_free(from, to, n);
	free(dup);
	return rc;
}

const char *
conf_alias(const struct orgw_conf *c, const char *id)
{
	size_t i;

	for (i = 0; i < c->n_model_aliases; i++)
		if (strcmp(c->model_alias_from[i], id) == 0)
			return c->model_alias_to[i];
	return NULL;
}

/*
 * RETRY_429_DELAYS: comma-separated seconds, 0..300 each, at most
 * CONF_MAX_DELAYS of them, blanks around items allowed.  An empty (or
 * all-blank) value means no retry on 429; an empty item inside a list
 * ("2,,4", "2,") is refused as a likely typo.
 */
enum orgw_err
conf_set_delays(struct orgw_conf *c, const struct conf_item *it,
		const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	int delays[CONF_MAX_DELAYS];
	char *dup, *item, *rest, *all;
	size_t n = 0, i;
	long long d;
	enum orgw_err rc = ORGW_EINVAL;

	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	/* An all-blank value is no list at all, not one empty item. */
	all = conf_trim(dup);
	rest = *all != '\0' ? all : NULL;
	while ((item = next_item(&rest)) != NULL) {
		if (n == CONF_MAX_DELAYS) {
			conf_errf(err, errlen, "%s: more than %d delays",
				 it->name, CONF_MAX_DELAYS);
			goto out;
		}
		switch (conf_parse_ll(item, it->ilo, it->ihi, &d)) {
		case CONF_NUM_OK:
			break;
		case CONF_NUM_EMPTY:
			conf_errf(err, errlen,
				 "%s: item %zu is empty; want seconds "
				 "%lld..%lld separated by commas, or an "
				 "empty value for no retries", it->name,
				 n + 1, it->ilo, it->ihi);
			goto out;
		case CONF_NUM_SYNTAX:
			conf_errf(err, errlen,
				 "%s: item %zu \"%s\" is not an integer",
				 it->name, n + 1,
				 conf_show(show, sizeof(show), item));
			goto out;
		case CONF_NUM_RANGE:
			conf_errf(err, errlen,
				 "%s: item %zu \"%s\" is out of range "
				 "(%lld..%lld seconds)", it->name, n + 1,
				 conf_show(show, sizeof(show), item),
				 it->ilo, it->ihi);
			goto out;
		}
		delays[n++] = (int)d;
	}
	for (i = 0; i < CONF_MAX_DELAYS; i++)
		c->retry_429_delays[i] = i < n ? delays[i] : 0;
	c->n_retry_429_delays = n;
	rc = ORGW_OK;
out:
	free(dup);
	return rc;
}
