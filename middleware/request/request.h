/*
 * request.h - one request as the middleware sees it, whatever carried it.
 *
 * The FastCGI server (fcgi_server.c) and, later, the CGI request I/O fill an
 * mw_req_t: the request's CGI variables, a body reader and a response
 * writer.  Everything above (routing, identities, the decision, the CGI
 * spawner, the upstream FastCGI client, denial responses) uses only this
 * interface, so it does not care whether the web server spoke FastCGI or
 * ran a CGI program.
 *
 * Body: the request body (FastCGI STDIN, or a CGI program's stdin).
 * mw_req_prefetch() buffers up to a bound of it so form parameters can be
 * read before the request is decided; later reads return the buffered
 * bytes first, so the app receives the body untouched.  A body filter
 * (mw_req_filter()) may then check the rest on its way to the app: it
 * sees each byte before mw_req_read() returns it, may hold back what it
 * has not judged yet, and may refuse the body, which then ends there
 * (reads fail with -EMSGSIZE; the forwarder answers req->refused).
 *
 * Output: CGI response bytes (header lines, a blank line, the body) exactly
 * as a CGI program writes them; the request I/O frames them (FastCGI STDOUT
 * records) and the web server parses the Status: line.
 *
 * Threads: a request is used by one thread at a time.
 */
#ifndef MW_REQUEST_H
#define MW_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "suspect_error.h"

/* FastCGI roles (the values of the FastCGI spec). */
#define MW_ROLE_RESPONDER  1
#define MW_ROLE_AUTHORIZER 2

/* One CGI variable; pointers live until the request ends.  value is
 * followed by a NUL (so it can be used as a C string); name need not be.
 * repeated: the web server sent the name more than once and value is the
 * copies merged (fcgi_params.c). */
typedef struct mw_param {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
    bool repeated;
} mw_param_t;

typedef struct mw_req mw_req_t;

/*
 * A check of the body on its way to the application (the multipart
 * fields past the prefetch buffer).  scan() gets the body bytes from the
 * first one it has not passed yet, buf[0..len), at_end when nothing
 * follows them, and sets *pass to how many of them may go on now (the
 * next call starts after them; with at_end, all of them); it returns 0,
 * or the HTTP status that refuses the body and *why (a static text).
 * free(arg) runs when the request is released.
 */
typedef struct mw_body_filter {
    int (*scan)(void *arg, const char *buf, size_t len, bool at_end,
                size_t *pass, const char **why);
    void (*free)(void *arg);
    void *arg;
} mw_body_filter_t;

/* The state of a body filter on a request (request.c). */
typedef struct mw_req_filter mw_req_filter_t;

/* What a request I/O implements. */
typedef struct mw_req_ops {
    /*
     * Reads up to n body bytes into buf.  With wait, blocks until at least
     * one byte, the end of the body, an error or the request I/O's own
     * timeout; without, returns -EAGAIN when nothing can be read now.
     * Returns the bytes read, 0 at the end of the body, or -errno.
     */
    ssize_t (*read)(mw_req_t *req, void *buf, size_t n, bool wait);
    /* The descriptor to poll (POLLIN) before a read without wait, or -1
     * when reads without wait never return -EAGAIN. */
    int (*read_fd)(mw_req_t *req);
    /* Writes n bytes of CGI output; 0 or -errno (EPIPE: the client went
     * away).  Output may be buffered until flush or the end. */
    int (*write)(mw_req_t *req, const void *buf, size_t n);
    /* Sends what write() buffered; 0 or -errno. */
    int (*flush)(mw_req_t *req);
} mw_req_ops_t;

