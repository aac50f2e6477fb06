/*
 * test_sentinel.c - the Redis store on a Sentinel set-up (suite
 * "sentinel"): a master, a replica and three sentinels started by the
 * suite (tests/helpers/redisha.c), the data nodes and the sentinels with
 * passwords of their own.
 *
 * What is checked:
 *   - decisions, status, reset, block and the lock listing through
 *     redis+sentinel://, landing on the master; a token bucket of OTP sends
 *     there too (its meter key on the master);
 *   - logins apart: a wrong or missing sentinel password, a wrong master
 *     password, an unknown master name, each a clear error;
 *   - a failover the sentinels are told to make (the old master stays up,
 *     demoted): a store that has been watching the sentinels follows the
 *     +switch-master announcement before it sends anything to the old
 *     master (no retry, no error); one that meets the demoted master
 *     (READONLY) asks the sentinels and sends the request again there;
 *   - kill -9 of the master under load (test_sentinel_kill.c): the replica
 *     promoted, the fail mode during the gap, no request past its bound,
 *     decisions back on the new master, the outage journal carried over,
 *     and the hits async replication lost, measured;
 *   - every sentinel paused and no master known (test_sentinel_dead.c):
 *     each request within the store's timeout, the breaker sparing the
 *     rest, decisions back once the sentinels resume.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/redisha.h"
#include "helpers/stores.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "meter_test.h"
#include "sentinel_parts.h"
#include "suites.h"
#include "suspect_redis.h"

#define TIMEOUT_MS 1000

static test_sentinel_set_t set;

static suspect_store_t *open_url(const char *url, unsigned timeout_ms)
{
    suspect_redis_opts_t opts = {url, timeout_ms, timeout_ms, 0, NULL};
    suspect_store_t *store = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (suspect_redis_new(&opts, &store, &err) != SUSPECT_OK) {
        fprintf(stderr, "sentinel store: %s\n", err.text);
        return NULL;
    }
    return store;
}

/* The current master as a test_redis_t of the set (by its port). */
static test_redis_t *current_master(void)
{
    int port = test_sentinel_master_port(&set, 0);

    return port == set.master.port    ? &set.master
           : port == set.replica.port ? &set.replica
                                      : NULL;
}

static int suite_init(void)
{
    return test_sentinel_start(&set, "m-pass", "s-pass", 400);
}

static int suite_clean(void)
{
    test_sentinel_stop(&set);
    return 0;
}

