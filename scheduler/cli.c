/*
 * cli.c - what orgw-score's commands share to print JSON (cli.h).
 */
#include <cJSON.h>

#include "cli.h"
#include "log.h"

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
