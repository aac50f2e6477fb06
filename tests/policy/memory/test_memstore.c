/*
 * test_memstore.c - the memory store and its hash (suite "memstore").
 *
 * SipHash-2-4-128 against the reference vectors; then the store driven with
 * explicit now_ms: both strategies, the window boundary, several identities
 * in one decision, the operator operations, the eviction order, the size
 * and byte counters (which also check the 72-byte entry), and every
 * allocation failing in turn.
 *
 * Length.  One suite for one store: short, independent cases in groups
 * (strategies, several identities, operator operations, bounds,
 * bookkeeping, out of memory) that share the helpers at the top.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "siphash.h"
#include "suites.h"
#include "suspect_store.h"
#include "helpers/stores.h"
#include "helpers/util.h"

#define ENTRY_BYTES     72 /* an entry before its ring of 8-byte hits */
#define BUCKET_BYTES    8
#define INITIAL_BUCKETS 8 /* per shard, as mem_table.c starts them */

/* ---- SipHash-2-4-128 ------------------------------------------------------
 */

/* vectors_sip128 of github.com/veorq/SipHash vectors.h: key 00..0f, message
 * 00..(len-1), output bytes as the reference code writes them. */
static const char *const sip128_vectors[64] = {
    "a3817f04ba25a8e66df67214c7550293", "da87c1d86b99af44347659119b22fc45",
    "8177228da4a45dc7fca38bdef60affe4", "9c70b60c5267a94e5f33b6b02985ed51",
    "f88164c12d9c8faf7d0f6e7c7bcd5579", "1368875980776f8854527a07690e9627",
    "14eeca338b208613485ea0308fd7a15e", "a1f1ebbed8dbc153c0b84aa61ff08239",
    "3b62a9ba6258f5610f83e264f31497b4", "264499060ad9baabc47f8b02bb6d71ed",
    "00110dc378146956c95447d3f3d0fbba", "0151c568386b6677a2b4dc6f81e5dc18",
    "d626b266905ef35882634df68532c125", "9869e247e9c08b10d029934fc4b952f7",
    "31fcefac66d7de9c7ec7485fe4494902", "5493e99933b0a8117e08ec0f97cfc3d9",
    "6ee2a4ca67b054bbfd3315bf85230577", "473d06e8738db89854c066c47ae47740",
    "a426e5e423bf4885294da481feaef723", "78017731cf65fab074d5208952512eb1",
    "9e25fc833f2290733e9344a5e83839eb", "568e495abe525a218a2214cd3e071d12",
    "4a29b54552d16b9a469c10528eff0aae", "c9d184ddd5a9f5e0cf8ce29a9abf691c",
    "2db479ae78bd50d8882a8a178a6132ad", "8ece5f042d5e447b5051b9eacb8d8f6f",
    "9c0b53b4b3c307e87eaee08678141f66", "abf248af69a6eae4bfd3eb2f129eeb94",
    "0664da1668574b88b935f3027358aef4", "aa4b9dc4bf337de90cd4fd3c467c6ab7",
    "ea5c7f471faf6bde2b1ad7d4686d2287", "2939b0183223fafc1723de4f52c43d35",
    "7c3956ca5eeafc3e363e9d556546eb68", "77c6077146f01c32b6b69d5f4ea9ffcf",
    "37a6986cb8847edf0925f0f1309b54de", "a705f0e69da9a8f907241a2e923c8cc8",
    "3dc47d1f29c448461e9e76ed904f6711", "0d62bf01e6fc0e1a0d3c4751c5d3692b",
    "8c03468bca7c669ee4fd5e084bbee7b5", "528a5bb93baf2c9c4473cce5d0d22bd9",
    "df6a301e95c95dad97ae0cc8c6913bd8", "801189902c857f39e73591285e70b6db",
    "e617346ac9c231bb3650ae34ccca0c5b", "27d93437efb721aa401821dcec5adf89",
    "89237d9ded9c5e78d8b1c9b166cc7342", "4a6d8091bf5e7d651189fa94a250b14c",
    "0e33f96055e7ae893ffc0e3dcf492902", "e61c432b720b19d18ec8d84bdc63151b",
    "f7e5aef549f782cf379055a608269b16", "438d030fd0b7a54fa837f2ad201a6403",
    "a590d3ee4fbf04e3247e0d27f286423f", "5fe2c1a172fe93c4b15cd37caef9f538",
    "2c97325cbd06b36eb2133dd08b3a017c", "92c814227a6bca949ff0659f002ad39e",
    "dce850110bd8328cfbd50841d6911d87", "67f14984c7da791248e32bb5922583da",
    "1938f2cf72d54ee97e94166fa91d2a36", "74481e9646ed49fe0f6224301604698e",
    "57fca5de98a9d6d8006438d0583d8a1d", "9fecde1cefdc1cbed4763674d9575359",
    "e3040c00eb28f15366ca73cbd872e740", "7697009a6a831dfecca91c5993670f7a",
    "5853542321f567a005d547a4f04759bd", "5150d1772f50834a503e069a973fbd7c",
};

/* The hash as the reference code prints it: each half little-endian. */
static void sip128_hex(const uint64_t h[2], char out[33])
{
    for (int i = 0; i < 16; i++) {
        unsigned byte = (unsigned)(h[i / 8] >> (8 * (i % 8))) & 0xff;
        snprintf(out + 2 * i, 3, "%02x", byte);
    }
}

