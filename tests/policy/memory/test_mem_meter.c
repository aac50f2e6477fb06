/*
 * test_mem_meter.c - the memory store's meters (suite "mem-meter",
 * policy/memory/mem_meter.c and mem_meter_table.c): a bucket's identity
 * costs at most 64 bytes whatever its limit and hits, the meter table
 * finds every identity through growth and removals, eviction drops the
 * meters that end first and never a held one, a lock lives beside its
 * meter, every allocation failing leaves the store as it was, random
 * decisions and resets answer as meter.c does on a model, the
 * failover wrapper's prefill op fills a meter, and an action whose
 * algorithm changes starts afresh with its lock and its offence count
 * kept.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "meter.h"

#include "suites.h"
#include "suspect_store_impl.h"
#include "helpers/stores.h"
#include "helpers/util.h"

#define T0  1710000012345LL
#define SEC 1000LL

static suspect_store_t *new_store(void)
{
    return test_memstore(1000, 1);
}

/* The tokens in use of value's bucket under rule at now. */
static uint32_t in_use(suspect_store_t *store, const suspect_rule_t *rule,
                       const char *value, int64_t now_ms)
{
    suspect_key_t key = test_key(rule->action, value);
    suspect_status_t st;

    CU_ASSERT_EQUAL(suspect_store_status(store, rule, &key, now_ms, &st, NULL),
                    SUSPECT_OK);
    return st.in_window;
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
 * of 1 do, at most 64 bytes each (32-byte cells, the table at least half
 * full); a sliding log's grow with their hits. */
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
    CU_ASSERT(suspect_memstore_bytes(a) - base >= 100 * 32 &&
              suspect_memstore_bytes(a) - base <= 100 * 64);
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

/* 20,000 identities in one shard's table (it grows 11 times), every
 * third reset (cells shift back over the gap): each of the others still
 * has its own count, and the reset ones start from nothing. */
static void test_table_finds_all(void)
{
    suspect_rule_t r = {"Otp", 5, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    suspect_store_t *store = test_memstore(100000, 1);
    const int n = 20000;
    int wrong = 0;
    char v[16];

    for (int i = 0; i < n; i++) {
        snprintf(v, sizeof(v), "p%d", i);
        for (int k = 0; k <= i % 3; k++) {
            CU_ASSERT_TRUE(allowed(store, &r, v, T0));
        }
    }
    CU_ASSERT_EQUAL(suspect_memstore_size(store), (size_t)n);
    for (int i = 0; i < n; i += 3) {
        suspect_key_t key;

        snprintf(v, sizeof(v), "p%d", i);
        key = test_key("Otp", v);
        CU_ASSERT_EQUAL(
            suspect_store_reset(store, &key, SUSPECT_RESET_ALL, NULL),
            SUSPECT_OK);
    }
    for (int i = 0; i < n; i++) {
        snprintf(v, sizeof(v), "p%d", i);
        wrong += in_use(store, &r, v, T0) !=
                 (i % 3 == 0 ? 0u : (uint32_t)(i % 3) + 1);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), (size_t)(n - (n + 2) / 3));
    suspect_store_free(store);
}

/* A full store of 64 meters: a flood of fresh identities, one token
 * each, ten times the store, pushes out its own cells and keeps the
 * victims' meters that hold more, and the full one. */
static void test_eviction_keeps_fuller(void)
{
    suspect_rule_t r = {"Otp", 5, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    suspect_store_t *store = test_memstore(64, 1);
    char v[16];

    for (int k = 0; k < 3; k++) {
        CU_ASSERT_TRUE(allowed(store, &r, "victim", T0));
    }
    for (int k = 0; k < 5; k++) {
        CU_ASSERT_TRUE(allowed(store, &r, "full", T0));
    }
    for (int i = 0; i < 640; i++) {
        snprintf(v, sizeof(v), "flood%d", i);
        CU_ASSERT_TRUE(allowed(store, &r, v, T0 + 1 + i / 100));
        CU_ASSERT(suspect_memstore_size(store) <= 64);
    }
    CU_ASSERT_EQUAL(in_use(store, &r, "victim", T0 + 10), 3);
    CU_ASSERT_EQUAL(in_use(store, &r, "full", T0 + 10), 5);
    CU_ASSERT_FALSE(allowed(store, &r, "full", T0 + 10));
    suspect_store_free(store);
}

/* A store full of full buckets takes no new identity (SUSPECT_E_FULL)
 * and keeps them; once their tokens come back, it takes one again. */
static void test_full_of_held(void)
{
    suspect_rule_t r = {"Otp", 1, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    suspect_store_t *store = test_memstore(8, 1);
    suspect_key_t key = test_key("Otp", "late");
    suspect_decision_t d;
    char v[16];

    for (int i = 0; i < 8; i++) {
        snprintf(v, sizeof(v), "p%d", i);
        CU_ASSERT_TRUE(allowed(store, &r, v, T0));
    }
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &r, &key, 1, T0 + SEC, &d, NULL),
        SUSPECT_E_FULL);
    CU_ASSERT_FALSE(allowed(store, &r, "p3", T0 + SEC));
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &r, &key, 1, T0 + 61 * SEC, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    suspect_store_free(store);
}

/* An empty bucket with BlockDuration locks: the lock lives in an entry
 * beside the meter, is listed, and unblock lifts it and makes room for
 * one request. */
static void test_lock_beside_meter(void)
{
    suspect_rule_t r = {"Otp", 2, 60, 300, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET,
                        0,     0};
    suspect_store_t *store = new_store();
    suspect_key_t key = test_key("Otp", "l");
    suspect_unblock_t u;
    suspect_status_t st;
    int locks = 0;

    CU_ASSERT_TRUE(allowed(store, &r, "l", T0));
    CU_ASSERT_TRUE(allowed(store, &r, "l", T0));
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    CU_ASSERT_FALSE(allowed(store, &r, "l", T0));
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 2); /* cell and lock */
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, &key, T0, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.locked_until_ms, T0 + 300 * SEC);
    CU_ASSERT_EQUAL(st.in_window, 2);
    CU_ASSERT_EQUAL(suspect_store_foreach_locked(store, "", T0, test_count_lock,
                                                 &locks, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(locks, 1);
    /* the tokens came back after 60 s; the lock still holds */
    CU_ASSERT_FALSE(allowed(store, &r, "l", T0 + 100 * SEC));
    memset(&u, 0, sizeof(u));
    CU_ASSERT_EQUAL(
        suspect_store_unblock(store, &r, &key, T0 + 100 * SEC, &u, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(u.lock_until_ms, T0 + 300 * SEC);
    CU_ASSERT_TRUE(allowed(store, &r, "l", T0 + 100 * SEC));
    suspect_store_free(store);
}

/* Every allocation failing in turn while a decision makes a cell that
 * grows the table: out of memory, and the store as it was. */
static void test_out_of_memory(void)
{
    suspect_rule_t r = {"Otp", 5, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    char v[16];

    for (long k = 1; k <= 3; k++) {
        suspect_store_t *store = test_memstore(1000, 1);
        suspect_key_t key = test_key("Otp", "new");
        suspect_decision_t d;
        int i;

        for (i = 0; i < 13; i++) { /* 13 of 16 cells: the next grows */
            snprintf(v, sizeof(v), "p%d", i);
            CU_ASSERT_TRUE(allowed(store, &r, v, T0));
        }
        suspect_test_fail_alloc_after(k);
        CU_ASSERT_EQUAL(suspect_store_decide(store, &r, &key, 1, T0, &d, NULL),
                        k == 1 ? SUSPECT_E_NOMEM : SUSPECT_OK);
        suspect_test_fail_alloc_after(-1);
        for (i = 0; i < 13; i++) {
            snprintf(v, sizeof(v), "p%d", i);
            CU_ASSERT_EQUAL(in_use(store, &r, v, T0), 1);
        }
        CU_ASSERT_EQUAL(in_use(store, &r, "new", T0), k == 1 ? 0 : 1);
        suspect_store_free(store);
    }
}

/* 200,000 random decisions and resets over 3,000 identities of one
 * shard, the clock moving on so meters end and go (expiry on insert
 * removes cells while others are placed): every answer is the one
 * meter.c gives on a meter kept aside per identity. */
static void test_random_against_model(void)
{
    enum { IDS = 3000, OPS = 200000 };
    suspect_rule_t r = {"Otp", 5, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_BUCKET, 0, 0};
    suspect_store_t *store = test_memstore(100000, 1);
    static suspect_meter_t model[IDS];
    uint32_t x = 2463534242u;
    int64_t now = T0;
    int wrong = 0;
    char v[16];

    memset(model, 0, sizeof(model));
    for (int op = 0; op < OPS; op++) {
        uint32_t id;

        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        id = x % IDS;
        now += (int64_t)(x >> 24) * 4; /* 0 to 1 s */
        snprintf(v, sizeof(v), "p%u", id);
        if (x % 50 == 0) {
            suspect_key_t key = test_key("Otp", v);

            CU_ASSERT_EQUAL(
                suspect_store_reset(store, &key, SUSPECT_RESET_ALL, NULL),
                SUSPECT_OK);
            memset(&model[id], 0, sizeof(model[id]));
        } else {
            suspect_window_state_t st = {0};
            bool fits;

            suspect_meter_read(&r, &model[id], now, &st);
            fits = st.in_window + 1 <= 5;
            if (fits) {
                suspect_meter_take(&r, &model[id], now, 1);
            }
            wrong += allowed(store, &r, v, now) != fits;
        }
    }
    CU_ASSERT_EQUAL(wrong, 0);
    for (uint32_t id = 0; id < IDS; id++) {
        suspect_window_state_t st = {0};

        snprintf(v, sizeof(v), "p%u", id);
        suspect_meter_read(&r, &model[id], now, &st);
        wrong += in_use(store, &r, v, now) != st.in_window;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    suspect_store_free(store);
}

int register_mem_meter_suite(void)
{
    CU_pSuite s = CU_add_suite("mem-meter", NULL, NULL);

    if (s == NULL ||
        CU_add_test(s, "constant memory per identity", test_constant_memory) ==
            NULL ||
        CU_add_test(s, "table: 20,000 found through growth and removals",
                    test_table_finds_all) == NULL ||
        CU_add_test(s, "eviction: a flood keeps the fuller meters",
                    test_eviction_keeps_fuller) == NULL ||
        CU_add_test(s, "eviction: full of held meters", test_full_of_held) ==
            NULL ||
        CU_add_test(s, "a lock beside its meter", test_lock_beside_meter) ==
            NULL ||
        CU_add_test(s, "every allocation failing", test_out_of_memory) ==
            NULL ||
        CU_add_test(s, "200,000 random decisions against meter.c",
                    test_random_against_model) == NULL ||
        CU_add_test(s, "prefill op", test_prefill) == NULL ||
        CU_add_test(s, "offences kept across an algorithm change",
                    test_offences_kept) == NULL) {
        return -1;
    }
    return 0;
}
