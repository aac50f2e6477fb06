/*
 * redisscan.h - the lock listing of the Redis store (redisscan.c), which
 * redisstore.c runs for suspect_redis_foreach_locked() on its own pool.
 * Private to the library.
 */
#ifndef SUSPECT_REDISSCAN_H
#define SUSPECT_REDISSCAN_H

#include "redisroute.h"
#include "suspect_redis.h"

/* Walks the locks live at now (the server's time with
 * SUSPECT_REDIS_CLOCK_SERVER) whose keys match match, over connections of
 * pool: see suspect_redis_foreach_locked() in suspect_redis.h. */
suspect_rc_t redis_scan_locked(redis_pool_t *pool, suspect_redis_clock_t clock,
                               const char *match, int64_t now_ms,
                               suspect_redis_locked_fn fn, void *ud,
                               suspect_err_t *err);

#endif