static void test_siphash_vectors(void)
{
    /* k0, k1: the key bytes 00..0f read little-endian */
    suspect_siphash_key_t key = {UINT64_C(0x0706050403020100),
                                 UINT64_C(0x0f0e0d0c0b0a0908)};
    unsigned char msg[64];
    char hex[33];
    uint64_t h[2];

    for (int i = 0; i < 64; i++) {
        msg[i] = (unsigned char)i;
    }
    /* all 64, which include the lengths 0, 1, 7, 8, 15, 16 and 63 */
    for (size_t len = 0; len < 64; len++) {
        suspect_siphash128(&key, msg, len, h);
        sip128_hex(h, hex);
        if (strcmp(hex, sip128_vectors[len]) != 0) {
            fprintf(stderr, "siphash128 len %zu: %s, want %s\n", len, hex,
                    sip128_vectors[len]);
        }
        CU_ASSERT_STRING_EQUAL(hex, sip128_vectors[len]);
    }
}

static void test_siphash_unaligned(void)
{
    suspect_siphash_key_t key = {1, 2};
    unsigned char buf[80];
    uint64_t a[2], b[2];

    for (int i = 0; i < 80; i++) {
        buf[i] = (unsigned char)(i * 7);
    }
    memmove(buf + 3, buf, 40);
    suspect_siphash128(&key, buf + 3, 40, a);
    memmove(buf, buf + 3, 40);
    suspect_siphash128(&key, buf, 40, b);
    CU_ASSERT(a[0] == b[0] && a[1] == b[1]);
    key.k1 = 3;
    suspect_siphash128(&key, buf, 40, b);
    CU_ASSERT(a[0] != b[0] || a[1] != b[1]);
}

/* ---- helpers --------------------------------------------------------------
 */

static suspect_rule_t rule_of(const char *action, uint32_t limit,
                              uint32_t window_s, uint32_t block_s)
{
    suspect_rule_t rule = {action, limit, window_s, block_s, 0, 0,
                           0,      0,     0,        0,       0};
    return rule;
}

/* Decides one identity; returns the decision, asserting the store worked. */
static suspect_decision_t decide1(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *key, int64_t now_ms)
{
    suspect_decision_t d;
    CU_ASSERT_EQUAL(suspect_store_decide(store, rule, key, 1, now_ms, &d, NULL),
                    SUSPECT_OK);
    return d;
}

static suspect_status_t status1(suspect_store_t *store,
                                const suspect_rule_t *rule,
                                const suspect_key_t *key, int64_t now_ms)
{
    suspect_status_t st;
    CU_ASSERT_EQUAL(suspect_store_status(store, rule, key, now_ms, &st, NULL),
                    SUSPECT_OK);
    return st;
}

/* ---- strategies -----------------------------------------------------------
 */

static void test_basic(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Login", 3, 10, 0);
    suspect_key_t key = test_key("Login", "alice");
    suspect_decision_t d;

    CU_ASSERT_STRING_EQUAL(suspect_store_name(store), "memory");
    for (uint32_t i = 0; i < 3; i++) {
        d = decide1(store, &rule, &key, 1000 + i);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.remaining, 2 - i);
        CU_ASSERT_EQUAL(d.limit, 3);
        CU_ASSERT_EQUAL(d.restriction_end_ms, 0);
    }
    d = decide1(store, &rule, &key, 5000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(d.tripped, 0);
    CU_ASSERT_EQUAL(d.remaining, 0);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 11000); /* first hit + window */
    CU_ASSERT_EQUAL(d.retry_after_ms, 6000);
    /* denied hits are not recorded */
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 5000).in_window, 3);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    suspect_store_free(store);
}

static void test_window_boundary(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Pay", 2, 10, 0);
    suspect_key_t key = test_key("Pay", "bob");
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(store, &rule, &key, 1000).allowed);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 5000).allowed);
    d = decide1(store, &rule, &key, 10999);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 11000);
    CU_ASSERT_EQUAL(d.retry_after_ms, 1);
    /* the hit at 1000 is out of the window at exactly 1000 + 10000 */
    d = decide1(store, &rule, &key, 11000);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 0);
    d = decide1(store, &rule, &key, 12000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 15000); /* the hit at 5000 */
    /* at 21000 every hit so far has left; only the new one counts */
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 21000).allowed);
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 21000).in_window, 1);
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 31000).in_window, 0);
    suspect_store_free(store);
}

static void test_clock_steps_back(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Pay", 5, 10, 0);
    suspect_key_t key = test_key("Pay", "skew");
    suspect_status_t st;

    CU_ASSERT_TRUE(decide1(store, &rule, &key, 5000).allowed);
    /* recorded at max(now, newest) = 5000, so the ring stays sorted */
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 4990).allowed);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 6000).allowed);
    /* the second hit counts as 5000, not 4990 */
    rule.limit_count = 2;
    st = status1(store, &rule, &key, 7000);
    CU_ASSERT_EQUAL(st.free_at_ms, 15000);
    rule.limit_count = 5;
    st = status1(store, &rule, &key, 14999);
    CU_ASSERT_EQUAL(st.in_window, 3);
    st = status1(store, &rule, &key, 15000);
    CU_ASSERT_EQUAL(st.in_window, 1);
    suspect_store_free(store);
}

static void test_block(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Forgot", 2, 10, 60);
    suspect_key_t key = test_key("Forgot", "carol");
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(store, &rule, &key, 1000).allowed);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 2000).allowed);
    d = decide1(store, &rule, &key, 3000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 63000);
    CU_ASSERT_EQUAL(d.retry_after_ms, 60000);
    /* the window empties, the lock stays and is not extended */
    d = decide1(store, &rule, &key, 40000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 63000);
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 40000).locked_until_ms, 63000);
    d = decide1(store, &rule, &key, 62999);
    CU_ASSERT_FALSE(d.allowed);
    d = decide1(store, &rule, &key, 63000);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1);
    suspect_store_free(store);
}

