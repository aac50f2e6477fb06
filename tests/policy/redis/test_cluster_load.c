/*
 * test_cluster_load.c - suite "cluster": the store under load while the
 * cluster changes, in this order (the last ones kill nodes):
 *   - exactness: 2 processes x 16 threads for EX_RUN_MS, a rule of
 *     EX_LIMIT hits per second; no EX_LIMIT + 1 admitted hits of one
 *     identity within one second, on one identity, on two member + IP
 *     pairs sharing the member (three masters: the member's and both
 *     IPs' on different nodes), with hash-tagged keys and with the seed's
 *     (exact_test.c runs it, as for the single server);
 *   - a slot moved under load, step by step as redis-cli --cluster
 *     reshard does it: no decision fails, every admitted hit is on the new
 *     owner once, and MOVED and ASK were followed;
 *   - its master killed: the fail mode in the gap, decisions back on the
 *     promoted replica, no request past its bound;
 *   - a slot without a master, then no master at all: every decision is
 *     the fail mode's, each breaker transition reported once, no request
 *     past its bound.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "cluster_parts.h"
#include "exact_test.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suspect_failover.h"
#include "suspect_redis.h"

static test_cluster_t *cl;

/* ---- exactness -----------------------------------------------------------
 */

static const suspect_rule_t ex_rule = {"ExactC", EX_LIMIT, 1, 0, 0, 0,
                                       0,        0,        0, 0, 0};

static void flush_all(void)
{
    for (int i = 0; i < cl->n; i++) {
        if (cl->node[i].pid > 0) {
            freeReplyObject(test_redis_cmd(&cl->node[i], "FLUSHALL"));
        }
    }
}

/* Runs plan on the cluster and says how many hits each identity had. */
static void exact_run(ex_plan_t *plan)
{
    size_t admitted[3];

    plan->url = cl->url;
    plan->rule = &ex_rule;
    flush_all();
    ex_check(plan, admitted);
    printf("\n    %zu admitted (member %zu, ip1 %zu, ip2 %zu)\n    ",
           admitted[0], admitted[0], admitted[1], admitted[2]);
}

static void test_exact_one(void)
{
    ex_plan_t plan = {NULL, NULL, 1, 1, {{cluster_key(ex_rule.action, "one")}}};

    exact_run(&plan);
}

/* The member on master 0, the two IPs on masters 1 and 2. */
static void test_exact_pairs(void)
{
    char m[32], x[32], y[32];
    ex_plan_t plan = {NULL, NULL, 2, 2, {{{0}}}};

    CU_ASSERT_FATAL(
        cluster_value_on(cl, 0, ex_rule.action, "m", m, sizeof(m)) >= 0);
    CU_ASSERT_FATAL(
        cluster_value_on(cl, 1, ex_rule.action, "10.0.0.", x, sizeof(x)) >= 0);
    CU_ASSERT_FATAL(
        cluster_value_on(cl, 2, ex_rule.action, "10.1.0.", y, sizeof(y)) >= 0);
    plan.pair[0][0] = cluster_key(ex_rule.action, m);
    plan.pair[0][1] = cluster_key(ex_rule.action, x);
    plan.pair[1][0] = plan.pair[0][0];
    plan.pair[1][1] = cluster_key(ex_rule.action, y);
    exact_run(&plan);
}

/* The seed's keys: every identity's window and lock in two slots. */
static void test_exact_pairs_seed(void)
{
    ex_plan_t plan = {NULL, NULL, 2, 2, {{{0}}}};

    plan.pair[0][0] = test_key(ex_rule.action, "member");
    plan.pair[0][1] = test_key(ex_rule.action, "192.0.2.1");
    plan.pair[1][0] = plan.pair[0][0];
    plan.pair[1][1] = test_key(ex_rule.action, "192.0.2.2");
    exact_run(&plan);
}

/* ---- a slot moved under load ---------------------------------------------
 */

#define MOVE_THREADS 6

typedef struct mover {
    suspect_store_t *store;
    const suspect_key_t *key;
    volatile int *stop;
    long allowed, errors, decisions;
} mover_t;

static const suspect_rule_t move_rule = {"Move", 1000000, 600, 0, 0, 0,
                                         0,      0,       0,   0, 0};

