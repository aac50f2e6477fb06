/*
 * redisstore.c - the Redis store backend (suspect_redis.h); the only file of
 * libsuspect that includes hiredis.
 *
 * Algorithm: a decision is one EVALSHA of lua/decide.lua with the window and
 * lock keys of every identity in KEYS.  The script gathers each identity's
 * state (lock end, hits in the window after trimming, the moment one more
 * hit fits), applies the writes suspect_policy_evaluate() would plan (locks
 * for identities over the limit, the hit on every window when allowed) and
 * returns the states and what it wrote.  This file then runs
 * suspect_policy_evaluate() on those states: the decision the caller gets is
 * computed by the one definition of the semantics, and if the script's
 * writes differ from the evaluator's plan the call fails loudly instead of
 * drifting.  status is lua/status.lua; reset (DEL) and block (SET PX) are
 * plain commands.
 *
 * Connections: one per thread per store, found through a pthread key whose
 * destructor frees it when the thread exits; the store keeps them on a list
 * (under mu) to free the rest.  A connection is opened lazily, with the
 * connect timeout, then gets the command timeout (redisSetTimeout), its fd
 * made close-on-exec, AUTH and SELECT when the URL asks, and SCRIPT LOAD of
 * every script (the SHA1s Redis answers are kept per connection).  Commands
 * are formatted by hiredis but sent here with send(MSG_NOSIGNAL), and only
 * the replies are read by hiredis: a server gone away is EPIPE, never a
 * SIGPIPE, whatever the program's disposition.  Any
 * transport error drops the connection; the next call reconnects once the
 * backoff allows (redisconn.c).  NOSCRIPT (SCRIPT FLUSH, a restart behind a
 * proxy) triggers SCRIPT LOAD and one retry.  A connection found closed by
 * the server on its first use by a call (CLIENT KILL, a Redis restart) is
 * replaced and the call retried once; a timeout is never retried, since the
 * script may have run.
 *
 * Invariants: a connection is used only by the thread that owns it; its
 * counters are updated with atomics so suspect_redis_stats() may read them
 * from any thread.
 */
#include "suspect_redis.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "alloc.h"
#include "redisconn.h"
#include "suspect_store_impl.h"

/* Generated from the lua directory by scripts/lua2c (lua/scripts.c). */
extern const char redis_lua_decide[];
extern const char redis_lua_status[];

enum { SCRIPT_DECIDE, SCRIPT_STATUS, NSCRIPTS, SCRIPT_NONE = -1 };

static const char *const script_names[NSCRIPTS] = {"decide.lua", "status.lua"};

#define MAX_ARGS  (6 + 3 * SUSPECT_MAX_IDENTITIES + 4)
#define SHA_LEN   40
#define NUM_LEN   24
#define LOCK_VMAX (SUSPECT_KEY_MAX + 32)

typedef struct redisstore redisstore_t;

typedef struct conn {
    redisstore_t *rs;
    redisContext *ctx; /* NULL while disconnected */
    bool used;         /* ctx has served a command */
    bool eof;          /* the last error was the server closing */
    redis_ids_t ids;
    redis_backoff_t backoff;
    suspect_rc_t last_rc; /* the last connect error, while backing off */
    char last_err[SUSPECT_ERR_TEXT_MAX];
    char sha[NSCRIPTS][SHA_LEN + 1];
    suspect_redis_stats_t stats; /* atomics */
    struct conn *prev, *next;
} conn_t;

struct redisstore {
    suspect_store_t base;
    redis_addr_t addr;
    struct timeval connect_tv, command_tv;
    unsigned command_timeout_ms;
    suspect_redis_clock_t clock;
    size_t prefix_len;
    pthread_key_t tls;
    pthread_mutex_t mu;         /* guards conns and dead */
    conn_t *conns;              /* every live connection */
    suspect_redis_stats_t dead; /* counters of freed connections */
};

/* One request: argv[0..argc) with lengths. */
typedef struct request {
    int script; /* SCRIPT_*: argv[0..1] are filled with EVALSHA sha */
    int argc;
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
} request_t;

