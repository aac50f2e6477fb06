/*
 * test_cluster_meter.c - token buckets on a Redis Cluster (part of suite
 * "cluster", on its cluster).
 *
 * What is checked:
 *   - OTP sends and costs 1 and 5 on hash-tagged keys (one slot, one script)
 * and on the seed's keys (window and lock in different slots: the meter is
 *     named "{<window>}:tb" to stay in the window's slot, the lock read and
 *     written apart);
 *   - a lock written apart (the seed's keys) locks, and unblock drops it;
 *   - a decision on two identities on two masters, the second one empty:
 *     denied, and what the first one took is given back; the same with
 *     the seed's keys;
 *   - the failover wrapper's journal carried into a meter of the seed's
 *     keys (lock and meter in two slots), twice: taken once.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "cluster_parts.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "meter_test.h"
#include "suspect_redis.h"
#include "suspect_store_impl.h"

static test_cluster_t *cl;

static suspect_store_t *fresh_store(void)
{
    cluster_flush(cl);
    return test_redis_store(cl->url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
}

static void test_otp_tagged(void)
{
    suspect_store_t *store = fresh_store();
    suspect_key_t k = cluster_key("OtpSend", "33612345678");

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    mt_otp_sends(store, &k);
    k = cluster_key("Api", "c1");
    mt_costs(store, &k);
    suspect_store_free(store);
}

static void test_otp_seed_keys(void)
{
    suspect_store_t *store = fresh_store();
    suspect_key_t k = test_key("OtpSend", "33612345678");
    char meter[SUSPECT_KEY_MAX + 8];
    int ws = cluster_key_slot(cl, k.buf, k.window_len);
    int n;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_NOT_EQUAL(ws, cluster_key_slot(cl, k.buf, k.lock_len));
    mt_otp_sends(store, &k);
    n = snprintf(meter, sizeof(meter), "{%.*s}:tb", (int)k.window_len, k.buf);
    CU_ASSERT_EQUAL(cluster_key_slot(cl, meter, (size_t)n), ws);
    CU_ASSERT_EQUAL(
        test_redis_int(&cl->node[test_cluster_slot_owner(cl, 0, ws)],
                       "EXISTS %b", meter, (size_t)n),
        1);
    k = test_key("Api", "c1");
    mt_costs(store, &k);
    suspect_store_free(store);
}

static void test_lock_apart(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("OtpVerify", 3, 60, 0);
    suspect_key_t k = test_key("OtpVerify", "33600000000");
    suspect_decision_t d;
    suspect_unblock_t u;
    suspect_status_t st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    r.block_s = 600;
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &r, &k, 1, MT_NOW, &d, NULL),
            SUSPECT_OK);
    }
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, MT_NOW + 600000);
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, &k, MT_NOW + 1, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.locked_until_ms, MT_NOW + 600000);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &r, &k, 1, MT_NOW + 1, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(suspect_store_unblock(store, &r, &k, MT_NOW + 2, &u, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(u.lock_until_ms, MT_NOW + 600000);
    CU_ASSERT_EQUAL(u.kept, 2);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &r, &k, 1, MT_NOW + 2, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    suspect_store_free(store);
}

/* Two values whose tagged keys for action live on masters 0 and 1. */
static int two_masters(const char *action, suspect_key_t keys[2])
{
    char v0[32], v1[32];

    if (cluster_value_on(cl, 0, action, "m", v0, sizeof(v0)) < 0 ||
        cluster_value_on(cl, 1, action, "ip", v1, sizeof(v1)) < 0) {
        return -1;
    }
    keys[0] = cluster_key(action, v0);
    keys[1] = cluster_key(action, v1);
    return 0;
}

static void test_cross_gives_back(void)
{
    suspect_store_t *store = fresh_store();
    suspect_key_t keys[2];
    suspect_redis_stats_t st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL_FATAL(two_masters("Pair", keys), 0);
    mt_gives_back(store, keys);
    suspect_redis_stats(store, &st);
    CU_ASSERT_TRUE(st.rollbacks >= 4);
    suspect_store_free(store);
    /* the seed's keys: every identity's lock apart too */
    store = fresh_store();
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    keys[0] = test_key("Pair", "member1");
    keys[1] = test_key("Pair", "10.0.0.1");
    mt_gives_back(store, keys);
    suspect_store_free(store);
}

static void test_carry_seed_keys(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("OtpSend", 5, 60, 0);
    suspect_key_t k = test_key("OtpSend", "33655555555");
    suspect_carry_hit_t hits[2] = {
        {MT_NOW, "00000000-0000-0000-0000-00000000000a", 0},
        {MT_NOW + 6000, "00000000-0000-0000-0000-00000000000b", 2}};
    suspect_carry_t c;
    suspect_status_t st;
    uint64_t locks = 0, taken = 0;
    size_t done = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    memset(&c, 0, sizeof(c));
    c.key = k.buf;
    c.window_len = k.window_len;
    c.lock_until_ms = MT_NOW + 600000;
    c.window_ms = 60000;
    c.algorithm = SUSPECT_ALGO_BUCKET;
    c.limit_count = 5;
    c.nhits = 2;
    c.hits = hits;
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(store->ops->carry(store, &c, 1, MT_NOW + 7000, &done,
                                          &locks, &taken, NULL),
                        SUSPECT_OK);
    }
    CU_ASSERT_EQUAL(locks, 1);
    CU_ASSERT_EQUAL(taken, 2);
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &r, &k, MT_NOW + 7000, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.full_at_ms, MT_NOW + 36000);
    CU_ASSERT_EQUAL(st.locked_until_ms, MT_NOW + 600000);
    suspect_store_free(store);
}

int cluster_meter_register(CU_pSuite s, test_cluster_t *c)
{
    cl = c;
    if (!CU_add_test(s, "meter: OTP sends and costs, hash-tagged keys",
                     test_otp_tagged) ||
        !CU_add_test(s, "meter: OTP sends and costs, the seed's keys",
                     test_otp_seed_keys) ||
        !CU_add_test(s, "meter: a lock apart locks and unblocks",
                     test_lock_apart) ||
        !CU_add_test(s, "meter: across slots, a denial gives back",
                     test_cross_gives_back) ||
        !CU_add_test(s, "meter: outage journal carried once, seed's keys",
                     test_carry_seed_keys)) {
        return -1;
    }
    return 0;
}
