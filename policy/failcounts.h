/*
 * failcounts.h - the counts the failover wrapper's primary last reported,
 * kept to start its local store from them when the primary fails
 * (failcounts.c).  Private to the library.
 */
#ifndef SUSPECT_FAILCOUNTS_H
#define SUSPECT_FAILCOUNTS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "siphash.h"
#include "suspect_policy.h"
#include "suspect_store.h"

/* Cells of the table: a power of two (40 bytes each: 2.5 MiB). */
#define FAIL_COUNT_CELLS 65536

typedef struct fail_count fail_count_t;

typedef struct fail_counts {
    suspect_siphash_key_t secret;
    pthread_mutex_t mu;
    fail_count_t *cells; /* FAIL_COUNT_CELLS */
} fail_counts_t;

/* An empty table keyed by secret; -1 when out of memory. */
int fail_counts_init(fail_counts_t *c, const suspect_siphash_key_t *secret);

/* Frees what c holds. */
void fail_counts_free(fail_counts_t *c);

/* Notes what the primary's decision d (SUSPECT_OK) on keys[0..n) under
 * rule at now says of each identity's count in its window. */
void fail_counts_note(fail_counts_t *c, const suspect_rule_t *rule,
                      const suspect_key_t *keys, size_t n, int64_t now_ms,
                      const suspect_decision_t *d);

/* Gives local at least the count noted for each of keys[0..n) that is
 * still in its window at now (its prefill operation: a local store without
 * one, not a memory store, is left as it is). */
void fail_counts_prefill(fail_counts_t *c, suspect_store_t *local,
                         const suspect_rule_t *rule, const suspect_key_t *keys,
                         size_t n, int64_t now_ms);

/* Forgets what was noted for key (its window was reset or unblocked). */
void fail_counts_forget(fail_counts_t *c, const suspect_key_t *key);

#endif
