/*
 * upstream_internal.h - the private parts of the FastCGI client, shared by
 * upstream.c (request preparation, retry, results), upstream_prelude.c
 * (BEGIN_REQUEST and PARAMS), upstream_pool.c (idle connections) and
 * upstream_io.c (one exchange of records over one connection).
 *
 * upstream_watch.c watches, for an exchange, the web server's connection
 * of the request and the daemon's stop.
 *
 * A connection carries its buffers with it: the prepared BEGIN_REQUEST +
 * PARAMS + empty PARAMS bytes ("prelude"), the receive buffer and the body
 * window.  Pooled connections keep them, so a request on a reused
 * connection allocates nothing.  The body window holds the first
 * UP_BODY_WINDOW bytes of a streamed body: while the body has not run past
 * it, the window is also the replay buffer for a retry.
 */
#ifndef MW_UPSTREAM_INTERNAL_H
#define MW_UPSTREAM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "fcgi/fcgi_proto.h"
#include "request/request.h"

#define UP_REQUEST_ID      1
#define UP_IDLE_TIMEOUT_MS 1000
#define UP_IN_SIZE         65536
#define UP_BODY_WINDOW     FCGI_MAX_CONTENT

/* STDERR relayed to the log: line length and lines per request. */
#define UP_STDERR_LINE  1024
#define UP_STDERR_LINES 32

typedef struct up_conn {
    int fd;                  /* -1 when closed */
    bool pooled;             /* taken from the pool for the current request */
    long long idle_since_ms; /* CLOCK_MONOTONIC, while in the pool */
    uint8_t *pre;            /* BEGIN_REQUEST, PARAMS..., empty PARAMS */
    size_t pre_len;
    size_t pre_cap;
    uint8_t in[UP_IN_SIZE];       /* receive buffer */
    uint8_t body[UP_BODY_WINDOW]; /* streamed body window (replay) */
} up_conn_t;

/* A new connection object, not connected (fd -1); NULL without memory. */
up_conn_t *up_conn_new(void);

/* Closes c's descriptor and frees it.  NULL is a no-op. */
void up_conn_free(up_conn_t *c);

/* What the prelude changes in the request's variables. */
typedef struct up_edits {
    const char *script; /* replacement SCRIPT_FILENAME, or NULL */
    size_t script_len;
    const char *pass; /* the operator's passParams, or NULL */
    char clen[24];    /* replacement CONTENT_LENGTH, or "" */
    size_t clen_len;
    bool plain; /* HTTP_ACCEPT_ENCODING left out (mw_req_t.plain_body) */
} up_edits_t;

/* Builds the prelude of req into c->pre (upstream_prelude.c), with the
 * edits e; keep sets FCGI_KEEP_CONN.  *ini_dropped says whether PHP_VALUE
 * or PHP_ADMIN_VALUE was left out (the operator's list does not name it).
 * SUSPECT_OK or SUSPECT_E_NOMEM. */
suspect_rc_t up_prelude_build(up_conn_t *c, const mw_req_t *req,
                              const up_edits_t *e, bool keep,
                              bool *ini_dropped);

/* Idle connections: a LIFO stack, closed after idle_timeout_ms by a
 * reaper thread (upstream_pool.c). */
typedef struct up_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* CLOCK_MONOTONIC: stops the reaper */
    up_conn_t **idle;    /* max_idle places, the oldest at [0] */
    unsigned nidle;
    unsigned max_idle;
    long long idle_timeout_ms;
    bool stopping;
    pthread_t reaper;
} up_pool_t;

/* Sets p up and starts its reaper.  SUSPECT_E_NOMEM when it cannot. */
suspect_rc_t up_pool_init(up_pool_t *p, unsigned max_idle,
                          unsigned idle_timeout_ms);

/* Stops the reaper and frees every idle connection. */
void up_pool_destroy(up_pool_t *p);

/* The most recently pooled connection that is still open, or NULL.
 * Connections the upstream closed while they were idle are freed on the
 * way (counted in *stale). */
up_conn_t *up_pool_take(up_pool_t *p, unsigned *stale);

/* Pools c (which must be clean), or frees it when the pool is full. */
void up_pool_give(up_pool_t *p, up_conn_t *c);

