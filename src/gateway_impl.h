/*
 * gateway_impl.h - what the gateway's files (gateway.c, gateway_*.c)
 * share and no other file includes (make check-layers): the routes'
 * ids, a key's kind among the team keys, and the handlers and helpers
 * one of those files calls in another.  Each function's contract is at
 * its definition.
 */
#ifndef ORGW_GATEWAY_IMPL_H
#define ORGW_GATEWAY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "conf.h"
#include "http.h"
#include "load.h"
#include "teamauth.h"
#include "teamkey.h"

#define PATH_MAX_BYTES 2048

enum route_id {
	R_CHAT,
	R_MESSAGES,
	R_COUNT_TOKENS,
	R_RESPONSES,
	R_ROOT,
	R_MODELS,
	R_KEY,
	R_STATS,
	R_METRICS,
	R_CRON,
	R_HEALTH,
	R_STATUS,
	R_STATUS_POST,
	R_NONE
};

/* What key is among the team keys: TEAM_ADMIN, a key given --admin (it
 * may read what the operator's key reads: /stats, /metrics, /status,
 * /__cron); TEAM_PLAIN, another active key (a valid key that lacks that
 * right: 403, not a wrong key); TEAM_NONE, no team key (or the keys store
 * could not say). */
enum team_kind { TEAM_NONE, TEAM_PLAIN, TEAM_ADMIN };

/* gateway.c */
extern const char mem_busy[];
int overloaded(const struct orgw_io *io, const struct api *api,
	       const char *msg);

/* gateway_auth.c */
uint64_t guard_hash(const char *key);
void key_refused(const struct orgw_env *env, const char *what, const char *path,
		 uint64_t key);
int key_guard_answer(const struct orgw_io *io, const struct orgw_env *env,
		     const struct api *api, const char *path, uint64_t key,
		     bool is_operator, int *rc);
enum team_kind team_key_kind(const struct orgw_conf *c, const char *key);

/* gateway_ops.c */
int handle_health(const struct orgw_io *io, const struct orgw_env *env,
		  const struct orgw_conf *c, const char *conf_err,
		  const struct orgw_load *load);
int json_text_send(const struct orgw_io *io, const char *extra, char *s,
		   const char *what);
int handle_stats(const struct orgw_io *io, const struct orgw_conf *c,
		 const struct orgw_load *load);
int handle_metrics(const struct orgw_io *io, const struct orgw_env *env,
		   const struct orgw_conf *c, const struct orgw_load *load);
int handle_cron(const struct orgw_io *io, const struct orgw_conf *c);

/* gateway_models.c */
int handle_models(const struct orgw_io *io, const struct orgw_conf *c,
		  const struct teamkey *k);
int handle_key(const struct orgw_io *io, const struct orgw_conf *c,
	       const struct teamauth *t);

/* gateway_status.c */
int handle_status(const struct orgw_io *io, const struct orgw_env *env,
		  const struct orgw_conf *c);
int handle_status_post(const struct orgw_io *io, const struct orgw_env *env,
		       const struct orgw_conf *c, const struct api *api);

/* gateway_gen.c */
int handle_generation(const struct orgw_io *io, const struct orgw_env *env,
		      const struct orgw_conf *c, enum route_id id,
		      const struct api *api, struct teamauth *team,
		      bool *logged);

#endif
