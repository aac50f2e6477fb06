/*
 * test_redis_meter.c - token buckets and sliding counters on one real
 * redis-server (part of suite "redis", started by its init).
 *
 * What is checked:
 *   - OTP sends (capacity 5, 5 per minute) and costs 1 and 5,
 *     with the data model: the meter in "<window>:tb" (a string, its
 *     TTL when the bucket is full again plus the slack), the .NET
 *     system's sorted set under the window key untouched, a fixed size
 *     per identity (MEMORY USAGE);
 *   - the two-window counter, in "<window>:sc";
 *   - reservations: a success gives the tokens back, a failure keeps them;
 *   - status, unblock (room for exactly one request) and reset;
 *   - a lock survives a change of algorithm both ways, and a changed
 *     algorithm starts from a fresh meter;
 *   - 300 clients, each its own thread and connection, on one phone at
 *     once: exactly the capacity admitted; and on the wall clock, never
 *     more than the capacity and the tokens that came back meanwhile;
 *   - the failover wrapper's journal carried into a meter: each hit
 *     taken at its own time, once however often it is sent;
 *   - bucket.lua against meter.c: a long random run of decisions,
 *     reservations and unblocks of both algorithms, the store's answers
 *     compared with a model driven by meter.c and the evaluator in this
 *     process (and every answer is checked by the store against meter.c
 *     as well: a difference fails the call).
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "meter.h"
#include "meter_test.h"
#include "redis_parts.h"
#include "suspect_redis.h"
#include "suspect_store_impl.h"

static test_redis_t *srv;

static suspect_store_t *fresh_store(void)
{
    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    return test_redis_store(srv->url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
}

static suspect_decision_t decide(suspect_store_t *store,
                                 const suspect_rule_t *rule,
                                 const suspect_key_t *key, int64_t now_ms)
{
    suspect_decision_t d;

    memset(&d, 0, sizeof(d));
    CU_ASSERT_EQUAL(suspect_store_decide(store, rule, key, 1, now_ms, &d, NULL),
                    SUSPECT_OK);
    return d;
}

static void test_otp_sends(void)
{
    suspect_store_t *store = fresh_store();
    suspect_key_t k = test_key("OtpSend", "33612345678");
    redisReply *r;
    long long ttl, bytes;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    /* the .NET system's log of the same action and phone */
    freeReplyObject(test_redis_cmd(srv, "ZADD %b %lld dotnet1", k.buf,
                                   k.window_len, (long long)MT_NOW - 1000));
    mt_otp_sends(store, &k);
    CU_ASSERT_EQUAL(test_redis_int(srv, "ZCARD %b", k.buf, k.window_len), 1);
    r = test_redis_cmd(srv, "GET %b:tb", k.buf, k.window_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_STRING);
    /* 6 tokens of 12 s: full again at NOW + 72 s, in us */
    CU_ASSERT_STRING_EQUAL(r->str, "1710000072000000");
    freeReplyObject(r);
    /* decided at NOW + 12 s: 60 s to go, plus the 5 s slack */
    ttl = test_redis_int(srv, "PTTL %b:tb", k.buf, k.window_len);
    CU_ASSERT_TRUE(ttl > 55000 && ttl <= 65000);
    bytes = test_redis_int(srv, "MEMORY USAGE %b:tb", k.buf, k.window_len);
    CU_ASSERT_TRUE(bytes > 0 && bytes <= 80);
    CU_ASSERT_EQUAL(test_redis_int(srv, "DBSIZE"), 2);
    suspect_store_free(store);
}

static void test_costs(void)
{
    suspect_store_t *store = fresh_store();
    suspect_key_t k = test_key("Api", "client-7");

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    mt_costs(store, &k);
    suspect_store_free(store);
}