static const suspect_store_ops_t redis_ops;

/* ---- counters ------------------------------------------------------------
 */

#define STAT_ADD(c, field)                                                     \
    __atomic_add_fetch(&(c)->stats.field, 1, __ATOMIC_RELAXED)

static void stats_add(suspect_redis_stats_t *to, suspect_redis_stats_t *from)
{
    to->commands += __atomic_load_n(&from->commands, __ATOMIC_RELAXED);
    to->connects += __atomic_load_n(&from->connects, __ATOMIC_RELAXED);
    to->connect_errs += __atomic_load_n(&from->connect_errs, __ATOMIC_RELAXED);
    to->errors += __atomic_load_n(&from->errors, __ATOMIC_RELAXED);
    to->timeouts += __atomic_load_n(&from->timeouts, __ATOMIC_RELAXED);
    to->reloads += __atomic_load_n(&from->reloads, __ATOMIC_RELAXED);
}

/* ---- connections ---------------------------------------------------------
 */

static void conn_disconnect(conn_t *c)
{
    if (c->ctx != NULL) {
        redisFree(c->ctx);
        c->ctx = NULL;
    }
}

/* Unlinks and frees c; the caller holds rs->mu. */
static void conn_free_locked(conn_t *c)
{
    redisstore_t *rs = c->rs;

    stats_add(&rs->dead, &c->stats);
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        rs->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    conn_disconnect(c);
    free(c);
}

/* pthread key destructor: the owning thread exits. */
static void conn_thread_exit(void *p)
{
    conn_t *c = p;
    redisstore_t *rs = c->rs;

    pthread_mutex_lock(&rs->mu);
    conn_free_locked(c);
    pthread_mutex_unlock(&rs->mu);
}

/* The calling thread's connection object (not necessarily connected). */
static conn_t *conn_get(redisstore_t *rs, suspect_err_t *err)
{
    conn_t *c = pthread_getspecific(rs->tls);

    if (c != NULL) {
        return c;
    }
    c = suspect_calloc(1, sizeof(*c));
    if (c == NULL) {
        suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "redis: out of memory");
        return NULL;
    }
    c->rs = rs;
    redis_ids_init(&c->ids);
    pthread_mutex_lock(&rs->mu);
    c->next = rs->conns;
    if (rs->conns != NULL) {
        rs->conns->prev = c;
    }
    rs->conns = c;
    pthread_mutex_unlock(&rs->mu);
    if (pthread_setspecific(rs->tls, c) != 0) {
        pthread_mutex_lock(&rs->mu);
        conn_free_locked(c);
        pthread_mutex_unlock(&rs->mu);
        suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "redis: out of memory");
        return NULL;
    }
    return c;
}

/* Maps a transport error to a code and a message, and drops the
 * connection.  kind and errstr are hiredis's (REDIS_ERR_*), e the errno
 * saved right after the failing call. */
