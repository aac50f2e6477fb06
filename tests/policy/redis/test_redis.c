/*
 * test_redis.c - the Redis store against a real redis-server (suite
 * "redis"), and the "redis" kind of the shared scenario suites.
 *
 * The suite starts its own server (unix socket in a temp dir, plus a free
 * loopback TCP port) and stops it; every test starts on a flushed db.
 * What is checked:
 *   - URL forms and option errors;
 *   - the data model shared with the .NET code, both ways: keys written the
 *     way the seed's C# writes them are decided on, and keys Suspect writes
 *     read back with the C#'s plain commands (ZCOUNT, EXISTS, PTTL);
 *   - hit ids never collide within one millisecond;
 *   - the Redis clock option;
 *   - exactness: 2 processes x 16 threads on one identity never admit more
 *     than limit_count hits in any window of the caller's clock (the
 *     check is exact_test.c's, which the cluster suite runs too);
 *   - recovery from SCRIPT FLUSH, CLIENT KILL and a kill -9 + restart on the
 *     same socket, with SIGPIPE at its default (deadly) disposition;
 *   - (test_redis_wire.c) clear errors: refused, wrong password, wrong db,
 *     a non-Redis peer, a peer that never answers (timeout); answers split
 *     over many reads.
 * Time bounds are generous on purpose: the CI machine has 2 noisy cores.
 *
 * Length.  One suite against one server, its cases sharing the server and
 * the .NET data model helpers; the errors and the wire are already apart
 * (test_redis_wire.c).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "exact_test.h"
#include "redis_parts.h"
#include "helpers/redisserver.h"
#include "suites.h"
#include "suspect_redis.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define SEC 1000LL

static test_redis_t srv;

static void flush(void)
{
    freeReplyObject(test_redis_cmd(&srv, "FLUSHALL"));
}

/* ---- the scenario kind ---------------------------------------------------
 */

static int kind_setup(void)
{
    return test_redis_start(&srv, true, NULL);
}

static int kind_teardown(void)
{
    test_redis_stop(&srv);
    return 0;
}

static suspect_store_t *kind_open(void)
{
    flush();
    return test_redis_store(srv.url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
}

const test_store_kind_t test_redis_kind = {"redis", kind_setup, kind_teardown,
                                           kind_open, NULL};

/* ---- options -------------------------------------------------------------
 */

static void test_urls(void)
{
    static const char *const bad[] = {
        "http://x",
        "redis://",
        "redis://:pw",
        "redis://h:0",
        "redis://h:99999",
        "redis://h/x",
        "redis://[::1",
        "redis://h?db=1",
        "unix://relative",
        "unix:///s?db=x",
        "unix:///s?foo=1",
        "redis://pw@h",
        "redis://:%zz@h",
        "unix:///s?password",
        /* Sentinel: the master's name is required, the db a query. */
        "redis+sentinel://h:26379",
        "redis+sentinel://h:26379/",
        "redis+sentinel://h,/m",
        "redis+sentinel://h:0/m",
        "redis+sentinel://h/m/2",
        "redis+sentinel://h/m?foo=1",
        "redis+sentinel://h/m?db=x",
        "redis+sentinel://h/m?password=x",
        "redis+sentinel://h1,h2,h3,h4,h5,h6,h7,h8,h9,h10,h11,h12,h13,h14,h15,"
        "h16,h17/m",
        /* Cluster: hosts only. */
        "redis+cluster://",
        "redis+cluster://h:7000/0",
        "redis+cluster://h:7000?db=1",
        "redis+cluster://h:70000",
        "rediss://h",
    };
    static const char *const good[] = {
        "redis://127.0.0.1",
        "redis://h:6380/3",
        "redis://:p%40ss@h:1/0",
        "redis://user:pw@[::1]:6379/2",
        "unix:///tmp/r.sock",
        "unix:///tmp/r.sock?db=2&password=x",
        "redis+sentinel://h/mymaster",
        "redis+sentinel://:pw@h1:26379,h2:26380,[::1]/my%20master?db=2"
        "&sentinelPassword=s%40p&sentinelUser=u",
        "redis+cluster://h:7000",
        "redis+cluster://app:pw@h:7000,h:7001,[::1]:7002",
    };
    suspect_store_t *store;
    suspect_err_t err;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        suspect_redis_opts_t opts = {bad[i], 0, 0, 0, NULL};
        suspect_err_clear(&err);
        store = NULL;
        CU_ASSERT_EQUAL(suspect_redis_new(&opts, &store, &err),
                        SUSPECT_E_INVAL);
        CU_ASSERT_PTR_NULL(store);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "redis URL"));
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        suspect_redis_opts_t opts = {good[i], 0, 0, 0, NULL};
        store = NULL;
        CU_ASSERT_EQUAL(suspect_redis_new(&opts, &store, NULL), SUSPECT_OK);
        CU_ASSERT_TRUE(suspect_store_is_redis(store));
        CU_ASSERT_STRING_EQUAL(suspect_store_name(store), "redis");
        suspect_store_free(store);
    }
}

