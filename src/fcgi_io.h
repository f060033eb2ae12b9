/*
 * fcgi_io.h - struct orgw_io over libfcgi (FastCGI mode) and over
 * stdin/stdout (plain CGI mode).  The only file with fcgiapp.h besides
 * main().
 */
#ifndef ORGW_FCGI_IO_H
#define ORGW_FCGI_IO_H

#include "http.h"

/*
 * Before FCGX_Finish_r() of a request with a body: when the body was not
 * read to its end (a request refused before it) and the web server does not
 * keep the connection, ends the answer and, unless the web server closes
 * the connection within a second, stops reading from it.  libfcgi's
 * close reads on until the connection has been silent for 2 s, so a
 * client dripping a body orgw has already answered would hold the
 * thread for as long as it dripped.
 */
void fcgi_io_end(void *req);

/* Fills io for the FastCGI request req (an FCGX_Request *); a write
 * that makes no progress for send_timeout_ms fails (the client is
 * treated as gone). */
void fcgi_io_init(struct orgw_io *io, void *req, int64_t send_timeout_ms);

/* Fills io for plain CGI: body on fd 0, response on fd 1; a write that
 * makes no progress for send_timeout_ms fails. */
void cgi_io_init(struct orgw_io *io, int64_t send_timeout_ms);

/* After the response: reads and drops what is left of the request body
 * (CONTENT_LENGTH minus what was read), at most max_bytes.  Under Apache's
 * mod_cgid stdin is a Unix socket, and a CGI that exits with unread body
 * bytes resets it, cutting the response it has just written. */
void cgi_io_discard_body(const char *content_length,
			 unsigned long long max_bytes);

#endif
