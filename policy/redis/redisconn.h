/*
 * redisconn.h - one hiredis connection to one Redis server (redisconn.c):
 * connected lazily with a backoff, logged in, scripts loaded, requests
 * sent and answered, errors mapped.  Which server a request goes to (the
 * one of the URL, the master the sentinels name, the node owning a
 * Cluster slot) is redisroute.c's.  Private to the library.
 */
#ifndef SUSPECT_REDISCONN_H
#define SUSPECT_REDISCONN_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include "redisurl.h"
#include "redisutil.h"
#include "suspect_redis.h"

/* The scripts, generated from the lua directory (lua/scripts.c). */
extern const char redis_lua_decide[];
extern const char redis_lua_status[];
extern const char redis_lua_carry[];
extern const char redis_lua_unblock[];
extern const char redis_lua_settle[];
extern const char redis_lua_lock[];
extern const char redis_lua_bucket[];

enum {
    SCRIPT_DECIDE,
    SCRIPT_STATUS,
    SCRIPT_CARRY,
    SCRIPT_UNBLOCK,
    SCRIPT_SETTLE,
    SCRIPT_LOCK,
    SCRIPT_BUCKET,
    NSCRIPTS,
    SCRIPT_NONE = -1
};

#define REDIS_MAX_ARGS  (16 + 5 * SUSPECT_MAX_IDENTITIES)
#define REDIS_SHA_LEN   40
#define REDIS_ERROR_MAX 160

/* How a store's connections log in and how long they wait: shared by
 * them, fixed once the store is made. */
typedef struct redis_conf {
    struct timeval command_tv;
    unsigned connect_timeout_ms, command_timeout_ms;
    const char *user;     /* "" = AUTH with the password alone */
    const char *password; /* "" = no AUTH */
    int db;               /* SELECT when not 0 */
    bool scripts;         /* SCRIPT LOAD on connect (data nodes) */
    bool need_master;     /* ROLE must say master (Sentinel) */
} redis_conf_t;

/* One connection, used by one thread at a time. */
typedef struct redis_conn {
    const redis_conf_t *cf;
    redis_endpoint_t ep;
    suspect_redis_stats_t *stats; /* its thread's counters (atomics) */
    redisContext *ctx;            /* NULL while disconnected */
    bool used;                    /* ctx has served a command */
    bool eof;                     /* the last error was the server closing */
    bool connecting;              /* errors are about the connect itself */
    bool not_master;              /* the last connect met a replica */
    bool unsent;                  /* the last call failed before sending */
    bool late;                    /* ...because its deadline had passed */
    unsigned tv_ms;               /* the socket's send/receive timeout */
    unsigned wait_ms;             /* what the last wait was given */
    redis_backoff_t backoff;
    suspect_rc_t last_rc; /* the last connect error, while backing off */
    char last_err[SUSPECT_ERR_TEXT_MAX];
    char sha[NSCRIPTS][REDIS_SHA_LEN + 1];
    char *obuf; /* the encoded request, kept for the next one */
    size_t ocap;
} redis_conn_t;

/* One request: argv[0..argc) with lengths.  When nints > 0, an answer that
 * is an array of exactly nints integers is decoded into ints[] without
 * hiredis (the decision's path); anything else comes back as a reply.
 * When the answer is an error reply, its text is copied into error (cut
 * to fit), so that a router can read MOVED, ASK, READONLY...; "" else. */
typedef struct redis_request {
    int script; /* SCRIPT_*: argv[0..1] are filled with EVALSHA sha */
    int argc;
    bool asking; /* send ASKING first (a Cluster ASK redirection) */
    const char *argv[REDIS_MAX_ARGS];
    size_t len[REDIS_MAX_ARGS];
    size_t nints;
    int64_t *ints;
    char error[REDIS_ERROR_MAX];
} redis_request_t;

/* Milliseconds for a timeval. */
struct timeval redis_ms_tv(unsigned ms);

/* Sets c up to reach ep (nothing is connected yet); counters go to
 * *stats. */
void redis_conn_init(redis_conn_t *c, const redis_conf_t *cf,
                     const redis_endpoint_t *ep, suspect_redis_stats_t *stats);

/* Closes c's connection and frees its buffers (c can be set up again). */
void redis_conn_close(redis_conn_t *c);

/* Appends an argument to rq. */
void redis_rq_arg(redis_request_t *rq, const char *s, size_t len);
void redis_rq_str(redis_request_t *rq, const char *s);

/*
 * Connects c if needed (respecting the backoff) and runs rq, all before
 * the deadline d: the connect waits at most the connect timeout, each
 * command the command timeout, and neither longer than what is left of d
 * (nothing is started once d passed: SUSPECT_E_TIMEOUT, c->late).  *out
 * gets the reply, owned by the caller (NULL on failure, and when the
 * answer was decoded into rq->ints).  An EVALSHA answered NOSCRIPT loads
 * the script and runs once more; a connection the server had closed before
 * this call is replaced and rq sent once more.  Error replies become
 * SUSPECT_E_STORE "redis: <reply>", with the reply in rq->error.
 */
suspect_rc_t redis_call(redis_conn_t *c, redis_request_t *rq,
                        redis_deadline_t d, redisReply **out,
                        suspect_err_t *err);

/* Reads what the server pushed (pub/sub messages) without waiting: *out
 * gets the next complete reply (the caller's), NULL when none is whole
 * yet.  A closed or broken connection is an error, and dropped. */
suspect_rc_t redis_conn_poll(redis_conn_t *c, redisReply **out,
                             suspect_err_t *err);

/* The answer of a script: rq->ints when it was decoded on the fast path
 * (r NULL), else the reply r, which must then be an array of exactly
 * rq->nints integers (copied into rq->ints).  SUSPECT_E_STORE "redis:
 * <what> answered an unexpected shape" else. */
suspect_rc_t redis_script_ints(const redis_request_t *rq, const redisReply *r,
                               const char *what, suspect_err_t *err);

/* Sums the counters *from into *to (atomic reads of *from). */
void redis_stats_add(suspect_redis_stats_t *to,
                     const suspect_redis_stats_t *from);

#define REDIS_STAT_ADD(stats, field, n)                                        \
    __atomic_add_fetch(&(stats)->field, (n), __ATOMIC_RELAXED)

#endif
