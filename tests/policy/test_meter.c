/*
 * test_meter.c - the token bucket and the two-window sliding counter
 * (policy/meter.c), driven with suspect_policy_evaluate() as a store
 * drives them, the clock by hand.
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "meter.h"
#include "suites.h"

#define NOW 1710000000000LL /* a multiple of 60 s */

/* One decision on one identity, as a store makes it: read, evaluate, take
 * when allowed.  Returns the decision. */
static suspect_decision_t decide(const suspect_rule_t *rule, suspect_meter_t *m,
                                 int64_t now_ms)
{
    suspect_window_state_t st;
    suspect_plan_t plan;
    suspect_decision_t d;

    memset(&st, 0, sizeof(st));
    suspect_meter_read(rule, m, now_ms, &st);
    suspect_policy_evaluate(rule, &st, 1, now_ms, &plan, &d);
    if (plan.record) {
        suspect_meter_take(rule, m, now_ms, suspect_rule_cost(rule));
    }
    return d;
}

static suspect_rule_t bucket(uint32_t rate, uint32_t per_s, uint32_t burst)
{
    suspect_rule_t r = {"OtpSend",           rate,  per_s, 0, 0, 0, 0, 0,
                        SUSPECT_ALGO_BUCKET, burst, 0};
    return r;
}

/* OTP sends per phone: capacity 5, 5 per minute.  A burst of 5 passes, the 6th
 * is refused until the next token (12 s), then exactly one more passes. */
static void test_otp_burst_then_one_token_per_interval(void)
{
    suspect_rule_t r = bucket(5, 60, 0);
    suspect_meter_t m = {0, 0, 0};
    suspect_decision_t d;

    for (int i = 0; i < 5; i++) {
        d = decide(&r, &m, NOW);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.remaining, (uint32_t)(4 - i));
    }
    d = decide(&r, &m, NOW);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(d.retry_after_ms, 12000);
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 12000);
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 11999).allowed);
    CU_ASSERT_TRUE(decide(&r, &m, NOW + 12000).allowed);
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 12000).allowed);
    /* a minute of quiet fills it again, never beyond the capacity */
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW + 600000).allowed);
    }
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 600000).allowed);
}

/* An empty bucket locks under a block rule, as an OTP check does. */
static void test_empty_bucket_locks(void)
{
    suspect_rule_t r = bucket(5, 60, 0);
    suspect_meter_t m = {0, 0, 0};
    suspect_decision_t d;

    r.block_s = 900;
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    }
    d = decide(&r, &m, NOW);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.locks_created, 1);
    CU_ASSERT_EQUAL(d.retry_after_ms, 900000);
}

/* A heavier operation takes more tokens.  Burst 10: two
 * requests of cost 5 empty it; one of cost 1 waits one interval, one of
 * cost 5 waits five. */
static void test_cost_takes_more_tokens(void)
{
    suspect_rule_t light = bucket(10, 60, 10), heavy = light;
    suspect_meter_t m = {0, 0, 0};
    suspect_decision_t d;

    heavy.cost = 5;
    CU_ASSERT_TRUE(decide(&heavy, &m, NOW).allowed);
    d = decide(&heavy, &m, NOW);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 0);
    d = decide(&light, &m, NOW);
    CU_ASSERT_EQUAL(d.retry_after_ms, 6000);
    d = decide(&heavy, &m, NOW);
    CU_ASSERT_EQUAL(d.retry_after_ms, 30000);
    /* four tokens back: the light one fits, the heavy one still not */
    CU_ASSERT_FALSE(decide(&heavy, &m, NOW + 24000).allowed);
    CU_ASSERT_TRUE(decide(&light, &m, NOW + 24000).allowed);
}

/* A capacity above the rate: a burst of 20, then 1 per 6 s. */
static void test_burst_above_rate(void)
{
    suspect_rule_t r = bucket(10, 60, 20);
    suspect_meter_t m = {0, 0, 0};
    suspect_decision_t d;

    for (int i = 0; i < 20; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    }
    d = decide(&r, &m, NOW);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.limit, 20);
    CU_ASSERT_EQUAL(d.retry_after_ms, 6000);
}

/* A reservation that succeeded gives its tokens back; one that came back
 * already stays back; make_room leaves room for exactly one request. */
static void test_give_back_and_make_room(void)
{
    suspect_rule_t r = bucket(5, 60, 0);
    suspect_meter_t m = {0, 0, 0};

    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    }
    suspect_meter_give(&r, &m, NOW, 1);
    CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    CU_ASSERT_FALSE(decide(&r, &m, NOW).allowed);
    CU_ASSERT_EQUAL(suspect_meter_make_room(&r, &m, NOW), 1);
    CU_ASSERT_EQUAL(suspect_meter_make_room(&r, &m, NOW), 0);
    CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    CU_ASSERT_FALSE(decide(&r, &m, NOW).allowed);
    CU_ASSERT_EQUAL(suspect_meter_end_ms(&r, &m), NOW + 60000);
}

/* A rate that does not divide the duration: 7 per minute, 8,571,428 us
 * between tokens, the wait rounded up to the ms. */
