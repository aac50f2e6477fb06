/*
 * test_threads.c - the memory store under threads (suite "threads").
 *
 * Exactness: NTHREADS threads hammer one identity and the store must never
 * admit more than limit_count hits per window, with a fixed now_ms (exactly
 * limit_count admitted, each "remaining" value seen once) and with now_ms
 * advancing through several windows.
 *
 * The advancing clock is a shared atomic that moves in ticks: every thread
 * makes its calls at the current tick, then all meet at a barrier and one
 * of them advances the clock.  The clock is not free-running on purpose: a
 * thread that reads a free-running clock and is then descheduled decides
 * later with an old now_ms, and counting its hit in the window of that old
 * time would blame the store for the test's own attribution (the store
 * records it at max(now, newest), in a later window).  Ticks keep "the time
 * of a decision" well defined while the threads still race within a tick.
 *
 * A token bucket (OTP sends): 300 threads on one phone never
 * get more sends than the bucket holds, nor more than the tokens that
 * came back since.
 *
 * Deadlock freedom: decisions over several identities from threads that list
 * them in opposite orders, joined with a deadline.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "suites.h"
#include "suspect_store.h"
#include "helpers/stores.h"
#include "helpers/util.h"

#define NTHREADS 8
#define CALLS    10000

typedef struct hammer {
    suspect_store_t *store;
    suspect_rule_t rule;
    suspect_key_t key;
    int64_t now_ms;
    long admitted;            /* atomic */
    long errors;              /* atomic */
    long seen[1000];          /* atomic: allowed decisions per remaining */
    long locked_bad;          /* atomic: lock denials with a wrong end */
    pthread_barrier_t *start; /* every thread starts at once */
} hammer_t;

/* Waits for every thread in threads[0..n-1], failing the test program if
 * one is still running after deadline_s (a deadlock). */
static void join_all(pthread_t *threads, int n, int deadline_s)
{
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += deadline_s;
    for (int i = 0; i < n; i++) {
        int rc = pthread_timedjoin_np(threads[i], NULL, &deadline);
        if (rc == ETIMEDOUT) {
            fprintf(stderr,
                    "threads: thread %d still running after %d s: "
                    "deadlock\n",
                    i, deadline_s);
            abort();
        }
        CU_ASSERT_EQUAL(rc, 0);
    }
}

/* Starts NTHREADS threads running fn(arg[i * stride]). */
static void run_threads(void *(*fn)(void *), void *arg, size_t stride,
                        int deadline_s)
{
    pthread_t threads[NTHREADS];

    for (int i = 0; i < NTHREADS; i++) {
        CU_ASSERT_EQUAL_FATAL(
            pthread_create(&threads[i], NULL, fn, (char *)arg + i * stride), 0);
    }
    join_all(threads, NTHREADS, deadline_s);
}

/* ---- one identity, a fixed now --------------------------------------------
 */

