/*
 * meter_test.c - the metered scenarios the "redis" and "cluster" suites
 * share (meter_test.h), on the caller's clock.
 */
#include "meter_test.h"

#include <CUnit/CUnit.h>
#include <string.h>

suspect_rule_t mt_bucket(const char *action, uint32_t rate, uint32_t per_s,
                         uint32_t burst)
{
    suspect_rule_t r = {action, rate, per_s, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET,
                        burst,  0};
    return r;
}

/* One decision; CUnit fails on a store error. */
static suspect_decision_t decide(suspect_store_t *store,
                                 const suspect_rule_t *rule,
                                 const suspect_key_t *keys, size_t n,
                                 int64_t now_ms)
{
    suspect_decision_t d;
    suspect_err_t err;

    memset(&d, 0, sizeof(d));
    memset(&err, 0, sizeof(err));
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, rule, keys, n, now_ms, &d, &err),
        SUSPECT_OK);
    return d;
}

void mt_otp_sends(suspect_store_t *store, const suspect_key_t *key)
{
    suspect_rule_t r = mt_bucket("OtpSend", 5, 60, 0);
    suspect_decision_t d;
    suspect_status_t st;

    for (int i = 0; i < 5; i++) {
        d = decide(store, &r, key, 1, MT_NOW);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.remaining, (uint32_t)(4 - i));
    }
    d = decide(store, &r, key, 1, MT_NOW);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(d.retry_after_ms, 12000);
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, key, MT_NOW, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 5);
    CU_ASSERT_EQUAL(st.remaining, 0);
    CU_ASSERT_EQUAL(st.free_at_ms, MT_NOW + 12000);
    CU_ASSERT_EQUAL(st.full_at_ms, MT_NOW + 60000);
    CU_ASSERT_FALSE(decide(store, &r, key, 1, MT_NOW + 11999).allowed);
    CU_ASSERT_TRUE(decide(store, &r, key, 1, MT_NOW + 12000).allowed);
    d = decide(store, &r, key, 1, MT_NOW + 12000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.retry_after_ms, 12000);
}

void mt_costs(suspect_store_t *store, const suspect_key_t *key)
{
    suspect_rule_t light = mt_bucket("Api", 10, 60, 10), heavy = light;
    suspect_decision_t d;

    heavy.cost = 5;
    CU_ASSERT_TRUE(decide(store, &heavy, key, 1, MT_NOW).allowed);
    d = decide(store, &heavy, key, 1, MT_NOW);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 0);
    CU_ASSERT_EQUAL(decide(store, &light, key, 1, MT_NOW).retry_after_ms, 6000);
    CU_ASSERT_EQUAL(decide(store, &heavy, key, 1, MT_NOW).retry_after_ms,
                    30000);
    CU_ASSERT_FALSE(decide(store, &heavy, key, 1, MT_NOW + 24000).allowed);
    CU_ASSERT_TRUE(decide(store, &light, key, 1, MT_NOW + 24000).allowed);
}

void mt_gives_back(suspect_store_t *store, const suspect_key_t keys[2])
{
    suspect_rule_t r = mt_bucket("Pair", 3, 60, 0);
    suspect_decision_t d;
    suspect_status_t st;

    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide(store, &r, &keys[1], 1, MT_NOW).allowed);
    }
    CU_ASSERT_TRUE(decide(store, &r, &keys[0], 1, MT_NOW).allowed);
    for (int i = 0; i < 4; i++) {
        d = decide(store, &r, keys, 2, MT_NOW + 1);
        CU_ASSERT_FALSE(d.allowed);
        CU_ASSERT_EQUAL(d.tripped, 1);
    }
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &r, &keys[0], MT_NOW + 1, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);
    /* keys[0] alone still has its two tokens */
    CU_ASSERT_TRUE(decide(store, &r, &keys[0], 1, MT_NOW + 1).allowed);
    CU_ASSERT_TRUE(decide(store, &r, &keys[0], 1, MT_NOW + 1).allowed);
    CU_ASSERT_FALSE(decide(store, &r, &keys[0], 1, MT_NOW + 1).allowed);
}
