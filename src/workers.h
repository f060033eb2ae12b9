/*
 * workers.h - the FastCGI worker process: a pool of threads, each
 * accepting requests on the listening socket on fd 0, and the process's
 * life (SIGTERM, recycling).  See workers.c.
 */
#ifndef ORGW_WORKERS_H
#define ORGW_WORKERS_H

#include "conf.h"

/*
 * Serves FastCGI requests with c->worker_threads threads until SIGTERM,
 * SIGINT or SIGUSR1 (multiwatch's stop), or until the process is due for
 * recycling (WORKER_MAX_REQUESTS, WORKER_MAX_AGE_SECONDS); then accepts
 * no more, lets every request in flight finish and returns 0 (1 when
 * nothing could start).  c and conf_err are borrowed for the whole call.
 * Call from main() with curl_global_init done and no other thread.
 */
int workers_serve(const struct orgw_conf *c, const char *conf_err);

#endif