static suspect_rc_t transport_error(conn_t *c, int kind, const char *errstr,
                                    int e, suspect_err_t *err)
{
    const redisstore_t *rs = c->rs;
    suspect_rc_t rc = SUSPECT_E_STORE;
    char text[160];

    /* On a unix socket a closed peer shows as EPIPE, on TCP often as a
     * reset: all mean the server went away, not that it is slow. */
    c->eof = kind == REDIS_ERR_EOF ||
             (kind == REDIS_ERR_IO && (e == EPIPE || e == ECONNRESET));
    if (kind == REDIS_ERR_IO && (e == EAGAIN || e == EWOULDBLOCK ||
                                 e == ETIMEDOUT || e == EINPROGRESS)) {
        rc = SUSPECT_E_TIMEOUT;
        snprintf(text, sizeof(text), "no answer within %u ms",
                 c->used ? rs->command_timeout_ms
                         : (unsigned)(rs->connect_tv.tv_sec * 1000 +
                                      rs->connect_tv.tv_usec / 1000));
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
    return suspect_err_set(err, rc, NULL, 0, "redis %s: %s", rs->addr.name,
                           text);
}

/* The error hiredis recorded on c->ctx. */
static suspect_rc_t context_error(conn_t *c, int e, suspect_err_t *err)
{
    char errstr[sizeof(c->ctx->errstr)];

    memcpy(errstr, c->ctx->errstr, sizeof(errstr));
    return transport_error(c, c->ctx->err, errstr, e, err);
}

/* Writes buf whole with send(MSG_NOSIGNAL): a closed peer gives EPIPE,
 * never SIGPIPE.  The send timeout is the command timeout (hiredis sets
 * SO_SNDTIMEO with SO_RCVTIMEO). */
static suspect_rc_t send_all(conn_t *c, const char *buf, size_t len,
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

/* Sends rq on c's connection; *out gets the reply (owned by the caller).
 * An error reply is returned as a reply, not as an error.  The command is
 * formatted by hiredis but written here, so hiredis never write()s (its
 * output buffer stays empty) and SIGPIPE cannot be raised. */
static suspect_rc_t exec_raw(conn_t *c, request_t *rq, redisReply **out,
                             suspect_err_t *err)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, rq->argc, rq->argv, rq->len);
    void *reply = NULL;
    suspect_rc_t rc;

    STAT_ADD(c, commands);
    if (len < 0) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    rc = send_all(c, cmd, (size_t)len, err);
    redisFreeCommand(cmd);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    errno = 0;
    if (redisGetReply(c->ctx, &reply) != REDIS_OK || reply == NULL) {
        return context_error(c, errno, err);
    }
    c->used = true;
    *out = reply;
    return SUSPECT_OK;
}

/* As exec_raw, but an error reply becomes SUSPECT_E_STORE "redis: ...". */
static suspect_rc_t exec_ok(conn_t *c, request_t *rq, redisReply **out,
                            suspect_err_t *err)
{
    suspect_rc_t rc = exec_raw(c, rq, out, err);

    if (rc == SUSPECT_OK && (*out)->type == REDIS_REPLY_ERROR) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "redis: %.*s",
                             (int)(*out)->len, (*out)->str);
        freeReplyObject(*out);
        *out = NULL;
    }
    return rc;
}

static void rq_arg(request_t *rq, const char *s, size_t len)
{
    rq->argv[rq->argc] = s;
    rq->len[rq->argc] = len;
    rq->argc++;
}

static void rq_str(request_t *rq, const char *s)
{
    rq_arg(rq, s, strlen(s));
}

/* Runs a command whose answer does not matter beyond success. */
static suspect_rc_t exec_simple(conn_t *c, request_t *rq, suspect_err_t *err)
{
    redisReply *r = NULL;
    suspect_rc_t rc = exec_ok(c, rq, &r, err);
    freeReplyObject(r);
    return rc;
}

/* SCRIPT LOAD of script i; keeps the SHA1 Redis answers. */
static suspect_rc_t load_script(conn_t *c, int i, suspect_err_t *err)
{
    const char *text[NSCRIPTS] = {redis_lua_decide, redis_lua_status};
    request_t rq = {SCRIPT_NONE, 0, {0}, {0}};
    redisReply *r = NULL;
    suspect_rc_t rc;

    rq_str(&rq, "SCRIPT");
    rq_str(&rq, "LOAD");
    rq_str(&rq, text[i]);
    rc = exec_ok(c, &rq, &r, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (r->type != REDIS_REPLY_STRING || r->len != SHA_LEN) {
        freeReplyObject(r);
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: SCRIPT LOAD of %s: odd answer",
                               script_names[i]);
    }
    memcpy(c->sha[i], r->str, SHA_LEN);
    c->sha[i][SHA_LEN] = '\0';
    freeReplyObject(r);
    return SUSPECT_OK;
}

