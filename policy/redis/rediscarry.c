/*
 * rediscarry.c - the Redis store's carry operation: the failover wrapper's
 * outage journal (the core's carry.c) written back to a Redis primary.
 *
 * While Redis fails and the fail mode is "local", the wrapper journals the
 * hits its local store admits and the locks it holds; when Redis answers
 * again, the journal comes here through the store interface
 * (suspect_store_ops_t.carry), so the identities this host locked stay
 * locked on every host and the hits it admitted count everywhere.
 *
 * Sending: up to REDIS_CARRY_CHUNK identities per EVALSHA of lua/carry.lua
 * (redisback.c: locks and hits together, each hit with the member it was
 * journaled with, so a retry adds it once).  A failed chunk stops; the
 * wrapper journals the rest again for the next time Redis answers.  The
 * write-back is part of the decision it comes before: both run against one
 * deadline (redis_store_carry_begin(), the store's carry_begin).
 */
#include "rediscarry.h"

#include "redisstore.h"

suspect_rc_t redis_carry(suspect_store_t *store, const suspect_carry_t *idents,
                         size_t n, int64_t now_ms, size_t *done,
                         uint64_t *locks, uint64_t *hits, suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    *done = 0;
    while (*done < n && rc == SUSPECT_OK) {
        size_t k =
            n - *done < REDIS_CARRY_CHUNK ? n - *done : REDIS_CARRY_CHUNK;

        rc = redis_store_carry(store, idents + *done, k, now_ms, locks, hits,
                               err);
        *done += rc == SUSPECT_OK ? k : 0;
    }
    return rc;
}
