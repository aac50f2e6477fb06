/*
 * test_suspectctl_unblock.c - the suspectctl suite: the unblock example of
 * the man page, run as it is written there, lets the identity in on its
 * next request: on the memory store of a running suspect-fcgi (through
 * its control socket), on LMDB and on a Redis whose keys the .NET system
 * wrote.
 *
 * The command line is read from man/suspectctl.8 (its EXAMPLES line that
 * begins "suspectctl unblock"), with only "-c FILE" put in front of the
 * command, so the example cannot drift from what the tool does.  The
 * identity is locked out first (SecureForgotAccount: 3 per 30 min, then a
 * 30 min lock), the example runs, and the store then allows the next
 * request, and only that one: the other hits were kept.
 */
#include <CUnit/CUnit.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl_test.h"
#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suspect_lmdb.h"
#include "suspect_redis.h"

#define EX_MAX_ARGS 8

static const suspect_rule_t forgot = {
    "SecureForgotAccount", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0};

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"SecureForgotAccount\" "
    "LimitCount=\"3\" LimitDuration=\"1800\" BlockDuration=\"1800\"/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* The man page's example: its words after "suspectctl", in words (owned by
 * buf, which the caller frees); the count, or -1. */
static int man_example(char **buf, char *words[EX_MAX_ARGS])
{
    char src[TEST_PATH_MAX];
    char *text = test_read_file(e2e_src(src, "man/suspectctl.8"), NULL);
    char *ex = text != NULL ? strstr(text, "\n.SH EXAMPLES\n") : NULL;
    char *line = ex != NULL ? strstr(ex, "\nsuspectctl unblock ") : NULL;
    int n = 0;

    *buf = text;
    if (line == NULL) {
        return -1;
    }
    line += strlen("\nsuspectctl ");
    line[strcspn(line, "\n")] = '\0';
    for (char *w = strtok(line, " "); w != NULL && n < EX_MAX_ARGS;
         w = strtok(NULL, " ")) {
        words[n++] = w;
    }
    return n;
}

/* Runs the example with -c conf; its exit status (output checked). */
static int run_example(const char *conf, const char *store_name)
{
    char *text = NULL, *words[EX_MAX_ARGS];
    const char *args[EX_MAX_ARGS + 3];
    int n = man_example(&text, words), status;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(words[0], "unblock");
    CU_ASSERT_STRING_EQUAL(words[1], forgot.action);
    CU_ASSERT_STRING_EQUAL(words[2], "12345");
    args[0] = "-c";
    args[1] = conf;
    for (int i = 0; i < n; i++) {
        args[2 + i] = words[i];
    }
    args[2 + n] = NULL;
    ctl_run(&r, NULL, args);
    status = r.status;
    if (status != 0) {
        fprintf(stderr, "%s: %s\n", store_name, r.err);
    }
    CU_ASSERT_TRUE(ctl_has(r.out, "unblocked SecureForgotAccount 12345"));
    CU_ASSERT_TRUE(ctl_has(r.out, "lock dropped"));
    CU_ASSERT_TRUE(ctl_has(r.out, "1 dropped (the oldest, so one more fits), "
                                  "2 kept: the next request is allowed"));
    ctl_run_free(&r);
    free(text);
    return status;
}

/* Writes ctl_dir/NAME.xml: one route of SecureForgotAccount by a cookie,
 * counted in store, answered as serve says (a <Cgi> or a <Server>); its
 * limits file beside it. */
static void write_conf_serving(char *conf, size_t size, const char *name,
                               const char *store, const char *serve)
{
    char body[2048], limits[600];

    snprintf(limits, sizeof(limits), "%s/%s-limits.xml", ctl_dir, name);
    CU_ASSERT_EQUAL_FATAL(
        test_write_file(limits, limits_xml, strlen(limits_xml)), 0);
    snprintf(conf, size, "%s/%s.xml", ctl_dir, name);
    snprintf(body, sizeof(body),
             "<Suspect>\n  <Limits path=\"%s\"/>\n  %s\n"
             "  <Control socket=\"%s-control.sock\"/>\n"
             "  %s\n"
             "  <Route action=\"SecureForgotAccount\" path=\"/forgot.cgi\">\n"
             "    <Identity type=\"MemberCode\" from=\"cookie:member\"/>\n"
             "  </Route>\n</Suspect>\n",
             limits, store, name, serve);
    CU_ASSERT_EQUAL_FATAL(test_write_file(conf, body, strlen(body)), 0);
}

static void write_conf(char *conf, size_t size, const char *name,
                       const char *store)
{
    write_conf_serving(conf, size, name, store, "<Cgi root=\"/tmp\"/>");
}

/* The memory store lives in the daemon: the example reaches it through
 * the control socket, and the daemon allows 12345's next request. */
static void test_man_example_memory(void)
{
    char conf[700], sock[700], serve[800];
    test_proc_t p;

    snprintf(sock, sizeof(sock), "%s/man-memory.sock", ctl_dir);
    snprintf(serve, sizeof(serve),
             "<Server listen=\"unix:%s\" mode=\"authorizer\"/>", sock);
    write_conf_serving(conf, sizeof(conf), "man-memory",
                       "<Store type=\"memory\"/>", serve);
    CU_ASSERT_EQUAL_FATAL(test_suspect_start(&p, ctl_dir, conf, sock, 0, NULL),
                          0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(ctl_authorize(sock, "/forgot.cgi", "12345"), 200);
    }
    CU_ASSERT_EQUAL(ctl_authorize(sock, "/forgot.cgi", "12345"), 429);

    CU_ASSERT_EQUAL(run_example(conf, "memory"), 0);

    CU_ASSERT_EQUAL(ctl_authorize(sock, "/forgot.cgi", "12345"), 200);
    CU_ASSERT_EQUAL(ctl_authorize(sock, "/forgot.cgi", "12345"), 429);
    test_proc_stop(&p, SIGTERM, test_scale_ms(5000));
}