/* AUTH, SELECT and SCRIPT LOAD on a fresh connection. */
static suspect_rc_t handshake(conn_t *c, suspect_err_t *err)
{
    const redis_addr_t *a = &c->rs->addr;
    request_t rq = {SCRIPT_NONE, 0, {0}, {0}};
    char db[NUM_LEN];
    suspect_rc_t rc = SUSPECT_OK;

    if (a->password[0] != '\0') {
        rq_str(&rq, "AUTH");
        if (a->user[0] != '\0') {
            rq_str(&rq, a->user);
        }
        rq_str(&rq, a->password);
        rc = exec_simple(c, &rq, err);
    }
    if (rc == SUSPECT_OK && a->db != 0) {
        rq.argc = 0;
        snprintf(db, sizeof(db), "%d", a->db);
        rq_str(&rq, "SELECT");
        rq_str(&rq, db);
        rc = exec_simple(c, &rq, err);
    }
    for (int i = 0; i < NSCRIPTS && rc == SUSPECT_OK; i++) {
        rc = load_script(c, i, err);
    }
    return rc;
}

/* Connects c if it is not, respecting the backoff. */
static suspect_rc_t conn_ensure(conn_t *c, suspect_err_t *err)
{
    redisstore_t *rs = c->rs;
    suspect_err_t e;
    suspect_rc_t rc;

    if (c->ctx != NULL) {
        return SUSPECT_OK;
    }
    if (!redis_backoff_ready(&c->backoff, redis_mono_ms())) {
        return suspect_err_set(err, c->last_rc, NULL, 0, "%s (backing off)",
                               c->last_err);
    }
    suspect_err_clear(&e);
    c->used = false;
    c->eof = false;
    c->ctx = rs->addr.is_unix
                 ? redisConnectUnixWithTimeout(rs->addr.host, rs->connect_tv)
                 : redisConnectWithTimeout(rs->addr.host, rs->addr.port,
                                           rs->connect_tv);
    if (c->ctx == NULL) {
        rc = suspect_err_set(&e, SUSPECT_E_NOMEM, NULL, 0,
                             "redis: out of memory");
    } else if (c->ctx->err != 0) {
        rc = context_error(c, errno, &e);
    } else {
        (void)fcntl(c->ctx->fd, F_SETFD, FD_CLOEXEC);
        redisSetTimeout(c->ctx, rs->command_tv);
        rc = handshake(c, &e);
    }
    if (rc == SUSPECT_OK) {
        redis_backoff_ok(&c->backoff);
        STAT_ADD(c, connects);
        return SUSPECT_OK;
    }
    conn_disconnect(c);
    STAT_ADD(c, connect_errs);
    redis_backoff_fail(&c->backoff, redis_mono_ms());
    c->last_rc = rc;
    snprintf(c->last_err, sizeof(c->last_err), "%s", e.text);
    return suspect_err_set(err, rc, NULL, 0, "%s", e.text);
}

/* Sends rq (an EVALSHA when rq->script is set; NOSCRIPT reloads and retries
 * once) on a connected c. */
static suspect_rc_t exec_request(conn_t *c, request_t *rq, redisReply **out,
                                 suspect_err_t *err)
{
    suspect_rc_t rc;

    if (rq->script == SCRIPT_NONE) {
        return exec_ok(c, rq, out, err);
    }
    rq->argv[1] = c->sha[rq->script];
    rq->len[1] = SHA_LEN;
    rc = exec_raw(c, rq, out, err);
    if (rc == SUSPECT_OK && (*out)->type == REDIS_REPLY_ERROR &&
        strncmp((*out)->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(*out);
        *out = NULL;
        STAT_ADD(c, reloads);
        rc = load_script(c, rq->script, err);
        if (rc == SUSPECT_OK) {
            rq->argv[1] = c->sha[rq->script];
            rc = exec_raw(c, rq, out, err);
        }
    }
    if (rc == SUSPECT_OK && (*out)->type == REDIS_REPLY_ERROR) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "redis: %.*s",
                             (int)(*out)->len, (*out)->str);
        freeReplyObject(*out);
        *out = NULL;
    }
    return rc;
}

