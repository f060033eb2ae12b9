/*
 * conf_value.c - the checks of one setting's value, by its kind in
 * conf_items[] (conf.c): keys and passwords, URLs, paths, numbers in
 * their ranges, STATE_MODE, STATE_BACKEND and REDIS_URL; and the small
 * text helpers the settings' files share.  Each check stores a fully
 * valid value or leaves the struct as it was.
 *
 * Messages name the setting and quote the refused value, made printable
 * and cut short, except for the secrets (OPENROUTER_API_KEY,
 * CUSTOM_ACCESS_KEY, METRICS_KEY, REDIS_PASSWORD, KEYS_SECRET), whose
 * values are never quoted: messages end up in logs.
 *
 * Numbers go through strtoll()/strtod() with end-pointer, errno and range
 * checks.  The gateway never calls setlocale(), so strtod() runs in the
 * "C" locale and the decimal separator is always '.'.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "conf_impl.h"
#include "redisconf.h"

void
conf_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	/* A message cut short by a small err buffer is still a message. */
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Whitespace in the "C" locale, without ctype's locale and sign traps. */
static bool
conf_is_space(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	       ch == '\v' || ch == '\f';
}

/* Printable ASCII other than space: what keys, URLs and model ids use. */
bool
conf_is_graph(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f;
}

/*
 * Writes a printable, shortened copy of v into buf (size bytes, at least
 * CONF_SHOW_MAX + 4) for quoting in a message: a refused value may hold
 * newlines or escape sequences that must not reach a log as they are.
 */
