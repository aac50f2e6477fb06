/*
 * test_failover_meter.c - token buckets through the failover wrapper
 * during a Redis outage (part of the "failover" suite, on the suite's
 * real redis-server, killed with -9 and restarted).
 *
 * Host A is the wrapper around the suite's Redis, its local store a second
 * redis-server of its own that stays up (a store that keeps meters); B is
 * a plain Redis store on the suite's server, another host that saw nothing
 * of the outage.  While the primary is down, A admits requests on its
 * local meters and locks a phone; the primary comes back empty.  Checked:
 * A's first decision on the primary comes after the journal: the admitted
 * requests are taken into the primary's meter at their own times and the
 * lock is there, so B counts and denies the same; the wrapper keeps meters
 * only when both its stores do.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "meter_test.h"
#include "redis_parts.h"
#include "suspect_failover.h"
#include "suspect_redis.h"

static test_redis_t *srv;

static suspect_decision_t decide(suspect_store_t *s, const suspect_rule_t *r,
                                 const char *id, int64_t at)
{
    suspect_key_t key = test_key(r->action, id);
    suspect_decision_t d;

    memset(&d, 0, sizeof(d));
    CU_ASSERT_EQUAL(suspect_store_decide(s, r, &key, 1, at, &d, NULL),
                    SUSPECT_OK);
    return d;
}

/* The wrapper around the suite's Redis with local as its local store:
 * fail mode local, a breaker that opens on the first failure and probes
 * every 20 ms. */
static suspect_store_t *host_a(test_redis_t *local)
{
    suspect_failover_opts_t fo = {
        SUSPECT_FAIL_LOCAL, NULL, 0, 1, 20, 20, 0, NULL, NULL, 0, NULL};
    suspect_store_t *p = test_redis_store(srv->url, 500, 0, NULL);
    suspect_store_t *l = test_redis_store(local->url, 2000, 0, NULL);
    suspect_store_t *out = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    CU_ASSERT_EQUAL_FATAL(suspect_failover_new(p, l, &fo, &out, NULL),
                          SUSPECT_OK);
    return out;
}

static void test_meter_carried(void)
{
    suspect_rule_t otp = mt_bucket("MeterOtp", 5, 60, 0);
    suspect_rule_t verify = mt_bucket("MeterVerify", 2, 60, 0);
    suspect_store_t *a, *b;
    suspect_failover_stats_t fst;
    suspect_status_t st;
    suspect_decision_t d;
    suspect_key_t phone = test_key("MeterOtp", "33611111111");
    test_redis_t local;
    int64_t t = wall_ms(), deadline;
    int probes = 0;

    verify.block_s = 600;
    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    CU_ASSERT_EQUAL_FATAL(test_redis_start(&local, false, NULL), 0);
    a = host_a(&local);
    b = test_redis_store(srv->url, 2000, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_TRUE(suspect_store_supports(a, SUSPECT_STORE_CAN_METER));
    CU_ASSERT_EQUAL(decide(a, &otp, "warm", t).degraded, 0);

    test_redis_kill9(srv);
    for (int i = 0; i < 3; i++) {
        d = decide(a, &otp, "33611111111", t + 1000 * i);
        CU_ASSERT_TRUE(d.allowed);
        CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);
    }
    for (int i = 0; i < 3; i++) {
        d = decide(a, &verify, "33622222222", t + i);
    }
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.degraded, SUSPECT_DEGRADED_LOCAL);

    CU_ASSERT_EQUAL_FATAL(test_redis_restart(srv), 0);
    /* another identity's decisions until the primary decides again: the
     * journal goes first */
    deadline = mono_ms() + test_scale_ms(5000);
    do {
        usleep(5000);
        d = decide(a, &otp, "probe", t + 3000);
        /* admitted locally: journaled, and carried too */
        probes += d.allowed && d.degraded == SUSPECT_DEGRADED_LOCAL;
    } while (d.degraded != SUSPECT_DEGRADED_NONE && mono_ms() < deadline);
    CU_ASSERT_EQUAL_FATAL(d.degraded, SUSPECT_DEGRADED_NONE);
    suspect_failover_stats(a, &fst);
    CU_ASSERT_EQUAL(fst.carried_hits, 5 + (uint64_t)probes);
    CU_ASSERT_EQUAL(fst.carried_locks, 1);

    /* the three requests at t, t + 1 s, t + 2 s: at t + 3 s, 12 s
     * apart each, 3 tokens are in use */
    CU_ASSERT_EQUAL(suspect_store_status(b, &otp, &phone, t + 3000, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 3);
    CU_ASSERT_EQUAL(st.full_at_ms, t + 36000);
    d = decide(b, &otp, "33611111111", t + 3000);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1);
    d = decide(b, &verify, "33622222222", t + 3000);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t + 2 + 600000);
    suspect_store_free(a);
    suspect_store_free(b);
    test_redis_stop(&local);
}

/* Meters need both stores: the wrapper says what its two stores say. */
static void test_meter_needs_both(void)
{
    suspect_store_t *w = test_redis_failover(srv->url, 500, NULL);
    suspect_rule_t r = mt_bucket("MeterBoth", 5, 60, 0);
    suspect_key_t k = test_key("MeterBoth", "x");
    suspect_store_t *mem = NULL;
    suspect_decision_t d;
    bool both;

    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(NULL, &mem, NULL), SUSPECT_OK);
    both = suspect_store_supports(mem, SUSPECT_STORE_CAN_METER);
    CU_ASSERT_EQUAL(suspect_store_supports(w, SUSPECT_STORE_CAN_METER), both);
    CU_ASSERT_EQUAL(suspect_store_decide(w, &r, &k, 1, MT_NOW, &d, NULL),
                    both ? SUSPECT_OK : SUSPECT_E_INVAL);
    suspect_store_free(mem);
    suspect_store_free(w);
}

int failover_meter_register(CU_pSuite s, test_redis_t *server)
{
    srv = server;
    if (!CU_add_test(s, "meter: a wrapper keeps meters when both stores do",
                     test_meter_needs_both) ||
        !CU_add_test(s, "meter: outage hits taken into the primary's meter",
                     test_meter_carried)) {
        return -1;
    }
    return 0;
}
