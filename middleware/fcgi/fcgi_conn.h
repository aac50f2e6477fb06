/*
 * fcgi_conn.h - private to the FastCGI server: one connection's state,
 * shared by fcgi_server.c (the worker pool), fcgi_front.c (the thread that
 * holds every connection not being served), fcgi_serve.c (one request,
 * served by a worker), fcgi_req.c (the mw_req_t ops), fcgi_conn.c (the
 * record state machine), fcgi_params.c (PARAMS) and fcgi_io.c (buffered
 * socket I/O).  Each calls only the files listed after it.
 *
 * A conn_t lives as long as its connection.  It holds what the front
 * needs while the request arrives: the input buffer, grown to what the
 * records need (at most one whole record, 8 + 65535 + 255 bytes) and
 * shrunk when the connection goes idle, and the PARAMS bytes.  What only
 * serving needs (the STDOUT record, the decoded pairs, the name table's
 * key) is a worker's scratch, lent to the connection it serves
 * (fc_scratch_t), so an idle or half-arrived connection costs its socket
 * and a few hundred bytes.
 *
 * Errors inside the module are negative errno values:
 *   -EPROTO        the peer broke the protocol: close, count bad_records
 *   -ECONNRESET    the peer closed (mid-record or mid-request)
 *   -ETIMEDOUT     io_timeout_ms (or the request's deadline) passed
 *   -EAGAIN        a read or write without wait could not go on now
 *   -ECONNABORTED  ABORT_REQUEST for the current request
 *   -EMSGSIZE      PARAMS over params_max
 *   -ECANCELED     close the connection, nothing went wrong
 *   -ESHUTDOWN     the server stops and the connection is idle
 */
#ifndef MW_FCGI_CONN_H
#define MW_FCGI_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fcgi_proto.h"
#include "fcgi_server.h"
#include "request/request.h"
#include "siphash.h"

/* Room for one whole record: header, the largest content, padding. */
#define FC_IN_CAP (FCGI_HEADER_LEN + FCGI_MAX_CONTENT + 255)

/* Request ids whose remaining records are skipped (refused, or ended
 * before their STDIN did). */
#define FC_IGNORED_MAX 8

/* Bytes of a response the front keeps when its peer does not read them:
 * far above any answer Suspect writes itself. */
#define FC_UNSENT_MAX (1u << 20)

/* The input buffer's smallest size once allocated. */
#define FC_IN_MIN 4096

/* How a read waits. */
enum { FC_NOWAIT, FC_WAIT };

/* Where a connection's request is. */
enum { FC_PH_IDLE, FC_PH_PARAMS, FC_PH_BODY };

/* What mw_fc_front_step() found. */
enum { FC_STEP_MORE = 0, FC_STEP_READY = 1 };

/* What a connection does after a worker served its request. */
enum { FC_NEXT_KEEP, FC_NEXT_LINGER, FC_NEXT_CLOSE };

/* Where a connection is, for the front (fcgi_front.c). */
enum {
    FC_AT_IDLE,    /* waiting for BEGIN_REQUEST (idle_timeout_ms) */
    FC_AT_PENDING, /* a request arriving (request_timeout_ms) */
    FC_AT_STREAM,  /* arrived but for a body still coming, waiting for a
                    worker that may stream it */
    FC_AT_LINGER,  /* half-closed, draining what the peer still sends */
    FC_AT_QUEUED,  /* ready, in the workers' queue */
    FC_AT_WORKER,  /* being served */
    FC_AT_DEAD     /* closed, freed once the events at hand are handled */
};

/* What the front and the workers share (read-only after start, except
 * the atomics). */
typedef struct fc_shared {
    size_t params_max;
    size_t pairs_max; /* bounds the mw_param_t array with params_max */
    unsigned workers;
    unsigned io_timeout_ms;
    unsigned idle_timeout_ms;
    unsigned request_timeout_ms; /* BEGIN_REQUEST to the end of STDIN */
    size_t max_conns;            /* connections held at once */
    size_t buffer_max;           /* bytes the front may buffer in all */
    unsigned streaming_max;      /* workers reading a body still coming */
    mw_handler_fn handler;
    mw_front_fn answers_in_front;
    void *arg;
    bool tcp; /* TCP connections: TCP_NODELAY */
    atomic_bool stopping;
    atomic_uint streaming; /* workers reading a body still coming */
    atomic_uint_fast64_t connections;
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t in_front; /* served by the front thread itself */
    atomic_uint_fast64_t bad_records;
    atomic_uint_fast64_t too_large;
    atomic_uint_fast64_t aborted;
    atomic_uint_fast64_t timed_out;
    atomic_uint_fast64_t evicted;
    atomic_uint busy;
    atomic_uint open; /* connections held now */
} fc_shared_t;

