/*
 * cli.c - what orgw-score's command modules share (cli.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
#include "fsafe.h"
#include "log.h"

int
cli_load_conf(struct orgw_conf *c, const char *path, bool need_key)
{
	char err[512];

	if (conf_load(c, path, err, sizeof(err)) != ORGW_OK) {
		fprintf(stderr, "orgw-score: configuration: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	/* Without the key OpenRouter hides throughput (docs/upstream.md 1),
	 * and every score would be 0. */
	if (need_key && (c->openrouter_api_key == NULL || c->openrouter_api_key[0] == '\0')) {
		fputs("orgw-score: configuration: OPENROUTER_API_KEY is not "
		      "set (the endpoints fetch needs it)\n",
		      stderr);
		return CLI_EXIT_USAGE;
	}
	fsafe_set_mode(c->state_mode);
	return 0;
}

const char *
cli_state_where(const struct orgw_conf *c)
{
	return c->state_backend == CONF_BACKEND_REDIS ? c->redis_url :
							c->state_path;
}

int
cli_flush(int rc)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror("orgw-score: stdout");
		return CLI_EXIT_FAILED;
	}
	return rc;
}

int
cli_max_int(int a, int b)
{
	return a > b ? a : b;
}

void
cli_cell_g(char *dst, size_t n, double v)
{
	snprintf(dst, n, "%.4g", v);
}

int64_t
cli_num(const cJSON *o, const char *name)
{
	return (int64_t)cli_dbl(o, name);
}

double
cli_dbl(const cJSON *o, const char *name)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

const char *
cli_str(char *dst, size_t n, const cJSON *o, const char *name)
{
	const char *v = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(o, name));

	return log_safe(dst, n, v ? v : "");
}

/* This program's absolute path (/proc/self/exe) in path (n bytes) and
 * its directory, without the last '/', in dir (n bytes); false when the
 * kernel does not tell. */
static bool
exe_where(char *path, char *dir, size_t n)
{
	ssize_t r = readlink("/proc/self/exe", path, n - 1);
	char *slash;

	if (r <= 0 || (size_t)r >= n - 1)
		return false;
	path[r] = '\0';
	memcpy(dir, path, (size_t)r + 1);
	if ((slash = strrchr(dir, '/')) == NULL)
		return false;
	*slash = '\0';
	return true;
}

const char *
cli_config_beside(char *buf, size_t n)
{
	char path[PATH_MAX], dir[PATH_MAX];
	int len;

	if (!exe_where(path, dir, sizeof(dir)))
		return NULL;
	len = snprintf(buf, n, "%s/orgw.conf", dir);
	if (len < 0 || (size_t)len >= n || access(buf, F_OK) != 0)
		return NULL;
	return buf;
}

/* s as one shell word: as is when it has only safe bytes, else in
 * single quotes (the caller has refused a quote in s). */
static void
put_word(const char *s)
{
	if (s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		       "0123456789/._+-")] == '\0')
		fputs(s, stdout);
	else
		printf("'%s'", s);
}

int
cli_cron_line(const char *config)
{
	char path[PATH_MAX], dir[PATH_MAX], conf_abs[PATH_MAX];

	if (!exe_where(path, dir, sizeof(dir))) {
		fputs("orgw-score: cannot tell where this program is "
		      "(/proc/self/exe)\n", stderr);
		return CLI_EXIT_USAGE;
	}
	if (config == NULL || *config == '\0') {
		fputs("orgw-score: no configuration: give --config FILE, set "
		      "ORGW_CONFIG or put orgw.conf beside this program\n",
		      stderr);
		return CLI_EXIT_USAGE;
	}
	if (realpath(config, conf_abs) == NULL) {
		fputs("orgw-score: ", stderr);
		perror(config);
		return CLI_EXIT_USAGE;
	}
	/* cron turns % into a newline; a quote would end put_word's. */
	if (strpbrk(path, "'%\n") != NULL ||
	    strpbrk(conf_abs, "'%\n") != NULL) {
		fputs("orgw-score: a path holds ', % or a newline, which a "
		      "crontab line cannot carry as is\n", stderr);
		return CLI_EXIT_USAGE;
	}
	fputs("0 */3 * * * ", stdout);
	put_word(path);
	fputs(" --config ", stdout);
	put_word(conf_abs);
	fputs(" >>", stdout);
	put_word(dir);	/* '/a b'/orgw-score.log is one word too */
	fputs("/orgw-score.log 2>&1\n", stdout);
	return 0;
}
