/*
 * fingerprint.h - the prompt of one generation request as a list of
 * units, each one 64-bit hash and a byte size, pure.
 *
 * A provider caches a prompt's prefix, so what tells whether a turn could
 * have read the previous turn's cache is which leading units are the
 * same.  The units, in order:
 *   Messages:  each system block, the tools, each message;
 *   Responses: the instructions, the tools, each input item;
 *   chat:      the tools, each message.
 * A unit's kind names it: "system" (a system block, or the Responses
 * instructions), "tools", a message's role ("user", "assistant",
 * "developer", "tool", chat's "system"), or a Responses item's type
 * ("function_call", "reasoning", ...).
 *
 * The hash is FNV-1a 64 over a canonical walk of the unit's parsed cJSON
 * tree: nothing is printed.  Cache markers ("cache_control",
 * "prompt_cache_breakpoint") are left out at any depth, since a provider
 * caches content, not markers, and Claude Code moves its marker to the
 * newest message every turn.  A content given as a string and the same
 * text as a one-block array ([{"type":"text","text":...}], the form a
 * client needs to attach a marker) hash the same.  Object members are
 * hashed in the order sent: a client that reorders them sends another
 * prompt.  FNV-1a: no dependency, ten lines, and the hashes only tell
 * turns of one conversation apart (a collision hides one break report;
 * nothing is keyed or secured by them).
 *
 * A unit's size is the bytes hashed for it: its strings, keys and 8 per
 * number, about its JSON text without quotes and punctuation.
 */
#ifndef ORGW_FINGERPRINT_H
#define ORGW_FINGERPRINT_H

#include <cJSON.h>

#include "api.h"
#include "orgw.h"

/* Longest kind kept, with its NUL ("custom_tool_call_output" fits). */
#define FP_KIND_MAX 24

struct fp_unit {
	uint64_t hash;
	uint64_t bytes;
	char kind[FP_KIND_MAX];
};

struct fp_list {
	size_t n, cap;
	struct fp_unit *v;	/* malloc'd; fp_list_clear() frees */
};

/*
 * Fingerprints the parsed request body of API api into out (cleared
 * first; on error it holds no units).  body is borrowed.  A body that is
 * not an object, or whose units are absent, gives no units and ORGW_OK:
 * the request's validation is reqval's and the adapters', not this.
 * ORGW_ENOMEM when the list cannot grow.
 */
enum orgw_err fp_compute(const cJSON *body, enum api_id api,
			 struct fp_list *out);

/* Frees out's units; out is then empty and reusable.  NULL is a no-op. */
void fp_list_clear(struct fp_list *out);

/* FNV-1a 64 of n bytes of p continuing from h (FP_HASH_SEED to start). */
#define FP_HASH_SEED 0xcbf29ce484222325ULL
uint64_t fp_hash_bytes(uint64_t h, const void *p, size_t n);

#endif
