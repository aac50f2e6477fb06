/*
 * redissettle.h - suspect_store_settle() on the Redis store (redissettle.c).
 */
#ifndef SUSPECT_REDISSLOTS_H
#define SUSPECT_REDISSLOTS_H

#include "suspect_store.h"

/* Settles ticket's reservation on keys[0..n) (see suspect_store.h): one
 * EVALSHA of lua/settle.lua. */
suspect_rc_t redis_store_settle(suspect_store_t *store,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                const suspect_ticket_t *ticket, bool failed,
                                int64_t now_ms, suspect_err_t *err);

#endif
