/*
 * test_beyond.c - what goes beyond the seed's semantics, through the store
 * interface, on every store kind that gives it (suite "beyond-<kind>"):
 * repeat offenders (escalating locks with exact ends, the period that
 * forgives, status and reset) and reservations (the
 * limit holds whatever is in flight, settling counts or drops, a reservation
 * never settled is a hit, exact under threads).
 *
 * Time is a fake clock (T0 plus offsets) except in the threads test.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "helpers/stores.h"
#include "helpers/util.h"
#include "suites.h"

#define T0  1710000012345LL
#define SEC 1000LL
#define MIN (60 * SEC)

static const test_store_kind_t *kind;
static suspect_store_t *store;

/* 3 per 10 min, then 30 min, 2 h, 8 h, a day at most; remembered a day
 * after each lock ends. */
static const suspect_rule_t login = {"Login", 3, 600, 1800, 400, 86400,
                                     86400,   0, 0,   0,    0};
/* 3 failures per 10 min, then 10 min locked. */
static const suspect_rule_t otp = {"Otp", 3, 600, 600, 0, 0, 0, 0, 0, 0, 0};

static suspect_decision_t decide(const suspect_rule_t *rule, const char *id,
                                 int64_t at_ms)
{
    suspect_key_t key = test_key(rule->action, id);
    suspect_decision_t d;

    CU_ASSERT_EQUAL_FATAL(
        suspect_store_decide(store, rule, &key, 1, T0 + at_ms, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(d.degraded, 0);
    return d;
}

static suspect_status_t status(const suspect_rule_t *rule, const char *id,
                               int64_t at_ms)
{
    suspect_key_t key = test_key(rule->action, id);
    suspect_status_t st;

    CU_ASSERT_EQUAL(
        suspect_store_status(store, rule, &key, T0 + at_ms, &st, NULL),
        SUSPECT_OK);
    return st;
}

/* Four hits from at_ms on: three allowed, the fourth denied by the lock it
 * creates; returns that denial. */
static suspect_decision_t offend(const char *id, int64_t at_ms)
{
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide(&login, id, at_ms + i).allowed);
    }
    return decide(&login, id, at_ms + 3);
}

/* Three locks in a row, each longer, with exact ends; a fourth at the
 * ceiling; status shows the count, and reset forgets it. */
static void test_escalation_sequence(void)
{
    suspect_decision_t d;
    suspect_status_t st;
    int64_t t = 0;

    d = offend("eve", t);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.offences, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + t + 3 + 30 * MIN);
    st = status(&login, "eve", t + 4);
    CU_ASSERT_EQUAL(st.offences, 1);
    CU_ASSERT_EQUAL(st.offence_until_ms, T0 + t + 3 + 30 * MIN + 86400 * SEC);

    /* while locked: the same end, no new offence */
    d = decide(&login, "eve", t + 10 * MIN);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + t + 3 + 30 * MIN);
    CU_ASSERT_EQUAL(d.offences, 1);

    t += 3 + 30 * MIN + 11 * MIN; /* the window is empty again */
    d = offend("eve", t);
    CU_ASSERT_EQUAL(d.offences, 2);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + t + 3 + 120 * MIN);

    t += 3 + 120 * MIN + 11 * MIN;
    d = offend("eve", t);
    CU_ASSERT_EQUAL(d.offences, 3);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + t + 3 + 480 * MIN);
    CU_ASSERT_EQUAL(d.retry_after_ms, 480 * MIN);

    t += 3 + 480 * MIN + 11 * MIN;
    d = offend("eve", t);
    CU_ASSERT_EQUAL(d.offences, 4);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + t + 3 + 86400 * SEC);
    st = status(&login, "eve", t + 4);
    CU_ASSERT_EQUAL(st.offences, 4);
    CU_ASSERT_EQUAL(st.locked_until_ms, T0 + t + 3 + 86400 * SEC);

    /* reset forgets the offences with the lock and the hits */
    {
        suspect_key_t key = test_key("Login", "eve");
        CU_ASSERT_EQUAL(
            suspect_store_reset(store, &key, SUSPECT_RESET_ALL, NULL),
            SUSPECT_OK);
    }
    st = status(&login, "eve", t + 5);
    CU_ASSERT_EQUAL(st.offences, 0);
    CU_ASSERT_EQUAL(st.locked_until_ms, 0);
    d = offend("eve", t + 5);
    CU_ASSERT_EQUAL(d.offences, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + t + 5 + 3 + 30 * MIN);
}

