/*
 * test_suspectctl_redis.c - the suspectctl suite against a private
 * redis-server (tests/redisserver.h): status, block, unblock and reset on
 * Redis keys with a prefix, the SCAN-based locked list (also a lock the
 * .NET system wrote), simulate, and an unreachable Redis (exit 3).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "ctl_test.h"
#include "redisserver.h"
#include "suspect_redis.h"
#include "util.h"

/* ---- redis -------------------------------------------------------------- */

/* Writes ctl_dir/redis.xml for url with the key prefix "app1:". */
static const char *redis_conf(const char *url)
{
    static char conf[700];
    char store[1200];

    snprintf(conf, sizeof(conf), "%s/redis.xml", ctl_dir);
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\"/><Keys prefix=\"app1:\"/>", url);
    CU_ASSERT_EQUAL(ctl_write_conf(conf, store), 0);
    return conf;
}

/* Records n hits of Login for value through the Redis store API. */
static void redis_hits(const char *url, const char *value, int n)
{
    suspect_redis_opts_t o = {url, 1000, 1000, SUSPECT_REDIS_CLOCK_CALLER,
                              "app1:"};
    suspect_keyopts_t ko = {SUSPECT_KEYS_SEED, "app1:", 0};
    suspect_identity_t id = test_identity("MemberCode", value);
    suspect_rule_t rule = {"Login", 3, 60, 300};
    suspect_store_t *s = NULL;
    suspect_key_t key;
    suspect_decision_t d;

    CU_ASSERT_EQUAL_FATAL(suspect_key_build(&ko, "Login", &id, &key, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(suspect_redis_new(&o, &s, NULL), SUSPECT_OK);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(s, &rule, &key, 1, ctl_now_ms(), &d, NULL),
            SUSPECT_OK);
    }
    suspect_store_free(s);
}

static void test_redis(void)
{
    test_redis_t rs;
    const char *conf;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&rs, false, NULL), 0);
    conf = redis_conf(rs.url);
    CTL_RUN(&r, "-c", conf, "block", "Login", "42", "60");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "key app1:Login:42"));
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(test_redis_int(&rs, "EXISTS app1:Login:42:locked"), 1);
    CTL_RUN(&r, "-c", conf, "--json", "status", "Login", "42");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"store\":\"redis\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"locked\":true"));
    ctl_run_free(&r);
    /* A lock the .NET system wrote: its value is the bare identity. */
    freeReplyObject(
        test_redis_cmd(&rs, "SET app1:Login:dotnet:locked dotnet EX 100"));
    CTL_RUN(&r, "-c", conf, "--json", "locked", "Login");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"count\":2"));
    CU_ASSERT_TRUE(ctl_has(r.out,
                           "\"key\":\"app1:Login:42\",\"action\":"
                           "\"Login\",\"type\":null,\"identity\":\"42\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"identity\":\"dotnet\""));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", conf, "locked", "BankAccountUpdate");
    CU_ASSERT_TRUE(ctl_has(r.out, "no identity is locked now (redis store)"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", conf, "unblock", "Login", "42");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(test_redis_int(&rs, "EXISTS app1:Login:42:locked"), 0);
    redis_hits(rs.url, "9", 2);
    CTL_RUN(&r, "-c", conf, "status", "Login", "9");
    CU_ASSERT_TRUE(ctl_has(r.out, "2 in the window, 1 remaining"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", conf, "reset", "Login", "9");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(test_redis_int(&rs, "EXISTS app1:Login:9"), 0);
    CTL_RUN(&r, "-c", conf, "simulate", "REQUEST_URI=/login.cgi", "--body",
            "member=9");
    CU_ASSERT_TRUE(ctl_has(r.out, "key app1:Login:9"));
    CU_ASSERT_TRUE(ctl_has(r.out, "decision  allow"));
    ctl_run_free(&r);
    test_redis_stop(&rs);
}

static void test_redis_unreachable(void)
{
    char url[64];
    ctl_run_t r;

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
    CTL_RUN(&r, "-c", redis_conf(url), "--json", "status", "Login", "42");
    CU_ASSERT_EQUAL(r.status, 3);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.err, "redis store: "));
    ctl_run_free(&r);
}

/* Adds this file's tests to the suspectctl suite s. */
int ctl_add_redis_tests(CU_pSuite s)
{
    if (!CU_add_test(s, "redis status, locked, unblock, reset", test_redis) ||
        !CU_add_test(s, "redis unreachable exits 3", test_redis_unreachable)) {
        return -1;
    }
    return 0;
}
