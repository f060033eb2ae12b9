/*
 * record_impl.h - the helpers record.c shares with record_cands.c, for
 * those two only (tests/check-layers.sh): reading and writing the
 * members of a record's JSON object.
 */
#ifndef ORGW_RECORD_IMPL_H
#define ORGW_RECORD_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

/* text parsed, or NULL when NULL, not JSON or not an object. */
cJSON *rec_parse_obj(const char *text);

/* Member k of o as an int64_t or a finite double; 0 when absent, not a
 * number or out of range. */
int64_t rec_get_i64(const cJSON *o, const char *k);
double rec_get_dbl(const cJSON *o, const char *k);

/* Member k of o into dst (n bytes), or "" when absent or holding a
 * control character. */
void rec_get_str(const cJSON *o, const char *k, char *dst, size_t n);

/* Adds number d as k (NaN and inf as 0); false when out of memory. */
bool rec_add_num(cJSON *o, const char *k, double d);

/* o printed unformatted when ok (NULL when not, or out of memory); o is
 * deleted either way. */
char *rec_finish(cJSON *o, bool ok);

#endif
