/*
 * test_evaluate.c - the pure decision: suspect_policy_evaluate() on states
 * built by hand, no store involved.
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "suites.h"
#include "suspect_policy.h"

#define NOW 1710000000000LL

static const suspect_rule_t basic = {"BankAccountUpdate", 2, 120, 0};
static const suspect_rule_t locking = {"SecureForgotAccount", 3, 1800, 1800};

static suspect_window_state_t state(int64_t lock_until, uint32_t in_window,
                                    int64_t free_at)
{
    suspect_window_state_t st = {lock_until, in_window, free_at};
    return st;
}

static void test_allow_counts_remaining(void)
{
    suspect_window_state_t st[2] = {state(0, 0, 0), state(0, 1, 0)};
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&basic, st, 2, NOW, &plan, &d);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_TRUE(plan.record);
    CU_ASSERT_EQUAL(d.tripped, -1);
    CU_ASSERT_EQUAL(d.limit, 2);
    CU_ASSERT_EQUAL(d.remaining, 0); /* the fuller identity decides */
    CU_ASSERT_EQUAL(d.restriction_end_ms, 0);
    CU_ASSERT_EQUAL(d.retry_after_ms, 0);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], 0);
    CU_ASSERT_EQUAL(plan.lock_until_ms[1], 0);
}

static void test_basic_full_window_denies_until_free(void)
{
    suspect_window_state_t st = state(0, 2, NOW + 100000);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&basic, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(plan.record);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(d.tripped, 0);
    CU_ASSERT_EQUAL(d.remaining, 0);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 100000);
    CU_ASSERT_EQUAL(d.retry_after_ms, 100000);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], 0); /* basic never locks */
}

static void test_block_full_window_creates_lock(void)
{
    suspect_window_state_t st = state(0, 3, NOW + 5);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], NOW + 1800000);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 1800000);
    CU_ASSERT_EQUAL(d.retry_after_ms, 1800000);
}

static void test_live_lock_denies_and_is_not_extended(void)
{
    suspect_window_state_t st = state(NOW + 42, 0, 0);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 42);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], 0);
}

static void test_lock_denies_even_under_basic_rule(void)
{
    /* An operator's block applies to every action. */
    suspect_window_state_t st = state(NOW + 1000, 0, 0);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&basic, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 1000);
}

static void test_expired_lock_is_ignored(void)
{
    suspect_window_state_t st = state(NOW, 0, 0); /* ends exactly now */
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 2);
}

static void test_every_identity_over_is_locked(void)
{
    suspect_window_state_t st[3] = {state(NOW + 10, 0, 0), state(0, 3, 1),
                                    state(0, 1, 0)};
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, st, 3, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(plan.record);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], 0); /* already locked */
    CU_ASSERT_EQUAL(plan.lock_until_ms[1], NOW + 1800000);
    CU_ASSERT_EQUAL(plan.lock_until_ms[2], 0); /* not over */
    CU_ASSERT_EQUAL(d.tripped, 1);             /* ends last */
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 1800000);
}

static void test_tripped_is_latest_end_first_of_equals(void)
{
    suspect_window_state_t st[3] = {
        state(0, 2, NOW + 50), state(0, 2, NOW + 70), state(0, 2, NOW + 70)};
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&basic, st, 3, NOW, &plan, &d);
    CU_ASSERT_EQUAL(d.tripped, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 70);
    CU_ASSERT_EQUAL(d.retry_after_ms, 70);
}

static void test_over_limit_after_limit_lowered(void)
{
    /* The limit was lowered by a reload: 5 hits held, limit 2. */
    suspect_window_state_t st = state(0, 5, NOW + 9);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&basic, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 9);
}

static void test_confused_free_at_still_in_future(void)
{
    suspect_window_state_t st = state(0, 2, NOW - 5);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&basic, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.restriction_end_ms > NOW);
    CU_ASSERT_TRUE(d.retry_after_ms > 0);
}

int register_evaluate_suite(void)
{
    CU_pSuite s = CU_add_suite("evaluate", NULL, NULL);
    if (s == NULL ||
        !CU_add_test(s, "allow counts remaining",
                     test_allow_counts_remaining) ||
        !CU_add_test(s, "basic full window denies until free",
                     test_basic_full_window_denies_until_free) ||
        !CU_add_test(s, "block full window creates lock",
                     test_block_full_window_creates_lock) ||
        !CU_add_test(s, "live lock denies, not extended",
                     test_live_lock_denies_and_is_not_extended) ||
        !CU_add_test(s, "lock denies under basic rule",
                     test_lock_denies_even_under_basic_rule) ||
        !CU_add_test(s, "expired lock ignored", test_expired_lock_is_ignored) ||
        !CU_add_test(s, "every identity over is locked",
                     test_every_identity_over_is_locked) ||
        !CU_add_test(s, "tripped is latest end",
                     test_tripped_is_latest_end_first_of_equals) ||
        !CU_add_test(s, "over limit after limit lowered",
                     test_over_limit_after_limit_lowered) ||
        !CU_add_test(s, "confused free_at still in future",
                     test_confused_free_at_still_in_future)) {
        return -1;
    }
    return 0;
}
