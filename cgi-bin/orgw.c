/*
 * orgw.c - main() of orgw.fcgi: the gateway as a FastCGI worker (when
 * spawn-fcgi or the web server hands it a listening socket on fd 0) or
 * as a plain CGI program (one request from the environment and stdin).
 *
 * Signals: SIGPIPE is ignored (a gone client shows as a failed write).
 * SIGTERM between requests exits at once; during a request it lets the
 * request finish, then exits (fcgiwrap).
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
#include "store.h"
#include "upstream.h"

/* Most of an unread request body a CGI run drops before exiting (a 413
 * for a larger one is then cut short under mod_cgid; see fcgi_io.h). */
#define CGI_DISCARD_MAX_BYTES (64ULL * 1024 * 1024)

static volatile sig_atomic_t in_request;
static volatile sig_atomic_t stop_after;

static void
on_term(int sig)
{
	(void)sig;
	if (!in_request)
		_exit(0);
	stop_after = 1;
	FCGX_ShutdownPending();
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
	if (http_env_load(&env, cgi_io_param, NULL) != ORGW_OK)
		return 1;
	orgw_handle(&io, &env, c, conf_err);
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
	store_set_mode(c->state_mode);
	curlsetup_ca_file(c->upstream_ca_file);
}

/*
 * from_request: the worker was started without ORGW_CONFIG, as under
 * mod_fcgid on shared hosting, where .htaccess cannot reach a worker's
 * environment (FcgidInitialEnv is server configuration) and its
 * `SetEnv ORGW_CONFIG` comes with each request instead.  The first
 * request's ORGW_CONFIG is then loaded, once, before it is served;
 * later requests' values are ignored (issue 18).
 */
static int
serve_fcgi(struct orgw_conf *c, const char **conf_err, char *err,
	   size_t errlen, bool from_request)
{
	FCGX_Request req;
	struct orgw_io io;
	struct orgw_env env;
	const char *path;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, 0, 0) != 0) {
		log_err("FastCGI initialisation failed");
		return 1;
	}
	while (!stop_after && FCGX_Accept_r(&req) >= 0) {
		in_request = 1;
		if (from_request) {
			from_request = false;
			path = FCGX_GetParam("ORGW_CONFIG", req.envp);
			if (path != NULL && *path != '\0')
				load_conf(c, path, conf_err, err, errlen);
		}
		if (http_env_load(&env, fcgi_io_param, &req) == ORGW_OK) {
			fcgi_io_init(&io, &req, c->client_send_timeout_ms);
			orgw_handle(&io, &env, c, *conf_err);
			http_env_free(&env);
		}
		FCGX_Finish_r(&req);
		in_request = 0;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct orgw_conf conf;
	char err[512];
	const char *conf_err = NULL, *named;
	int rc;

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
	store_set_mode(conf.state_mode);
	if (argc > 1 && strcmp(argv[1], "--check-config") == 0) {
		if (conf_err == NULL)
			puts("orgw: configuration ok");
		conf_free(&conf);
		return conf_err ? 2 : 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: %s [--check-config]\n", argv[0]);
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
	rc = FCGX_IsCGI() ? serve_cgi(&conf, conf_err) :
			    serve_fcgi(&conf, &conf_err, err, sizeof(err),
				       named == NULL || *named == '\0');
	upstream_global_cleanup();
	conf_free(&conf);
	return rc;
}
