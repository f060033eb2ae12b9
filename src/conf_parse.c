/*
 * conf_parse.c - config-file text into NAME=VALUE pairs
 * (conf_parse_text(), docs/design.md section 8): lines, comments, an
 * "export " prefix, one pair of quotes, a byte order mark.  What a pair
 * means is the caller's (confload.c hands each to conf_set()).
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_impl.h"

/* True for a setting name: [A-Z_][A-Z0-9_]*. */
static bool
conf_valid_name(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return false;
	return true;
}

/* Puts "line N: " in front of the message already in err. */
static void
conf_err_line(char *err, size_t errlen, size_t lineno)
{
	char *old;

	if (err == NULL || errlen == 0)
		return;
	if ((old = strdup(err)) == NULL)
		return;		/* keep the message without its line */
	conf_errf(err, errlen, "line %zu: %s", lineno, old);
	explicit_bzero(old, strlen(old));
	free(old);
}

/*
 * One line of config text, NUL-terminated and without its '\n', in a
 * buffer we may modify.  Returns 0 to go on or what to stop with.
 */
static int
conf_parse_line(char *line, size_t lineno,
		int (*fn)(void *arg, const char *name, const char *value),
		void *arg, char *err, size_t errlen)
{
	char *s, *eq, *name, *value;
	size_t n;
	int r;

	/* Trimming takes the '\r' of a CRLF line along with the blanks. */
	s = conf_trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	/*
	 * Only full-line comments: "KEY=abc #x" keeps "abc #x", because a
	 * key may contain '#'.  A leading "export " is allowed so the file
	 * can also be sourced by a shell.
	 */
	if (strncmp(s, "export", 6) == 0 && (s[6] == ' ' || s[6] == '\t'))
		s = conf_trim(s + 6);
	if ((eq = strchr(s, '=')) == NULL) {
		conf_errf(err, errlen,
			 "line %zu: expected NAME=VALUE but found no '='",
			 lineno);
		return ORGW_EINVAL;
	}
	*eq = '\0';
	name = conf_trim(s);
	value = conf_trim(eq + 1);
	/* The name is not quoted back: a mangled line may hold a key. */
	if (*name == '\0') {
		conf_errf(err, errlen, "line %zu: no name before '='", lineno);
		return ORGW_EINVAL;
	}
	if (!conf_valid_name(name)) {
		conf_errf(err, errlen,
			 "line %zu: invalid name (want capital letters, "
			 "digits and '_', not starting with a digit)",
			 lineno);
		return ORGW_EINVAL;
	}
	if (value[0] == '"') {
		n = strlen(value);
		if (n < 2 || value[n - 1] != '"') {
			conf_errf(err, errlen,
				 "line %zu: %s: unterminated '\"'", lineno,
				 name);
			return ORGW_EINVAL;
		}
		value[n - 1] = '\0';
		value++;
	}
	if ((r = fn(arg, name, value)) != 0) {
		if (err != NULL && errlen > 0 && err[0] != '\0')
			conf_err_line(err, errlen, lineno);
		return r;
	}
	return 0;
}

/*
 * Parses config-file text: lines end in LF or CRLF; blank lines and lines
 * whose first non-blank byte is '#' are skipped; other lines are
 * [export ]NAME=VALUE with blanks around NAME and VALUE ignored and one
 * pair of double quotes around VALUE removed (no escapes inside).  NAME
 * must match [A-Z_][A-Z0-9_]*.  A leading UTF-8 byte order mark is
 * skipped.  fn gets NUL-terminated name and value,
 * borrowed for the call only.
 *
 * Returns ORGW_OK; ORGW_EINVAL with "line N: ..." in err for a malformed
 * line or a NUL byte; ORGW_ENOMEM; or the first non-zero return of fn
 * (cast to enum orgw_err).  In that last case, if fn left a message in
 * err (it starts empty), "line N: " is put in front of it.
 */
enum orgw_err
conf_parse_text(const char *text, size_t len,
		int (*fn)(void *arg, const char *name, const char *value),
		void *arg, char *err, size_t errlen)
{
	const char *start, *nl;
	char *line = NULL;
	size_t pos = 0, lineno = 0, n;
	int r = ORGW_OK;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (fn == NULL || (text == NULL && len > 0) || len == SIZE_MAX) {
		conf_errf(err, errlen, "conf_parse_text: bad arguments");
		return ORGW_EINVAL;
	}
	/* A UTF-8 byte order mark, as some editors write, is not a name. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	/* One buffer for every line: the longest line is at most len. */
	if ((line = malloc(len + 1)) == NULL)
		return ORGW_ENOMEM;
	while (pos < len) {
		start = text + pos;
		nl = memchr(start, '\n', len - pos);
		n = nl != NULL ? (size_t)(nl - start) : len - pos;
		pos += n + (nl != NULL);
		lineno++;
		if (memchr(start, '\0', n) != NULL) {
			conf_errf(err, errlen, "line %zu: contains a NUL byte",
				 lineno);
			r = ORGW_EINVAL;
			goto out;
		}
		memcpy(line, start, n);
		line[n] = '\0';
		if ((r = conf_parse_line(line, lineno, fn, arg, err, errlen)) !=
		    0)
			goto out;
	}
out:
	/* The text may hold keys. */
	explicit_bzero(line, len + 1);
	free(line);
	return (enum orgw_err)r;
}
