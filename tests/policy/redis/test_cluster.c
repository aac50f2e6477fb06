/*
 * test_cluster.c - the Redis store on a Redis Cluster (suite "cluster",
 * and the "cluster" / "cluster-seed" kinds of the shared scenario suites),
 * on clusters the suites start (tests/helpers/redisha.c).
 *
 * Kinds: three masters, no replicas; "cluster" builds keys with the hash
 * tag (the default with Cluster: an identity's window and lock in one
 * slot), "cluster-seed" the seed's keys (window and lock hash apart: every
 * decision takes the split path).  The scenario suite must give the same
 * decisions as on every other store.
 *
 * Suite "cluster": three masters and a replica each.
 *   - routing: one seed in the URL, identities spread over every master,
 *     each key on the master that owns its slot, no redirection (the
 *     client's CRC16 and hash tags agree with the server's);
 *   - scripts: SCRIPT FLUSH on every master costs no decision;
 *   - reservations: a hit reserved by a decision in flight denies but
 *     does not lock, and locks once it is an ordinary hit;
 *   - exactness (test_cluster_load.c): 2 processes x 16 threads on one
 *     identity, and on a member + IP pair on two nodes (the same pair, and
 *     two pairs sharing the member), never more than the limit in any
 *     window; a slot moved under load (MIGRATING/IMPORTING, MIGRATE, ASK,
 *     TRYAGAIN, then MOVED) with no error and every admitted hit counted
 *     once; a master killed and its replica promoted; no master left for a
 *     slot, then none at all: the fail mode, one breaker report per
 *     transition, never a request past its bound.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cluster_parts.h"
#include "helpers/redisha.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suites.h"
#include "suspect_redis.h"

/* ---- the scenario kinds --------------------------------------------------
 */

static test_cluster_t kinds_cluster;
static int kinds_users;

static int kind_setup(void)
{
    return kinds_users++ > 0 ? 0
                             : test_cluster_start(&kinds_cluster, 3, 0, 1000);
}

static int kind_teardown(void)
{
    if (--kinds_users == 0) {
        test_cluster_stop(&kinds_cluster);
    }
    return 0;
}

static suspect_store_t *kind_open(void)
{
    for (int i = 0; i < kinds_cluster.masters; i++) {
        freeReplyObject(test_redis_cmd(&kinds_cluster.node[i], "FLUSHALL"));
    }
    return test_redis_store(kinds_cluster.url, 5000, SUSPECT_REDIS_CLOCK_CALLER,
                            NULL);
}

static const suspect_keyopts_t tagged_keys = {SUSPECT_KEYS_SEED, NULL, 0, true};

const test_store_kind_t test_cluster_kind = {
    "cluster", kind_setup, kind_teardown, kind_open, &tagged_keys};
const test_store_kind_t test_cluster_seed_kind = {
    "cluster-seed", kind_setup, kind_teardown, kind_open, NULL};

/* ---- the suite's cluster -------------------------------------------------
 */

static test_cluster_t cl;

suspect_key_t cluster_key(const char *action, const char *value)
{
    suspect_identity_t id = test_identity("Id", value);
    suspect_key_t key;

    if (suspect_key_build(&tagged_keys, action, &id, &key, NULL) !=
        SUSPECT_OK) {
        abort();
    }
    return key;
}

int cluster_key_slot(test_cluster_t *c, const char *key, size_t len)
{
    for (int i = 0; i < c->n; i++) {
        long long slot;
        if (c->node[i].pid <= 0) {
            continue;
        }
        slot = test_redis_int(&c->node[i], "CLUSTER KEYSLOT %b", key, len);
        if (slot >= 0) {
            return (int)slot;
        }
    }
    return -1;
}

int cluster_value_on(test_cluster_t *c, int node, const char *action,
                     const char *stem, char *out, size_t size)
{
    for (int i = 0; i < 10000; i++) {
        suspect_key_t k;
        int slot;

        snprintf(out, size, "%s%d", stem, i);
        k = cluster_key(action, out);
        slot = cluster_key_slot(c, k.buf, k.window_len);
        if (slot >= 0 && test_cluster_slot_owner(c, node, slot) == node) {
            return slot;
        }
    }
    return -1;
}

static int suite_init(void)
{
    return test_cluster_start(&cl, 3, 1, 1000);
}

static int suite_clean(void)
{
    test_cluster_stop(&cl);
    return 0;
}

void cluster_flush(test_cluster_t *c)
{
    for (int i = 0; i < c->n; i++) {
        redisReply *r;
        if (c->node[i].pid <= 0) {
            continue;
        }
        r = test_redis_cmd(&c->node[i], "ROLE");
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            strcmp(r->element[0]->str, "master") == 0) {
            freeReplyObject(test_redis_cmd(&c->node[i], "FLUSHALL"));
        }
        freeReplyObject(r);
    }
}

static void flush_masters(void)
{
    cluster_flush(&cl);
}

/* Identities on every master, one seed in the URL: each key lands on the
 * owner of its slot, without a single redirection. */