static void *move_load(void *arg)
{
    mover_t *m = arg;

    while (!__atomic_load_n(m->stop, __ATOMIC_ACQUIRE)) {
        suspect_decision_t d;
        if (suspect_store_decide(m->store, &move_rule, m->key, 1, wall_ms(), &d,
                                 NULL) != SUSPECT_OK) {
            m->errors++;
        } else {
            m->allowed += d.allowed;
        }
        __atomic_add_fetch(&m->decisions, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* The movers' decisions so far. */
static long movers_decisions(mover_t *m)
{
    long n = 0;

    for (int i = 0; i < MOVE_THREADS; i++) {
        n += __atomic_load_n(&m[i].decisions, __ATOMIC_RELAXED);
    }
    return n;
}

/* Waits (5 s, scaled) until every mover has made n more decisions: the
 * load has met the state the test made. */
static bool movers_run(mover_t *m, long n)
{
    long from[MOVE_THREADS];
    long long end = test_ha_mono_ms() + test_scale_ms(5000);

    for (int i = 0; i < MOVE_THREADS; i++) {
        from[i] = __atomic_load_n(&m[i].decisions, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < MOVE_THREADS; i++) {
        while (__atomic_load_n(&m[i].decisions, __ATOMIC_RELAXED) <
               from[i] + n) {
            if (test_ha_mono_ms() >= end) {
                return false;
            }
            test_ha_sleep_ms(1);
        }
    }
    return true;
}

/* The store's redirections and waits (TRYAGAIN) so far. */
static unsigned long long store_turns(suspect_store_t *store)
{
    suspect_redis_stats_t st;

    suspect_redis_stats(store, &st);
    return st.redirects + st.retries;
}

/* Waits (5 s, scaled) until the store has been redirected or told to wait
 * since it had `before` of those: the movers met the slot's new state. */
static bool store_met(suspect_store_t *store, unsigned long long before)
{
    long long end = test_ha_mono_ms() + test_scale_ms(5000);

    while (store_turns(store) <= before) {
        if (test_ha_mono_ms() >= end) {
            return false;
        }
        test_ha_sleep_ms(1);
    }
    return true;
}

/* Waits (ms, scaled) until store has had n redirections and the movers
 * n decisions more than before (the state the test made is seen). */
static bool wait_moved(suspect_store_t *store, mover_t *m, long before,
                       unsigned long long n, unsigned ms)
{
    long long end = test_ha_mono_ms() + test_scale_ms(ms);

    for (;;) {
        suspect_redis_stats_t st;

        suspect_redis_stats(store, &st);
        if (st.redirects >= n && movers_decisions(m) >= before + (long)n) {
            return true;
        }
        if (test_ha_mono_ms() >= end) {
            return false;
        }
        test_ha_sleep_ms(10);
    }
}

/* Moves every key of slot from node a to node b with MIGRATE. */
static int migrate_keys(int slot, int a, int b)
{
    for (;;) {
        redisReply *r =
            test_redis_cmd(&cl->node[a], "CLUSTER GETKEYSINSLOT %d 100", slot);
        size_t n = r != NULL && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;

        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            redisReply *m = test_redis_cmd(
                &cl->node[a], "MIGRATE 127.0.0.1 %d %b 0 5000",
                cl->node[b].port, r->element[i]->str, r->element[i]->len);
            bool ok = m != NULL && m->type == REDIS_REPLY_STATUS;
            freeReplyObject(m);
            if (!ok) {
                freeReplyObject(r);
                return -1;
            }
        }
        freeReplyObject(r);
        if (n == 0) {
            return 0;
        }
    }
}

/* Runs a command on node i expecting +OK. */
static bool node_ok(int i, const char *fmt, int slot, const char *id)
{
    redisReply *r = test_redis_cmd(&cl->node[i], fmt, slot, id);
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;

    if (!ok) {
        fprintf(stderr, "node %d: %s\n", i,
                r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "?");
    }
    freeReplyObject(r);
    return ok;
}

static void test_slot_moved(void)
{
    suspect_store_t *store = test_redis_store(cl->url, test_scale_ms(2000),
                                              SUSPECT_REDIS_CLOCK_CALLER, NULL);
    unsigned long long turns;
    char value[32], ida[41], idb[41];
    volatile int stop = 0;
    mover_t m[MOVE_THREADS];
    pthread_t tid[MOVE_THREADS];
    static const suspect_keyopts_t other_keys = {SUSPECT_KEYS_SEED, "other:", 0,
                                                 true};
    suspect_key_t key, other;
    suspect_identity_t id;
    suspect_redis_stats_t st;
    long allowed = 0, errors = 0, decisions = 0;
    int slot;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    flush_all();
    slot =
        cluster_value_on(cl, 0, move_rule.action, "mv", value, sizeof(value));
    CU_ASSERT_FATAL(slot >= 0);
    CU_ASSERT_FATAL(test_cluster_node_id(cl, 0, ida) == 0 &&
                    test_cluster_node_id(cl, 1, idb) == 0);
    key = cluster_key(move_rule.action, value);
    id = test_identity("Id", value);
    CU_ASSERT_FATAL(suspect_key_build(&other_keys, move_rule.action, &id,
                                      &other, NULL) == SUSPECT_OK);
    for (int i = 0; i < MOVE_THREADS; i++) {
        m[i] = (mover_t){store, &key, &stop, 0, 0, 0};
        pthread_create(&tid[i], NULL, move_load, &m[i]);
    }
    /* Every mover decides before the slot moves; then each step is met
     * by the movers before the next (a fixed pause lets a loaded machine
     * skip a step unseen).  While the slot migrates, decisions wait
     * (TRYAGAIN) or are sent on (ASK) until the keys and the owner have
     * moved: the store's timeout, scaled, bounds that time. */
    CU_ASSERT(movers_run(m, 5));
    /* As redis-cli --cluster reshard: importing, migrating, the keys,
     * then the slot's new owner told to both and to the third master. */
    turns = store_turns(store);
    CU_ASSERT(node_ok(1, "CLUSTER SETSLOT %d IMPORTING %s", slot, ida));
    CU_ASSERT(node_ok(0, "CLUSTER SETSLOT %d MIGRATING %s", slot, idb));
    CU_ASSERT(store_met(store, turns));
    CU_ASSERT_EQUAL(migrate_keys(slot, 0, 1), 0);
    /* Between the keys and the owner: a lock written now, on a key of
     * the same slot (same hash tag, another prefix), goes where ASK says
     * (a one-key command the importing node serves). */
    CU_ASSERT_EQUAL(
        suspect_store_block(store, &other, wall_ms(), wall_ms() + 60000, NULL),
        SUSPECT_OK);
    turns = store_turns(store);
    CU_ASSERT(store_met(store, turns));
    CU_ASSERT(node_ok(1, "CLUSTER SETSLOT %d NODE %s", slot, idb));
    CU_ASSERT(node_ok(0, "CLUSTER SETSLOT %d NODE %s", slot, idb));
    CU_ASSERT(node_ok(2, "CLUSTER SETSLOT %d NODE %s", slot, idb));
    /* the movers see the new owner (MOVED), then a few more decisions */
    CU_ASSERT(wait_moved(store, m, movers_decisions(m), 2, 10000));
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < MOVE_THREADS; i++) {
        pthread_join(tid[i], NULL);
        allowed += m[i].allowed;
        errors += m[i].errors;
        decisions += m[i].decisions;
    }
    suspect_redis_stats(store, &st);
    printf("\n    slot %d moved under load: %ld decisions, %ld admitted, %ld "
           "errors; %llu redirections, %llu waits\n    ",
           slot, decisions, allowed, errors, (unsigned long long)st.redirects,
           (unsigned long long)st.retries);
    CU_ASSERT_EQUAL(errors, 0);
    CU_ASSERT_TRUE(allowed > 0);
    /* Every admitted hit is on the new owner, once. */
    CU_ASSERT_EQUAL(
        test_redis_int(&cl->node[1], "ZCARD %b", key.buf, key.window_len),
        allowed);
    CU_ASSERT_EQUAL(
        test_redis_int(&cl->node[0], "CLUSTER COUNTKEYSINSLOT %d", slot), 0);
    CU_ASSERT_EQUAL(
        test_redis_int(&cl->node[1], "EXISTS %b", other.buf, other.lock_len),
        1);
    CU_ASSERT_TRUE(st.redirects >= 2);
    suspect_store_free(store);
}

/* ---- nodes killed --------------------------------------------------------
 */

#define KILL_THREADS 4
#define TIMEOUT_MS   200

typedef struct victim {
    suspect_store_t *store;
    const suspect_key_t *key;
    volatile int *stop;
    long worst_ms, degraded, ok, errors;
    long long first_back; /* a Redis decision after the last degraded one */
    long long last_degraded;
} victim_t;

static const suspect_rule_t kill_rule = {"Killed", 1000000, 600, 0, 0, 0,
                                         0,        0,       0,   0, 0};

static void *victim_load(void *arg)
{
    victim_t *v = arg;

    while (!__atomic_load_n(v->stop, __ATOMIC_ACQUIRE)) {
        suspect_decision_t d;
        long long t0 = mono_ms(), dt;

        if (suspect_store_decide(v->store, &kill_rule, v->key, 1, wall_ms(), &d,
                                 NULL) != SUSPECT_OK) {
            v->errors++;
            continue;
        }
        dt = mono_ms() - t0;
        v->worst_ms = dt > v->worst_ms ? dt : v->worst_ms;
        if (d.degraded != SUSPECT_DEGRADED_NONE) {
            __atomic_add_fetch(&v->degraded, 1, __ATOMIC_RELAXED);
            v->last_degraded = mono_ms();
            __atomic_store_n(&v->first_back, 0, __ATOMIC_RELAXED);
        } else {
            __atomic_add_fetch(&v->ok, 1, __ATOMIC_RELAXED);
            if (v->first_back == 0) {
                __atomic_store_n(&v->first_back, mono_ms(), __ATOMIC_RELAXED);
            }
        }
        test_ha_sleep_ms(1);
    }
    return NULL;
}

/* Breaker transitions, as the daemon would log them. */
static int transitions;

static void on_breaker(void *arg, suspect_breaker_t from, suspect_breaker_t to,
                       const suspect_err_t *why)
{
    (void)arg;
    (void)from;
    (void)to;
    (void)why;
    __atomic_add_fetch(&transitions, 1, __ATOMIC_RELAXED);
}

/* The store suspect-fcgi builds, fail mode closed, transitions counted. */
static suspect_store_t *wrapped(void)
{
    suspect_failover_opts_t fo;

    memset(&fo, 0, sizeof(fo));
    fo.mode = SUSPECT_FAIL_CLOSED;
    fo.max_open_ms = 1000;
    fo.on_breaker = on_breaker;
    return test_redis_failover(cl->url, TIMEOUT_MS, &fo);
}

/* Runs the load on key while fault() happens, until until() is true or
 * the deadline; fills the summed tally into *sum. */
typedef struct load {
    victim_t v[KILL_THREADS];
    pthread_t tid[KILL_THREADS];
    volatile int stop;
} load_t;

static void load_start(load_t *l, suspect_store_t *store,
                       const suspect_key_t *key)
{
    memset(l, 0, sizeof(*l));
    for (int i = 0; i < KILL_THREADS; i++) {
        l->v[i].store = store;
        l->v[i].key = key;
        l->v[i].stop = &l->stop;
        pthread_create(&l->tid[i], NULL, victim_load, &l->v[i]);
    }
}

/* Waits (5 s, scaled) until every thread has had a decision from Redis:
 * the load is under way, each thread connected, before a fault. */
static bool load_going(load_t *l)
{
    long long end = test_ha_mono_ms() + test_scale_ms(5000);

    for (int i = 0; i < KILL_THREADS; i++) {
        while (__atomic_load_n(&l->v[i].ok, __ATOMIC_RELAXED) == 0) {
            if (test_ha_mono_ms() >= end) {
                return false;
            }
            test_ha_sleep_ms(1);
        }
    }
    return true;
}

/* The fail mode's answers so far, on every thread. */
static long load_degraded(load_t *l)
{
    long n = 0;

    for (int i = 0; i < KILL_THREADS; i++) {
        n += __atomic_load_n(&l->v[i].degraded, __ATOMIC_RELAXED);
    }
    return n;
}

/* Waits (ms, scaled) until the fail mode answered n more times than
 * before. */
static bool wait_degraded(load_t *l, long before, long n, unsigned ms)
{
    long long end = test_ha_mono_ms() + test_scale_ms(ms);

    while (load_degraded(l) < before + n) {
        if (test_ha_mono_ms() >= end) {
            return false;
        }
        test_ha_sleep_ms(10);
    }
    return true;
}

/* Waits (ms, scaled) until every thread's last answers are Redis's again,
 * the first of them after `after`. */
static bool wait_back(load_t *l, long long after, unsigned ms)
{
    long long end = test_ha_mono_ms() + test_scale_ms(ms);

    for (;;) {
        int back = 0;

        for (int i = 0; i < KILL_THREADS; i++) {
            back +=
                __atomic_load_n(&l->v[i].first_back, __ATOMIC_RELAXED) > after;
        }
        if (back == KILL_THREADS) {
            return true;
        }
        if (test_ha_mono_ms() >= end) {
            return false;
        }
        test_ha_sleep_ms(10);
    }
}

static void load_stop(load_t *l, victim_t *sum)
{
    memset(sum, 0, sizeof(*sum));
    __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < KILL_THREADS; i++) {
        pthread_join(l->tid[i], NULL);
        sum->worst_ms =
            l->v[i].worst_ms > sum->worst_ms ? l->v[i].worst_ms : sum->worst_ms;
        sum->degraded += l->v[i].degraded;
        sum->ok += l->v[i].ok;
        sum->errors += l->v[i].errors;
        sum->first_back = l->v[i].first_back > sum->first_back
                              ? l->v[i].first_back
                              : sum->first_back;
    }
}

/* The first master's replica takes over when it is killed. */
static void test_master_killed(void)
{
    suspect_store_t *store = wrapped();
    char value[32];
    long long killed;
    suspect_key_t key;
    victim_t sum;
    load_t l;
    int slot, owner;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    slot = cluster_value_on(cl, 2, kill_rule.action, "k", value, sizeof(value));
    CU_ASSERT_FATAL(slot >= 0);
    key = cluster_key(kill_rule.action, value);
    load_start(&l, store, &key);
    CU_ASSERT(load_going(&l));
    test_redis_kill9(&cl->node[2]);
    killed = mono_ms();
    CU_ASSERT_EQUAL(test_cluster_wait_ok(cl, slot, 2, 20000), 0);
    /* Decisions come back once the map is read again. */
    CU_ASSERT(wait_back(&l, killed, 10000));
    load_stop(&l, &sum);
    owner = test_cluster_slot_owner(cl, 0, slot);
    printf("\n    master killed: %ld fail-mode answers, %ld from Redis, back "
           "%lld ms after the kill, slowest %ld ms\n    ",
           sum.degraded, sum.ok,
           sum.first_back > 0 ? sum.first_back - killed : -1, sum.worst_ms);
    CU_ASSERT_EQUAL(sum.errors, 0);
    CU_ASSERT_TRUE(sum.degraded > 0);
    CU_ASSERT_TRUE(sum.first_back > killed);
    CU_ASSERT_TRUE(owner == 5);
    CU_ASSERT_TRUE(
        test_redis_int(&cl->node[5], "ZCARD %b", key.buf, key.window_len) > 0);
    CU_ASSERT_TRUE(sum.worst_ms <= (long)test_scale_ms(3 * TIMEOUT_MS + 300));
    suspect_store_free(store);
}

/* Kills the promoted replica (its slots have no master left: the cluster
 * is down), then every node: the fail mode, bounded, one report per
 * breaker transition. */
static void test_no_master(void)
{
    suspect_store_t *store;
    suspect_failover_stats_t fs;
    char value[32];
    suspect_key_t key;
    victim_t sum;
    load_t l;

    transitions = 0;
    store = wrapped();
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_FATAL(cluster_value_on(cl, 0, kill_rule.action, "d", value,
                                     sizeof(value)) >= 0);
    key = cluster_key(kill_rule.action, value);
    load_start(&l, store, &key);
    CU_ASSERT(load_going(&l));
    test_redis_kill9(&cl->node[5]);
    CU_ASSERT_EQUAL(test_cluster_wait_fail(cl, 20000), 0);
    CU_ASSERT(wait_degraded(&l, 0, 10, 10000));
    for (int i = 0; i < cl->n; i++) {
        test_redis_kill9(&cl->node[i]);
    }
    CU_ASSERT(wait_degraded(&l, load_degraded(&l), 10, 10000));
    load_stop(&l, &sum);
    suspect_failover_stats(store, &fs);
    printf("\n    no master: %ld fail-mode answers, %ld from Redis before, "
           "slowest %ld ms, %d breaker transitions\n    ",
           sum.degraded, sum.ok, sum.worst_ms, transitions);
    CU_ASSERT_EQUAL(sum.errors, 0);
    CU_ASSERT_TRUE(sum.degraded > 0);
    CU_ASSERT_TRUE(fs.opens >= 1);
    CU_ASSERT_EQUAL((uint64_t)transitions, fs.opens + fs.probes + fs.closes);
    CU_ASSERT_TRUE(sum.worst_ms <= (long)test_scale_ms(3 * TIMEOUT_MS + 300));
    suspect_store_free(store);
}

int cluster_load_register(CU_pSuite s, test_cluster_t *c)
{
    cl = c;
    if (!CU_add_test(s, "exact: one identity, 2 processes x 16 threads",
                     test_exact_one) ||
        !CU_add_test(s, "exact: member + IP on three masters",
                     test_exact_pairs) ||
        !CU_add_test(s, "exact: member + IP, the seed's keys",
                     test_exact_pairs_seed) ||
        !CU_add_test(s, "a slot moved under load", test_slot_moved) ||
        !CU_add_test(s, "a master killed, its replica promoted",
                     test_master_killed) ||
        !CU_add_test(s, "no master for a slot, then none: fail mode",
                     test_no_master)) {
        return -1;
    }
    return 0;
}
