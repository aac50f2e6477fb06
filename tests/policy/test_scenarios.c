/*
 * test_scenarios.c - the seed's scenarios, end to end through the store
 * interface, on every store kind (suite "scenarios-<kind>",
 * tests/helpers/stores.c: memory, lmdb, redis, failover, and Redis Cluster
 * with hash-tagged keys and with the seed's), which must all give the same
 * decisions.
 *
 * Time is a fake clock: T0 plus offsets in ms.  T0 is deliberately not a
 * multiple of any window, so an implementation with fixed windows (buckets
 * aligned to the epoch) fails the boundary tests.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "helpers/stores.h"
#include "suites.h"
#include "helpers/util.h"

#define T0  1710000012345LL
#define SEC 1000LL

static const test_store_kind_t *kind;
static suspect_store_t *store;

static const suspect_rule_t bank = {
    "BankAccountUpdate", 2, 120, 0, 0, 0, 0, 0, 0, 0, 0};
static const suspect_rule_t forgot = {
    "SecureForgotAccount", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0};
static const suspect_rule_t login = {
    "SecureLoginForceForgotAccount", 2, 86400, 86400, 0, 0, 0, 0, 0, 0, 0};
static const suspect_rule_t promo = {
    "PromoQuery", 3, 60, 0, 0, 0, 0, 0, 0, 0, 0};

/* The key of value for action, with the kind's key options. */
static suspect_key_t skey(const char *action, const char *value)
{
    suspect_identity_t id = test_identity("Id", value);
    suspect_key_t key;

    CU_ASSERT_EQUAL_FATAL(
        suspect_key_build(kind->keyopts, action, &id, &key, NULL), SUSPECT_OK);
    return key;
}

/* Whether the kind's keys carry the Cluster's hash tag. */
static bool tagged(void)
{
    return kind->keyopts != NULL && kind->keyopts->hash_tag;
}

/* Decides one request at T0 + at_ms for the given keys. */
static suspect_decision_t decide(const suspect_rule_t *rule,
                                 const suspect_key_t *keys, size_t n,
                                 int64_t at_ms)
{
    suspect_decision_t d;
    suspect_err_t err;
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(
        suspect_store_decide(store, rule, keys, n, T0 + at_ms, &d, &err),
        SUSPECT_OK);
    /* A wrapper must not have fallen back to a fail mode. */
    CU_ASSERT_EQUAL(d.degraded, 0);
    return d;
}

/* One identity: MemberCode, ClientIp. */
static suspect_decision_t decide2(const suspect_rule_t *rule,
                                  const char *member, const char *ip,
                                  int64_t at_ms)
{
    suspect_key_t keys[2] = {skey(rule->action, member),
                             skey(rule->action, ip)};
    return decide(rule, keys, 2, at_ms);
}

static suspect_decision_t decide1(const suspect_rule_t *rule, const char *id,
                                  int64_t at_ms)
{
    suspect_key_t key = skey(rule->action, id);
    return decide(rule, &key, 1, at_ms);
}

/* Scenario 1: bank account update, 2 per 120 s, by MemberCode and IP. */
static void test_bank_account_update(void)
{
    suspect_decision_t d;

    d = decide2(&bank, "M001", "203.0.113.7", 0);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1);
    d = decide2(&bank, "M001", "203.0.113.7", 10 * SEC);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 0);

    d = decide2(&bank, "M001", "203.0.113.7", 20 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(d.tripped, 0);
    CU_ASSERT_EQUAL(d.limit, 2);
    CU_ASSERT_EQUAL(d.remaining, 0);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 120 * SEC);
    CU_ASSERT_EQUAL(d.retry_after_ms, 100 * SEC);

    /* Any of the identities denies: another member on the same IP... */
    d = decide2(&bank, "M002", "203.0.113.7", 30 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 120 * SEC);
    /* ...and the same member from another IP. */
    d = decide2(&bank, "M001", "198.51.100.9", 30 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 0);

    /* Denials recorded nothing on the fresh identities. */
    d = decide2(&bank, "M002", "198.51.100.9", 31 * SEC);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1);
}

/* The window slides: a hit at t leaves it at exactly t + 120 s. */
static void test_window_boundary(void)
{
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(&bank, "M001", 0).allowed);
    CU_ASSERT_TRUE(decide1(&bank, "M001", 10 * SEC).allowed);
    d = decide1(&bank, "M001", 120 * SEC - 1);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.retry_after_ms, 1);

    d = decide1(&bank, "M001", 120 * SEC);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 0);

    /* Now held: 10 s and 120 s; the next slot opens at 130 s. */
    d = decide1(&bank, "M001", 125 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 130 * SEC);
    CU_ASSERT_TRUE(decide1(&bank, "M001", 130 * SEC).allowed);
}

