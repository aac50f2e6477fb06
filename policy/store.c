/*
 * store.c - the generic side of the store interface: argument checks that
 * every backend can then rely on, and dispatch through the ops table.
 */
#include "suspect_store_impl.h"

#include <string.h>

#include "random.h"

/* SUSPECT_OK when rule's algorithm, burst and cost make sense and store
 * can count that way. */
static suspect_rc_t check_algorithm(const suspect_store_t *store,
                                    const suspect_rule_t *rule,
                                    suspect_err_t *err)
{
    bool metered = rule->algorithm == SUSPECT_ALGO_BUCKET ||
                   rule->algorithm == SUSPECT_ALGO_COUNTER;

    if (rule->algorithm > SUSPECT_ALGO_COUNTER ||
        rule->burst > SUSPECT_LIMIT_COUNT_MAX ||
        (rule->burst != 0 && rule->algorithm != SUSPECT_ALGO_BUCKET) ||
        rule->cost > SUSPECT_COST_MAX || (rule->cost > 1 && !metered) ||
        suspect_rule_cost(rule) > suspect_rule_capacity(rule)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: algorithm, burst or cost out of range");
    }
    if (metered && !suspect_store_supports(store, SUSPECT_STORE_CAN_METER)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: %s keeps no token buckets or counters",
                               store->ops->name);
    }
    return SUSPECT_OK;
}

/* SUSPECT_OK when rule can be decided on by store, else SUSPECT_E_INVAL. */
static suspect_rc_t check_rule(const suspect_store_t *store,
                               const suspect_rule_t *rule, suspect_err_t *err)
{
    if (rule == NULL || rule->limit_count < 1 ||
        rule->limit_count > SUSPECT_LIMIT_COUNT_MAX || rule->window_s < 1 ||
        rule->window_s > SUSPECT_DURATION_MAX ||
        rule->block_s > SUSPECT_DURATION_MAX) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: rule out of range");
    }
    return check_algorithm(store, rule, err);
}

static bool same_key(const suspect_key_t *a, const suspect_key_t *b)
{
    return a->window_len == b->window_len &&
           memcmp(a->buf, b->buf, a->window_len) == 0;
}

/* SUSPECT_OK when keys[0..n-1] are 1 to SUSPECT_MAX_IDENTITIES well-formed,
 * distinct keys. */
static suspect_rc_t check_keys(const suspect_key_t *keys, size_t n,
                               suspect_err_t *err)
{
    if (keys == NULL || n < 1 || n > SUSPECT_MAX_IDENTITIES) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: 1 to %d identities per decision",
                               SUSPECT_MAX_IDENTITIES);
    }
    for (size_t i = 0; i < n; i++) {
        if (keys[i].window_len == 0 ||
            keys[i].lock_len != keys[i].window_len + SUSPECT_LOCK_SUFFIX_LEN ||
            keys[i].lock_len >= sizeof(keys[i].buf)) {
            return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                   "store: malformed key");
        }
        for (size_t j = 0; j < i; j++) {
            if (same_key(&keys[i], &keys[j])) {
                return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                       "store: identity %zu repeats %zu", i, j);
            }
        }
    }
    return SUSPECT_OK;
}

/* A denial that says nothing, for callers that ignore the return code. */
static void deny_blind(const suspect_rule_t *rule, suspect_decision_t *out)
{
    memset(out, 0, sizeof(*out));
    out->tripped = -1;
    out->limit = rule != NULL ? rule->limit_count : 0;
}

suspect_rc_t suspect_store_decide(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *keys, size_t n,
                                  int64_t now_ms, suspect_decision_t *out,
                                  suspect_err_t *err)
{
    suspect_rc_t rc;

    deny_blind(rule, out);
    if (store == NULL || now_ms < 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: no store or negative time");
    }
    rc = check_rule(store, rule, err);
    if (rc == SUSPECT_OK) {
        rc = check_keys(keys, n, err);
    }
    if (rc == SUSPECT_OK) {
        rc = store->ops->decide(store, rule, keys, n, now_ms, out, err);
    }
    if (rc != SUSPECT_OK) {
        deny_blind(rule, out);
    }
    return rc;
}

suspect_rc_t suspect_store_status(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *key, int64_t now_ms,
                                  suspect_status_t *out, suspect_err_t *err)
{
    suspect_rc_t rc;

    memset(out, 0, sizeof(*out));
    if (store == NULL || now_ms < 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: no store or negative time");
    }
    rc = check_rule(store, rule, err);
    if (rc == SUSPECT_OK) {
        rc = check_keys(key, 1, err);
    }
    return rc != SUSPECT_OK
               ? rc
               : store->ops->status(store, rule, key, now_ms, out, err);
}

suspect_rc_t suspect_store_reset(suspect_store_t *store,
                                 const suspect_key_t *key, unsigned what,
                                 suspect_err_t *err)
{
    suspect_rc_t rc;

    if (store == NULL || what == 0 || (what & ~(unsigned)SUSPECT_RESET_ALL)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: reset needs a store and what to clear");
    }
    rc = check_keys(key, 1, err);
    return rc != SUSPECT_OK ? rc : store->ops->reset(store, key, what, err);
}

