/* mtune.c - a FastCGI worker's malloc tuning (mtune.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtune.h"

/* Room for an operator's own tunables as well as ours. */
#define MTUNE_VALUE_MAX 1024

bool
mtune_value(const char *old, char *dst, size_t n)
{
	const char *p;
	size_t len = strlen(MTUNE_TUNABLE);
	int k;

	/* Tunables are name=value pairs joined by ':'. */
	for (p = old; p != NULL && (p = strstr(p, MTUNE_TUNABLE)) != NULL;
	     p += len)
		if ((p == old || p[-1] == ':') && p[len] == '=')
			return false;
	if (old == NULL || old[0] == '\0')
		k = snprintf(dst, n, "%s=%d", MTUNE_TUNABLE,
			     MTUNE_TCACHE_COUNT);
	else
		k = snprintf(dst, n, "%s:%s=%d", old, MTUNE_TUNABLE,
			     MTUNE_TCACHE_COUNT);
	return k > 0 && (size_t)k < n;
}

void
mtune_reexec(char *const argv[])
{
	char value[MTUNE_VALUE_MAX], exe[PATH_MAX];
	ssize_t len;

	if (!mtune_value(getenv("GLIBC_TUNABLES"), value, sizeof(value)))
		return;
	/* The binary itself: argv[0] may be a name found on PATH or a
	 * link the web server's configuration names. */
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0) {
		fprintf(stderr, "orgw: running with glibc's malloc defaults: "
				"/proc/self/exe: %s\n",
			strerror(len < 0 ? errno : ENOENT));
		return;
	}
	exe[len] = '\0';
	if (setenv("GLIBC_TUNABLES", value, 1) != 0)
		return;
	execv(exe, argv);
	fprintf(stderr, "orgw: running with glibc's malloc defaults: %s: %s\n",
		exe, strerror(errno));
}
