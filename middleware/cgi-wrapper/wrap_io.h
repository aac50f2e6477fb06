/*
 * wrap_io.h - a CGI request (RFC 3875) as an mw_req_t: the input and output of
 * suspect-cgi.
 *
 * The web server starts a CGI program with the request's variables in
 * its environment, the body on stdin (CONTENT_LENGTH bytes) and the
 * response expected on stdout.  This serves the middleware
 * (request.h) from exactly that: the variables are the environment's
 * "NAME=value" strings (borrowed, not copied), reads come from in_fd,
 * bounded by CONTENT_LENGTH (to the end of input when there is none), and
 * output goes straight to out_fd.
 *
 * The body is the program's to read afterwards.  When the middleware read
 * some of it (a form source), mw_cgi_io_rewind() puts the whole body
 * back on in_fd before the real program is executed: a regular file (a
 * web server that spooled the body) is sought back to where it started;
 * anything else (a pipe) is replaced by a memfd holding the bytes read so
 * far and the rest of the body.  When nothing was read, in_fd is left
 * alone: no copy at all.
 */
#ifndef MW_WRAP_IO_H
#define MW_WRAP_IO_H

#include <stddef.h>

#include "request/request.h"
#include "suspect_error.h"

typedef struct mw_cgi_io mw_cgi_io_t;

/*
 * Builds the request of the CGI variables envp (NULL-terminated
 * "NAME=value" strings, borrowed: they must outlive it; entries
 * without '=' are skipped), with the body on in_fd and the response to
 * out_fd (neither is closed by it).  Body reads may stall 30 s
 * until mw_cgi_io_set_timeout() says otherwise.  Returns SUSPECT_OK with
 * an owned *out, or SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_cgi_io_new(char *const *envp, int in_fd, int out_fd,
                           mw_cgi_io_t **out, suspect_err_t *err);

/* Frees f (NULL is a no-op), including the request's prefetch buffer. */
void mw_cgi_io_free(mw_cgi_io_t *f);

/* The request (role RESPONDER); it lives as long as f. */
mw_req_t *mw_cgi_io_req(mw_cgi_io_t *f);

/* How long one body read may wait for input; 0 = 30000 ms. */
void mw_cgi_io_set_timeout(mw_cgi_io_t *f, unsigned timeout_ms);

/*
 * Makes in_fd hold the whole body again from its first byte, for the
 * program about to be executed (see the top of this file); max bounds the
 * bytes copied into a memfd.  The memfd replaces in_fd with dup2(), so it
 * is inherited across execve().  Returns SUSPECT_OK, or an error with
 * *status set to the answer: 413 (the body is larger than max), 400 (it
 * could not be read: an error, a stall past the timeout, or an end before
 * CONTENT_LENGTH) or 500 (memfd, seek or dup2 failed).
 */
suspect_rc_t mw_cgi_io_rewind(mw_cgi_io_t *f, size_t max, int *status,
                              suspect_err_t *err);

#endif
