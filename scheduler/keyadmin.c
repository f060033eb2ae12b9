/*
 * keyadmin.c - `orgw-score key ...` (keyadmin.h): the operator's team
 * key commands, each one transaction on the keys store (keystore_txn).
 * Here the command line, add, set, disable, enable, revoke, rotate and
 * release, and keyadmin_run(); beside it keyadmin_list.c (list, verify),
 * keyadmin_export.c and keyadmin_import.c, sharing keyadmin_impl.h.
 *
 * Decisions:
 *  - revoke deletes the key's record and hash index (the key is refused
 *    from that commit on) and keeps its use windows: what was spent under
 *    the name is history, export carries it, and a key added later under
 *    the same name counts on in the same windows, so a revoke and add
 *    does not reset a day's or month's budget.
 *  - import adds what is missing and leaves what is there; with
 *    --replace the records and windows it brings overwrite the stored
 *    ones (nothing it does not bring is deleted).  Either way importing
 *    the same lines twice changes nothing the second time.  Every line
 *    is checked before anything is written (GDBM cannot take a write
 *    back): one damaged line refuses the whole import, with its number.
 *  - The keys are drawn with getrandom(2), printed once on stdout and
 *    zeroed; stdout carries nothing else for add and rotate, so
 *    `KEY=$(orgw-score key add alice)` holds the key alone.
 *
 * A transaction's function may run again (a Redis conflict): each sets
 * its outputs afresh and does nothing outside the store.
 */
#include <sys/random.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "keyadmin.h"
#include "keyadmin_impl.h"
#include "keystore.h"
#include "state.h"
#include "store.h"
#include "teamkey.h"

#define RND_BYTES 32
#define LIMIT_INT_MAX 1000000000LL	/* --rpm, --concurrent */
#define BUDGET_USD_MAX 1e9
#define DAY_S 86400

enum verb {
	V_ADD,
	V_LIST,
	V_SET,
	V_DISABLE,
	V_ENABLE,
	V_REVOKE,
	V_ROTATE,
	V_VERIFY,
	V_EXPORT,
	V_IMPORT,
	V_RELEASE,
};

/* What each sub-command takes. */
static const struct verb_def {
	const char *name;
	enum verb verb;
	bool named;	/* takes NAME */
	bool limits;	/* takes --models ... --admin */
	bool json;	/* takes --json */
	bool replace;	/* takes --replace */
} verbs[] = {
	{"add", V_ADD, true, true, false, false},
	{"list", V_LIST, false, false, true, false},
	{"set", V_SET, true, true, false, false},
	{"disable", V_DISABLE, true, false, false, false},
	{"enable", V_ENABLE, true, false, false, false},
	{"revoke", V_REVOKE, true, false, false, false},
	{"rotate", V_ROTATE, true, false, false, false},
	{"verify", V_VERIFY, false, false, false, false},
	{"export", V_EXPORT, false, false, false, false},
	{"import", V_IMPORT, false, false, false, true},
	{"release", V_RELEASE, true, false, false, false},
};

/* Which limit options were given. */
enum {
	HAS_MODELS = 1 << 0,
	HAS_DAY = 1 << 1,
	HAS_MONTH = 1 << 2,
	HAS_RPM = 1 << 3,
	HAS_CONC = 1 << 4,
	HAS_EXPIRES = 1 << 5,
	HAS_ADMIN = 1 << 6,
};

void
keyadmin_usage(FILE *f)
{
	fputs("Team keys (KEYS_SECRET must be set; the keys store, "
	      "KEYS_PATH):\n"
	      "  key add NAME [LIMITS]  make a key; prints it once on stdout\n"
	      "  key list [--json]      names, models, limits, today's and "
	      "this month's use\n"
	      "  key set NAME LIMITS    change limits (0 clears one, "
	      "--models '*' all models)\n"
	      "  key disable NAME | key enable NAME\n"
	      "  key revoke NAME        delete the key (refused at once); "
	      "its use is kept\n"
	      "  key rotate NAME        a new key for NAME, printed once; "
	      "the old one refused\n"
	      "  key release NAME       give back NAME's concurrency leases "
	      "(a worker gone)\n"
	      "  key verify             read a key on stdin, print the name "
	      "it is (exit 1: none)\n"
	      "  key export             every key record and use window as "
	      "JSON lines\n"
	      "  key import [--replace] read such lines from stdin; adds what "
	      "is missing,\n"
	      "                         --replace overwrites what is there\n"
	      "  LIMITS: --models GLOB,... --budget-usd-day X "
	      "--budget-usd-month X --rpm N\n"
	      "          --concurrent N --expires YYYY-MM-DD|UNIX-SECONDS "
	      "--admin | --no-admin\n"
	      "  NAME: 1..64 of A-Z a-z 0-9 . _ -, beginning with a letter "
	      "or digit\n",
	      f);
}

