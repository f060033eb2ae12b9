/* orgw.c - orgw_strerror(). */
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
