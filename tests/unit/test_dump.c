/*
 * test_dump.c - unit tests for dump.c: the JSON-lines form of
 * the state that orgw-score --dump writes and --load reads.
 */
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "dump.h"

/* dump_line then dump_parse: the same key and value text back. */
static bool
round_trip(const char *key, const char *val, const char *want_line)
{
	char *line = dump_line(key, val), *k = NULL, *v = NULL;
	bool ok = line != NULL &&
		  (want_line == NULL || strcmp(line, want_line) == 0) &&
		  strchr(line, '\n') == NULL &&
		  dump_parse(line, strlen(line), &k, &v) == ORGW_OK &&
		  strcmp(k, key) == 0 && strcmp(v, val) == 0;

	if (!ok && line != NULL)
		printf("# line: %s\n# back: %s = %s\n", line, k ? k : "-",
		       v ? v : "-");
	dump_free(line);
	free(k);
	free(v);
	return ok;
}

static void
test_lines(void)
{
	T_ASSERT("a record is embedded as JSON",
		 round_trip("STATS:a/b", "{\"v\":1,\"requests\":3}",
			    "{\"key\":\"STATS:a/b\",\"value\":{\"v\":1,"
			    "\"requests\":3}}"));
	T_ASSERT("a count is carried as a string, byte for byte",
		 round_trip("LOST_UPDATES", "12",
			    "{\"key\":\"LOST_UPDATES\",\"value\":\"12\"}"));
	T_ASSERT("text that is not JSON is a string",
		 round_trip("X", "not json {", NULL));
	T_ASSERT("a JSON string value keeps its quotes",
		 round_trip("X", "\"quoted\"", NULL));
	T_ASSERT("an array is embedded",
		 round_trip("MODELS_SEEN", "[{\"m\":\"a\",\"t\":1}]", NULL));
	T_ASSERT("control characters and quotes in keys and values survive",
		 round_trip("K:\"x\"\\y", "line1\nline2\t\"q\"", NULL));
	T_ASSERT("UTF-8 survives", round_trip("M:é", "{\"n\":\"ü\"}", NULL));
	T_ASSERT("an empty value", round_trip("E", "", NULL));
}

static void
test_parse(void)
{
	static const char *bad[] = {
		"",
		"{}",
		"[]",
		"not json",
		"{\"key\":\"k\"}",
		"{\"value\":\"v\"}",
		"{\"key\":\"\",\"value\":\"v\"}",
		"{\"key\":1,\"value\":\"v\"}",
		"{\"key\":\"k\",\"value\":1}",
		"{\"key\":\"k\",\"value\":null}",
		"{\"key\":\"k\",\"value\":true}",
		"{\"key\":\"a\\nb\",\"value\":\"v\"}",
		"{\"key\":\"k\",\"value\":\"v\"} trailing",
	};
	char *k, *v, what[160];
	const char *crlf = "{\"key\":\"k\",\"value\":{\"a\":1}}\r\n";
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "refused: %s", bad[i]);
		T_ASSERT(what, dump_parse(bad[i], strlen(bad[i]), &k, &v) ==
					       ORGW_EINVAL &&
				       k == NULL && v == NULL);
	}
	T_ASSERT("a CRLF line, a formatted value reprinted compact",
		 dump_parse(crlf, strlen(crlf), &k, &v) == ORGW_OK &&
			 strcmp(k, "k") == 0 && strcmp(v, "{\"a\":1}") == 0);
	free(k);
	free(v);
	T_ASSERT("only len bytes are read (no NUL needed)",
		 dump_parse("{\"key\":\"k\",\"value\":\"v\"}XXXX",
			    strlen("{\"key\":\"k\",\"value\":\"v\"}"), &k,
			    &v) == ORGW_OK &&
			 strcmp(v, "v") == 0);
	free(k);
	free(v);
	T_ASSERT("extra members are ignored",
		 dump_parse("{\"key\":\"k\",\"value\":\"v\",\"x\":1}",
			    strlen("{\"key\":\"k\",\"value\":\"v\",\"x\":1}"),
			    &k, &v) == ORGW_OK);
	free(k);
	free(v);
}

int
main(void)
{
	test_lines();
	test_parse();
	return T_REPORT();
}