/* TCP URL with a db index: the keys land in that db. */
static void test_tcp_and_db(void)
{
    char url[128];
    suspect_store_t *store;
    suspect_key_t key = test_key("DbTest", "u1");
    suspect_rule_t rule = {"DbTest", 5, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_decision_t d;
    redisReply *rep;

    flush();
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/3", srv.port);
    store = test_redis_store(url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(suspect_redis_ping(store, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(test_redis_int(&srv, "EXISTS DbTest:u1"), 0);
    rep = test_redis_cmd(&srv, "SELECT 3");
    freeReplyObject(rep);
    CU_ASSERT_EQUAL(test_redis_int(&srv, "ZCARD DbTest:u1"), 1);
    freeReplyObject(test_redis_cmd(&srv, "SELECT 0"));
    suspect_store_free(store);
}

/* ---- the data model, both ways -------------------------------------------
 */

/* Suspect writes; the seed's C# reads with ZCOUNT, EXISTS and PTTL. */
static void test_dotnet_reads_suspect(void)
{
    suspect_store_t *store = test_redis_store(srv.url, 5000, 0, NULL);
    suspect_rule_t rule = {
        "SecureForgotAccount", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key(rule.action, "user123");
    int64_t t = wall_ms();
    suspect_decision_t d;
    redisReply *rep;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    flush();
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &rule, &key, 1, t + i, &d, NULL),
            SUSPECT_OK);
        CU_ASSERT_EQUAL(d.allowed, i < 3);
    }
    CU_ASSERT_TRUE(d.locked);
    /* IsOverRateLimit: ZCOUNT key (cutTime +inf >= LimitCount. */
    CU_ASSERT_EQUAL(test_redis_int(&srv, "ZCOUNT %s (%lld +inf",
                                   "SecureForgotAccount:user123",
                                   (long long)(t - 1800 * SEC)),
                    3);
    CU_ASSERT_EQUAL(
        test_redis_int(&srv, "EXISTS SecureForgotAccount:user123:locked"), 1);
    {
        long long pttl =
            test_redis_int(&srv, "PTTL SecureForgotAccount:user123:locked");
        CU_ASSERT_TRUE(pttl > 1790 * SEC && pttl <= 1800 * SEC);
        /* The window lives 5 s (the skew slack) longer than it spans. */
        pttl = test_redis_int(&srv, "PTTL SecureForgotAccount:user123");
        CU_ASSERT_TRUE(pttl > 1790 * SEC && pttl <= 1805 * SEC);
    }
    /* Members are GUID-like, scores the ms timestamps. */
    rep = test_redis_cmd(&srv, "ZRANGE SecureForgotAccount:user123 0 -1 "
                               "WITHSCORES");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    CU_ASSERT_EQUAL_FATAL(rep->elements, 6);
    CU_ASSERT_EQUAL(rep->element[0]->len, 36);
    CU_ASSERT_EQUAL(rep->element[0]->str[8], '-');
    CU_ASSERT_EQUAL(strtoll(rep->element[1]->str, NULL, 10), t);
    CU_ASSERT_EQUAL(strtoll(rep->element[5]->str, NULL, 10), t + 2);
    freeReplyObject(rep);
    /* The lock's value starts with the identity. */
    rep = test_redis_cmd(&srv, "GET SecureForgotAccount:user123:locked");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    CU_ASSERT_EQUAL(strncmp(rep->str, "user123|until=", 14), 0);
    freeReplyObject(rep);
    suspect_store_free(store);
}

/* The seed's C# writes (ZADD GUID ms, EXPIRE, SET locked identity EX);
 * Suspect decides on it. */
static void test_suspect_reads_dotnet(void)
{
    suspect_store_t *store = test_redis_store(srv.url, 5000, 0, NULL);
    suspect_rule_t bank = {"BankAccountUpdate", 2, 120, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t forgot = {
        "SecureForgotAccount", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t k1 = test_key(bank.action, "192.168.1.1");
    suspect_key_t k2 = test_key(forgot.action, "user9");
    int64_t t = wall_ms();
    suspect_decision_t d;
    suspect_status_t st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    flush();
    freeReplyObject(test_redis_cmd(
        &srv, "ZADD BankAccountUpdate:192.168.1.1 %lld %s %lld %s",
        (long long)(t - 100 * SEC), "0f8fad5b-d9cb-469f-a165-70867728950e",
        (long long)(t - 30 * SEC), "7c9e6679-7425-40de-944b-e07fc1f90ae7"));
    freeReplyObject(
        test_redis_cmd(&srv, "EXPIRE BankAccountUpdate:192.168.1.1 120"));
    CU_ASSERT_EQUAL(suspect_store_decide(store, &bank, &k1, 1, t, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t + 20 * SEC);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &bank, &k1, 1, t + 20 * SEC, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);

    /* RateLimitManager's lock: value = identity, EX seconds. */
    freeReplyObject(test_redis_cmd(
        &srv, "SET SecureForgotAccount:user9:locked user9 EX 600"));
    CU_ASSERT_EQUAL(suspect_store_decide(store, &forgot, &k2, 1, t, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_TRUE(d.retry_after_ms > 590 * SEC &&
                   d.retry_after_ms <= 600 * SEC);
    CU_ASSERT_EQUAL(suspect_store_status(store, &forgot, &k2, t, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(st.locked_until_ms > t + 590 * SEC);
    /* Unblock, as an operator would, then it is allowed again. */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &k2, SUSPECT_RESET_LOCK, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(
        test_redis_int(&srv, "EXISTS SecureForgotAccount:user9:locked"), 0);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &forgot, &k2, 1, t, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    suspect_store_free(store);
}

/* Hits in the same millisecond are distinct members. */
static void test_same_ms_unique(void)
{
    suspect_store_t *a = test_redis_store(srv.url, 5000, 0, NULL);
    suspect_store_t *b = test_redis_store(srv.url, 5000, 0, NULL);
    suspect_rule_t rule = {"Same", 100, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Same", "x");
    int64_t t = wall_ms();
    suspect_decision_t d;

    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    flush();
    for (int i = 0; i < 20; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(i % 2 ? a : b, &rule, &key, 1, t, &d, NULL),
            SUSPECT_OK);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.remaining, (uint32_t)(99 - i));
    }
    CU_ASSERT_EQUAL(test_redis_int(&srv, "ZCARD Same:x"), 20);
    suspect_store_free(a);
    suspect_store_free(b);
}

/* With the Redis clock, now_ms is ignored and times are Redis's. */
static void test_server_clock(void)
{
    suspect_store_t *store =
        test_redis_store(srv.url, 5000, SUSPECT_REDIS_CLOCK_SERVER, NULL);
    suspect_rule_t rule = {"Clock", 1, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Clock", "x");
    suspect_decision_t d;
    suspect_status_t st;
    int64_t t = wall_ms();

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    flush();
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, &key, 1, 1, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, &key, 1, 1, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.restriction_end_ms > t + 50 * SEC &&
                   d.restriction_end_ms < t + 70 * SEC);
    CU_ASSERT_EQUAL(suspect_store_status(store, &rule, &key, 1, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);
    suspect_store_free(store);
}

/* ---- exactness: 2 processes x 16 threads ---------------------------------
 */

/* The rule has window 1 s; the check is per 1 s window. */
static const suspect_rule_t ex_rule = {"Exact", EX_LIMIT, 1, 0, 0, 0,
                                       0,       0,        0, 0, 0};

static void test_exact_processes_threads(void)
{
    ex_plan_t plan = {srv.url, &ex_rule, 1, 1, {{test_key("Exact", "one")}}};
    size_t admitted[3];

    flush();
    ex_check(&plan, admitted);
}

/* ---- recovery ------------------------------------------------------------
 */

static void test_script_flush(void)
{
    suspect_store_t *store = test_redis_store(srv.url, 5000, 0, NULL);
    suspect_rule_t rule = {"Flush", 100, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Flush", "x");
    suspect_redis_stats_t st;
    suspect_decision_t d;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    flush();
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, NULL),
        SUSPECT_OK);
    freeReplyObject(test_redis_cmd(&srv, "SCRIPT FLUSH"));
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 98);
    suspect_redis_stats(store, &st);
    CU_ASSERT_EQUAL(st.reloads, 1);
    CU_ASSERT_EQUAL(st.errors, 0);
    CU_ASSERT_EQUAL(st.connects, 1);
    suspect_store_free(store);
}

/* CLIENT KILL, with SIGPIPE left deadly: the call retries on a fresh
 * connection and the process survives. */
static void test_client_kill(void)
{
    suspect_store_t *store = test_redis_store(srv.url, 5000, 0, NULL);
    suspect_rule_t rule = {"Kill", 100, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Kill", "x");
    suspect_redis_stats_t st;
    suspect_decision_t d;
    struct sigaction dfl, old;
    sigset_t pend;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, &old);
    flush();
    for (int round = 0; round < 3; round++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, NULL),
            SUSPECT_OK);
        /* Redis closes the other clients' sockets before it answers, and
         * on a unix socket the close is there at once: nothing to wait
         * for */
        freeReplyObject(test_redis_cmd(&srv, "CLIENT KILL TYPE normal"));
    }
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(d.remaining, 96);
    sigemptyset(&pend);
    sigpending(&pend);
    CU_ASSERT_FALSE(sigismember(&pend, SIGPIPE));
    sigaction(SIGPIPE, &old, NULL);
    suspect_redis_stats(store, &st);
    CU_ASSERT_TRUE(st.connects >= 4);
    CU_ASSERT_EQUAL(st.errors, 0);
    suspect_store_free(store);
}

/* The threads of a load. */
#define LOADERS 4

/* kill -9 under load, restart on the same socket: every call returns in
 * time, errors while it is down, decisions again soon after it is back. */
typedef struct load {
    suspect_store_t *store;
    volatile int stop;
    long calls, errors, slow; /* atomics */
    int64_t last_ok_mono;     /* atomic */
    int64_t max_ms;           /* atomic: the slowest call so far */
    int started;              /* atomic: the threads' numbers */
    long ok[LOADERS];         /* atomics: each thread's calls that worked */
} load_t;

static void *load_run(void *p)
{
    load_t *l = p;
    suspect_rule_t rule = {"Load", 1000000, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Load", "x");
    int me = __atomic_fetch_add(&l->started, 1, __ATOMIC_RELAXED) % LOADERS;

    while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
        suspect_decision_t d;
        int64_t t0 = mono_ms(), dt;
        suspect_rc_t rc =
            suspect_store_decide(l->store, &rule, &key, 1, wall_ms(), &d, NULL);
        dt = mono_ms() - t0;
        __atomic_add_fetch(&l->calls, 1, __ATOMIC_RELAXED);
        for (int64_t cur = __atomic_load_n(&l->max_ms, __ATOMIC_RELAXED);
             dt > cur && !__atomic_compare_exchange_n(&l->max_ms, &cur, dt,
                                                      false, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED);) {
        }
        if (dt > test_scale_ms(1000)) {
            __atomic_add_fetch(&l->slow, 1, __ATOMIC_RELAXED);
        }
        if (rc != SUSPECT_OK) {
            __atomic_add_fetch(&l->errors, 1, __ATOMIC_RELAXED);
            usleep(1000);
        } else {
            __atomic_store_n(&l->last_ok_mono, mono_ms(), __ATOMIC_RELAXED);
            __atomic_add_fetch(&l->ok[me], 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

/* Waits (5 s, scaled) until the atomic *counter reaches n; whether it did. */
static bool wait_count(long *counter, long n)
{
    int64_t end = mono_ms() + test_scale_ms(5000);

    while (__atomic_load_n(counter, __ATOMIC_RELAXED) < n) {
        if (mono_ms() >= end) {
            return false;
        }
        usleep(5000);
    }
    return true;
}

/* Waits until the load has made n calls (it is under way). */
static void wait_calls(load_t *l, long n)
{
    CU_ASSERT_TRUE(wait_count(&l->calls, n));
}

static void test_kill9_restart(void)
{
    load_t l;
    pthread_t tid[4];
    struct sigaction dfl, old;
    int64_t back, base;

    memset(&l, 0, sizeof(l));
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, &old);
    l.store = test_redis_store(srv.url, 200, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.store);
    for (int i = 0; i < 4; i++) {
        pthread_create(&tid[i], NULL, load_run, &l);
    }
    wait_calls(&l, 20);
    /* the machine's own pace while Redis is well: the bound below is on
     * what the outage adds */
    base = __atomic_load_n(&l.max_ms, __ATOMIC_RELAXED);
    test_redis_kill9(&srv);
    CU_ASSERT_TRUE(wait_count(&l.errors, 1));
    CU_ASSERT_EQUAL_FATAL(test_redis_restart(&srv), 0);
    back = mono_ms();
    while (__atomic_load_n(&l.last_ok_mono, __ATOMIC_RELAXED) <= back &&
           mono_ms() - back < test_scale_ms(5000)) {
        usleep(5000);
    }
    /* Decisions on Redis again within a second of its return. */
    CU_ASSERT_TRUE(__atomic_load_n(&l.last_ok_mono, __ATOMIC_RELAXED) - back <
                   test_scale_ms(1000) + base);
    usleep(100000);
    __atomic_store_n(&l.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
    }
    CU_ASSERT_EQUAL(l.slow, 0);
    CU_ASSERT_TRUE(l.calls > 10);
    sigaction(SIGPIPE, &old, NULL);
    suspect_store_free(l.store);
}

/* Waits until each of the LOADERS threads has made two more calls that
 * worked (so one begun after now), 5 s (scaled) at the most; whether they
 * did. */
static bool wait_each_ok(load_t *l)
{
    long from[LOADERS];

    for (int i = 0; i < LOADERS; i++) {
        from[i] = __atomic_load_n(&l->ok[i], __ATOMIC_RELAXED);
    }
    for (int i = 0; i < LOADERS; i++) {
        if (!wait_count(&l->ok[i], from[i] + 2)) {
            return false;
        }
    }
    return true;
}

/* SCRIPT FLUSH and CLIENT KILL while 4 threads decide: no call fails.
 * Each fault is met by every thread before the next comes: a call on a
 * connection the server closed is retried once, on a new connection, so
 * two kills within one call (which a loaded machine can make of two
 * kills a fixed time apart) would fail it, and rightly. */
static void test_recovery_under_load(void)
{
    load_t l;
    pthread_t tid[LOADERS];
    suspect_redis_stats_t st;

    memset(&l, 0, sizeof(l));
    l.store = test_redis_store(srv.url, 2000, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.store);
    for (int i = 0; i < LOADERS; i++) {
        pthread_create(&tid[i], NULL, load_run, &l);
    }
    CU_ASSERT_TRUE(wait_each_ok(&l));
    for (int round = 0; round < 5; round++) {
        freeReplyObject(test_redis_cmd(&srv, "SCRIPT FLUSH"));
        CU_ASSERT_TRUE(wait_each_ok(&l));
        freeReplyObject(test_redis_cmd(&srv, "CLIENT KILL TYPE normal"));
        CU_ASSERT_TRUE(wait_each_ok(&l));
    }
    __atomic_store_n(&l.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < LOADERS; i++) {
        pthread_join(tid[i], NULL);
    }
    suspect_redis_stats(l.store, &st);
    CU_ASSERT_EQUAL(l.errors, 0);
    CU_ASSERT_EQUAL(l.slow, 0);
    CU_ASSERT_TRUE(st.reloads >= 1);
    CU_ASSERT_TRUE(st.connects >= 8);
    suspect_store_free(l.store);
}

/* Sockets of this process that are not close-on-exec. */
static int inheritable_sockets(void)
{
    char path[64], target[128];
    int count = 0;

    for (int fd = 0; fd < 1024; fd++) {
        ssize_t n;
        int flags = fcntl(fd, F_GETFD);
        if (flags < 0 || (flags & FD_CLOEXEC)) {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        n = readlink(path, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            count += strncmp(target, "socket:", 7) == 0;
        }
    }
    return count;
}

static void test_cloexec(void)
{
    suspect_store_t *store = test_redis_store(srv.url, 5000, 0, NULL);
    int before = inheritable_sockets();

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(suspect_redis_ping(store, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(inheritable_sockets(), before);
    suspect_store_free(store);
}

/* With a key prefix, the lock's value is still the bare identity. */
static void test_key_prefix(void)
{
    suspect_redis_opts_t opts = {srv.url, 5000, 5000, 0, "app1:"};
    suspect_keyopts_t ko = {SUSPECT_KEYS_SEED, "app1:", 0, false};
    suspect_identity_t id = test_identity("MemberCode", "M7");
    suspect_rule_t rule = {"Otp", 1, 60, 60, 0, 0, 0, 0, 0, 0, 0};
    suspect_store_t *store = NULL;
    suspect_decision_t d;
    suspect_key_t key;
    redisReply *rep;

    flush();
    CU_ASSERT_EQUAL_FATAL(suspect_redis_new(&opts, &store, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(suspect_key_build(&ko, "Otp", &id, &key, NULL),
                          SUSPECT_OK);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, NULL),
            SUSPECT_OK);
    }
    CU_ASSERT_TRUE(d.locked);
    rep = test_redis_cmd(&srv, "GET app1:Otp:M7:locked");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    CU_ASSERT_EQUAL(rep->type, REDIS_REPLY_STRING);
    CU_ASSERT_EQUAL(strncmp(rep->str, "M7|until=", 9), 0);
    freeReplyObject(rep);
    suspect_store_free(store);
}

/* ---- errors --------------------------------------------------------------
 */

/* ---- registration --------------------------------------------------------
 */

static int suite_init(void)
{
    return test_redis_start(&srv, true, NULL);
}

static int suite_clean(void)
{
    test_redis_stop(&srv);
    return 0;
}

int register_redis_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"urls", test_urls},
        {"tcp and db", test_tcp_and_db},
        {".NET reads what Suspect writes", test_dotnet_reads_suspect},
        {"Suspect reads what .NET writes", test_suspect_reads_dotnet},
        {"same millisecond, unique members", test_same_ms_unique},
        {"server clock", test_server_clock},
        {"exact: 2 processes x 16 threads", test_exact_processes_threads},
        {"SCRIPT FLUSH", test_script_flush},
        {"CLIENT KILL and SIGPIPE", test_client_kill},
        {"kill -9 and restart under load", test_kill9_restart},
        {"SCRIPT FLUSH and CLIENT KILL under load", test_recovery_under_load},
        {"sockets are close-on-exec", test_cloexec},
        {"key prefix", test_key_prefix},
    };
    CU_pSuite s = CU_add_suite("redis", suite_init, suite_clean);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return redis_wire_register(s, &srv);
}