/* Decisions, status, reset, block and the listing land on the master. */
static void test_decisions(void)
{
    suspect_store_t *store = open_url(set.url, TIMEOUT_MS);
    suspect_rule_t rule = {"SentinelOtp", 3, 600, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key(rule.action, "alice");
    test_redis_t *m = current_master();
    int64_t t = test_ha_wall_ms();
    suspect_decision_t d;
    suspect_status_t st;
    int locks = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(suspect_redis_ping(store, NULL), SUSPECT_OK);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &rule, &key, 1, t + i, &d, NULL),
            SUSPECT_OK);
        CU_ASSERT_EQUAL(d.allowed, i < 3);
    }
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(test_ha_int(m->port, "m-pass", "ZCARD SentinelOtp:alice"),
                    3);
    CU_ASSERT_EQUAL(
        test_ha_int(m->port, "m-pass", "EXISTS SentinelOtp:alice:locked"), 1);
    CU_ASSERT_EQUAL(suspect_store_status(store, &rule, &key, t + 5, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_EQUAL(st.locked_until_ms, t + 3 + 600000);
    CU_ASSERT_EQUAL(suspect_redis_foreach_locked(store, "SentinelOtp:", t + 5,
                                                 test_count_lock, &locks, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(locks, 1);
    CU_ASSERT_EQUAL(
        suspect_store_reset(store, &key,
                            SUSPECT_RESET_WINDOW | SUSPECT_RESET_LOCK, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(
        test_ha_int(m->port, "m-pass", "EXISTS SentinelOtp:alice:locked"), 0);
    CU_ASSERT_EQUAL(suspect_store_block(store, &key, t + 6, t + 60000, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(
        test_ha_int(m->port, "m-pass", "EXISTS SentinelOtp:alice:locked"), 1);
    suspect_store_free(store);
}

/* OTP sends' bucket through the sentinels: the meter on the master. */
static void test_meter(void)
{
    suspect_store_t *store = open_url(set.url, TIMEOUT_MS);
    suspect_key_t key = test_key("OtpSend", "33644444444");
    test_redis_t *m = current_master();

    int port = m != NULL ? m->port : -1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    mt_otp_sends(store, &key);
    CU_ASSERT_EQUAL(
        test_ha_int(port, "m-pass", "EXISTS OtpSend:33644444444:tb"), 1);
    CU_ASSERT_EQUAL(test_ha_int(port, "m-pass", "EXISTS OtpSend:33644444444"),
                    0);
    suspect_store_free(store);
}

/* The error a store on url gives its first decision (text into out). */
static suspect_rc_t first_error(const char *url, char *out, size_t size)
{
    suspect_store_t *store = open_url(url, TIMEOUT_MS);
    suspect_rule_t rule = {"SentinelErr", 3, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key(rule.action, "x");
    suspect_decision_t d;
    suspect_err_t err;
    suspect_rc_t rc;

    if (store == NULL) {
        return SUSPECT_E_INVAL;
    }
    suspect_err_clear(&err);
    rc = suspect_store_decide(store, &rule, &key, 1, test_ha_wall_ms(), &d,
                              &err);
    snprintf(out, size, "%s", err.text);
    suspect_store_free(store);
    return rc;
}

/* The sentinels' and the master's logins are apart, and each says what
 * went wrong. */
static void test_logins(void)
{
    char url[800], text[SUSPECT_ERR_TEXT_MAX];
    int p[3] = {set.sentinel_port[0], set.sentinel_port[1],
                set.sentinel_port[2]};

    snprintf(url, sizeof(url),
             "redis+sentinel://:m-pass@127.0.0.1:%d,127.0.0.1:%d/mymaster"
             "?sentinelPassword=wrong",
             p[0], p[1]);
    CU_ASSERT_EQUAL(first_error(url, text, sizeof(text)), SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "WRONGPASS"));
    snprintf(url, sizeof(url), "redis+sentinel://:m-pass@127.0.0.1:%d/mymaster",
             p[2]);
    CU_ASSERT_EQUAL(first_error(url, text, sizeof(text)), SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "NOAUTH"));
    snprintf(url, sizeof(url),
             "redis+sentinel://:s-pass@127.0.0.1:%d/mymaster"
             "?sentinelPassword=s-pass",
             p[0]);
    CU_ASSERT_EQUAL(first_error(url, text, sizeof(text)), SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "WRONGPASS"));
    snprintf(url, sizeof(url),
             "redis+sentinel://:m-pass@127.0.0.1:%d/othermaster"
             "?sentinelPassword=s-pass",
             p[0]);
    CU_ASSERT_EQUAL(first_error(url, text, sizeof(text)), SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "does not know master othermaster"));
    /* A dead sentinel first: the next one answers. */
    snprintf(url, sizeof(url),
             "redis+sentinel://:m-pass@127.0.0.1:%d,127.0.0.1:%d/mymaster"
             "?sentinelPassword=s-pass",
             test_free_port(), p[1]);
    text[0] = '\0';
    CU_ASSERT_EQUAL(first_error(url, text, sizeof(text)), SUSPECT_OK);
}

/* SENTINEL FAILOVER, then the old master made a replica of the new one
 * (as the sentinels do, but they look at it only every 10 s), and waits
 * until it is in sync; returns the new master, NULL on failure. */
static test_redis_t *forced_failover(test_redis_t *old)
{
    test_redis_t *next = old == &set.master ? &set.replica : &set.master;
    redisContext *c;
    redisReply *r;
    long long deadline = test_ha_mono_ms() + test_scale_ms(15000);
    struct timeval tv = {2, 0};

    c = redisConnectWithTimeout("127.0.0.1", set.sentinel_port[0], tv);
    if (c == NULL || c->err) {
        redisFree(c);
        return NULL;
    }
    freeReplyObject(redisCommand(c, "AUTH s-pass"));
    r = redisCommand(c, "SENTINEL FAILOVER mymaster");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    if (test_sentinel_wait_master(&set, next->port, 15000) != 0) {
        fprintf(stderr,
                "forced failover: %d is not the master (sentinels "
                "say %d %d %d)\n",
                next->port, test_sentinel_master_port(&set, 0),
                test_sentinel_master_port(&set, 1),
                test_sentinel_master_port(&set, 2));
        return NULL;
    }
    freeReplyObject(test_ha_cmd(old->port, set.master_pw,
                                "REPLICAOF 127.0.0.1 %d", next->port));
    for (;;) {
        r = test_ha_cmd(old->port, set.master_pw, "INFO replication");
        if (r != NULL && r->type == REDIS_REPLY_STRING &&
            strstr(r->str, "role:slave") != NULL &&
            strstr(r->str, "master_link_status:up") != NULL) {
            freeReplyObject(r);
            return next;
        }
        if (test_ha_mono_ms() > deadline) {
            fprintf(stderr, "forced failover: old master: %s\n",
                    r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "?");
            freeReplyObject(r);
            return NULL;
        }
        freeReplyObject(r);
        test_ha_sleep_ms(20);
    }
}

/* Decides once on store for a fresh identity; the decision's rc. */
static suspect_rc_t decide_once(suspect_store_t *store, const char *who)
{
    suspect_rule_t rule = {"SentinelSwitch", 100, 600, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key(rule.action, who);
    suspect_decision_t d;

    return suspect_store_decide(store, &rule, &key, 1, test_ha_wall_ms(), &d,
                                NULL);
}

/* A forced failover, the old master kept (demoted): one store that has
 * listened to the sentinels long enough switches on the announcement;
 * another meets READONLY and moves with one retry. */
static void test_switch(void)
{
    suspect_store_t *watching = open_url(set.url, TIMEOUT_MS);
    suspect_store_t *deaf = open_url(set.url, TIMEOUT_MS);
    test_redis_t *old = current_master(), *next;
    suspect_redis_stats_t ws, ds;

    CU_ASSERT_PTR_NOT_NULL_FATAL(watching);
    CU_ASSERT_PTR_NOT_NULL_FATAL(deaf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(old);
    CU_ASSERT_EQUAL(decide_once(watching, "w1"), SUSPECT_OK);
    CU_ASSERT_EQUAL(decide_once(deaf, "d1"), SUSPECT_OK);
    /* The watch starts a second after the first lookup, on a call. */
    test_ha_sleep_ms(1200);
    CU_ASSERT_EQUAL(decide_once(watching, "w2"), SUSPECT_OK);
    next = forced_failover(old);
    if (next == NULL) {
        CU_FAIL("the sentinels did not fail over");
        suspect_store_free(watching);
        suspect_store_free(deaf);
        return;
    }
    /* Let the announcement arrive and the poll interval pass. */
    test_ha_sleep_ms(300);
    CU_ASSERT_EQUAL(decide_once(watching, "w3"), SUSPECT_OK);
    CU_ASSERT_EQUAL(decide_once(deaf, "d3"), SUSPECT_OK);
    CU_ASSERT_EQUAL(
        test_ha_int(next->port, "m-pass", "ZCARD SentinelSwitch:w3"), 1);
    CU_ASSERT_EQUAL(
        test_ha_int(next->port, "m-pass", "ZCARD SentinelSwitch:d3"), 1);
    suspect_redis_stats(watching, &ws);
    suspect_redis_stats(deaf, &ds);
    CU_ASSERT_EQUAL(ws.switches, 1);
    CU_ASSERT_EQUAL(ws.retries, 0);
    CU_ASSERT_EQUAL(ws.errors, 0);
    CU_ASSERT_EQUAL(ds.switches, 1);
    CU_ASSERT_EQUAL(ds.retries, 1);
    CU_ASSERT_EQUAL(ds.errors, 0);
    suspect_store_free(watching);
    suspect_store_free(deaf);
}

int register_sentinel_suite(void)
{
    CU_pSuite s = CU_add_suite("sentinel", suite_init, suite_clean);

    if (s == NULL ||
        !CU_add_test(s, "decisions on the master", test_decisions) ||
        !CU_add_test(s, "meter: OTP sends on the master", test_meter) ||
        !CU_add_test(s, "logins apart, clear errors", test_logins) ||
        !CU_add_test(s, "forced failover: announcement, READONLY",
                     test_switch) ||
        sentinel_kill_register(s, &set) != 0 ||
        sentinel_dead_register(s, &set) != 0) {
        return -1;
    }
    return 0;
}