/* Connects if needed and runs rq; a connection the server had closed
 * before this call is replaced and rq sent once more. */
static suspect_rc_t call(conn_t *c, request_t *rq, redisReply **out,
                         suspect_err_t *err)
{
    suspect_err_t e;
    suspect_rc_t rc;

    *out = NULL;
    for (int attempt = 0;; attempt++) {
        bool reused = c->ctx != NULL && c->used;
        suspect_err_clear(&e);
        rc = conn_ensure(c, &e);
        if (rc == SUSPECT_OK) {
            rc = exec_request(c, rq, out, &e);
        }
        if (rc == SUSPECT_OK || attempt > 0 || !reused || !c->eof) {
            break;
        }
    }
    if (rc != SUSPECT_OK) {
        STAT_ADD(c, errors);
        suspect_err_set(err, rc, NULL, 0, "%s", e.text);
    }
    return rc;
}

/* ---- replies -------------------------------------------------------------
 */

/* Copies an array reply of exactly n integers into v. */
static suspect_rc_t int_array(const redisReply *r, size_t n, int64_t *v,
                              const char *what, suspect_err_t *err)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: %s answered an unexpected shape", what);
    }
    for (size_t i = 0; i < n; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                                   "redis: %s answered a non-integer", what);
        }
        v[i] = r->element[i]->integer;
    }
    return SUSPECT_OK;
}

/* The identity part of key (after the prefix and "Action:"): the lock's
 * value, as the .NET code writes it. */
static const char *identity_of(const redisstore_t *rs, const suspect_key_t *k,
                               size_t *len)
{
    size_t start = rs->prefix_len < k->window_len ? rs->prefix_len : 0;
    const char *colon = memchr(k->buf + start, ':', k->window_len - start);

    start = colon != NULL ? (size_t)(colon - k->buf) + 1 : start;
    *len = k->window_len - start;
    return k->buf + start;
}

/* ---- the store operations ------------------------------------------------
 */

/* Fills the ARGV of decide.lua (numbers in nums, the hit id in id). */
static void decide_args(redisstore_t *rs, request_t *rq,
                        const suspect_rule_t *rule, const suspect_key_t *keys,
                        size_t n, int64_t now_ms, char nums[5][NUM_LEN],
                        const char *id)
{
    redis_fmt_i64(nums[0], (int64_t)(2 * n));
    rq_str(rq, "EVALSHA");
    rq_arg(rq, "", 0);
    rq_str(rq, nums[0]);
    for (size_t i = 0; i < n; i++) {
        rq_arg(rq, keys[i].buf, keys[i].window_len);
        rq_arg(rq, keys[i].buf, keys[i].lock_len);
    }
    if (rs->clock == SUSPECT_REDIS_CLOCK_SERVER) {
        rq_arg(rq, "", 0);
    } else {
        rq_arg(rq, nums[1], redis_fmt_i64(nums[1], now_ms));
    }
    rq_arg(rq, nums[2], redis_fmt_i64(nums[2], rule->limit_count));
    rq_arg(rq, nums[3], redis_fmt_i64(nums[3], (int64_t)rule->window_s * 1000));
    rq_arg(rq, nums[4], redis_fmt_i64(nums[4], (int64_t)rule->block_s * 1000));
    rq_arg(rq, id, REDIS_ID_LEN);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *v = identity_of(rs, &keys[i], &len);
        rq_arg(rq, v, len);
    }
}

/* Turns decide.lua's answer into *out through the policy evaluator, and
 * checks the script wrote what the evaluator planned. */
