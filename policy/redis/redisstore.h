/*
 * redisstore.h - what the Redis store (redisstore.c) gives the rest of its
 * room: the write-back of the failover wrapper's outage journal
 * (rediscarry.c) in one script call per chunk.  Private to the library.
 */
#ifndef SUSPECT_REDISSTORE_H
#define SUSPECT_REDISSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "redisconn.h"
#include "redisutil.h"
#include "suspect_store_impl.h"

/* The Redis store (its first member a suspect_store_t): its connections,
 * its clock and the length of the key prefix. */
typedef struct redisstore {
    suspect_store_t base;
    redis_pool_t pool;
    suspect_redis_clock_t clock;
    size_t prefix_len;
} redisstore_t;

/*
 * Writes idents[0..n) (n <= REDIS_CARRY_CHUNK) to the Redis store with one
 * EVALSHA of lua/carry.lua: each lock unless Redis holds a longer one, each
 * hit still in its window; *locks and *hits get what was written.  Returns
 * the store's error, SUSPECT_E_INVAL when store is not a Redis store.
 */
suspect_rc_t redis_store_carry(suspect_store_t *store,
                               const redis_carry_ident_t *idents, size_t n,
                               int64_t now_ms, uint64_t *locks, uint64_t *hits,
                               suspect_err_t *err);

#endif
