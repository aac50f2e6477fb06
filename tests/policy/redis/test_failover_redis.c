/*
 * test_failover_redis.c - the failover wrapper on a real redis-server
 * (suite "failover", registered by ../test_failover.c, whose init starts
 * the server):
 *
 *   - a lock served from the cache costs Redis nothing (INFO
 *     commandstats);
 *   - kill -9 under load in each fail mode, then a restart on the same
 *     socket: every call returns in time and without error, only the fail
 *     mode decides while Redis is down, Redis decides again soon after.
 * Every wait is on a condition, with a deadline scaled by test_scale_ms().
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "redis_parts.h"
#include "helpers/redisserver.h"
#include "suspect_failover.h"
#include "suspect_redis.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

static void sleep_ms(long ms)
{
    usleep((useconds_t)ms * 1000);
}

/* ---- on a real Redis -----------------------------------------------------
 */

static test_redis_t *srv;

static suspect_store_t *redis_failover(unsigned timeout_ms,
                                       suspect_failmode_t mode)
{
    suspect_failover_opts_t fopts = {mode, NULL, 0,    0, 0,   0,
                                     0,    NULL, NULL, 0, NULL};
    suspect_store_t *out = test_redis_failover(srv->url, timeout_ms, &fopts);

    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    return out;
}

/* A lock served from the cache costs Redis nothing. */
static void test_redis_lock_cache(void)
{
    suspect_store_t *s = redis_failover(5000, SUSPECT_FAIL_LOCAL);
    suspect_rule_t r = {"Otp", 1, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Otp", "cached");
    suspect_decision_t d;
    long long before, after;
    int64_t t = wall_ms();

    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(suspect_store_decide(s, &r, &key, 1, t, &d, NULL),
                        SUSPECT_OK);
    }
    CU_ASSERT_TRUE(d.locked);
    before = test_redis_calls(srv, "evalsha");
    for (int i = 0; i < 1000; i++) {
        CU_ASSERT_EQUAL(suspect_store_decide(s, &r, &key, 1, t + i, &d, NULL),
                        SUSPECT_OK);
        CU_ASSERT_FALSE(d.allowed);
    }
    after = test_redis_calls(srv, "evalsha");
    CU_ASSERT_TRUE(before >= 2);
    CU_ASSERT_EQUAL(after, before);
    suspect_store_free(s);
}

typedef struct load {
    suspect_store_t *store;
    int stop;                 /* atomic */
    long calls, slow, errors; /* atomics */
    long bad;                /* atomic: allowed when closed, denied otherwise */
    long degraded[4];        /* atomics, by SUSPECT_DEGRADED_* */
    int64_t last_redis_mono; /* atomic: last decision by Redis */
    int64_t max_ms;          /* atomic: the slowest call so far */
} load_t;