static int usage_err(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* A usage message on stderr; KEYADMIN_EXIT_USAGE. */
static int
usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("orgw-score: key: ", stderr);
	va_start(ap, fmt);
	(void)vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (orgw-score key --help)\n", stderr);
	return KEYADMIN_EXIT_USAGE;
}

/* A budget: a finite number >= 0 (conf_parse_double). */
static bool
parse_usd(const char *v, double *out)
{
	double d;

	if (conf_parse_double(v, &d) != CONF_NUM_OK || !isfinite(d) ||
	    d < 0 || d > BUDGET_USD_MAX)
		return false;
	*out = d + 0.0;
	return true;
}

static bool
parse_count(const char *v, int64_t *out)
{
	long long n;

	if (conf_parse_ll(v, 0, LIMIT_INT_MAX, &n) != CONF_NUM_OK)
		return false;
	*out = (int64_t)n;
	return true;
}

/*
 * --expires: unix seconds (0: never), or YYYY-MM-DD, good through that
 * UTC day (it expires at the next midnight UTC).
 */
static bool
parse_expires(const char *v, int64_t *out)
{
	struct tm tm, back;
	long long n;
	time_t t;
	size_t i;

	if (conf_parse_ll(v, 0, 253402300799LL, &n) == CONF_NUM_OK) {
		*out = (int64_t)n;
		return true;
	}
	if (strlen(v) != 10 || v[4] != '-' || v[7] != '-')
		return false;
	for (i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return false;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (v[0] - '0') * 1000 + (v[1] - '0') * 100 +
		     (v[2] - '0') * 10 + (v[3] - '0') - 1900;
	tm.tm_mon = (v[5] - '0') * 10 + (v[6] - '0') - 1;
	tm.tm_mday = (v[8] - '0') * 10 + (v[9] - '0');
	back = tm;
	if ((t = timegm(&tm)) == (time_t)-1 || gmtime_r(&t, &tm) == NULL ||
	    tm.tm_year != back.tm_year || tm.tm_mon != back.tm_mon ||
	    tm.tm_mday != back.tm_mday)
		return false;	/* 2026-02-30 */
	*out = (int64_t)t + DAY_S;
	return true;
}

enum {
	O_MODELS = 256,
	O_DAY,
	O_MONTH,
	O_RPM,
	O_CONC,
	O_EXPIRES,
	O_ADMIN,
	O_NO_ADMIN,
	O_JSON,
	O_REPLACE,
};

/* One option into c; 0 or KEYADMIN_EXIT_USAGE after a message. */
static int
parse_opt(struct keyadmin_cmd *c, int ch, const char *v)
{
	switch (ch) {
	case O_MODELS:
		c->has |= HAS_MODELS;
		if (teamkey_set_globs(&c->opt, v) != ORGW_OK)
			return usage_err("--models: \"%s\" is not a list of "
					 "at most 16 model globs (printable, "
					 "no space)", v);
		return 0;
	case O_DAY:
		c->has |= HAS_DAY;
		return parse_usd(v, &c->opt.budget_day_usd) ? 0 :
		       usage_err("--budget-usd-day: want a number 0..1e9 "
				 "(0: none), got \"%s\"", v);
	case O_MONTH:
		c->has |= HAS_MONTH;
		return parse_usd(v, &c->opt.budget_month_usd) ? 0 :
		       usage_err("--budget-usd-month: want a number 0..1e9 "
				 "(0: none), got \"%s\"", v);
	case O_RPM:
		c->has |= HAS_RPM;
		return parse_count(v, &c->opt.rpm) ? 0 :
		       usage_err("--rpm: want an integer 0..1000000000 "
				 "(0: none), got \"%s\"", v);
	case O_CONC:
		c->has |= HAS_CONC;
		return parse_count(v, &c->opt.concurrent) ? 0 :
		       usage_err("--concurrent: want an integer 0..1000000000 "
				 "(0: none), got \"%s\"", v);
	case O_EXPIRES:
		c->has |= HAS_EXPIRES;
		return parse_expires(v, &c->opt.expires) ? 0 :
		       usage_err("--expires: want YYYY-MM-DD or unix seconds "
				 "(0: never), got \"%s\"", v);
	case O_ADMIN:
	case O_NO_ADMIN:
		c->has |= HAS_ADMIN;
		c->opt.admin = ch == O_ADMIN;
		return 0;
	case O_JSON:
		c->json = true;
		return 0;
	case O_REPLACE:
		c->replace = true;
		return 0;
	}
	return KEYADMIN_EXIT_USAGE;
}

/* The options given fit the sub-command; 0 or KEYADMIN_EXIT_USAGE. */
static int
check_fit(const struct keyadmin_cmd *c)
{
	const struct verb_def *d = c->def;

	if (c->has != 0 && !d->limits)
		return usage_err("%s takes no limit options", d->name);
	if (d->limits && c->def->verb == V_SET && c->has == 0)
		return usage_err("%s: nothing to set", d->name);
	if (c->json && !d->json)
		return usage_err("%s takes no --json", d->name);
	if (c->replace && !d->replace)
		return usage_err("%s takes no --replace", d->name);
	return 0;
}

int
keyadmin_parse(int argc, char *argv[], bool json, struct keyadmin_cmd **cmd)
{
	static const struct option longopts[] = {
		{"models", required_argument, NULL, O_MODELS},
		{"budget-usd-day", required_argument, NULL, O_DAY},
		{"budget-usd-month", required_argument, NULL, O_MONTH},
		{"rpm", required_argument, NULL, O_RPM},
		{"concurrent", required_argument, NULL, O_CONC},
		{"expires", required_argument, NULL, O_EXPIRES},
		{"admin", no_argument, NULL, O_ADMIN},
		{"no-admin", no_argument, NULL, O_NO_ADMIN},
		{"json", no_argument, NULL, O_JSON},
		{"replace", no_argument, NULL, O_REPLACE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct keyadmin_cmd *c;
	char **av = argv + 1;
	int ch, rc = 0, left;
	size_t i;

	*cmd = NULL;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		keyadmin_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? KEYADMIN_EXIT_USAGE : -1;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		fputs("orgw-score: out of memory\n", stderr);
		return KEYADMIN_EXIT_USAGE;
	}
	c->json = json;
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			c->def = &verbs[i];
	if (c->def == NULL) {
		rc = usage_err("unknown sub-command %s", argv[1]);
		goto out;
	}
	/* The sub-command is getopt's argv[0]; 0 starts it afresh (GNU)
	 * after orgw-score's own parse. */
	optind = 0;
	opterr = 0;
	while (rc == 0 && (ch = getopt_long(argc - 1, av, ":h", longopts,
					    NULL)) != -1) {
		if (ch == 'h') {
			keyadmin_usage(stdout);
			rc = -1;
		} else if (ch == ':') {
			rc = usage_err("%s needs a value", av[optind - 1]);
		} else if (ch == '?') {
			rc = usage_err("unknown argument %s", av[optind - 1]);
		} else {
			rc = parse_opt(c, ch, optarg);
		}
	}
	if (rc != 0)
		goto out;
	left = argc - 1 - optind;
	if (c->def->named && left != 1) {
		rc = usage_err("%s takes one NAME", c->def->name);
		goto out;
	}
	if (!c->def->named && left != 0) {
		rc = usage_err("%s takes no arguments", c->def->name);
		goto out;
	}
	if (c->def->named) {
		const char *name = av[optind];

		/* Names go into a /metrics label, a log line and HTML. */
		if (!teamkey_name_ok(name)) {
			rc = usage_err("bad NAME (1..64 of A-Z a-z 0-9 . _ "
				       "-, beginning with a letter or digit)");
			goto out;
		}
		(void)snprintf(c->name, sizeof(c->name), "%s", name);
	}
	rc = check_fit(c);
out:
	if (rc != 0)
		free(c);
	else
		*cmd = c;
	return rc;
}

void
keyadmin_free(struct keyadmin_cmd *cmd)
{
	free(cmd);
}

/* The limit options of c onto k. */
static void
apply(struct teamkey *k, const struct keyadmin_cmd *c)
{
	size_t i;

	if (c->has & HAS_MODELS) {
		for (i = 0; i < c->opt.n_globs; i++)
			memcpy(k->globs[i], c->opt.globs[i],
			       sizeof(k->globs[i]));
		k->n_globs = c->opt.n_globs;
	}
	if (c->has & HAS_DAY)
		k->budget_day_usd = c->opt.budget_day_usd;
	if (c->has & HAS_MONTH)
		k->budget_month_usd = c->opt.budget_month_usd;
	if (c->has & HAS_RPM)
		k->rpm = c->opt.rpm;
	if (c->has & HAS_CONC)
		k->concurrent = c->opt.concurrent;
	if (c->has & HAS_EXPIRES)
		k->expires = c->opt.expires;
	if (c->has & HAS_ADMIN)
		k->admin = c->opt.admin;
}

/* A new key into plain and its hash into k; false (after a message)
 * when no random bytes or no hash could be had. */
static bool
new_key(const char *secret, char plain[TEAMKEY_PLAIN_MAX], struct teamkey *k)
{
	unsigned char rnd[RND_BYTES];
	size_t got = 0;
	ssize_t r;
	bool ok;

	while (got < sizeof(rnd)) {
		r = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			perror("orgw-score: key: getrandom");
			return false;
		}
		got += (size_t)r;
	}
	teamkey_plain_make(rnd, plain);
	explicit_bzero(rnd, sizeof(rnd));
	ok = teamkey_hash(secret, plain, k->hash);
	if (!ok) {
		explicit_bzero(plain, TEAMKEY_PLAIN_MAX);
		fputs("orgw-score: key: the keyed hash failed\n", stderr);
	}
	return ok;
}

/* The edits of one key: what fn does to the record, and what it found. */
struct edit {
	const struct keyadmin_cmd *cmd;
	struct teamkey k;	/* add: the new record; else read */
	const char *hash;	/* rotate: the new hash */
	int64_t now;
	bool found;
};

static enum orgw_err
do_add(struct store *s, void *arg)
{
	struct edit *e = arg;
	struct teamkey old;
	enum orgw_err err = keystore_get(s, e->k.name, &old);

	e->found = err != ORGW_ENOENT;
	if (err != ORGW_ENOENT)
		return err == ORGW_OK ? ORGW_EINVAL : err;
	return keystore_put(s, &e->k);
}

static enum orgw_err
do_edit(struct store *s, void *arg)
{
	struct edit *e = arg;
	enum orgw_err err;

	e->found = false;
	if (e->cmd->def->verb == V_REVOKE) {
		err = keystore_del(s, e->cmd->name);
		e->found = err != ORGW_ENOENT;
		return err;
	}
	if ((err = keystore_get(s, e->cmd->name, &e->k)) != ORGW_OK) {
		e->found = err != ORGW_ENOENT;
		return err;
	}
	e->found = true;
	switch (e->cmd->def->verb) {
	case V_SET:
		apply(&e->k, e->cmd);
		break;
	case V_DISABLE:
	case V_ENABLE:
		e->k.disabled = e->cmd->def->verb == V_DISABLE;
		break;
	case V_ROTATE:
		(void)snprintf(e->k.hash, sizeof(e->k.hash), "%s", e->hash);
		e->k.rotated = e->now;
		break;
	default:
		return ORGW_EINVAL;
	}
	return keystore_put(s, &e->k);
}

/* The message for a failed transaction; KEYADMIN_EXIT_FAILED. */
int
txn_failed(const struct orgw_conf *c, const char *what, enum orgw_err err)
{
	fprintf(stderr, "orgw-score: key %s: keys store %s unusable: %s\n",
		what, c->state_backend == CONF_BACKEND_REDIS ? "(redis)" :
							       c->keys_path,
		orgw_strerror(err));
	return KEYADMIN_EXIT_FAILED;
}

/* Prints plain alone on stdout, then zeroes it; false on a write error. */
static bool
print_key(char plain[TEAMKEY_PLAIN_MAX])
{
	bool ok = printf("%s\n", plain) > 0 && fflush(stdout) == 0;

	explicit_bzero(plain, TEAMKEY_PLAIN_MAX);
	return ok;
}

static int
run_add(const struct orgw_conf *c, const struct keyadmin_cmd *cmd)
{
	char plain[TEAMKEY_PLAIN_MAX];
	struct edit e;
	enum orgw_err err;

	memset(&e, 0, sizeof(e));
	e.cmd = cmd;
	e.now = clock_now_s();
	(void)snprintf(e.k.name, sizeof(e.k.name), "%s", cmd->name);
	apply(&e.k, cmd);
	e.k.created = e.now;
	if (!new_key(c->keys_secret, plain, &e.k))
		return KEYADMIN_EXIT_FAILED;
	err = keystore_txn(c, true, do_add, &e);
	if (err != ORGW_OK) {
		explicit_bzero(plain, sizeof(plain));
		if (err == ORGW_EINVAL && e.found) {
			fprintf(stderr, "orgw-score: key add: %s exists "
				"already (key set, key rotate)\n", cmd->name);
			return KEYADMIN_EXIT_FAILED;
		}
		return txn_failed(c, "add", err);
	}
	if (!print_key(plain)) {
		perror("orgw-score: key add: stdout (the key is made; "
		       "key rotate it)");
		return KEYADMIN_EXIT_FAILED;
	}
	if (e.k.expires != 0 && e.k.expires <= e.now)
		fprintf(stderr, "orgw-score: key add: %s has expired "
			"already (--expires)\n", cmd->name);
	fprintf(stderr, "orgw-score: key %s added; the key above is shown "
		"this once\n", cmd->name);
	return KEYADMIN_EXIT_OK;
}

static int
run_edit(const struct orgw_conf *c, const struct keyadmin_cmd *cmd)
{
	char plain[TEAMKEY_PLAIN_MAX];
	struct teamkey fresh;
	struct edit e;
	enum orgw_err err;
	bool rotate = cmd->def->verb == V_ROTATE;

	memset(&e, 0, sizeof(e));
	e.cmd = cmd;
	e.now = clock_now_s();
	if (rotate) {
		memset(&fresh, 0, sizeof(fresh));
		if (!new_key(c->keys_secret, plain, &fresh))
			return KEYADMIN_EXIT_FAILED;
		e.hash = fresh.hash;
	}
	err = keystore_txn(c, true, do_edit, &e);
	if (err != ORGW_OK) {
		if (rotate)
			explicit_bzero(plain, sizeof(plain));
		if (err == ORGW_ENOENT) {
			fprintf(stderr, "orgw-score: key %s: no key %s\n",
				cmd->def->name, cmd->name);
			return KEYADMIN_EXIT_FAILED;
		}
		return txn_failed(c, cmd->def->name, err);
	}
	if (rotate && !print_key(plain)) {
		perror("orgw-score: key rotate: stdout (the old key is "
		       "refused already; rotate again)");
		return KEYADMIN_EXIT_FAILED;
	}
	fprintf(stderr, "orgw-score: key %s: %s%s\n", cmd->name,
		cmd->def->verb == V_SET ? "set" :
		cmd->def->verb == V_DISABLE ? "disabled" :
		cmd->def->verb == V_ENABLE ? "enabled" :
		cmd->def->verb == V_REVOKE ? "revoked (its use is kept)" :
					     "rotated; the old key is refused, "
					     "the new one above is shown this "
					     "once",
		cmd->def->verb == V_SET && e.k.expires != 0 &&
				e.k.expires <= e.now ?
			" (it has expired)" :
			"");
	return KEYADMIN_EXIT_OK;
}

/* key release NAME: the leases live in the routing state, so a key that
 * is gone from the keys store can still be released. */
static int
run_release(const struct orgw_conf *c, const struct keyadmin_cmd *cmd)
{
	enum orgw_err err;
	size_t n = 0;

	if ((err = state_rate_release(c, cmd->name, &n)) != ORGW_OK) {
		fprintf(stderr, "orgw-score: key release: state %s unusable: "
			"%s\n",
			c->state_backend == CONF_BACKEND_REDIS ? "(redis)" :
								 c->state_path,
			orgw_strerror(err));
		return KEYADMIN_EXIT_FAILED;
	}
	fprintf(stderr, "orgw-score: key %s: %zu concurrency lease%s "
		"released\n",
		cmd->name, n, n == 1 ? "" : "s");
	return KEYADMIN_EXIT_OK;
}

int
keyadmin_run(const struct orgw_conf *c, const struct keyadmin_cmd *cmd)
{
	if (c->keys_secret == NULL || c->keys_secret[0] == '\0') {
		fputs("orgw-score: key: KEYS_SECRET is not set: set KEYS_SECRET "
		      "or KEYS_SECRET_FILE (e.g. `openssl rand -hex 32`), the "
		      "same on every gateway host and for orgw-score; "
		      "changing it later invalidates every team key\n",
		      stderr);
		return KEYADMIN_EXIT_USAGE;
	}
	switch (cmd->def->verb) {
	case V_ADD:
		return run_add(c, cmd);
	case V_LIST:
		return run_list(c, cmd);
	case V_VERIFY:
		return run_verify(c);
	case V_EXPORT:
		return run_export(c);
	case V_IMPORT:
		return run_import(c, cmd);
	case V_RELEASE:
		return run_release(c, cmd);
	case V_SET:
	case V_DISABLE:
	case V_ENABLE:
	case V_REVOKE:
	case V_ROTATE:
		return run_edit(c, cmd);
	}
	return KEYADMIN_EXIT_USAGE;
}
