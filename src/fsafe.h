/*
 * fsafe.h - opening the state's files safely (fsafe.c).
 */
#ifndef ORGW_FSAFE_H
#define ORGW_FSAFE_H

#include <sys/stat.h>

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* errno of a refusal (symlink, writable by others) that was logged with
 * its reason: no open(2) or lstat(2) returns it, so it is told apart
 * from a system error such as EPERM on an immutable file. */
#define FSAFE_REFUSED ENOTRECOVERABLE

/*
 * The mode of the state and lock files orgw creates (STATE_MODE in
 * orgw.conf(5): 0600, or 0640/0660 for a scorer of the same group); bits
 * for others are dropped.  Process-wide: call once at start, before any thread.
 */
void fsafe_set_mode(unsigned mode);

/* A file beside the state: path and suffix (".lock", ".twin", ...) into
 * dst (n bytes).  0, or -1 when it does not fit. */
int fsafe_side_path(char *dst, size_t n, const char *path, const char *suffix);

/* The directory of path into dir (n bytes): 0, or -1 (ENAMETOOLONG). */
int fsafe_dir_of(const char *path, char *dir, size_t n);

/* Why st (lstat of a state file or directory) is refused, or NULL: a
 * symlink, or writable by others. */
const char *fsafe_refused(const struct stat *st);

/* The directory of path is not a symlink and not writable by others:
 * 0, or -1 after a log line (errno FSAFE_REFUSED). */
int fsafe_dir_ok(const char *path);

/*
 * Opens file without following a symlink, creating it with STATE_MODE
 * when create; refuses a file that is not a regular file or is writable
 * by others.  The fd (O_CLOEXEC), or -1 (errno set; FSAFE_REFUSED after
 * a log line for a refusal).
 */
int fsafe_open(const char *file, bool write, bool create);

/*
 * Opens (creating with STATE_MODE) a side file of the state, such as the
 * worker table STATE_PATH.workers, read-write, with the checks above for
 * it and its directory.  The fd (the caller closes it) or -1 (errno set;
 * a refusal has been logged).  Whatever the back-end: the worker table
 * is per host.
 */
int fsafe_open_side(const char *file);

#endif