static void test_counter(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = {"Feed", 5, 60, 0, 0, 0, 0, 0, SUSPECT_ALGO_COUNTER,
                        0,      0};
    suspect_key_t k = test_key("Feed", "u1");
    suspect_decision_t d;
    redisReply *v;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW + 1000).allowed);
    }
    d = decide(store, &r, &k, MT_NOW + 1000);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, MT_NOW + 72000);
    v = test_redis_cmd(srv, "GET %b:sc", k.buf, k.window_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_STRING_EQUAL(v->str, "1710000000000 5 0");
    freeReplyObject(v);
    CU_ASSERT_FALSE(decide(store, &r, &k, MT_NOW + 71999).allowed);
    CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW + 72000).allowed);
    CU_ASSERT_EQUAL(test_redis_int(srv, "EXISTS %b", k.buf, k.window_len), 0);
    suspect_store_free(store);
}

static void test_reserve_settle(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("Login", 2, 60, 0);
    suspect_key_t k = test_key("Login", "alice");
    suspect_decision_t d;
    suspect_ticket_t t1, t2;
    suspect_status_t st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(
        suspect_store_reserve(store, &r, &k, 1, MT_NOW, 30000, &d, &t1, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(
        suspect_store_reserve(store, &r, &k, 1, MT_NOW, 30000, &d, &t2, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_FALSE(decide(store, &r, &k, MT_NOW).allowed);
    /* a success gives its token back, a failure keeps it */
    CU_ASSERT_EQUAL(
        suspect_store_settle(store, &r, &k, 1, &t1, false, MT_NOW + 10, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(
        suspect_store_settle(store, &r, &k, 1, &t2, true, MT_NOW + 10, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, &k, MT_NOW + 10, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);
    CU_ASSERT_EQUAL(st.pending, 0);
    CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW + 10).allowed);
    CU_ASSERT_FALSE(decide(store, &r, &k, MT_NOW + 10).allowed);
    suspect_store_free(store);
}

static void test_status_unblock_reset(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("OtpVerify", 5, 60, 0);
    suspect_key_t k = test_key("OtpVerify", "33600000000");
    suspect_decision_t d;
    suspect_unblock_t u;
    suspect_status_t st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    r.block_s = 900;
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW).allowed);
    }
    d = decide(store, &r, &k, MT_NOW);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.retry_after_ms, 900000);
    CU_ASSERT_EQUAL(test_redis_int(srv, "EXISTS %b", k.buf, k.lock_len), 1);
    CU_ASSERT_EQUAL(suspect_store_status(store, &r, &k, MT_NOW, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.locked_until_ms, MT_NOW + 900000);
    CU_ASSERT_EQUAL(st.in_window, 5);
    CU_ASSERT_EQUAL(suspect_store_unblock(store, &r, &k, MT_NOW + 1, &u, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(u.lock_until_ms, MT_NOW + 900000);
    CU_ASSERT_EQUAL(u.dropped, 1);
    CU_ASSERT_EQUAL(u.kept, 4);
    CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW + 1).allowed);
    CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW + 1).locked);
    CU_ASSERT_EQUAL(suspect_store_reset(store, &k, SUSPECT_RESET_ALL, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(test_redis_int(srv, "DBSIZE"), 0);
    CU_ASSERT_TRUE(decide(store, &r, &k, MT_NOW + 2).allowed);
    suspect_store_free(store);
}

static void test_algorithm_change(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t log = {"Login", 2, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t bucket = log, counter = log;
    suspect_key_t k = test_key("Login", "bob"), k2 = test_key("Login", "eve");
    suspect_decision_t d;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    bucket.algorithm = SUSPECT_ALGO_BUCKET;
    counter.algorithm = SUSPECT_ALGO_COUNTER;
    /* a lock the log made holds for a bucket and a counter */
    for (int i = 0; i < 3; i++) {
        d = decide(store, &log, &k, MT_NOW);
    }
    CU_ASSERT_TRUE(d.locked);
    d = decide(store, &bucket, &k, MT_NOW + 1000);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, MT_NOW + 600000);
    CU_ASSERT_TRUE(decide(store, &counter, &k, MT_NOW + 1000).locked);
    /* and one a bucket made holds for the log */
    for (int i = 0; i < 3; i++) {
        d = decide(store, &bucket, &k2, MT_NOW);
    }
    CU_ASSERT_TRUE(d.locked);
    d = decide(store, &log, &k2, MT_NOW + 1000);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, MT_NOW + 600000);
    /* once the lock is over, each algorithm has its own meter: the
     * counter starts empty where the bucket is full */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &k2, SUSPECT_RESET_LOCK, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(decide(store, &bucket, &k2, MT_NOW + 2000).locked);
    CU_ASSERT_EQUAL(suspect_store_reset(store, &k2, SUSPECT_RESET_LOCK, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(decide(store, &counter, &k2, MT_NOW + 2000).allowed);
    CU_ASSERT_TRUE(decide(store, &counter, &k2, MT_NOW + 2000).allowed);
    CU_ASSERT_TRUE(decide(store, &counter, &k2, MT_NOW + 2000).locked);
    suspect_store_free(store);
}

/* The journal of an outage (two hits at t and t + 6 s, the second of cost
 * 2, and a lock) carried twice: taken once. */
static void test_carry_once(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("OtpSend", 5, 60, 0);
    suspect_key_t k = test_key("OtpSend", "33633333333");
    suspect_carry_hit_t hits[2] = {
        {MT_NOW, "00000000-0000-0000-0000-000000000001", 0},
        {MT_NOW + 6000, "00000000-0000-0000-0000-000000000002", 2}};
    suspect_carry_t c;
    suspect_status_t st;
    uint64_t locks = 0, taken = 0;
    size_t done = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    memset(&c, 0, sizeof(c));
    c.key = k.buf;
    c.window_len = k.window_len;
    c.lock_until_ms = MT_NOW + 600000;
    c.window_ms = 60000;
    c.algorithm = SUSPECT_ALGO_BUCKET;
    c.limit_count = 5;
    c.nhits = 2;
    c.hits = hits;
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(store->ops->carry(store, &c, 1, MT_NOW + 7000, &done,
                                          &locks, &taken, NULL),
                        SUSPECT_OK);
        CU_ASSERT_EQUAL(done, 1);
    }
    CU_ASSERT_EQUAL(locks, 1);
    CU_ASSERT_EQUAL(taken, 2);
    /* 12 s from t, then 24 s more from t + 12 s: full at t + 36 s */
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &r, &k, MT_NOW + 7000, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.full_at_ms, MT_NOW + 36000);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_EQUAL(st.locked_until_ms, MT_NOW + 600000);
    /* the window's sorted set is never written for a meter */
    CU_ASSERT_EQUAL(test_redis_int(srv, "EXISTS %b", k.buf, k.window_len), 0);
    suspect_store_free(store);
}

/* Eight identities (the most a decision takes) in one script: the
 * emptiest one denies, nothing is taken from the others. */
static void test_eight_identities(void)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("Eight", 3, 60, 0);
    suspect_key_t keys[SUSPECT_MAX_IDENTITIES];
    suspect_decision_t d;
    suspect_status_t st;
    char v[16];

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    for (int i = 0; i < SUSPECT_MAX_IDENTITIES; i++) {
        snprintf(v, sizeof(v), "id%d", i);
        keys[i] = test_key("Eight", v);
    }
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(suspect_store_decide(store, &r, keys,
                                             SUSPECT_MAX_IDENTITIES, MT_NOW, &d,
                                             NULL),
                        SUSPECT_OK);
        CU_ASSERT_TRUE(d.allowed);
    }
    CU_ASSERT_TRUE(decide(store, &r, &keys[0], MT_NOW + 20000).allowed);
    CU_ASSERT_EQUAL(suspect_store_decide(store, &r, keys,
                                         SUSPECT_MAX_IDENTITIES, MT_NOW + 20000,
                                         &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 0);
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &r, &keys[7], MT_NOW + 20000, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 2);
    suspect_store_free(store);
}

