/*
 * fcgi_server.h - the FastCGI server side: accept connections from the web
 * server, read requests, hand each to a handler as an mw_req_t, frame its
 * output as STDOUT records and end it.
 *
 * Threads: one front thread holds every connection while nothing is asked
 * of a worker: idle ones, and requests still arriving (fcgi_front.c); a
 * fixed pool of workers runs the handler on requests that have arrived,
 * one at a time each (no multiplexing: a second BEGIN_REQUEST on a busy
 * connection gets FCGI_CANT_MPX_CONN).  So a connection that sends slowly,
 * or nothing, never holds a worker, and a request sent whole (as web
 * servers send them) is served at once whatever else waits.  With
 * FCGI_KEEP_CONN the connection waits in the front for its next request
 * until it has been idle for idle_timeout_ms.
 *
 * Answered where it was read: a request the handler answers without ever
 * blocking and without reading its body (mw_front_fn says so for its
 * role: nothing forwarded, a store that never waits) is served by the
 * front thread itself once its PARAMS are in, with the front's own
 * scratch, and no worker is woken: the two thread hand-offs such a request
 * would cost are most of what the cheapest requests cost.  The front answers at
 * most 32 such requests after each wait for events; what arrives past them goes
 * to the workers, so a burst never keeps the front from reading and accepting
 * for long.  A response the front could not send without waiting (a peer that
 * does not read) is finished by a worker.
 *
 * Limits: a request must arrive whole (BEGIN_REQUEST to the end of its
 * STDIN) within request_timeout_ms, or its connection is closed; a body
 * larger than one record's buffer that is still arriving may hold at most
 * half the workers; at most max_connections connections are held (the
 * oldest idle, then the oldest arriving one makes room for a new one);
 * the PARAMS stream is capped (params_max; over it, the connection is
 * answered 431-style and closed), a record with a bad version or a
 * truncated header closes the connection, ABORT_REQUEST ends the request
 * (body reads return -ECONNABORTED), GET_VALUES is answered with the real
 * pool size, unknown record types get UNKNOWN_TYPE, the FILTER role gets
 * FCGI_UNKNOWN_ROLE.  The front buffers at most 64 MiB in all.
 *
 * Stop: mw_server_stop() shuts the listening socket down (new connections
 * are refused), lets requests in flight finish, then joins the threads.
 * All signals must be blocked in the calling thread before
 * mw_server_start() so the threads inherit the mask; the daemon handles
 * signals in one thread.
 */
#ifndef MW_FCGI_SERVER_H
#define MW_FCGI_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request/request.h"
#include "suspect_error.h"

/*
 * Serves one request.  req's variables are complete; its body has not been
 * read (an AUTHORIZER request has none: do not read it).  The handler
 * writes a whole CGI response with mw_req_write(); the server sends
 * END_REQUEST after it returns, draining any unread body first when the
 * connection is kept.
 */
typedef void (*mw_handler_fn)(mw_req_t *req, void *arg);

/*
 * Whether the handler answers every request of role (MW_ROLE_*) without
 * blocking (no upstream, no program, no store or file that may wait) and
 * without reading the body (the front serves the request once its
 * PARAMS are in; a read there never waits and may find nothing).  Called
 * on the front thread before the request's variables are decoded; true
 * lets the front serve such requests itself.
 */
typedef bool (*mw_front_fn)(int role, void *arg);

typedef struct mw_server_opts {
    int listen_fd;               /* borrowed; the caller closes it after free */
    unsigned workers;            /* threads; 0 = 16 */
    size_t params_max;           /* PARAMS bytes per request; 0 = 128 KiB */
    unsigned io_timeout_ms;      /* a read or write on a connection; 0 = 30 s */
    unsigned idle_timeout_ms;    /* a connection idle; 0 = 5 s */
    unsigned request_timeout_ms; /* a request's arrival, whole; 0 = 60 s */
    size_t max_connections;      /* held at once; 0 = what RLIMIT_NOFILE leaves
                                    once the workers' descriptors are kept */
    mw_handler_fn handler;
    mw_front_fn answers_in_front; /* NULL: every request goes to a worker */
    void *arg;                    /* of both */
} mw_server_opts_t;

typedef struct mw_server mw_server_t;

typedef struct mw_server_stats {
    uint64_t connections; /* accepted */
    uint64_t requests;    /* handed to the handler */
    uint64_t in_front;    /* of them, served by the front thread itself */
    uint64_t bad_records; /* connections closed for a protocol error */
    uint64_t too_large;   /* requests refused: PARAMS over params_max */
    uint64_t aborted;     /* ABORT_REQUEST or the peer closed mid-request */
    uint64_t timed_out;   /* requests that did not arrive in time */
    uint64_t evicted;     /* connections closed to make room */
    unsigned busy;        /* workers serving a request now */
    unsigned open;        /* connections held now */
} mw_server_stats_t;

/* Creates a server (nothing runs yet).  Owned by the caller. */
suspect_rc_t mw_server_new(const mw_server_opts_t *opts, mw_server_t **out,
                           suspect_err_t *err);

/* Starts the workers.  SUSPECT_E_NOMEM / SUSPECT_E_IO (thread creation). */
suspect_rc_t mw_server_start(mw_server_t *s, suspect_err_t *err);

/* Stops accepting: the listening socket is shut down, so a connection
 * made from now on is refused; requests in flight go on.  The first half
 * of mw_server_stop(), for a caller that says so once it is true. */
void mw_server_refuse_new(mw_server_t *s);

/* Stops accepting, waits for requests in flight, joins the workers.
 * Safe to call from another thread than the one that started it. */
void mw_server_stop(mw_server_t *s);

void mw_server_stats(mw_server_t *s, mw_server_stats_t *out);

/* Frees a stopped (or never started) server.  NULL is a no-op. */
void mw_server_free(mw_server_t *s);

#endif
