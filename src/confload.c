/*
 * confload.c - the edge of the configuration (docs/design.md section 8): reads the
 * ORGW_CONFIG file, the environment and the NAME_FILE secrets, and hands
 * every value to conf_set() in conf.c, which owns all policy.
 *
 * A relative path in the config file (STATE_PATH, UPSTREAM_CA_FILE; see
 * conf_is_path()) is taken from the file's directory, so one orgw.conf
 * serves a gateway in public_html/cgi-bin and a scorer beside the file;
 * a relative path from the environment stays relative to the
 * working directory.
 *
 * Precedence, lowest first: the defaults (conf_init(), the caller's job),
 * the config file, the environment.  For OPENROUTER_API_KEY and
 * CUSTOM_ACCESS_KEY a direct value, from either source, beats NAME_FILE;
 * NAME_FILE itself may come from the file or the environment, and the
 * environment wins there too.
 *
 * Runs once at start-up, before any request and in a single thread
 * (getenv() is not thread-safe).  Nothing outlives the call: every file
 * descriptor is closed and every buffer freed, and buffers that may hold
 * a key are zeroed first.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

#define CONF_FILE_MAX_BYTES ((size_t)1024 * 1024)	/* ORGW_CONFIG cap */
#define CONF_SECRET_MAX_BYTES ((size_t)64 * 1024)	/* NAME_FILE cap */


struct load_secret {
	const char *name;	/* e.g. "OPENROUTER_API_KEY" */
	const char *file_name;	/* e.g. "OPENROUTER_API_KEY_FILE" */
	bool given;		/* a direct value was set */
	char *file_path;	/* NAME_FILE value, malloc'd; NULL if none */
};

struct load_ctx {
	struct orgw_conf *c;
	struct load_secret sec[5];
	bool file_has_key;	/* the config file set a key directly */
	const char *path;	/* the config file, for warnings */
	char *err;
	size_t errlen;
};


/*
 * getenv() and strerror() are not thread-safe (concurrency-mt-unsafe);
 * conf_load() runs once a process, at start-up or under the lock of the
 * first request's load (src/workers.c, first_load), which every worker
 * thread passes before it serves anything.  strerror_r() is not used
 * because its GNU and XSI forms differ.
 */
static const char *
load_getenv(const char *name)
{
	return getenv(name);	/* NOLINT(concurrency-mt-unsafe) */
}

static const char *
load_strerror(int errnum)
{
	return strerror(errnum); /* NOLINT(concurrency-mt-unsafe) */
}

/* Puts "prefix: " in front of the message already in err. */
static void
load_err_prefix(char *err, size_t errlen, const char *prefix)
{
	char *old;

	if (err == NULL || errlen == 0)
		return;
	if ((old = strdup(err)) == NULL)
		return;		/* keep the message without its prefix */
	conf_errf(err, errlen, "%s: %s", prefix, old);
	free(old);
}

static struct load_secret *
load_secret_by(struct load_ctx *x, const char *name, bool file_form)
{
	size_t i;

	for (i = 0; i < sizeof(x->sec) / sizeof(x->sec[0]); i++)
		if (strcmp(name, file_form ? x->sec[i].file_name :
					     x->sec[i].name) == 0)
			return &x->sec[i];
	return NULL;
}

/*
 * Reads all of path (at most cap bytes) into a malloc'd, NUL-terminated
 * *out (length *outlen; caller zeroes and frees) and gives its mode.
 * Returns ORGW_OK, ORGW_ENOMEM, or ORGW_EINVAL with "shown: reason" in
 * err: docs/design.md 8 wants a bad configuration refused at start.  shown names
 * the file in messages: its path, or for a NAME_FILE secret the setting's
 * name, since the value of a *_FILE setting is never echoed (it may be a
 * key given by mistake).
 */
