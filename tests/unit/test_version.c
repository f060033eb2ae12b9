/*
 * test_version.c - the release string the binaries print is the VERSION
 * file's, in MAJOR.MINOR.PATCH form (the man pages, the package and
 * CHANGELOG take the same file).
 */
#include <stdbool.h>
#include <string.h>

#include "t.h"
#include "version.h"

/* Three dot-separated runs of digits, nothing else. */
static bool
semver(const char *s)
{
	int parts = 0, digits = 0;

	for (;; s++) {
		if (*s >= '0' && *s <= '9') {
			digits++;
		} else if (*s == '.' || *s == '\0') {
			if (digits == 0)
				return false;
			parts++;
			digits = 0;
			if (*s == '\0')
				break;
		} else {
			return false;
		}
	}
	return parts == 3;
}

int
main(void)
{
	T_ASSERT("semver accepts 0.9.0", semver("0.9.0"));
	T_ASSERT("semver refuses 0.9", !semver("0.9"));
	T_ASSERT("semver refuses 0.9.0-rc1", !semver("0.9.0-rc1"));
	T_ASSERT("orgw_version is MAJOR.MINOR.PATCH", semver(orgw_version));
	T_ASSERT("orgw_version is the VERSION file's",
		 strcmp(orgw_version, T_VERSION_FILE) == 0);
	return T_REPORT();
}
