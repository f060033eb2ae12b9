/*
 * fuzz_jsoninp.c - libFuzzer target for jsonin.c: jsonin_parse() must
 * accept what cJSON_ParseWithLength() accepts and build the same tree
 * (types, keys, strings, valueint, valuedouble bit for bit, child order
 * and prev links), and refuse what it refuses.  A difference aborts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonin.h"
#include "../unit/jsontree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *want = cJSON_ParseWithLength((const char *)data, size);
	cJSON *got = jsonin_parse((const char *)data, size);

	if (!same_tree(want, got))
		abort();
	cJSON_Delete(want);
	cJSON_Delete(got);
	return 0;
}
