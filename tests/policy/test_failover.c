/*
 * test_failover.c - fail modes, circuit breaker and lock cache (suite
 * "failover").
 *
 * The wrapper is the policy core's (policy/failover.c), so its tests are
 * here.  Most put a fake primary in front of it: a memory store that
 * fails on demand and counts its calls, so the breaker's skipping is
 * visible.  The suite's redis-server (started by its init) serves the
 * tests of redis/test_failover_redis.c (a lock served from the cache
 * with zero Redis commands, kill -9 under load in each fail mode) and
 * redis/test_failover_carry.c (decisions carried back after an outage).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/redis/redis_parts.h"
#include "helpers/redisserver.h"
#include "suites.h"
#include "suspect_failover.h"
#include "suspect_store_impl.h"
#include "helpers/util.h"

#define T0  1710000012345LL
#define SEC 1000LL

/* ---- a primary that fails on demand --------------------------------------
 */

typedef struct fake {
    suspect_store_t base;
    suspect_store_t *mem;
    int fail;   /* atomic: 1 down, 2 full */
    long calls; /* atomic: decide calls */
} fake_t;

static suspect_rc_t fake_decide(suspect_store_t *s, const suspect_rule_t *r,
                                const suspect_key_t *k, size_t n, int64_t now,
                                suspect_decision_t *out, suspect_err_t *err)
{
    fake_t *f = (fake_t *)s;
    __atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&f->fail, __ATOMIC_RELAXED) == 2) {
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0, "fake: full");
    }
    if (__atomic_load_n(&f->fail, __ATOMIC_RELAXED)) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "fake: down");
    }
    return suspect_store_decide(f->mem, r, k, n, now, out, err);
}

static suspect_rc_t fake_status(suspect_store_t *s, const suspect_rule_t *r,
                                const suspect_key_t *k, int64_t now,
                                suspect_status_t *out, suspect_err_t *err)
{
    return suspect_store_status(((fake_t *)s)->mem, r, k, now, out, err);
}

static suspect_rc_t fake_reset(suspect_store_t *s, const suspect_key_t *k,
                               unsigned what, suspect_err_t *err)
{
    return suspect_store_reset(((fake_t *)s)->mem, k, what, err);
}

static suspect_rc_t fake_block(suspect_store_t *s, const suspect_key_t *k,
                               int64_t now, int64_t until, suspect_err_t *err)
{
    return suspect_store_block(((fake_t *)s)->mem, k, now, until, err);
}

static void fake_free(suspect_store_t *s)
{
    suspect_store_free(((fake_t *)s)->mem);
    free(s);
}

static const suspect_store_ops_t fake_ops = {
    .name = "fake",
    .decide = fake_decide,
    .status = fake_status,
    .reset = fake_reset,
    .block = fake_block,
    .free = fake_free,
};

static suspect_store_t *mem_store(void)
{
    suspect_store_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(NULL, &s, NULL), SUSPECT_OK);
    return s;
}

static fake_t *fake;

/* The wrapper's monotonic clock in these tests: moved by advance() only,
 * so intervals are exact and no stall of a loaded machine shows. */
static int64_t fake_now = 1000000; /* atomic; never 0 (a "never" mark) */

static int64_t fake_clock(void)
{
    return __atomic_load_n(&fake_now, __ATOMIC_RELAXED);
}

static void advance(int64_t ms)
{
    __atomic_add_fetch(&fake_now, ms, __ATOMIC_RELAXED);
}

/* A wrapper around a fresh fake primary (in the global fake), on the fake
 * clock. */
static suspect_store_t *wrap(const suspect_failover_opts_t *opts)
{
    static const suspect_failover_opts_t defaults;
    suspect_failover_opts_t o = opts != NULL ? *opts : defaults;
    suspect_store_t *out = NULL;

    o.mono_clock = fake_clock;
    fake = calloc(1, sizeof(*fake));
    CU_ASSERT_PTR_NOT_NULL_FATAL(fake);
    fake->base.ops = &fake_ops;
    fake->mem = mem_store();
    CU_ASSERT_EQUAL_FATAL(
        suspect_failover_new(&fake->base, mem_store(), &o, &out, NULL),
        SUSPECT_OK);
    return out;
}