struct mw_req {
    const mw_req_ops_t *ops;
    int role;                 /* MW_ROLE_* */
    const mw_param_t *params; /* the CGI variables, in arrival order */
    size_t nparams;
    /* Prefetched body bytes not yet returned by mw_req_read() (owned by
     * the request; set by mw_req_prefetch()). */
    char *pre;
    size_t pre_len;
    size_t pre_off;
    mw_req_filter_t *filter; /* NULL: none (mw_req_filter()) */
    /* The status a body filter refused the body with (0: it did not), and
     * why: a forwarder that meets -EMSGSIZE answers it. */
    int refused;
    const char *refused_why;
    bool body_done;      /* the request I/O has reported the body's end */
    bool output_started; /* something was written: too late for a 502 */
    /* Set by a forwarder when the response stopped short after output had
     * started (the app died or timed out, the daemon stopped): the request
     * I/O must not end it as a complete one.  FastCGI: no END_REQUEST, the
     * connection is closed, so the web server sees a cut response (nginx
     * closes its client's connection without the last chunk). */
    bool cut;
    /* Set by a request I/O whose requests arrive on a connection from the
     * web server (FastCGI): conn_fd is that connection.  Once it hangs up
     * (POLLRDHUP or POLLHUP, whatever is still unread) the client is gone,
     * so a forwarder may watch it (never read it) while the app runs.  A
     * CGI request I/O leaves has_conn false: its stdin ends with the body,
     * and the web server itself ends the program when the client leaves. */
    bool has_conn;
    int conn_fd;
    /* Set by a request I/O that leaves the web server's variables as they
     * came (the in-process guard: the application reads its own copy of
     * them): a name repeated with different values was not merged, its
     * first entry is marked repeated, and the application may read either
     * copy, so an identity read from it is ambiguous.  The FastCGI server
     * merges repeats into the value the application then gets
     * (fcgi_params.c) and leaves this false. */
    bool copies_apart;
    /* An observer of the response (a route that counts by it): called
     * with every byte mw_req_write() is given, in order, before it is
     * written; NULL = none. */
    void (*watch)(void *arg, const void *buf, size_t n);
    void *watch_arg;
    /* Set for a route whose rule searches the response's body for a text
     * (outcome.h): the forwarders leave the client's Accept-Encoding out
     * (HTTP_ACCEPT_ENCODING), so that the application answers with a body
     * the text can be found in. */
    bool plain_body;
    /* Header lines written before the first byte of output (e.g.
     * "X-Suspect-Shadow: would-deny\r\n"), never seen by watch; NULL =
     * none.  Borrowed until the request ends. */
    const char *prelude;
    size_t prelude_len;
    /* Output held until its CGI header block ends (mw_req_hold()); NULL =
     * none. */
    struct mw_hold *hold;
};

/* The value of CGI variable name (NUL-terminated), or NULL; *len gets its
 * length when len is not NULL.  Linear in the number of variables. */
const char *mw_req_param(const mw_req_t *req, const char *name, size_t *len);

/* The variable name (name_len bytes), or NULL. */
const mw_param_t *mw_req_param_find(const mw_req_t *req, const char *name,
                                    size_t name_len);

/* mw_req_param() with a length-delimited name. */
const char *mw_req_param_n(const mw_req_t *req, const char *name,
                           size_t name_len, size_t *len);

/* CONTENT_LENGTH as a number: -1 when missing, empty, longer than 18
 * digits or anything but digits (no sign, no blank). */
long long mw_req_content_length(const mw_req_t *req);

/*
 * Reads the first bytes of the body, up to max (or CONTENT_LENGTH when
 * smaller), into a buffer owned by the request, and sets *body and *len to
 * it.  Later mw_req_read() calls return these bytes first.  Calling it
 * again returns the same buffer.  *complete says whether the whole body
 * fit.  Returns SUSPECT_OK, SUSPECT_E_IO (read failed or timed out),
 * SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_req_prefetch(mw_req_t *req, size_t max, const char **body,
                             size_t *len, bool *complete);

/*
 * Puts filter on req's body (req takes it: filter->free runs when the
 * request is released, or now when this fails): from now on every body
 * byte mw_req_read() returns was passed by it.  The prefetched bytes are
 * judged at once, without reading more.  0, the status the filter
 * refused the body with (req->refused, *why), or 500 when out of memory.
 */
int mw_req_filter(mw_req_t *req, const mw_body_filter_t *filter,
                  const char **why);

/* Body reads through the prefetch buffer (and the filter): as
 * mw_req_ops_t.read, or -EMSGSIZE once a filter refused the body. */
ssize_t mw_req_read(mw_req_t *req, void *buf, size_t n, bool wait);

/* As mw_req_ops_t.read_fd, except that it returns -1 while prefetched
 * bytes remain (a read without wait then succeeds at once). */
int mw_req_read_fd(mw_req_t *req);

/* Writes CGI output; marks output_started.  0 or -errno. */
int mw_req_write(mw_req_t *req, const void *buf, size_t n);

/* Flushes buffered output.  0 or -errno. */
int mw_req_flush(mw_req_t *req);

/* Writes header lines into buf (size bytes) once the response's CGI
 * header block has been seen whole; returns their length (0: none). */
typedef size_t (*mw_hold_fn)(void *arg, char *buf, size_t size);

/*
 * Holds req's output until its CGI header block ends (a blank line), so
 * that header lines depending on it go first: then fn(arg) is asked for
 * them and they are written, then the held bytes, and output flows as
 * before.  A block longer than MW_HOLD_MAX is let go without asking.
 * Until then nothing is written, so output_started stays false.  false
 * when out of memory (nothing is held then).
 */
#define MW_HOLD_MAX 8192
bool mw_req_hold(mw_req_t *req, mw_hold_fn fn, void *arg);

/* Ends holding req's output: what is still held (a header block that
 * never ended) is written when flush, else dropped (an error page takes
 * its place).  0 or the write's -errno. */
int mw_req_hold_end(mw_req_t *req, bool flush);

/* Frees the prefetch buffer and the filter (the request I/O calls it when
 * the request ends). */
void mw_req_release(mw_req_t *req);

#endif
