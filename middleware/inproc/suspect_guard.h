/*
 * suspect_guard.h - in-process decisions (libsuspect-guard): an
 * application decides each of its requests itself, before its own code
 * runs, with the files suspect-fcgi would use in front of it (suspect.xml,
 * the limits file it names, the store of its <Store>), and is handed the
 * response suspect-fcgi would send when the request must not run.
 *
 *   suspect_guard_t *g;
 *   suspect_guard_open("/etc/suspect/suspect.xml", NULL, &g, &err);
 *   ...per request, on any thread:
 *   suspect_guard_input_t in = {.envp = fcgx_request.envp,
 *                               .read = body_reader, .read_arg = &fcgx};
 *   suspect_guard_req_t *r;
 *   if (suspect_guard_decide(g, &in, &r, &err) != SUSPECT_OK) -> 503
 *   if (suspect_guard_req_verdict(r) >= SUSPECT_GUARD_DENY) {
 *       suspect_guard_response_t res;
 *       suspect_guard_req_response(r, &res, NULL);
 *       write res.cgi (res.cgi_len bytes) to the client; skip the app
 *   } else {
 *       run the app, reading the body with suspect_guard_req_read()
 *   }
 *   suspect_guard_req_free(r);
 *
 * suspect.xml is read as suspect-fcgi reads it in forward mode in front of
 * this application, reached with <Upstream>: the routes are matched on
 * the web server's variables (the request's URL, SCRIPT_NAME + PATH_INFO,
 * DOCUMENT_URI, and SCRIPT_FILENAME under DOCUMENT_ROOT, or <Upstream
 * scriptFilename>), the identities read from the same variables, cookies,
 * query and urlencoded body, the same store asked.  <Upstream address> is
 * not used (the application listens where it always did); <Upstream
 * timeout> bounds how long a request that counts by its response may take
 * before its attempt counts anyway.  Refused, at open and on reload:
 * <Server mode> other than forward (the application runs after the
 * decision, in this process), and <Cgi> (no CGI program runs: the route
 * paths would be resolved against one).
 *
 * Reload: suspect.xml and the limits file are looked at again, by default
 * from within suspect_guard_decide() on the first request after each
 * <Limits reload> interval (a stat of each file; on that one request's
 * thread the parse, when a file changed), or only when the application
 * calls suspect_guard_reload() (SUSPECT_GUARD_RELOAD_MANUAL, e.g. on
 * SIGHUP from its main loop).  The rule is suspect-fcgi's: a file that
 * does not load, a pair that would leave a route without its action, or a
 * change to <Store> or <Keys> (the store lives on) keeps the running pair,
 * and requests in flight finish on the pair they started with.
 *
 * The body: a form: identity needs the start of an urlencoded body before
 * the decision, so suspect_guard_decide() may read up to <Server formMax>
 * bytes through the application's read callback.  Those bytes belong to
 * the application: read the body with suspect_guard_req_read() (they come
 * first, then the callback's), or take them with suspect_guard_req_body()
 * and use them before reading on from your own stream.
 *
 * Threads: a suspect_guard_t is used by any number of threads at once (the
 * threaded FCGX_Accept_r pattern); a suspect_guard_req_t by one thread at
 * a time.  Nothing here writes to the client, a socket or a file: the
 * application sends what it is given.  Lines for an operator (a reload
 * refused, the store unreachable) go to the callback of
 * suspect_guard_set_log(), and nowhere without one.
 *
 * Errors: functions that can fail return a suspect_rc_t and take an
 * optional suspect_err_t last (suspect_error.h; libsuspect's
 * suspect_err_format() writes it as "file:line: message").
 */
#ifndef SUSPECT_GUARD_H
#define SUSPECT_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "suspect_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct suspect_guard suspect_guard_t;
typedef struct suspect_guard_req suspect_guard_req_t;

/* ---- the log ------------------------------------------------------------- */

/* Levels of the lines (as suspect-fcgi's log). */
#define SUSPECT_GUARD_LOG_ERROR   0
#define SUSPECT_GUARD_LOG_WARNING 1
#define SUSPECT_GUARD_LOG_NOTICE  2
#define SUSPECT_GUARD_LOG_INFO    3
#define SUSPECT_GUARD_LOG_DEBUG   4

/* One line: its level and text (no newline, control bytes already '?';
 * never a value a client sent).  Called on any thread, lines whole. */