/* ---- 300 clients on one phone ------------------------------------------
 */

#define CLIENTS  300
#define CAPACITY 40

typedef struct client {
    pthread_barrier_t *start;
    suspect_store_t *store;
    const suspect_rule_t *rule;
    bool wall; /* each decision at wall_ms(), else at MT_NOW */
    int tries, admitted, failed;
    int64_t tmin, tmax; /* the clocks of the admitted decisions */
} client_t;

static void *client_run(void *p)
{
    client_t *c = p;
    suspect_key_t k = test_key(c->rule->action, "33699999999");

    pthread_barrier_wait(c->start);
    for (int i = 0; i < c->tries; i++) {
        int64_t now = c->wall ? wall_ms() : MT_NOW;
        suspect_decision_t d;

        if (suspect_store_decide(c->store, c->rule, &k, 1, now, &d, NULL) !=
            SUSPECT_OK) {
            c->failed++;
        } else if (d.allowed) {
            c->admitted++;
            c->tmin = c->tmin == 0 || now < c->tmin ? now : c->tmin;
            c->tmax = now > c->tmax ? now : c->tmax;
        }
    }
    return NULL;
}

/* CLIENTS threads, each its own store and connection, tries decisions
 * each on one phone under rule; the admitted ones and the span of their
 * clocks into *admitted and *span_ms. */
