/* test_mtune.c - the GLIBC_TUNABLES a FastCGI worker runs with. */
#include <string.h>

#include "mtune.h"
#include "t.h"

#define OURS "glibc.malloc.tcache_count=64:glibc.malloc.tcache_max=128"

static void
test_value(void)
{
	char v[256], w[256];

	T_ASSERT("mtune: unset gets the count",
		 mtune_value(NULL, v, sizeof(v)) &&
			 strcmp(v, OURS) == 0);
	T_ASSERT("mtune: empty gets the count",
		 mtune_value("", v, sizeof(v)) &&
			 strcmp(v, OURS) == 0);
	T_ASSERT("mtune: an operator's other tunables are kept",
		 mtune_value("glibc.malloc.arena_max=2", v, sizeof(v)) &&
			 strcmp(v, "glibc.malloc.arena_max=2:" OURS) == 0);
	T_ASSERT("mtune: an operator's own tcache_max stays, the count added",
		 mtune_value("glibc.malloc.tcache_max=512", v, sizeof(v)) &&
			 strcmp(v, "glibc.malloc.tcache_max=512:"
				   "glibc.malloc.tcache_count=64") == 0);
	T_ASSERT("mtune: an operator's own count wins (no run again)",
		 !mtune_value("glibc.malloc.tcache_count=7", v, sizeof(v)) &&
			 !mtune_value("glibc.malloc.arena_max=2:"
				      "glibc.malloc.tcache_count=0",
				      v, sizeof(v)));
	T_ASSERT("mtune: the run again sees its own count and stays",
		 mtune_value(NULL, v, sizeof(v)) &&
			 !mtune_value(v, w, sizeof(w)));
	T_ASSERT("mtune: a longer name that contains it is not it",
		 mtune_value("x.glibc.malloc.tcache_count=1", v, sizeof(v)) &&
			 mtune_value("glibc.malloc.tcache_count_max=1", v,
				     sizeof(v)));
	T_ASSERT("mtune: a value that does not fit runs as it is",
		 !mtune_value(NULL, v, 10) &&
			 !mtune_value("glibc.malloc.arena_max=2", v, 40));
}

int
main(void)
{
	test_value();
	return T_REPORT();
}