/* An identity that gets no lock for the period after its last one starts
 * again at BlockDuration; one period minus a millisecond does not. */
static void test_offence_period_forgives(void)
{
    suspect_decision_t d;
    int64_t end;

    d = offend("bob", 0);
    end = d.restriction_end_ms - T0;
    d = offend("bob", end + 86400 * SEC - 10); /* within the period */
    CU_ASSERT_EQUAL(d.offences, 2);
    end = d.restriction_end_ms - T0;
    d = offend("bob", end + 86400 * SEC); /* the period is over */
    CU_ASSERT_EQUAL(d.offences, 1);
    CU_ASSERT_EQUAL(d.restriction_end_ms - T0,
                    end + 86400 * SEC + 3 + 30 * MIN);
}

/* Each identity of a request keeps its own count. */
static void test_offences_per_identity(void)
{
    suspect_key_t keys[2] = {test_key("Login", "m1"),
                             test_key("Login", "10.0.0.1")};
    suspect_decision_t d;

    offend("m1", 0); /* m1 has one offence, the address none */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(suspect_store_decide(store, &login, &keys[1], 1,
                                             T0 + 40 * MIN + i, &d, NULL),
                        SUSPECT_OK);
    }
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(suspect_store_decide(store, &login, &keys[0], 1,
                                             T0 + 40 * MIN + 10 + i, &d, NULL),
                        SUSPECT_OK);
    }
    CU_ASSERT_EQUAL(suspect_store_decide(store, &login, keys, 2,
                                         T0 + 40 * MIN + 20, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(d.locks_created, 2);
    CU_ASSERT_EQUAL(d.tripped, 0); /* the member's lock ends last */
    CU_ASSERT_EQUAL(d.offences, 2);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 40 * MIN + 20 + 120 * MIN);
    CU_ASSERT_EQUAL(status(&login, "10.0.0.1", 40 * MIN + 21).locked_until_ms,
                    T0 + 40 * MIN + 20 + 30 * MIN);
}

/* ---- reservations ---------------------------------------------------- */

static suspect_decision_t reserve(const suspect_rule_t *rule, const char *id,
                                  int64_t at_ms, suspect_ticket_t *t)
{
    suspect_key_t key = test_key(rule->action, id);
    suspect_decision_t d;

    CU_ASSERT_EQUAL_FATAL(suspect_store_reserve(store, rule, &key, 1,
                                                T0 + at_ms, 30 * SEC, &d, t,
                                                NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(d.degraded, 0);
    return d;
}

static void settle(const suspect_rule_t *rule, const char *id,
                   const suspect_ticket_t *t, bool failed, int64_t at_ms)
{
    suspect_key_t key = test_key(rule->action, id);

    CU_ASSERT_EQUAL(
        suspect_store_settle(store, rule, &key, 1, t, failed, T0 + at_ms, NULL),
        SUSPECT_OK);
}

/* Three reservations fill the window: the fourth is busy, not locked; a success
 * frees its reservation; failures become hits at their own times and lock. */
static void test_reservations_hold_the_limit(void)
{
    suspect_ticket_t t[4];
    suspect_decision_t d;
    suspect_status_t st;

    CU_ASSERT_TRUE(suspect_store_can_reserve(store));
    for (int i = 0; i < 3; i++) {
        d = reserve(&otp, "p1", i, &t[i]);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_NOT_EQUAL(t[i].id, 0);
        CU_ASSERT_EQUAL(t[i].at_ms, T0 + i);
        CU_ASSERT_EQUAL(t[i].end_ms, T0 + i + 30 * SEC);
    }
    d = reserve(&otp, "p1", 10, &t[3]);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.busy);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(t[3].id, 0);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 10 + SUSPECT_BUSY_RETRY_MS);
    st = status(&otp, "p1", 11);
    CU_ASSERT_EQUAL(st.pending, 3);
    CU_ASSERT_EQUAL(st.in_window, 0);
    CU_ASSERT_EQUAL(st.remaining, 0);

    settle(&otp, "p1", &t[1], false, 20); /* it succeeded */
    st = status(&otp, "p1", 21);
    CU_ASSERT_EQUAL(st.pending, 2);
    CU_ASSERT_EQUAL(st.remaining, 1);
    settle(&otp, "p1", &t[1], true, 22); /* settled once only */
    CU_ASSERT_EQUAL(status(&otp, "p1", 23).in_window, 0);

    settle(&otp, "p1", &t[0], true, 30);
    settle(&otp, "p1", &t[2], true, 31);
    st = status(&otp, "p1", 32);
    CU_ASSERT_EQUAL(st.pending, 0);
    CU_ASSERT_EQUAL(st.in_window, 2);
    d = reserve(&otp, "p1", 40, &t[1]);
    CU_ASSERT_TRUE(d.allowed);
    settle(&otp, "p1", &t[1], true, 50);
    /* three failures at 0, 2 and 40: the next attempt locks */
    d = decide(&otp, "p1", 60);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 60 + 600 * SEC);
    /* hits are timed when taken: the first leaves the window at 600 s */
    CU_ASSERT_EQUAL(status(&otp, "p1", 600 * SEC).in_window, 2);
}

