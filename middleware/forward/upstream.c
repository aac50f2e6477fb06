/*
 * upstream.c - the FastCGI client: forward an allowed request to php-cgi,
 * php-fpm or any FastCGI responder (the exchange itself is upstream_io.c).
 *
 * Per request:
 *  1. the body: with a numeric CONTENT_LENGTH it is streamed as it is
 *     read; without one (a chunked request, or nginx's empty value) it is
 *     read whole first, up to max_body (else 413), so that a correct
 *     CONTENT_LENGTH can be sent;
 *  2. a connection: for GET and HEAD the most recently pooled one
 *     (upstream_pool.c), else a new one (see "Replays" below);
 *  3. the prelude (upstream_prelude.c), built in the connection's
 *     buffer: BEGIN_REQUEST (RESPONDER, KEEP_CONN, id 1), the request's
 *     variables that go on (fwd_params.c: CGI/1.1, headers, the
 *     operator's passParams) as PARAMS records, then an empty PARAMS;
 *     SCRIPT_FILENAME replaced when configured, REDIRECT_STATUS=200 added
 *     when missing, CONTENT_LENGTH set for a buffered body; the first
 *     PHP_VALUE or PHP_ADMIN_VALUE left out is logged, once (an operator
 *     whose web server sets one learns why it has no effect);
 *  4. the exchange (upstream_io.c), and the connection back to the pool
 *     only when the exchange ended cleanly.
 *
 * Replays: a pooled connection may be closed by the upstream while idle
 * (php-cgi exits after PHP_FCGI_MAX_REQUESTS, php-fpm recycles a child
 * after pm.max_requests).  The pool checks each connection before handing
 * it out (upstream_pool.c), which catches a close that already happened,
 * but not one that is about to: php sends END_REQUEST, shuts its request
 * down, and closes 20 microseconds to a few ms later, so the next request on
 * that connection is often already sent.  When such a connection fails by
 * EOF or reset before any byte came back, the request may have been lost
 * unread, or read whole by an upstream that then died (a php-fpm child
 * killed by request_terminate_timeout, a crash) after acting on it; from
 * here the two look the same (php leaves the empty STDIN record unread,
 * so even a reset proves nothing).  So only GET and HEAD, which may run
 * twice, ever take a pooled connection, and are sent once more on a new
 * one after such a failure, the body replayed from the connection's window
 * (or the buffered body).  Any other method gets a new connection (the
 * buffers of a pooled one are reused and its socket closed first, so the
 * upstream worker it pinned is free for ours); it is never retried: an
 * upstream that closes without answering it is a 502.  A new connection is
 * never retried, so a failing upstream costs at most one extra attempt.
 *
 * Threads: the pool is a mutex-protected stack with its own reaper
 * thread; stats are atomics; all other state is per request.
 */
#include "upstream.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "fcgi/listen.h"
#include "log/log.h"
#include "upstream_internal.h"

#define DEF_CONNECT_TIMEOUT_MS 1000
#define DEF_TIMEOUT_MS         30000
#define DEF_MAX_BODY           (8u << 20)

struct mw_upstream {
    char *address;
    char *script; /* SCRIPT_FILENAME or NULL */
    size_t script_len;
    char *pass;             /* the operator's passParams, or NULL */
    atomic_bool ini_warned; /* a dropped PHP_VALUE was logged */
    unsigned connect_timeout_ms;
    unsigned timeout_ms;
    size_t max_body;
    bool keep; /* FCGI_KEEP_CONN: connections are pooled (max_idle > 0) */
    up_pool_t pool;

    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t connects;
    atomic_uint_fast64_t reused;
    atomic_uint_fast64_t stale;
    atomic_uint_fast64_t retries;
    atomic_uint_fast64_t failures;
    atomic_uint_fast64_t abandoned;
};

/* ---- connections ---------------------------------------------------- */

/* Connects c (whose old descriptor, if any, is closed first). */
static suspect_rc_t conn_open(mw_upstream_t *u, up_conn_t *c,
                              suspect_err_t *err)
{
    suspect_rc_t rc;

    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->pooled = false;
    rc = mw_connect(u->address, u->connect_timeout_ms, &c->fd, err);
    if (rc == SUSPECT_OK) {
        atomic_fetch_add(&u->connects, 1);
    }
    return rc;
}