static void test_limit_lowered_then_raised(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Up", 5, 100, 0);
    suspect_key_t key = test_key("Up", "dave");
    suspect_decision_t d;

    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide1(store, &rule, &key, 1000 * (i + 1)).allowed);
    }
    rule.limit_count = 2; /* a reload lowered it: hits 1000..5000 stay */
    d = decide1(store, &rule, &key, 6000);
    CU_ASSERT_FALSE(d.allowed);
    /* free when hit number 5 - 2 = 3 (4000) leaves */
    CU_ASSERT_EQUAL(d.restriction_end_ms, 104000);
    rule.limit_count = 8;
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide1(store, &rule, &key, 7000 + i).allowed);
    }
    CU_ASSERT_FALSE(decide1(store, &rule, &key, 8000).allowed);
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 8000).in_window, 8);
    suspect_store_free(store);
}

/* ---- several identities ---------------------------------------------------
 */

static void test_multi_deny_if_any(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Upd", 2, 10, 0);
    suspect_key_t keys[2] = {test_key("Upd", "member1"),
                             test_key("Upd", "10.0.0.1")};
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(store, &rule, &keys[1], 1000).allowed);
    CU_ASSERT_TRUE(decide1(store, &rule, &keys[1], 2000).allowed);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, keys, 2, 3000, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 11000);
    /* nothing recorded, and no entry made for the member */
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[0], 3000).in_window, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[1], 3000).in_window, 2);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    suspect_store_free(store);
}

static void test_multi_record_all(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Upd", 3, 10, 0);
    suspect_key_t keys[2] = {test_key("Upd", "member2"),
                             test_key("Upd", "10.0.0.2")};
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(store, &rule, &keys[0], 1000).allowed);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, keys, 2, 2000, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1); /* the smaller of 1 and 2 */
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[0], 2000).in_window, 2);
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[1], 2000).in_window, 1);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 2);
    suspect_store_free(store);
}

static void test_multi_lock_all_over(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Otp", 1, 10, 30);
    suspect_key_t keys[3] = {test_key("Otp", "m"), test_key("Otp", "ip"),
                             test_key("Otp", "fresh")};
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide1(store, &rule, &keys[0], 1000).allowed);
    CU_ASSERT_TRUE(decide1(store, &rule, &keys[1], 1000).allowed);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, keys, 3, 2000, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 32000);
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[0], 2000).locked_until_ms,
                    32000);
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[1], 2000).locked_until_ms,
                    32000);
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[2], 2000).locked_until_ms, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &keys[2], 2000).in_window, 0);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 2);
    suspect_store_free(store);
}

/* n identities in one decision over a store with the given shards. */
static void multi_over_shards(unsigned shards)
{
    suspect_store_t *store = test_memstore(1000, shards);
    suspect_rule_t rule = rule_of("Many", 2, 10, 0);
    suspect_key_t keys[SUSPECT_MAX_IDENTITIES];
    suspect_decision_t d;
    char value[32];

    for (int i = 0; i < SUSPECT_MAX_IDENTITIES; i++) {
        snprintf(value, sizeof(value), "id%d", i);
        keys[i] = test_key("Many", value);
    }
    for (int round = 0; round < 2; round++) {
        CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, keys,
                                             SUSPECT_MAX_IDENTITIES, 1000, &d,
                                             NULL),
                        SUSPECT_OK);
        CU_ASSERT_TRUE(d.allowed);
    }
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, keys,
                                         SUSPECT_MAX_IDENTITIES, 1000, &d,
                                         NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 0);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), SUSPECT_MAX_IDENTITIES);
    for (int i = 0; i < SUSPECT_MAX_IDENTITIES; i++) {
        CU_ASSERT_EQUAL(status1(store, &rule, &keys[i], 1000).in_window, 2);
    }
    suspect_store_free(store);
}

static void test_multi_one_shard(void)
{
    multi_over_shards(1);
}

static void test_multi_across_shards(void)
{
    /* 8 keys over 64 shards: distinct shards, almost surely several */
    multi_over_shards(64);
    /* and two shards: some pair shares one whatever the secret */
    multi_over_shards(2);
}

/* ---- operator operations --------------------------------------------------
 */

static void test_status(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("St", 2, 10, 0);
    suspect_key_t key = test_key("St", "eve");
    suspect_status_t st;

    st = status1(store, &rule, &key, 0);
    CU_ASSERT_EQUAL(st.in_window, 0);
    CU_ASSERT_EQUAL(st.remaining, 2);
    CU_ASSERT_EQUAL(st.locked_until_ms, 0);
    CU_ASSERT_EQUAL(st.free_at_ms, 0);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 0);

    decide1(store, &rule, &key, 1000);
    decide1(store, &rule, &key, 3000);
    st = status1(store, &rule, &key, 4000);
    CU_ASSERT_EQUAL(st.in_window, 2);
    CU_ASSERT_EQUAL(st.remaining, 0);
    CU_ASSERT_EQUAL(st.free_at_ms, 11000);
    /* reading a later time does not drop hits */
    st = status1(store, &rule, &key, 12000);
    CU_ASSERT_EQUAL(st.in_window, 1);
    CU_ASSERT_EQUAL(st.remaining, 1);
    CU_ASSERT_EQUAL(st.free_at_ms, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 4000).in_window, 2);
    suspect_store_free(store);
}

