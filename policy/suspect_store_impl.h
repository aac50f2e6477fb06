/*
 * suspect_store_impl.h - what a store backend implements.
 *
 * A backend allocates a struct whose first member is a suspect_store_t and
 * points its ops at a static table.  The generic functions in store.c check
 * arguments (rule, key count, duplicate keys) before calling the backend, so
 * backends may assume 1 <= n <= SUSPECT_MAX_IDENTITIES and distinct keys.
 * The last ops (unblock, foreach_locked, reserve, settle, supports) are
 * optional; a backend that leaves them NULL answers those calls with
 * SUSPECT_E_INVAL.  reserve gets a ticket whose id store.c drew (unique,
 * nonzero) and fills at_ms and end_ms.  supports says which of the
 * features beyond the seed's (SUSPECT_STORE_CAN_*) the store gives; NULL
 * = none of them.
 *
 * The failover wrapper (suspect_failover.h) asks two more things of its
 * stores, both optional: its local store prefills an identity with the count
 * the primary last reported (prefill: without it, the local store starts
 * from zero), and its primary takes back, whole, the locks and hits the
 * wrapper decided locally during an outage (carry, with carry_begin and
 * carry_end: without it, the wrapper writes the locks alone, by status
 * and block).
 */
#ifndef SUSPECT_STORE_IMPL_H
#define SUSPECT_STORE_IMPL_H

#include "suspect_store.h"

/* A hit the failover wrapper admitted locally, to be carried back. */
#define SUSPECT_CARRY_MEMBER_LEN 36
typedef struct suspect_carry_hit {
    int64_t at_ms;
    /* Unique, fixed when the hit was journaled: carrying it twice (a retry
     * after a write that did happen) must add it once. */
    char member[SUSPECT_CARRY_MEMBER_LEN + 1];
    uint32_t units; /* a metered rule's cost (tokens taken); 0 = 1 */
} suspect_carry_hit_t;

/* One identity as carried back: its lock and the hits admitted for it. */
typedef struct suspect_carry {
    const char *key;       /* the lock key (window key, ":locked"), NUL */
    size_t window_len;     /* the window key is key[0..window_len) */
    int64_t lock_until_ms; /* 0 = no lock to carry */
    int64_t window_ms;     /* the rule's window, for the hits */
    /* A metered rule's (meter.h) algorithm, limit and burst: its
     * hits are taken into the identity's meter at their times; 0 = the
     * sliding log. */
    uint32_t algorithm, limit_count, burst;
    size_t nhits;
    const suspect_carry_hit_t *hits; /* in time order */
} suspect_carry_t;

typedef struct suspect_store_ops {
    const char *name;
    suspect_rc_t (*decide)(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           suspect_decision_t *out, suspect_err_t *err);
    suspect_rc_t (*status)(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *key, int64_t now_ms,
                           suspect_status_t *out, suspect_err_t *err);
    suspect_rc_t (*reset)(suspect_store_t *store, const suspect_key_t *key,
                          unsigned what, suspect_err_t *err);
    suspect_rc_t (*block)(suspect_store_t *store, const suspect_key_t *key,
                          int64_t now_ms, int64_t until_ms, suspect_err_t *err);
    void (*free)(suspect_store_t *store);
    /* Optional (NULL: the call fails with SUSPECT_E_INVAL). */
    suspect_rc_t (*unblock)(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *key, int64_t now_ms,
                            suspect_unblock_t *out, suspect_err_t *err);
    suspect_rc_t (*foreach_locked)(suspect_store_t *store, const char *prefix,
                                   int64_t now_ms, suspect_locked_fn fn,
                                   void *arg, suspect_err_t *err);
    suspect_rc_t (*reserve)(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *keys, size_t n, int64_t now_ms,
                            int64_t ttl_ms, suspect_decision_t *out,
                            suspect_ticket_t *ticket, suspect_err_t *err);
    suspect_rc_t (*settle)(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n,
                           const suspect_ticket_t *ticket, bool failed,
                           int64_t now_ms, suspect_err_t *err);
    bool (*supports)(const suspect_store_t *store, unsigned what);
    /* Optional, for the failover wrapper (above). */
    /* Makes key's window under rule hold at least hits hits at now (at
     * most rule->limit_count): the missing ones are added at at_ms, among
     * the hits it has in order.  Nothing when at_ms is not in the window at
     * now.  SUSPECT_E_NOMEM, SUSPECT_E_FULL. */
    suspect_rc_t (*prefill)(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *key, uint32_t hits,
                            int64_t at_ms, int64_t now_ms, suspect_err_t *err);
    /* Writes idents[0..n) in order, until a write fails: each lock unless
     * the store holds a longer one, each hit still in its window, once.
     * *done gets the identities written, *locks and *hits are increased
     * by what was.  Returns the first error. */
    suspect_rc_t (*carry)(suspect_store_t *store, const suspect_carry_t *idents,
                          size_t n, int64_t now_ms, size_t *done,
                          uint64_t *locks, uint64_t *hits, suspect_err_t *err);
    /* Starts the calling thread's operation that a carry and the decision
     * after it share, and returns its deadline (CLOCK_MONOTONIC ns; 0 =
     * none); carry_end ends it when no decision follows. */
    int64_t (*carry_begin)(suspect_store_t *store);
    void (*carry_end)(suspect_store_t *store);
} suspect_store_ops_t;

struct suspect_store {
    const suspect_store_ops_t *ops;
};

#endif
