/*
 * redisscan.h - what the lock listing of the Redis store (redisscan.c,
 * suspect_redis_foreach_locked) needs from redisstore.c.  Private to the
 * library.
 */
#ifndef SUSPECT_REDISSCAN_H
#define SUSPECT_REDISSCAN_H

#include "redisconn.h"
#include "suspect_redis.h"

/* The connection pool of a Redis store and (into *clock) its clock, or
 * NULL when store is not a Redis store.  Borrowed from the store. */
redis_pool_t *redis_store_pool(suspect_store_t *store,
                               suspect_redis_clock_t *clock);

#endif
