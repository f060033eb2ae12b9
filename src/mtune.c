/* mtune.c - a FastCGI worker's malloc tuning (mtune.h). */
#include <sys/auxv.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtune.h"

/* Room for an operator's own tunables as well as ours. */
#define MTUNE_VALUE_MAX 1024

/* True when the tunables text s sets name (a name=value pair of its own,
 * pairs joined by ':'). */
static bool
sets(const char *s, const char *name)
{
	size_t len = strlen(name);
	const char *p;

	for (p = s; p != NULL && (p = strstr(p, name)) != NULL; p += len)
		if ((p == s || p[-1] == ':') && p[len] == '=')
			return true;
	return false;
}

bool
mtune_value(const char *old, char *dst, size_t n)
{
	char add[128];
	int k;

	if (old != NULL && sets(old, MTUNE_TUNABLE))
		return false;
	if (old != NULL && sets(old, MTUNE_TUNABLE_MAX))
		k = snprintf(add, sizeof(add), "%s=%d", MTUNE_TUNABLE,
			     MTUNE_TCACHE_COUNT);
	else
		k = snprintf(add, sizeof(add), "%s=%d:%s=%d", MTUNE_TUNABLE,
			     MTUNE_TCACHE_COUNT, MTUNE_TUNABLE_MAX,
			     MTUNE_TCACHE_MAX_BYTES);
	if (k <= 0 || (size_t)k >= sizeof(add))
		return false;
	if (old == NULL || old[0] == '\0')
		k = snprintf(dst, n, "%s", add);
	else
		k = snprintf(dst, n, "%s:%s", old, add);
	return k > 0 && (size_t)k < n;
}

void
mtune_reexec(char *const argv[])
{
	char value[MTUNE_VALUE_MAX], exe[PATH_MAX];
	ssize_t len;

	/* A set-user-ID or set-group-ID run (AT_SECURE): glibc drops the
	 * tcache tunables from its environment, so the run again would
	 * not see the count and would run itself again, and again. */
	if (getauxval(AT_SECURE) != 0 ||
	    !mtune_value(getenv("GLIBC_TUNABLES"), value, sizeof(value)))
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
