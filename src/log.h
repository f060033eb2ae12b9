/*
 * log.h - stderr logging (the web server's error log).  One line per
 * call; never a key, never message content (docs/design.md section 9).
 */
#ifndef ORGW_LOG_H
#define ORGW_LOG_H

#include <stddef.h>

/* Writes "orgw[pid]: LEVEL: message\n" to stderr in one write(2). */
void log_msg(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg("error", __VA_ARGS__)
#define log_warn(...) log_msg("warn", __VA_ARGS__)
#define log_info(...) log_msg("info", __VA_ARGS__)

/*
 * Copies s into dst (size n) with every byte outside printable ASCII,
 * and '"' and '\\', written as \xHH, so hostile names cannot forge log
 * lines.  Returns dst.
 */
char *log_safe(char *dst, size_t n, const char *s);

/*
 * strerror() for threads: the text of errnum in a buffer of the calling
 * thread, valid until its next call (strerror() may share one buffer
 * between threads; concurrency-mt-unsafe).  Never NULL.
 */
const char *log_strerror(int errnum);

#endif