/* One request of member 12345 decided by s now: whether it was allowed. */
static bool decide_12345(suspect_store_t *s, bool *locked)
{
    suspect_key_t key = test_key(forgot.action, "12345");
    suspect_decision_t d;

    CU_ASSERT_EQUAL_FATAL(
        suspect_store_decide(s, &forgot, &key, 1, wall_ms(), &d, NULL),
        SUSPECT_OK);
    *locked = d.locked;
    return d.allowed;
}

static void test_man_example_lmdb(void)
{
    char conf[700], store[800], db[700];
    suspect_lmdb_opts_t o = {db, 0, 0, 0, 0};
    suspect_store_t *s = NULL;
    bool locked;

    snprintf(db, sizeof(db), "%s/man.mdb", ctl_dir);
    snprintf(store, sizeof(store), "<Store type=\"lmdb\" path=\"%s\"/>", db);
    write_conf(conf, sizeof(conf), "man-lmdb", store);
    CU_ASSERT_EQUAL_FATAL(suspect_lmdb_new(&o, &s, NULL), SUSPECT_OK);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(decide_12345(s, &locked));
    }
    CU_ASSERT_FALSE(decide_12345(s, &locked));
    CU_ASSERT_TRUE(locked);
    suspect_store_free(s);

    CU_ASSERT_EQUAL(run_example(conf, "lmdb"), 0);

    CU_ASSERT_EQUAL_FATAL(suspect_lmdb_new(&o, &s, NULL), SUSPECT_OK);
    CU_ASSERT_TRUE(decide_12345(s, &locked));
    CU_ASSERT_FALSE(decide_12345(s, &locked));
    CU_ASSERT_TRUE(locked);
    suspect_store_free(s);
}

/* The .NET system's keys: GUID members scored in ms, and a lock whose
 * value is the bare identity with a TTL in seconds. */
static void test_man_example_redis_dotnet(void)
{
    static const char *const guids[] = {"5f0e2b1c-0d4e-4a8b-9c3d-2e1f0a9b8c7d",
                                        "6a1f3c2d-1e5f-4b9c-8d4e-3f2a1b0c9d8e",
                                        "7b2a4d3e-2f6a-4cad-9e5f-4a3b2c1d0e9f"};
    char conf[700], store[1200];
    int64_t now = wall_ms();
    test_redis_t rs;
    suspect_redis_opts_t o;
    suspect_store_t *s = NULL;
    bool locked;

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&rs, false, NULL), 0);
    for (int i = 0; i < 3; i++) {
        freeReplyObject(test_redis_cmd(&rs,
                                       "ZADD SecureForgotAccount:12345 %lld %s",
                                       (long long)(now - 60000 + i), guids[i]));
    }
    freeReplyObject(
        test_redis_cmd(&rs, "EXPIRE SecureForgotAccount:12345 1800"));
    freeReplyObject(test_redis_cmd(
        &rs, "SET SecureForgotAccount:12345:locked 12345 EX 1800"));
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"%u\"/>", rs.url,
             test_scale_ms(5000));
    write_conf(conf, sizeof(conf), "man-redis", store);

    CU_ASSERT_EQUAL(run_example(conf, "redis"), 0);

    /* What .NET's IsOverRateLimit reads: no lock, room for one hit. */
    CU_ASSERT_EQUAL(
        test_redis_int(&rs, "EXISTS SecureForgotAccount:12345:locked"), 0);
    CU_ASSERT_EQUAL(test_redis_int(&rs,
                                   "ZCOUNT SecureForgotAccount:12345 %lld "
                                   "+inf",
                                   (long long)(now - 1800000)),
                    2);
    /* The oldest went, the others stayed. */
    CU_ASSERT_EQUAL(
        test_redis_int(&rs, "ZRANK SecureForgotAccount:12345 %s", guids[0]),
        LLONG_MIN);
    CU_ASSERT_EQUAL(
        test_redis_int(&rs, "ZRANK SecureForgotAccount:12345 %s", guids[1]), 0);
    memset(&o, 0, sizeof(o));
    o.url = rs.url;
    CU_ASSERT_EQUAL_FATAL(suspect_redis_new(&o, &s, NULL), SUSPECT_OK);
    CU_ASSERT_TRUE(decide_12345(s, &locked));
    CU_ASSERT_FALSE(decide_12345(s, &locked));
    CU_ASSERT_TRUE(locked);
    suspect_store_free(s);
    test_redis_stop(&rs);
}

/* Adds this file's tests to the suspectctl suite s. */
int ctl_add_unblock_tests(CU_pSuite s)
{
    if (!CU_add_test(s, "man page unblock example, memory (daemon)",
                     test_man_example_memory) ||
        !CU_add_test(s, "man page unblock example, lmdb",
                     test_man_example_lmdb) ||
        !CU_add_test(s, "man page unblock example, redis .NET keys",
                     test_man_example_redis_dotnet)) {
        return -1;
    }
    return 0;
}
