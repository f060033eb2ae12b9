/*
 * orgw.c - main() of orgw.fcgi: the gateway as a FastCGI worker (when
 * spawn-fcgi or the web server hands it a listening socket on fd 0) or
 * as a plain CGI program (one request from the environment and stdin).
 *
 * Signals: SIGPIPE is ignored (a gone client shows as a failed write).
 * A CGI run exits at once on SIGTERM.  A FastCGI worker (workers.c) runs
 * WORKER_THREADS threads and takes SIGTERM, SIGINT and SIGUSR1 in one
 * place: it accepts no more requests, lets those in flight finish, then
 * exits (fcgiwrap).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "clock.h"
#include "conf.h"
#include "curlsetup.h"
#include "fcgi_io.h"
#include "harden.h"
#include "gateway.h"
#include "log.h"
#include "fsafe.h"
#include "upstream.h"
#include "version.h"
#include "workers.h"

/* Most of an unread request body a CGI run drops before exiting (a 413
 * for a larger one is then cut short under mod_cgid; see fcgi_io.h). */
#define CGI_DISCARD_MAX_BYTES (64ULL * 1024 * 1024)

extern char **environ;

static void
on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static int
setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) == -1)
		return -1;
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1)
		return -1;
	return 0;
}

static int
serve_cgi(const struct orgw_conf *c, const char *conf_err)
{
	struct orgw_io io;
	struct orgw_env env;

	cgi_io_init(&io, c->client_send_timeout_ms);
	if (http_env_load(&env, environ) != ORGW_OK)
		return 1;
	orgw_handle(&io, &env, c, conf_err, NULL);
	cgi_io_discard_body(env.content_length, CGI_DISCARD_MAX_BYTES);
	http_env_free(&env);
	return 0;
}

/*
 * Loads the configuration from path into c (conf_load's precedence; the
 * environment still wins) and applies what start-up applies; *conf_err
 * becomes NULL or err (errlen bytes) with the reason.
 */
static void
load_conf(struct orgw_conf *c, const char *path, const char **conf_err,
	  char *err, size_t errlen)
{
	*conf_err = NULL;
	conf_free(c);
	if (conf_init(c) != ORGW_OK) {
		snprintf(err, errlen, "out of memory");
		*conf_err = err;
	} else if (conf_load(c, path, err, errlen) != ORGW_OK) {
		*conf_err = err;
	}
	if (*conf_err != NULL)
		log_err("configuration refused: %s", err);
	fsafe_set_mode(c->state_mode);
	curlsetup_ca_file(c->upstream_ca_file);
}

/*
 * A FastCGI worker started without ORGW_CONFIG, as under mod_fcgid on
 * shared hosting, where .htaccess cannot reach a worker's environment
 * (FcgidInitialEnv is server configuration) and its `SetEnv ORGW_CONFIG`
 * comes with each request instead: workers.c calls this once, with the
 * first request's ORGW_CONFIG, before any request is served; later
 * requests' values are ignored.
 */
struct first_conf {
	struct orgw_conf *c;
	const char *conf_err;
	char err[512];
};

static const char *
first_conf_load(const char *path, void *arg)
{
	struct first_conf *f = arg;

	load_conf(f->c, path, &f->conf_err, f->err, sizeof(f->err));
	return f->conf_err;
}

int
main(int argc, char *argv[])
{
	struct orgw_conf conf;
	struct first_conf first = {0};
	struct workers_first fc;
	char err[512];
	const char *conf_err = NULL, *named;
	int rc;

	/* Before anything else: it needs no configuration and logs nothing. */
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("orgw.fcgi %s\n", orgw_version);
		return 0;
	}
	if (harden_no_dumps() != 0)
		perror("orgw: turning core dumps off");
	if (setup_signals() == -1) {
		perror("orgw: sigaction");
		return 1;
	}
	clock_init();
	if (conf_init(&conf) != ORGW_OK) {
		fputs("orgw: out of memory\n", stderr);
		return 1;
	}
	if (conf_load(&conf, NULL, err, sizeof(err)) != ORGW_OK) {
		conf_err = err;
		log_err("configuration refused: %s", err);
	}
	fsafe_set_mode(conf.state_mode);
	if (argc > 1 && strcmp(argv[1], "--check-config") == 0) {
		if (conf_err == NULL)
			puts("orgw: configuration ok");
		conf_free(&conf);
		return conf_err ? 2 : 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: %s [--check-config | --version]\n", argv[0]);
		conf_free(&conf);
		return 2;
	}
	curlsetup_ca_file(conf.upstream_ca_file);
	if (upstream_global_init() != ORGW_OK) {
		log_err("libcurl initialisation failed");
		conf_free(&conf);
		return 1;
	}
	named = getenv("ORGW_CONFIG");
	first.c = &conf;
	fc.load = first_conf_load;
	fc.arg = &first;
	rc = FCGX_IsCGI() ? serve_cgi(&conf, conf_err) :
			    workers_serve(&conf, conf_err,
					  named == NULL || *named == '\0' ?
						  &fc :
						  NULL);
	upstream_global_cleanup();
	conf_free(&conf);
	return rc;
}
