/*
 * test_store_redis.c - the Redis back-end's lost EXEC reply
 * (store_redis_commit.c fence()), on a private redis-server frozen with
 * SIGSTOP at the moment the commit is sent, as a paused or starved Redis
 * would be.
 *
 * What must hold: a write transaction that asked for its exact outcome
 * (store_exact_outcome) is reported ORGW_OK exactly when its writes are
 * in Redis, however long the freeze lasts within the fence's time; in
 * particular when the freeze outlasts the fence's own first SET, which
 * Redis then runs once it resumes although its reply was lost.
 *
 * Without redis-server on PATH the checks are skipped.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "t.h"
#include "conf.h"
#include "store.h"

#define KEY "FENCE_TEST"

static char dir[] = "/tmp/orgw-test-redis.XXXXXX";
static char sock[200];
static pid_t redis_pid = -1;

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A connection of the test's own (another host), or NULL. */
static redisContext *
other(void)
{
	struct timeval tv = {2, 0};
	redisContext *ctx = redisConnectUnixWithTimeout(sock, tv);

	if (ctx != NULL && ctx->err != 0) {
		redisFree(ctx);
		ctx = NULL;
	}
	return ctx;
}

/* Starts redis-server on a unix socket in dir: false when it could not
 * be started (not installed). */
static bool
redis_start(void)
{
	char logf[256];
	redisContext *ctx;
	redisReply *r;
	int i;

	snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
	snprintf(logf, sizeof(logf), "%s/redis.log", dir);
	if ((redis_pid = fork()) < 0)
		return false;
	if (redis_pid == 0) {
		execlp("redis-server", "redis-server", "--port", "0",
		       "--unixsocket", sock, "--save", "", "--appendonly",
		       "no", "--dir", dir, "--logfile", logf, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {
		if (waitpid(redis_pid, NULL, WNOHANG) == redis_pid) {
			redis_pid = -1;
			return false;
		}
		if ((ctx = other()) != NULL) {
			r = redisCommand(ctx, "PING");
			freeReplyObject(r);
			redisFree(ctx);
			if (r != NULL)
				return true;
		}
		sleep_ms(50);
	}
	return false;
}

static void
redis_stop(void)
{
	if (redis_pid <= 0)
		return;
	kill(redis_pid, SIGCONT);
	kill(redis_pid, SIGTERM);
	waitpid(redis_pid, NULL, 0);
	redis_pid = -1;
}

/* orgw:KEY as another host sees it: malloc'd, or NULL when absent. */
static char *
other_get(void)
{
	redisContext *ctx = other();
	redisReply *r;
	char *v = NULL;

	if (ctx == NULL)
		return NULL;
	r = redisCommand(ctx, "GET orgw:" KEY);
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		v = strdup(r->str);
	freeReplyObject(r);
	redisFree(ctx);
	return v;
}

static bool
other_set(const char *val)
{
	redisContext *ctx = other();
	redisReply *r;
	bool ok;

	if (ctx == NULL)
		return false;
	r = redisCommand(ctx, "SET orgw:" KEY " %s", val);
	ok = r != NULL && r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	redisFree(ctx);
	return ok;
}

static long resume_after_ms;

static void *
resume(void *arg)
{
	(void)arg;
	sleep_ms(resume_after_ms);
	kill(redis_pid, SIGCONT);
	return NULL;
}

/*
 * One write transaction on orgw:KEY that must know its outcome: reads
 * the key (WATCH), then, when conflict, another host writes it; Redis is
 * frozen just before the commit goes out and resumed freeze_ms later.
 * The commit's answer, and what Redis holds after, in *held (malloc'd).
 */
static enum orgw_err
frozen_commit(const struct orgw_conf *c, const char *val, bool conflict,
	      long freeze_ms, char **held)
{
	struct store *s;
	pthread_t t;
	enum orgw_err err;
	char *v = NULL;

	*held = NULL;
	if ((err = store_open(&s, c, true, 1000)) != ORGW_OK)
		return err;
	store_exact_outcome(s);
	if ((err = store_get(s, KEY, &v)) != ORGW_OK ||
	    (err = store_put(s, KEY, val)) != ORGW_OK) {
		free(v);
		store_abort(s);
		return err;
	}
	free(v);
	if (conflict && !other_set("other")) {
		store_abort(s);
		return ORGW_EINVAL;
	}
	resume_after_ms = freeze_ms;
	if (kill(redis_pid, SIGSTOP) != 0 ||
	    pthread_create(&t, NULL, resume, NULL) != 0) {
		kill(redis_pid, SIGCONT);
		store_abort(s);
		return ORGW_EINVAL;
	}
	err = store_close(s);
	pthread_join(t, NULL);
	*held = other_get();
	return err;
}

static bool
is(const char *v, const char *want)
{
	return v != NULL && strcmp(v, want) == 0;
}

/*
 * 0.8 s outlasts the EXEC's command timeout only: the fence's first SET
 * is answered once Redis resumes.  1.5 s outlasts the fence's first SET
 * too (sent about 0.5 s in, given up 1 s in): Redis runs that SET once it
 * resumes, and the marker it sets must not read as the transaction's.
 */
static const struct fence_case {
	const char *val;	/* what the transaction writes */
	bool refused;		/* a key it read changes before its EXEC */
	long freeze_ms;
	const char *what;
} fence_cases[] = {
	{"a", false, 800,
	 "frozen 0.8 s: the EXEC went in, and the commit says so"},
	{"b", true, 800,
	 "frozen 0.8 s, EXEC refused (a key read changed): the commit fails "
	 "and nothing was written"},
	{"c", false, 1500,
	 "frozen 1.5 s: the EXEC went in, and the commit says so"},
	{"d", true, 1500,
	 "frozen 1.5 s, EXEC refused: the commit fails, though an earlier "
	 "fence's SET set the marker"},
};

static void
test_fence(const struct orgw_conf *c)
{
	const struct fence_case *f;
	enum orgw_err err;
	char *v;
	size_t i;

	for (i = 0; i < sizeof(fence_cases) / sizeof(fence_cases[0]); i++) {
		f = &fence_cases[i];
		err = frozen_commit(c, f->val, f->refused, f->freeze_ms, &v);
		T_ASSERT(f->what, f->refused ? err == ORGW_EIO && is(v, "other") :
					       err == ORGW_OK && is(v, f->val));
		free(v);
	}
}

int
main(void)
{
	struct orgw_conf c;
	char url[256], err[160], logf[256];

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	if (!redis_start()) {
		redis_stop();
		printf("skip - store_redis: no redis-server to run\n");
		rmdir(dir);
		return 0;
	}
	snprintf(url, sizeof(url), "unix:%s", sock);
	T_ASSERT("conf_init", conf_init(&c) == ORGW_OK);
	T_ASSERT("STATE_BACKEND=redis on the private server",
		 conf_set(&c, "STATE_BACKEND", "redis", err, sizeof(err)) ==
				 ORGW_OK &&
			 conf_set(&c, "REDIS_URL", url, err, sizeof(err)) ==
				 ORGW_OK);
	test_fence(&c);
	conf_free(&c);
	redis_stop();
	/* redis-server removes its socket; the log is ours to remove. */
	snprintf(logf, sizeof(logf), "%s/redis.log", dir);
	unlink(sock);
	unlink(logf);
	if (rmdir(dir) != 0)
		fprintf(stderr, "test_store_redis: rmdir %s: %s\n", dir,
			strerror(errno));
	return T_REPORT();
}
