/*
 * test_mem_meter.c - the memory store's metered entries (suite
 * "mem-meter", policy/memory/mem_meter.c): a bucket's identity costs the
 * same whatever its limit and hits, the failover wrapper's prefill op fills
 * a meter, and an action whose algorithm changes starts afresh with its
 * lock and its offence count kept.
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "suites.h"
#include "suspect_store_impl.h"
#include "helpers/util.h"

#define T0  1710000012345LL
#define SEC 1000LL

static suspect_store_t *new_store(void)
{
    suspect_memstore_opts_t opts = {1000, 1};
    suspect_store_t *store = NULL;

    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(&opts, &store, NULL),
                          SUSPECT_OK);
    return store;
}

static bool allowed(suspect_store_t *store, const suspect_rule_t *rule,
                    const char *value, int64_t now_ms)
{
    suspect_key_t key = test_key(rule->action, value);
    suspect_decision_t d;

    CU_ASSERT_EQUAL(
        suspect_store_decide(store, rule, &key, 1, now_ms, &d, NULL),
        SUSPECT_OK);
    return d.allowed;
}

/* A bucket of 5,000 an hour: 100 identities of 50 requests cost what 100
 * of 1 do (88 bytes an entry: 72 and a meter of 16); a sliding log's
 * grow with their hits. */
static void test_constant_memory(void)
{
    suspect_rule_t bucket = {
        "Otp", 5000, 3600, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    suspect_rule_t log = bucket;
    suspect_store_t *a = new_store(), *b = new_store(), *c = new_store();
    size_t base = suspect_memstore_bytes(a);
    char v[16];

    log.algorithm = SUSPECT_ALGO_LOG;
    for (int i = 0; i < 100; i++) {
        snprintf(v, sizeof(v), "p%d", i);
        CU_ASSERT_TRUE(allowed(a, &bucket, v, T0));
        for (int h = 0; h < 50; h++) {
            CU_ASSERT_TRUE(allowed(b, &bucket, v, T0 + h));
            CU_ASSERT_TRUE(allowed(c, &log, v, T0 + h));
        }
    }
    CU_ASSERT_EQUAL(suspect_memstore_size(a), 100);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(a), suspect_memstore_bytes(b));
    /* the bucket array grew the same way in both; entries are 88 bytes */
    CU_ASSERT(suspect_memstore_bytes(a) - base >= 100 * 88 &&
              suspect_memstore_bytes(a) - base <= 100 * 88 + 8 * 256);
    CU_ASSERT(suspect_memstore_bytes(c) >
              suspect_memstore_bytes(b) + 100 * 300);
    suspect_store_free(a);
    suspect_store_free(b);
    suspect_store_free(c);
}

/* The prefill op (suspect_store_impl.h): a meter holds at least the units
 * asked for, taken at their time; asking for fewer changes nothing. */
static void test_prefill(void)
{
    suspect_rule_t r = {"Otp", 5, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    suspect_store_t *store = new_store();
    suspect_key_t key = test_key("Otp", "s");
    suspect_status_t st;

    CU_ASSERT_EQUAL(store->ops->prefill(store, &r, &key, 3, T0, T0, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, &key, T0, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_EQUAL(st.full_at_ms, T0 + 36 * SEC);
    CU_ASSERT_EQUAL(store->ops->prefill(store, &r, &key, 2, T0, T0, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, &key, T0, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_TRUE(allowed(store, &r, "s", T0));
    CU_ASSERT_TRUE(allowed(store, &r, "s", T0));
    CU_ASSERT_FALSE(allowed(store, &r, "s", T0));
    suspect_store_free(store);
}

/* An escalating action that becomes a bucket: the identity's next lock
 * is its second offence, twice as long. */
static void test_offences_kept(void)
{
    suspect_rule_t log = {"Verify", 2, 60, 60, 200, 3600, 3600, 0, 0, 0, 0};
    suspect_rule_t bkt = log;
    suspect_store_t *store = new_store();
    suspect_key_t key = test_key("Verify", "o");
    suspect_decision_t d;

    bkt.algorithm = SUSPECT_ALGO_BUCKET;
    CU_ASSERT_TRUE(allowed(store, &log, "o", T0));
    CU_ASSERT_TRUE(allowed(store, &log, "o", T0));
    CU_ASSERT_FALSE(allowed(store, &log, "o", T0)); /* locked 60 s */
    /* after the lock, as a bucket: a full bucket again, and the lock it
     * makes is the second offence */
    CU_ASSERT_TRUE(allowed(store, &bkt, "o", T0 + 61 * SEC));
    CU_ASSERT_TRUE(allowed(store, &bkt, "o", T0 + 61 * SEC));
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &bkt, &key, 1, T0 + 61 * SEC, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.offences, 2);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 61 * SEC + 120 * SEC);
    suspect_store_free(store);
}

int register_mem_meter_suite(void)
{
    CU_pSuite s = CU_add_suite("mem-meter", NULL, NULL);

    if (s == NULL ||
        CU_add_test(s, "constant memory per identity", test_constant_memory) ==
            NULL ||
        CU_add_test(s, "prefill op", test_prefill) == NULL ||
        CU_add_test(s, "offences kept across an algorithm change",
                    test_offences_kept) == NULL) {
        return -1;
    }
    return 0;
}
