/*
 * test_failover_carry.c - what a web server decided on its own during a
 * Redis outage reaches Redis when it returns (part of the "failover"
 * suite, on the suite's real redis-server, killed with -9 and restarted).
 *
 * Two wrappers stand for two web servers sharing one Redis.  While Redis is
 * down, A alone locks identities and admits hits on its local store; Redis
 * comes back empty (no persistence).  Checked: A's first decision on Redis
 * already sees its locks (they are written before it decides), also one
 * that A's lock cache denied during the outage; the locks
 * are in Redis with their end and what is left of their TTL, a longer lock
 * Redis holds is not shortened, an identity unblocked during the outage is
 * not locked again; the admitted hits are in the Redis windows with their
 * own times; and B, which saw none of it, denies and counts the same.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "redis_parts.h"
#include "suspect_failover.h"
#include "suspect_redis.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define SEC 1000LL

static test_redis_t *srv;

/* A web server's store: Redis behind the wrapper, fail mode local, a
 * breaker that opens on the first failure and probes every 20 ms. */
static suspect_store_t *web_server(void)
{
    suspect_failover_opts_t fo = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 1, 20, 20, 0, NULL, NULL, 0, NULL};
    suspect_store_t *out = test_redis_failover(srv->url, 500, &fo);

    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    return out;
}

static suspect_decision_t decide(suspect_store_t *s, const suspect_rule_t *r,
                                 const char *id, int64_t at)
{
    suspect_key_t key = test_key(r->action, id);
    suspect_decision_t d;

    CU_ASSERT_EQUAL(suspect_store_decide(s, r, &key, 1, at, &d, NULL),
                    SUSPECT_OK);
    return d;
}

/* Locks id on s's local store (limit 2: two hits, then the lock), at t. */
static void lock_locally(suspect_store_t *s, const suspect_rule_t *otp,
                         const char *id, int64_t t)
{
    suspect_decision_t d;

    for (int i = 0; i < 2; i++) {
        d = decide(s, otp, id, t + i);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);
    }
    d = decide(s, otp, id, t + 2);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t + 2 + 600 * SEC);
}