/* Raises the atomic *max to v. */
static void raise_max(int64_t *max, int64_t v)
{
    int64_t cur = __atomic_load_n(max, __ATOMIC_RELAXED);

    while (v > cur &&
           !__atomic_compare_exchange_n(max, &cur, v, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
}

/* Waits (5 s, scaled) until the atomic *counter reaches n. */
static bool wait_count(long *counter, long n)
{
    int64_t end = mono_ms() + test_scale_ms(5000);

    while (__atomic_load_n(counter, __ATOMIC_RELAXED) < n) {
        if (mono_ms() >= end) {
            return false;
        }
        sleep_ms(5);
    }
    return true;
}

static void *load_run(void *p)
{
    load_t *l = p;
    suspect_rule_t r = {"Load", 1000000, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Load", "x");

    while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
        suspect_decision_t d;
        int64_t t0 = mono_ms();
        suspect_rc_t rc =
            suspect_store_decide(l->store, &r, &key, 1, wall_ms(), &d, NULL);
        __atomic_add_fetch(&l->calls, 1, __ATOMIC_RELAXED);
        raise_max(&l->max_ms, mono_ms() - t0);
        if (mono_ms() - t0 > test_scale_ms(1000)) {
            __atomic_add_fetch(&l->slow, 1, __ATOMIC_RELAXED);
        }
        if (rc != SUSPECT_OK) {
            __atomic_add_fetch(&l->errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        __atomic_add_fetch(&l->degraded[d.degraded & 3], 1, __ATOMIC_RELAXED);
        if ((d.degraded == SUSPECT_DEGRADED_CLOSED && d.allowed) ||
            (d.degraded != SUSPECT_DEGRADED_CLOSED && !d.allowed)) {
            __atomic_add_fetch(&l->bad, 1, __ATOMIC_RELAXED);
        }
        if (d.degraded == SUSPECT_DEGRADED_NONE) {
            __atomic_store_n(&l->last_redis_mono, mono_ms(), __ATOMIC_RELAXED);
        }
        usleep(200);
    }
    return NULL;
}

/* kill -9 under load, restart on the same socket: every call returns in
 * time and without error, the fail mode decides while Redis is down (and
 * only it: closed mode never allows then), Redis decides again within a
 * second of its return (the breaker probes at least every second, as the
 * daemon configures it), plus the slowest call made while Redis was well:
 * on a loaded machine every call is late, the fault or not. */
static void kill9_with_mode(suspect_failmode_t mode, int expect)
{
    suspect_failover_opts_t fopts = {mode, NULL, 0,    0, 0,   1000,
                                     0,    NULL, NULL, 0, NULL};
    load_t l;
    pthread_t tid[4];
    suspect_failover_stats_t st;
    int64_t back, base;

    memset(&l, 0, sizeof(l));
    l.store = test_redis_failover(srv->url, 200, &fopts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.store);
    for (int i = 0; i < 4; i++) {
        pthread_create(&tid[i], NULL, load_run, &l);
    }
    CU_ASSERT_TRUE(wait_count(&l.calls, 20));
    base = __atomic_load_n(&l.max_ms, __ATOMIC_RELAXED);
    test_redis_kill9(srv);
    /* the fail mode decides while Redis is down */
    CU_ASSERT_TRUE(wait_count(&l.degraded[expect], 10));
    CU_ASSERT_EQUAL_FATAL(test_redis_restart(srv), 0);
    back = mono_ms();
    while (__atomic_load_n(&l.last_redis_mono, __ATOMIC_RELAXED) <= back &&
           mono_ms() - back < test_scale_ms(5000)) {
        sleep_ms(5);
    }
    CU_ASSERT_TRUE(__atomic_load_n(&l.last_redis_mono, __ATOMIC_RELAXED) -
                       back <
                   test_scale_ms(1000) + base);
    /* a few more calls on Redis, then the checks */
    CU_ASSERT_TRUE(
        wait_count(&l.degraded[SUSPECT_DEGRADED_NONE],
                   __atomic_load_n(&l.degraded[0], __ATOMIC_RELAXED) + 20));
    __atomic_store_n(&l.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
    }
    CU_ASSERT_EQUAL(l.errors, 0);
    CU_ASSERT_EQUAL(l.slow, 0);
    CU_ASSERT_EQUAL(l.bad, 0);
    for (int k = 1; k < 4; k++) {
        if (k != expect) {
            CU_ASSERT_EQUAL(l.degraded[k], 0);
        }
    }
    suspect_failover_stats(l.store, &st);
    CU_ASSERT_TRUE(st.opens >= 1);
    CU_ASSERT_TRUE(st.closes >= 1);
    CU_ASSERT_EQUAL(st.state, SUSPECT_BREAKER_CLOSED);
    suspect_store_free(l.store);
}

static void test_redis_kill9_local(void)
{
    kill9_with_mode(SUSPECT_FAIL_LOCAL, SUSPECT_DEGRADED_LOCAL);
}

static void test_redis_kill9_closed(void)
{
    kill9_with_mode(SUSPECT_FAIL_CLOSED, SUSPECT_DEGRADED_CLOSED);
}

static void test_redis_kill9_open(void)
{
    kill9_with_mode(SUSPECT_FAIL_OPEN, SUSPECT_DEGRADED_OPEN);
}

int failover_redis_register(CU_pSuite s, test_redis_t *server)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"redis: lock cache, zero traffic", test_redis_lock_cache},
        {"redis: kill -9 under load, local", test_redis_kill9_local},
        {"redis: kill -9 under load, closed", test_redis_kill9_closed},
        {"redis: kill -9 under load, open", test_redis_kill9_open},
    };

    srv = server;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
