/*
 * test_suspectctl_redis.c - the suspectctl suite against a private
 * redis-server (tests/helpers/redisserver.h): status, block, unblock and reset
 * on Redis keys with a prefix, the SCAN-based locked list (also a lock the .NET
 * system wrote), simulate, an unreachable Redis (exit 3), and the ACL users of
 * examples/redis/suspect-acl.conf: enough for deciding, for every suspectctl
 * command on Redis itself, and for the daemon to answer every one on its
 * control socket; and a Redis Cluster (hash-tagged keys, each command on
 * its slot's master, locks listed from every master).
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ctl_test.h"
#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/redisha.h"
#include "helpers/redisserver.h"
#include "suspect_redis.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

/* ---- redis -------------------------------------------------------------- */

/* Room for a Redis URL with its user and password. */
#define URL_MAX 700

/* Writes ctl_dir/redis.xml for url with the key prefix "app1:"; its path,
 * in conf (the caller's). */
static const char *redis_conf(char conf[TEST_PATH_MAX], const char *url)
{
    char store[1200];

    snprintf(conf, TEST_PATH_MAX, "%s/redis.xml", ctl_dir);
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"%u\"/>"
             "<Keys prefix=\"app1:\"/>",
             url, test_scale_ms(5000));
    CU_ASSERT_EQUAL(ctl_write_conf(conf, store), 0);
    return conf;
}

/* Records n hits of Login (3 per 60 s, then locked) for value through the
 * Redis store API; the number allowed. */
static int redis_hits(const char *url, const char *value, int n)
{
    suspect_redis_opts_t o = {url, 1000, 1000, SUSPECT_REDIS_CLOCK_CALLER,
                              "app1:"};
    suspect_keyopts_t ko = {SUSPECT_KEYS_SEED, "app1:", 0, false};
    suspect_identity_t id = test_identity("MemberCode", value);
    suspect_rule_t rule = {"Login", 3, 60, 300, 0, 0, 0, 0, 0, 0, 0};
    suspect_store_t *s = NULL;
    suspect_key_t key;
    suspect_decision_t d;
    suspect_err_t err = {0};
    int allowed = 0;

    CU_ASSERT_EQUAL_FATAL(suspect_key_build(&ko, "Login", &id, &key, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(suspect_redis_new(&o, &s, NULL), SUSPECT_OK);
    for (int i = 0; i < n; i++) {
        if (suspect_store_decide(s, &rule, &key, 1, wall_ms(), &d, &err) !=
            SUSPECT_OK) {
            fprintf(stderr, "redis_hits: %s\n", err.text);
            CU_FAIL("decide failed");
        }
        allowed += d.allowed;
    }
    suspect_store_free(s);
    return allowed;
}

static void test_redis(void)
{
    char cpath[TEST_PATH_MAX];
    test_redis_t rs;
    const char *conf;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&rs, false, NULL), 0);
    conf = redis_conf(cpath, rs.url);
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
    char cpath[TEST_PATH_MAX];
    char url[64];
    ctl_run_t r;

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
    CTL_RUN(&r, "-c", redis_conf(cpath, url), "--json", "status", "Login",
            "42");
    CU_ASSERT_EQUAL(r.status, 3);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.err, "redis store: "));
    ctl_run_free(&r);
}

/* ---- ACL ----------------------------------------------------------------- */

/* Runs ACL SETUSER for every "user NAME RULES..." line of the shipped
 * ACL example, with the password of each user replaced by "pw"; the number
 * of users set. */
static int load_example_acl(test_redis_t *rs)
{
    char src[TEST_PATH_MAX];
    char line[1024];
    const char *argv[64];
    int users = 0;
    FILE *f;

    f = fopen(e2e_src(src, "examples/redis/suspect-acl.conf"), "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        int argc = 1;
        redisReply *r;

        if (strncmp(line, "user ", 5) != 0) {
            continue;
        }
        argv[0] = "ACL";
        for (char *tok = strtok(line, " \n"); tok != NULL && argc < 63;
             tok = strtok(NULL, " \n")) {
            argv[argc++] = tok[0] == '>' ? ">pw" : tok;
        }
        argv[1] = "SETUSER";
        r = redisCommandArgv(rs->ctx, argc, argv, NULL);
        CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
        users += r != NULL && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
    }
    fclose(f);
    return users;
}

/* The url of rs for an ACL user whose password is "pw" (amp: "&amp;" or
 * "&", for XML or not). */
static const char *acl_url(char url[URL_MAX], const test_redis_t *rs,
                           const char *user, const char *amp)
{
    snprintf(url, URL_MAX, "%s?user=%s%spassword=pw", rs->url, user, amp);
    return url;
}

/* Runs every command of cmds with conf; each must succeed (and, with
 * via, answer through that). */
static void run_all(const char *conf, const char *via)
{
    static const char *const cmds[][5] = {
        {"block", "Login", "42", "60", NULL},
        {"status", "Login", "42", NULL},
        {"locked", NULL},
        {"unblock", "Login", "42", NULL},
        {"reset", "Login", "7", NULL},
    };
    const char *args[16];
    ctl_run_t r;

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        size_t n = 0;

        args[n++] = "-c";
        args[n++] = conf;
        args[n++] = "--json";
        for (size_t j = 0; cmds[i][j] != NULL; j++) {
            args[n++] = cmds[i][j];
        }
        args[n] = NULL;
        ctl_run(&r, NULL, args);
        if (r.status != 0) {
            fprintf(stderr, "suspectctl %s: %s\n", cmds[i][0], r.err);
        }
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_TRUE(ctl_has(r.out, via));
        ctl_run_free(&r);
    }
}

