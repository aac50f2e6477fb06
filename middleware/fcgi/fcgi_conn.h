/*
 * fcgi_conn.h - private to the FastCGI server: one connection's state,
 * shared by fcgi_server.c (the worker pool), fcgi_serve.c (a connection's
 * requests in turn), fcgi_req.c (the mw_req_t ops), fcgi_conn.c (the
 * record state machine), fcgi_params.c (PARAMS) and fcgi_io.c (buffered
 * socket I/O).  Each calls only the files listed after it.
 *
 * Each worker owns one conn_t for its whole life and reuses its buffers
 * for every connection it serves: the input buffer holds one whole record
 * (8 + 65535 + 255 bytes), the output buffer one STDOUT record, the PARAMS
 * buffer grows up to params_max + 1 and stays.  So serving a request
 * allocates nothing once the buffers have grown.
 *
 * Errors inside the module are negative errno values:
 *   -EPROTO        the peer broke the protocol: close, count bad_records
 *   -ECONNRESET    the peer closed (mid-record or mid-request)
 *   -ETIMEDOUT     io_timeout_ms (or idle_timeout_ms) passed
 *   -EAGAIN        a read without wait found nothing to return
 *   -ECONNABORTED  ABORT_REQUEST for the current request
 *   -EMSGSIZE      PARAMS over params_max
 *   -ECANCELED     close the connection, nothing went wrong
 *   -ESHUTDOWN     the server stops and the connection is idle
 *   -EBUSY         an idle kept connection yields its worker to a new
 *                  connection that no worker is free to accept
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

/* How a read waits. */
enum { FC_NOWAIT, FC_WAIT, FC_IDLE };

/* Where a connection is. */
enum { FC_PH_IDLE, FC_PH_PARAMS, FC_PH_BODY };

/* What every worker shares (read-only after start, except the atomics). */
typedef struct fc_shared {
    size_t params_max;
    size_t pairs_max; /* bounds the mw_param_t array with params_max */
    unsigned workers;
    unsigned io_timeout_ms;
    unsigned idle_timeout_ms;
    mw_handler_fn handler;
    void *arg;
    int stop_fd; /* an eventfd, readable once the server stops */
    int listen_fd;
    atomic_uint accepting; /* workers in accept(), or about to be */
    bool tcp;              /* TCP connections: TCP_NODELAY */
    atomic_bool stopping;
    atomic_uint_fast64_t connections;
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t bad_records;
    atomic_uint_fast64_t too_large;
    atomic_uint_fast64_t aborted;
    atomic_uint busy;
} fc_shared_t;

typedef struct conn {
    mw_req_t req; /* first: an mw_req_t * of ours is a conn_t * */
    fc_shared_t *srv;
    int fd;

    /* Input: bytes in[in_off .. in_len) are buffered, not yet used. */
    uint8_t *in;
    size_t in_off;
    size_t in_len;
    size_t rec_left;  /* unread content of the current STDIN record */
    size_t rec_pad;   /* its padding, skipped when the content is read */
    size_t pad_left;  /* bytes to skip before the next header: padding,
                         or the rest of a record left unread */
    bool peer_closed; /* recv() returned 0 */

    /* Output: a STDOUT record being built; content at out + 8. */
    uint8_t *out;
    size_t out_len;
    int werr; /* first write error (-errno); the connection is dead */

    /* PARAMS of the current request, and the pairs decoded from them.
     * params is one block (fcgi_params.c): params_cap pairs, then what
     * merging repeated names needs, mcap bytes of joined values last. */
    uint8_t *pbuf;
    size_t plen;
    size_t pcap;
    mw_param_t *params;
    size_t params_cap;
    size_t mcap;
    suspect_siphash_key_t hkey; /* secret key of the name table */
    bool hkey_set;

    /* The request in progress. */
    int phase;
    uint16_t id;
    bool keep;
    bool stdin_done;
    bool aborted; /* ABORT_REQUEST, or the peer went away */
    int broken;   /* a read failed for good (-errno), or 0 */
    bool counted; /* aborted already counted for this request */
    bool linger;  /* on close, drain what the peer still sends */
    bool fresh;   /* no record handled yet on this connection */
    bool claimed; /* yielded: already counted in accepting */
    uint16_t ignored[FC_IGNORED_MAX];
    unsigned nignored;
} conn_t;

/* --- fcgi_serve.c --------------------------------------------------- */

/* Allocates a worker's connection buffers; NULL when out of memory. */
conn_t *mw_fc_conn_new(fc_shared_t *srv);
void mw_fc_conn_free(conn_t *c);

/* Serves the accepted connection fd until it ends, then closes it. */
void mw_fc_serve(conn_t *c, int fd);

/* --- fcgi_req.c ----------------------------------------------------- */

/* The body reader and output writer of a request. */
extern const mw_req_ops_t mw_fc_ops;

/* --- fcgi_conn.c ---------------------------------------------------- */

/* Waits for a BEGIN_REQUEST the connection accepts (c->id, c->keep and
 * the role set); 0, or a code to close.  Once the server stops, a used
 * connection takes no new request, even one that is already buffered. */
int mw_fc_wait_begin(conn_t *c);

/* Collects the PARAMS stream of the request (until its empty record). */
int mw_fc_read_params(conn_t *c);

/* Processes records until a STDIN record of the current request starts
 * (or its empty record ends the stream); 0 or a negative code above. */
int mw_fc_next_stdin(conn_t *c, int mode);

/* Skips the rest of request id's streams (the oldest id is forgotten when
 * the set is full; its records would then close the connection). */
void mw_fc_ignore(conn_t *c, uint16_t id);

/* --- fcgi_params.c -------------------------------------------------- */

/* Appends one PARAMS record's content (p may be NULL when n is 0);
 * -EMSGSIZE over params_max, -ENOMEM. */
int mw_fc_add_params(conn_t *c, const uint8_t *p, size_t n);

/* Decodes the collected pairs into c->params, merges repeated names into
 * one variable each (HTTP_COOKIE joined with "; ", other HTTP_* with ", ",
 * anything else keeps its last value), and sets req.params and
 * req.nparams; -EPROTO for a malformed pair, -EMSGSIZE over pairs_max,
 * -ENOMEM. */
int mw_fc_decode_params(conn_t *c);

/* --- fcgi_io.c ------------------------------------------------------ */

/* Receives up to n bytes into buf; >0 bytes, -ECONNRESET at EOF, -EAGAIN
 * (FC_NOWAIT), -ETIMEDOUT, -ESHUTDOWN, -errno. */
ssize_t mw_fc_recv_some(conn_t *c, void *buf, size_t n, int mode);

/* Makes n (<= FC_IN_CAP) bytes available at in + in_off. */
int mw_fc_need(conn_t *c, size_t n, int mode);

/* Drops n buffered bytes (n <= in_len - in_off). */
void mw_fc_consume(conn_t *c, size_t n);

/* Skips pad_left bytes of padding. */
int mw_fc_skip_pad(conn_t *c, int mode);

/* Sends all of iov (changed); 0 or -errno, remembered in werr. */
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

/* Half-closes and reads what the peer still sends (until it closes, at
 * most 5 s), so closing with unread input does not reset the connection:
 * nginx treats a failed write of the request body as an upstream error
 * (502) even when the response has arrived, and a TCP reset may destroy
 * a response the peer has not read yet. */
void mw_fc_linger(conn_t *c);

#endif
