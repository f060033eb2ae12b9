/*
 * conf_impl.h - what the settings' files (conf.c, conf_*.c) share and no
 * other file includes (make check-layers): a setting's row of the table
 * (struct conf_item) and the checks conf_set() calls by its kind.  Each
 * function's contract is at its definition.  Pure, like conf.c.
 */
#ifndef ORGW_CONF_IMPL_H
#define ORGW_CONF_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "orgw.h"

struct orgw_conf;

/* How much of a refused value a message quotes. */
#define CONF_SHOW_MAX 48

enum conf_kind {
	CONF_KEY,	/* secret: never quoted back */
	CONF_PASSWORD,	/* secret, as CONF_KEY, that may hold inner spaces */
	CONF_URL,
	CONF_PATH,
	CONF_MODELS,	/* TARGET_MODEL list */
	CONF_ALIASES,	/* MODEL_ALIASES list */
	CONF_DOUBLE,
	CONF_INT,	/* stored as int */
	CONF_I64,	/* stored as int64_t */
	CONF_SIZE,	/* stored as size_t */
	CONF_DELAYS,	/* RETRY_429_DELAYS list */
	CONF_MODE,	/* STATE_MODE: octal file mode */
	CONF_BACKEND,	/* STATE_BACKEND: gdbm or redis */
	CONF_REDIS_URL,	/* REDIS_URL (redisconf.c) */
};

struct conf_item {
	const char *name;
	size_t off;		/* offsetof the field in struct orgw_conf */
	const char *def;	/* orgw.conf(5) default as text; NULL = unset */
	double dlo, dhi;	/* CONF_DOUBLE range */
	long long ilo, ihi;	/* integer range; per item for CONF_DELAYS */
	enum conf_kind kind;
	bool dlo_open;		/* dlo itself refused (CACHE_BONUS > 0) */
};

/* conf_value.c */
bool conf_is_graph(unsigned char ch);
const char *conf_show(char *buf, size_t size, const char *v);
void conf_wipe_free(char *s);
char *conf_trim(char *s);
enum orgw_err conf_set_key(const struct conf_item *it, char **slot,
			   const char *v, char *err, size_t errlen);
enum orgw_err conf_set_url(const struct conf_item *it, char **slot,
			   const char *v, char *err, size_t errlen);
enum orgw_err conf_set_path(const struct conf_item *it, char **slot,
			    const char *v, char *err, size_t errlen);
enum orgw_err conf_set_double(struct orgw_conf *c, const struct conf_item *it,
			      const char *v, char *err, size_t errlen);
enum orgw_err conf_set_integer(struct orgw_conf *c, const struct conf_item *it,
			       const char *v, char *err, size_t errlen);
enum orgw_err conf_set_mode(struct orgw_conf *c, const struct conf_item *it,
			    const char *v, char *err, size_t errlen);
enum orgw_err conf_set_backend(struct orgw_conf *c, const struct conf_item *it,
			       const char *v, char *err, size_t errlen);
enum orgw_err conf_set_redis_url(struct orgw_conf *c,
				 const struct conf_item *it, const char *v,
				 char *err, size_t errlen);

/* conf_list.c */
enum orgw_err conf_set_models(struct orgw_conf *c, const struct conf_item *it,
			      const char *v, char *err, size_t errlen);
void conf_aliases_free(char **from, char **to, size_t n);
enum orgw_err conf_set_aliases(struct orgw_conf *c, const struct conf_item *it,
			       const char *v, char *err, size_t errlen);
enum orgw_err conf_set_delays(struct orgw_conf *c, const struct conf_item *it,
			      const char *v, char *err, size_t errlen);

#endif