typedef void (*suspect_guard_log_fn)(void *arg, int level, const char *msg);

/*
 * Sends the lines up to max_level to fn (NULL: nowhere, the default).
 * Process-wide: call it before suspect_guard_open() and before the
 * threads start.
 */
void suspect_guard_set_log(suspect_guard_log_fn fn, void *arg, int max_level);

/* ---- the files and the store --------------------------------------------- */

#define SUSPECT_GUARD_RELOAD_AUTO   0 /* from suspect_guard_decide() */
#define SUSPECT_GUARD_RELOAD_MANUAL 1 /* only suspect_guard_reload() */

typedef struct suspect_guard_opts {
    int reload; /* SUSPECT_GUARD_RELOAD_*; 0: AUTO */
} suspect_guard_opts_t;

/*
 * Loads suspect.xml at conf_path, its limits file and opens its store, as
 * suspect-fcgi starts on them; opts may be NULL (defaults).  *out is owned
 * by the caller (suspect_guard_close()).  Fails with the first problem:
 * SUSPECT_E_CONFIG or SUSPECT_E_PARSE with file:line for the files (a
 * route whose action the limits file lacks included), SUSPECT_E_IO,
 * SUSPECT_E_NOMEM, SUSPECT_E_INVAL for a NULL argument.
 */
suspect_rc_t suspect_guard_open(const char *conf_path,
                                const suspect_guard_opts_t *opts,
                                suspect_guard_t **out, suspect_err_t *err);

/* Closes the store and drops the files; every request of g must have been
 * freed.  NULL is a no-op. */
void suspect_guard_close(suspect_guard_t *g);

/*
 * Looks at both files now and swaps in what changed and is valid (force:
 * load them even when they look unchanged).  *swapped (may be NULL) gets
 * the number of files swapped in (0 to 2).  Returns SUSPECT_OK, or the
 * first file refused: SUSPECT_E_CONFIG with "file:line: message" (the
 * running pair stays; it is logged too).  Thread-safe.
 */
suspect_rc_t suspect_guard_reload(suspect_guard_t *g, bool force, int *swapped,
                                  suspect_err_t *err);

/* ---- one request --------------------------------------------------------- */

/* Reads up to n body bytes into buf: the number read, 0 at the end of the
 * body, or negative on an error. */
typedef ssize_t (*suspect_guard_read_fn)(void *arg, void *buf, size_t n);

typedef struct suspect_guard_input {
    /* The request's CGI variables, "NAME=value", NULL-terminated
     * (libfcgi's FCGX_Request.envp, a CGI program's environ); borrowed
     * until the request is freed.  A name repeated with another value
     * (nginx before 1.23 passes a header sent twice that way) is
     * ambiguous when an identity reads it: that request is refused (400),
     * since the guard cannot know which copy the application reads. */
    const char *const *envp;
    /* The body (NULL: none); called from suspect_guard_decide() and
     * suspect_guard_req_read() only. */
    suspect_guard_read_fn read;
    void *read_arg;
    /* The time of the decision, ms since the epoch; 0: now. */
    int64_t now_ms;
} suspect_guard_input_t;

typedef enum suspect_guard_verdict {
    SUSPECT_GUARD_PASS = 0, /* no route or no identity: not counted; run */
    SUSPECT_GUARD_ALLOW,    /* counted and allowed: run */
    SUSPECT_GUARD_DENY,     /* over the limit or locked: send the response
                               (the route's status, 429 by default) */
    SUSPECT_GUARD_REFUSE    /* not decidable (400, 413, 415, 500) or the
                               store unavailable in closed mode (503):
                               send the response */
} suspect_guard_verdict_t;

/*
 * Decides the request in: the route, its identities, one store decision,
 * as suspect-fcgi would.  *out (the caller's, suspect_guard_req_free())
 * holds the verdict; a request that cannot be decided (its body could not
 * be read, out of memory on the way) is a REFUSE with the response
 * suspect-fcgi gives it.  Fails, with *out NULL, only when no request
 * could be made: SUSPECT_E_NOMEM (answer 503), SUSPECT_E_INVAL (NULL
 * argument, no envp).  With SUSPECT_GUARD_RELOAD_AUTO, may reload the
 * files first (see the top of this file).
 */