/* Whether req is GET or HEAD: running it twice changes nothing. */
static bool idempotent(const mw_req_t *req)
{
    size_t len;
    const char *m = mw_req_param(req, "REQUEST_METHOD", &len);

    return m != NULL && ((len == 3 && memcmp(m, "GET", 3) == 0) ||
                         (len == 4 && memcmp(m, "HEAD", 4) == 0));
}

/* A connection for req: with reuse a pooled one when there is one, else
 * a new one (in a pooled connection's buffers when there is one, its
 * socket closed first); NULL with *rc on failure. */
static up_conn_t *conn_get(mw_upstream_t *u, bool reuse, suspect_rc_t *rc,
                           suspect_err_t *err)
{
    unsigned stale = 0;
    up_conn_t *c = up_pool_take(&u->pool, &stale);

    if (stale > 0) {
        atomic_fetch_add(&u->stale, stale);
    }
    if (c != NULL && reuse) {
        c->pooled = true;
        atomic_fetch_add(&u->reused, 1);
        return c;
    }
    if (c == NULL) {
        c = up_conn_new();
    }
    if (c == NULL) {
        *rc = suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                              "upstream: out of memory");
        return NULL;
    }
    *rc = conn_open(u, c, err);
    if (*rc != SUSPECT_OK) {
        up_conn_free(c);
        return NULL;
    }
    return c;
}

/* ---- the body ------------------------------------------------------- */

/* Reads the whole body (up to max bytes) into *out (malloc'ed, or NULL
 * when empty).  413 in *status when it is larger, 0 when the client
 * failed (*rc says why). */
static suspect_rc_t read_body(mw_req_t *req, size_t max, uint8_t **out,
                              size_t *len, int *status, suspect_err_t *err)
{
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;

    for (;;) {
        ssize_t r;

        if (n == cap) {
            size_t ncap = cap == 0 ? 16384 : cap * 2;
            uint8_t *p;

            ncap = ncap > max + 1 ? max + 1 : ncap;
            p = suspect_realloc(buf, ncap);
            if (p == NULL) {
                free(buf);
                *status = 500;
                return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                       "upstream: out of memory");
            }
            buf = p;
            cap = ncap;
        }
        r = mw_req_read(req, buf + n, cap - n, true);
        if (r <= 0 || n + (size_t)r > max) {
            if (r == 0) {
                break;
            }
            free(buf);
            if (r > 0) {
                *status = 413;
                return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                                       "upstream: body over %zu bytes", max);
            }
            *status = r == -EMSGSIZE ? req->refused : 0;
            errno = (int)-r;
            return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                   "upstream: reading the body");
        }
        n += (size_t)r;
    }
    *out = buf;
    *len = n;
    return SUSPECT_OK;
}

/* ---- one request ---------------------------------------------------- */

static const uint8_t empty_body[1];

/* Maps how the exchange ended to res and err, and returns the code:
 * SUSPECT_OK when a response was relayed or the client went away (said
 * in the log), SUSPECT_E_TIMEOUT (a timeout, the daemon's stop) or
 * SUSPECT_E_IO when the upstream failed. */