static suspect_decision_t decide(suspect_store_t *s, const suspect_rule_t *r,
                                 const char *id, int64_t at)
{
    suspect_key_t key = test_key(r->action, id);
    suspect_decision_t d;
    CU_ASSERT_EQUAL(suspect_store_decide(s, r, &key, 1, T0 + at, &d, NULL),
                    SUSPECT_OK);
    return d;
}

/* ---- fail modes ----------------------------------------------------------
 */

static void test_modes(void)
{
    static const suspect_failmode_override_t ovr[] = {
        {"Pay", SUSPECT_FAIL_CLOSED},
        {"Feed", SUSPECT_FAIL_OPEN},
    };
    suspect_failover_opts_t opts = {
        SUSPECT_FAIL_LOCAL, ovr, 2, 0, 0, 0, 0, NULL, NULL, 0, NULL};
    suspect_store_t *s = wrap(&opts);
    suspect_rule_t pay = {"Pay", 2, 60, 0, 0, 0, 0, 0, 0, 0, 0},
                   feed = {"Feed", 2, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t login = {"Login", 2, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_failover_stats_t st;
    suspect_decision_t d;

    /* Healthy: the primary decides. */
    d = decide(s, &login, "u", 0);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_EQUAL(suspect_failover_mode(s, "Pay"), SUSPECT_FAIL_CLOSED);
    CU_ASSERT_EQUAL(suspect_failover_mode(s, "Other"), SUSPECT_FAIL_LOCAL);

    fake->fail = 1;
    d = decide(s, &pay, "u", 1);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_CLOSED);
    CU_ASSERT_EQUAL(d.retry_after_ms, 1000);
    d = decide(s, &feed, "u", 2);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_OPEN);
    /* Local: the memory store counts on its own (2 per window). */
    for (int i = 0; i < 3; i++) {
        d = decide(s, &login, "v", 10 + i);
        CU_ASSERT_EQUAL(d.allowed, i < 2);
        CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);
    }
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.failed_closed, 1);
    CU_ASSERT_EQUAL(st.failed_open, 1);
    CU_ASSERT_EQUAL(st.failed_local, 3);
    CU_ASSERT_EQUAL(st.primary_ok, 1);
    suspect_store_free(s);
}

static void test_bad_options(void)
{
    static const suspect_failmode_override_t ovr[] = {{"bad name", 0}};
    suspect_failover_opts_t opts = {0, ovr, 1, 0, 0, 0, 0, NULL, NULL, 0, NULL};
    suspect_store_t *out = (suspect_store_t *)&opts;

    CU_ASSERT_EQUAL(
        suspect_failover_new(mem_store(), mem_store(), &opts, &out, NULL),
        SUSPECT_E_INVAL);
    CU_ASSERT_PTR_NULL(out);
    opts.noverrides = 0;
    opts.mode = (suspect_failmode_t)7;
    CU_ASSERT_EQUAL(
        suspect_failover_new(mem_store(), mem_store(), &opts, &out, NULL),
        SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_failover_new(NULL, mem_store(), NULL, &out, NULL),
                    SUSPECT_E_INVAL);
}

/* ---- breaker -------------------------------------------------------------
 */

static int transitions[3];
static int full_told; /* callbacks without a transition */

static void on_breaker(void *arg, suspect_breaker_t from, suspect_breaker_t to,
                       const suspect_err_t *why)
{
    (void)arg;
    if (from == to) {
        full_told++;
        CU_ASSERT_PTR_NOT_NULL(why);
        CU_ASSERT_STRING_EQUAL(why->text, "fake: full");
        return;
    }
    transitions[to]++;
    if (to == SUSPECT_BREAKER_OPEN) {
        CU_ASSERT_PTR_NOT_NULL(why);
        CU_ASSERT_STRING_EQUAL(why->text, "fake: down");
    }
}

/* On the fake clock: the breaker stays open for exactly its interval
 * (500 ms, then 1 s after a failed probe). */
