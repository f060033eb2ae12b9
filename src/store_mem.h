/*
 * store_mem.h - the in-memory state back-end of the unit tests
 * (store_mem.c), chosen with STATE_BACKEND's CONF_BACKEND_MEMORY, which
 * only a program can set.
 */
#ifndef ORGW_STORE_MEM_H
#define ORGW_STORE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orgw.h"

struct store;

/* Opens a transaction (store.h store_open): one at a time; ORGW_EBUSY
 * while store_mem_refuse(true) is in force. */
enum orgw_err store_mem_open(struct store **out, bool write);

/* Empties the state. */
void store_mem_reset(void);

/* While refuse is true every open fails, as an unreachable state does. */
void store_mem_refuse(bool refuse);

/* Write transactions committed that wrote something, since the start
 * (store_mem_reset keeps the count). */
int64_t store_mem_writes(void);

/* How many keys begin with prefix. */
size_t store_mem_count(const char *prefix);

#endif