static void *hammer_fixed(void *arg)
{
    hammer_t *h = arg;

    pthread_barrier_wait(h->start);
    for (int i = 0; i < CALLS; i++) {
        suspect_decision_t d;
        if (suspect_store_decide(h->store, &h->rule, &h->key, 1, h->now_ms, &d,
                                 NULL) != SUSPECT_OK) {
            __atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (d.allowed) {
            __atomic_add_fetch(&h->admitted, 1, __ATOMIC_RELAXED);
            if (d.remaining < 1000) {
                __atomic_add_fetch(&h->seen[d.remaining], 1, __ATOMIC_RELAXED);
            }
        } else if (d.locked && h->rule.block_s > 0 &&
                   d.restriction_end_ms !=
                       h->now_ms + (int64_t)h->rule.block_s * 1000) {
            __atomic_add_fetch(&h->locked_bad, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

/* NTHREADS x CALLS decisions of one identity at one now_ms. */
static void fixed_now(uint32_t limit, uint32_t block_s)
{
    static hammer_t h; /* large; shared by the threads */
    pthread_barrier_t start;
    pthread_t threads[NTHREADS];

    memset(&h, 0, sizeof(h));
    h.store = test_memstore(0, 0);
    h.rule =
        (suspect_rule_t){"Hammer", limit, 60, block_s, 0, 0, 0, 0, 0, 0, 0};
    h.key = test_key("Hammer", "one");
    h.now_ms = 1000000;
    h.start = &start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        CU_ASSERT_EQUAL_FATAL(
            pthread_create(&threads[i], NULL, hammer_fixed, &h), 0);
    }
    join_all(threads, NTHREADS, 30);
    pthread_barrier_destroy(&start);

    CU_ASSERT_EQUAL(h.errors, 0);
    CU_ASSERT_EQUAL(h.admitted, (long)limit);
    CU_ASSERT_EQUAL(h.locked_bad, 0);
    /* each count of remaining hits was handed out exactly once */
    for (uint32_t r = 0; r < limit && r < 1000; r++) {
        CU_ASSERT_EQUAL(h.seen[r], 1);
    }
    suspect_store_free(h.store);
}

static void test_fixed_now_basic(void)
{
    fixed_now(100, 0);
    fixed_now(1, 0);
}

static void test_fixed_now_block(void)
{
    fixed_now(10, 300);
}

/* ---- one identity, a clock that advances ----------------------------------
 */

#define TICKS          60
#define TICK_MS        100
#define WINDOW_S       1 /* 10 ticks */
#define CALLS_PER_TICK 200

typedef struct ticking {
    suspect_store_t *store;
    suspect_rule_t rule;
    suspect_key_t key;
    int64_t clock_ms; /* atomic: the shared fake clock */
    long admitted[TICKS];
    long errors;
    pthread_barrier_t tick;
} ticking_t;

static void *hammer_ticking(void *arg)
{
    ticking_t *t = arg;

    for (int tick = 0; tick < TICKS; tick++) {
        for (int i = 0; i < CALLS_PER_TICK; i++) {
            int64_t now = __atomic_load_n(&t->clock_ms, __ATOMIC_ACQUIRE);
            suspect_decision_t d;
            if (suspect_store_decide(t->store, &t->rule, &t->key, 1, now, &d,
                                     NULL) != SUSPECT_OK) {
                __atomic_add_fetch(&t->errors, 1, __ATOMIC_RELAXED);
            } else if (d.allowed) {
                __atomic_add_fetch(&t->admitted[(now - 5000) / TICK_MS], 1,
                                   __ATOMIC_RELAXED);
            }
        }
        if (pthread_barrier_wait(&t->tick) == PTHREAD_BARRIER_SERIAL_THREAD) {
            __atomic_add_fetch(&t->clock_ms, TICK_MS, __ATOMIC_RELEASE);
        }
        pthread_barrier_wait(&t->tick);
    }
    return NULL;
}

/* Runs the ticking hammer with rule; checks every window of 10 ticks. */
static void advancing(uint32_t limit, uint32_t block_s)
{
    static ticking_t t;
    pthread_t threads[NTHREADS];
    const int per_window = WINDOW_S * 1000 / TICK_MS;
    long total = 0;

    memset(&t, 0, sizeof(t));
    t.store = test_memstore(0, 0);
    t.rule =
        (suspect_rule_t){"Tick", limit, WINDOW_S, block_s, 0, 0, 0, 0, 0, 0, 0};
    t.key = test_key("Tick", "one");
    t.clock_ms = 5000;
    pthread_barrier_init(&t.tick, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        CU_ASSERT_EQUAL_FATAL(
            pthread_create(&threads[i], NULL, hammer_ticking, &t), 0);
    }
    join_all(threads, NTHREADS, 30);
    pthread_barrier_destroy(&t.tick);

    CU_ASSERT_EQUAL(t.errors, 0);
    /* a hit at tick s is in the window at tick e when s > e - per_window */
    for (int end = 0; end < TICKS; end++) {
        long in_window = 0;
        for (int s = end - per_window + 1; s <= end; s++) {
            in_window += s >= 0 ? t.admitted[s] : 0;
        }
        if (in_window > (long)limit) {
            fprintf(stderr, "tick %d: %ld admitted in the window\n", end,
                    in_window);
        }
        CU_ASSERT(in_window <= (long)limit);
        total += t.admitted[end];
    }
    if (block_s == 0) {
        /* demand is far above the limit: every window fills exactly */
        CU_ASSERT_EQUAL(total, (long)limit * (TICKS / per_window));
    } else {
        CU_ASSERT(total >= (long)limit);
    }
    suspect_store_free(t.store);
}

static void test_advancing_basic(void)
{
    advancing(50, 0);
}

static void test_advancing_block(void)
{
    /* a 2-window lock: fill, lock, wait it out, fill again */
    advancing(20, 2);
}

/* ---- several identities, opposite orders ----------------------------------
 */

typedef struct multi {
    suspect_store_t *store;
    suspect_rule_t rule;
    suspect_key_t shared[3];
    long admitted; /* atomic */
    long errors;   /* atomic */
} multi_t;

typedef struct multi_arg {
    multi_t *m;
    int index;
} multi_arg_t;

static void *hammer_multi(void *arg)
{
    multi_arg_t *a = arg;
    multi_t *m = a->m;
    suspect_key_t keys[4];
    char value[16];

    /* even threads list the shared identities forwards, odd ones backwards,
     * and each adds its own */
    for (int i = 0; i < 3; i++) {
        keys[i] = m->shared[a->index % 2 == 0 ? i : 2 - i];
    }
    snprintf(value, sizeof(value), "own%d", a->index);
    keys[3] = test_key("Multi", value);
    if (a->index % 2 != 0) {
        suspect_key_t own = keys[3];
        keys[3] = keys[0];
        keys[0] = own;
    }
    for (int i = 0; i < CALLS; i++) {
        suspect_decision_t d;
        if (suspect_store_decide(m->store, &m->rule, keys, 4, 1000, &d, NULL) !=
            SUSPECT_OK) {
            __atomic_add_fetch(&m->errors, 1, __ATOMIC_RELAXED);
        } else if (d.allowed) {
            __atomic_add_fetch(&m->admitted, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void opposite_orders(unsigned shards)
{
    static multi_t m;
    multi_arg_t args[NTHREADS];

    memset(&m, 0, sizeof(m));
    m.store = test_memstore(1000, shards);
    m.rule = (suspect_rule_t){"Multi", 500, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    m.shared[0] = test_key("Multi", "a");
    m.shared[1] = test_key("Multi", "b");
    m.shared[2] = test_key("Multi", "c");
    for (int i = 0; i < NTHREADS; i++) {
        args[i].m = &m;
        args[i].index = i;
    }
    run_threads(hammer_multi, args, sizeof(args[0]), 30);
    CU_ASSERT_EQUAL(m.errors, 0);
    /* every admitted request recorded on the shared identities */
    CU_ASSERT_EQUAL(m.admitted, 500);
    suspect_store_free(m.store);
}

static void test_opposite_orders(void)
{
    opposite_orders(64);
    opposite_orders(2);
}

/* ---- a token bucket under 300 clients -------------------------------- */

#define OTP_CLIENTS 300

typedef struct otp_client {
    hammer_t *h;
    int64_t now_ms;
    pthread_barrier_t *start;
} otp_client_t;

/* One client: three sends at its now. */
static void *otp_send(void *arg)
{
    otp_client_t *c = arg;

    pthread_barrier_wait(c->start);
    for (int i = 0; i < 3; i++) {
        suspect_decision_t d;

        if (suspect_store_decide(c->h->store, &c->h->rule, &c->h->key, 1,
                                 c->now_ms, &d, NULL) != SUSPECT_OK) {
            __atomic_add_fetch(&c->h->errors, 1, __ATOMIC_RELAXED);
        } else if (d.allowed) {
            __atomic_add_fetch(&c->h->admitted, 1, __ATOMIC_RELAXED);
        } else if (d.restriction_end_ms <= c->now_ms) {
            __atomic_add_fetch(&c->h->locked_bad, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

/* OTP_CLIENTS threads send at once at now; returns the sends admitted. */
static long otp_round(hammer_t *h, int64_t now_ms)
{
    static pthread_t threads[OTP_CLIENTS];
    static otp_client_t clients[OTP_CLIENTS];
    pthread_barrier_t start;

    h->admitted = 0;
    pthread_barrier_init(&start, NULL, OTP_CLIENTS);
    for (int i = 0; i < OTP_CLIENTS; i++) {
        clients[i] = (otp_client_t){h, now_ms, &start};
        CU_ASSERT_EQUAL_FATAL(
            pthread_create(&threads[i], NULL, otp_send, &clients[i]), 0);
    }
    join_all(threads, OTP_CLIENTS, 60);
    pthread_barrier_destroy(&start);
    return h->admitted;
}

/* OTP sends: one phone, a bucket of 5 refilled 5 per minute, 300 clients
 * sending at once: 5 pass, and 12 s later exactly one more; with a cost
 * of 2 on a capacity of 10, 5 pass. */
static void test_otp_bucket_clients(void)
{
    static hammer_t h;

    memset(&h, 0, sizeof(h));
    h.store = test_memstore(0, 0);
    h.rule = (suspect_rule_t){"OtpSend",           5, 60, 0, 0, 0, 0, 0,
                              SUSPECT_ALGO_BUCKET, 0, 0};
    h.key = test_key("OtpSend", "+886912345678");
    CU_ASSERT_EQUAL(otp_round(&h, 1000000), 5);
    CU_ASSERT_EQUAL(otp_round(&h, 1000000 + 11999), 0);
    CU_ASSERT_EQUAL(otp_round(&h, 1000000 + 12000), 1);
    h.rule.burst = 10;
    h.rule.cost = 2;
    h.key = test_key("OtpSend", "+886900000000");
    CU_ASSERT_EQUAL(otp_round(&h, 1000000), 5);
    CU_ASSERT_EQUAL(h.errors, 0);
    CU_ASSERT_EQUAL(h.locked_bad, 0);
    suspect_store_free(h.store);
}

int register_threads_suite(void)
{
    CU_pSuite suite = CU_add_suite("threads", NULL, NULL);

    if (suite == NULL ||
        CU_add_test(suite, "one identity, fixed now, basic",
                    test_fixed_now_basic) == NULL ||
        CU_add_test(suite, "one identity, fixed now, block",
                    test_fixed_now_block) == NULL ||
        CU_add_test(suite, "one identity, advancing clock, basic",
                    test_advancing_basic) == NULL ||
        CU_add_test(suite, "one identity, advancing clock, block",
                    test_advancing_block) == NULL ||
        CU_add_test(suite, "several identities in opposite orders",
                    test_opposite_orders) == NULL ||
        CU_add_test(suite, "a token bucket under 300 clients",
                    test_otp_bucket_clients) == NULL) {
        return -1;
    }
    return 0;
}