/* A fixed window would let 2 more through right after a bucket edge. */
static void test_no_burst_at_bucket_edges(void)
{
    int64_t edge = 120 * SEC - T0 % (120 * SEC); /* next multiple of 120 s */
    int allowed = 0;

    for (int64_t t = edge - 5 * SEC; t < edge + 5 * SEC; t += SEC) {
        allowed += decide1(&bank, "burst", t).allowed;
    }
    CU_ASSERT_EQUAL(allowed, 2);
}

/* Denied hits are never recorded (the MULTI pitfall of a hand-written
 * Redis limiter). */
static void test_denied_hits_not_recorded(void)
{
    CU_ASSERT_TRUE(decide1(&bank, "spam", 0).allowed);
    CU_ASSERT_TRUE(decide1(&bank, "spam", 1).allowed);
    for (int i = 0; i < 100; i++) {
        CU_ASSERT_FALSE(decide1(&bank, "spam", 20 * SEC + i * SEC).allowed);
    }
    CU_ASSERT_TRUE(decide1(&bank, "spam", 120 * SEC).allowed);
}

/* Scenario 2: forgot password / OTP, 3 per 30 min, then a 30 min lock. */
static void test_secure_forgot_account(void)
{
    int64_t lock_end = T0 + 3 * SEC + 1800 * SEC;
    suspect_decision_t d;

    for (int i = 0; i < 3; i++) {
        d = decide1(&forgot, "user123", i * SEC);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.remaining, (uint32_t)(2 - i));
    }
    d = decide1(&forgot, "user123", 3 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, lock_end);
    CU_ASSERT_EQUAL(d.retry_after_ms, 1800 * SEC);

    /* Hits while locked neither extend the lock nor count. */
    d = decide1(&forgot, "user123", 600 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, lock_end);
    CU_ASSERT_EQUAL(d.retry_after_ms, lock_end - T0 - 600 * SEC);
    d = decide1(&forgot, "user123", lock_end - T0 - 1);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.retry_after_ms, 1);

    d = decide1(&forgot, "user123", lock_end - T0);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 2);
}

/* Scenario 4: login attack, 2 per day, a 24 h lock. */
static void test_secure_login_force_forgot(void)
{
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(&login, "acct42", 0).allowed);
    CU_ASSERT_TRUE(decide1(&login, "acct42", 60 * SEC).allowed);
    d = decide1(&login, "acct42", 120 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 120 * SEC + 86400 * SEC);
    CU_ASSERT_FALSE(decide1(&login, "acct42", 86400 * SEC).allowed);
    CU_ASSERT_TRUE(decide1(&login, "acct42", 120 * SEC + 86400 * SEC).allowed);
}

/* Block-lock with two identities: every identity that is over is locked. */
static void test_lock_every_identity_over(void)
{
    suspect_decision_t d;

    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide2(&forgot, "M9", "192.0.2.1", i * SEC).allowed);
    }
    d = decide2(&forgot, "M9", "192.0.2.1", 5 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    /* The IP is locked too: a fresh member from it is refused. */
    d = decide2(&forgot, "M10", "192.0.2.1", 6 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 5 * SEC + 1800 * SEC);
    /* And M9 from elsewhere as well. */
    d = decide2(&forgot, "M9", "192.0.2.2", 6 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 0);
}

/* Scenario 5: promo query limited per member + promo code. */
static void test_promo_composite(void)
{
    suspect_identity_t a = test_identity("Promo", "M1");
    suspect_key_t k1, k2;

    a.nparts = 2;
    a.part[1].ptr = "SPRING";
    a.part[1].len = 6;
    CU_ASSERT_EQUAL_FATAL(
        suspect_key_build(kind->keyopts, promo.action, &a, &k1, NULL),
        SUSPECT_OK);
    a.part[1].ptr = "AUTUMN";
    CU_ASSERT_EQUAL_FATAL(
        suspect_key_build(kind->keyopts, promo.action, &a, &k2, NULL),
        SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(k1.buf, tagged() ? "{PromoQuery:M1_SPRING}:locked"
                                            : "PromoQuery:M1_SPRING:locked");
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide(&promo, &k1, 1, i).allowed);
    }
    CU_ASSERT_FALSE(decide(&promo, &k1, 1, 10).allowed);
    CU_ASSERT_TRUE(decide(&promo, &k2, 1, 10).allowed);
}

