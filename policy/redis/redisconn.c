/*
 * redisconn.c - one hiredis connection to one Redis server (redisconn.h).
 * With the other files of policy/redis/, the only users of hiredis in
 * libsuspect.
 *
 * A connection is opened lazily, with the connect timeout, then gets the
 * command timeout (redisSetTimeout, again on every reconnect), its fd made
 * close-on-exec, AUTH and SELECT when asked, ROLE when it must reach a
 * master (a Sentinel's master may have been demoted meanwhile: a replica is
 * refused and flagged, so the caller asks the sentinels again), and SCRIPT
 * LOAD of every script on a data node (the SHA1s Redis answers are kept per
 * connection: a node of a Cluster or a promoted replica may not have them).
 *
 * Commands are encoded here (redisutil.c) into a buffer kept per
 * connection and sent with send(MSG_NOSIGNAL): a server gone away is EPIPE,
 * never SIGPIPE, whatever the program's disposition.  The answer is read
 * here too (after poll(POLLIN) on a unix socket): one read() that holds
 * the whole integer array a script answers is decoded without hiredis and
 * without an allocation; anything else is fed to hiredis's reader, which
 * finishes it.  So a decision costs one send(), one read() (and a poll()
 * on a unix socket) and no allocation.  A Cluster ASK redirection sends
 * ASKING in the same write, and its +OK is read through hiredis first.
 * Any transport error drops the connection; the next call reconnects once
 * the backoff allows (redisutil.c).  NOSCRIPT (SCRIPT FLUSH, a restart, a
 * node that never had the script) triggers SCRIPT LOAD and one retry.  A
 * connection found closed by the server on its first use by a call (CLIENT
 * KILL, a Redis restart) is replaced and the call retried once; a timeout
 * is never retried, since the script may have run.  An error reply is
 * copied into the request, so the router can act on MOVED, ASK, READONLY.
 *
 * Time: every call runs against its operation's deadline (redisutil.h).
 * The connect is given the connect timeout, each command the command
 * timeout, each at most what is left; once nothing is left, nothing more
 * is started (a request not sent is flagged late, and the connection
 * kept).  The socket's timeouts (SO_RCVTIMEO / SO_SNDTIMEO, which bound
 * read() on TCP, hiredis's reads and every send) are set with
 * redisSetTimeout only when the figure changes: an operation's first
 * command, the usual decision, has its whole timeout left, which the
 * socket already has, so the decision's path makes no system call for it.
 *
 * Invariants: a connection is used by one thread at a time; its counters
 * are its thread's, updated with atomics so that they may be read from any
 * thread.
 */
#include "redisconn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"

/* One read of this much takes a decision's whole answer (2 + 8 integers
 * per identity, for a few identities); a longer answer is finished by
 * hiredis. */
#define REDIS_FAST_READ 1024

static const char *const script_names[NSCRIPTS] = {"decide.lua", "status.lua",
                                                   "carry.lua",  "unblock.lua",
                                                   "settle.lua", "lock.lua"};

/* ---- counters ------------------------------------------------------------
 */

#define STAT_ADD(c, field) REDIS_STAT_ADD((c)->stats, field, 1)

void redis_stats_add(suspect_redis_stats_t *to,
                     const suspect_redis_stats_t *from)
{
    const uint64_t *f = (const uint64_t *)from;
    uint64_t *t = (uint64_t *)to;

    for (size_t i = 0; i < sizeof(*to) / sizeof(uint64_t); i++) {
        t[i] += __atomic_load_n(&f[i], __ATOMIC_RELAXED);
    }
}

/* ---- connections ---------------------------------------------------------
 */

static void conn_disconnect(redis_conn_t *c)
{
    if (c->ctx != NULL) {
        redisFree(c->ctx);
        c->ctx = NULL;
    }
}

