/*
 * dump.c - the JSON-lines state dump format (dump.h).  Values are
 * embedded as JSON when they are an object or an array, so a dump reads
 * well (jq works on it); any other text, a number included, is carried
 * as a string and comes back byte for byte.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "dump.h"

char *
dump_line(const char *key, const char *val)
{
	cJSON *o = cJSON_CreateObject(), *v = cJSON_Parse(val);
	char *out = NULL;

	if (v != NULL && !cJSON_IsObject(v) && !cJSON_IsArray(v)) {
		cJSON_Delete(v);
		v = NULL;
	}
	if (v == NULL)
		v = cJSON_CreateString(val);
	if (o == NULL || v == NULL ||
	    cJSON_AddStringToObject(o, "key", key) == NULL) {
		cJSON_Delete(v);
		goto out;
	}
	if (!cJSON_AddItemToObject(o, "value", v)) {
		cJSON_Delete(v);
		goto out;
	}
	out = cJSON_PrintUnformatted(o);
out:
	cJSON_Delete(o);
	return out;
}

void
dump_free(char *line)
{
	cJSON_free(line);
}

enum orgw_err
dump_parse(const char *line, size_t len, char **key, char **val)
{
	cJSON *o, *k, *v;
	char *text = NULL, *buf;
	enum orgw_err err = ORGW_EINVAL;
	size_t i;

	*key = *val = NULL;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if ((buf = malloc(len + 1)) == NULL)
		return ORGW_ENOMEM;
	memcpy(buf, line, len);
	buf[len] = '\0';
	o = cJSON_ParseWithLengthOpts(buf, len + 1, NULL, 1);
	free(buf);
	k = cJSON_GetObjectItemCaseSensitive(o, "key");
	v = cJSON_GetObjectItemCaseSensitive(o, "value");
	if (!cJSON_IsObject(o) || !cJSON_IsString(k) ||
	    k->valuestring[0] == '\0' || v == NULL)
		goto out;
	for (i = 0; k->valuestring[i] != '\0'; i++)
		if ((unsigned char)k->valuestring[i] < 0x20 ||
		    k->valuestring[i] == 0x7f)
			goto out;
	if (cJSON_IsString(v)) {
		text = strdup(v->valuestring);
	} else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		char *p = cJSON_PrintUnformatted(v);
		text = p ? strdup(p) : NULL;
		cJSON_free(p);
	} else {
		goto out;	/* a number, bool or null was never dumped */
	}
	err = ORGW_ENOMEM;
	if (text == NULL || (*key = strdup(k->valuestring)) == NULL) {
		free(text);
		goto out;
	}
	*val = text;
	err = ORGW_OK;
out:
	cJSON_Delete(o);
	return err;
}