/* Operators: status, unblock, reset, block. */
static void test_operator_operations(void)
{
    suspect_key_t key = skey(forgot.action, "ops");
    suspect_status_t st;
    suspect_decision_t d;

    for (int i = 0; i < 4; i++) {
        decide1(&forgot, "ops", i * SEC);
    }
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &forgot, &key, T0 + 4 * SEC, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_EQUAL(st.remaining, 0);
    CU_ASSERT_EQUAL(st.locked_until_ms, T0 + 3 * SEC + 1800 * SEC);
    CU_ASSERT_EQUAL(st.free_at_ms, T0 + 1800 * SEC);

    /* Dropping only the lock keeps the full window: the next request
     * locks again. */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &key, SUSPECT_RESET_LOCK, NULL),
                    SUSPECT_OK);
    d = decide1(&forgot, "ops", 5 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 5 * SEC + 1800 * SEC);

    /* Reset forgets everything. */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &key, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(decide1(&forgot, "ops", 6 * SEC).allowed);
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &forgot, &key, T0 + 6 * SEC, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);
    CU_ASSERT_EQUAL(st.remaining, 2);
    CU_ASSERT_EQUAL(st.locked_until_ms, 0);
    CU_ASSERT_EQUAL(st.free_at_ms, 0);

    /* Block for 60 s, even on a basic action. */
    key = skey(bank.action, "ops");
    CU_ASSERT_EQUAL(suspect_store_block(store, &key, T0, T0 + 60 * SEC, NULL),
                    SUSPECT_OK);
    d = decide1(&bank, "ops", 1);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 60 * SEC);
    CU_ASSERT_TRUE(decide1(&bank, "ops", 60 * SEC).allowed);
}

/* Unblock lets the identity in on its next request: the lock goes, and
 * the oldest hits of a full window, so exactly one more fits. */