struct timeval redis_ms_tv(unsigned ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

void redis_conn_init(redis_conn_t *c, const redis_conf_t *cf,
                     const redis_endpoint_t *ep, suspect_redis_stats_t *stats)
{
    memset(c, 0, sizeof(*c));
    c->cf = cf;
    c->ep = *ep;
    c->stats = stats;
}

void redis_conn_close(redis_conn_t *c)
{
    conn_disconnect(c);
    free(c->obuf);
    c->obuf = NULL;
    c->ocap = 0;
}

/* Maps a transport error to a code and a message, and drops the
 * connection.  kind and errstr are hiredis's (REDIS_ERR_*), e the errno
 * saved right after the failing call. */
static suspect_rc_t transport_error(redis_conn_t *c, int kind,
                                    const char *errstr, int e,
                                    suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_E_STORE;
    char text[160];

    /* On a unix socket a closed peer shows as EPIPE, on TCP often as a
     * reset: all mean the server went away, not that it is slow. */
    c->eof = kind == REDIS_ERR_EOF ||
             (kind == REDIS_ERR_IO && (e == EPIPE || e == ECONNRESET));
    if (kind == REDIS_ERR_IO && (e == EAGAIN || e == EWOULDBLOCK ||
                                 e == ETIMEDOUT || e == EINPROGRESS)) {
        rc = SUSPECT_E_TIMEOUT;
        snprintf(text, sizeof(text), "%s within %u ms",
                 c->connecting ? "cannot connect" : "no answer", c->wait_ms);
        STAT_ADD(c, timeouts);
    } else if (kind == REDIS_ERR_EOF) {
        snprintf(text, sizeof(text), "server closed the connection");
    } else if (kind == REDIS_ERR_PROTOCOL) {
        snprintf(text, sizeof(text), "not a Redis server (%s)", errstr);
    } else {
        snprintf(text, sizeof(text), "%s", errstr);
        if (text[0] >= 'A' && text[0] <= 'Z') {
            text[0] = (char)(text[0] - 'A' + 'a');
        }
    }
    conn_disconnect(c);
    return suspect_err_set(err, rc, NULL, 0, "redis %s: %s", c->ep.name, text);
}

/* The error hiredis recorded on c->ctx. */
static suspect_rc_t context_error(redis_conn_t *c, int e, suspect_err_t *err)
{
    char errstr[sizeof(c->ctx->errstr)];

    memcpy(errstr, c->ctx->errstr, sizeof(errstr));
    return transport_error(c, c->ctx->err, errstr, e, err);
}

/* The deadline passed before the request could be sent: nothing was, and
 * the connection (if any) is kept. */
static suspect_rc_t out_of_time(redis_conn_t *c, suspect_err_t *err)
{
    c->late = true;
    STAT_ADD(c, timeouts);
    return suspect_err_set(err, SUSPECT_E_TIMEOUT, NULL, 0,
                           "redis %s: no time left for the request (its "
                           "deadline passed)",
                           c->ep.name);
}

/* Gives the socket's sends and receives ms, unless they have it. */
static void arm(redis_conn_t *c, unsigned ms)
{
    if (ms != c->tv_ms) {
        redisSetTimeout(c->ctx, redis_ms_tv(ms));
        c->tv_ms = ms;
    }
    c->wait_ms = ms;
}

/* Writes buf whole with send(MSG_NOSIGNAL): a closed peer gives EPIPE,
 * never SIGPIPE.  The send timeout is the one arm() gave (hiredis sets
 * SO_SNDTIMEO with SO_RCVTIMEO). */
static suspect_rc_t send_all(redis_conn_t *c, const char *buf, size_t len,
                             suspect_err_t *err)
{
    while (len > 0) {
        ssize_t w = send(c->ctx->fd, buf, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            int e = w < 0 ? errno : EPIPE;
            return transport_error(c, REDIS_ERR_IO, strerror(e), e, err);
        }
        buf += w;
        len -= (size_t)w;
    }
    return SUSPECT_OK;
}

/* ASKING, encoded: sent in front of a request an ASK redirection sends
 * to another node. */
static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
#define ASKING_LEN (sizeof(asking) - 1)

/* Encodes rq into c->obuf (grown when needed, then kept) and sends it. */
static suspect_rc_t send_request(redis_conn_t *c, const redis_request_t *rq,
                                 suspect_err_t *err)
{
    size_t pre = rq->asking ? ASKING_LEN : 0;
    size_t size = pre + redis_resp_size(rq->argc, rq->len);

    if (size > c->ocap) {
        char *grown = suspect_realloc(c->obuf, size);
        if (grown == NULL) {
            return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "redis: out of memory");
        }
        c->obuf = grown;
        c->ocap = size;
    }
    memcpy(c->obuf, asking, pre);
    redis_resp_encode(c->obuf + pre, rq->argc, rq->argv, rq->len);
    return send_all(c, c->obuf, size, err);
}

