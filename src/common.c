/* common.c - what orgw.h declares for every module: the error names
 * (orgw_strerror) and orgw_hex().  Named apart from cgi-bin/orgw.c, the
 * gateway's main. */
#include "orgw.h"

const char *
orgw_strerror(enum orgw_err err)
{
	switch (err) {
	case ORGW_OK:
		return "ok";
	case ORGW_ENOMEM:
		return "out of memory";
	case ORGW_EINVAL:
		return "invalid input";
	case ORGW_EIO:
		return "I/O error";
	case ORGW_EBUSY:
		return "busy";
	case ORGW_EUPSTREAM:
		return "upstream error";
	case ORGW_ETOOBIG:
		return "too big";
	case ORGW_ECONFLICT:
		return "conflict";
	case ORGW_ENOENT:
		return "not found";
	}
	return "unknown error";
}

void
orgw_hex(const unsigned char *b, size_t n, char *dst)
{
	static const char hexdig[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = hexdig[b[i] >> 4];
		dst[2 * i + 1] = hexdig[b[i] & 0xf];
	}
	dst[2 * n] = '\0';
}
