/*
 * test_buf.c - unit tests for buf.c: growth, the NUL after the bytes,
 * the max cap, the size_t overflow guard, consume/reset/free.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "buf.h"

static void
test_add(void)
{
	struct buf b = {0};
	char big[1000];
	size_t i;

	T_ASSERT("empty buf: add 0 bytes is ok", buf_add(&b, "", 0) == ORGW_OK);
	T_ASSERT("empty add still gives a NUL-terminated p",
	         b.p != NULL && b.p[0] == '\0' && b.len == 0);
	T_ASSERT("add 3", buf_add(&b, "abc", 3) == ORGW_OK);
	T_ASSERT("len 3, text abc, NUL after",
	         b.len == 3 && memcmp(b.p, "abc", 4) == 0);
	T_ASSERT("cap holds len + NUL", b.cap >= b.len + 1);
	T_ASSERT("adds appends a string", buf_adds(&b, "de") == ORGW_OK &&
	                                          b.len == 5 &&
	                                          strcmp(b.p, "abcde") == 0);
	T_ASSERT("add with embedded NUL keeps all bytes",
	         buf_add(&b, "x\0y", 3) == ORGW_OK && b.len == 8 &&
	             memcmp(b.p + 5, "x\0y", 4) == 0);

	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	buf_reset(&b);
	for (i = 0; i < 50; i++)
		if (buf_add(&b, big, sizeof(big)) != ORGW_OK)
			break;
	T_ASSERT("50 adds of 1000 bytes grow the buffer", i == 50 &&
	                                                       b.len == 50000 &&
	                                                       b.cap > 50000);
	for (i = 0; i < 50; i++)
		if (memcmp(b.p + i * sizeof(big), big, sizeof(big)) != 0)
			break;
	T_ASSERT("every chunk intact after growth", i == 50);
	T_ASSERT("NUL after 50000 bytes", b.p[50000] == '\0');
	buf_free(&b);
	T_ASSERT("free clears the fields", b.p == NULL && b.len == 0 &&
	                                          b.cap == 0);
	T_ASSERT("a freed buf can be reused",
	         buf_adds(&b, "again") == ORGW_OK && strcmp(b.p, "again") == 0);
	buf_free(&b);
	buf_free(NULL);	/* a no-op; a crash here fails the run */
}

static void
test_max(void)
{
	struct buf b = {0};
	size_t cap;

	b.max = 8;
	T_ASSERT("max 8: 5 bytes fit", buf_add(&b, "12345", 5) == ORGW_OK);
	T_ASSERT("max 8: 3 more reach exactly max",
	         buf_add(&b, "678", 3) == ORGW_OK && b.len == 8);
	cap = b.cap;
	T_ASSERT("max 8: one more byte is ETOOBIG",
	         buf_add(&b, "9", 1) == ORGW_ETOOBIG);
	T_ASSERT("a refused add leaves the bytes unchanged",
	         b.len == 8 && strcmp(b.p, "12345678") == 0 && b.cap == cap);
	T_ASSERT("max 8: adding 0 bytes at max is ok",
	         buf_add(&b, "", 0) == ORGW_OK);
	buf_reset(&b);
	T_ASSERT("reset empties but keeps memory",
	         b.len == 0 && b.p != NULL && b.p[0] == '\0' && b.cap == cap);
	T_ASSERT("max 8: 9 bytes at once refused",
	         buf_add(&b, "123456789", 9) == ORGW_ETOOBIG && b.len == 0);
	buf_free(&b);
}

static void
test_overflow(void)
{
	struct buf b = {0};

	T_ASSERT("n = SIZE_MAX is refused without allocating",
	         buf_add(&b, "x", SIZE_MAX) == ORGW_ETOOBIG && b.p == NULL);
	T_ASSERT("add ab", buf_adds(&b, "ab") == ORGW_OK);
	T_ASSERT("len + n + 1 overflowing is refused",
	         buf_add(&b, "x", SIZE_MAX - 2) == ORGW_ETOOBIG);
	T_ASSERT("len + n + 1 == SIZE_MAX + 1 exactly is refused",
	         buf_add(&b, "x", SIZE_MAX - 1) == ORGW_ETOOBIG);
	T_ASSERT("the buffer is intact after refusals",
	         b.len == 2 && strcmp(b.p, "ab") == 0);
	buf_free(&b);
}

static void
test_consume(void)
{
	struct buf b = {0};

	buf_consume(&b, 0);
	T_ASSERT("consume on a never-used buf is safe", b.len == 0);
	buf_consume(&b, 5);
	T_ASSERT("consume past len on empty is safe", b.len == 0);
	buf_adds(&b, "hello world");
	buf_consume(&b, 0);
	T_ASSERT("consume 0 keeps everything",
	         b.len == 11 && strcmp(b.p, "hello world") == 0);
	buf_consume(&b, 6);
	T_ASSERT("consume 6 keeps the tail, NUL-terminated",
	         b.len == 5 && strcmp(b.p, "world") == 0);
	buf_consume(&b, 5);
	T_ASSERT("consume all empties", b.len == 0 && b.p[0] == '\0');
	buf_adds(&b, "abc");
	buf_consume(&b, 100);
	T_ASSERT("consume more than len empties", b.len == 0 && b.p[0] == '\0');
	buf_adds(&b, "xyz");
	T_ASSERT("add after consume starts at 0", strcmp(b.p, "xyz") == 0);
	buf_free(&b);
}

static void
test_join(void)
{
	char k[8];

	T_ASSERT("join: parts with a separator",
		 buf_join(k, sizeof(k), ':', "HIT", "m", (char *)NULL) &&
			 strcmp(k, "HIT:m") == 0);
	T_ASSERT("join: no separator",
		 buf_join(k, sizeof(k), '\0', "/s", ".lock", (char *)NULL) &&
			 strcmp(k, "/s.lock") == 0);
	T_ASSERT("join: an exact fit",
		 buf_join(k, sizeof(k), ':', "abc", "def", (char *)NULL) &&
			 strcmp(k, "abc:def") == 0);
	T_ASSERT("join: one byte over is cut, as snprintf cuts",
		 !buf_join(k, sizeof(k), ':', "abcd", "efg", (char *)NULL) &&
			 strcmp(k, "abcd:ef") == 0);
	T_ASSERT("join: a separator that does not fit is left out",
		 !buf_join(k, sizeof(k), ':', "abcdefg", "h", (char *)NULL) &&
			 strcmp(k, "abcdefg") == 0);
	T_ASSERT("join: empty parts and none",
		 buf_join(k, sizeof(k), ':', "", "x", "", (char *)NULL) &&
			 strcmp(k, ":x:") == 0 &&
			 buf_join(k, sizeof(k), ':', (char *)NULL) &&
			 k[0] == '\0');
	T_ASSERT("join: one byte holds the NUL only",
		 !buf_join(k, 1, ':', "a", (char *)NULL) && k[0] == '\0');
}

int
main(void)
{
	test_join();
	test_add();
	test_max();
	test_overflow();
	test_consume();
	return T_REPORT();
}