static void run_clients(const suspect_rule_t *rule, bool wall, int tries,
                        int *admitted, int64_t *span_ms)
{
    static client_t c[CLIENTS];
    pthread_t th[CLIENTS];
    pthread_barrier_t start;
    int failed = 0, made = 0;
    int64_t tmin = 0, tmax = 0;

    *admitted = 0;
    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    pthread_barrier_init(&start, NULL, CLIENTS);
    for (int i = 0; i < CLIENTS; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].start = &start;
        c[i].rule = rule;
        c[i].wall = wall;
        c[i].tries = tries;
        c[i].store =
            test_redis_store(srv->url, 30000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c[i].store);
    }
    for (int i = 0; i < CLIENTS; i++) {
        made += pthread_create(&th[i], NULL, client_run, &c[i]) == 0;
    }
    CU_ASSERT_EQUAL_FATAL(made, CLIENTS);
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        *admitted += c[i].admitted;
        failed += c[i].failed;
        if (c[i].admitted > 0) {
            tmin = tmin == 0 || c[i].tmin < tmin ? c[i].tmin : tmin;
            tmax = c[i].tmax > tmax ? c[i].tmax : tmax;
        }
        suspect_store_free(c[i].store);
    }
    pthread_barrier_destroy(&start);
    CU_ASSERT_EQUAL(failed, 0);
    *span_ms = tmax - tmin;
}

/* At one moment: exactly the capacity. */
static void test_300_clients(void)
{
    suspect_rule_t r = mt_bucket("OtpSend", CAPACITY, 60, 0);
    int admitted;
    int64_t span;

    run_clients(&r, false, 2, &admitted, &span);
    CU_ASSERT_EQUAL(admitted, CAPACITY);
}

/* On the wall clock, 40 per second: never more than the capacity plus a
 * token per 25 ms between the first and the last admitted request's
 * clocks (GCRA's bound), and at least the capacity. */
static void test_300_clients_wall(void)
{
    suspect_rule_t r = mt_bucket("OtpWall", CAPACITY, 1, 0);
    int admitted;
    int64_t span;

    run_clients(&r, true, 5, &admitted, &span);
    CU_ASSERT_TRUE(admitted >= CAPACITY);
    CU_ASSERT_TRUE(admitted <=
                   CAPACITY + span * 1000 / suspect_meter_interval_us(&r));
    if (admitted > CAPACITY + span * 1000 / suspect_meter_interval_us(&r)) {
        fprintf(stderr, "300 clients: %d admitted in %lld ms\n", admitted,
                (long long)span);
    }
}

/* ---- bucket.lua against meter.c -----------------------------------------
 */

/* The model: one identity's meter, decided on here with meter.c. */
static suspect_decision_t model_decide(const suspect_rule_t *rule,
                                       suspect_meter_t *m, int64_t now_ms)
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