static void test_reset(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Rs", 1, 10, 100);
    suspect_key_t key = test_key("Rs", "frank");
    suspect_key_t other = test_key("Rs", "nobody");
    suspect_status_t st;

    decide1(store, &rule, &key, 1000);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 2000).locked);
    /* unblock keeps the hits: the full window locks again */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &key, SUSPECT_RESET_LOCK, NULL),
                    SUSPECT_OK);
    st = status1(store, &rule, &key, 2000);
    CU_ASSERT_EQUAL(st.locked_until_ms, 0);
    CU_ASSERT_EQUAL(st.in_window, 1);
    CU_ASSERT_EQUAL(decide1(store, &rule, &key, 3000).restriction_end_ms,
                    103000);
    /* forgetting the hits keeps the lock */
    CU_ASSERT_EQUAL(
        suspect_store_reset(store, &key, SUSPECT_RESET_WINDOW, NULL),
        SUSPECT_OK);
    st = status1(store, &rule, &key, 3000);
    CU_ASSERT_EQUAL(st.in_window, 0);
    CU_ASSERT_EQUAL(st.locked_until_ms, 103000);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    /* all: the entry goes */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &key, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 0);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 3000).allowed);
    /* an unknown identity resets fine; a bad what does not */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &other, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_reset(store, &other, 8, NULL),
                    SUSPECT_E_INVAL);
    suspect_store_free(store);
}

static void test_block_op(void)
{
    suspect_store_t *store = test_memstore(0, 0);
    suspect_rule_t rule = rule_of("Bk", 5, 10, 0); /* basic rule */
    suspect_key_t key = test_key("Bk", "grace");
    suspect_decision_t d;

    CU_ASSERT_EQUAL(suspect_store_block(store, &key, 1000, 50000, NULL),
                    SUSPECT_OK);
    d = decide1(store, &rule, &key, 2000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 50000);
    /* a block replaces the lock, even with a shorter one */
    CU_ASSERT_EQUAL(suspect_store_block(store, &key, 2000, 3000, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(status1(store, &rule, &key, 2000).locked_until_ms, 3000);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 3000).allowed);
    CU_ASSERT_EQUAL(suspect_store_block(store, &key, 3000, 3000, NULL),
                    SUSPECT_E_INVAL);
    suspect_store_free(store);
}

/* ---- bounds ---------------------------------------------------------------
 */

static void test_evict_expired_first(void)
{
    suspect_store_t *store = test_memstore(4, 1);
    suspect_rule_t slow = rule_of("Slow", 5, 100, 0);
    suspect_rule_t fast = rule_of("Fast", 5, 1, 0);
    suspect_key_t b = test_key("Slow", "b"), c = test_key("Slow", "c");
    suspect_key_t d = test_key("Slow", "d"), e = test_key("Slow", "e");
    suspect_key_t a = test_key("Fast", "a");

    decide1(store, &slow, &b, 0);
    decide1(store, &slow, &c, 1);
    decide1(store, &slow, &d, 2);
    decide1(store, &fast, &a, 3); /* most recent, but expires at 1003 */
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 4);
    decide1(store, &slow, &e, 5000);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 4);
    /* the least recently used b survived: a went, being expired */
    CU_ASSERT_EQUAL(status1(store, &slow, &b, 5000).in_window, 1);
    CU_ASSERT_EQUAL(status1(store, &slow, &c, 5000).in_window, 1);
    CU_ASSERT_EQUAL(status1(store, &slow, &d, 5000).in_window, 1);
    CU_ASSERT_EQUAL(status1(store, &slow, &e, 5000).in_window, 1);
    suspect_store_free(store);
}

static void test_evict_lru_unlocked(void)
{
    suspect_store_t *store = test_memstore(4, 1);
    suspect_rule_t rule = rule_of("Lru", 5, 100, 0);
    suspect_key_t k[6];
    char value[8];

    for (int i = 0; i < 6; i++) {
        snprintf(value, sizeof(value), "k%d", i);
        k[i] = test_key("Lru", value);
    }
    CU_ASSERT_EQUAL(suspect_store_block(store, &k[0], 0, 1000000, NULL),
                    SUSPECT_OK);
    decide1(store, &rule, &k[1], 1);
    decide1(store, &rule, &k[2], 2);
    decide1(store, &rule, &k[3], 3);
    decide1(store, &rule, &k[1], 4); /* k2 is now the oldest unlocked */
    decide1(store, &rule, &k[4], 5);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 4);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[0], 5).locked_until_ms, 1000000);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[1], 5).in_window, 2);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[2], 5).in_window, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[3], 5).in_window, 1);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[4], 5).in_window, 1);
    suspect_store_free(store);
}

/* Locks identity value of rule at now (limit + 1 hits); asserts it. */
static suspect_key_t lock_one(suspect_store_t *store,
                              const suspect_rule_t *rule, const char *value,
                              int64_t now_ms)
{
    suspect_key_t key = test_key(rule->action, value);
    suspect_decision_t d = {0};

    for (uint32_t i = 0; i <= rule->limit_count; i++) {
        d = decide1(store, rule, &key, now_ms);
    }
    CU_ASSERT_TRUE(d.locked);
    return key;
}

/* A flood of identities that get locked, in a store that also holds
 * counters: the counters go, every lock stays, the oldest included. */
