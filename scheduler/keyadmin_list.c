/*
 * keyadmin_list.c - `orgw-score key list` and `key verify` (see
 * keyadmin.c): every key with its limits and this day's and month's use,
 * as a table or JSON, and the name and state of the key read from stdin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "clock.h"
#include "keyadmin.h"
#include "keyadmin_impl.h"
#include "keystore.h"
#include "ledger.h"
#include "store.h"
#include "teamkey.h"

/* One key of a list, with its use. */
struct row {
	struct teamkey k;
	struct ledger_cell day, month;
};

struct rows {
	struct row *v;
	size_t n, cap;
	bool oom;
};

static int
collect(void *arg, const struct teamkey *k)
{
	struct rows *r = arg;
	struct row *v;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;

		if ((v = realloc(r->v, cap * sizeof(*v))) == NULL) {
			r->oom = true;
			return 1;
		}
		r->v = v;
		r->cap = cap;
	}
	memset(&r->v[r->n], 0, sizeof(r->v[0]));
	r->v[r->n++].k = *k;
	return 0;
}

struct list_ctx {
	struct rows rows;
	int64_t now;
};

static enum orgw_err
do_list(struct store *s, void *arg)
{
	struct list_ctx *l = arg;
	enum orgw_err err;
	size_t i;

	l->rows.n = 0;
	l->rows.oom = false;
	if ((err = keystore_each(s, collect, &l->rows)) != ORGW_OK)
		return err;
	if (l->rows.oom)
		return ORGW_ENOMEM;
	for (i = 0; i < l->rows.n; i++) {
		struct row *r = &l->rows.v[i];

		err = keystore_use(s, r->k.name, l->now, &r->day, &r->month);
		/* A damaged window (logged) shows as zeros. */
		if (err != ORGW_OK && err != ORGW_EIO)
			return err;
	}
	return ORGW_OK;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->k.name,
		      ((const struct row *)b)->k.name);
}

/* The models of k as "a,b" ("*" for all) into dst (n bytes). */
static void
models_of(const struct teamkey *k, char *dst, size_t n)
{
	size_t i, len = 0;
	int r;

	(void)snprintf(dst, n, "%s", k->n_globs == 0 ? "*" : "");
	for (i = 0; i < k->n_globs && len < n; i++) {
		r = snprintf(dst + len, n - len, "%s%s", i ? "," : "",
			     k->globs[i]);
		if (r < 0)
			return;
		len += (size_t)r;
	}
}

static void
cell_usd(char *dst, size_t n, double v)
{
	if (v > 0)
		(void)snprintf(dst, n, "%.4f", v);
	else
		(void)snprintf(dst, n, "-");
}

static void
cell_int(char *dst, size_t n, int64_t v)
{
	if (v > 0)
		(void)snprintf(dst, n, "%lld", (long long)v);
	else
		(void)snprintf(dst, n, "-");
}

static void
cell_time(char *dst, size_t n, int64_t t)
{
	if (t > 0)
		clock_fmt_utc(t, dst, n);
	else
		(void)snprintf(dst, n, "-");
}

static void
print_table(const struct list_ctx *l)
{
	char models[TEAMKEY_GLOBS_MAX * (TEAMKEY_GLOB_MAX + 1) + 2];
	char bd[32], bm[32], rpm[24], conc[24], last[32], exp[32];
	size_t i;
	double lu;

	printf("%-20s %-8s %-5s %10s %10s %10s %10s %6s %5s %8s %9s %-19s "
	       "%-19s %s\n",
	       "NAME", "STATE", "ADMIN", "DAY_USD", "DAY_MAX", "MONTH_USD",
	       "MONTH_MAX", "RPM", "CONC", "REQ_DAY", "REQ_MONTH",
	       "LAST_USED_UTC", "EXPIRES_UTC", "MODELS");
	for (i = 0; i < l->rows.n; i++) {
		const struct row *r = &l->rows.v[i];

		models_of(&r->k, models, sizeof(models));
		cell_usd(bd, sizeof(bd), r->k.budget_day_usd);
		cell_usd(bm, sizeof(bm), r->k.budget_month_usd);
		cell_int(rpm, sizeof(rpm), r->k.rpm);
		cell_int(conc, sizeof(conc), r->k.concurrent);
		lu = r->month.v[LX_LAST_USED] > r->day.v[LX_LAST_USED] ?
			     r->month.v[LX_LAST_USED] :
			     r->day.v[LX_LAST_USED];
		cell_time(last, sizeof(last), (int64_t)lu);
		cell_time(exp, sizeof(exp), r->k.expires);
		printf("%-20s %-8s %-5s %10.4f %10s %10.4f %10s %6s %5s %8.0f "
		       "%9.0f %-19s %-19s %s\n",
		       r->k.name, teamkey_state(&r->k, l->now),
		       r->k.admin ? "yes" : "no", r->day.v[LX_KEY_SPEND], bd,
		       r->month.v[LX_KEY_SPEND], bm, rpm, conc,
		       r->day.v[LX_REQUESTS], r->month.v[LX_REQUESTS], last,
		       exp, models);
	}
	printf("# %zu keys\n", l->rows.n);
}

