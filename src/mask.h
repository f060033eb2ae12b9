#ifndef ORGW_MASK_H
#define ORGW_MASK_H

#include <stddef.h>

/*
 * The one masking step for every byte orgw relays from upstream (docs/design.md 3):
 * overwrites with '*', in place and at the same length (so the JSON
 * around it stays valid), each copy of key in p[0..n), its characters
 * raw or as JSON escapes ("\u0073k-...").  key NULL or empty, or p
 * NULL: nothing.  p is borrowed; nothing is allocated.
 */
void mask_key(const char *key, char *p, size_t n);

/*
 * mask_key for one stream event, which a client joins with the others:
 * also, inside each JSON string value (not a member's name), a run of 8
 * or more of the key's characters at the string's start or end (a key
 * cut across two events or deltas; for keys longer than 8 characters).
 * A piece of 7 or fewer characters is not masked.
 */
void mask_key_split(const char *key, char *p, size_t n);

/* mask_key over the NUL-terminated string s (a text orgw decoded from an
 * upstream message before it re-sends it).  s NULL: nothing. */
void mask_key_str(const char *key, char *s);

#endif