static void test_evict_counters_not_locks(void)
{
    suspect_store_t *store = test_memstore(32, 1);
    suspect_rule_t rule = rule_of("Lk", 2, 100, 600);
    suspect_key_t k[32];
    char value[16];

    for (int i = 0; i < 20; i++) { /* the oldest: locks */
        snprintf(value, sizeof(value), "lock%d", i);
        k[i] = lock_one(store, &rule, value, i);
    }
    for (int i = 0; i < 12; i++) { /* then counters, one hit each */
        suspect_key_t c;
        snprintf(value, sizeof(value), "count%d", i);
        c = test_key("Lk", value);
        decide1(store, &rule, &c, 100 + i);
    }
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 32);
    for (int i = 20; i < 32; i++) { /* more locks: the counters make room */
        snprintf(value, sizeof(value), "lock%d", i);
        k[i] = lock_one(store, &rule, value, 200 + i);
        CU_ASSERT_EQUAL(suspect_memstore_size(store), 32);
    }
    for (int i = 0; i < 32; i++) {
        CU_ASSERT_EQUAL(status1(store, &rule, &k[i], 1000).locked_until_ms,
                        (i < 20 ? i : 200 + i) + 600000);
    }
    suspect_store_free(store);
}

/* A store full of live locks takes no new identity (SUSPECT_E_FULL, for
 * a decision and a block alike) and keeps every lock; when a lock ends
 * (its hit has left the window: a count at its limit is held too), its
 * entry makes room again. */
static void test_full_of_locks(void)
{
    suspect_store_t *store = test_memstore(8, 1);
    suspect_rule_t rule = rule_of("Full", 1, 5, 60);
    suspect_rule_t shorter = rule_of("Full", 1, 5, 10);
    suspect_key_t k[8], fresh = test_key("Full", "fresh");
    suspect_decision_t d;
    suspect_err_t err;
    char value[16];

    for (int i = 0; i < 8; i++) {
        snprintf(value, sizeof(value), "k%d", i);
        k[i] = lock_one(store, i == 0 ? &shorter : &rule, value, 1000);
    }
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 8);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &fresh, 1, 2000, &d, &err),
        SUSPECT_E_FULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "full of live locks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "maxEntries 8"));
    CU_ASSERT_EQUAL(suspect_store_block(store, &fresh, 2000, 9000, NULL),
                    SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 8);
    for (int i = 0; i < 8; i++) { /* the locked are still refused */
        d = decide1(store, &rule, &k[i], 3000);
        CU_ASSERT_FALSE(d.allowed);
        CU_ASSERT_TRUE(d.locked);
    }
    /* k0's lock ends at 11000: its entry is the one that goes */
    d = decide1(store, &rule, &fresh, 12000);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 8);
    for (int i = 1; i < 8; i++) {
        CU_ASSERT_EQUAL(status1(store, &rule, &k[i], 12000).locked_until_ms,
                        61000);
    }
    suspect_store_free(store);
}

static void test_locked_survives_flood(void)
{
    const size_t max = 100;
    suspect_store_t *store = test_memstore(max, 4);
    suspect_rule_t rule = rule_of("Flood", 3, 600, 600);
    suspect_key_t victim = test_key("Flood", "victim");
    suspect_decision_t d;
    char value[32];

    for (int i = 0; i < 4; i++) {
        decide1(store, &rule, &victim, 1000);
    }
    CU_ASSERT_EQUAL(status1(store, &rule, &victim, 1000).locked_until_ms,
                    601000);
    for (size_t i = 0; i < 10 * max; i++) {
        suspect_key_t key;
        snprintf(value, sizeof(value), "flood%zu", i);
        key = test_key("Flood", value);
        decide1(store, &rule, &key, 2000 + (int64_t)i);
        CU_ASSERT(suspect_memstore_size(store) <= max);
    }
    d = decide1(store, &rule, &victim, 5000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, 601000);
    suspect_store_free(store);
}

/* Among counters, the fewest hits go first, then the least recently
 * used: a counter of 3 hits outlives younger ones of 1 and 2. */
static void test_evict_fewest_hits(void)
{
    suspect_store_t *store = test_memstore(4, 1);
    suspect_rule_t rule = rule_of("Few", 10, 600, 0);
    const int hits[4] = {3, 1, 2, 1}; /* a, b, c, d: a the oldest */
    suspect_key_t k[7];
    char value[8];

    for (int i = 0; i < 7; i++) {
        snprintf(value, sizeof(value), "%c", 'a' + i);
        k[i] = test_key("Few", value);
        for (int j = 0; j < (i < 4 ? hits[i] : 1); j++) {
            decide1(store, &rule, &k[i], 10 * i);
        }
        CU_ASSERT_EQUAL(suspect_memstore_size(store), i < 4 ? i + 1 : 4);
    }
    /* e took b's place, f d's, g e's: a and c are left */
    CU_ASSERT_EQUAL(status1(store, &rule, &k[0], 100).in_window, 3);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[2], 100).in_window, 2);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[1], 100).in_window, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[3], 100).in_window, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[4], 100).in_window, 0);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[5], 100).in_window, 1);
    CU_ASSERT_EQUAL(status1(store, &rule, &k[6], 100).in_window, 1);
    suspect_store_free(store);
}

/* A flood of fresh identities, one hit each, ten times the store, does
 * not reset a count below its limit: the counter with more hits stays,
 * and its identity has only the rest of its limit. */
