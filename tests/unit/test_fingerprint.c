/*
 * test_fingerprint.c - unit tests for fingerprint.c: the units of each
 * API and their kinds, cache markers left out, and the bodies three real
 * agents sent over three turns (tests/fixtures/agents, captured with
 * tests/agents/capture.mjs: Claude Code 2.1.332, Codex CLI 0.171.0,
 * opencode 1.18.33) keeping every unit of a turn in the next one.
 *
 * Run from the top of the tree (tests/run.sh does) so the fixtures are
 * found.  The last case fingerprints a 115 KB Claude Code body built from
 * the captures: `valgrind --tool=callgrind --toggle-collect=fp_115k
 * build/release/tests/test_fingerprint` counts the instructions of that
 * call alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "fingerprint.h"

#define FIXTURES "tests/fixtures/agents/"

static cJSON *
load(const char *name)
{
	char path[256], *buf = NULL;
	long len;
	FILE *f;
	cJSON *j = NULL;

	snprintf(path, sizeof(path), FIXTURES "%s", name);
	if ((f = fopen(path, "rb")) == NULL)
		goto out;
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)len + 1)) == NULL)
		goto out;
	if (fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto out;
	buf[len] = '\0';
	j = cJSON_Parse(buf);
out:
	if (f != NULL)
		fclose(f);
	free(buf);
	if (j == NULL)
		printf("# cannot read %s (run from the top of the tree)\n",
		       path);
	return j;
}

static cJSON *
parse(const char *text)
{
	return cJSON_Parse(text);
}

/* fp of text (API api); n units or -1 on error. */
static long
fp_text(const char *text, enum api_id api, struct fp_list *l)
{
	cJSON *j = parse(text);
	enum orgw_err err = fp_compute(j, api, l);

	cJSON_Delete(j);
	return err == ORGW_OK ? (long)l->n : -1;
}

/* The kinds of l joined with ',' into b. */
static const char *
kinds(const struct fp_list *l, char *b, size_t n)
{
	size_t i, at = 0;

	b[0] = '\0';
	for (i = 0; i < l->n && at < n; i++)
		at += (size_t)snprintf(b + at, n - at, "%s%s", i ? "," : "",
				       l->v[i].kind);
	return b;
}

/* a's units are the first a->n units of b, hash and size alike. */
static bool
is_prefix(const struct fp_list *a, const struct fp_list *b)
{
	size_t i;

	if (a->n == 0 || a->n > b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->v[i].hash != b->v[i].hash ||
		    a->v[i].bytes != b->v[i].bytes ||
		    strcmp(a->v[i].kind, b->v[i].kind) != 0)
			return false;
	return true;
}

static void
test_agent(const char *agent, enum api_id api, const char *first_kinds,
	   size_t grow)
{
	struct fp_list l[3] = {{0}};
	cJSON *j[3];
	char name[64], what[160], b[512];
	int t;

	for (t = 0; t < 3; t++) {
		snprintf(name, sizeof(name), "%s-turn%d.json", agent, t + 1);
		j[t] = load(name);
		snprintf(what, sizeof(what), "%s turn %d fingerprinted",
			 agent, t + 1);
		T_ASSERT(what, j[t] != NULL &&
				       fp_compute(j[t], api, &l[t]) == ORGW_OK);
	}
	snprintf(what, sizeof(what), "%s turn 1 units: %s", agent,
		 kinds(&l[0], b, sizeof(b)));
	T_ASSERT(what, strcmp(b, first_kinds) == 0);
	for (t = 0; t < 2; t++) {
		snprintf(what, sizeof(what),
			 "%s turn %d: every unit of turn %d, %zu more", agent,
			 t + 2, t + 1, grow);
		T_ASSERT(what, is_prefix(&l[t], &l[t + 1]) &&
				       l[t + 1].n == l[t].n + grow);
	}
	for (t = 0; t < 3; t++) {
		cJSON_Delete(j[t]);
		fp_list_clear(&l[t]);
	}
}

/* Claude Code puts its message breakpoint on the newest message: turn 1
 * has it on message 0, turn 2 on message 2 only, and message 0 hashes the
 * same in both. */