static enum orgw_err
load_read(const char *path, const char *shown, size_t cap, char **out,
	  size_t *outlen, mode_t *mode, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t r;
	int fd, saved;
	enum orgw_err rc = ORGW_EINVAL;

	*out = NULL;
	*outlen = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		conf_errf(err, errlen, "%s: %s", shown, load_strerror(errno));
		return ORGW_EINVAL;
	}
	if (fstat(fd, &st) == -1) {
		conf_errf(err, errlen, "%s: %s", shown, load_strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		conf_errf(err, errlen, "%s: is a directory", shown);
		goto out;
	}
	/* cap + 1 bytes so that a file over the cap is seen as such. */
	if ((buf = malloc(cap + 1)) == NULL) {
		rc = ORGW_ENOMEM;
		goto out;
	}
	while (len < cap + 1) {
		r = read(fd, buf + len, cap + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			conf_errf(err, errlen, "%s: %s", shown,
				 load_strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > cap) {
		conf_errf(err, errlen, "%s: larger than %zu bytes", shown, cap);
		goto out;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	*mode = st.st_mode;
	buf = NULL;
	rc = ORGW_OK;
out:
	if (buf != NULL) {
		explicit_bzero(buf, cap + 1);
		free(buf);
	}
	if (close(fd) == -1 && rc == ORGW_OK) {
		saved = errno;
		explicit_bzero(*out, *outlen);
		free(*out);
		*out = NULL;
		*outlen = 0;
		conf_errf(err, errlen, "%s: %s", shown, load_strerror(saved));
		rc = ORGW_EINVAL;
	}
	return rc;
}

/*
 * value, or for a relative path setting, the config file's directory
 * joined with it, in a malloc'd *joined (caller frees; NULL when value
 * is used as is).  Returns false when out of memory.
 */
static bool
load_rel_path(const struct load_ctx *x, const char *name, const char *value,
	      char **joined)
{
	const char *slash = strrchr(x->path, '/');
	size_t dlen, vlen;

	*joined = NULL;
	if (!conf_is_path(name) || value[0] == '/' || value[0] == '\0' ||
	    slash == NULL)
		return true;
	dlen = (size_t)(slash - x->path) + 1;	/* with the '/' */
	vlen = strlen(value);
	if ((*joined = malloc(dlen + vlen + 1)) == NULL)
		return false;
	memcpy(*joined, x->path, dlen);
	memcpy(*joined + dlen, value, vlen + 1);
	return true;
}

/* conf_parse_text() callback for the config file. */
static int
load_pair(void *arg, const char *name, const char *value)
{
	struct load_ctx *x = arg;
	struct load_secret *s;
	enum orgw_err rc;
	char *dup, *joined;

	if ((s = load_secret_by(x, name, true)) != NULL) {
		/* Empty means unset, as for ORGW_CONFIG. */
		if (*value == '\0') {
			free(s->file_path);
			s->file_path = NULL;
			return 0;
		}
		if ((dup = strdup(value)) == NULL) {
			conf_errf(x->err, x->errlen, "out of memory");
			return ORGW_ENOMEM;
		}
		free(s->file_path);
		s->file_path = dup;
		return 0;
	}
	if (!conf_known(name)) {
		/* A typo would silently leave the default in place. */
		if (strcmp(name, "ORGW_CONFIG") != 0)
			(void)fprintf(stderr,
				      "orgw: warning: %s: unknown setting %s "
				      "ignored\n", x->path, name);
		return 0;
	}
	if (!load_rel_path(x, name, value, &joined)) {
		conf_errf(x->err, x->errlen, "out of memory");
		return ORGW_ENOMEM;
	}
	rc = conf_set(x->c, name, joined != NULL ? joined : value, x->err,
		      x->errlen);
	free(joined);
	if (rc != ORGW_OK) {
		if (rc == ORGW_ENOMEM)
			conf_errf(x->err, x->errlen, "out of memory");
		return (int)rc;
	}
	if ((s = load_secret_by(x, name, false)) != NULL) {
		s->given = true;
		x->file_has_key = true;
	}
	return 0;
}

static enum orgw_err
load_file(struct load_ctx *x, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	mode_t mode = 0;
	enum orgw_err rc;

	rc = load_read(path, path, CONF_FILE_MAX_BYTES, &text, &len, &mode,
		       x->err, x->errlen);
	if (rc != ORGW_OK)
		return rc;
	x->path = path;
	rc = conf_parse_text(text, len, load_pair, x, x->err, x->errlen);
	if (rc != ORGW_OK) {
		if (rc == ORGW_ENOMEM && x->err != NULL && x->errlen > 0 &&
		    x->err[0] == '\0')
			conf_errf(x->err, x->errlen, "out of memory");
		load_err_prefix(x->err, x->errlen, path);
		goto out;
	}
	if (x->file_has_key && S_ISREG(mode) && (mode & 077) != 0)
		(void)fprintf(stderr,
			      "orgw: warning: %s holds a key and is open to "
			      "group or others (mode %04o); chmod 600 it\n",
			      path, (unsigned)(mode & 07777));
out:
	explicit_bzero(text, len);
	free(text);
	return rc;
}

static enum orgw_err
load_env(struct load_ctx *x)
{
	struct load_secret *s;
	const char *v, *name;
	enum orgw_err rc;
	char *dup;
	size_t i;

	for (i = 0; (name = conf_name(i)) != NULL; i++) {
		if ((v = load_getenv(name)) == NULL)
			continue;
		rc = conf_set(x->c, name, v, x->err, x->errlen);
		if (rc != ORGW_OK) {
			if (rc == ORGW_ENOMEM)
				conf_errf(x->err, x->errlen, "out of memory");
			load_err_prefix(x->err, x->errlen, "environment");
			return rc;
		}
		if ((s = load_secret_by(x, name, false)) != NULL)
			s->given = true;
	}
	for (i = 0; i < sizeof(x->sec) / sizeof(x->sec[0]); i++) {
		s = &x->sec[i];
		/* Empty means unset, as for ORGW_CONFIG. */
		if ((v = load_getenv(s->file_name)) == NULL || *v == '\0')
			continue;
		if ((dup = strdup(v)) == NULL) {
			conf_errf(x->err, x->errlen, "out of memory");
			return ORGW_ENOMEM;
		}
		free(s->file_path);
		s->file_path = dup;
	}
	return ORGW_OK;
}

/* Sets s->name from the first line of s->file_path (CR/LF stripped). */
static enum orgw_err
load_secret_file(struct load_ctx *x, struct load_secret *s)
{
	char *text = NULL;
	size_t len = 0, n;
	mode_t mode = 0;
	enum orgw_err rc;

	rc = load_read(s->file_path, s->file_name, CONF_SECRET_MAX_BYTES,
		       &text, &len, &mode, x->err, x->errlen);
	if (rc != ORGW_OK) {
		if (rc == ORGW_ENOMEM)
			conf_errf(x->err, x->errlen, "out of memory");
		return rc;
	}
	/* The same warning as for a config file that holds a key; the
	 * setting is named, its value (the path) is not. */
	if (S_ISREG(mode) && (mode & 077) != 0)
		(void)fprintf(stderr,
			      "orgw: warning: the file named by %s is open to "
			      "group or others (mode %04o); chmod 600 it\n",
			      s->file_name, (unsigned)(mode & 07777));
	for (n = 0; n < len && text[n] != '\n'; n++)
		;
	if (n > 0 && text[n - 1] == '\r')
		n--;
	if (memchr(text, '\0', n) != NULL) {
		conf_errf(x->err, x->errlen, "%s: contains a NUL byte",
			 s->file_name);
		rc = ORGW_EINVAL;
		goto out;
	}
	text[n] = '\0';
	rc = conf_set(x->c, s->name, text, x->err, x->errlen);
	if (rc == ORGW_ENOMEM)
		conf_errf(x->err, x->errlen, "out of memory");
	if (rc != ORGW_OK)
		load_err_prefix(x->err, x->errlen, s->file_name);
out:
	explicit_bzero(text, len);
	free(text);
	return rc;
}

/*
 * Loads the configuration into c, which the caller has conf_init()'ed:
 * the config file (config_path, or getenv("ORGW_CONFIG") when NULL; unset
 * or empty means none), then the environment, then NAME_FILE secrets.
 * Names in the file that are not settings draw a warning on stderr, as
 * does a file that holds a key and is open to group or others.
 *
 * Returns ORGW_OK; ORGW_EINVAL with a message in err (errlen bytes) for a
 * refused value, a malformed or unreadable file; ORGW_ENOMEM.  Messages
 * are prefixed with where the value came from (the file path,
 * "environment", the NAME_FILE name and path).  On error c may hold some
 * of the new values; it stays valid for conf_free(), which the caller
 * still owes.
 */
enum orgw_err
conf_load(struct orgw_conf *c, const char *config_path, char *err,
	  size_t errlen)
{
	struct load_ctx x;
	enum orgw_err rc = ORGW_OK;
	size_t i;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	memset(&x, 0, sizeof(x));
	x.c = c;
	x.sec[0].name = "OPENROUTER_API_KEY";
	x.sec[0].file_name = "OPENROUTER_API_KEY_FILE";
	x.sec[1].name = "CUSTOM_ACCESS_KEY";
	x.sec[1].file_name = "CUSTOM_ACCESS_KEY_FILE";
	x.sec[2].name = "METRICS_KEY";
	x.sec[2].file_name = "METRICS_KEY_FILE";
	x.sec[3].name = "REDIS_PASSWORD";
	x.sec[3].file_name = "REDIS_PASSWORD_FILE";
	x.sec[4].name = "KEYS_SECRET";
	x.sec[4].file_name = "KEYS_SECRET_FILE";
	x.err = err;
	x.errlen = errlen;
	if (config_path == NULL)
		config_path = load_getenv("ORGW_CONFIG");
	if (config_path != NULL && *config_path != '\0' &&
	    (rc = load_file(&x, config_path)) != ORGW_OK)
		goto out;
	if ((rc = load_env(&x)) != ORGW_OK)
		goto out;
	for (i = 0; i < sizeof(x.sec) / sizeof(x.sec[0]); i++) {
		if (x.sec[i].given || x.sec[i].file_path == NULL)
			continue;
		if ((rc = load_secret_file(&x, &x.sec[i])) != ORGW_OK)
			goto out;
	}
	rc = conf_settle(c, err, errlen);
	if (rc == ORGW_ENOMEM)
		conf_errf(err, errlen, "out of memory");
out:
	for (i = 0; i < sizeof(x.sec) / sizeof(x.sec[0]); i++)
		free(x.sec[i].file_path);
	return rc;
}
