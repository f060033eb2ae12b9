/* harden.c - process hardening shared by the gateway and the scorer. */
#include <sys/prctl.h>
#include <sys/resource.h>

#include "harden.h"

int
harden_no_dumps(void)
{
	struct rlimit rl = {0, 0};

	if (setrlimit(RLIMIT_CORE, &rl) != 0)
		return -1;
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ? -1 : 0;
}
