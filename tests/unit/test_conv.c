/*
 * test_conv.c - unit tests for conv.c: the conversation key of a request
 * as a table of the headers and bodies the pinned agents send
 * (tests/agents/README.md: Claude Code 2.1, Codex CLI 0.171, opencode
 * 1.18, the SDKs), the order of the sources, the bound, the scope and
 * the derived key's stability across turns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "conv.h"

/* Claude Code's body, cut to what the key reads: three system blocks
 * (the last two with breakpoints), the first message's text blocks with
 * the breakpoint on its last, metadata.user_id a JSON string. */
#define CLAUDE_BODY                                                         \
	"{\"model\":\"anthropic/claude-sonnet-4.5\",\"max_tokens\":32000,"  \
	"\"system\":[{\"type\":\"text\",\"text\":\"x-anthropic-billing-"  \
	"header: cc_version=2.1.332\"},{\"type\":\"text\",\"text\":\"You " \
	"are Claude Code.\",\"cache_control\":{\"type\":\"ephemeral\"}},"    \
	"{\"type\":\"text\",\"text\":\"prompt\",\"cache_control\":{\"type\"" \
	":\"ephemeral\"}}],\"messages\":[{\"role\":\"user\",\"content\":["   \
	"{\"type\":\"text\",\"text\":\"<system-reminder>r</system-reminder>" \
	"\"},{\"type\":\"text\",\"text\":\"Say hello.\",\"cache_control\":"  \
	"{\"type\":\"ephemeral\"}}]}],\"tools\":[],\"metadata\":{\"user_id\"" \
	":\"{\\\"device_id\\\":\\\"d1\\\",\\\"account_uuid\\\":\\\"\\\","   \
	"\\\"session_id\\\":\\\"4f1c2a9e-0d1b-4c7e-9a55-3b0e7c1d2f88\\\"}\"}," \
	"\"stream\":true}"
#define CLAUDE_SID "4f1c2a9e-0d1b-4c7e-9a55-3b0e7c1d2f88"

/* Codex CLI's Responses body, cut: developer and user input items,
 * prompt_cache_key = the session id. */
#define CODEX_BODY                                                         \
	"{\"model\":\"openai/gpt-5.1-codex\",\"input\":[{\"type\":"          \
	"\"message\",\"role\":\"developer\",\"content\":[{\"type\":"        \
	"\"input_text\",\"text\":\"You are Codex.\"}]},{\"type\":\"message\"" \
	",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":" \
	"\"Say hello.\"}]}],\"tools\":[],\"reasoning\":{\"summary\":\"auto\"}," \
	"\"store\":false,\"stream\":true,\"include\":[\"reasoning."         \
	"encrypted_content\"],\"prompt_cache_key\":"                        \
	"\"019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b\"}"
#define CODEX_SID "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b"

/* opencode's chat body, cut: breakpoints on the message objects. */
#define OPENCODE_T1                                                        \
	"{\"model\":\"anthropic/claude-sonnet-4.5\",\"messages\":[{\"role\":" \
	"\"system\",\"content\":\"You are opencode.\",\"cache_control\":"    \
	"{\"type\":\"ephemeral\"}},{\"role\":\"user\",\"content\":\"Say "    \
	"hello.\",\"cache_control\":{\"type\":\"ephemeral\"}}],\"stream\":"  \
	"true,\"max_tokens\":32000}"
/* Its second turn: the breakpoint has moved to the new last message. */
#define OPENCODE_T2                                                        \
	"{\"model\":\"anthropic/claude-sonnet-4.5\",\"messages\":[{\"role\":" \
	"\"system\",\"content\":\"You are opencode.\",\"cache_control\":"    \
	"{\"type\":\"ephemeral\"}},{\"role\":\"user\",\"content\":\"Say "    \
	"hello.\"},{\"role\":\"assistant\",\"content\":\"Hello!\"},"        \
	"{\"role\":\"user\",\"content\":\"Again.\",\"cache_control\":"       \
	"{\"type\":\"ephemeral\"}}],\"stream\":true,\"max_tokens\":32000}"

struct row {
	const char *what;
	const char *body;
	struct conv_headers h;
	enum conv_src src;
	const char *id;		/* NULL: derived, checked apart */
	bool forwarded;		/* conv_forward_session gives the id */
};

