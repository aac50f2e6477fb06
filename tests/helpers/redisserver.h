/*
 * redisserver.h - a private redis-server for tests and benches.
 *
 * test_redis_start() runs `redis-server --save "" --appendonly no` in a
 * fresh temp dir, listening on a unix socket there and, when asked, on a
 * free TCP port of 127.0.0.1, and waits (with a deadline) until it answers
 * PING.  A missing redis-server binary is an error, never a skip.  The
 * helpers talk to it with hiredis over the unix socket.
 */
#ifndef SUSPECT_TESTS_REDISSERVER_H
#define SUSPECT_TESTS_REDISSERVER_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <sys/types.h>

#include "stores.h"
#include "suspect_failover.h"
#include "suspect_redis.h"

typedef struct test_redis {
    pid_t pid; /* 0 when not running */
    char *dir; /* temp dir holding the socket and the log */
    char sock[512];
    int port;          /* TCP port on 127.0.0.1, 0 = none */
    char password[64]; /* requirepass, "" = none */
    char url[600];     /* unix:///.../redis.sock[?password=...] */
    redisContext *ctx; /* the helpers' own connection */
    /* More redis-server arguments (NULL-terminated, borrowed; NULL =
     * none), kept for restarts. */
    const char *const *extra;
} test_redis_t;

/* Starts a server (tcp: also listen on a free loopback port; password:
 * NULL or requirepass).  0 on success, else -1 with a message on stderr. */
int test_redis_start(test_redis_t *r, bool tcp, const char *password);

/* As test_redis_start, with more redis-server arguments (extra,
 * NULL-terminated, borrowed until the server is stopped), given after the
 * helper's own so that they win. */
int test_redis_start_ex(test_redis_t *r, bool tcp, const char *password,
                        const char *const *extra);

/* Stops the server (SIGKILL), reaps it and removes its directory. */
void test_redis_stop(test_redis_t *r);

/* Kills the server with SIGKILL and reaps it; the directory stays. */
void test_redis_kill9(test_redis_t *r);

/* Starts the server again on the same socket and port; 0 on success. */
int test_redis_restart(test_redis_t *r);

/* Runs a command (redisCommand format) on the helpers' connection,
 * reconnecting when needed; the reply is the caller's, NULL on failure. */
redisReply *test_redis_cmd(test_redis_t *r, const char *fmt, ...);

/* Runs a command expecting an integer reply; LLONG_MIN on failure. */
long long test_redis_int(test_redis_t *r, const char *fmt, ...);

/* The calls of a command in INFO commandstats (e.g. "evalsha"). */
long long test_redis_calls(test_redis_t *r, const char *command);

/* A Redis store on url, timeout_ms to connect and per command, the given
 * clock and key prefix (NULL: none); NULL, said on stderr, when it cannot
 * be made.  The caller frees it. */
suspect_store_t *test_redis_store(const char *url, unsigned timeout_ms,
                                  suspect_redis_clock_t clock,
                                  const char *prefix);

/* That store (the caller's clock, no prefix) behind the failover wrapper
 * with fopts (NULL: the defaults) and a fresh memory store as its local
 * one; NULL, said on stderr, when any of them cannot be made. */
suspect_store_t *test_redis_failover(const char *url, unsigned timeout_ms,
                                     const suspect_failover_opts_t *fopts);

/* A free TCP port of 127.0.0.1 (bound, read, closed), or -1. */
int test_free_port(void);

/* The "redis" kind of the shared scenario suites (tests/helpers/stores.c). */
extern const test_store_kind_t test_redis_kind;

#endif