static void test_routing(void)
{
    char url[128], value[32];
    suspect_store_t *store;
    suspect_rule_t rule = {"Route", 5, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_redis_stats_t st;
    int on[3] = {0, 0, 0};

    flush_masters();
    snprintf(url, sizeof(url), "redis+cluster://127.0.0.1:%d", cl.node[0].port);
    store = test_redis_store(url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(suspect_redis_ping(store, NULL), SUSPECT_OK);
    for (int i = 0; i < 60; i++) {
        suspect_key_t k;
        suspect_decision_t d;
        int slot, owner;

        snprintf(value, sizeof(value), "user%d", i);
        k = cluster_key(rule.action, value);
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &rule, &k, 1, wall_ms(), &d, NULL),
            SUSPECT_OK);
        CU_ASSERT_TRUE(d.allowed);
        slot = cluster_key_slot(&cl, k.buf, k.window_len);
        owner = test_cluster_slot_owner(&cl, 0, slot);
        CU_ASSERT_TRUE_FATAL(owner >= 0 && owner < 3);
        on[owner]++;
        CU_ASSERT_EQUAL(
            test_redis_int(&cl.node[owner], "ZCARD %b", k.buf, k.window_len),
            1);
    }
    CU_ASSERT_TRUE(on[0] > 0 && on[1] > 0 && on[2] > 0);
    suspect_redis_stats(store, &st);
    CU_ASSERT_EQUAL(st.redirects, 0);
    CU_ASSERT_EQUAL(st.errors, 0);
    CU_ASSERT_TRUE(st.lookups >= 1);
    suspect_store_free(store);
}

/* Every master loses its scripts: the next decisions load them again. */
static void test_script_flush(void)
{
    suspect_store_t *store =
        test_redis_store(cl.url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
    suspect_rule_t rule = {"Flush", 5, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_redis_stats_t st;
    char value[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    flush_masters();
    CU_ASSERT_EQUAL(suspect_redis_ping(store, NULL), SUSPECT_OK);
    for (int i = 0; i < cl.masters; i++) {
        freeReplyObject(test_redis_cmd(&cl.node[i], "SCRIPT FLUSH"));
    }
    for (int i = 0; i < 30; i++) {
        suspect_key_t k;
        suspect_decision_t d;

        snprintf(value, sizeof(value), "f%d", i);
        k = cluster_key(rule.action, value);
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &rule, &k, 1, wall_ms(), &d, NULL),
            SUSPECT_OK);
        CU_ASSERT_TRUE(d.allowed);
    }
    suspect_redis_stats(store, &st);
    CU_ASSERT_TRUE(st.reloads >= 1);
    CU_ASSERT_EQUAL(st.errors, 0);
    suspect_store_free(store);
}

/* A hit a decision in flight reserved (and may take back) denies, but a
 * lock is only earned by hits that stay. */
static void test_reserved_no_lock(void)
{
    suspect_store_t *store =
        test_redis_store(cl.url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
    suspect_rule_t rule = {"Reserved", 2, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t k = cluster_key(rule.action, "m1");
    int64_t t0 = 1710000012345LL;
    int slot = cluster_key_slot(&cl, k.buf, k.window_len);
    test_redis_t *owner;
    suspect_decision_t d;
    char reserved[80];

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_TRUE_FATAL(slot >= 0);
    owner = &cl.node[test_cluster_slot_owner(&cl, 0, slot)];
    flush_masters();
    /* One hit, and a reservation until t0 + 500, as a decision across
     * slots reserves it ("<taken at>:<id>" in the window's slots key). */
    snprintf(reserved, sizeof(reserved), "%lld:0000aaaa-0000",
             (long long)(t0 - 5));
    freeReplyObject(test_redis_cmd(owner, "ZADD %b %lld plain1", k.buf,
                                   k.window_len, (long long)(t0 - 10)));
    freeReplyObject(test_redis_cmd(owner, "ZADD %b:slots %lld %s", k.buf,
                                   k.window_len, (long long)(t0 + 500),
                                   reserved));
    CU_ASSERT_EQUAL(suspect_store_decide(store, &rule, &k, 1, t0, &d, NULL),
                    SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_FALSE(d.locked);
    /* Busy: the window is full only with a reservation, which may be
     * taken back by t0 + 500. */
    CU_ASSERT_TRUE(d.busy);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t0 + 500);
    CU_ASSERT_EQUAL(test_redis_int(owner, "EXISTS %b", k.buf, k.lock_len), 0);
    /* The slot is a hit (at t0 - 5) from its end on: now it locks. */
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &rule, &k, 1, t0 + 600, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t0 + 600 + 600000);
    suspect_store_free(store);
}

int register_cluster_suite(void)
{
    CU_pSuite s = CU_add_suite("cluster", suite_init, suite_clean);

    if (s == NULL ||
        !CU_add_test(s, "routing: every key on its slot's master",
                     test_routing) ||
        !CU_add_test(s, "SCRIPT FLUSH on every master: no decision lost",
                     test_script_flush) ||
        !CU_add_test(s, "a reserved hit denies, never locks",
                     test_reserved_no_lock) ||
        cluster_meter_register(s, &cl) != 0 ||
        cluster_load_register(s, &cl) != 0) {
        return -1;
    }
    return 0;
}
