/*
 * workers.c - a FastCGI worker process as a pool of threads.
 *
 * Why threads: a stream holds its worker for its whole length (minutes),
 * so a host's capacity is the number of requests its workers serve at
 * once.  A thread costs its stack (WORKER_STACK_BYTES, of which a stream
 * touches a few dozen KiB) where a process costs its own heap and
 * libraries' data; threads let one host hold hundreds of streams.
 *
 * Model (libfcgi examples/threaded.c): every thread has its own
 * FCGX_Request and accepts on the shared listening socket in turn.  One
 * thread at a time leads: it polls the socket, so it sees `stop` within
 * ACCEPT_POLL_MS; the socket is made non-blocking so that when another
 * process took the connection poll announced, accept() fails with EAGAIN
 * instead of blocking (then the loop polls again).  Having accepted, the
 * leader hands the lead to the thread that went idle last (a stack under
 * accept_mu), not to any waiter: under light load the same few threads
 * serve every request, so their libcurl connections to OpenRouter stay
 * warm (a connection belongs to one thread's handle; libcurl cannot share
 * one between threads) and the other threads' stacks are never touched.
 * Handed round in turn, each of WORKER_THREADS threads would meet
 * OpenRouter on a cold connection, a TLS handshake before the request.
 *
 * Signals are handled in one place: every thread blocks SIGTERM, SIGINT
 * and SIGUSR1, and the main thread waits for them with sigtimedwait(),
 * checking between waits whether the process is due for recycling.
 * Stopping (either way) sets `stop`: no thread accepts again, those in a
 * request finish it, the main thread joins them all and returns.  The
 * worker table (workertab.c) stops counting this process's threads as
 * capacity at once.
 *
 * Shared state: `stop` and `requests` are atomics; the configuration is
 * read-only once threads start.  Everything a request owns is on its
 * thread's stack or in struct orgw_req; see upstream.c, gateway_*.c and
 * store.c for their shared parts.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "clock.h"
#include "fcgi_io.h"
#include "gateway.h"
#include "load.h"
#include "genq.h"
#include "log.h"
#include "workertab.h"
#include "upstream.h"
#include "workers.h"

/* A thread's stack: the deepest request path (orgw_handle, a 16 KiB read
 * buffer, the state transactions' 4 KiB paths, libcurl and TLS) uses
 * well under 64 KiB; only the pages touched cost memory. */
#define WORKER_STACK_BYTES (256u * 1024)
#define ACCEPT_POLL_MS 200
#define SIGNAL_POLL_MS 250

/* A thread waiting for the lead. */
struct waiter {
	pthread_cond_t cv;
	bool lead;		/* under accept_mu */
};

struct pool {
	const struct orgw_conf *c;
	const char *conf_err;		/* after first_done: see first_load */
	const struct workers_first *first;
	pthread_mutex_t first_mu;
	atomic_bool first_done;
	int64_t max_requests, max_age_s;	/* as the process started */
	pthread_mutex_t accept_mu;	/* guards leader and idle */
	bool leader;			/* a thread leads (accepts) */
	struct waiter **idle;		/* waiting for the lead, last on top */
	int n_idle;
	atomic_bool stop;
	atomic_llong requests;		/* accepted by this process */
	atomic_int live;		/* threads not yet ended */
};

/* Takes the lead, waiting for it behind the threads that went idle
 * after this one. */
static void
lead_take(struct pool *p, struct waiter *w)
{
	pthread_mutex_lock(&p->accept_mu);
	if (p->leader) {
		w->lead = false;
		p->idle[p->n_idle++] = w;
		while (!w->lead)
			pthread_cond_wait(&w->cv, &p->accept_mu);
	} else {
		p->leader = true;
	}
	pthread_mutex_unlock(&p->accept_mu);
}