static suspect_rc_t decide_reply(const redisReply *r,
                                 const suspect_rule_t *rule, size_t n,
                                 suspect_decision_t *out, suspect_err_t *err)
{
    int64_t v[2 + 4 * SUSPECT_MAX_IDENTITIES];
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    suspect_rc_t rc = int_array(r, 2 + 4 * n, v, "decide.lua", err);
    bool agree;

    if (rc != SUSPECT_OK) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        const int64_t *s = v + 2 + 4 * i;
        st[i].lock_until_ms = s[0];
        st[i].in_window = s[1] > UINT32_MAX ? UINT32_MAX : (uint32_t)s[1];
        st[i].free_at_ms = s[2];
    }
    suspect_policy_evaluate(rule, st, n, v[0], &plan, out);
    agree = plan.record == (v[1] != 0);
    for (size_t i = 0; i < n; i++) {
        agree = agree && plan.lock_until_ms[i] == v[2 + 4 * i + 3];
    }
    if (!agree) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: decide.lua disagrees with the policy");
    }
    return SUSPECT_OK;
}

static suspect_rc_t rs_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    conn_t *c = conn_get(rs, err);
    request_t rq = {SCRIPT_DECIDE, 0, {0}, {0}};
    char nums[5][NUM_LEN], id[REDIS_ID_LEN + 1];
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    redis_ids_next(&c->ids, id);
    decide_args(rs, &rq, rule, keys, n, now_ms, nums, id);
    rc = call(c, &rq, &r, err);
    if (rc == SUSPECT_OK) {
        rc = decide_reply(r, rule, n, out, err);
    }
    freeReplyObject(r);
    return rc;
}