static suspect_rc_t conclude(mw_upstream_t *u, const up_xchg_t *x, up_end_t end,
                             mw_fwd_result_t *res, suspect_err_t *err)
{
    bool late = end == UP_TIMEOUT || end == UP_STOPPED;
    suspect_rc_t rc = late ? SUSPECT_E_TIMEOUT : SUSPECT_E_IO;

    res->exit_status = x->got_end ? (int)x->app_status : -1;
    res->timed_out = end == UP_TIMEOUT;
    if (end == UP_DONE && x->proto_status != FCGI_REQUEST_COMPLETE) {
        end = UP_FAILED;
        suspect_err_set(err, rc, NULL, 0,
                        "upstream %s: request refused (protocol status %u)",
                        u->address, x->proto_status);
    }
    if (end == UP_DONE) {
        res->complete = true;
        return SUSPECT_OK;
    }
    if (x->what != NULL && x->sys_errno != 0) {
        errno = x->sys_errno;
        suspect_err_sys(err, rc, NULL, "upstream %s: %s", u->address, x->what);
    } else if (x->what != NULL) {
        suspect_err_set(err, rc, NULL, 0, "upstream %s: %s", u->address,
                        x->what);
    }
    if (end == UP_CLIENT && x->req->refused != 0) {
        /* A body filter refused the body on its way: the application got
         * it cut short (and its connection closed), the client gets the
         * refusal. */
        res->status = x->wrote ? 0 : x->req->refused;
        x->req->cut |= x->wrote;
        return SUSPECT_OK;
    }
    if (end == UP_CLIENT) {
        atomic_fetch_add(&u->abandoned, 1);
        mw_log(MW_LOG_INFO, "upstream %s: request abandoned: %s", u->address,
               x->what != NULL ? x->what : "the client went away");
        return SUSPECT_OK;
    }
    res->status = x->wrote ? 0 : (late ? 504 : 502);
    if (x->wrote) {
        x->req->cut = true; /* the request I/O must not end it as complete */
    }
    atomic_fetch_add(&u->failures, 1);
    return rc;
}

/* Whether the failed exchange may be sent again on a new connection: a
 * pooled connection (so a GET or HEAD) closed before anything came back. */
static bool may_retry(const up_xchg_t *x, up_end_t end, bool retried)
{
    return end == UP_CLOSED && x->c->pooled && !retried && !x->received &&
           !x->wrote;
}

/* Sends the request on c (retrying once on a new connection) and
 * relays the answer; c is pooled or freed.  As conclude(). */
static suspect_rc_t exchange(mw_upstream_t *u, up_conn_t *c, mw_req_t *req,
                             const uint8_t *mem, size_t mem_len,
                             unsigned long long body_len, mw_fwd_result_t *res,
                             suspect_err_t *err)
{
    up_xchg_t x;
    up_end_t end;
    suspect_rc_t rc;
    bool retried = false;

    up_xchg_start(&x, req, c, mem, mem_len, body_len, u->timeout_ms);
    for (;;) {
        end = up_xchg_run(&x);
        if (!may_retry(&x, end, retried) || !up_xchg_rewind(&x)) {
            break;
        }
        retried = true;
        atomic_fetch_add(&u->retries, 1);
        rc = conn_open(u, c, err);
        if (rc != SUSPECT_OK) {
            x.what = NULL; /* err says why */
            end = rc == SUSPECT_E_TIMEOUT ? UP_TIMEOUT : UP_FAILED;
            break;
        }
    }
    up_xchg_finish(&x);
    rc = conclude(u, &x, end, res, err);
    if (end == UP_DONE && up_xchg_reusable(&x)) {
        up_pool_give(&u->pool, c);
    } else {
        up_conn_free(c);
    }
    return rc;
}