/* What a worker lends the connection it serves (see the top). */
typedef struct fc_scratch {
    uint8_t *out; /* one STDOUT record: header + FCGI_MAX_CONTENT */
    mw_param_t *params;
    size_t params_cap;
    size_t mcap;
    suspect_siphash_key_t hkey; /* secret key of the name table */
    bool hkey_set;
} fc_scratch_t;

typedef struct conn {
    mw_req_t req; /* first: an mw_req_t * of ours is a conn_t * */
    fc_shared_t *srv;
    int fd;

    /* Input: bytes in[in_off .. in_len) are buffered, not yet used;
     * in_cap bytes allocated (0: none yet). */
    uint8_t *in;
    size_t in_cap;
    size_t in_off;
    size_t in_len;
    size_t rec_left;  /* unread content of the current STDIN record */
    size_t rec_pad;   /* its padding, skipped when the content is read */
    size_t pad_left;  /* bytes to skip before the next header: padding,
                         or the rest of a record left unread */
    bool peer_closed; /* recv() returned 0 */

    /* Output: a STDOUT record being built; content at out + 8 (the
     * worker's scratch while it serves; NULL in the front). */
    uint8_t *out;
    size_t out_len;
    int werr;    /* first write error (-errno); the connection is dead */
    bool nowait; /* in the front: a send that would block fails */
    /* Served by the front (mw_fc_run_in_front()): reads never wait, and
     * what a send could not send at once is kept in unsent (in order,
     * at most FC_UNSENT_MAX bytes) for a worker to send. */
    bool in_front;
    uint8_t *unsent;
    size_t unsent_len;

    /* PARAMS of the current request, and the pairs decoded from them.
     * params is one block (fcgi_params.c): params_cap pairs, then what
     * merging repeated names needs, mcap bytes of joined values last;
     * it and the key are the worker's scratch. */
    uint8_t *pbuf;
    size_t plen;
    size_t pcap;
    mw_param_t *params;
    size_t params_cap;
    size_t mcap;
    suspect_siphash_key_t hkey; /* secret key of the name table */
    bool hkey_set;

    /* The front's bookkeeping (fcgi_front.c). */
    int at;                   /* FC_AT_* */
    long long deadline_ms;    /* of the list it is in */
    struct conn *prev, *next; /* that list */
    size_t held;              /* bytes counted in the front's budget */
    bool streaming;           /* counted in srv->streaming */
    int after;                /* FC_NEXT_*, given back by a worker */
    bool half_closed;         /* lingering: SHUT_WR sent */
    bool polled;              /* in the front's epoll set */

    /* The request in progress. */
    int phase;
    uint16_t id;
    bool keep;
    bool stdin_done;
    bool aborted;       /* ABORT_REQUEST, or the peer went away */
    int broken;         /* a read failed for good (-errno), or 0 */
    bool counted;       /* aborted already counted for this request */
    bool linger;        /* on close, drain what the peer still sends */
    bool fresh;         /* no record handled yet on this connection */
    long long begun_ms; /* when BEGIN_REQUEST arrived (monotonic) */
    uint16_t ignored[FC_IGNORED_MAX];
    unsigned nignored;
} conn_t;

/* --- fcgi_serve.c --------------------------------------------------- */

/* A connection for the accepted socket fd (no buffer yet); NULL when out
 * of memory. */
conn_t *mw_fc_conn_new(fc_shared_t *srv, int fd);

/* Closes the socket and frees the connection.  NULL is a no-op. */
void mw_fc_conn_free(conn_t *c);

/* Lends the worker's scratch to c, and takes it back (with whatever grew
 * while it was lent). */
void mw_fc_lend(conn_t *c, fc_scratch_t *s);
void mw_fc_take_back(conn_t *c, fc_scratch_t *s);

/* Frees a worker's scratch. */
void mw_fc_scratch_free(fc_scratch_t *s);

/* Serves the request whose PARAMS have arrived (c->phase FC_PH_BODY), on
 * a worker, to its END_REQUEST: FC_NEXT_KEEP (the next request may come),
 * FC_NEXT_LINGER or FC_NEXT_CLOSE. */
int mw_fc_run(conn_t *c);

/* Serves c's request on the front thread with the front's scratch s, as
 * mw_fc_run() does on a worker, but never waiting: what could not be sent
 * at once is left in c->unsent, for mw_fc_send_unsent() on a worker. */
int mw_fc_run_in_front(conn_t *c, fc_scratch_t *s);

/* On a worker: sends what the front left unsent (waiting, as a worker's
 * sends do); then next as the front's run said (c->after), or
 * FC_NEXT_CLOSE when the send failed. */
int mw_fc_send_unsent(conn_t *c);

/* Answers a request whose PARAMS are too large (431) with a buffer of its
 * own; the connection then lingers and closes. */
int mw_fc_refuse_too_large(conn_t *c);

