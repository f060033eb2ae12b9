/*
 * statuspage_impl.h - what the status page's files (statuspage.c,
 * statuspage_*.c) share and no other file includes (make check-layers):
 * the page being written (struct out), the writer's functions and the
 * sections statuspage_html() puts together.  Each function's contract
 * is at its definition.
 */
#ifndef ORGW_STATUSPAGE_IMPL_H
#define ORGW_STATUSPAGE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "buf.h"
#include "ledger.h"

struct statuspage_opts;

#define DAYS LEDGER_DAYS

struct out {
	struct buf b;
	bool ok;
};

/* statuspage.c: the writer */
void put(struct out *o, const char *s);
__attribute__((format(printf, 2, 3))) void
putf(struct out *o, const char *fmt, ...);
void esc(struct out *o, const char *s);
double num(const cJSON *o, const char *k);
const char *str(const cJSON *o, const char *k);
void fmt_time(int64_t t, char dst[24]);
void fmt_span(int64_t s, char dst[32]);
void td(struct out *o, const char *label, const char *cls, const char *text);
__attribute__((format(printf, 3, 4))) void
tdf(struct out *o, const char *label, const char *fmt, ...);
void thead(struct out *o, const char *const *cols, size_t n);

/* statuspage_chart.c */
void hit_chart(struct out *o, const cJSON *days, const char *dayname[DAYS]);
void money_chart(struct out *o, const double *spend, const double *saved,
		 const char *dayname[DAYS]);

/* statuspage_routing.c */
void lock_block(struct out *o, const cJSON *m,
		const struct statuspage_opts *op);
void cand_table(struct out *o, const cJSON *m);
void breaker_table(struct out *o, const cJSON *m,
		   const struct statuspage_opts *op);
void history(struct out *o, const cJSON *m, const struct statuspage_opts *op);
void changes_table(struct out *o, const cJSON *m);
void api_table(struct out *o, const cJSON *m);
void summary(struct out *o, const cJSON *models);

/* statuspage_keys.c */
void keys_table(struct out *o, const cJSON *stats);

/* statuspage_conv.c */
void conv_section(struct out *o, const cJSON *stats,
		  const struct statuspage_opts *op);

#endif
