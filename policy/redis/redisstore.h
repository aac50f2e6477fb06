/*
 * redisstore.h - the Redis store's structure (redisstore.c) and the
 * write-back of the failover wrapper's outage journal (redisback.c, for
 * rediscarry.c's carry operation), which its table names.  Private to the
 * library.
 */
#ifndef SUSPECT_REDISSTORE_H
#define SUSPECT_REDISSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "redisroute.h"
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
 * EVALSHA of lua/carry.lua (one or two per identity on a Cluster): each
 * lock unless Redis holds a longer one, each hit still in its window;
 * *locks and *hits get what was written.  Returns the store's error,
 * SUSPECT_E_INVAL when n is over REDIS_CARRY_CHUNK.  store is a Redis store.
 */
suspect_rc_t redis_store_carry(suspect_store_t *store,
                               const suspect_carry_t *idents, size_t n,
                               int64_t now_ms, uint64_t *locks, uint64_t *hits,
                               suspect_err_t *err);

/*
 * Starts the calling thread's operation that the write-back of the
 * journal (redis_store_carry(), in turn) and the decision that follows it
 * share: the write-back runs against the deadline returned (a
 * redis_deadline_t), and so does the thread's next operation.  0 (no
 * deadline) when the thread has no connections (out of memory).
 * redis_store_carry_end() when no decision follows.  The Redis store's
 * carry_begin and carry_end.
 */
int64_t redis_store_carry_begin(suspect_store_t *store);
void redis_store_carry_end(suspect_store_t *store);

#endif
