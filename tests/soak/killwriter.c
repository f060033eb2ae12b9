/*
 * killwriter.c - a state writer that dies in the middle of a transaction
 * (tests/integration/t0710-state-kill-writers.sh).
 *
 *   killwriter PATH PUTS self   open PATH as orgw's workers do (store.c:
 *                               flock on PATH.lock, gdbm_open with
 *                               GDBM_NOLOCK), store PUTS values of about
 *                               1 KiB under KILLTEST:<i> (enough to split
 *                               buckets and write part of the file), then
 *                               raise(SIGKILL): no gdbm_close, no unlock.
 *   killwriter PATH PUTS hold   the same, then print "holding" and sleep
 *                               until killed from outside (SIGKILL by
 *                               the test: a writer killed while it holds
 *                               the lock).
 *   killwriter PATH PUTS loop   store PUTS values (0 = forever), cycling
 *                               over PUTS/4 keys and deleting every
 *                               third, so bucket splits, frees and the
 *                               header are being written all the time;
 *                               the test kills it at a random moment.
 *   killwriter PATH PUTS txns   PUTS transactions (0 = forever) of three
 *                               stores and a delete each, as the workers
 *                               make them (a lock, a few writes, a
 *                               commit), cycling over 4096 keys; the test
 *                               kills it at a random moment and checks
 *                               that every KILLTEST:<k> value is whole
 *                               JSON whose "i" is k modulo 4096.
 *
 * Built by the test from build/release/liborgw.a; not part of orgw.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "store_gdbm.h"

/* One value of KILLTEST:<i % 4096>, its length varying with i. */
static void
value_of(char *val, size_t n, long i)
{
	snprintf(val, n, "{\"v\":1,\"i\":%ld,\"pad\":\"%0*d\"}", i,
		 (int)(i % 1000), 0);
}

static int
txns(const char *path, long n)
{
	struct store *s;
	char key[64], val[1100];
	long t, i = 0;
	int j;

	printf("writing\n");
	fflush(stdout);
	for (t = 0; n == 0 || t < n; t++) {
		if (store_gdbm_open(&s, path, true, 5000) != ORGW_OK) {
			fprintf(stderr, "killwriter: open %ld failed\n", t);
			return 1;
		}
		for (j = 0; j < 3; j++, i++) {
			snprintf(key, sizeof(key), "KILLTEST:%ld", i % 4096);
			value_of(val, sizeof(val), i);
			if (store_put(s, key, val) != ORGW_OK)
				goto fail;
		}
		snprintf(key, sizeof(key), "KILLTEST:%ld", (i * 7) % 4096);
		if (store_del(s, key) != ORGW_OK ||
		    store_close(s) != ORGW_OK) {
			fprintf(stderr, "killwriter: txn %ld failed\n", t);
			return 1;
		}
	}
	return 0;
fail:
	fprintf(stderr, "killwriter: put in txn %ld failed\n", t);
	store_abort(s);
	return 1;
}

int
main(int argc, char **argv)
{
	struct store *s;
	char key[64], val[1100];
	long i, puts_n;
	enum orgw_err err;

	if (argc != 4 || (strcmp(argv[3], "self") && strcmp(argv[3], "hold") &&
			  strcmp(argv[3], "loop") && strcmp(argv[3], "txns"))) {
		fprintf(stderr, "usage: killwriter PATH PUTS self|hold|loop|txns\n");
		return 2;
	}
	puts_n = strtol(argv[2], NULL, 10);
	if (puts_n < 0 || puts_n > 1000000)
		return 2;
	if (strcmp(argv[3], "txns") == 0)
		return txns(argv[1], puts_n);
	if ((err = store_gdbm_open(&s, argv[1], true, 5000)) != ORGW_OK) {
		fprintf(stderr, "killwriter: store_gdbm_open: %s\n",
			orgw_strerror(err));
		return 1;
	}
	if (strcmp(argv[3], "loop") == 0) {
		printf("writing\n");
		fflush(stdout);
		for (i = 0; puts_n == 0 || i < puts_n; i++) {
			snprintf(key, sizeof(key), "KILLTEST:%ld", i % 4096);
			value_of(val, sizeof(val), i);
			if (store_put(s, key, val) != ORGW_OK ||
			    (i % 3 == 0 && store_del(s, key) != ORGW_OK)) {
				fprintf(stderr, "killwriter: write %ld failed\n", i);
				return 1;
			}
		}
		return 0;	/* still no close: as if killed */
	}
	for (i = 0; i < puts_n; i++) {
		snprintf(key, sizeof(key), "KILLTEST:%ld", i);
		snprintf(val, sizeof(val), "{\"v\":1,\"i\":%ld,\"pad\":\"%01000d\"}",
			 i, 0);
		if (store_put(s, key, val) != ORGW_OK) {
			fprintf(stderr, "killwriter: put %ld failed\n", i);
			return 1;
		}
	}
	if (strcmp(argv[3], "self") == 0)
		raise(SIGKILL);
	printf("holding\n");
	fflush(stdout);
	for (;;)
		pause();
}
