/*
 * rediscarry.h - the Redis store's carry operation (rediscarry.c): how a
 * Redis primary takes back, whole, the locks and hits the failover wrapper
 * decided on its local store during an outage (the journal is the core's,
 * carry.h).  Private to the library.
 */
#ifndef SUSPECT_REDISCARRY_H
#define SUSPECT_REDISCARRY_H

#include <stddef.h>
#include <stdint.h>

#include "suspect_store_impl.h"

/*
 * suspect_store_ops_t.carry of the Redis store: writes idents[0..n) in
 * order, REDIS_CARRY_CHUNK identities per redis_store_carry() (one
 * EVALSHA of lua/carry.lua, or one or two per identity on a Cluster),
 * until one fails.  *done gets the identities written, *locks and *hits
 * are increased by what was.  Returns the first error.
 */
suspect_rc_t redis_carry(suspect_store_t *store, const suspect_carry_t *idents,
                         size_t n, int64_t now_ms, size_t *done,
                         uint64_t *locks, uint64_t *hits, suspect_err_t *err);

#endif