suspect_rc_t suspect_guard_decide(suspect_guard_t *g,
                                  const suspect_guard_input_t *in,
                                  suspect_guard_req_t **out,
                                  suspect_err_t *err);

suspect_guard_verdict_t suspect_guard_req_verdict(const suspect_guard_req_t *r);

/* The HTTP status of the response for DENY and REFUSE, else 0. */
int suspect_guard_req_status(const suspect_guard_req_t *r);

/* The action of the route that matched, or NULL (borrowed, as long as
 * r). */
const char *suspect_guard_req_action(const suspect_guard_req_t *r);

/* Why, for a log line: "over the limit", "locked", "no identity", ...;
 * never a value the client sent.  "" for a plain ALLOW or PASS. */
const char *suspect_guard_req_why(const suspect_guard_req_t *r);

/* The response to send for DENY and REFUSE.  Pointers into r, valid until
 * it is freed. */
typedef struct suspect_guard_response {
    /* As a CGI or FastCGI application writes it: "Status: 429 Too Many
     * Requests\r\n", the header lines, a blank line, the body.  The bytes
     * suspect-fcgi sends to the web server for the same request. */
    const char *cgi;
    size_t cgi_len;
    /* The same in parts, for a server that writes HTTP itself. */
    int status;          /* 429 */
    const char *reason;  /* "Too Many Requests" (NUL-terminated) */
    const char *headers; /* "Retry-After: 120\r\n...", each line ending in
                            CRLF; no Status line, no blank line */
    size_t headers_len;
    const char *body;
    size_t body_len;
} suspect_guard_response_t;

/*
 * The response of a DENY or REFUSE verdict in *out, built on the first
 * call (the body chosen by the request's Accept as suspect-fcgi chooses
 * it, or <Response format>, or the <Response template>).  No I/O.
 * SUSPECT_E_INVAL for a PASS or ALLOW (the application answers),
 * SUSPECT_E_NOMEM.
 */
suspect_rc_t suspect_guard_req_response(suspect_guard_req_t *r,
                                        suspect_guard_response_t *out,
                                        suspect_err_t *err);

/* The header line to add to the application's response, with its CRLF,
 * or NULL: an ALLOW that a route in shadow mode would have refused, with
 * <Response shadowHeader> set ("X-Suspect-Shadow: would-deny;
 * action=Login; status=429\r\n").  Borrowed, as long as r. */
const char *suspect_guard_req_header(const suspect_guard_req_t *r);

/*
 * Reads the body as the application must: first what
 * suspect_guard_decide() read of it, then through the read callback.
 * The number of bytes read, 0 at the end, negative on an error.
 */
ssize_t suspect_guard_req_read(suspect_guard_req_t *r, void *buf, size_t n);

/* What suspect_guard_decide() read of the body and has not been returned
 * by suspect_guard_req_read() (*len 0: nothing): an application that reads
 * its own stream must use these bytes first.  Borrowed, as long as r. */
void suspect_guard_req_body(const suspect_guard_req_t *r, const char **data,
                            size_t *len);

/* ---- routes that count by the response (<Failure>, <Success>) ------------ */

/*
 * Whether r's attempt is held until the response says how it went (an
 * ALLOW of a route with <Failure> or <Success>).  Then hand every byte of
 * the response to suspect_guard_req_observe() as it is written, in CGI
 * form (a "Status:" line, or none for 200, header lines, a blank line,
 * the body), and call suspect_guard_req_settle() at its end.  Never
 * settled, the attempt counts (when r is freed).
 */
bool suspect_guard_req_holds(const suspect_guard_req_t *r);

/* Watches n bytes of the response (a no-op unless r holds an attempt). */
void suspect_guard_req_observe(suspect_guard_req_t *r, const void *buf,
                               size_t n);

/*
 * Settles a held attempt from what was observed: not counted when the
 * response matched <Success> (or not <Failure>), counted otherwise;
 * complete: the whole response was written (a cut one always counts).
 * A no-op returning SUSPECT_OK when r holds nothing or was settled.  A
 * store error is returned (the attempt then counts when its reservation ends).
 */
suspect_rc_t suspect_guard_req_settle(suspect_guard_req_t *r, bool complete,
                                      suspect_err_t *err);

/* Frees r; an attempt still held counts.  NULL is a no-op. */
void suspect_guard_req_free(suspect_guard_req_t *r);

#ifdef __cplusplus
}
#endif

#endif