const char *
conf_show(char *buf, size_t size, const char *v)
{
	size_t i;

	if (size == 0)
		return "";
	for (i = 0; i < CONF_SHOW_MAX && i + 4 < size && v[i] != '\0'; i++) {
		if (v[i] >= 0x20 && v[i] < 0x7f)
			buf[i] = v[i];
		else
			buf[i] = '?';
	}
	if (i + 4 <= size && v[i] != '\0') {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* Zeroes and frees a string that may hold a secret. */
void
conf_wipe_free(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* Returns s with leading blanks skipped and trailing blanks cut (in place). */
char *
conf_trim(char *s)
{
	size_t n;

	while (conf_is_space((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && conf_is_space((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

enum conf_num
conf_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (*s == '\0')
		return CONF_NUM_EMPTY;
	if (!(*s == '+' || *s == '-' || (*s >= '0' && *s <= '9')))
		return CONF_NUM_SYNTAX;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0')
		return CONF_NUM_SYNTAX;
	if (errno == ERANGE || v < lo || v > hi)
		return CONF_NUM_RANGE;
	*out = v;
	return CONF_NUM_OK;
}

enum conf_num
conf_parse_double(const char *s, double *out)
{
	const char *p;
	char *end;
	double v;

	if (*s == '\0')
		return CONF_NUM_EMPTY;
	for (p = s; *p != '\0'; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == '+' ||
		      *p == '-' || *p == 'e' || *p == 'E'))
			return CONF_NUM_SYNTAX;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return CONF_NUM_SYNTAX;
	if (errno == ERANGE || !isfinite(v))
		return CONF_NUM_RANGE;
	*out = v;
	return CONF_NUM_OK;
}

enum orgw_err
conf_set_key(const struct conf_item *it, char **slot, const char *v,
	     char *err, size_t errlen)
{
	const unsigned char *p;
	bool blank = true;
	/* Redis takes any bytes as a password (requirepass "a b" is one),
	 * and AUTH is sent as an argument vector, so only what cannot be a
	 * deliberate part of it is refused: blanks at either end (stray
	 * whitespace) and control characters (a stray newline). */
	bool password = it->kind == CONF_PASSWORD;
	size_t len = strlen(v);
	char *dup;

	for (p = (const unsigned char *)v; *p != '\0'; p++)
		if (!conf_is_space(*p))
			blank = false;
	if (blank) {
		conf_errf(err, errlen, "%s is empty; an empty key is not a key",
			 it->name);
		return ORGW_EINVAL;
	}
	if (it->ilo > 0 && len < (size_t)it->ilo) {
		conf_errf(err, errlen, "%s is shorter than %lld characters "
			 "(make one with: openssl rand -hex 32)", it->name,
			 it->ilo);
		return ORGW_EINVAL;
	}
	if (password && (v[0] == ' ' || v[len - 1] == ' ')) {
		conf_errf(err, errlen, "%s begins or ends with a space "
			 "(stray whitespace?)", it->name);
		return ORGW_EINVAL;
	}
	for (p = (const unsigned char *)v; *p != '\0'; p++) {
		if (*p == ' ' && !password) {
			conf_errf(err, errlen,
				 "%s contains a space; a key has none "
				 "(stray whitespace?)", it->name);
			return ORGW_EINVAL;
		}
		if (*p < 0x20 || *p == 0x7f) {
			conf_errf(err, errlen,
				 "%s contains a control character "
				 "(a stray newline or tab?)", it->name);
			return ORGW_EINVAL;
		}
		if (*p > 0x7f && !password) {
			conf_errf(err, errlen,
				 "%s contains a non-ASCII byte", it->name);
			return ORGW_EINVAL;
		}
	}
	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	conf_wipe_free(*slot);
	*slot = dup;
	return ORGW_OK;
}

enum orgw_err
conf_set_url(const struct conf_item *it, char **slot, const char *v,
	     char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	size_t n, scheme, i;
	char *dup;

	/* RFC 3986 3.1: the scheme is case-insensitive. */
	if (strncasecmp(v, "https://", 8) == 0)
		scheme = 8;
	else if (strncasecmp(v, "http://", 7) == 0)
		scheme = 7;
	else {
		conf_errf(err, errlen,
			 "%s: \"%s\" must start with http:// or https://",
			 it->name, conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	n = strlen(v);
	for (i = 0; i < n; i++) {
		if (!conf_is_graph((unsigned char)v[i])) {
			conf_errf(err, errlen,
				 "%s: \"%s\" contains a space, a control "
				 "character or a non-ASCII byte", it->name,
				 conf_show(show, sizeof(show), v));
			return ORGW_EINVAL;
		}
		/* Request paths are appended to the base URL. */
		if (v[i] == '?' || v[i] == '#') {
			conf_errf(err, errlen,
				 "%s: \"%s\" must not have a query or "
				 "fragment", it->name,
				 conf_show(show, sizeof(show), v));
			return ORGW_EINVAL;
		}
	}
	while (n > scheme && v[n - 1] == '/')
		n--;
	if (n == scheme || v[scheme] == '/') {
		conf_errf(err, errlen, "%s: \"%s\" has no host", it->name,
			 conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	if ((dup = strndup(v, n)) == NULL)
		return ORGW_ENOMEM;
	free(*slot);
	*slot = dup;
	return ORGW_OK;
}

enum orgw_err
conf_set_path(const struct conf_item *it, char **slot, const char *v,
	      char *err, size_t errlen)
{
	char *dup;

	if (*v == '\0') {
		conf_errf(err, errlen, "%s is empty; want a file path",
			 it->name);
		return ORGW_EINVAL;
	}
	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	free(*slot);
	*slot = dup;
	return ORGW_OK;
}

enum orgw_err
conf_set_double(struct orgw_conf *c, const struct conf_item *it,
		const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	char range[64];
	double d = 0;
	enum conf_num st;

	if (it->dlo_open)
		(void)snprintf(range, sizeof(range),
			       "more than %g and at most %g", it->dlo, it->dhi);
	else
		(void)snprintf(range, sizeof(range), "%g..%g", it->dlo,
			       it->dhi);
	st = conf_parse_double(v, &d);
	if (st == CONF_NUM_OK &&
	    (d < it->dlo || (it->dlo_open && d <= it->dlo) || d > it->dhi))
		st = CONF_NUM_RANGE;
	switch (st) {
	case CONF_NUM_OK:
		break;
	case CONF_NUM_EMPTY:
		conf_errf(err, errlen, "%s is empty; want a number %s",
			 it->name, range);
		return ORGW_EINVAL;
	case CONF_NUM_SYNTAX:
		conf_errf(err, errlen, "%s: \"%s\" is not a number (want %s)",
			 it->name, conf_show(show, sizeof(show), v), range);
		return ORGW_EINVAL;
	case CONF_NUM_RANGE:
		conf_errf(err, errlen, "%s: \"%s\" is out of range (%s)",
			 it->name, conf_show(show, sizeof(show), v), range);
		return ORGW_EINVAL;
	}
	/* + 0.0 turns "-0" into +0, so nothing downstream sees a -0. */
	*(double *)(void *)((char *)c + it->off) = d + 0.0;
	return ORGW_OK;
}

enum orgw_err
conf_set_integer(struct orgw_conf *c, const struct conf_item *it,
		 const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	void *field = (char *)c + it->off;
	long long d = 0;

	switch (conf_parse_ll(v, it->ilo, it->ihi, &d)) {
	case CONF_NUM_OK:
		break;
	case CONF_NUM_EMPTY:
		conf_errf(err, errlen, "%s is empty; want an integer %lld..%lld",
			 it->name, it->ilo, it->ihi);
		return ORGW_EINVAL;
	case CONF_NUM_SYNTAX:
		conf_errf(err, errlen,
			 "%s: \"%s\" is not an integer (want %lld..%lld)",
			 it->name, conf_show(show, sizeof(show), v), it->ilo,
			 it->ihi);
		return ORGW_EINVAL;
	case CONF_NUM_RANGE:
		conf_errf(err, errlen, "%s: \"%s\" is out of range (%lld..%lld)",
			 it->name, conf_show(show, sizeof(show), v), it->ilo,
			 it->ihi);
		return ORGW_EINVAL;
	}
	/* The ranges in conf_items[] fit every field type. */
	if (it->kind == CONF_INT)
		*(int *)field = (int)d;
	else if (it->kind == CONF_I64)
		*(int64_t *)field = (int64_t)d;
	else
		*(size_t *)field = (size_t)d;
	return ORGW_OK;
}

/*
 * STATE_MODE: octal digits (a leading 0 optional) naming one of 0600,
 * 0640, 0660 (orgw.conf(5)): the owner reads and writes, the group may
 * when the scorer runs as another user of it, others never.
 */
enum orgw_err
conf_set_mode(struct orgw_conf *c, const struct conf_item *it,
	      const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	unsigned m = 0;
	const char *p;

	for (p = v; *p >= '0' && *p <= '7' && p - v < 5; p++)
		m = m * 8 + (unsigned)(*p - '0');
	if (*v == '\0' || *p != '\0' ||
	    (m != 0600 && m != 0640 && m != 0660)) {
		conf_errf(err, errlen,
			 "%s: \"%s\" is not allowed (want 0600, 0640 or 0660)",
			 it->name, conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	c->state_mode = m;
	return ORGW_OK;
}

/* STATE_BACKEND: "gdbm" or "redis". */
enum orgw_err
conf_set_backend(struct orgw_conf *c, const struct conf_item *it,
		 const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];

	if (strcmp(v, "gdbm") == 0) {
		c->state_backend = CONF_BACKEND_GDBM;
	} else if (strcmp(v, "redis") == 0) {
		c->state_backend = CONF_BACKEND_REDIS;
	} else {
		conf_errf(err, errlen, "%s: \"%s\" is not a back-end (want "
			  "gdbm or redis)", it->name,
			  conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

/* REDIS_URL: what redisconf_parse_url() accepts.  The URL is not quoted
 * back: a mistaken "redis://:secret@host" would put a password in a log. */
enum orgw_err
conf_set_redis_url(struct orgw_conf *c, const struct conf_item *it,
		   const char *v, char *err, size_t errlen)
{
	struct redisconf_url u;
	char why[160];
	char *dup;

	if (redisconf_parse_url(v, &u, why, sizeof(why)) != ORGW_OK) {
		conf_errf(err, errlen, "%s: %s", it->name, why);
		return ORGW_EINVAL;
	}
	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	free(c->redis_url);
	c->redis_url = dup;
	return ORGW_OK;
}