suspect_rc_t mw_upstream_forward(mw_upstream_t *u, mw_req_t *req,
                                 mw_fwd_result_t *res, suspect_err_t *err)
{
    long long clen = mw_req_content_length(req);
    uint8_t *mem = NULL;
    size_t mem_len = 0;
    up_edits_t e;
    up_conn_t *c;
    suspect_rc_t rc = SUSPECT_OK;
    bool ini_dropped = false;

    res->status = 0;
    res->timed_out = false;
    res->complete = false;
    res->exit_status = -1;
    atomic_fetch_add(&u->requests, 1);
    e.script = u->script;
    e.script_len = u->script_len;
    e.pass = u->pass;
    e.clen_len = 0;
    e.plain = req->plain_body;
    if (clen < 0) {
        rc = read_body(req, u->max_body, &mem, &mem_len, &res->status, err);
        if (rc != SUSPECT_OK) {
            return rc == SUSPECT_E_NOMEM ? rc : SUSPECT_OK;
        }
        e.clen_len = (size_t)snprintf(e.clen, sizeof(e.clen), "%zu", mem_len);
    }
    c = conn_get(u, idempotent(req), &rc, err);
    if (c == NULL) {
        free(mem);
        if (rc == SUSPECT_E_NOMEM) {
            res->status = 500;
            return rc;
        }
        atomic_fetch_add(&u->failures, 1);
        res->status = rc == SUSPECT_E_TIMEOUT ? 504 : 502;
        res->timed_out = rc == SUSPECT_E_TIMEOUT;
        return rc;
    }
    if (up_prelude_build(c, req, &e, u->keep, &ini_dropped) != SUSPECT_OK) {
        up_conn_free(c);
        free(mem);
        res->status = 500;
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "upstream: out of memory");
    }
    if (ini_dropped && !atomic_exchange(&u->ini_warned, true)) {
        mw_log(MW_LOG_WARNING,
               "upstream %s: PHP_VALUE / PHP_ADMIN_VALUE of a request not "
               "sent on (php.ini settings: whoever writes them runs code); "
               "when the web server sets them on purpose, name them in "
               "<Upstream passParams> (said once)",
               u->address);
    }
    if (clen < 0) {
        /* A buffered body is sent from memory, even an empty one. */
        rc = exchange(u, c, req, mem != NULL ? mem : empty_body, mem_len, 0,
                      res, err);
    } else {
        rc = exchange(u, c, req, NULL, 0, (unsigned long long)clen, res, err);
    }
    free(mem);
    return rc;
}

/* ---- lifecycle ------------------------------------------------------ */

suspect_rc_t mw_upstream_new(const mw_upstream_opts_t *opts,
                             mw_upstream_t **out, suspect_err_t *err)
{
    mw_upstream_t *u;

    if (opts == NULL || out == NULL || opts->address == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "upstream: no address");
    }
    if (strncmp(opts->address, "unix:", 5) != 0 &&
        strncmp(opts->address, "tcp:", 4) != 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "upstream address '%s': expected unix:/path "
                               "or tcp:host:port",
                               opts->address);
    }
    /* Without its eventfd the stop still works (in 100 ms slices). */
    (void)up_stop_init();
    u = suspect_calloc(1, sizeof(*u));
    if (u == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "upstream: out of memory");
    }
    u->connect_timeout_ms = opts->connect_timeout_ms != 0
                                ? opts->connect_timeout_ms
                                : DEF_CONNECT_TIMEOUT_MS;
    u->timeout_ms = opts->timeout_ms != 0 ? opts->timeout_ms : DEF_TIMEOUT_MS;
    u->max_body = opts->max_body != 0 ? opts->max_body : DEF_MAX_BODY;
    u->keep = opts->max_idle > 0;
    u->address = suspect_strdup(opts->address);
    if (opts->script_filename != NULL) {
        u->script = suspect_strdup(opts->script_filename);
        u->script_len = u->script != NULL ? strlen(u->script) : 0;
    }
    if (opts->pass_params != NULL) {
        u->pass = suspect_strdup(opts->pass_params);
    }
    if (u->address == NULL ||
        (opts->script_filename != NULL && u->script == NULL) ||
        (opts->pass_params != NULL && u->pass == NULL) ||
        up_pool_init(&u->pool, opts->max_idle, UP_IDLE_TIMEOUT_MS) !=
            SUSPECT_OK) {
        free(u->address);
        free(u->script);
        free(u->pass);
        free(u);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "upstream: out of memory");
    }
    *out = u;
    return SUSPECT_OK;
}

void mw_upstream_stats(mw_upstream_t *u, mw_upstream_stats_t *out)
{
    out->requests = atomic_load(&u->requests);
    out->connects = atomic_load(&u->connects);
    out->reused = atomic_load(&u->reused);
    out->stale = atomic_load(&u->stale);
    out->retries = atomic_load(&u->retries);
    out->failures = atomic_load(&u->failures);
    out->abandoned = atomic_load(&u->abandoned);
}

void mw_upstream_shutdown(void)
{
    up_stop_all();
}

void mw_upstream_free(mw_upstream_t *u)
{
    if (u == NULL) {
        return;
    }
    up_pool_destroy(&u->pool);
    free(u->address);
    free(u->script);
    free(u->pass);
    free(u);
}