/* A string value of Redis ("" when missing) into buf. */
static void redis_get(const char *key, char *buf, size_t size)
{
    redisReply *r = test_redis_cmd(srv, "GET %s", key);

    snprintf(buf, size, "%s",
             r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

static void test_carry_back(void)
{
    suspect_rule_t otp = {"CarryOtp", 2, 600, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t feed = {"CarryFeed", 3, 600, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t freed = test_key("CarryOtp", "unblocked");
    suspect_store_t *a, *b;
    suspect_failover_stats_t st;
    suspect_decision_t d;
    int64_t t = wall_ms(), deadline, pttl;
    char v[128], want[128];

    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    a = web_server();
    b = web_server();
    CU_ASSERT_EQUAL(decide(a, &feed, "warm", t).degraded, 0);
    CU_ASSERT_EQUAL(decide(b, &feed, "warm", t).degraded, 0);
    /* Locked by Redis before the outage, so in A's lock cache. */
    for (int i = 0; i < 3; i++) {
        d = decide(a, &otp, "cached", t - 10 + i);
    }
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);

    test_redis_kill9(srv);
    lock_locally(a, &otp, "attacker", t);
    lock_locally(a, &otp, "attacker2", t + 3);
    lock_locally(a, &otp, "unblocked", t + 6);
    /* Denied from the cache during the outage (the breaker open): carried
     * back too, since Redis comes back without it. */
    d = decide(a, &otp, "cached", t + 9);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t - 8 + 600 * SEC);
    /* Unblocked during the outage: the primary's error is returned, the
     * local store and the journal forget it. */
    CU_ASSERT_NOT_EQUAL(suspect_store_reset(a, &freed, SUSPECT_RESET_ALL, NULL),
                        SUSPECT_OK);
    CU_ASSERT_TRUE(decide(a, &feed, "user", t + 10).allowed);
    CU_ASSERT_TRUE(decide(a, &feed, "user", t + 11).allowed);

    CU_ASSERT_EQUAL_FATAL(test_redis_restart(srv), 0);
    /* Redis holds a longer lock on attacker2 (set by another host). */
    freeReplyObject(test_redis_cmd(
        srv, "SET CarryOtp:attacker2:locked attacker2|until=%lld PX 3600000",
        (long long)(t + 3600 * SEC)));

    /* The attacker's own requests: denied by the local lock while Redis
     * is not used yet, and by the carried lock from the first decision
     * Redis makes. */
    deadline = mono_ms() + test_scale_ms(5000);
    do {
        usleep(5000);
        d = decide(a, &otp, "attacker", t + 20);
        CU_ASSERT_FALSE(d.allowed);
        CU_ASSERT_EQUAL(d.restriction_end_ms, t + 2 + 600 * SEC);
    } while (d.degraded != SUSPECT_DEGRADED_NONE && mono_ms() < deadline);
    CU_ASSERT_EQUAL_FATAL(d.degraded, SUSPECT_DEGRADED_NONE);

    redis_get("CarryOtp:attacker:locked", v, sizeof(v));
    snprintf(want, sizeof(want), "attacker|until=%lld",
             (long long)(t + 2 + 600 * SEC));
    CU_ASSERT_STRING_EQUAL(v, want);
    pttl = test_redis_int(srv, "PTTL CarryOtp:attacker:locked");
    CU_ASSERT_TRUE(pttl > 590 * SEC && pttl <= 600 * SEC);
    redis_get("CarryOtp:attacker2:locked", v, sizeof(v));
    snprintf(want, sizeof(want), "attacker2|until=%lld",
             (long long)(t + 3600 * SEC));
    CU_ASSERT_STRING_EQUAL(v, want);
    CU_ASSERT_TRUE(test_redis_int(srv, "PTTL CarryOtp:attacker2:locked") >
                   600 * SEC);
    redis_get("CarryOtp:cached:locked", v, sizeof(v));
    snprintf(want, sizeof(want), "cached|until=%lld",
             (long long)(t - 8 + 600 * SEC));
    CU_ASSERT_STRING_EQUAL(v, want);
    CU_ASSERT_EQUAL(test_redis_int(srv, "EXISTS CarryOtp:unblocked:locked"), 0);
    CU_ASSERT_EQUAL(test_redis_int(srv, "EXISTS CarryOtp:unblocked"), 0);
    CU_ASSERT_EQUAL(test_redis_int(srv, "ZCARD CarryOtp:attacker"), 2);
    CU_ASSERT_EQUAL(test_redis_int(srv, "ZCOUNT CarryFeed:user %lld %lld",
                                   (long long)(t + 10), (long long)(t + 11)),
                    2);
    CU_ASSERT_TRUE(test_redis_int(srv, "PTTL CarryFeed:user") > 590 * SEC);
    suspect_failover_stats(a, &st);
    CU_ASSERT_EQUAL(st.carried_locks, 2);
    CU_ASSERT_EQUAL(st.carried_hits, 6);
    CU_ASSERT_EQUAL(st.carry_dropped, 0);

    /* B saw none of it and decides the same. */
    d = decide(b, &otp, "attacker", t + 30);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t + 2 + 600 * SEC);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_NONE);
    CU_ASSERT_EQUAL(decide(b, &otp, "cached", t + 30).restriction_end_ms,
                    t - 8 + 600 * SEC);
    d = decide(b, &otp, "attacker2", t + 30);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t + 3600 * SEC);
    d = decide(b, &feed, "user", t + 30);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 0);
    CU_ASSERT_FALSE(decide(b, &feed, "user", t + 31).allowed);
    CU_ASSERT_TRUE(decide(b, &otp, "unblocked", t + 30).allowed);
    suspect_store_free(a);
    suspect_store_free(b);
}

/* The journal is bounded: 1024 identities, 4096 hits; the rest is dropped
 * and counted.  The primary is a Redis that is not there (a socket path
 * nothing listens on): every call fails at once. */
static void test_carry_bounds(void)
{
    suspect_failover_opts_t fo = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 1, 60000, 60000, 0, NULL, NULL, 0, NULL};
    suspect_store_t *s =
        test_redis_failover("unix:///nonexistent/redis.sock", 50, &fo);
    suspect_rule_t r = {"Feed", 100000, 3600, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_failover_stats_t st;
    char id[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (int i = 0; i < 1100; i++) {
        snprintf(id, sizeof(id), "id%d", i);
        CU_ASSERT_EQUAL(decide(s, &r, id, i).degraded, SUSPECT_DEGRADED_LOCAL);
    }
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.carry_dropped, 1100 - 1024);
    for (int i = 0; i < 5000; i++) {
        decide(s, &r, "id0", 2000 + i);
    }
    suspect_failover_stats(s, &st);
    CU_ASSERT_EQUAL(st.carry_dropped, 1100 - 1024 + 5000 - (4096 - 1024));
    suspect_store_free(s);
}

int failover_carry_register(CU_pSuite s, test_redis_t *server)
{
    srv = server;
    if (CU_add_test(s, "carried back: bounded", test_carry_bounds) == NULL) {
        return -1;
    }
    return CU_add_test(s, "redis: outage decisions carried back",
                       test_carry_back) != NULL
               ? 0
               : -1;
}