static void test_breaker(void)
{
    suspect_failover_opts_t opts = {
        SUSPECT_FAIL_OPEN, NULL, 0, 3, 500, 4000, 0, on_breaker, NULL, 0, NULL};
    suspect_store_t *s = wrap(&opts);
    suspect_rule_t r = {"Login", 1000, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_failover_stats_t st;
    suspect_decision_t d;

    memset(transitions, 0, sizeof(transitions));
    fake->fail = 1;
    for (int i = 0; i < 10; i++) {
        d = decide(s, &r, "u", i);
        CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_OPEN);
    }
    /* 3 failures open the breaker; the 7 other calls are skipped. */
    CU_ASSERT_EQUAL(fake->calls, 3);
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.state, SUSPECT_BREAKER_OPEN);
    CU_ASSERT_EQUAL(st.skipped, 7);
    CU_ASSERT_EQUAL(transitions[SUSPECT_BREAKER_OPEN], 1);

    /* After 500 ms one probe goes through and fails: open for 1 s, so the
     * next call is skipped. */
    advance(499);
    decide(s, &r, "u", 19);
    CU_ASSERT_EQUAL(fake->calls, 3);
    advance(1);
    decide(s, &r, "u", 20);
    decide(s, &r, "u", 21);
    CU_ASSERT_EQUAL(fake->calls, 4);
    CU_ASSERT_EQUAL(transitions[SUSPECT_BREAKER_HALF_OPEN], 1);
    CU_ASSERT_EQUAL(transitions[SUSPECT_BREAKER_OPEN], 2);

    /* The primary is back: the next probe, 1 s later, closes the breaker. */
    fake->fail = 0;
    advance(999);
    d = decide(s, &r, "u", 29);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_OPEN);
    CU_ASSERT_EQUAL(fake->calls, 4);
    advance(1);
    d = decide(s, &r, "u", 30);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_EQUAL(fake->calls, 5);
    d = decide(s, &r, "u", 31);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_EQUAL(fake->calls, 6);
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.state, SUSPECT_BREAKER_CLOSED);
    CU_ASSERT_EQUAL(st.closes, 1);
    CU_ASSERT_EQUAL(st.probes, 2);
    CU_ASSERT_EQUAL(transitions[SUSPECT_BREAKER_CLOSED], 1);
    suspect_store_free(s);
}

/* A full primary (SUSPECT_E_FULL: an LMDB map with no room for a new
 * identity) is up: each call it cannot take goes to the fail mode, the
 * next is asked of it again, the breaker never opens, and the callback
 * hears of it once (not once per call). */
static void test_full_primary(void)
{
    suspect_failover_opts_t opts = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 3,   500, 4000, 0,
        on_breaker,         NULL, 0, NULL};
    suspect_store_t *s = wrap(&opts);
    suspect_rule_t r = {"Login", 1000, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_failover_stats_t st;
    suspect_decision_t d;

    memset(transitions, 0, sizeof(transitions));
    full_told = 0;
    fake->fail = 2;
    for (int i = 0; i < 10; i++) {
        d = decide(s, &r, "u", i);
        CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);
    }
    CU_ASSERT_EQUAL(fake->calls, 10);
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.state, SUSPECT_BREAKER_CLOSED);
    CU_ASSERT_EQUAL(st.opens, 0);
    CU_ASSERT_EQUAL(st.skipped, 0);
    CU_ASSERT_EQUAL(st.primary_full, 10);
    CU_ASSERT_EQUAL(st.failed_local, 10);
    CU_ASSERT_EQUAL(full_told, 1);
    fake->fail = 0;
    d = decide(s, &r, "u", 20);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_EQUAL(fake->calls, 11);
    suspect_store_free(s);
}

/* Fail mode local starts each identity from the count the primary last
 * reported: one at 9 of 10 gets one more while the primary is down, not
 * ten; one the primary refused as over the limit stays refused; two
 * identities of one decision are each started from the tightest one's
 * count; a reset identity starts from zero. */