static void test_uneven_interval(void)
{
    suspect_rule_t r = bucket(7, 60, 1);
    suspect_meter_t m = {0, 0, 0};
    suspect_decision_t d;

    CU_ASSERT_EQUAL(suspect_meter_interval_us(&r), 8571428);
    CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    d = decide(&r, &m, NOW);
    CU_ASSERT_EQUAL(d.retry_after_ms, 8572);
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 8571).allowed);
    CU_ASSERT_TRUE(decide(&r, &m, NOW + 8572).allowed);
}

static suspect_rule_t counter(uint32_t limit, uint32_t per_s)
{
    suspect_rule_t r = {
        "Feed", limit, per_s, 0, 0, 0, 0, 0, SUSPECT_ALGO_COUNTER, 0, 0};
    return r;
}

/* Within one window the counter is exact. */
static void test_counter_one_window(void)
{
    suspect_rule_t r = counter(5, 60);
    suspect_meter_t m = {0, 0, 0};
    suspect_decision_t d;

    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW + 1000).allowed);
    }
    d = decide(&r, &m, NOW + 1000);
    CU_ASSERT_FALSE(d.allowed);
    /* the 5 hits weigh on the next window; the cost of 1 fits when their
     * share is 4: 12 s into it */
    CU_ASSERT_EQUAL(d.restriction_end_ms, NOW + 60000 + 12000);
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 71999).allowed);
    CU_ASSERT_TRUE(decide(&r, &m, NOW + 72000).allowed);
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 72000).allowed);
}

/* The stated worst case: hits bunched at a window's end let through at
 * most twice the limit in a stretch of one window, never more. */
static void test_counter_worst_case_is_twice_the_limit(void)
{
    suspect_rule_t r = counter(100, 60);
    suspect_meter_t m = {0, 0, 0};
    int admitted = 0;

    for (int i = 0; i < 1000; i++) {
        admitted += decide(&r, &m, NOW + 59999).allowed;
    }
    CU_ASSERT_EQUAL(admitted, 100);
    /* the next 59,998 ms, one try per ms: the true count of the last
     * minute reaches 100 + what these let in */
    for (int64_t t = NOW + 60000; t < NOW + 119998; t++) {
        admitted += decide(&r, &m, t).allowed;
    }
    CU_ASSERT_TRUE(admitted <= 200);
    CU_ASSERT_TRUE(admitted >= 190);
}

/* Hits bunched at a window's start: the counter is stricter than the
 * truth, never looser. */
static void test_counter_stricter_after_early_hits(void)
{
    suspect_rule_t r = counter(10, 60);
    suspect_meter_t m = {0, 0, 0};

    for (int i = 0; i < 10; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    }
    /* 1 ms after the window: the true last minute holds 10 hits but for
     * 1 ms; the counter still weighs them whole */
    CU_ASSERT_FALSE(decide(&r, &m, NOW + 60000).allowed);
    CU_ASSERT_TRUE(decide(&r, &m, NOW + 66000).allowed);
}

/* Give back and room on the counter; a window skipped forgets all. */
static void test_counter_give_room_and_forget(void)
{
    suspect_rule_t r = counter(3, 60);
    suspect_meter_t m = {0, 0, 0};

    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    }
    suspect_meter_give(&r, &m, NOW, 1);
    CU_ASSERT_TRUE(decide(&r, &m, NOW).allowed);
    CU_ASSERT_FALSE(decide(&r, &m, NOW).allowed);
    CU_ASSERT_EQUAL(suspect_meter_make_room(&r, &m, NOW + 30000), 1);
    CU_ASSERT_TRUE(decide(&r, &m, NOW + 30000).allowed);
    CU_ASSERT_EQUAL(suspect_meter_end_ms(&r, &m), NOW + 120000);
    CU_ASSERT_TRUE(decide(&r, &m, NOW + 120000).allowed);
    CU_ASSERT_EQUAL(m.prev, 0);
}

int register_meter_suite(void)
{
    CU_pSuite s = CU_add_suite("meter", NULL, NULL);

    if (s == NULL ||
        !CU_add_test(s, "otp: a burst of 5, then one per 12 s",
                     test_otp_burst_then_one_token_per_interval) ||
        !CU_add_test(s, "an empty bucket locks", test_empty_bucket_locks) ||
        !CU_add_test(s, "a cost takes more tokens",
                     test_cost_takes_more_tokens) ||
        !CU_add_test(s, "burst above the rate", test_burst_above_rate) ||
        !CU_add_test(s, "give back and make room",
                     test_give_back_and_make_room) ||
        !CU_add_test(s, "uneven interval", test_uneven_interval) ||
        !CU_add_test(s, "counter: one window", test_counter_one_window) ||
        !CU_add_test(s, "counter: worst case twice the limit",
                     test_counter_worst_case_is_twice_the_limit) ||
        !CU_add_test(s, "counter: stricter after early hits",
                     test_counter_stricter_after_early_hits) ||
        !CU_add_test(s, "counter: give, room, forget",
                     test_counter_give_room_and_forget)) {
        return -1;
    }
    return 0;
}
