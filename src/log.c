/* log.c - one-line stderr logging; see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

void
log_msg(const char *level, const char *fmt, ...)
{
	/* Read once per thread: orgw never forks, and getpid(2) is a
	 * system call per request otherwise. */
	static _Thread_local pid_t pid;
	char line[2048];
	va_list ap;
	int n, m;

	if (pid == 0)
		pid = getpid();
	n = snprintf(line, sizeof(line), "orgw[%ld]: %s: ", (long)pid, level);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;	/* truncated: keep one line */
	line[n++] = '\n';
	/* One write(2) so concurrent workers never interleave a line. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

char *
log_safe(char *dst, size_t n, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (n == 0)
		return dst;
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			if (o + 1 >= n)
				break;
			dst[o++] = (char)c;
		} else {
			if (o + 4 >= n)
				break;
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	dst[o] = '\0';
	return dst;
}

const char *
log_strerror(int errnum)
{
	static _Thread_local char buf[128];

	/* The XSI strerror_r (_POSIX_C_SOURCE): fills buf, returns 0. */
	if (strerror_r(errnum, buf, sizeof(buf)) != 0)
		(void)snprintf(buf, sizeof(buf), "error %d", errnum);
	return buf;
}
