/*
 * redisstore.h - the Redis store's structure (redisstore.c) and what the
 * rest of its room needs of it: the identity a lock names, and the
 * write-back of the failover wrapper's outage journal (redisback.c, for
 * rediscarry.c).  Private to the library.
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

/* The identity part of key k (after the prefix and "Action:", inside the
 * hash tag's braces of the Cluster layout): the lock's value, as the .NET
 * code writes it; *len gets its length.  Points into k. */
const char *redis_identity_of(const redisstore_t *rs, const suspect_key_t *k,
                              size_t *len);

/*
 * Writes idents[0..n) (n <= REDIS_CARRY_CHUNK) to the Redis store with one
 * EVALSHA of lua/carry.lua (one or two per identity on a Cluster): each
 * lock unless Redis holds a longer one, each hit still in its window;
 * *locks and *hits get what was written.  Returns the store's error,
 * SUSPECT_E_INVAL when store is not a Redis store.
 */
suspect_rc_t redis_store_carry(suspect_store_t *store,
                               const redis_carry_ident_t *idents, size_t n,
                               int64_t now_ms, uint64_t *locks, uint64_t *hits,
                               suspect_err_t *err);

/*
 * Starts the calling thread's operation that the write-back of the
 * journal (redis_store_carry(), in turn) and the decision that follows it
 * share: the write-back runs against the deadline returned, and so does
 * the thread's next operation.  0 (no deadline) when store is not a Redis
 * store.  redis_store_carry_end() when no decision follows.
 */
redis_deadline_t redis_store_carry_begin(suspect_store_t *store);
void redis_store_carry_end(suspect_store_t *store);

#endif