/* A reservation never settled is a hit at its time once its end has come; a
 * settlement after that changes nothing. */
static void test_reservation_never_settled_counts(void)
{
    suspect_ticket_t t[3];
    suspect_status_t st;

    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(reserve(&otp, "p2", i * SEC, &t[i]).allowed);
    }
    st = status(&otp, "p2", 30 * SEC - 1);
    CU_ASSERT_EQUAL(st.pending, 3);
    st = status(&otp, "p2", 30 * SEC);
    CU_ASSERT_EQUAL(st.pending, 2);
    CU_ASSERT_EQUAL(st.in_window, 1);
    /* a decision makes them hits for good */
    CU_ASSERT_TRUE(decide(&otp, "p2", 40 * SEC).locked);
    settle(&otp, "p2", &t[2], false, 41 * SEC);
    st = status(&otp, "p2", 42 * SEC);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_EQUAL(st.pending, 0);

    /* a success reported after the end, nothing decided meanwhile */
    CU_ASSERT_TRUE(reserve(&otp, "p4", 0, &t[0]).allowed);
    settle(&otp, "p4", &t[0], false, 30 * SEC);
    CU_ASSERT_EQUAL(status(&otp, "p4", 31 * SEC).in_window, 1);
}

/* A plain decision sees the reservations of reservations on the same action. */
static void test_decisions_see_reservations(void)
{
    suspect_ticket_t t[2];

    CU_ASSERT_TRUE(reserve(&otp, "p3", 0, &t[0]).allowed);
    CU_ASSERT_TRUE(reserve(&otp, "p3", 1, &t[1]).allowed);
    CU_ASSERT_TRUE(decide(&otp, "p3", 2).allowed);
    CU_ASSERT_TRUE(decide(&otp, "p3", 3).busy);
    /* reset forgets hits and reservations alike */
    {
        suspect_key_t key = test_key("Otp", "p3");
        CU_ASSERT_EQUAL(
            suspect_store_reset(store, &key, SUSPECT_RESET_WINDOW, NULL),
            SUSPECT_OK);
    }
    CU_ASSERT_EQUAL(status(&otp, "p3", 4).pending, 0);
    settle(&otp, "p3", &t[0], true, 5); /* gone: nothing happens */
    CU_ASSERT_EQUAL(status(&otp, "p3", 6).in_window, 0);
}