static suspect_rc_t rs_status(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *key, int64_t now_ms,
                              suspect_status_t *out, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    conn_t *c = conn_get(rs, err);
    request_t rq = {SCRIPT_STATUS, 0, {0}, {0}};
    char nums[3][NUM_LEN];
    redisReply *r;
    int64_t v[4];
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    snprintf(nums[0], NUM_LEN, "%lld", (long long)now_ms);
    snprintf(nums[1], NUM_LEN, "%u", rule->limit_count);
    snprintf(nums[2], NUM_LEN, "%lld", (long long)rule->window_s * 1000);
    rq_str(&rq, "EVALSHA");
    rq_arg(&rq, "", 0);
    rq_str(&rq, "2");
    rq_arg(&rq, key->buf, key->window_len);
    rq_arg(&rq, key->buf, key->lock_len);
    rq_str(&rq, rs->clock == SUSPECT_REDIS_CLOCK_SERVER ? "" : nums[0]);
    rq_str(&rq, nums[1]);
    rq_str(&rq, nums[2]);
    rc = call(c, &rq, &r, err);
    if (rc == SUSPECT_OK) {
        rc = int_array(r, 4, v, "status.lua", err);
    }
    freeReplyObject(r);
    if (rc == SUSPECT_OK) {
        out->locked_until_ms = v[1];
        out->in_window = v[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[2];
        out->remaining = out->in_window < rule->limit_count
                             ? rule->limit_count - out->in_window
                             : 0;
        out->free_at_ms = v[3];
    }
    return rc;
}

static suspect_rc_t rs_reset(suspect_store_t *store, const suspect_key_t *key,
                             unsigned what, suspect_err_t *err)
{
    conn_t *c = conn_get((redisstore_t *)store, err);
    request_t rq = {SCRIPT_NONE, 0, {0}, {0}};
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    rq_str(&rq, "DEL");
    if (what & SUSPECT_RESET_WINDOW) {
        rq_arg(&rq, key->buf, key->window_len);
    }
    if (what & SUSPECT_RESET_LOCK) {
        rq_arg(&rq, key->buf, key->lock_len);
    }
    rc = call(c, &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

static suspect_rc_t rs_block(suspect_store_t *store, const suspect_key_t *key,
                             int64_t now_ms, int64_t until_ms,
                             suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    conn_t *c = conn_get(rs, err);
    request_t rq = {SCRIPT_NONE, 0, {0}, {0}};
    char value[LOCK_VMAX], ttl[NUM_LEN];
    size_t len;
    const char *ident = identity_of(rs, key, &len);
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    snprintf(value, sizeof(value), "%.*s|until=%lld", (int)len, ident,
             (long long)until_ms);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)(until_ms - now_ms));
    rq_str(&rq, "SET");
    rq_arg(&rq, key->buf, key->lock_len);
    rq_str(&rq, value);
    rq_str(&rq, "PX");
    rq_str(&rq, ttl);
    rc = call(c, &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

static void rs_free(suspect_store_t *store)
{
    redisstore_t *rs = (redisstore_t *)store;

    pthread_key_delete(rs->tls);
    pthread_mutex_lock(&rs->mu);
    while (rs->conns != NULL) {
        conn_free_locked(rs->conns);
    }
    pthread_mutex_unlock(&rs->mu);
    pthread_mutex_destroy(&rs->mu);
    free(rs);
}

static const suspect_store_ops_t redis_ops = {
    "redis", rs_decide, rs_status, rs_reset, rs_block, rs_free,
};

/* ---- public --------------------------------------------------------------
 */

static struct timeval ms_to_tv(unsigned ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

suspect_rc_t suspect_redis_new(const suspect_redis_opts_t *opts,
                               suspect_store_t **out, suspect_err_t *err)
{
    static const suspect_redis_opts_t defaults = {NULL, 0, 0, 0, NULL};
    redisstore_t *rs;
    unsigned cto, mto;
    suspect_rc_t rc;

    *out = NULL;
    opts = opts != NULL ? opts : &defaults;
    if (opts->clock != SUSPECT_REDIS_CLOCK_CALLER &&
        opts->clock != SUSPECT_REDIS_CLOCK_SERVER) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: unknown clock option");
    }
    rs = suspect_calloc(1, sizeof(*rs));
    if (rs == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    rc = redis_addr_parse(opts->url != NULL ? opts->url
                                            : SUSPECT_REDIS_DEFAULT_URL,
                          &rs->addr, err);
    if (rc != SUSPECT_OK) {
        free(rs);
        return rc;
    }
    if (pthread_key_create(&rs->tls, conn_thread_exit) != 0) {
        free(rs);
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "redis: no thread-specific key left");
    }
    pthread_mutex_init(&rs->mu, NULL);
    rs->base.ops = &redis_ops;
    cto = opts->connect_timeout_ms ? opts->connect_timeout_ms
                                   : SUSPECT_REDIS_DEFAULT_TIMEOUT_MS;
    mto = opts->command_timeout_ms ? opts->command_timeout_ms
                                   : SUSPECT_REDIS_DEFAULT_TIMEOUT_MS;
    rs->connect_tv = ms_to_tv(cto);
    rs->command_tv = ms_to_tv(mto);
    rs->command_timeout_ms = mto;
    rs->clock = opts->clock;
    rs->prefix_len = opts->key_prefix != NULL ? strlen(opts->key_prefix) : 0;
    *out = &rs->base;
    return SUSPECT_OK;
}

bool suspect_store_is_redis(const suspect_store_t *store)
{
    return store != NULL && store->ops == &redis_ops;
}

suspect_rc_t suspect_redis_ping(suspect_store_t *store, suspect_err_t *err)
{
    conn_t *c;
    request_t rq = {SCRIPT_NONE, 0, {0}, {0}};
    redisReply *r;
    suspect_rc_t rc;

    if (!suspect_store_is_redis(store)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: not a Redis store");
    }
    c = conn_get((redisstore_t *)store, err);
    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    rq_str(&rq, "PING");
    rc = call(c, &rq, &r, err);
    if (rc == SUSPECT_OK &&
        (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0)) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                             "redis %s: PING answered something else",
                             ((redisstore_t *)store)->addr.name);
    }
    freeReplyObject(r);
    return rc;
}

void suspect_redis_stats(suspect_store_t *store, suspect_redis_stats_t *out)
{
    redisstore_t *rs = (redisstore_t *)store;

    memset(out, 0, sizeof(*out));
    if (!suspect_store_is_redis(store)) {
        return;
    }
    pthread_mutex_lock(&rs->mu);
    stats_add(out, &rs->dead);
    for (conn_t *c = rs->conns; c != NULL; c = c->next) {
        stats_add(out, &c->stats);
    }
    pthread_mutex_unlock(&rs->mu);
}
