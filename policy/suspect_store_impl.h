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
 */
#ifndef SUSPECT_STORE_IMPL_H
#define SUSPECT_STORE_IMPL_H

#include "suspect_store.h"

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
} suspect_store_ops_t;

struct suspect_store {
    const suspect_store_ops_t *ops;
};

#endif