static void test_unblock(void)
{
    suspect_key_t key = skey(forgot.action, "unb");
    suspect_key_t bkey = skey(bank.action, "unb");
    suspect_unblock_t u;
    suspect_status_t st;
    suspect_decision_t d;

    for (int i = 0; i < 4; i++) {
        decide1(&forgot, "unb", i * SEC);
    }
    CU_ASSERT_EQUAL(
        suspect_store_unblock(store, &forgot, &key, T0 + 5 * SEC, &u, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(u.lock_until_ms, T0 + 3 * SEC + 1800 * SEC);
    CU_ASSERT_EQUAL(u.dropped, 1);
    CU_ASSERT_EQUAL(u.kept, 2);
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &forgot, &key, T0 + 5 * SEC, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.locked_until_ms, 0);
    CU_ASSERT_EQUAL(st.in_window, 2);
    /* Its next request is allowed; the one after meets a full window. */
    CU_ASSERT_TRUE(decide1(&forgot, "unb", 6 * SEC).allowed);
    d = decide1(&forgot, "unb", 7 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);

    /* A basic action has no lock: the oldest hit goes. */
    decide1(&bank, "unb", 0);
    decide1(&bank, "unb", SEC);
    CU_ASSERT_FALSE(decide1(&bank, "unb", 2 * SEC).allowed);
    CU_ASSERT_EQUAL(
        suspect_store_unblock(store, &bank, &bkey, T0 + 3 * SEC, &u, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(u.lock_until_ms, 0);
    CU_ASSERT_EQUAL(u.dropped, 1);
    CU_ASSERT_EQUAL(u.kept, 1);
    CU_ASSERT_TRUE(decide1(&bank, "unb", 4 * SEC).allowed);

    /* Nothing stored: nothing to drop. */
    key = skey(forgot.action, "nobody");
    CU_ASSERT_EQUAL(suspect_store_unblock(store, &forgot, &key, T0, &u, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(u.lock_until_ms, 0);
    CU_ASSERT_EQUAL(u.dropped, 0);
    CU_ASSERT_EQUAL(u.kept, 0);
}

typedef struct seen_locks {
    int n, a, b;
    int64_t until_a;
} seen_locks_t;

static int count_lock(void *arg, const char *key, size_t len, int64_t until)
{
    seen_locks_t *s = arg;
    suspect_key_t a = skey(forgot.action, "lockA");
    suspect_key_t b = skey(bank.action, "lockB");

    s->n++;
    if (len == a.window_len && memcmp(key, a.buf, len) == 0) {
        s->a = 1;
        s->until_a = until;
    }
    if (len == b.window_len && memcmp(key, b.buf, len) == 0) {
        s->b = 1;
    }
    return 0;
}

/* The key prefix of the bank action's identities. */
static const char *bank_prefix(void)
{
    return tagged() ? "{BankAccountUpdate:" : "BankAccountUpdate:";
}

/* The locks live now, by key prefix, on every store. */
static void test_foreach_locked(void)
{
    suspect_key_t b = skey(bank.action, "lockB");
    seen_locks_t s = {0, 0, 0, 0};

    for (int i = 0; i < 4; i++) {
        decide1(&forgot, "lockA", i * SEC);
    }
    decide1(&forgot, "open", 0);
    CU_ASSERT_EQUAL(suspect_store_block(store, &b, T0, T0 + 60 * SEC, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_foreach_locked(store, NULL, T0 + 5 * SEC,
                                                 count_lock, &s, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(s.a && s.b);
    CU_ASSERT_EQUAL(s.until_a, T0 + 3 * SEC + 1800 * SEC);
    memset(&s, 0, sizeof(s));
    CU_ASSERT_EQUAL(suspect_store_foreach_locked(store, bank_prefix(),
                                                 T0 + 5 * SEC, count_lock, &s,
                                                 NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(!s.a && s.b);
    /* After the block's end it is not listed. */
    memset(&s, 0, sizeof(s));
    CU_ASSERT_EQUAL(suspect_store_foreach_locked(store, bank_prefix(),
                                                 T0 + 61 * SEC, count_lock, &s,
                                                 NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(s.n, 0);
}

/* Invalid calls are refused before the backend sees them. */
static void test_invalid_calls(void)
{
    suspect_key_t keys[2] = {skey("A", "x"), skey("A", "x")};
    suspect_rule_t zero = {"A", 0, 10, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_decision_t d;

    CU_ASSERT_EQUAL(suspect_store_decide(store, &bank, keys, 2, T0, &d, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &zero, keys, 1, T0, &d, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &bank, keys, 0, T0, &d, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_store_block(store, keys, T0, T0, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_store_reset(store, keys, 0, NULL), SUSPECT_E_INVAL);
}

/* ---- registration, once per store kind ---------------------------------- */

/* A fresh store per test; a NULL one fails the test's first decide(). */
static void open_store(void)
{
    store = kind->open();
}

static void close_store(void)
{
    suspect_store_free(store);
    store = NULL;
}

#define KIND_HOOKS(i)                                                          \
    static int suite_init_##i(void)                                            \
    {                                                                          \
        kind = test_store_kinds[i];                                            \
        return kind->setup != NULL ? kind->setup() : 0;                        \
    }                                                                          \
    static int suite_clean_##i(void)                                           \
    {                                                                          \
        return kind->teardown != NULL ? kind->teardown() : 0;                  \
    }
KIND_HOOKS(0)
KIND_HOOKS(1)
KIND_HOOKS(2)
KIND_HOOKS(3)
KIND_HOOKS(4)
KIND_HOOKS(5)

static int (*const suite_inits[])(void) = {suite_init_0, suite_init_1,
                                           suite_init_2, suite_init_3,
                                           suite_init_4, suite_init_5};
static int (*const suite_cleans[])(void) = {suite_clean_0, suite_clean_1,
                                            suite_clean_2, suite_clean_3,
                                            suite_clean_4, suite_clean_5};

static const struct {
    const char *name;
    CU_TestFunc fn;
} tests[] = {
    {"bank account update", test_bank_account_update},
    {"window boundary", test_window_boundary},
    {"no burst at bucket edges", test_no_burst_at_bucket_edges},
    {"denied hits not recorded", test_denied_hits_not_recorded},
    {"secure forgot account", test_secure_forgot_account},
    {"secure login force forgot", test_secure_login_force_forgot},
    {"lock every identity over", test_lock_every_identity_over},
    {"promo composite", test_promo_composite},
    {"operator operations", test_operator_operations},
    {"unblock lets in", test_unblock},
    {"locks listed", test_foreach_locked},
    {"invalid calls", test_invalid_calls},
};

int register_scenarios_suite(void)
{
    for (size_t k = 0; test_store_kinds[k] != NULL; k++) {
        char name[64];
        CU_pSuite s;

        if (k >= sizeof(suite_inits) / sizeof(suite_inits[0])) {
            return -1;
        }
        snprintf(name, sizeof(name), "scenarios-%s", test_store_kinds[k]->name);
        s = CU_add_suite_with_setup_and_teardown(
            name, suite_inits[k], suite_cleans[k], open_store, close_store);
        if (s == NULL) {
            return -1;
        }
        for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
            if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
                return -1;
            }
        }
    }
    return 0;
}
