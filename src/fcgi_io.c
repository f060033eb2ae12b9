/*
 * fcgi_io.c - the two transports behind struct orgw_io.
 *
 * FastCGI: libfcgi streams; a failed put or flush means the web server
 * closed the connection (the client left): reported as -1 so the caller
 * stops and aborts upstream (docs/style.md 3: a client disconnect is not a
 * provider failure).  CGI: plain read(2)/write(2) on fds 0 and 1.
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "clock.h"
#include "fcgi_io.h"
#include "log.h"

static ssize_t
f_read(void *ctx, char *buf, size_t n)
{
	FCGX_Request *r = ctx;
	int got;

	if (r->in == NULL)
		return -1;
	if (n > 1u << 30)
		n = 1u << 30;
	/* FCGX_GetStr() reads records until it has n bytes, so a client
	 * whose web server hands on its body a byte at a time would keep it
	 * reading however SO_RCVTIMEO is set.  What the stream holds already,
	 * or a single byte (one record read) when it holds nothing, keeps
	 * each call to one wait for the socket, which the caller bounds
	 * (recv_timeout).  rdNext and stop are libfcgi's public stream
	 * fields (fcgiapp.h). */
	if (r->in->rdNext < r->in->stop) {
		size_t held = (size_t)(r->in->stop - r->in->rdNext);

		if (n > held)
			n = held;
	} else {
		n = 1;
	}
	got = FCGX_GetStr(buf, (int)n, r->in);
	if (got < 0 || (got == 0 && FCGX_GetError(r->in) != 0))
		return -1;
	return got;
}

static int
f_write(void *ctx, const char *p, size_t n)
{
	FCGX_Request *r = ctx;

	if (r->out == NULL)
		return -1;
	while (n > 0) {
		int chunk = n > 1u << 30 ? 1 << 30 : (int)n;
		if (FCGX_PutStr(p, chunk, r->out) != chunk)
			return -1;
		p += chunk;
		n -= (size_t)chunk;
	}
	return 0;
}

static int
f_flush(void *ctx)
{
	FCGX_Request *r = ctx;

	if (r->out == NULL)
		return -1;
	return FCGX_FFlush(r->out) == 0 ? 0 : -1;
}

static void
f_drain(void *ctx)
{
	FCGX_Request *r = ctx;
	char sink[4096];

	if (r->in == NULL)
		return;
	while (FCGX_GetStr(sink, sizeof(sink), r->in) > 0)
		;
}

/*
 * True when fd is a Unix-domain socket (the web server on this machine).
 * Asked once: every connection of a process comes from one listening
 * socket.
 */
static bool
unix_socket(int fd)
{
	/* Shared by the threads: at worst two ask at once and store the
	 * same answer. */
	static _Atomic int known = -1;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int k = atomic_load(&known);

	if (k == -1) {
		k = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
		    ss.ss_family == AF_UNIX;
		atomic_store(&known, k);
	}
	return k == 1;
}

/*
 * FCGX_Finish_r: flushes, sends FCGI_END_REQUEST and closes the
 * connection, freeing the streams (so the checks above).  main()'s own
 * FCGX_Finish_r after the handler is then a no-op, as it already is for
 * the one FCGX_Accept_r makes.
 */
static void
f_finish(void *ctx)
{
	FCGX_Request *r = ctx;

	if (r->out != NULL && unix_socket(r->ipcFd))
		FCGX_Detach(r);
	FCGX_Finish_r(r);
}

/* Sets the socket's SO_SNDTIMEO or SO_RCVTIMEO (name, for the log) to
 * ms; 0 waits without end. */
static void
sock_timeout(FCGX_Request *r, int opt, const char *name, int64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	if (r->ipcFd >= 0 &&
	    setsockopt(r->ipcFd, SOL_SOCKET, opt, &tv, sizeof(tv)) != 0)
		log_warn("FastCGI socket: %s: %s", name, log_strerror(errno));
}

/* A write the web server does not take for ms fails (EAGAIN), and
 * libfcgi reports the stream broken: a client that stopped reading ends
 * the request like one that left, instead of holding the worker
 * forever. */
static void
f_send_timeout(void *ctx, int64_t ms)
{
	sock_timeout(ctx, SO_SNDTIMEO, "SO_SNDTIMEO", ms);
}

/* A read of the request that waits longer fails: libfcgi then reports
 * the stream broken, and the body comes up short. */
static void
f_recv_timeout(void *ctx, int64_t ms)
{
	sock_timeout(ctx, SO_RCVTIMEO, "SO_RCVTIMEO", ms);
}

