/*
 * statuspage.h - the HTML of GET /status, pure: it
 * renders the tree GET /stats builds (stats_tree) and does no I/O, so
 * the page, its escaping included, is unit-tested.
 */
#ifndef ORGW_STATUSPAGE_H
#define ORGW_STATUSPAGE_H

#include <cJSON.h>

#include "orgw.h"

/* Seconds between the page's own refreshes (<meta http-equiv=refresh>). */
#define STATUSPAGE_REFRESH_SECONDS 30

struct statuspage_opts {
	int64_t now;			/* unix seconds, the page's clock */
	int64_t lock_idle_seconds;	/* LOCK_IDLE_SECONDS: when a lock expires */
};

/*
 * The status page for stats (the /stats tree: "generated_at", "models",
 * maybe "state_error"; borrowed for the call).  Every string from the
 * tree (model names come from clients) is HTML-escaped.  Returns
 * malloc'd NUL-terminated HTML (caller frees) with its length in *len,
 * or NULL when out of memory.
 */
char *statuspage_html(const cJSON *stats, const struct statuspage_opts *o,
		      size_t *len);

/*
 * The login form: one password field "key" posted to the page's own URL
 * as application/x-www-form-urlencoded.  message (may be NULL) is shown
 * above it, escaped.  Returns malloc'd HTML (caller frees) or NULL.
 */
char *statuspage_login_html(const char *message, size_t *len);

#endif