static void test_count_survives_flood(void)
{
    const size_t max = 100;
    suspect_store_t *store = test_memstore(max, 4);
    suspect_rule_t rule = rule_of("Cnt", 5, 600, 0);
    suspect_key_t victim = test_key("Cnt", "victim");
    char value[32];

    decide1(store, &rule, &victim, 1000);
    decide1(store, &rule, &victim, 1001);
    for (size_t i = 0; i < 10 * max; i++) {
        suspect_key_t key;
        snprintf(value, sizeof(value), "flood%zu", i);
        key = test_key("Cnt", value);
        decide1(store, &rule, &key, 2000 + (int64_t)i);
        CU_ASSERT(suspect_memstore_size(store) <= max);
    }
    CU_ASSERT_EQUAL(status1(store, &rule, &victim, 5000).in_window, 2);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide1(store, &rule, &victim, 5000).allowed);
    }
    CU_ASSERT_FALSE(decide1(store, &rule, &victim, 5000).allowed);
    suspect_store_free(store);
}

/* A count at its limit is held like a lock (without BlockDuration the
 * full window is the lock): counters with more hits (another rule's) do
 * not evict it, a store full of such counts takes no new identity, and
 * one whose hits left the window makes room again. */
static void test_at_limit_held(void)
{
    suspect_store_t *store = test_memstore(8, 1);
    suspect_rule_t rule = rule_of("Lim", 2, 10, 0);
    suspect_rule_t wide = rule_of("Wide", 10, 600, 0);
    suspect_key_t k[8], fresh = test_key("Lim", "fresh");
    suspect_decision_t d;
    char value[16];

    for (int i = 0; i < 8; i++) { /* 2 hits each: at the limit */
        snprintf(value, sizeof(value), "lim%d", i);
        k[i] = test_key("Lim", value);
        if (i < 4) {
            decide1(store, &rule, &k[i], 1000 + i);
            decide1(store, &rule, &k[i], 1000 + i);
        }
    }
    for (int i = 0; i < 40; i++) { /* counters of 3 hits */
        suspect_key_t key;
        snprintf(value, sizeof(value), "wide%d", i);
        key = test_key("Wide", value);
        for (int j = 0; j < 3; j++) {
            decide1(store, &wide, &key, 2000 + i);
        }
    }
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 8);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(status1(store, &rule, &k[i], 3000).in_window, 2);
        CU_ASSERT_FALSE(decide1(store, &rule, &k[i], 3000).allowed);
    }
    for (int i = 4; i < 8; i++) { /* the wide counters make room */
        decide1(store, &rule, &k[i], 3000);
        decide1(store, &rule, &k[i], 3000);
    }
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &fresh, 1, 4000, &d, NULL),
        SUSPECT_E_FULL);
    /* k0's hits leave the window at 11000: its entry is the one that goes */
    d = decide1(store, &rule, &fresh, 11000);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 8);
    for (int i = 1; i < 8; i++) {
        CU_ASSERT_EQUAL(status1(store, &rule, &k[i], 11000).in_window, 2);
    }
    suspect_store_free(store);
}

static void test_expire_on_insert(void)
{
    suspect_store_t *store = test_memstore(1000, 1);
    suspect_rule_t rule = rule_of("Exp", 5, 1, 0);
    suspect_key_t k[5];
    char value[8];

    for (int i = 0; i < 5; i++) {
        snprintf(value, sizeof(value), "k%d", i);
        k[i] = test_key("Exp", value);
    }
    decide1(store, &rule, &k[0], 0);
    decide1(store, &rule, &k[1], 0);
    decide1(store, &rule, &k[2], 0);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 3);
    /* the store is far from full: an insert still frees 2 expired ones */
    decide1(store, &rule, &k[3], 5000);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 2);
    decide1(store, &rule, &k[4], 5000);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 2);
    suspect_store_free(store);
}

static void test_small_max_lowers_shards(void)
{
    suspect_store_t *store = test_memstore(3, 64);
    suspect_rule_t rule = rule_of("Tiny", 5, 100, 0);
    char value[16];

    for (int i = 0; i < 50; i++) {
        suspect_key_t key;
        snprintf(value, sizeof(value), "t%d", i);
        key = test_key("Tiny", value);
        decide1(store, &rule, &key, i);
    }
    /* 2 shards of 2: at most max_entries + shards - 1 */
    CU_ASSERT(suspect_memstore_size(store) <= 4);
    suspect_store_free(store);
}

/* ---- bookkeeping ----------------------------------------------------------
 */

/* A locked entry's name: the list link, two hashes, the length, then the
 * key (mem_internal.h, lock_name_t). */
#define NAME_BYTES(len) (8 + 16 + 8 + (size_t)(len))

