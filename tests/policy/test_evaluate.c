/*
 * test_evaluate.c - the pure decision: suspect_policy_evaluate() on states
 * built by hand, no store involved.
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "suites.h"
#include "suspect_policy.h"

#define NOW 1710000000000LL

static const suspect_rule_t basic = {
    "BankAccountUpdate", 2, 120, 0, 0, 0, 0, 0, 0, 0, 0};
static const suspect_rule_t locking = {
    "SecureForgotAccount", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0};

static suspect_window_state_t state(int64_t lock_until, uint32_t in_window,
                                    int64_t free_at)
{
    suspect_window_state_t st = {lock_until, in_window, free_at, 0, 0, 0};
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

/* ---- reservations -------------------------------------------------- */

static suspect_window_state_t pending(uint32_t in_window, uint32_t n,
                                      int64_t end)
{
    suspect_window_state_t st = {0, in_window, 0, n, end, 0};
    return st;
}

static void test_reservations_count_against_the_limit(void)
{
    /* 1 hit + 1 reservation of 3: one more fits, then none. */
    suspect_window_state_t st = pending(1, 1, NOW + 30000);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_TRUE(plan.record);
    CU_ASSERT_EQUAL(d.remaining, 0);

    st = pending(1, 2, NOW + 30000);
    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(plan.record);
    CU_ASSERT_TRUE(d.busy);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], 0); /* reservations never lock */
    CU_ASSERT_EQUAL(d.locks_created, 0);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + SUSPECT_BUSY_RETRY_MS);
}

static void test_busy_ends_with_the_earliest_reservation(void)
{
    suspect_window_state_t st = pending(0, 3, NOW + 250);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_TRUE(d.busy);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 250);
    CU_ASSERT_EQUAL(d.retry_after_ms, 250);
}

static void test_hits_over_the_limit_lock_whatever_is_in_flight(void)
{
    suspect_window_state_t st = pending(3, 2, NOW + 250);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.busy);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], NOW + 1800000);
}

static void test_a_lock_outlasts_a_busy_identity(void)
{
    /* One identity busy (1 s at most), the other over: the lock is the
     * restriction reported, and it is created. */
    suspect_window_state_t st[2] = {pending(0, 3, NOW + 30000),
                                    state(0, 3, NOW + 1)};
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, st, 2, NOW, &plan, &d);
    CU_ASSERT_EQUAL(d.tripped, 1);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_FALSE(d.busy);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], 0);
    CU_ASSERT_EQUAL(plan.lock_until_ms[1], NOW + 1800000);
}

static void test_settle_counts(void)
{
    CU_ASSERT_TRUE(suspect_policy_settle_counts(true, NOW + 1, NOW));
    CU_ASSERT_FALSE(suspect_policy_settle_counts(false, NOW + 1, NOW));
    /* past its end it is a hit already, whatever the response said */
    CU_ASSERT_TRUE(suspect_policy_settle_counts(false, NOW, NOW));
}

/* ---- repeat offenders ------------------------------------------------- */

/* 30 min, then x4 up to a day, remembered a day after each lock. */
static const suspect_rule_t escalating = {"Login", 3, 600, 1800, 400, 86400,
                                          86400,   0, 0,   0,    0};

static suspect_window_state_t offender(uint32_t offences)
{
    suspect_window_state_t st = {0, 3, NOW + 1, 0, 0, offences};
    return st;
}

static void test_lock_durations_escalate_to_the_ceiling(void)
{
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&escalating, 1), 1800000);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&escalating, 2), 7200000);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&escalating, 3), 28800000);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&escalating, 4), 86400000);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&escalating, 4000000000u), 86400000);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&locking, 7), 1800000);
    CU_ASSERT_TRUE(suspect_rule_escalates(&escalating));
    CU_ASSERT_FALSE(suspect_rule_escalates(&locking));
    CU_ASSERT_EQUAL(suspect_rule_offence_ms(&escalating), 86400000);
}

static void test_fractional_factor_rounds_down_each_step(void)
{
    suspect_rule_t r = {"Otp", 3, 60, 7, 150, 3600, 0, 0, 0, 0, 0};

    /* 7 s, 10.5 s, 15.75 s, 23.625 s (ms: floor each step) */
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&r, 2), 10500);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&r, 3), 15750);
    CU_ASSERT_EQUAL(suspect_rule_lock_ms(&r, 4), 23625);
    CU_ASSERT_EQUAL(suspect_rule_offence_ms(&r), 3600000);
}

static void test_new_lock_is_the_next_offence(void)
{
    suspect_window_state_t st = offender(2);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&escalating, &st, 1, NOW, &plan, &d);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], NOW + 28800000);
    CU_ASSERT_EQUAL(plan.offences[0], 3);
    CU_ASSERT_EQUAL(plan.offence_until_ms[0], NOW + 28800000 + 86400000);
    CU_ASSERT_EQUAL(d.offences, 3);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 28800000);
}

static void test_live_lock_reports_its_offences(void)
{
    suspect_window_state_t st = {NOW + 5, 0, 0, 0, 0, 2};
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&escalating, &st, 1, NOW, &plan, &d);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.offences, 2);
    CU_ASSERT_EQUAL(plan.offences[0], 0); /* nothing new to keep */
}

static void test_without_factor_no_offences_are_kept(void)
{
    suspect_window_state_t st = offender(5);
    suspect_plan_t plan;
    suspect_decision_t d;

    suspect_policy_evaluate(&locking, &st, 1, NOW, &plan, &d);
    CU_ASSERT_EQUAL(plan.lock_until_ms[0], NOW + 1800000);
    CU_ASSERT_EQUAL(plan.offences[0], 0);
    CU_ASSERT_EQUAL(d.offences, 0);
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
                     test_confused_free_at_still_in_future) ||
        !CU_add_test(s, "reservations count against the limit",
                     test_reservations_count_against_the_limit) ||
        !CU_add_test(s, "busy ends with the earliest reservation",
                     test_busy_ends_with_the_earliest_reservation) ||
        !CU_add_test(s, "hits over the limit lock, reservations or not",
                     test_hits_over_the_limit_lock_whatever_is_in_flight) ||
        !CU_add_test(s, "a lock outlasts a busy identity",
                     test_a_lock_outlasts_a_busy_identity) ||
        !CU_add_test(s, "settle counts", test_settle_counts) ||
        !CU_add_test(s, "lock durations escalate to the ceiling",
                     test_lock_durations_escalate_to_the_ceiling) ||
        !CU_add_test(s, "fractional factor rounds down each step",
                     test_fractional_factor_rounds_down_each_step) ||
        !CU_add_test(s, "new lock is the next offence",
                     test_new_lock_is_the_next_offence) ||
        !CU_add_test(s, "live lock reports its offences",
                     test_live_lock_reports_its_offences) ||
        !CU_add_test(s, "without a factor no offences are kept",
                     test_without_factor_no_offences_are_kept)) {
        return -1;
    }
    return 0;
}