/* Waits until the reply starts to arrive, at most c->wait_ms.
 * Sleeping in poll(POLLIN) rather than in read(): a thread blocked in
 * read() on a unix socket is also woken when the server consumes the
 * request (write space), a wasted context switch per command that costs
 * about a fifth of the throughput on a small machine.  TCP wakes a reader
 * only for data, so there read() waits alone (SO_RCVTIMEO bounds it). */
static suspect_rc_t wait_readable(redis_conn_t *c, suspect_err_t *err)
{
    struct pollfd p = {c->ctx->fd, POLLIN, 0};
    int n;

    if (!c->ep.is_unix) {
        return SUSPECT_OK;
    }
    do {
        n = poll(&p, 1, (int)c->wait_ms);
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        return transport_error(c, REDIS_ERR_IO, "timeout", EAGAIN, err);
    }
    if (n < 0) {
        int e = errno;
        return transport_error(c, REDIS_ERR_IO, strerror(e), e, err);
    }
    return SUSPECT_OK;
}

/* The next reply through hiredis's reader: the one it holds whole, else
 * read on, the socket given what is left of d. */
static suspect_rc_t finish_reply(redis_conn_t *c, redis_deadline_t d,
                                 void **reply, suspect_err_t *err)
{
    unsigned ms;

    *reply = NULL;
    if (redisReaderGetReply(c->ctx->reader, reply) != REDIS_OK) {
        return transport_error(c, REDIS_ERR_PROTOCOL, c->ctx->reader->errstr, 0,
                               err);
    }
    if (*reply != NULL) {
        return SUSPECT_OK;
    }
    ms = redis_left_ms(d, c->cf->command_timeout_ms);
    if (ms == 0) {
        return transport_error(c, REDIS_ERR_IO, "timeout", EAGAIN, err);
    }
    arm(c, ms);
    errno = 0;
    if (redisGetReply(c->ctx, reply) != REDIS_OK || *reply == NULL) {
        return context_error(c, errno, err);
    }
    return SUSPECT_OK;
}

/* Reads the +OK that answers ASKING (through hiredis: rare). */
static suspect_rc_t recv_asking(redis_conn_t *c, redis_deadline_t d,
                                suspect_err_t *err)
{
    void *reply = NULL;
    redisReply *r;
    suspect_rc_t rc = finish_reply(c, d, &reply, err);
    bool ok;

    if (rc != SUSPECT_OK) {
        return rc;
    }
    r = reply;
    ok = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (!ok) {
        return transport_error(c, REDIS_ERR_PROTOCOL, "ASKING refused", 0, err);
    }
    return SUSPECT_OK;
}

/* Reads the answer to rq.  One read(); when it holds exactly the array of
 * rq->nints integers rq expects, it is decoded into rq->ints (*out stays
 * NULL: no allocation, no hiredis); else the bytes go to hiredis's reader,
 * which reads the rest and builds the reply. */