/* --- fcgi_req.c ----------------------------------------------------- */

/* The body reader and output writer of a request. */
extern const mw_req_ops_t mw_fc_ops;

/* --- fcgi_conn.c ---------------------------------------------------- */

/*
 * The front's part of a request, without ever waiting: handles every
 * whole record that has arrived (reading what the socket holds), from
 * BEGIN_REQUEST to the PARAMS' empty record.  FC_STEP_READY once they are
 * all here (c->phase FC_PH_BODY), FC_STEP_MORE when more must arrive, or a
 * negative code: -EMSGSIZE (PARAMS over params_max: answer 431),
 * -ECONNABORTED (ABORT_REQUEST before the request ran), -ESHUTDOWN (the
 * server stops and the connection was used), or one to close.
 */
int mw_fc_front_step(conn_t *c);

/* Whether the whole STDIN of the request (c->phase FC_PH_BODY) is in the
 * input buffer, or there is none (an authorizer's). */
bool mw_fc_body_buffered(const conn_t *c);

/* Processes records until a STDIN record of the current request starts
 * (or its empty record ends the stream); 0 or a negative code above. */
int mw_fc_next_stdin(conn_t *c, int mode);

/* Skips the rest of request id's streams (the oldest id is forgotten when
 * the set is full; its records would then close the connection). */
void mw_fc_ignore(conn_t *c, uint16_t id);

/* Ends an aborted request that never ran (END_REQUEST, its streams
 * skipped); 0, or -ECANCELED when the connection then closes. */
int mw_fc_end_aborted(conn_t *c);

/* --- fcgi_params.c -------------------------------------------------- */

/* Appends one PARAMS record's content (p may be NULL when n is 0);
 * -EMSGSIZE over params_max, -ENOMEM. */
int mw_fc_add_params(conn_t *c, const uint8_t *p, size_t n);

/* Decodes the collected pairs into c->params, merges repeated names into
 * one variable each (HTTP_COOKIE joined with "; ", other HTTP_* with ", ",
 * anything else keeps its last value), and sets req.params and
 * req.nparams; -EPROTO for a malformed pair, -EMSGSIZE over pairs_max,
 * -ENOMEM, -EIO when no secret key for the name table could be drawn. */
int mw_fc_decode_params(conn_t *c);

/* --- fcgi_io.c ------------------------------------------------------ */

/* Receives up to n bytes into buf; >0 bytes, -ECONNRESET at EOF, -EAGAIN
 * (FC_NOWAIT), -ETIMEDOUT, -errno. */
ssize_t mw_fc_recv_some(conn_t *c, void *buf, size_t n, int mode);

/* Makes n (<= FC_IN_CAP) bytes available at in + in_off, growing the
 * buffer as needed; -ENOMEM when it cannot. */
int mw_fc_need(conn_t *c, size_t n, int mode);

/* Reads what the socket holds into the buffer, growing it up to
 * FC_IN_CAP, without waiting: the bytes read, 0 when the buffer is full,
 * -EAGAIN when nothing came, -ECONNRESET at EOF, -errno. */
ssize_t mw_fc_fill(conn_t *c);

/* Frees the input buffer when it holds nothing (an idle connection). */
void mw_fc_shrink(conn_t *c);

/* Drops n buffered bytes (n <= in_len - in_off). */
void mw_fc_consume(conn_t *c, size_t n);

/* Skips pad_left bytes of padding. */
int mw_fc_skip_pad(conn_t *c, int mode);

/* Sends all of iov (changed); 0 or -errno, remembered in werr.  In the
 * front (c->nowait) a send that would block fails with -EAGAIN, unless
 * the front serves the request (c->in_front): then what is left is kept
 * in c->unsent (-ENOBUFS over FC_UNSENT_MAX), and so is everything sent
 * after it. */
int mw_fc_sendv(conn_t *c, struct iovec *iov, int n);

/* Sends one small record (len <= 65535) with header and content. */
int mw_fc_send_record(conn_t *c, uint8_t type, uint16_t id, const void *body,
                      size_t len);

/* Sends the buffered STDOUT record; with end, also the empty STDOUT record
 * and END_REQUEST (app status 0, protocol status proto), all in one
 * sendmsg() when possible. */
int mw_fc_flush(conn_t *c, bool end, uint8_t proto);

/* Counts the current request as aborted (once). */
void mw_fc_count_abort(conn_t *c);

/* Lingering close, one step, without waiting: half-closes first, then
 * reads and drops what the peer still sends.  0 while it may send more,
 * else (EOF, an error) the connection can close.  Closing with unread
 * input would reset the connection: nginx treats a failed write of the
 * request body as an upstream error (502) even when the response has
 * arrived, and a TCP reset may destroy a response the peer has not read
 * yet. */
int mw_fc_linger_step(conn_t *c);

#endif