static const struct row rows[] = {
    {"claude code: header and metadata.user_id", CLAUDE_BODY,
     {NULL, CLAUDE_SID, NULL}, CONV_SRC_CLAUDE, CLAUDE_SID, true},
    {"claude code through the SDK: metadata.user_id only", CLAUDE_BODY,
     {NULL, NULL, NULL}, CONV_SRC_CLAUDE, CLAUDE_SID, true},
    {"older claude code user_id: _session_ suffix",
     "{\"model\":\"m\",\"messages\":[],\"metadata\":{\"user_id\":"
     "\"user_ab12_account_cd34_session_s-old\"}}",
     {NULL, NULL, NULL}, CONV_SRC_CLAUDE, "s-old", true},
    {"codex: session-id header and prompt_cache_key", CODEX_BODY,
     {NULL, NULL, CODEX_SID}, CONV_SRC_CODEX, CODEX_SID, true},
    {"codex without the header: prompt_cache_key", CODEX_BODY,
     {NULL, NULL, NULL}, CONV_SRC_CODEX, CODEX_SID, true},
    {"opencode: x-session-id", OPENCODE_T1,
     {"ses_5e1a2b3c4d5eFfGgHh", NULL, NULL}, CONV_SRC_HEADER,
     "ses_5e1a2b3c4d5eFfGgHh", true},
    {"body session_id wins over every header",
     "{\"model\":\"m\",\"messages\":[],\"session_id\":\"b1\","
     "\"prompt_cache_key\":\"p1\"}",
     {"x1", "c1", "s1"}, CONV_SRC_BODY, "b1", false},
    {"x-session-id before claude code's header", CLAUDE_BODY,
     {"x1", CLAUDE_SID, "s1"}, CONV_SRC_HEADER, "x1", true},
    {"claude code's header before session-id", CODEX_BODY,
     {NULL, "c1", CODEX_SID}, CONV_SRC_CLAUDE, "c1", true},
    {"metadata.user_id before session-id", CLAUDE_BODY,
     {NULL, NULL, "s1"}, CONV_SRC_CLAUDE, CLAUDE_SID, true},
    {"empty values are no key: on to the next source",
     "{\"model\":\"m\",\"messages\":[],\"session_id\":\"\","
     "\"prompt_cache_key\":\"p1\"}",
     {"", "", ""}, CONV_SRC_CODEX, "p1", true},
    {"a session_id that is not a string is no key",
     "{\"model\":\"m\",\"messages\":[],\"session_id\":7}",
     {"x1", NULL, NULL}, CONV_SRC_HEADER, "x1", true},
    {"a user_id that is not JSON and names no session",
     "{\"model\":\"m\",\"messages\":[],\"metadata\":{\"user_id\":\"{bad\"}}",
     {NULL, NULL, "s1"}, CONV_SRC_CODEX, "s1", true},
    {"nothing said: derived", OPENCODE_T1, {NULL, NULL, NULL},
     CONV_SRC_DERIVED, NULL, false},
};

static void
test_table(void)
{
	char what[160];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		cJSON *b = cJSON_Parse(r->body);
		struct conv_key k;
		enum orgw_err e = conv_key_of(b, &r->h, "", "m", &k);
		const char *fw = conv_forward_session(&k);

		snprintf(what, sizeof(what), "key: %s", r->what);
		T_ASSERT(what,
			 b != NULL && e == ORGW_OK && k.src == r->src &&
				 (r->id == NULL ?
					  strncmp(k.id, "h:", 2) == 0 &&
						  strlen(k.id) == 66 :
					  strcmp(k.id, r->id) == 0) &&
				 strlen(k.hash) == CONV_HASH_HEX &&
				 (r->forwarded ? fw == k.id : fw == NULL));
		cJSON_Delete(b);
	}
}

/* The key of body under scope and model, without headers; "" on error. */
static const char *
key(const char *body, const char *scope, const char *model, char *hash)
{
	static char id[CONV_KEY_MAX + 1];
	cJSON *b = cJSON_Parse(body);
	struct conv_key k;

	id[0] = '\0';
	if (conv_key_of(b, NULL, scope, model, &k) == ORGW_OK) {
		snprintf(id, sizeof(id), "%s", k.id);
		if (hash != NULL)
			memcpy(hash, k.hash, sizeof(k.hash));
	}
	cJSON_Delete(b);
	return id;
}

