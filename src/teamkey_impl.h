/*
 * teamkey_impl.h - what the team keys' files (teamkey.c, teamkey_*.c)
 * share and no other file includes (make check-layers): the bound on a
 * record's numbers and the checks teamkey_rate.c borrows from
 * teamkey_codec.c.  Each function's contract is at its definition.
 */
#ifndef ORGW_TEAMKEY_IMPL_H
#define ORGW_TEAMKEY_IMPL_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The largest number a record holds, 10^15: cJSON prints numbers with
 * 15 significant digits (print_number, "%1.15g", accepting a reading
 * back within DBL_EPSILON), so every whole number up to it is written
 * exactly, and a dollar amount up to it is written within 1e-15 and
 * never rounded past the bound (DBL_MAX would be written as a number
 * that reads back as inf).  Milliseconds of unix time are 13 digits.
 */
#define TK_NUM_MAX 1000000000000000LL

bool dbl_ok(double d);
bool int_ok(int64_t v);
int64_t count_add(int64_t a, int64_t b);
bool lease_id_ok(const char *id);

#endif