/* Hands the lead to the thread that went idle last, if any. */
static void
lead_pass(struct pool *p)
{
	struct waiter *next;

	pthread_mutex_lock(&p->accept_mu);
	if (p->n_idle > 0) {
		next = p->idle[--p->n_idle];
		next->lead = true;
		pthread_cond_signal(&next->cv);
	} else {
		p->leader = false;
	}
	pthread_mutex_unlock(&p->accept_mu);
}

/*
 * Waits for the next request as the leader: 0 with req holding it, or
 * -1 when the process stops (stop set, or the socket failed: then stop
 * is set for every thread).  Either way the lead passes on, so on a stop
 * every waiting thread leads once, sees it and ends.
 */
static int
accept_one(struct pool *p, FCGX_Request *req, struct waiter *w)
{
	struct pollfd pfd;
	int rc = -1, n;

	lead_take(p, w);
	while (!atomic_load(&p->stop)) {
		pfd.fd = req->listen_sock;
		pfd.events = POLLIN;
		pfd.revents = 0;
		n = poll(&pfd, 1, ACCEPT_POLL_MS);
		if (n == 0 || (n == -1 && errno == EINTR))
			continue;
		if (n == -1 || (pfd.revents & POLLNVAL) != 0) {
			log_err("FastCGI listening socket: %s",
				n == -1 ? log_strerror(errno) : "closed");
			atomic_store(&p->stop, true);
			break;
		}
		rc = FCGX_Accept_r(req);
		if (rc >= 0)
			break;
		/* Another process took it first, or the client left. */
		if (rc == -EAGAIN || rc == -EWOULDBLOCK || rc == -EINTR) {
			rc = -1;
			continue;
		}
		log_err("FastCGI accept failed (%d)", rc);
		atomic_store(&p->stop, true);
		rc = -1;
		break;
	}
	lead_pass(p);
	return rc;
}

/* Before req is served: the configuration of the process's first
 * request, once (workers.h, struct workers_first). */
static void
first_load(struct pool *p, FCGX_Request *req)
{
	const char *path;

	pthread_mutex_lock(&p->first_mu);
	if (!atomic_load(&p->first_done)) {
		path = FCGX_GetParam("ORGW_CONFIG", req->envp);
		if (path != NULL && *path != '\0')
			p->conf_err = p->first->load(path, p->first->arg);
		atomic_store(&p->first_done, true);
	}
	pthread_mutex_unlock(&p->first_mu);
}

static void *
worker_main(void *arg)
{
	struct pool *p = arg;
	FCGX_Request req;
	struct orgw_io io;
	struct orgw_env env;
	struct orgw_load load;
	struct waiter w;
	unsigned long long cl;
	bool body;

	if (pthread_cond_init(&w.cv, NULL) != 0) {
		log_err("out of memory starting a worker thread");
		goto out;
	}
	if (FCGX_InitRequest(&req, 0, 0) != 0) {
		log_err("FastCGI request initialisation failed");
		pthread_cond_destroy(&w.cv);
		goto out;
	}
	while (accept_one(p, &req, &w) == 0) {
		if (!atomic_load(&p->first_done))
			first_load(p, &req);
		workertab_enter(&load);
		atomic_fetch_add(&p->requests, 1);
		body = false;
		if (http_env_load(&env, req.envp) == ORGW_OK) {
			fcgi_io_init(&io, &req, p->c->client_send_timeout_ms);
			(void)orgw_handle(&io, &env, p->c, p->conf_err, &load);
			body = http_content_length(env.content_length, &cl) ==
				       ORGW_OK &&
			       cl > 0;
			http_env_free(&env);
		}
		if (body)
			fcgi_io_end(&req);
		FCGX_Finish_r(&req);
		workertab_leave();
	}
	FCGX_Free(&req, 0);
	pthread_cond_destroy(&w.cv);
out:
	upstream_thread_cleanup();
	atomic_fetch_sub(&p->live, 1);
	return NULL;
}

