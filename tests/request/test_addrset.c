/*
 * test_addrset.c - address block sets (middleware/request/addrset.c): both
 * families, merged and touching blocks, the edges of a block, and 100,000
 * random blocks checked against a linear scan on random addresses.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "request/addrset.h"
#include "request_test.h"

static mw_addr_t addr(const char *s)
{
    mw_addr_t a;

    CU_ASSERT_FATAL(mw_addr_parse(s, strlen(s), &a) == SUSPECT_OK);
    return a;
}

static void add(mw_addrset_t *s, const char *block)
{
    mw_cidr_t c;

    CU_ASSERT_FATAL(mw_cidr_parse(block, strlen(block), &c, NULL) ==
                    SUSPECT_OK);
    CU_ASSERT_FATAL(mw_addrset_add(s, &c) == SUSPECT_OK);
}

static bool has(const mw_addrset_t *s, const char *a)
{
    mw_addr_t x = addr(a);

    return mw_addrset_contains(s, &x);
}

static void test_blocks(void)
{
    mw_addrset_t *s = mw_addrset_new();

    CU_ASSERT_FATAL(s != NULL);
    add(s, "10.0.0.0/8");
    add(s, "192.0.2.7");
    add(s, "2001:db8::/32");
    add(s, "10.1.0.0/16"); /* inside 10/8: merged */
    add(s, "11.0.0.0/8");  /* touches 10/8: merged */
    add(s, "::1");
    mw_addrset_finish(s);
    CU_ASSERT_EQUAL(mw_addrset_ranges(s), 4);
    CU_ASSERT_TRUE(has(s, "10.0.0.0"));
    CU_ASSERT_TRUE(has(s, "11.255.255.255"));
    CU_ASSERT_FALSE(has(s, "12.0.0.0"));
    CU_ASSERT_FALSE(has(s, "9.255.255.255"));
    CU_ASSERT_TRUE(has(s, "192.0.2.7"));
    CU_ASSERT_FALSE(has(s, "192.0.2.8"));
    CU_ASSERT_TRUE(has(s, "::ffff:10.9.8.7")); /* mapped: IPv4 */
    CU_ASSERT_TRUE(has(s, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"));
    CU_ASSERT_FALSE(has(s, "2001:db9::"));
    CU_ASSERT_TRUE(has(s, "::1"));
    CU_ASSERT_FALSE(has(s, "::2"));
    CU_ASSERT_FALSE(mw_addrset_contains(NULL, NULL));
    mw_addrset_free(s);

    s = mw_addrset_new();
    add(s, "::/0");
    add(s, "0.0.0.0/0");
    mw_addrset_finish(s);
    CU_ASSERT_TRUE(has(s, "255.255.255.255"));
    CU_ASSERT_TRUE(has(s, "ffff::1"));
    CU_ASSERT_EQUAL(mw_addrset_ranges(s), 1);
    mw_addrset_free(s);
}

/* 100,000 random IPv4 blocks (/16 to /32): every lookup agrees with a
 * linear scan of the blocks. */
static void test_random_against_scan(void)
{
    enum { BLOCKS = 100000, PROBES = 2000 };
    mw_cidr_t *c = malloc(BLOCKS * sizeof(*c));
    mw_addrset_t *s = mw_addrset_new();
    unsigned seed = 12345;
    size_t wrong = 0, hits = 0;

    CU_ASSERT_FATAL(c != NULL && s != NULL);
    for (size_t i = 0; i < BLOCKS; i++) {
        uint32_t v =
            (uint32_t)rand_r(&seed) * 2654435761u ^ (uint32_t)rand_r(&seed);
        unsigned prefix = 16 + (unsigned)rand_r(&seed) % 17;
        uint32_t mask = prefix == 32 ? UINT32_MAX : ~(UINT32_MAX >> prefix);

        v &= mask;
        memset(&c[i], 0, sizeof(c[i]));
        c[i].addr.family = 4;
        c[i].addr.bytes[0] = (uint8_t)(v >> 24);
        c[i].addr.bytes[1] = (uint8_t)(v >> 16);
        c[i].addr.bytes[2] = (uint8_t)(v >> 8);
        c[i].addr.bytes[3] = (uint8_t)v;
        c[i].prefix = prefix;
        CU_ASSERT_FATAL(mw_addrset_add(s, &c[i]) == SUSPECT_OK);
    }
    mw_addrset_finish(s);
    for (size_t p = 0; p < PROBES; p++) {
        mw_addr_t a;
        bool scan = false;

        memset(&a, 0, sizeof(a));
        a.family = 4;
        if (p % 2 == 0) { /* inside a random block */
            a = c[(size_t)rand_r(&seed) % BLOCKS].addr;
            a.bytes[3] ^= (uint8_t)(rand_r(&seed) & 1);
        } else {
            uint32_t v = (uint32_t)rand_r(&seed) * 2654435761u;
            a.bytes[0] = (uint8_t)(v >> 24);
            a.bytes[1] = (uint8_t)(v >> 16);
            a.bytes[2] = (uint8_t)(v >> 8);
            a.bytes[3] = (uint8_t)v;
        }
        for (size_t i = 0; i < BLOCKS && !scan; i++) {
            scan = mw_cidr_contains(&c[i], &a);
        }
        hits += scan;
        wrong += scan != mw_addrset_contains(s, &a);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(hits > PROBES / 4);
    free(c);
    mw_addrset_free(s);
}

int request_register_addrset(CU_pSuite s)
{
    return CU_add_test(s, "address sets: blocks", test_blocks) == NULL ||
                   CU_add_test(s, "address sets: 100,000 blocks vs a scan",
                               test_random_against_scan) == NULL
               ? -1
               : 0;
}