/* How an exchange ended. */
typedef enum up_end {
    UP_MORE = 0, /* (internal) not finished yet */
    UP_DONE,     /* END_REQUEST received */
    UP_CLOSED,   /* the upstream closed or reset the connection */
    UP_FAILED,   /* another upstream I/O error, or a protocol error */
    UP_TIMEOUT,  /* no progress for timeout_ms */
    UP_CLIENT,   /* the client went away (body read, response write, the
                    web server's hang-up or ABORT_REQUEST) */
    UP_STOPPED   /* cancelled: the daemon is stopping (up_stop_all()) */
} up_end_t;

/* The state of one request on one connection (lives on the stack). */
typedef struct up_xchg {
    mw_req_t *req;
    up_conn_t *c;
    unsigned timeout_ms;

    /* Body source: mem (a buffered body) or the request itself. */
    const uint8_t *mem;
    size_t mem_len;
    size_t mem_off;
    unsigned long long req_left; /* request body bytes still to read */
    size_t win_len;              /* bytes of the body window used */
    bool replayable;             /* everything consumed is still held */
    bool stdin_done;             /* the empty STDIN is queued or sent */
    int send_errno;              /* sending failed: only read now */
    bool client_quiet;           /* the web server's connection holds
                                    bytes that are not an ABORT_REQUEST:
                                    only its hang-up is watched now */

    /* Output queue: at most prelude, STDIN header, data, empty STDIN. */
    struct iovec iov[4];
    int iov_at;
    int iov_n;
    uint8_t data_hdr[FCGI_HEADER_LEN];
    uint8_t eof_hdr[FCGI_HEADER_LEN];

    /* Record parser. */
    uint8_t hdr[FCGI_HEADER_LEN];
    unsigned hdr_len;
    fcgi_header_t rec;
    size_t content_left;
    size_t pad_left;
    uint8_t end_body[8];
    unsigned end_len;

    /* Outcome. */
    up_end_t early; /* a failure before the first send, or UP_MORE */
    bool got_end;
    bool trailing;  /* bytes followed END_REQUEST */
    bool received;  /* any byte came from this connection */
    bool wrote;     /* STDOUT bytes reached the client */
    bool unflushed; /* written since the last flush */
    uint32_t app_status;
    uint8_t proto_status;
    int sys_errno;    /* errno of the failure, or 0 */
    const char *what; /* what failed, for the error text */

    /* STDERR line being collected, and what the cap dropped. */
    char line[UP_STDERR_LINE];
    size_t line_len;
    unsigned lines;
    size_t dropped;
} up_xchg_t;

/*
 * Prepares x for a request on c, whose prelude is built: the body comes
 * from mem[0..mem_len) when mem is not NULL, else body_len bytes are read
 * from req.  Queues the prelude and, when it is at hand, the first part of
 * the body, so the first send carries them together.
 */
void up_xchg_start(up_xchg_t *x, mw_req_t *req, up_conn_t *c,
                   const uint8_t *mem, size_t mem_len,
                   unsigned long long body_len, unsigned timeout_ms);

/*
 * Prepares x to send its request again from the start on c's new
 * connection.  False when the body consumed so far is no longer held.
 */
bool up_xchg_rewind(up_xchg_t *x);

/* Runs the exchange until END_REQUEST, a failure or a timeout. */
up_end_t up_xchg_run(up_xchg_t *x);

/* Whether c may serve another request: every record sent, one clean
 * END_REQUEST for our id, nothing after it. */
bool up_xchg_reusable(const up_xchg_t *x);

/* Logs the STDERR line still being collected and what was dropped. */
void up_xchg_finish(up_xchg_t *x);

/* ---- upstream_watch.c ---------------------------------------------- */

/* The events to watch on the web server's connection of x's request (0:
 * none: not a FastCGI request). */
short up_client_events(const up_xchg_t *x);

/* That connection showed revents: UP_CLIENT when the web server hung up
 * or sent ABORT_REQUEST (x->what says which), else UP_MORE. */
up_end_t up_on_client(up_xchg_t *x, short revents);

/* Prepares the daemon-wide stop signal (once per process; later calls do
 * nothing).  SUSPECT_OK, or SUSPECT_E_NOMEM when no descriptor is left
 * for it (the stop then still works: waits look at the flag every
 * 100 ms). */
suspect_rc_t up_stop_init(void);

/* Ends every exchange in flight, and every later one before it starts
 * (UP_STOPPED).  Irreversible. */
void up_stop_all(void);

/* Whether up_stop_all() was called. */
bool up_stopping(void);

/* The eventfd that is readable once up_stop_all() was called, or -1. */
int up_stop_fd(void);

#endif