/* One random step on store and model; false on the first difference. */
static bool mirror_step(suspect_store_t *store, suspect_rule_t *rule,
                        const suspect_key_t *k, suspect_meter_t *m, int64_t now,
                        unsigned *seed)
{
    unsigned op = (unsigned)rand_r(seed) % 10;
    suspect_decision_t d, e;
    suspect_ticket_t t;
    suspect_status_t st;
    suspect_window_state_t ws;

    rule->cost = 1 + (unsigned)rand_r(seed) % suspect_rule_capacity(rule);
    if (op == 0) {
        suspect_unblock_t u;
        uint32_t given = suspect_meter_make_room(rule, m, now);
        if (suspect_store_unblock(store, rule, k, now, &u, NULL) != SUSPECT_OK)
            return false;
        return u.dropped == given;
    }
    if (op == 1) {
        memset(&ws, 0, sizeof(ws));
        suspect_meter_read(rule, m, now, &ws);
        if (suspect_store_status(store, rule, k, now, &st, NULL) != SUSPECT_OK)
            return false;
        return st.in_window == ws.in_window && st.free_at_ms == ws.free_at_ms &&
               st.full_at_ms == (suspect_meter_end_ms(rule, m) > now
                                     ? suspect_meter_end_ms(rule, m)
                                     : 0);
    }
    e = model_decide(rule, m, now);
    if (op == 2) {
        bool failed = rand_r(seed) % 2;
        if (suspect_store_reserve(store, rule, k, 1, now, 60000, &d, &t,
                                  NULL) != SUSPECT_OK)
            return false;
        if (d.allowed && suspect_store_settle(store, rule, k, 1, &t, failed,
                                              now, NULL) != SUSPECT_OK)
            return false;
        if (e.allowed && !failed) {
            suspect_meter_give(rule, m, now, suspect_rule_cost(rule));
        }
    } else if (suspect_store_decide(store, rule, k, 1, now, &d, NULL) !=
               SUSPECT_OK) {
        return false;
    }
    return d.allowed == e.allowed && d.remaining == e.remaining &&
           d.restriction_end_ms == e.restriction_end_ms;
}

static void mirror_run(uint32_t algorithm, uint32_t limit, uint32_t per_s,
                       uint32_t burst, unsigned seed)
{
    suspect_store_t *store = fresh_store();
    suspect_rule_t r = mt_bucket("Mirror", limit, per_s, burst);
    suspect_key_t k = test_key("Mirror", "m");
    suspect_meter_t m = {0, 0, 0};
    int64_t now = MT_NOW + 17;
    int steps = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    r.algorithm = algorithm;
    for (; steps < 1500; steps++) {
        if (!mirror_step(store, &r, &k, &m, now, &seed)) {
            break;
        }
        /* mostly bursts, now and then a wait of up to a third of the
         * window or more */
        if (rand_r(&seed) % 3 == 0) {
            now += rand_r(&seed) % ((int64_t)per_s * 400);
        }
    }
    CU_ASSERT_EQUAL(steps, 1500);
    if (steps < 1500) {
        fprintf(stderr, "mirror: algorithm %u differs at step %d\n",
                (unsigned)algorithm, steps);
    }
    suspect_store_free(store);
}

static void test_mirror(void)
{
    mirror_run(SUSPECT_ALGO_BUCKET, 5, 60, 0, 1);
    mirror_run(SUSPECT_ALGO_BUCKET, 7, 60, 12, 2);
    mirror_run(SUSPECT_ALGO_COUNTER, 10, 60, 0, 3);
    mirror_run(SUSPECT_ALGO_COUNTER, 7, 3600, 0, 4);
}

int redis_meter_register(CU_pSuite s, test_redis_t *server)
{
    srv = server;
    if (!CU_add_test(s, "meter: OTP sends, data model", test_otp_sends) ||
        !CU_add_test(s, "meter: costs 1 and 5", test_costs) ||
        !CU_add_test(s, "meter: sliding counter", test_counter) ||
        !CU_add_test(s, "meter: reserve and settle", test_reserve_settle) ||
        !CU_add_test(s, "meter: status, unblock, reset",
                     test_status_unblock_reset) ||
        !CU_add_test(s, "meter: a lock survives a change of algorithm",
                     test_algorithm_change) ||
        !CU_add_test(s, "meter: outage journal carried once",
                     test_carry_once) ||
        !CU_add_test(s, "meter: eight identities in one decision",
                     test_eight_identities) ||
        !CU_add_test(s, "meter: 300 clients on one phone", test_300_clients) ||
        !CU_add_test(s, "meter: 300 clients on one phone, the wall clock",
                     test_300_clients_wall) ||
        !CU_add_test(s, "meter: bucket.lua mirrors meter.c", test_mirror)) {
        return -1;
    }
    return 0;
}