static void test_size_and_bytes(void)
{
    suspect_store_t *store = test_memstore(1000, 1);
    suspect_rule_t rule = rule_of("Bytes", 10, 100, 0);
    suspect_key_t a = test_key("Bytes", "a"), b = test_key("Bytes", "b");
    const size_t table = INITIAL_BUCKETS * BUCKET_BYTES;
    const size_t name_a = NAME_BYTES(a.window_len);
    char value[16];

    CU_ASSERT_EQUAL(suspect_memstore_size(store), 0);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store), table);
    /* a lock alone: the bare 72-byte entry, and its key kept to list it */
    CU_ASSERT_EQUAL(suspect_store_block(store, &a, 0, 100, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store),
                    table + ENTRY_BYTES + name_a);
    /* hits: a ring of 4, then 8, then the limit, 10 */
    decide1(store, &rule, &b, 1);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store),
                    table + 2 * ENTRY_BYTES + 4 * 8 + name_a);
    for (int i = 0; i < 4; i++) {
        decide1(store, &rule, &b, 2 + i);
    }
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store),
                    table + 2 * ENTRY_BYTES + 8 * 8 + name_a);
    for (int i = 0; i < 6; i++) {
        decide1(store, &rule, &b, 10 + i);
    }
    CU_ASSERT_EQUAL(status1(store, &rule, &b, 20).in_window, 10);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store),
                    table + 2 * ENTRY_BYTES + 10 * 8 + name_a);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 2);
    /* a lock on a, gone: the entry and its name go with the reset */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &a, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store),
                    table + ENTRY_BYTES + 10 * 8);
    /* nine entries in 8 buckets: the table doubles */
    for (int i = 0; i < 8; i++) {
        suspect_key_t key;
        snprintf(value, sizeof(value), "g%d", i);
        key = test_key("Bytes", value);
        CU_ASSERT_EQUAL(suspect_store_block(store, &key, 0, 100, NULL),
                        SUSPECT_OK);
    }
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 9);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store),
                    2 * table + 9 * ENTRY_BYTES + 10 * 8 +
                        8 * NAME_BYTES(strlen("Bytes:g0")));
    suspect_store_free(store);
}

static int count_named(void *arg, const char *key, size_t len, int64_t until)
{
    (void)key;
    (void)len;
    (void)until;
    ++*(int *)arg;
    return 0;
}

/* Names of locked entries have a budget: past it a lock still denies, but
 * is not listed, and the store's bytes stay within entries + budget. */
#define NAMED 300

static void test_names_budget(void)
{
    suspect_store_t *store = test_memstore(1000, 1);
    suspect_rule_t rule = rule_of("Nm", 1, 100, 100);
    char value[1001];
    size_t before;
    int listed = 0;

    memset(value, 'v', sizeof(value) - 1);
    value[sizeof(value) - 1] = '\0';
    for (int i = 0; i < NAMED; i++) {
        suspect_key_t key;

        snprintf(value, 8, "%07d", i);
        value[7] = 'v';
        key = test_key("Nm", value);
        decide1(store, &rule, &key, 0);
        CU_ASSERT_TRUE(decide1(store, &rule, &key, 1).locked);
        CU_ASSERT_TRUE(decide1(store, &rule, &key, 2).locked);
    }
    CU_ASSERT_EQUAL(suspect_store_foreach_locked(store, "Nm:", 3, count_named,
                                                 &listed, NULL),
                    SUSPECT_OK);
    /* 64 bytes of names per entry: 64000 bytes; a key is capped near 300
     * bytes (the value's cap and a digest), so about 200 fit */
    CU_ASSERT(listed > 100 && listed < NAMED);
    CU_ASSERT(suspect_memstore_bytes(store) <=
              NAMED * (ENTRY_BYTES + 8) + 64000 + 1024 * BUCKET_BYTES);
    /* A lifted lock gives its name back: a new one is listed again. */
    before = suspect_memstore_bytes(store);
    for (int i = 0; i < NAMED; i++) {
        suspect_key_t key;

        snprintf(value, 8, "%07d", i);
        value[7] = 'v';
        key = test_key("Nm", value);
        CU_ASSERT_EQUAL(
            suspect_store_reset(store, &key, SUSPECT_RESET_ALL, NULL),
            SUSPECT_OK);
    }
    CU_ASSERT(suspect_memstore_bytes(store) < before);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 0);
    listed = 0;
    {
        suspect_key_t key = test_key("Nm", "again");

        CU_ASSERT_EQUAL(suspect_store_block(store, &key, 0, 50, NULL),
                        SUSPECT_OK);
    }
    CU_ASSERT_EQUAL(suspect_store_foreach_locked(store, NULL, 3, count_named,
                                                 &listed, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(listed, 1);
    suspect_store_free(store);
}

static void test_hostile_value_costs_nothing(void)
{
    suspect_store_t *store = test_memstore(1000, 1);
    suspect_rule_t rule = rule_of("Big", 1, 100, 0);
    size_t len = 64 * 1024;
    char *value = malloc(len + 1);
    suspect_key_t key;
    size_t before = suspect_memstore_bytes(store);

    CU_ASSERT_PTR_NOT_NULL_FATAL(value);
    memset(value, 'x', len);
    value[len] = '\0';
    key = test_key("Big", value);
    CU_ASSERT_TRUE(decide1(store, &rule, &key, 0).allowed);
    CU_ASSERT_FALSE(decide1(store, &rule, &key, 1).allowed);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(store) - before, ENTRY_BYTES + 8);
    free(value);
    suspect_store_free(store);
}

static void test_not_a_memstore(void)
{
    CU_ASSERT_EQUAL(suspect_memstore_size(NULL), 0);
    CU_ASSERT_EQUAL(suspect_memstore_bytes(NULL), 0);
    suspect_store_free(NULL);
}

/* ---- out of memory --------------------------------------------------------
 */

static void test_new_alloc_failures(void)
{
    for (long k = 1; k < 1000; k++) {
        suspect_store_t *store = NULL;
        suspect_err_t err;
        suspect_rc_t rc;

        suspect_err_clear(&err);
        suspect_test_fail_alloc_after(k);
        rc = suspect_memstore_new(NULL, &store, &err);
        suspect_test_fail_alloc_after(-1);
        if (rc == SUSPECT_OK) {
            CU_ASSERT(k > 64); /* the store, the shards, 64 tables */
            suspect_store_free(store);
            return;
        }
        CU_ASSERT_EQUAL(rc, SUSPECT_E_NOMEM);
        CU_ASSERT_EQUAL(err.code, SUSPECT_E_NOMEM);
        CU_ASSERT_PTR_NULL(store);
    }
    CU_FAIL("suspect_memstore_new never succeeded");
}

