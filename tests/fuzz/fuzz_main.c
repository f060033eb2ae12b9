/*
 * fuzz_main.c - replays fuzz inputs without libFuzzer (docs/style.md
 * section 11; the shape of cJSON fuzzing/fuzz_main.c), so `make unit` runs
 * every seed of every target under gcc, with or without the sanitizers.
 *
 * Usage: replay_fuzz_<t> FILE...  Each file is read whole into a heap
 * buffer of exactly its size (no NUL after it, as libFuzzer does, so an
 * over-read shows under ASan) and passed to LLVMFuzzerTestOneInput().
 * Prints "ok - replay FILE" per file, or "not ok - ..." when a file can't
 * be read; exits 0 when every file was replayed.  A target that breaks an
 * invariant aborts, which fails the run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads path whole into a malloc'd buffer; caller frees.  NULL on error
 * (errno set). */
static uint8_t *
slurp(const char *path, size_t *size)
{
	FILE *f;
	uint8_t *p = NULL, *q;
	size_t len = 0, cap = 0, n;
	int saved;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	for (;;) {
		if (len == cap) {
			if (cap > SIZE_MAX / 2) {
				errno = EFBIG;
				goto fail;
			}
			cap = cap ? cap * 2 : 4096;
			if ((q = realloc(p, cap)) == NULL)
				goto fail;
			p = q;
		}
		n = fread(p + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		errno = EIO;
		goto fail;
	}
	fclose(f);
	/* Exactly len bytes (at least one so malloc can't return NULL),
	 * so ASan sees a read past the input. */
	if ((q = malloc(len ? len : 1)) == NULL) {
		free(p);
		return NULL;
	}
	if (len)
		memcpy(q, p, len);
	free(p);
	*size = len;
	return q;
fail:
	saved = errno;
	free(p);
	fclose(f);
	errno = saved;
	return NULL;
}

int
main(int argc, char **argv)
{
	uint8_t *data;
	size_t size = 0;
	int i, bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if ((data = slurp(argv[i], &size)) == NULL) {
			printf("not ok - replay %s (%s)\n", argv[i],
			       strerror(errno));
			bad = 1;
			continue;
		}
		LLVMFuzzerTestOneInput(data, size);
		free(data);
		printf("ok - replay %s\n", argv[i]);
		fflush(stdout);
	}
	return bad;
}
