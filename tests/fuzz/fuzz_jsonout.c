/*
 * fuzz_jsonout.c - libFuzzer target for jsonout.c: whatever cJSON parses
 * (client bodies are forwarded through jsonout_print) prints to the very
 * bytes cJSON_PrintUnformatted gives.  A difference aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *o = cJSON_ParseWithLength((const char *)data, size);
	char *a, *b;

	if (o == NULL)
		return 0;
	a = cJSON_PrintUnformatted(o);
	b = jsonout_print(o);
	if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0))
		abort();
	cJSON_free(a);
	cJSON_free(b);
	cJSON_Delete(o);
	return 0;
}