static void
test_claude_marker_moves(void)
{
	cJSON *a = load("claude-turn1.json"), *b = load("claude-turn2.json");
	struct fp_list la = {0}, lb = {0};
	char *ma = NULL, *mb = NULL;
	size_t m0 = 4;	/* 3 system blocks, the tools */

	if (a != NULL && b != NULL) {
		ma = cJSON_PrintUnformatted(cJSON_GetArrayItem(
			cJSON_GetObjectItem(a, "messages"), 0));
		mb = cJSON_PrintUnformatted(cJSON_GetArrayItem(
			cJSON_GetObjectItem(b, "messages"), 0));
	}
	T_ASSERT("claude: turn 1 marks message 0, turn 2 does not",
		 ma != NULL && mb != NULL && strstr(ma, "cache_control") &&
			 !strstr(mb, "cache_control"));
	T_ASSERT("claude: message 0 hashes the same with and without it",
		 fp_compute(a, API_MESSAGES, &la) == ORGW_OK &&
			 fp_compute(b, API_MESSAGES, &lb) == ORGW_OK &&
			 la.n > m0 && lb.n > m0 &&
			 strcmp(la.v[m0].kind, "user") == 0 &&
			 la.v[m0].hash == lb.v[m0].hash);
	cJSON_free(ma);
	cJSON_free(mb);
	cJSON_Delete(a);
	cJSON_Delete(b);
	fp_list_clear(&la);
	fp_list_clear(&lb);
}

static void
test_units(void)
{
	struct fp_list l = {0}, m = {0};
	char b[256];

	T_ASSERT("messages: system string, tools, messages",
		 fp_text("{\"system\":\"S\",\"tools\":[{\"name\":\"t\"}],"
			 "\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
			 "{\"role\":\"assistant\",\"content\":\"b\"}]}",
			 API_MESSAGES, &l) == 4 &&
			 strcmp(kinds(&l, b, sizeof(b)),
				"system,tools,user,assistant") == 0);
	T_ASSERT("chat: tools, then each message by role",
		 fp_text("{\"tools\":[],\"messages\":[{\"role\":\"system\","
			 "\"content\":\"s\"},{\"role\":\"user\",\"content\":"
			 "\"u\"},{\"role\":\"tool\",\"content\":\"r\"},"
			 "{\"role\":\"developer\",\"content\":\"d\"}]}",
			 API_CHAT, &l) == 5 &&
			 strcmp(kinds(&l, b, sizeof(b)),
				"tools,system,user,tool,developer") == 0);
	T_ASSERT("responses: instructions, tools, items by role or type",
		 fp_text("{\"instructions\":\"I\",\"tools\":[],\"input\":["
			 "{\"type\":\"message\",\"role\":\"developer\","
			 "\"content\":\"x\"},{\"role\":\"user\",\"content\":"
			 "\"y\"},{\"type\":\"function_call\",\"call_id\":\"c\"},"
			 "{\"type\":\"function_call_output\",\"output\":\"o\"},"
			 "{\"type\":\"reasoning\"},{\"type\":\"Bad Type\"}]}",
			 API_RESPONSES, &l) == 8 &&
			 strcmp(kinds(&l, b, sizeof(b)),
				"system,tools,developer,user,function_call,"
				"function_call_output,reasoning,other") == 0);
	T_ASSERT("responses: an input string is one user unit",
		 fp_text("{\"input\":\"hi\"}", API_RESPONSES, &l) == 1 &&
			 strcmp(l.v[0].kind, "user") == 0);
	T_ASSERT("no tools, null tools: no tools unit",
		 fp_text("{\"tools\":null,\"messages\":[{\"role\":\"user\","
			 "\"content\":\"a\"}]}",
			 API_CHAT, &l) == 1);
	T_ASSERT("not an object: no units",
		 fp_text("[1,2]", API_CHAT, &l) == 0 &&
			 fp_text("\"x\"", API_MESSAGES, &l) == 0 &&
			 fp_compute(NULL, API_RESPONSES, &l) == ORGW_OK &&
			 l.n == 0);
	T_ASSERT("size counts the text hashed",
		 fp_text("{\"messages\":[{\"role\":\"user\",\"content\":"
			 "\"abcdefghij\"}]}",
			 API_CHAT, &l) == 1 &&
			 l.v[0].bytes > 10 && l.v[0].bytes < 40);

	/* Markers, at any depth, change nothing; content does. */
	fp_text("{\"system\":[{\"type\":\"text\",\"text\":\"S\"}],"
		"\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
		"\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}]}",
		API_MESSAGES, &l);
	T_ASSERT("cache_control on blocks hashes as without",
		 fp_text("{\"system\":[{\"type\":\"text\",\"text\":\"S\","
			 "\"cache_control\":{\"type\":\"ephemeral\"}}],"
			 "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
			 "\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":"
			 "\"b\",\"cache_control\":{\"type\":\"ephemeral\","
			 "\"ttl\":\"1h\"}}]}]}",
			 API_MESSAGES, &m) == 2 &&
			 l.v[0].hash == m.v[0].hash &&
			 l.v[1].hash == m.v[1].hash &&
			 l.v[1].bytes == m.v[1].bytes);
	T_ASSERT("prompt_cache_breakpoint hashes as without",
		 fp_text("{\"system\":[{\"type\":\"text\",\"text\":\"S\","
			 "\"prompt_cache_breakpoint\":true}],"
			 "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
			 "\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":"
			 "\"b\"}]}]}",
			 API_MESSAGES, &m) == 2 &&
			 l.v[0].hash == m.v[0].hash);
	T_ASSERT("one changed letter changes that unit only",
		 fp_text("{\"system\":[{\"type\":\"text\",\"text\":\"S\"}],"
			 "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
			 "\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":"
			 "\"c\"}]}]}",
			 API_MESSAGES, &m) == 2 &&
			 l.v[0].hash == m.v[0].hash &&
			 l.v[1].hash != m.v[1].hash);
	T_ASSERT("a string content and its marked one-block form are equal",
		 fp_text("{\"messages\":[{\"role\":\"user\",\"content\":"
			 "\"hello\"}]}",
			 API_CHAT, &l) == 1 &&
			 fp_text("{\"messages\":[{\"role\":\"user\",\"content\":"
				 "[{\"type\":\"text\",\"text\":\"hello\","
				 "\"cache_control\":{\"type\":\"ephemeral\"}}]}]}",
				 API_CHAT, &m) == 1 &&
			 l.v[0].hash == m.v[0].hash);
	T_ASSERT("a role that changes changes the hash",
		 fp_text("{\"messages\":[{\"role\":\"system\",\"content\":"
			 "\"hello\"}]}",
			 API_CHAT, &m) == 1 &&
			 l.v[0].hash != m.v[0].hash);
	T_ASSERT("strings end unambiguously: [\"ab\",\"c\"] != [\"a\",\"bc\"]",
		 fp_text("{\"tools\":[\"ab\",\"c\"]}", API_CHAT, &l) == 1 &&
			 fp_text("{\"tools\":[\"a\",\"bc\"]}", API_CHAT, &m) ==
				 1 &&
			 l.v[0].hash != m.v[0].hash);
	T_ASSERT("types are told apart: 1 != \"1\", true != \"t\"",
		 fp_text("{\"tools\":[1,true]}", API_CHAT, &l) == 1 &&
			 fp_text("{\"tools\":[\"1\",\"t\"]}", API_CHAT, &m) ==
				 1 &&
			 l.v[0].hash != m.v[0].hash);
	T_ASSERT("FNV-1a 64 of \"a\" is the published value",
		 fp_hash_bytes(FP_HASH_SEED, "a", 1) == 0xaf63dc4c8601ec8cULL);
	fp_list_clear(&l);
	fp_list_clear(&m);
	fp_list_clear(NULL);
}

