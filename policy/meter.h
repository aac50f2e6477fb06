/*
 * meter.h - the constant-memory algorithms, as a store keeps them.
 *
 * An action counted by a token bucket or a two-window sliding counter
 * (suspect_rule_t.algorithm) keeps a few numbers per identity instead of
 * a hit per hit: a suspect_meter_t.  A store loads it, asks
 * suspect_meter_read() for the window state suspect_policy_evaluate()
 * decides on (tokens in use as in_window, when the request's cost fits as
 * free_at_ms), and, when the plan records, calls suspect_meter_take() and
 * writes it back, under the same atomicity as the sliding log.  The lock
 * and offence counts stay where they are for every algorithm.
 *
 * Token bucket (GCRA): tokens come back one per interval = LimitDuration /
 * LimitCount (in microseconds, rounded down), up to the capacity (Burst,
 * else LimitCount).  at is the theoretical arrival time: the moment the
 * bucket is full again (epoch us; at or before now = full).  A request of
 * cost c fits when at - now + c * interval <= capacity * interval, and
 * then moves at to max(at, now) + c * interval.  Exact: one number says
 * it all, whatever the capacity.
 *
 * Two-window sliding counter: at is the start of the current fixed window
 * (epoch ms, a multiple of LimitDuration), cur the hits taken in it, prev
 * those of the window before.  At e ms into the current window the count
 * is ceil(prev * (W - e) / W) + cur: the previous window's hits are taken
 * as spread evenly over it.  Approximate both ways: with hits bunched at
 * the end of a window it lets through up to twice LimitCount in some
 * stretch of LimitDuration; with hits bunched at its start it denies while
 * fewer than LimitCount are truly that recent.
 *
 * The lua/bucket.lua script mirrors these functions for Redis.
 */
#ifndef SUSPECT_METER_H
#define SUSPECT_METER_H

#include <stdint.h>

#include "suspect_policy.h"

typedef struct suspect_meter {
    int64_t at;   /* bucket: full again at (epoch us, 0 = full); counter:
                     the current window's start (epoch ms) */
    int64_t cur;  /* counter: hits in the current window */
    int64_t prev; /* counter: hits in the window before */
} suspect_meter_t;

/* True when rule counts with a meter rather than a log of hits. */
static inline bool suspect_rule_metered(const suspect_rule_t *rule)
{
    return rule->algorithm == SUSPECT_ALGO_BUCKET ||
           rule->algorithm == SUSPECT_ALGO_COUNTER;
}

/* The bucket's interval between two tokens, in us (>= 1). */
int64_t suspect_meter_interval_us(const suspect_rule_t *rule);

/* Fills st->in_window (tokens or hits in use at now) and st->free_at_ms
 * (when rule's cost fits again; 0 when it fits now) from m; the other
 * fields of st are the caller's. */
void suspect_meter_read(const suspect_rule_t *rule, const suspect_meter_t *m,
                        int64_t now_ms, suspect_window_state_t *st);

/* Takes units tokens (hits) at at_ms, the moment they were decided (now,
 * or for a carried hit the moment it was admitted). */
void suspect_meter_take(const suspect_rule_t *rule, suspect_meter_t *m,
                        int64_t at_ms, uint32_t units);

/* Gives back units tokens (hits) taken at at_ms: a reservation whose
 * attempt succeeded.  What already came back stays back. */
void suspect_meter_give(const suspect_rule_t *rule, suspect_meter_t *m,
                        int64_t at_ms, uint32_t units);

/* Makes room for one request of rule's cost at now (an unblock); returns
 * the tokens (hits) it gave back. */
uint32_t suspect_meter_make_room(const suspect_rule_t *rule, suspect_meter_t *m,
                                 int64_t now_ms);

/* When m says nothing any more (a full bucket, an empty counter): the
 * moment a store may forget it, epoch ms. */
int64_t suspect_meter_end_ms(const suspect_rule_t *rule,
                             const suspect_meter_t *m);

#endif
