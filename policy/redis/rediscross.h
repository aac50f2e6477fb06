/*
 * rediscross.h - decisions and reads whose keys live in several slots of
 * a Redis Cluster (rediscross.c): several identities, or the seed's key
 * layout, whose window and lock hash apart.  Private to the library.
 */
#ifndef SUSPECT_REDISCROSS_H
#define SUSPECT_REDISCROSS_H

#include "redisroute.h"
#include "suspect_policy.h"
#include "suspect_store.h"

/* One decision or read, as the store hands it over. */
typedef struct redis_cross {
    redis_thread_t *t;
    const suspect_rule_t *rule;
    const suspect_key_t *keys;
    size_t n;
    const char *ident[SUSPECT_MAX_IDENTITIES]; /* each lock's value */
    size_t ident_len[SUSPECT_MAX_IDENTITIES];
    bool server_clock; /* "" for now: Redis TIME */
    int64_t now_ms;
    int64_t ttl_ms;     /* a reservation's slot life (0: a decision) */
    const char *member; /* the hit's id, or the ticket's */
    size_t member_len;
} redis_cross_t;

/* True when the window and lock keys of keys[0..n) do not all hash to one
 * slot; *slot gets the slot of the first window key. */
bool redis_cross_needed(const suspect_key_t *keys, size_t n, int *slot);

/*
 * Decides x across slots: each identity's hit reserved in its own slot as
 * a reservation (decide.lua; lock.lua first and a SET after for a lock
 * in another slot), every reservation taken back when one identity
 * denies; with x->ttl_ms, a reservation whose slots stay to be settled.
 * Never admits more than the limit for any identity; a reservation taken
 * back may have denied a concurrent request (busy) meanwhile.  *out as the
 * store's decide, *now_ms the decision's time; the error of the first call
 * that failed (reservations made before it are taken back).
 */
suspect_rc_t redis_cross_decide(const redis_cross_t *x, suspect_decision_t *out,
                                int64_t *now_ms, suspect_err_t *err);

/* The status of x->keys[0] when its window and lock live in different
 * slots: lock.lua, then status.lua on the window's keys alone; v gets
 * status.lua's seven integers. */
suspect_rc_t redis_cross_status(const redis_cross_t *x, int64_t v[7],
                                suspect_err_t *err);

/* Unblocks x->keys[0] when its window and lock live in different slots:
 * lock.lua and DEL on the lock's slot, then unblock.lua on the window
 * alone. */
suspect_rc_t redis_cross_unblock(const redis_cross_t *x, suspect_unblock_t *out,
                                 suspect_err_t *err);

#endif