/* How long fcgi_io_end() lets the web server close the connection after
 * the answer's last record before it stops reading. */
#define END_WAIT_MS 1000

void
fcgi_io_end(void *req)
{
	FCGX_Request *r = req;
	struct pollfd pfd;
	char sink[4096];
	int64_t left, until;

	if (r->in == NULL || r->in->isClosed || r->keepConnection ||
	    r->ipcFd < 0)
		return;
	/* The answer and FCGI_END_REQUEST go first: lighttpd and nginx then
	 * close the connection, whatever is left of the body.  A server that
	 * sends the whole body before it reads the answer (Caddy) is told to
	 * stop by the shutdown; it cannot deliver the answer anyway until the
	 * client has sent everything. */
	(void)FCGX_FClose(r->err);
	(void)FCGX_FClose(r->out);
	until = clock_mono_ms() + END_WAIT_MS;
	while ((left = until - clock_mono_ms()) > 0) {
		pfd.fd = r->ipcFd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) <= 0)
			break;
		if (read(r->ipcFd, sink, sizeof(sink)) <= 0)
			return;	/* closed by the web server */
	}
	(void)shutdown(r->ipcFd, SHUT_RD);
}

void
fcgi_io_init(struct orgw_io *io, void *req, int64_t send_timeout_ms)
{
	FCGX_Request *r = req;

	/* CLIENT_SEND_TIMEOUT_MS, per request: the web server may hand
	 * over a new connection each time. */
	f_send_timeout(r, send_timeout_ms);

	io->ctx = r;
	io->read = f_read;
	io->write = f_write;
	io->flush = f_flush;
	io->drain = f_drain;
	io->finish = f_finish;
	io->client_fd = r->ipcFd;
	io->client_events = POLLIN;
	io->status = NULL;
	io->send_timeout = f_send_timeout;
	io->recv_timeout = f_recv_timeout;
}

static unsigned long long c_body_read;	/* request body bytes read so far */
static int c_send_timeout_ms = -1;	/* CLIENT_SEND_TIMEOUT_MS, for poll */

static ssize_t
c_read(void *ctx, char *buf, size_t n)
{
	ssize_t got;

	(void)ctx;
	do
		got = read(STDIN_FILENO, buf, n);
	while (got == -1 && errno == EINTR);
	if (got > 0)
		c_body_read += (unsigned long long)got;
	return got;
}

void
cgi_io_discard_body(const char *content_length, unsigned long long max_bytes)
{
	unsigned long long want, left;
	char sink[16384];
	ssize_t got;

	if (http_content_length(content_length, &want) != ORGW_OK ||
	    want <= c_body_read)
		return;
	left = want - c_body_read;
	if (left > max_bytes)
		return;
	while (left > 0) {
		got = read(STDIN_FILENO, sink,
			   left < sizeof(sink) ? (size_t)left : sizeof(sink));
		if (got == -1 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		left -= (unsigned long long)got;
	}
}

static int
c_write(void *ctx, const char *p, size_t n)
{
	ssize_t w;

	struct pollfd pfd;
	int ready;

	(void)ctx;
	while (n > 0) {
		/* CLIENT_SEND_TIMEOUT_MS: stdout may be a pipe, where
		 * SO_SNDTIMEO does not apply; wait for room with poll. */
		pfd.fd = STDOUT_FILENO;
		pfd.events = POLLOUT;
		pfd.revents = 0;
		ready = poll(&pfd, 1, c_send_timeout_ms);
		if (ready == -1 && errno == EINTR)
			continue;
		if (ready <= 0)
			return -1;
		w = write(STDOUT_FILENO, p, n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
c_flush(void *ctx)
{
	(void)ctx;
	return 0;	/* c_write is unbuffered */
}

void
cgi_io_init(struct orgw_io *io, int64_t send_timeout_ms)
{
	c_send_timeout_ms = send_timeout_ms > INT_MAX ? INT_MAX :
							(int)send_timeout_ms;
	io->ctx = NULL;
	io->read = c_read;
	io->write = c_write;
	io->flush = c_flush;
	io->drain = NULL;
	io->finish = NULL;
	/* The web server closes its end of stdout (a pipe under mod_cgi,
	 * a socket under mod_cgid) when it finds the client gone: watched
	 * for that hang-up alone, since stdin may sit at its end and read
	 * as ready all along. */
	io->client_fd = STDOUT_FILENO;
	io->client_events = 0;
	io->status = NULL;
	/* One request per process, and no bound on side requests there. */
	io->send_timeout = NULL;
	io->recv_timeout = NULL;
}