static void test_redis_acl(void)
{
    char url[URL_MAX];
    char cpath[TEST_PATH_MAX], listen[TEST_PATH_MAX + 16];
    const char *extra[] = {"--listen", listen, NULL};
    test_redis_t rs;
    test_proc_t daemon;
    const char *conf;

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&rs, false, NULL), 0);
    CU_ASSERT_EQUAL(load_example_acl(&rs), 2);
    /* The daemons' user decides (a lock included)... */
    CU_ASSERT_EQUAL(redis_hits(acl_url(url, &rs, "suspect", "&"), "7", 5), 3);
    CU_ASSERT_EQUAL(test_redis_int(&rs, "EXISTS app1:Login:7:locked"), 1);
    /* ...suspectctl's runs every command on Redis itself... */
    conf = redis_conf(cpath, acl_url(url, &rs, "suspectctl", "&amp;"));
    run_all(conf, "\"via\":\"store\"");
    CU_ASSERT_EQUAL(test_redis_int(&rs, "EXISTS app1:Login:7:locked"), 0);
    /* ...and the daemons' user serves every one on the control socket. */
    CU_ASSERT_EQUAL(redis_hits(acl_url(url, &rs, "suspect", "&"), "7", 5), 3);
    conf = redis_conf(cpath, acl_url(url, &rs, "suspect", "&amp;"));
    snprintf(listen, sizeof(listen), "unix:%s/redis-fcgi.sock", ctl_dir);
    CU_ASSERT_EQUAL_FATAL(
        test_suspect_start(&daemon, ctl_dir, conf, listen + 5, 0, extra), 0);
    run_all(conf, "\"via\":\"daemon\"");
    CU_ASSERT_EQUAL(test_redis_int(&rs, "EXISTS app1:Login:7:locked"), 0);
    test_proc_stop(&daemon, SIGTERM, test_scale_ms(5000));
    test_redis_stop(&rs);
}

/* The Cluster: the hash tag on by default, each command on the master of
 * its key's slot, the lock listing over every master. */
static void test_redis_cluster(void)
{
    char cpath[TEST_PATH_MAX], key[64];
    const char *values[2] = {"42", NULL};
    test_cluster_t c;
    const char *conf;
    ctl_run_t r;
    int owner[2];

    CU_ASSERT_EQUAL_FATAL(test_cluster_start(&c, 3, 0, 5000), 0);
    conf = redis_conf(cpath, c.url);
    /* A second identity whose key lives on another master than 42's. */
    for (int i = 0; values[1] == NULL && i < 1000; i++) {
        static char v[16];
        int s[2];
        snprintf(v, sizeof(v), "%d", i);
        for (int k = 0; k < 2; k++) {
            snprintf(key, sizeof(key), "app1:{Login:%s}",
                     k == 0 ? values[0] : v);
            s[k] = (int)test_redis_int(&c.node[0], "CLUSTER KEYSLOT %s", key);
            owner[k] = test_cluster_slot_owner(&c, 0, s[k]);
        }
        values[1] = owner[0] != owner[1] ? v : NULL;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(values[1]);
    for (int k = 0; k < 2; k++) {
        CTL_RUN(&r, "-c", conf, "block", "Login", values[k], "60");
        CU_ASSERT_EQUAL(r.status, 0);
        snprintf(key, sizeof(key), "key app1:{Login:%s}", values[k]);
        CU_ASSERT_TRUE(ctl_has(r.out, key));
        ctl_run_free(&r);
        CU_ASSERT_EQUAL(test_redis_int(&c.node[owner[k]],
                                       "EXISTS app1:{Login:%s}:locked",
                                       values[k]),
                        1);
    }
    CTL_RUN(&r, "-c", conf, "--json", "locked", "Login");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"count\":2"));
    CU_ASSERT_TRUE(ctl_has(r.out,
                           "\"key\":\"app1:{Login:42}\",\"action\":"
                           "\"Login\",\"type\":null,\"identity\":\"42\""));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", conf, "-k", "app1:{Login:42}", "unblock");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(
        test_redis_int(&c.node[owner[0]], "EXISTS app1:{Login:42}:locked"), 0);
    CTL_RUN(&r, "-c", conf, "status", "Login", values[1]);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "locked until"));
    ctl_run_free(&r);
    test_cluster_stop(&c);
}

/* Adds this file's tests to the suspectctl suite s. */
int ctl_add_redis_tests(CU_pSuite s)
{
    if (!CU_add_test(s, "redis status, locked, unblock, reset", test_redis) ||
        !CU_add_test(s, "redis unreachable exits 3", test_redis_unreachable) ||
        !CU_add_test(s, "redis ACL of the example", test_redis_acl) ||
        !CU_add_test(s, "redis cluster: tagged keys, every master",
                     test_redis_cluster)) {
        return -1;
    }
    return 0;
}
