/* test_mask.c - the upstream key masked in what orgw relays. */
#include <string.h>

#include "mask.h"
#include "t.h"

/* s with key masked, compared with want. */
static int
masked(const char *key, const char *s, const char *want)
{
	char b[512];

	if (strlen(s) >= sizeof(b))
		return 0;
	memcpy(b, s, strlen(s) + 1);
	mask_key(key, b, strlen(b));
	return strcmp(b, want) == 0;
}

/* The same with mask_key_split (a stream event). */
static int
masked_split(const char *key, const char *s, const char *want)
{
	char b[512];

	if (strlen(s) >= sizeof(b))
		return 0;
	memcpy(b, s, strlen(s) + 1);
	mask_key_split(key, b, strlen(b));
	return strcmp(b, want) == 0;
}

static void
test_mask(void)
{
	const char *k = "sk-or-v1-abc";
	char b[32] = "sk-or-v1-abc";

	T_ASSERT("mask: the key alone", masked(k, k, "************"));
	T_ASSERT("mask: at the start, the middle and the end",
		 masked(k, "sk-or-v1-abc says sk-or-v1-abc, sk-or-v1-abc",
			"************ says ************, ************"));
	T_ASSERT("mask: twice in a row",
		 masked(k, "sk-or-v1-abcsk-or-v1-abc", "************"
						      "************"));
	T_ASSERT("mask: after a false start that overlaps it",
		 masked(k, "ssk-or-v1-abc sk-sk-or-v1-abc",
			"s************ sk-************"));
	T_ASSERT("mask: a prefix of it and other s are left alone",
		 masked(k, "sss sk-or-v1-ab sk-or", "sss sk-or-v1-ab sk-or"));
	T_ASSERT("mask: NULL or empty key, NULL text: nothing",
		 masked(NULL, "sk-or-v1-abc", "sk-or-v1-abc") &&
			 masked("", "sk-or-v1-abc", "sk-or-v1-abc"));
	mask_key(k, NULL, 5);
	/* Only the n bytes given are looked at. */
	mask_key(k, b, 11);
	T_ASSERT("mask: a key cut by n is not masked",
		 strcmp(b, "sk-or-v1-abc") == 0);
	mask_key_str(k, b);
	T_ASSERT("mask_key_str: the whole string",
		 strcmp(b, "************") == 0);
	mask_key_str(k, NULL);
}

/* The forms a client decodes: JSON escapes of any character, and a key
 * cut across two stream events or deltas (each event masked alone). */
static void
test_forms(void)
{
	/* An OpenRouter-shaped key. */
	const char *k = "sk-or-v1-0123456789abcdef0123456789abcdef";
	char a[256], b[256];

	T_ASSERT("escapes: \\u of the first character",
		 masked_split(k, "{\"m\":\"\\u0073k-or-v1-0123456789abcdef"
			   "0123456789abcdef!\"}",
			"{\"m\":\"*************************************"
			"*********!\"}"));
	T_ASSERT("escapes: \\u of every character, upper-case hex",
		 masked_split("sk-1", "\"\\u0073\\u006B\\u002D\\u0031\"",
			"\"************************\""));
	T_ASSERT("escapes: \\/ for a slash in the key",
		 masked_split("ab/cd", "\"x ab\\/cd\"", "\"x ******\""));
	T_ASSERT("escapes: a non-key escape is left alone",
		 masked_split("sk-1", "\"\\u0073k-2 \\n\"", "\"\\u0073k-2 \\n\""));
	/* Two SSE events, the key cut between their deltas. */
	snprintf(a, sizeof(a),
		 "data: {\"choices\":[{\"delta\":{\"content\":\"key: "
		 "%.20s\"}}]}\n\n", k);
	snprintf(b, sizeof(b),
		 "data: {\"choices\":[{\"delta\":{\"content\":\"%s "
		 "ok\"}}]}\n\n", k + 20);
	mask_key_split(k, a, strlen(a));
	mask_key_split(k, b, strlen(b));
	T_ASSERT("split: the first event's end is masked",
		 strstr(a, "\"key: ********************\"") != NULL);
	T_ASSERT("split: the second event's start is masked",
		 strstr(b, "\"********************* ok\"") != NULL);
	T_ASSERT("split: escaped pieces too",
		 masked_split(k, "[\"\\u0073k-or-v1-01\",\"23456789abcdef0123456789"
			   "abcdef\"]",
			"[\"****************\",\"******************************"
			"\"]"));
	T_ASSERT("split: a middle piece, a whole string",
		 masked_split(k, "{\"c\":\"456789abcdef\"}",
			"{\"c\":\"************\"}"));
	T_ASSERT("split: 7 characters are left (too common to mask), 8 not",
		 masked_split(k, "{\"c\":\"sk-or-v\",\"d\":\"ab cdef012\","
			   "\"e\":\"ab cdef0123\"}",
			"{\"c\":\"sk-or-v\",\"d\":\"ab cdef012\","
			"\"e\":\"ab ********\"}"));
	T_ASSERT("split: a piece inside a string is no cut: left",
		 masked_split(k, "\"x 0123456789ab y\"", "\"x 0123456789ab y\""));
	T_ASSERT("split: ordinary text is left alone",
		 masked_split(k, "{\"content\":\"Hello from deepseek 0123\"}",
			"{\"content\":\"Hello from deepseek 0123\"}"));
	T_ASSERT("split: strings found past escaped quotes and backslashes",
		 masked_split(k, "[\"say \\\"0123456789ab\\\" 0123456789abcdef\","
			   "\"x\\\\\",\"0123456789abc\"]",
			"[\"say \\\"0123456789ab\\\" ****************\","
			"\"x\\\\\",\"*************\"]"));
	T_ASSERT("split: a member's name is no piece, its value is",
		 masked_split(k, "{\"0123456789abcdef\" : \"0123456789abcdef\"}",
			      "{\"0123456789abcdef\" : \"****************\"}"));
	T_ASSERT("whole answers: escapes masked, pieces left (no joining)",
		 masked(k, "{\"label\":\"sk-or-v1-012...def\",\"k\":"
			   "\"\\u0073k-or-v1-0123456789abcdef0123456789abcdef\"}",
			"{\"label\":\"sk-or-v1-012...def\",\"k\":"
			"\"**********************************************\"}"));
	T_ASSERT("split: an unterminated string is left",
		 masked_split(k, "\"0123456789abcdef", "\"0123456789abcdef"));
}

int
main(void)
{
	test_mask();
	test_forms();
	return T_REPORT();
}