static void test_local_seeded(void)
{
    suspect_failover_opts_t opts = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 1, 500, 4000, 0, NULL, NULL, 0, NULL};
    suspect_store_t *s = wrap(&opts);
    suspect_rule_t r = {"Promo", 10, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t pair[2] = {test_key("Promo", "m"), test_key("Promo", "ip")};
    suspect_key_t reset = test_key("Promo", "reset");
    suspect_decision_t d;
    int allowed;

    for (int i = 0; i < 9; i++) {
        CU_ASSERT_TRUE(decide(s, &r, "near", i).allowed);
    }
    for (int i = 0; i < 11; i++) {
        d = decide(s, &r, "over", i);
    }
    CU_ASSERT_FALSE(d.allowed);
    for (int i = 0; i < 7; i++) {
        CU_ASSERT_EQUAL(suspect_store_decide(s, &r, pair, 2, T0 + i, &d, NULL),
                        SUSPECT_OK);
    }
    for (int i = 0; i < 8; i++) {
        d = decide(s, &r, "reset", i);
    }
    CU_ASSERT_EQUAL(suspect_store_reset(s, &reset, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);

    fake->fail = 1;
    allowed = 0;
    for (int i = 0; i < 12; i++) {
        d = decide(s, &r, "near", 1000 + i);
        CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);
        allowed += d.allowed;
    }
    CU_ASSERT_EQUAL(allowed, 1);
    CU_ASSERT_FALSE(decide(s, &r, "over", 1000).allowed);
    allowed = 0;
    for (int i = 0; i < 12; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(s, &r, &pair[0], 1, T0 + 1000 + i, &d, NULL),
            SUSPECT_OK);
        allowed += d.allowed;
    }
    CU_ASSERT_EQUAL(allowed, 3); /* 7 of 10 with "ip" */
    allowed = 0;
    for (int i = 0; i < 12; i++) {
        allowed += decide(s, &r, "reset", 1000 + i).allowed;
    }
    CU_ASSERT_EQUAL(allowed, 10);
    /* a note stands for the window: past it, from zero */
    allowed = 0;
    for (int i = 0; i < 12; i++) {
        allowed += decide(s, &r, "over", 62000 + i).allowed;
    }
    CU_ASSERT_EQUAL(allowed, 10);
    suspect_store_free(s);
}

/* ---- lock cache ----------------------------------------------------------
 */