suspect_rc_t suspect_store_block(suspect_store_t *store,
                                 const suspect_key_t *key, int64_t now_ms,
                                 int64_t until_ms, suspect_err_t *err)
{
    suspect_rc_t rc;

    if (store == NULL || now_ms < 0 || until_ms <= now_ms) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: a block must end after now");
    }
    rc = check_keys(key, 1, err);
    return rc != SUSPECT_OK
               ? rc
               : store->ops->block(store, key, now_ms, until_ms, err);
}

suspect_rc_t suspect_store_unblock(suspect_store_t *store,
                                   const suspect_rule_t *rule,
                                   const suspect_key_t *key, int64_t now_ms,
                                   suspect_unblock_t *out, suspect_err_t *err)
{
    suspect_rc_t rc;

    memset(out, 0, sizeof(*out));
    if (store == NULL || now_ms < 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: no store or negative time");
    }
    if (store->ops->unblock == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store %s: cannot unblock", store->ops->name);
    }
    rc = check_rule(store, rule, err);
    if (rc == SUSPECT_OK) {
        rc = check_keys(key, 1, err);
    }
    return rc != SUSPECT_OK
               ? rc
               : store->ops->unblock(store, rule, key, now_ms, out, err);
}

suspect_rc_t suspect_store_foreach_locked(suspect_store_t *store,
                                          const char *prefix, int64_t now_ms,
                                          suspect_locked_fn fn, void *arg,
                                          suspect_err_t *err)
{
    if (store == NULL || fn == NULL || now_ms < 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: no store, callback or time");
    }
    if (store->ops->foreach_locked == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store %s: cannot list its locks",
                               store->ops->name);
    }
    return store->ops->foreach_locked(store, prefix != NULL ? prefix : "",
                                      now_ms, fn, arg, err);
}

/* A ticket id into *id: unique in practice across processes and hosts (a
 * 64-bit random start per thread, then a splitmix64 sequence), never 0.
 * SUSPECT_E_IO when the thread's start cannot be drawn (random.h). */
static suspect_rc_t ticket_id(uint64_t *id, suspect_err_t *err)
{
    static __thread uint64_t state;
    uint64_t z;

    if (state == 0) {
        suspect_rc_t rc = suspect_random_bytes(&state, sizeof(state), err);

        if (rc != SUSPECT_OK) {
            state = 0;
            return rc;
        }
    }
    z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    *id = z != 0 ? z : 1;
    return SUSPECT_OK;
}

suspect_rc_t suspect_store_reserve(suspect_store_t *store,
                                   const suspect_rule_t *rule,
                                   const suspect_key_t *keys, size_t n,
                                   int64_t now_ms, int64_t ttl_ms,
                                   suspect_decision_t *out,
                                   suspect_ticket_t *ticket, suspect_err_t *err)
{
    suspect_rc_t rc;

    deny_blind(rule, out);
    memset(ticket, 0, sizeof(*ticket));
    if (store == NULL || now_ms < 0 || ttl_ms < 1 ||
        ttl_ms > (int64_t)SUSPECT_DURATION_MAX * 1000) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: no store, negative time or bad ttl");
    }
    if (store->ops->reserve == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store %s: cannot hold reservations",
                               store->ops->name);
    }
    rc = check_rule(store, rule, err);
    if (rc == SUSPECT_OK) {
        rc = check_keys(keys, n, err);
    }
    if (rc == SUSPECT_OK) {
        rc = ticket_id(&ticket->id, err);
    }
    if (rc == SUSPECT_OK) {
        rc = store->ops->reserve(store, rule, keys, n, now_ms, ttl_ms, out,
                                 ticket, err);
    }
    if (rc != SUSPECT_OK) {
        deny_blind(rule, out);
    }
    if (rc != SUSPECT_OK || !out->allowed) {
        memset(ticket, 0, sizeof(*ticket));
    }
    return rc;
}

suspect_rc_t suspect_store_settle(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *keys, size_t n,
                                  const suspect_ticket_t *ticket, bool failed,
                                  int64_t now_ms, suspect_err_t *err)
{
    suspect_rc_t rc;

    if (ticket == NULL || ticket->id == 0) {
        return SUSPECT_OK;
    }
    if (store == NULL || now_ms < 0 || store->ops->settle == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "store: cannot settle here");
    }
    rc = check_rule(store, rule, err);
    if (rc == SUSPECT_OK) {
        rc = check_keys(keys, n, err);
    }
    return rc != SUSPECT_OK ? rc
                            : store->ops->settle(store, rule, keys, n, ticket,
                                                 failed, now_ms, err);
}

bool suspect_store_supports(const suspect_store_t *store, unsigned what)
{
    if (store == NULL) {
        return false;
    }
    if ((what & SUSPECT_STORE_CAN_RESERVE) &&
        (store->ops->reserve == NULL || store->ops->settle == NULL)) {
        return false;
    }
    return what == 0 ||
           (store->ops->supports != NULL && store->ops->supports(store, what));
}

bool suspect_store_can_reserve(const suspect_store_t *store)
{
    return suspect_store_supports(store, SUSPECT_STORE_CAN_RESERVE);
}

const char *suspect_store_name(const suspect_store_t *store)
{
    return store != NULL ? store->ops->name : "none";
}

void suspect_store_free(suspect_store_t *store)
{
    if (store != NULL) {
        store->ops->free(store);
    }
}