static void
test_derived(void)
{
	char a[CONV_KEY_MAX + 1], h1[CONV_HASH_HEX + 1], h2[CONV_HASH_HEX + 1];

	snprintf(a, sizeof(a), "%s", key(OPENCODE_T1, "", "m", NULL));
	T_ASSERT("derived: a later turn, breakpoints moved, is the same key",
		 a[0] == 'h' && strcmp(a, key(OPENCODE_T2, "", "m", NULL)) == 0);
	T_ASSERT("derived: another model is another key",
		 strcmp(a, key(OPENCODE_T1, "", "m2", NULL)) != 0);
	T_ASSERT("derived: another first user message is another key",
		 strcmp(a, key("{\"model\":\"m\",\"messages\":[{\"role\":"
			       "\"system\",\"content\":\"You are opencode.\"},"
			       "{\"role\":\"user\",\"content\":\"Bye.\"}]}",
			       "", "m", NULL)) != 0);
	T_ASSERT("derived: another system prompt is another key",
		 strcmp(a, key("{\"model\":\"m\",\"messages\":[{\"role\":"
			       "\"system\",\"content\":\"You are other.\"},"
			       "{\"role\":\"user\",\"content\":\"Say hello.\"}]}",
			       "", "m", NULL)) != 0);
	T_ASSERT("derived: system as a message and as a member agree",
		 strcmp(key("{\"messages\":[{\"role\":\"system\",\"content\":"
			    "\"S\"},{\"role\":\"user\",\"content\":\"U\"}]}",
			    "", "m", NULL),
			key("{\"system\":\"S\",\"messages\":[{\"role\":\"user\","
			    "\"content\":\"U\"}]}",
			    "", "m", NULL)) == 0);
	/* Responses: developer items are the system slot, a string input
	 * is the first message. */
	snprintf(a, sizeof(a), "%s",
		 key("{\"instructions\":\"I\",\"input\":\"hi\"}", "", "m",
		     NULL));
	T_ASSERT("derived: responses with a string input",
		 a[0] == 'h' &&
			 strcmp(a, key("{\"instructions\":\"I\",\"input\":"
				       "\"hi\",\"stream\":true}",
				       "", "m", NULL)) == 0 &&
			 strcmp(a, key("{\"instructions\":\"J\",\"input\":"
				       "\"hi\"}",
				       "", "m", NULL)) != 0);
	T_ASSERT("derived: codex's input, later turns append",
		 strcmp(key("{\"input\":[{\"role\":\"developer\",\"content\":"
			    "\"D\"},{\"role\":\"user\",\"content\":\"U\"}]}",
			    "", "m", NULL),
			key("{\"input\":[{\"role\":\"developer\",\"content\":"
			    "\"D\"},{\"role\":\"user\",\"content\":\"U\"},"
			    "{\"type\":\"reasoning\",\"encrypted_content\":"
			    "\"e\"},{\"role\":\"user\",\"content\":\"V\"}]}",
			    "", "m", NULL)) == 0);
	/* Scope: the same session id under two client keys. */
	key("{\"session_id\":\"s\"}", "alice", "m", h1);
	key("{\"session_id\":\"s\"}", "bob", "m", h2);
	T_ASSERT("scope: two client keys, two conversations",
		 strcmp(h1, h2) != 0);
	key("{\"session_id\":\"s\"}", "alice", "m", h2);
	T_ASSERT("scope: the same key and model, one conversation",
		 strcmp(h1, h2) == 0);
	key("{\"session_id\":\"s\"}", "alice", "m2", h2);
	T_ASSERT("scope: two models, two conversations", strcmp(h1, h2) != 0);
}

static void
test_bound(void)
{
	char hex[CONV_HASH_HEX + 1], body[700], big[301];
	struct conv_headers h = {NULL, NULL, NULL};
	struct conv_key k;
	cJSON *b = cJSON_Parse("{\"messages\":[]}");

	T_ASSERT("sha256 of abc",
		 conv_sha256_hex("abc", 3, hex) == ORGW_OK &&
			 strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a3"
				     "96177a9cb410ff61f20015ad") == 0);
	memset(big, 'k', 256);
	big[256] = '\0';
	h.x_session_id = big;
	T_ASSERT("bound: 256 bytes are kept as sent",
		 conv_key_of(b, &h, "", "m", &k) == ORGW_OK &&
			 strcmp(k.id, big) == 0);
	memset(big, 'k', 300);
	big[300] = '\0';
	conv_sha256_hex(big, 300, hex);
	T_ASSERT("bound: 300 bytes go as their hex sha-256",
		 conv_key_of(b, &h, "", "m", &k) == ORGW_OK &&
			 strcmp(k.id, hex) == 0 &&
			 conv_forward_session(&k) == k.id);
	h.x_session_id = "s\x01\xc3\xa9";
	conv_sha256_hex(h.x_session_id, 4, hex);
	T_ASSERT("bound: control and non-ascii bytes are hashed",
		 conv_key_of(b, &h, "", "m", &k) == ORGW_OK &&
			 strcmp(k.id, hex) == 0);
	cJSON_Delete(b);
	snprintf(body, sizeof(body), "{\"session_id\":\"%s\"}", big);
	conv_sha256_hex(big, 300, hex);
	T_ASSERT("bound: a long body session_id too",
		 strcmp(key(body, "", "m", NULL), hex) == 0);
}

static void
test_misc(void)
{
	struct conv_key k;
	char s[CONV_SHOW_MAX];
	cJSON *a = cJSON_Parse("[1]");

	T_ASSERT("not an object: EINVAL",
		 conv_key_of(a, NULL, "", "m", &k) == ORGW_EINVAL &&
			 conv_key_of(NULL, NULL, "", "m", &k) == ORGW_EINVAL);
	cJSON_Delete(a);
	memset(&k, 0, sizeof(k));
	snprintf(k.id, sizeof(k.id), "%s", CLAUDE_SID);
	conv_show(&k, s, sizeof(s));
	T_ASSERT("show: first 12 characters", strcmp(s, "4f1c2a9e-0d1") == 0);
	snprintf(k.id, sizeof(k.id), "h:0123456789abcdef");
	conv_show(&k, s, sizeof(s));
	T_ASSERT("show: derived as h: and 10 hex digits",
		 strcmp(s, "h:0123456789") == 0);
	T_ASSERT("source names",
		 strcmp(conv_src_name(CONV_SRC_CODEX), "codex") == 0 &&
			 strcmp(conv_src_name(CONV_SRC_DERIVED), "derived") ==
				 0);
}

int
main(void)
{
	test_table();
	test_derived();
	test_bound();
	test_misc();
	return T_REPORT();
}
