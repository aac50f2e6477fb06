/*
 * redisconn.h - the Redis store's connections (redisconn.c): one hiredis
 * connection per thread, requests sent and answered, errors mapped.
 * Private to the library; with redisstore.c the only user of hiredis.
 */
#ifndef SUSPECT_REDISCONN_H
#define SUSPECT_REDISCONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include "redisutil.h"
#include "suspect_redis.h"

/* The scripts, generated from the lua directory (lua/scripts.c). */
extern const char redis_lua_decide[];
extern const char redis_lua_status[];
extern const char redis_lua_carry[];
extern const char redis_lua_unblock[];
extern const char redis_lua_settle[];

enum {
    SCRIPT_DECIDE,
    SCRIPT_STATUS,
    SCRIPT_CARRY,
    SCRIPT_UNBLOCK,
    SCRIPT_SETTLE,
    NSCRIPTS,
    SCRIPT_NONE = -1
};

#define REDIS_MAX_ARGS (16 + 5 * SUSPECT_MAX_IDENTITIES)
#define REDIS_SHA_LEN  40

typedef struct redis_pool redis_pool_t;

/* One thread's connection. */
typedef struct redis_conn {
    redis_pool_t *pool;
    redisContext *ctx; /* NULL while disconnected */
    bool used;         /* ctx has served a command */
    bool eof;          /* the last error was the server closing */
    bool connecting;   /* errors are about the connect itself */
    redis_ids_t ids;   /* hit ids of this connection */
    redis_backoff_t backoff;
    suspect_rc_t last_rc; /* the last connect error, while backing off */
    char last_err[SUSPECT_ERR_TEXT_MAX];
    char sha[NSCRIPTS][REDIS_SHA_LEN + 1];
    char *obuf; /* the encoded request, kept for the next one */
    size_t ocap;
    suspect_redis_stats_t stats; /* atomics */
    struct redis_conn *prev, *next;
} redis_conn_t;

/* The connections of one store, and where they go. */
struct redis_pool {
    redis_addr_t addr;
    struct timeval connect_tv, command_tv;
    unsigned command_timeout_ms;
    pthread_key_t tls;
    pthread_mutex_t mu;         /* guards conns and dead */
    redis_conn_t *conns;        /* every live connection */
    suspect_redis_stats_t dead; /* counters of freed connections */
};

/* One request: argv[0..argc) with lengths.  When nints > 0, an answer that
 * is an array of exactly nints integers is decoded into ints[] without
 * hiredis (the decision's path); anything else comes back as a reply. */
typedef struct redis_request {
    int script; /* SCRIPT_*: argv[0..1] are filled with EVALSHA sha */
    int argc;
    const char *argv[REDIS_MAX_ARGS];
    size_t len[REDIS_MAX_ARGS];
    size_t nints;
    int64_t *ints;
} redis_request_t;

/* Parses url and sets the pool up (nothing is connected yet).
 * SUSPECT_E_INVAL on a bad URL, SUSPECT_E_FULL without a pthread key. */
suspect_rc_t redis_pool_init(redis_pool_t *p, const char *url,
                             unsigned connect_ms, unsigned command_ms,
                             suspect_err_t *err);

/* Closes and frees every connection of p. */
void redis_pool_destroy(redis_pool_t *p);

/* Sums the counters of every connection, live or gone. */
void redis_pool_stats(redis_pool_t *p, suspect_redis_stats_t *out);

/* The calling thread's connection (created, not connected, on first use);
 * NULL when out of memory. */
redis_conn_t *redis_conn_get(redis_pool_t *p, suspect_err_t *err);

/* Appends an argument to rq. */
void redis_rq_arg(redis_request_t *rq, const char *s, size_t len);
void redis_rq_str(redis_request_t *rq, const char *s);

/*
 * Connects c if needed (respecting the backoff) and runs rq; *out gets the
 * reply, owned by the caller (NULL on failure, and when the answer was
 * decoded into rq->ints).  An EVALSHA answered
 * NOSCRIPT loads the script and runs once more; a connection the server had
 * closed before this call is replaced and rq sent once more.  Error replies
 * become SUSPECT_E_STORE "redis: <reply>".
 */
suspect_rc_t redis_call(redis_conn_t *c, redis_request_t *rq, redisReply **out,
                        suspect_err_t *err);

#endif