/* Waits for a stop signal or the recycling point; logs why it stops. */
static void
wait_for_stop(struct pool *p, const sigset_t *sigs)
{
	struct timespec ts = {0, SIGNAL_POLL_MS * 1000000L};
	int64_t t0 = clock_mono_ms(), age_limit, age;
	long long n;
	int sig;

	age_limit = load_age_limit_s(p->max_age_s,
				     (uint64_t)getpid() ^ (uint64_t)t0);
	for (;;) {
		sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0) {
			log_info("signal %d: accepting no more requests, "
				 "finishing those in flight", sig);
			return;
		}
		if (atomic_load(&p->live) == 0)
			return;
		age = (clock_mono_ms() - t0) / 1000;
		n = atomic_load(&p->requests);
		if (load_recycle_due(n, p->max_requests, age,
				     age_limit)) {
			log_info("recycling after %lld requests and %lld s: "
				 "finishing those in flight, then exiting",
				 n, (long long)age);
			return;
		}
	}
}

int
workers_serve(const struct orgw_conf *c, const char *conf_err,
	      const struct workers_first *first)
{
	struct pool p;
	pthread_attr_t attr;
	pthread_t *tid = NULL;
	sigset_t sigs;
	int i, n = 0, fl, rc = 1, nthreads;

	memset(&p, 0, sizeof(p));
	p.c = c;
	p.conf_err = conf_err;
	p.first = first;
	atomic_init(&p.first_done, first == NULL);
	nthreads = c->worker_threads;
	p.max_requests = c->worker_max_requests;
	p.max_age_s = c->worker_max_age_seconds;
	atomic_init(&p.stop, false);
	atomic_init(&p.requests, 0);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);	/* multiwatch's stop signal */
	/* Blocked before any thread starts, so every thread inherits it
	 * and only sigtimedwait() below takes them. */
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL) != 0 || FCGX_Init() != 0) {
		log_err("FastCGI initialisation failed");
		return 1;
	}
	/* See the file's comment.  The flag belongs to the socket, which
	 * the sibling workers share: they are orgw too. */
	if ((fl = fcntl(0, F_GETFL)) == -1 ||
	    fcntl(0, F_SETFL, fl | O_NONBLOCK) == -1) {
		log_err("FastCGI socket: O_NONBLOCK: %s", log_strerror(errno));
		return 1;
	}
	if (pthread_mutex_init(&p.first_mu, NULL) != 0)
		return 1;
	if (pthread_mutex_init(&p.accept_mu, NULL) != 0) {
		pthread_mutex_destroy(&p.first_mu);
		return 1;
	}
	/* Before any thread: a first request's configuration may replace
	 * c's strings once they run (struct workers_first). */
	if (workertab_open(c->state_path, (unsigned)nthreads) !=
		    ORGW_OK ||
	    (tid = calloc((size_t)nthreads, sizeof(*tid))) == NULL ||
	    (p.idle = calloc((size_t)nthreads, sizeof(*p.idle))) == NULL ||
	    pthread_attr_init(&attr) != 0) {
		log_err("out of memory starting the workers");
		goto out;
	}
	(void)pthread_attr_setstacksize(&attr, WORKER_STACK_BYTES);
	atomic_init(&p.live, nthreads);
	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&tid[i], &attr, worker_main, &p) != 0)
			break;
		n++;
	}
	pthread_attr_destroy(&attr);
	/* Threads that could not start never run: not live. */
	atomic_fetch_sub(&p.live, nthreads - n);
	if (n < nthreads)
		log_warn("started %d of WORKER_THREADS=%d threads", n,
			 nthreads);
	if (n > 0)
		wait_for_stop(&p, &sigs);
	atomic_store(&p.stop, true);
	workertab_drain();
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	/* What answers cut short cost is added before the process ends. */
	genq_finish(GENQ_EXIT_WAIT_MS);
	rc = n > 0 ? 0 : 1;
out:
	workertab_close();
	free(tid);
	free(p.idle);
	pthread_mutex_destroy(&p.accept_mu);
	pthread_mutex_destroy(&p.first_mu);
	return rc;
}
