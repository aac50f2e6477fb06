/*
 * redismeter.h - token buckets and sliding counters on the Redis store
 * (redismeter.c, lua/bucket.lua): the metered rules' decisions,
 * reservations, settling, status and unblock, on one server or across the
 * slots of a Cluster (redismeterx.c).  Private to the library.
 */
#ifndef SUSPECT_REDISMETER_H
#define SUSPECT_REDISMETER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meter.h"
#include "redisstore.h"

/* Integers lua/bucket.lua answers per identity of a decision, after now
 * and allowed: decide.lua's REDIS_DECIDE_PER, then the meter it read and
 * the meter after (at, cur, prev each). */
#define REDIS_METER_PER (REDIS_DECIDE_PER + 6)

/* An identity's meter key (window key + ":tb" or ":sc"; on a Cluster
 * "{<window>}:tb" when the plain name would hash elsewhere) and the set
 * of journal members carried into it (meter key + ":carried"). */
typedef struct redis_meter_key {
    char meter[SUSPECT_KEY_MAX + 16];
    char carried[SUSPECT_KEY_MAX + 24];
    size_t meter_len, carried_len;
} redis_meter_key_t;

void redis_meter_key(const suspect_key_t *k, uint32_t algorithm, bool cluster,
                     redis_meter_key_t *out);

/* lua/bucket.lua's fixed arguments (ARGV[1..12]) for rule, formatted. */
typedef struct redis_meter_args {
    char now[24], algo[24], limit[24], window[24], cap[24], cost[24], block[24],
        pct[24], max[24], period[24];
    size_t now_len; /* 0: Redis TIME (until an answer fixes it) */
} redis_meter_args_t;

void redis_meter_args(const suspect_rule_t *rule, bool server_clock,
                      int64_t now_ms, redis_meter_args_t *a);

/* Appends EVALSHA bucket.lua, nkeys keys[0..nkeys), ARGV[1..12] for op
 * (apart: the identities' locks live in other slots) to rq. */
void redis_meter_head(redis_request_t *rq, const redis_meter_args_t *a,
                      const char *op, bool apart, const char *const *keys,
                      const size_t *lens, size_t nkeys);

/* True when v (one identity of a decision, REDIS_METER_PER integers) is
 * what meter.c reads and, when recorded, takes at now: bucket.lua and
 * meter.c agree. */
bool redis_meter_agrees(const suspect_rule_t *rule, int64_t now_ms,
                        const int64_t *v, bool recorded);

/* A metered decision, or a reservation (the cost taken at once: settling
 * a success gives it back), whose keys share a slot on a Cluster; *now_out
 * the decision's time. */
suspect_rc_t redis_meter_decide(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                int64_t now_ms, suspect_decision_t *out,
                                int64_t *now_out, suspect_err_t *err);

/* Settles a metered reservation: gives its cost back on every identity
 * unless it counts (suspect_policy_settle_counts()).  Not idempotent: a
 * ticket is settled once (store.c). */
suspect_rc_t redis_meter_settle(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                const suspect_ticket_t *ticket, bool failed,
                                int64_t now_ms, suspect_err_t *err);

/* Gives rule's cost taken at at_ms back on keys[0..n), each in its own
 * call on a Cluster (errors stop it). */
suspect_rc_t redis_meter_give(redisstore_t *rs, redis_thread_t *t,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              const redis_meter_args_t *a, int64_t at_ms,
                              suspect_err_t *err);

suspect_rc_t redis_meter_status(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *key, int64_t now_ms,
                                suspect_status_t *out, suspect_err_t *err);

suspect_rc_t redis_meter_unblock(redisstore_t *rs, redis_thread_t *t,
                                 const suspect_rule_t *rule,
                                 const suspect_key_t *key, int64_t now_ms,
                                 suspect_unblock_t *out, suspect_err_t *err);

/* Takes the hits of ident (a metered rule's, journaled by the failover
 * wrapper during an outage) into its meter at their own times, each once
 * (bucket.lua "carry"; its lock is carry.lua's); *hits gets those taken
 * now.  slot: the window's on a Cluster, else -1. */
suspect_rc_t redis_meter_carry(redisstore_t *rs, redis_thread_t *t,
                               const suspect_carry_t *ident, int slot,
                               int64_t now_ms, uint64_t *hits,
                               suspect_err_t *err);

/* lock.lua on key's lock (in slot ls): its end into *lu, Redis's now into
 * a when it keeps the clock and a has none yet. */
suspect_rc_t redis_meter_read_lock(redis_thread_t *t, redis_meter_args_t *a,
                                   const suspect_key_t *key, int ls,
                                   int64_t *lu, suspect_err_t *err);

/* The cross-slot decision (redismeterx.c): each identity in turn takes
 * its cost in its own slot; the ones taken are given back when a later
 * one denies. */
suspect_rc_t redis_meter_cross(redisstore_t *rs, redis_thread_t *t,
                               const suspect_rule_t *rule,
                               const suspect_key_t *keys, size_t n,
                               int64_t now_ms, suspect_decision_t *out,
                               int64_t *now_out, suspect_err_t *err);

#endif
