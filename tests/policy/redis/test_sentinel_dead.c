/*
 * test_sentinel_dead.c - suite "sentinel": every sentinel paused
 * (SIGSTOP), and a store that knows no master yet.
 *
 * A paused sentinel is the slow case of a lookup: the kernel still accepts
 * the connection, and the question goes unanswered until the timeout.  A
 * request's Redis work (the sentinels asked, the master connected and
 * checked, the script) runs against one deadline, the store's timeout, so:
 *   - the bare store, LOAD_THREADS threads deciding without pause (each
 *     decision goes to the store): every decision fails (a timeout, or
 *     the last lookup's error) within the timeout and SENTINEL_SLACK_MS,
 *     the deciding threads' waits for a CPU aside (test_ha_waits_t).  Without
 * the deadline a lookup asked the sentinels one after another, each with its
 * own timeouts: three timeouts and more for one decision;
 *   - the store as suspect-fcgi builds it (the failover wrapper, fail mode
 *     open, a probe at least every second): every decision is the fail
 *     mode's, within the same bound, and only the few that reached the
 *     store took long (the failures that opened the breaker, those in
 *     flight then, and the probes): a dead sentinel set does not cost
 *     every request its timeout;
 *   - once the sentinels resume, decisions go back to Redis by themselves.
 * The figures are printed (docs/FAULTS.md quotes them).
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "sentinel_parts.h"
#include "suspect_failover.h"
#include "suspect_redis.h"

#define TIMEOUT_MS   100
#define LOAD_THREADS 4
#define RUN_MS       600
#define WRAPPED_MS   1500
#define SLOW_MS      (TIMEOUT_MS / 2) /* a decision that waited on Redis */

static test_sentinel_set_t *set;

static const suspect_rule_t rule = {"Dead", 1000000, 600, 0, 0, 0,
                                    0,      0,       0,   0, 0};

typedef struct worker {
    suspect_store_t *store;
    bool wrapped; /* the answer must be the fail mode's */
    int id;
    volatile int *stop;
    test_ha_waits_t *waits; /* of the deciding threads */
    long long decisions, wrong, slow, worst_ms;
} worker_t;

/* One decision, timed (less the waits for a CPU) and checked. */
static void decide(worker_t *w, long n)
{
    char value[48];
    suspect_key_t key;
    suspect_decision_t d;
    long long q[TEST_HA_MAX_THREADS], t0, dt;
    suspect_rc_t rc;

    snprintf(value, sizeof(value), "w%d-%ld", w->id, n);
    key = test_key(rule.action, value);
    test_ha_waits_read(w->waits, q);
    t0 = test_ha_mono_ms();
    rc = suspect_store_decide(w->store, &rule, &key, 1, test_ha_wall_ms(), &d,
                              NULL);
    dt = test_ha_mono_ms() - t0 - test_ha_waits_since(w->waits, q);
    w->decisions++;
    w->worst_ms = dt > w->worst_ms ? dt : w->worst_ms;
    w->slow += dt >= SLOW_MS;
    if (w->wrapped) {
        w->wrong += rc != SUSPECT_OK || !d.allowed ||
                    d.degraded != SUSPECT_DEGRADED_OPEN;
    } else {
        w->wrong += rc != SUSPECT_E_TIMEOUT && rc != SUSPECT_E_STORE;
    }
}

static void *work(void *arg)
{
    worker_t *w = arg;

    test_ha_waits_join(w->waits);
    for (long n = 0; !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE); n++) {
        decide(w, n);
    }
    return NULL;
}

/* LOAD_THREADS threads decide on store for ms; their sums into *sum. */
static void run_load(suspect_store_t *store, bool wrapped, long ms,
                     worker_t *sum)
{
    pthread_t tid[LOAD_THREADS];
    worker_t w[LOAD_THREADS];
    test_ha_waits_t waits;
    volatile int stop = 0;

    memset(w, 0, sizeof(w));
    memset(sum, 0, sizeof(*sum));
    memset(&waits, 0, sizeof(waits));
    for (int i = 0; i < LOAD_THREADS; i++) {
        w[i].store = store;
        w[i].wrapped = wrapped;
        w[i].id = i;
        w[i].stop = &stop;
        w[i].waits = &waits;
        pthread_create(&tid[i], NULL, work, &w[i]);
    }
    test_ha_sleep_ms(ms);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < LOAD_THREADS; i++) {
        pthread_join(tid[i], NULL);
        sum->decisions += w[i].decisions;
        sum->wrong += w[i].wrong;
        sum->slow += w[i].slow;
        sum->worst_ms =
            w[i].worst_ms > sum->worst_ms ? w[i].worst_ms : sum->worst_ms;
    }
    test_ha_waits_close(&waits);
}