/* Loads a store for the decision that test_decide_alloc_failures breaks. */
static suspect_store_t *oom_fixture(const suspect_rule_t *rule,
                                    const suspect_key_t *keys)
{
    suspect_store_t *store = test_memstore(1000, 1);
    for (int i = 0; i < 4; i++) {
        decide1(store, rule, &keys[0], i); /* a full ring of 4 */
    }
    decide1(store, rule, &keys[1], 0);
    return store;
}

static void test_decide_alloc_failures(void)
{
    suspect_rule_t rule = rule_of("Oom", 10, 100, 0);
    /* keys 0 and 1 exist (0 must grow), 2 and 3 are new: 4 allocations */
    suspect_key_t keys[4] = {test_key("Oom", "k0"), test_key("Oom", "k1"),
                             test_key("Oom", "k2"), test_key("Oom", "k3")};
    const uint32_t before[4] = {4, 1, 0, 0};
    int failures = 0;

    for (long k = 1; k < 100; k++) {
        suspect_store_t *store = oom_fixture(&rule, keys);
        suspect_decision_t d;
        suspect_rc_t rc;
        size_t size = suspect_memstore_size(store);
        size_t bytes = suspect_memstore_bytes(store);

        suspect_test_fail_alloc_after(k);
        rc = suspect_store_decide(store, &rule, keys, 4, 10, &d, NULL);
        suspect_test_fail_alloc_after(-1);
        if (rc == SUSPECT_OK) {
            CU_ASSERT_TRUE(d.allowed);
            for (int i = 0; i < 4; i++) {
                CU_ASSERT_EQUAL(status1(store, &rule, &keys[i], 10).in_window,
                                before[i] + 1);
            }
            CU_ASSERT_EQUAL(suspect_memstore_size(store), 4);
            suspect_store_free(store);
            CU_ASSERT_EQUAL(failures, 3); /* k0's ring, k2, k3 */
            return;
        }
        failures++;
        CU_ASSERT_EQUAL(rc, SUSPECT_E_NOMEM);
        CU_ASSERT_FALSE(d.allowed);
        /* all or nothing: no hit was recorded anywhere */
        for (int i = 0; i < 4; i++) {
            CU_ASSERT_EQUAL(status1(store, &rule, &keys[i], 10).in_window,
                            before[i]);
        }
        CU_ASSERT_EQUAL(suspect_memstore_size(store), size);
        CU_ASSERT(suspect_memstore_bytes(store) >= bytes);
        /* and the store still works */
        CU_ASSERT_TRUE(decide1(store, &rule, &keys[2], 11).allowed);
        suspect_store_free(store);
    }
    CU_FAIL("the decision never succeeded");
}

static void test_block_alloc_failure(void)
{
    suspect_store_t *store = test_memstore(1000, 1);
    suspect_key_t key = test_key("Oom", "blocked");
    suspect_rc_t rc;

    suspect_test_fail_alloc_after(1);
    rc = suspect_store_block(store, &key, 0, 100, NULL);
    suspect_test_fail_alloc_after(-1);
    CU_ASSERT_EQUAL(rc, SUSPECT_E_NOMEM);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 0);
    CU_ASSERT_EQUAL(suspect_store_block(store, &key, 0, 100, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_memstore_size(store), 1);
    suspect_store_free(store);
}

int register_memstore_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"siphash128 reference vectors", test_siphash_vectors},
        {"siphash128 unaligned input, key matters", test_siphash_unaligned},
        {"basic strategy", test_basic},
        {"window boundary", test_window_boundary},
        {"clock stepping back keeps hits sorted", test_clock_steps_back},
        {"block strategy", test_block},
        {"limit lowered then raised", test_limit_lowered_then_raised},
        {"several identities: deny if any", test_multi_deny_if_any},
        {"several identities: record on all", test_multi_record_all},
        {"several identities: lock all over", test_multi_lock_all_over},
        {"several identities in one shard", test_multi_one_shard},
        {"several identities across shards", test_multi_across_shards},
        {"status", test_status},
        {"reset", test_reset},
        {"block", test_block_op},
        {"eviction: expired first", test_evict_expired_first},
        {"eviction: LRU unlocked next", test_evict_lru_unlocked},
        {"eviction: counters go, locks stay", test_evict_counters_not_locks},
        {"eviction: full of live locks", test_full_of_locks},
        {"eviction: a lock survives a flood", test_locked_survives_flood},
        {"eviction: the fewest hits go first", test_evict_fewest_hits},
        {"eviction: a count survives a flood", test_count_survives_flood},
        {"eviction: a count at its limit is held", test_at_limit_held},
        {"expired entries freed on insert", test_expire_on_insert},
        {"small max_entries lowers shards", test_small_max_lowers_shards},
        {"size and bytes, 72-byte entries", test_size_and_bytes},
        {"a 64 KiB value costs one entry", test_hostile_value_costs_nothing},
        {"names of locks: a budget", test_names_budget},
        {"size and bytes of no store", test_not_a_memstore},
        {"allocation failures: new", test_new_alloc_failures},
        {"allocation failures: decide", test_decide_alloc_failures},
        {"allocation failures: block", test_block_alloc_failure},
    };
    CU_pSuite suite = CU_add_suite("memstore", NULL, NULL);

    if (suite == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(suite, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