static void test_lock_cache(void)
{
    suspect_store_t *s = wrap(NULL);
    suspect_rule_t r = {"Otp", 1, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Otp", "u");
    suspect_failover_stats_t st;
    suspect_decision_t d;

    CU_ASSERT_TRUE(decide(s, &r, "u", 0).allowed);
    d = decide(s, &r, "u", 1);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(fake->calls, 2);
    /* Served from the cache: same answer, no primary call. */
    d = decide(s, &r, "u", 2 * SEC);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 1 + 600 * SEC);
    CU_ASSERT_EQUAL(d.retry_after_ms, 600 * SEC + 1 - 2 * SEC);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_EQUAL(fake->calls, 2);
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.cache_hits, 1);
    /* Another identity is not affected. */
    CU_ASSERT_TRUE(decide(s, &r, "w", 3).allowed);
    CU_ASSERT_EQUAL(fake->calls, 3);

    /* Unblock clears the entry; the primary is asked again. */
    CU_ASSERT_EQUAL(suspect_store_reset(s, &key, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(decide(s, &r, "u", 4 * SEC).allowed);
    CU_ASSERT_EQUAL(fake->calls, 4);

    /* A generation bump (config reload) forgets every lock. */
    CU_ASSERT_FALSE(decide(s, &r, "u", 5 * SEC).allowed);
    CU_ASSERT_FALSE(decide(s, &r, "u", 6 * SEC).allowed);
    CU_ASSERT_EQUAL(fake->calls, 5);
    suspect_failover_bump_generation(s);
    CU_ASSERT_FALSE(decide(s, &r, "u", 7 * SEC).allowed);
    CU_ASSERT_EQUAL(fake->calls, 6);
    /* The cached lock ends when it ends. */
    CU_ASSERT_TRUE(decide(s, &r, "u", 5 * SEC + 600 * SEC).allowed);
    suspect_store_free(s);
}

/* A cached lock is trusted for lock_cache_ttl_ms only: an unblock done in
 * the primary by someone else (suspectctl, another host) is seen after. */
static void test_lock_cache_ttl(void)
{
    suspect_failover_opts_t o = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 0, 0, 0, 0, NULL, NULL, 50, NULL};
    suspect_store_t *s = wrap(&o);
    suspect_rule_t r = {"Otp", 1, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Otp", "u");

    CU_ASSERT_TRUE(decide(s, &r, "u", 0).allowed);
    CU_ASSERT_FALSE(decide(s, &r, "u", 1).allowed);
    CU_ASSERT_FALSE(decide(s, &r, "u", 2).allowed);
    CU_ASSERT_EQUAL(fake->calls, 2);
    /* Unblocked behind the wrapper's back: the cache still denies... */
    CU_ASSERT_EQUAL(
        suspect_store_reset(fake->mem, &key, SUSPECT_RESET_ALL, NULL),
        SUSPECT_OK);
    CU_ASSERT_FALSE(decide(s, &r, "u", 3).allowed);
    CU_ASSERT_EQUAL(fake->calls, 2);
    /* ...until its entry goes stale (50 ms), then the primary answers. */
    advance(49);
    CU_ASSERT_FALSE(decide(s, &r, "u", 4).allowed);
    CU_ASSERT_EQUAL(fake->calls, 2);
    advance(1);
    CU_ASSERT_TRUE(decide(s, &r, "u", 5).allowed);
    CU_ASSERT_EQUAL(fake->calls, 3);
    suspect_store_free(s);
}

/* ---- carrying back to a primary that is not Redis ------------------------
 */

/* Locks taken locally reach the primary (by status and block) when it
 * answers again, before it decides, without shortening its own. */
static void test_carry_generic(void)
{
    suspect_failover_opts_t o = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 1, 20, 20, 0, NULL, NULL, 0, NULL};
    suspect_store_t *s = wrap(&o);
    suspect_rule_t r = {"Otp", 1, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t v = test_key("Otp", "v");
    suspect_failover_stats_t st;
    suspect_status_t ps;
    suspect_decision_t d;

    fake->fail = 1;
    CU_ASSERT_TRUE(decide(s, &r, "u", 0).allowed);
    CU_ASSERT_TRUE(decide(s, &r, "u", 1).locked);
    CU_ASSERT_TRUE(decide(s, &r, "v", 2).allowed);
    CU_ASSERT_TRUE(decide(s, &r, "v", 3).locked);
    CU_ASSERT_EQUAL(
        suspect_store_block(fake->mem, &v, T0, T0 + 3600 * SEC, NULL),
        SUSPECT_OK);
    fake->fail = 0;
    advance(20);
    /* u's first decision by the primary already sees its lock. */
    d = decide(s, &r, "u", 10);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, T0 + 1 + 600 * SEC);
    CU_ASSERT_EQUAL(suspect_store_status(fake->mem, &r, &v, T0 + 10, &ps, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(ps.locked_until_ms, T0 + 3600 * SEC);
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.carried_locks, 1);
    CU_ASSERT_EQUAL(st.carried_hits, 0);
    suspect_store_free(s);
}

static test_redis_t srv;

/* ---- registration --------------------------------------------------------
 */

static int suite_init(void)
{
    return test_redis_start(&srv, false, NULL);
}

static int suite_clean(void)
{
    test_redis_stop(&srv);
    return 0;
}

int register_failover_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"fail modes and overrides", test_modes},
        {"bad options", test_bad_options},
        {"breaker", test_breaker},
        {"a full primary is up", test_full_primary},
        {"fail mode local starts from the primary's counts", test_local_seeded},
        {"lock cache", test_lock_cache},
        {"lock cache entries go stale", test_lock_cache_ttl},
        {"locks carried back to any primary", test_carry_generic},
    };
    CU_pSuite s = CU_add_suite("failover", suite_init, suite_clean);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return failover_redis_register(s, &srv) != 0
               ? -1
               : failover_carry_register(s, &srv);
}