static suspect_rc_t recv_reply(redis_conn_t *c, redis_request_t *rq,
                               redis_deadline_t d, redisReply **out,
                               suspect_err_t *err)
{
    redisReader *rd = c->ctx->reader;
    char buf[REDIS_FAST_READ];
    void *reply = NULL;
    ssize_t r;
    suspect_rc_t rc;

    if (rq->asking) {
        rc = recv_asking(c, d, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    if (rd->pos >= rd->len) {
        rc = wait_readable(c, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        do {
            r = read(c->ctx->fd, buf, sizeof(buf));
        } while (r < 0 && errno == EINTR);
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            return transport_error(c, r < 0 ? REDIS_ERR_IO : REDIS_ERR_EOF,
                                   strerror(e), e, err);
        }
        if (rq->nints > 0 &&
            redis_resp_ints(buf, (size_t)r, rq->ints, rq->nints)) {
            return SUSPECT_OK;
        }
        if (redisReaderFeed(rd, buf, (size_t)r) != REDIS_OK) {
            return transport_error(c, REDIS_ERR_OOM, "out of memory", 0, err);
        }
    }
    rc = finish_reply(c, d, &reply, err);
    *out = reply;
    return rc;
}

/* Sends rq on c's connection, given the command timeout or what is left of
 * d; *out gets the reply (owned by the caller), or stays NULL when it was
 * decoded into rq->ints.  An error reply is returned as a reply, not as an
 * error.  The request is encoded and written here, so hiredis never
 * write()s (its output buffer stays empty) and SIGPIPE cannot be raised. */
static suspect_rc_t exec_raw(redis_conn_t *c, redis_request_t *rq,
                             redis_deadline_t d, redisReply **out,
                             suspect_err_t *err)
{
    unsigned ms = redis_left_ms(d, c->cf->command_timeout_ms);
    suspect_rc_t rc;

    *out = NULL;
    if (ms == 0) {
        return out_of_time(c, err);
    }
    STAT_ADD(c, commands);
    arm(c, ms);
    rc = send_request(c, rq, err);
    if (rc == SUSPECT_OK) {
        rc = recv_reply(c, rq, d, out, err);
    }
    if (rc == SUSPECT_OK) {
        c->used = true;
    }
    return rc;
}

/* When *out is an error reply: copies it into rq->error, frees it and
 * returns SUSPECT_E_STORE "redis: <reply>"; else rc. */
static suspect_rc_t reply_error(redis_request_t *rq, suspect_rc_t rc,
                                redisReply **out, suspect_err_t *err)
{
    if (rc != SUSPECT_OK || *out == NULL || (*out)->type != REDIS_REPLY_ERROR) {
        return rc;
    }
    snprintf(rq->error, sizeof(rq->error), "%.*s", (int)(*out)->len,
             (*out)->str);
    rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "redis: %.*s",
                         (int)(*out)->len, (*out)->str);
    freeReplyObject(*out);
    *out = NULL;
    return rc;
}

/* As exec_raw, but an error reply becomes SUSPECT_E_STORE "redis: ...". */
static suspect_rc_t exec_ok(redis_conn_t *c, redis_request_t *rq,
                            redis_deadline_t d, redisReply **out,
                            suspect_err_t *err)
{
    return reply_error(rq, exec_raw(c, rq, d, out, err), out, err);
}

void redis_rq_arg(redis_request_t *rq, const char *s, size_t len)
{
    rq->argv[rq->argc] = s;
    rq->len[rq->argc] = len;
    rq->argc++;
}

void redis_rq_str(redis_request_t *rq, const char *s)
{
    redis_rq_arg(rq, s, strlen(s));
}

/* Runs a command whose answer does not matter beyond success. */
static suspect_rc_t exec_simple(redis_conn_t *c, redis_request_t *rq,
                                redis_deadline_t d, suspect_err_t *err)
{
    redisReply *r = NULL;
    suspect_rc_t rc = exec_ok(c, rq, d, &r, err);
    freeReplyObject(r);
    return rc;
}

/* SCRIPT LOAD of script i; keeps the SHA1 Redis answers. */
static suspect_rc_t load_script(redis_conn_t *c, int i, redis_deadline_t d,
                                suspect_err_t *err)
{
    const char *text[NSCRIPTS] = {
        redis_lua_decide, redis_lua_status, redis_lua_carry, redis_lua_unblock,
        redis_lua_settle, redis_lua_lock,   redis_lua_bucket};
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r = NULL;
    suspect_rc_t rc;

    redis_rq_str(&rq, "SCRIPT");
    redis_rq_str(&rq, "LOAD");
    redis_rq_str(&rq, text[i]);
    rc = exec_ok(c, &rq, d, &r, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (r->type != REDIS_REPLY_STRING || r->len != REDIS_SHA_LEN) {
        freeReplyObject(r);
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: SCRIPT LOAD of %s: odd answer",
                               script_names[i]);
    }
    memcpy(c->sha[i], r->str, REDIS_SHA_LEN);
    c->sha[i][REDIS_SHA_LEN] = '\0';
    freeReplyObject(r);
    return SUSPECT_OK;
}

/* ROLE: fails (and flags c) unless the server is a master. */
static suspect_rc_t check_master(redis_conn_t *c, redis_deadline_t d,
                                 suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r = NULL;
    suspect_rc_t rc;

    redis_rq_str(&rq, "ROLE");
    rc = exec_ok(c, &rq, d, &r, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "master") != 0) {
        c->not_master = true;
        rc = suspect_err_set(
            err, SUSPECT_E_STORE, NULL, 0,
            "redis %s: not a master (ROLE says %s)", c->ep.name,
            r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING
                ? r->element[0]->str
                : "something else");
    }
    freeReplyObject(r);
    return rc;
}

