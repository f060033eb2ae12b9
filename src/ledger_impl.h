/*
 * ledger_impl.h - what the ledger's files (ledger.c, ledger_*.c) share
 * and no other file includes (make check-layers): the helpers
 * ledger_render.c borrows from ledger.c.  Each function's contract is
 * at its definition.
 */
#ifndef ORGW_LEDGER_IMPL_H
#define ORGW_LEDGER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

double fin(double v);
bool part_copy(char *dst, size_t n, const char *s, const char *e);
bool day_ok(const char *s);
void first_day(int64_t now, char dst[11]);

#endif