static suspect_store_t *open_bare(void)
{
    suspect_redis_opts_t ro = {set->url, TIMEOUT_MS, TIMEOUT_MS, 0, NULL};
    suspect_store_t *redis = NULL;

    return suspect_redis_new(&ro, &redis, NULL) == SUSPECT_OK ? redis : NULL;
}

/* The wrapper suspect-fcgi builds around the store, fail mode open. */
static suspect_store_t *open_wrapped(void)
{
    suspect_failover_opts_t fo;
    suspect_store_t *redis = open_bare(), *mem = NULL, *store = NULL;

    memset(&fo, 0, sizeof(fo));
    fo.mode = SUSPECT_FAIL_OPEN;
    fo.max_open_ms = 1000;
    if (redis == NULL || suspect_memstore_new(NULL, &mem, NULL) != SUSPECT_OK ||
        suspect_failover_new(redis, mem, &fo, &store, NULL) != SUSPECT_OK) {
        return NULL;
    }
    return store;
}

static void signal_sentinels(int sig)
{
    for (int i = 0; i < TEST_SENTINELS; i++) {
        kill(set->sentinel_pid[i], sig);
    }
}

/* Decides on store until Redis answers (deadline scaled): true if it did. */
static bool back_on_redis(suspect_store_t *store)
{
    long long deadline = test_ha_mono_ms() + test_scale_ms(10000);
    suspect_key_t key = test_key(rule.action, "after");

    while (test_ha_mono_ms() < deadline) {
        suspect_decision_t d;
        if (suspect_store_decide(store, &rule, &key, 1, test_ha_wall_ms(), &d,
                                 NULL) == SUSPECT_OK) {
            return true;
        }
        test_ha_sleep_ms(20);
    }
    return false;
}

static void test_dead(void)
{
    long long bound = TIMEOUT_MS + test_scale_ms(SENTINEL_SLACK_MS);
    suspect_store_t *bare = open_bare(), *wrapped = open_wrapped();
    suspect_failover_stats_t fs;
    worker_t b, w;

    CU_ASSERT_PTR_NOT_NULL_FATAL(bare);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wrapped);
    signal_sentinels(SIGSTOP);
    run_load(bare, false, RUN_MS, &b);
    run_load(wrapped, true, WRAPPED_MS, &w);
    signal_sentinels(SIGCONT);
    suspect_failover_stats(wrapped, &fs);
    printf("\n    sentinels paused, no master known (timeout %d ms): bare "
           "store %lld decisions, slowest %lld ms, %lld waited on Redis; "
           "wrapped %lld decisions, slowest %lld ms, %lld waited on Redis "
           "(%llu probes)\n    ",
           TIMEOUT_MS, b.decisions, b.worst_ms, b.slow, w.decisions, w.worst_ms,
           w.slow, (unsigned long long)fs.probes);
    CU_ASSERT_TRUE(b.decisions > 0);
    CU_ASSERT_EQUAL(b.wrong, 0);
    CU_ASSERT_TRUE(b.worst_ms <= bound);
    CU_ASSERT_TRUE(b.slow > 0); /* the sentinels were asked */
    CU_ASSERT_EQUAL(w.wrong, 0);
    CU_ASSERT_TRUE(w.worst_ms <= bound);
    /* 3 failures open the breaker; LOAD_THREADS may be in flight then. */
    CU_ASSERT_TRUE(w.slow <= 3 + LOAD_THREADS + (long long)fs.probes);
    CU_ASSERT_TRUE(w.decisions > 10 * w.slow);
    CU_ASSERT_TRUE(back_on_redis(bare));
    suspect_store_free(bare);
    suspect_store_free(wrapped);
}

int sentinel_dead_register(CU_pSuite s, test_sentinel_set_t *the_set)
{
    set = the_set;
    return CU_add_test(s,
                       "sentinels paused, no master known: each request "
                       "within its timeout",
                       test_dead) != NULL
               ? 0
               : -1;
}