/* The one call callgrind counts (--toggle-collect=fp_115k). */
static __attribute__((noinline)) enum orgw_err
fp_115k(const cJSON *body, struct fp_list *l)
{
	return fp_compute(body, API_MESSAGES, l);
}

/*
 * A 115 KB Claude Code body: turn 3 of the capture, its conversation
 * carried on with copies of its last exchange (a tool result's worth of
 * text each) until the body prints to 115 KB.  Fingerprinted once.
 */
static void
test_115k(void)
{
	cJSON *j = load("claude-turn3.json"), *msgs, *pair;
	struct fp_list l = {0};
	char *s = NULL, *pad;
	size_t len = 0, k;

	msgs = cJSON_GetObjectItem(j, "messages");
	if ((pad = malloc(1001)) != NULL) {
		for (k = 0; k < 1000; k++)
			pad[k] = (char)('a' + k % 26);
		pad[1000] = '\0';
	}
	while (msgs != NULL && pad != NULL && len < 115 * 1024) {
		pair = cJSON_CreateObject();
		cJSON_AddStringToObject(pair, "role", "assistant");
		cJSON_AddStringToObject(pair, "content", pad);
		cJSON_AddItemToArray(msgs, pair);
		pair = cJSON_CreateObject();
		cJSON_AddStringToObject(pair, "role", "user");
		cJSON_AddStringToObject(pair, "content", "go on");
		cJSON_AddItemToArray(msgs, pair);
		cJSON_free(s);
		s = cJSON_PrintUnformatted(j);
		len = s != NULL ? strlen(s) : 0;
	}
	printf("# 115 KB body: %zu bytes, %d messages\n", len,
	       cJSON_GetArraySize(msgs));
	T_ASSERT("a 115 KB Claude Code body fingerprinted",
		 len >= 115 * 1024 &&
			 fp_115k(j, &l) == ORGW_OK &&
			 l.n == 4 + (size_t)cJSON_GetArraySize(msgs));
	cJSON_free(s);
	free(pad);
	cJSON_Delete(j);
	fp_list_clear(&l);
}

int
main(void)
{
	test_units();
	test_agent("claude", API_MESSAGES, "system,system,system,tools,user",
		   2);
	test_agent("codex", API_RESPONSES,
		   "tools,developer,developer,user,user", 2);
	test_agent("opencode", API_CHAT, "tools,system,user", 2);
	test_claude_marker_moves();
	test_115k();
	return T_REPORT();
}
