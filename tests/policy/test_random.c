/*
 * test_random.c - the random source (random.h) and what fails with it:
 * bytes that differ from draw to draw, and with the test hook (a kernel
 * without getrandom()) an error in every caller that draws a key, never a
 * key made from the clock.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "helpers/util.h"
#include "random.h"
#include "suites.h"
#include "suspect_failover.h"
#include "suspect_store.h"

static const suspect_rule_t otp = {"Otp", 3, 600, 600, 0, 0, 0, 0, 0, 0, 0};

static void test_draws_differ(void)
{
    unsigned char a[32], b[32], zero[32] = {0};

    CU_ASSERT_EQUAL(suspect_random_bytes(a, sizeof(a), NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_random_bytes(b, sizeof(b), NULL), SUSPECT_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(a, zero, sizeof(a)), 0);
    CU_ASSERT_EQUAL(suspect_random_bytes(a, 0, NULL), SUSPECT_OK);
}

static void test_fails_loudly(void)
{
    unsigned char a[16];
    suspect_err_t err;

    suspect_err_clear(&err);
    suspect_test_fail_random(true);
    CU_ASSERT_EQUAL(suspect_random_bytes(a, sizeof(a), &err), SUSPECT_E_IO);
    suspect_test_fail_random(false);
    CU_ASSERT_EQUAL(err.sys_errno, ENOSYS);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no random bytes"));
}

/* The stores that key their tables fail to be made. */
static void test_stores_fail_without_it(void)
{
    suspect_store_t *primary = NULL, *local = NULL, *s = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    suspect_test_fail_random(true);
    CU_ASSERT_EQUAL(suspect_memstore_new(NULL, &s, &err), SUSPECT_E_IO);
    CU_ASSERT_PTR_NULL(s);
    suspect_test_fail_random(false);

    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(NULL, &primary, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(NULL, &local, NULL), SUSPECT_OK);
    suspect_err_clear(&err);
    suspect_test_fail_random(true);
    /* Takes both stores, and frees them when it fails. */
    CU_ASSERT_EQUAL(suspect_failover_new(primary, local, NULL, &s, &err),
                    SUSPECT_E_IO);
    suspect_test_fail_random(false);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no random bytes"));
}

typedef struct reserve_run {
    suspect_store_t *store;
    suspect_rc_t rc;
    suspect_ticket_t ticket;
    suspect_decision_t d;
} reserve_run_t;

static void *reserve_main(void *arg)
{
    reserve_run_t *r = arg;
    suspect_key_t key = test_key("Otp", "r1");

    r->rc = suspect_store_reserve(r->store, &otp, &key, 1, 1000, 5000, &r->d,
                                  &r->ticket, NULL);
    return NULL;
}

/* A ticket id starts from random bytes in each thread: a thread that
 * cannot draw them holds no slot. */
static void test_ticket_fails_without_it(void)
{
    reserve_run_t r = {0};
    pthread_t t;

    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(NULL, &r.store, NULL),
                          SUSPECT_OK);
    suspect_test_fail_random(true);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, reserve_main, &r), 0);
    pthread_join(t, NULL);
    suspect_test_fail_random(false);
    CU_ASSERT_EQUAL(r.rc, SUSPECT_E_IO);
    CU_ASSERT_EQUAL(r.ticket.id, 0);
    CU_ASSERT_FALSE(r.d.allowed);

    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, reserve_main, &r), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(r.rc, SUSPECT_OK);
    CU_ASSERT_NOT_EQUAL(r.ticket.id, 0);
    CU_ASSERT_TRUE(r.d.allowed);
    suspect_store_free(r.store);
}

int register_random_suite(void)
{
    CU_pSuite s = CU_add_suite("random", NULL, NULL);
    if (s == NULL || !CU_add_test(s, "draws differ", test_draws_differ) ||
        !CU_add_test(s, "fails loudly", test_fails_loudly) ||
        !CU_add_test(s, "stores fail without it",
                     test_stores_fail_without_it) ||
        !CU_add_test(s, "tickets fail without it",
                     test_ticket_fails_without_it)) {
        return -1;
    }
    return 0;
}