/* AUTH, SELECT, ROLE and SCRIPT LOAD on a fresh connection, as c->cf
 * asks. */
static suspect_rc_t handshake(redis_conn_t *c, redis_deadline_t d,
                              suspect_err_t *err)
{
    const redis_conf_t *cf = c->cf;
    redis_request_t rq = {.script = SCRIPT_NONE};
    char db[24];
    suspect_rc_t rc = SUSPECT_OK;

    if (cf->password[0] != '\0') {
        redis_rq_str(&rq, "AUTH");
        if (cf->user[0] != '\0') {
            redis_rq_str(&rq, cf->user);
        }
        redis_rq_str(&rq, cf->password);
        rc = exec_simple(c, &rq, d, err);
    }
    if (rc == SUSPECT_OK && cf->db != 0) {
        rq.argc = 0;
        snprintf(db, sizeof(db), "%d", cf->db);
        redis_rq_str(&rq, "SELECT");
        redis_rq_str(&rq, db);
        rc = exec_simple(c, &rq, d, err);
    }
    if (rc == SUSPECT_OK && cf->need_master) {
        rc = check_master(c, d, err);
    }
    for (int i = 0; i < NSCRIPTS && rc == SUSPECT_OK && cf->scripts; i++) {
        rc = load_script(c, i, d, err);
    }
    return rc;
}

/* Opens the socket, given the connect timeout or what is left of d. */
static redisContext *conn_open(redis_conn_t *c, redis_deadline_t d)
{
    struct timeval tv;

    c->wait_ms = redis_left_ms(d, c->cf->connect_timeout_ms);
    tv = redis_ms_tv(c->wait_ms);
    return c->ep.is_unix ? redisConnectUnixWithTimeout(c->ep.host, tv)
                         : redisConnectWithTimeout(c->ep.host, c->ep.port, tv);
}

/* Connects c if it is not, respecting the backoff, before d. */
static suspect_rc_t conn_ensure(redis_conn_t *c, redis_deadline_t d,
                                suspect_err_t *err)
{
    const redis_conf_t *cf = c->cf;
    suspect_err_t e;
    suspect_rc_t rc;

    if (c->ctx != NULL) {
        return SUSPECT_OK;
    }
    if (!redis_backoff_ready(&c->backoff, mono_ms())) {
        return suspect_err_set(err, c->last_rc, NULL, 0, "%s (backing off)",
                               c->last_err);
    }
    if (redis_left_ms(d, 1) == 0) {
        return out_of_time(c, err);
    }
    suspect_err_clear(&e);
    c->used = false;
    c->eof = false;
    c->not_master = false;
    c->ctx = conn_open(c, d);
    if (c->ctx == NULL) {
        rc = suspect_err_set(&e, SUSPECT_E_NOMEM, NULL, 0,
                             "redis: out of memory");
    } else if (c->ctx->err != 0) {
        c->connecting = true;
        rc = context_error(c, errno, &e);
        c->connecting = false;
    } else {
        (void)fcntl(c->ctx->fd, F_SETFD, FD_CLOEXEC);
        redisSetTimeout(c->ctx, cf->command_tv);
        c->tv_ms = cf->command_timeout_ms;
        rc = handshake(c, d, &e);
    }
    if (rc == SUSPECT_OK) {
        redis_backoff_ok(&c->backoff);
        STAT_ADD(c, connects);
        return SUSPECT_OK;
    }
    conn_disconnect(c);
    if (c->late) {
        /* The deadline, not the server: no backoff. */
        return suspect_err_set(err, rc, NULL, 0, "%s", e.text);
    }
    STAT_ADD(c, connect_errs);
    redis_backoff_fail(&c->backoff, mono_ms());
    c->last_rc = rc;
    snprintf(c->last_err, sizeof(c->last_err), "%s", e.text);
    return suspect_err_set(err, rc, NULL, 0, "%s", e.text);
}

