/*
 * workers.h - the FastCGI worker process: a pool of threads, each
 * accepting requests on the listening socket on fd 0, and the process's
 * life (SIGTERM, recycling).  See workers.c.
 */
#ifndef ORGW_WORKERS_H
#define ORGW_WORKERS_H

#include "conf.h"

/*
 * A configuration that comes with the first request (mod_fcgid on shared
 * hosting: `SetEnv ORGW_CONFIG` in .htaccess reaches the worker with each
 * request, never its environment).  load(path, arg) runs once, under a
 * mutex, with that request's ORGW_CONFIG (when it has one) before any
 * request is served; it may rewrite the configuration workers_serve()
 * was given (every other thread is then waiting in accept or for this
 * load) and returns the new conf_err.  The worker settings (threads,
 * recycling) stay those the process started with.
 */
struct workers_first {
	const char *(*load)(const char *path, void *arg);
	void *arg;
};

/*
 * Serves FastCGI requests with c->worker_threads threads until SIGTERM,
 * SIGINT or SIGUSR1 (multiwatch's stop), or until the process is due for
 * recycling (WORKER_MAX_REQUESTS, WORKER_MAX_AGE_SECONDS); then accepts
 * no more, lets every request in flight finish and returns 0 (1 when
 * nothing could start).  c, conf_err and first (NULL: the configuration
 * is complete) are borrowed for the whole call.  Call from main() with
 * curl_global_init done and no other thread.
 */
int workers_serve(const struct orgw_conf *c, const char *conf_err,
		  const struct workers_first *first);

#endif
