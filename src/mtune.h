#ifndef ORGW_MTUNE_H
#define ORGW_MTUNE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * glibc's malloc keeps up to 7 freed chunks of each size per thread
 * (its tcache).  A request frees about 300 chunks, 60 of them cJSON
 * nodes of one size at once; those past the seventh go to the arena's
 * fastbins, and the next large allocation (libfcgi's 8 KiB buffer,
 * libcurl's 16 KiB one, a GDBM value over 1 KiB) merges them all back
 * (malloc_consolidate), so the next request takes most of its chunks by
 * malloc's slow path: 35k instructions a request, a tenth of a worker's.
 * MTUNE_TCACHE_COUNT chunks of each size up to
 * MTUNE_TCACHE_MAX_BYTES hold a request's worth of the small ones; the
 * larger sizes keep glibc's 7, since 64 of each of those would stay with
 * every thread that was ever busy (10 MiB more for a worker of 80
 * threads after a burst, against none at this limit).  glibc reads
 * these only from GLIBC_TUNABLES when a program starts, so a FastCGI
 * worker started without them runs itself again with them
 * (mtune_reexec).
 */
#define MTUNE_TCACHE_COUNT 64
#define MTUNE_TCACHE_MAX_BYTES 128
#define MTUNE_TUNABLE "glibc.malloc.tcache_count"
#define MTUNE_TUNABLE_MAX "glibc.malloc.tcache_max"

/*
 * The GLIBC_TUNABLES value to run with, given the one the process has
 * (old, NULL when unset): old with MTUNE_TUNABLE=MTUNE_TCACHE_COUNT and
 * MTUNE_TUNABLE_MAX=MTUNE_TCACHE_MAX_BYTES added, into dst (n bytes).
 * False when old already sets the count (the operator's, or this process
 * is the run again) or the value does not fit: then the process runs as
 * it is.  An operator's own tcache_max stays, with the count added.
 * Pure.
 */
bool mtune_value(const char *old, char *dst, size_t n);

/*
 * Runs this program again (the same argv, environment and file
 * descriptors, so the same PID and FastCGI socket) with GLIBC_TUNABLES
 * from mtune_value().  Returns only when it did not: no change is
 * needed, the program runs set-user-ID or set-group-ID (glibc ignores
 * these tunables then), or it cannot be found or run again (a chroot
 * without /proc), in which case it runs with glibc's defaults and says
 * so once on stderr.  Call it first thing in main(), before any thread starts.
 */
void mtune_reexec(char *const argv[]);

#endif