/* Sends rq (an EVALSHA when rq->script is set; NOSCRIPT reloads and retries
 * once) on a connected c. */
static suspect_rc_t exec_request(redis_conn_t *c, redis_request_t *rq,
                                 redis_deadline_t d, redisReply **out,
                                 suspect_err_t *err)
{
    suspect_rc_t rc;

    if (rq->script == SCRIPT_NONE) {
        return exec_ok(c, rq, d, out, err);
    }
    rq->argv[1] = c->sha[rq->script];
    rq->len[1] = REDIS_SHA_LEN;
    rc = exec_raw(c, rq, d, out, err);
    if (rc == SUSPECT_OK && *out != NULL && (*out)->type == REDIS_REPLY_ERROR &&
        strncmp((*out)->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(*out);
        *out = NULL;
        STAT_ADD(c, reloads);
        rc = load_script(c, rq->script, d, err);
        if (rc == SUSPECT_OK) {
            rq->argv[1] = c->sha[rq->script];
            rc = exec_raw(c, rq, d, out, err);
        }
    }
    return reply_error(rq, rc, out, err);
}

/* Connects if needed and runs rq before d; a connection the server had
 * closed before this call is replaced and rq sent once more. */
suspect_rc_t redis_call(redis_conn_t *c, redis_request_t *rq,
                        redis_deadline_t d, redisReply **out,
                        suspect_err_t *err)
{
    suspect_err_t e;
    suspect_rc_t rc;

    *out = NULL;
    rq->error[0] = '\0';
    c->late = false;
    for (int attempt = 0;; attempt++) {
        bool reused = c->ctx != NULL && c->used;
        suspect_err_clear(&e);
        rc = conn_ensure(c, d, &e);
        c->unsent = rc != SUSPECT_OK;
        if (rc == SUSPECT_OK) {
            rc = exec_request(c, rq, d, out, &e);
            c->unsent = c->late;
        }
        if (rc == SUSPECT_OK || attempt > 0 || !reused || !c->eof) {
            break;
        }
    }
    if (rc != SUSPECT_OK) {
        suspect_err_set(err, rc, NULL, 0, "%s", e.text);
    }
    return rc;
}

suspect_rc_t redis_conn_poll(redis_conn_t *c, redisReply **out,
                             suspect_err_t *err)
{
    char buf[REDIS_FAST_READ];
    void *reply = NULL;

    *out = NULL;
    if (c->ctx == NULL) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis %s: not connected", c->ep.name);
    }
    for (;;) {
        ssize_t r;

        if (redisReaderGetReply(c->ctx->reader, &reply) != REDIS_OK) {
            return transport_error(c, REDIS_ERR_PROTOCOL,
                                   c->ctx->reader->errstr, 0, err);
        }
        if (reply != NULL) {
            *out = reply;
            return SUSPECT_OK;
        }
        r = recv(c->ctx->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return SUSPECT_OK;
        }
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            return transport_error(c, r < 0 ? REDIS_ERR_IO : REDIS_ERR_EOF,
                                   strerror(e), e, err);
        }
        if (redisReaderFeed(c->ctx->reader, buf, (size_t)r) != REDIS_OK) {
            return transport_error(c, REDIS_ERR_OOM, "out of memory", 0, err);
        }
    }
}

suspect_rc_t redis_script_ints(const redis_request_t *rq, const redisReply *r,
                               const char *what, suspect_err_t *err)
{
    if (r == NULL) {
        return SUSPECT_OK;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != rq->nints) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: %s answered an unexpected shape", what);
    }
    for (size_t i = 0; i < rq->nints; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                                   "redis: %s answered a non-integer", what);
        }
        rq->ints[i] = r->element[i]->integer;
    }
    return SUSPECT_OK;
}