/* A window's use as a JSON object: the key's figures as /stats shows
 * them (ledger_render_key) and its last use; false on allocation
 * failure. */
static bool
json_use(cJSON *o, const char *name, const struct ledger_cell *u)
{
	cJSON *j = cJSON_AddObjectToObject(o, name);

	return j != NULL && ledger_render_key(j, u) &&
	       cJSON_AddNumberToObject(j, "last_used", u->v[LX_LAST_USED]);
}

static bool
json_row(cJSON *arr, const struct row *r, int64_t now)
{
	cJSON *j = cJSON_CreateObject(), *m;
	size_t i;

	if (j == NULL || !cJSON_AddItemToArray(arr, j)) {
		cJSON_Delete(j);
		return false;
	}
	if (!cJSON_AddStringToObject(j, "name", r->k.name) ||
	    !cJSON_AddStringToObject(j, "state", teamkey_state(&r->k, now)) ||
	    !cJSON_AddBoolToObject(j, "admin", r->k.admin) ||
	    (m = cJSON_AddArrayToObject(j, "models")) == NULL)
		return false;
	for (i = 0; i < r->k.n_globs; i++)
		if (!cJSON_AddItemToArray(m,
					  cJSON_CreateString(r->k.globs[i])))
			return false;
	return cJSON_AddNumberToObject(j, "budget_usd_day",
				       r->k.budget_day_usd) &&
	       cJSON_AddNumberToObject(j, "budget_usd_month",
				       r->k.budget_month_usd) &&
	       cJSON_AddNumberToObject(j, "rpm", (double)r->k.rpm) &&
	       cJSON_AddNumberToObject(j, "concurrent",
				       (double)r->k.concurrent) &&
	       cJSON_AddNumberToObject(j, "expires", (double)r->k.expires) &&
	       cJSON_AddNumberToObject(j, "created", (double)r->k.created) &&
	       cJSON_AddNumberToObject(j, "rotated", (double)r->k.rotated) &&
	       json_use(j, "today", &r->day) &&
	       json_use(j, "month", &r->month);
}

static bool
print_json(const struct list_ctx *l)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	char *text = NULL;
	bool ok = false;
	size_t i;

	if (o == NULL ||
	    !cJSON_AddNumberToObject(o, "generated_at", (double)l->now) ||
	    (arr = cJSON_AddArrayToObject(o, "keys")) == NULL)
		goto out;
	for (i = 0; i < l->rows.n; i++)
		if (!json_row(arr, &l->rows.v[i], l->now))
			goto out;
	if ((text = cJSON_Print(o)) == NULL)
		goto out;
	ok = printf("%s\n", text) > 0;
out:
	cJSON_free(text);
	cJSON_Delete(o);
	return ok;
}

int
run_list(const struct orgw_conf *c, const struct keyadmin_cmd *cmd)
{
	struct list_ctx l;
	enum orgw_err err;
	bool ok;

	memset(&l, 0, sizeof(l));
	l.now = clock_now_s();
	err = keystore_txn(c, false, do_list, &l);
	if (err != ORGW_OK) {
		free(l.rows.v);
		return txn_failed(c, "list", err);
	}
	if (l.rows.n > 1)
		qsort(l.rows.v, l.rows.n, sizeof(l.rows.v[0]), by_name);
	ok = true;
	if (cmd->json)
		ok = print_json(&l);
	else
		print_table(&l);
	free(l.rows.v);
	if (!ok) {
		fputs("orgw-score: key list: out of memory\n", stderr);
		return KEYADMIN_EXIT_FAILED;
	}
	return KEYADMIN_EXIT_OK;
}

struct verify_ctx {
	const char *secret, *plain;
	struct teamkey k;
};

static enum orgw_err
do_verify(struct store *s, void *arg)
{
	struct verify_ctx *v = arg;

	return keystore_find(s, v->secret, v->plain, &v->k);
}

/* Reads a key from stdin (its first line) and prints "NAME STATE" when
 * it is one of the store's. */
int
run_verify(const struct orgw_conf *c)
{
	char line[TEAMKEY_PLAIN_MAX * 2];
	struct verify_ctx v;
	enum orgw_err err;
	size_t n;

	memset(&v, 0, sizeof(v));
	if (fgets(line, sizeof(line), stdin) == NULL) {
		fputs("orgw-score: key verify: give the key on stdin\n",
		      stderr);
		return KEYADMIN_EXIT_USAGE;
	}
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	v.secret = c->keys_secret;
	v.plain = line;
	err = keystore_txn(c, false, do_verify, &v);
	explicit_bzero(line, sizeof(line));
	if (err == ORGW_ENOENT) {
		fputs("orgw-score: key verify: no key matches (revoked, "
		      "rotated, not a key, or another KEYS_SECRET)\n", stderr);
		return KEYADMIN_EXIT_FAILED;
	}
	if (err != ORGW_OK)
		return txn_failed(c, "verify", err);
	printf("%s %s\n", v.k.name, teamkey_state(&v.k, clock_now_s()));
	return KEYADMIN_EXIT_OK;
}
