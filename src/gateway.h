/*
 * gateway.h - one HTTP request, start to end (docs/design.md section 2): route
 * table, auth, body limits, and the handlers.  Shared by FastCGI mode,
 * CGI mode and the tests through struct orgw_io.
 */
#ifndef ORGW_GATEWAY_H
#define ORGW_GATEWAY_H

#include "conf.h"
#include "http.h"
#include "load.h"

/*
 * Handles one request.  conf_err is NULL when the configuration loaded,
 * else the message saying why not (then every API call is 503 and
 * /healthz says why).  load (borrowed; NULL in CGI mode, where nothing
 * is shared) is the host's load as this request found it: a chat
 * completion is refused with 503 + Retry-After when it is saturated,
 * /healthz and /stats report it.  Returns 0, or -1 when the client went
 * away.
 */
int orgw_handle(const struct orgw_io *io, const struct orgw_env *env,
		const struct orgw_conf *c, const char *conf_err,
		const struct orgw_load *load);

#endif
