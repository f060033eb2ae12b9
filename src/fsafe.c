/*
 * fsafe.c - the checks every file of the state passes (orgw.conf(5),
 * STATE_MODE), for the GDBM back-end (store_gdbm.c) and the host's worker table (workertab.c):
 * never through a symlink, only a regular file, neither it nor its
 * directory writable by others (sshd's StrictModes), created with
 * STATE_MODE.  A refusal is logged with its reason.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fsafe.h"
#include "log.h"

/* STATE_MODE, set once at start by fsafe_set_mode(). */
static mode_t fsafe_mode = 0600;

/* A file beside the state: path and suffix (".lock", ".twin", ...) into
 * dst (n bytes).  0, or -1 when it does not fit. */
int
fsafe_side_path(char *dst, size_t n, const char *path, const char *suffix)
{
	return buf_join(dst, n, '\0', path, suffix, (char *)NULL) ? 0 : -1;
}

void
fsafe_set_mode(unsigned mode)
{
	fsafe_mode = (mode_t)(mode & 0660);
}

/* The directory of path into dir (n bytes): 0, or -1 (ENAMETOOLONG). */
int
fsafe_dir_of(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');
	size_t k;

	if (slash == NULL) {
		if (n < 2)
			return -1;
		memcpy(dir, ".", 2);
		return 0;
	}
	k = slash == path ? 1 : (size_t)(slash - path);
	if (k >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, k);
	dir[k] = '\0';
	return 0;
}

/* Why st (lstat of name) is refused as a state file or directory, or
 * NULL: a symlink, or writable by others (sshd StrictModes). */
const char *
fsafe_refused(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "is a symlink; refused";
	if ((st->st_mode & S_IWOTH) != 0)
		return "is writable by others; refused: chmod o-w it";
	return NULL;
}

/* The directory of path is not a symlink and not writable by others:
 * 0, or -1 after a log line (errno FSAFE_REFUSED). */
int
fsafe_dir_ok(const char *path)
{
	char dir[4200];
	const char *why;
	struct stat st;

	if (fsafe_dir_of(path, dir, sizeof(dir)) == -1 || lstat(dir, &st) == -1)
		return -1;
	if ((why = fsafe_refused(&st)) != NULL) {
		log_err("state directory %s (mode %04o) %s", dir,
			(unsigned)(st.st_mode & 07777), why);
		errno = FSAFE_REFUSED;
		return -1;
	}
	return 0;
}

/*
 * Opens file (the state or its lock file) without following a symlink,
 * creating it with STATE_MODE when create; refuses a file that is not a
 * regular file or is writable by others.  The fd, or -1 (errno set;
 * FSAFE_REFUSED after a log line for a refusal).
 */
int
fsafe_open(const char *file, bool write, bool create)
{
	int flags = (write ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC |
		    O_NOCTTY, fd, e;
	const char *why;
	struct stat st;
	bool made = false;

	/* The file is there but for the first open of all: one system
	 * call then, as a transaction opens two or three files. */
	fd = open(file, flags);
	if (fd == -1 && errno == ENOENT && create) {
		fd = open(file, flags | O_CREAT | O_EXCL, fsafe_mode);
		made = fd != -1;
		/* Made by another process meanwhile. */
		if (fd == -1 && errno == EEXIST)
			fd = open(file, flags);
	}
	if (fd == -1) {
		if (errno == ELOOP) {
			log_err("state %s is a symlink; refused", file);
			errno = FSAFE_REFUSED;
		}
		return -1;
	}
	if (fstat(fd, &st) == -1)
		goto bad;
	why = S_ISREG(st.st_mode) ? fsafe_refused(&st) :
				    "is not a regular file; refused";
	if (why != NULL) {
		log_err("state %s (mode %04o) %s", file,
			(unsigned)(st.st_mode & 07777), why);
		errno = FSAFE_REFUSED;
		goto bad;
	}
	/* The umask may have taken bits STATE_MODE wants (0660). */
	if (made && (st.st_mode & 0777) != fsafe_mode &&
	    fchmod(fd, fsafe_mode) == -1)
		goto bad;
	return fd;
bad:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int
fsafe_open_side(const char *file)
{
	if (fsafe_dir_ok(file) == -1)
		return -1;
	return fsafe_open(file, true, true);
}