/* Several identities: a reservation on each, settled on each. */
static void test_reservations_on_every_identity(void)
{
    suspect_key_t keys[2] = {test_key("Otp", "m9"),
                             test_key("Otp", "192.0.2.9")};
    suspect_ticket_t t;
    suspect_decision_t d;

    CU_ASSERT_EQUAL(
        suspect_store_reserve(store, &otp, keys, 2, T0, 5 * SEC, &d, &t, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(status(&otp, "m9", 1).pending, 1);
    CU_ASSERT_EQUAL(status(&otp, "192.0.2.9", 1).pending, 1);
    CU_ASSERT_EQUAL(
        suspect_store_settle(store, &otp, keys, 2, &t, true, T0 + 2, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(status(&otp, "m9", 3).in_window, 1);
    CU_ASSERT_EQUAL(status(&otp, "192.0.2.9", 3).in_window, 1);
}

/* ---- threads: 100 wrong guesses at once, LimitCount of them through --- */

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define RACERS 16
#define TRIES  100

typedef struct race {
    pthread_barrier_t *go;
    int through;
} race_t;

static void *racer(void *arg)
{
    race_t *r = arg;
    suspect_key_t key = test_key("Otp", "raced");

    pthread_barrier_wait(r->go);
    for (int i = 0; i < TRIES / RACERS + 1; i++) {
        suspect_decision_t d;
        suspect_ticket_t t;

        if (suspect_store_reserve(store, &otp, &key, 1, wall_ms(), 30 * SEC, &d,
                                  &t, NULL) == SUSPECT_OK &&
            d.allowed) {
            r->through++;
            /* a wrong guess: it counts */
            (void)suspect_store_settle(store, &otp, &key, 1, &t, true,
                                       wall_ms(), NULL);
        }
    }
    return NULL;
}

static void test_threads_never_overshoot(void)
{
    pthread_t th[RACERS];
    race_t r[RACERS];
    pthread_barrier_t go;
    int through = 0;

    pthread_barrier_init(&go, NULL, RACERS);
    for (int i = 0; i < RACERS; i++) {
        r[i].go = &go;
        r[i].through = 0;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, racer, &r[i]), 0);
    }
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        through += r[i].through;
    }
    pthread_barrier_destroy(&go);
    CU_ASSERT_EQUAL(through, 3);
}

/* ---- registration -------------------------------------------------------- */

static void open_store(void)
{
    store = kind->open();
}

static void close_store(void)
{
    suspect_store_free(store);
    store = NULL;
}

static const struct {
    const char *name;
    CU_TestFunc fn;
} tests[] = {
    {"escalation sequence, exact ends", test_escalation_sequence},
    {"the offence period forgives", test_offence_period_forgives},
    {"offences per identity", test_offences_per_identity},
    {"reservations hold the limit", test_reservations_hold_the_limit},
    {"a reservation never settled counts",
     test_reservation_never_settled_counts},
    {"decisions see reservations", test_decisions_see_reservations},
    {"reservations on every identity", test_reservations_on_every_identity},
    {"threads never overshoot", test_threads_never_overshoot},
};

/* The kinds that give every feature tested here. */
static bool kind_covered(const char *name)
{
    (void)name;
    return true; /* every store gives every feature */
}

/* Each suite sets the kind it runs on when it starts. */
#define KIND_HOOKS(i)                                                          \
    static int suite_init_##i(void)                                            \
    {                                                                          \
        kind = test_store_kinds[i];                                            \
        return kind->setup != NULL ? kind->setup() : 0;                        \
    }                                                                          \
    static int suite_clean_##i(void)                                           \
    {                                                                          \
        return kind->teardown != NULL ? kind->teardown() : 0;                  \
    }
KIND_HOOKS(0)
KIND_HOOKS(1)
KIND_HOOKS(2)
KIND_HOOKS(3)
KIND_HOOKS(4)
KIND_HOOKS(5)

static int (*const suite_inits[])(void) = {suite_init_0, suite_init_1,
                                           suite_init_2, suite_init_3,
                                           suite_init_4, suite_init_5};
static int (*const suite_cleans[])(void) = {suite_clean_0, suite_clean_1,
                                            suite_clean_2, suite_clean_3,
                                            suite_clean_4, suite_clean_5};

int register_beyond_suite(void)
{
    for (size_t k = 0; test_store_kinds[k] != NULL; k++) {
        char name[64];
        CU_pSuite s;

        if (k >= sizeof(suite_inits) / sizeof(suite_inits[0])) {
            return -1;
        }
        if (!kind_covered(test_store_kinds[k]->name)) {
            continue;
        }
        snprintf(name, sizeof(name), "beyond-%s", test_store_kinds[k]->name);
        s = CU_add_suite_with_setup_and_teardown(
            name, suite_inits[k], suite_cleans[k], open_store, close_store);
        if (s == NULL) {
            return -1;
        }
        for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
            if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
                return -1;
            }
        }
    }
    return 0;
}
