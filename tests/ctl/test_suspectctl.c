/*
 * test_suspectctl.c - the suspectctl suite: the built binary, run for real
 * ($SUSPECT_BUILDDIR/suspectctl, else ./suspectctl) against suspect.xml and
 * limits files in a temp dir, with an LMDB store and with a private
 * redis-server.  Hits are made through the store API, as the daemon makes
 * them, and read back, changed and listed through the tool; each run's
 * exit status, stdout and stderr are checked, and every --json output is
 * parsed by a small JSON validator.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ctl_test.h"
#include "suites.h"
#include "suspect_lmdb.h"
#include "helpers/util.h"

static char path_lmdb[600], path_mem[600], path_bad[600], path_db[600];

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"3\" "
    "LimitDuration=\"60\" BlockDuration=\"300\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"BankAccountUpdate\" "
    "LimitCount=\"2\" LimitDuration=\"120\"/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* A route whose action is not in the limits file. */
static const char bad_xml[] =
    "<Suspect><Limits path=\"limits.xml\"/><Cgi root=\"/tmp\"/>"
    "<Route action=\"Logn\" path=\"/x\"><Identity type=\"A\" "
    "from=\"client-ip\"/></Route></Suspect>\n";

static void test_json_validator(void)
{
    CU_ASSERT_TRUE(
        ctl_json_object("{\"a\":[1,-2,true,null,{\"b\":\"\\u00e9\"}]}\n"));
    CU_ASSERT_FALSE(ctl_json_value("{\"a\":1,}") != NULL);
    CU_ASSERT_FALSE(ctl_json_value("{\"a\":\"\x01\"}") != NULL);
    CU_ASSERT_FALSE(ctl_json_value("[1 2]") != NULL);
    CU_ASSERT_FALSE(ctl_json_value("{\"a\":\"\\x\"}") != NULL);
}

/* ---- fixtures ----------------------------------------------------------- */

/* Records n allowed hits of action for one seed-format key, as the daemon
 * does (the store is closed again before the tool runs). */
static void lmdb_hits(const char *action, uint32_t limit, const char *value,
                      int n)
{
    suspect_lmdb_opts_t o = {path_db, 0, 0, 0, 0};
    suspect_rule_t rule = {action, limit, 120, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key(action, value);
    suspect_store_t *s = NULL;
    suspect_decision_t d;

    CU_ASSERT_EQUAL_FATAL(suspect_lmdb_new(&o, &s, NULL), SUSPECT_OK);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(s, &rule, &key, 1, wall_ms(), &d, NULL),
            SUSPECT_OK);
        CU_ASSERT_TRUE(d.allowed);
    }
    suspect_store_free(s);
}

static int suite_init(void)
{
    char path[600], store[800];
    suspect_lmdb_opts_t o = {path_db, 0, 0, 0, 0};
    suspect_store_t *s = NULL;

    ctl_dir = test_mkdtemp();
    if (ctl_dir == NULL) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/limits.xml", ctl_dir);
    snprintf(path_lmdb, sizeof(path_lmdb), "%s/lmdb.xml", ctl_dir);
    snprintf(path_mem, sizeof(path_mem), "%s/mem.xml", ctl_dir);
    snprintf(path_bad, sizeof(path_bad), "%s/bad.xml", ctl_dir);
    snprintf(path_db, sizeof(path_db), "%s/counters.mdb", ctl_dir);
    snprintf(store, sizeof(store), "<Store type=\"lmdb\" path=\"%s\"/>",
             path_db);
    /* The daemon creates the database; here the store API does. */
    if (test_write_file(path, limits_xml, strlen(limits_xml)) != 0 ||
        ctl_write_conf(path_lmdb, store) != 0 ||
        ctl_write_conf(path_mem, "") != 0 ||
        suspect_lmdb_new(&o, &s, NULL) != SUSPECT_OK) {
        return -1;
    }
    suspect_store_free(s);
    return test_write_file(path_bad, bad_xml, strlen(bad_xml));
}

static int suite_clean(void)
{
    test_rmtree(ctl_dir);
    free(ctl_dir);
    return 0;
}
/* ---- check and usage ---------------------------------------------------- */

static void test_check(void)
{
    char missing[700];
    ctl_run_t r;

    CTL_RUN(&r, "-c", path_lmdb, "check");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "lmdb.xml: ok"));
    CU_ASSERT_TRUE(ctl_has(r.out, "-> BankAccountUpdate: 2 per 120 s"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_bad, "check");
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_TRUE(ctl_has(r.err, "route action 'Logn' is not in limits.xml"));
    ctl_run_free(&r);
    CTL_RUN(&r, "--json", "-c", path_bad, "check");
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"valid\":false"));
    CU_ASSERT_TRUE(ctl_has(r.out, "is not in limits.xml (did you mean "
                                  "'Login'?)\"]"));
    ctl_run_free(&r);
    snprintf(missing, sizeof(missing), "%s/none.xml", ctl_dir);
    CTL_RUN(&r, "-c", missing, "--json", "check");
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    ctl_run_free(&r);
    /* Every other command loads the files first. */
    CTL_RUN(&r, "-c", missing, "status", "Login", "42");
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_TRUE(ctl_has(r.err, "none.xml"));
    ctl_run_free(&r);
    /* ...after their operands: a bad command line is 2 whatever the files. */
    CTL_RUN(&r, "-c", missing, "status", "Login");
    CU_ASSERT_EQUAL(r.status, 2);
    ctl_run_free(&r);
}

static void test_usage(void)
{
    static const char *const cases[][8] = {
        {NULL},
        {"frob", NULL},
        {"--nope", "check", NULL},
        {"check", "extra", NULL},
        {"status", "Login", NULL},
        {"status", "Login", "42", "MemberCode", "more", NULL},
        {"block", "Login", "42", "abc", NULL},
        {"block", "Login", "42", "0", NULL},
        {"block", "Login", "42", "99999999999", NULL},
        {"--body", "x=1", "status", "Login", "42", NULL},
        {"simulate", "notavar", NULL},
        {"simulate", "A=1", "A=2", NULL},
        {"-k", "nocolon", "unblock", NULL},
        {"-k", "Login:42", "unblock", "Login", NULL},
        {"locked", "Login", "extra", NULL},
        {"status", "Bad Name", "42", NULL},
    };
    ctl_run_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[12] = {"-c", path_lmdb};
        size_t n = 2;

        for (size_t k = 0; cases[i][k] != NULL; k++) {
            args[n++] = cases[i][k];
        }
        ctl_run(&r, NULL, args);
        if (r.status != 2) {
            fprintf(stderr, "\n  case %zu: exit %d\n", i, r.status);
        }
        CU_ASSERT_EQUAL(r.status, 2);
        CU_ASSERT_TRUE(r.err != NULL && r.err[0] != '\0');
        ctl_run_free(&r);
    }
    CTL_RUN(&r, "-c", path_lmdb, "--json", "block", "Login", "42", "x");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"exit\":2"));
    ctl_run_free(&r);
    CTL_RUN(&r, "--help");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "exit: 0 ok"));
    ctl_run_free(&r);
}

/* ---- memory store, not found -------------------------------------------- */

static void test_memory_store(void)
{
    static const char *const cmds[][5] = {
        {"status", "Login", "42", NULL},
        {"unblock", "Login", "42", NULL},
        {"reset", "Login", "42", NULL},
        {"block", "Login", "42", "60", NULL},
        {"locked", NULL},
    };
    ctl_run_t r;

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        const char *args[8] = {"-c", path_mem};

        for (size_t k = 0; cmds[i][k] != NULL; k++) {
            args[2 + k] = cmds[i][k];
        }
        ctl_run(&r, NULL, args);
        CU_ASSERT_EQUAL(r.status, 3);
        CU_ASSERT_TRUE(ctl_has(r.err, "no suspect-fcgi answers at "));
        CU_ASSERT_TRUE(
            ctl_has(r.err, "the memory store lives inside suspect-fcgi"));
        ctl_run_free(&r);
    }
    /* simulate still resolves the request; the counts are unknown. */
    CTL_RUN(&r, "-c", path_mem, "--json", "simulate", "REQUEST_METHOD=POST",
            "REQUEST_URI=/app.cgi?op=bank", "HTTP_COOKIE=member=42");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"key\":\"BankAccountUpdate:42\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"verdict\":\"unknown\""));
    ctl_run_free(&r);
}

static void test_not_found(void)
{
    ctl_run_t r;

    CTL_RUN(&r, "-c", path_lmdb, "status", "NoSuchAction", "42");
    CU_ASSERT_EQUAL(r.status, 4);
    CU_ASSERT_TRUE(ctl_has(r.err, "action NoSuchAction is not in"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "locked", "NoSuchAction");
    CU_ASSERT_EQUAL(r.status, 4);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "status", "Login", "42", "SessionId");
    CU_ASSERT_EQUAL(r.status, 4);
    CU_ASSERT_TRUE(ctl_has(r.err, "counts identity type SessionId"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "-k", "NoSuchAction:42", "status");
    CU_ASSERT_EQUAL(r.status, 4);
    ctl_run_free(&r);
}

/* ---- lmdb --------------------------------------------------------------- */

static void test_lmdb_block_unblock(void)
{
    ctl_run_t r;

    CTL_RUN(&r, "-c", path_lmdb, "block", "Login", "42", "60");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "blocked Login 42 (type MemberCode, key "
                                  "Login:42)"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "status", "Login", "42");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "locked until"));
    CU_ASSERT_TRUE(ctl_has(r.out, " s left)"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "status", "Login", "42");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"locked\":true"));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"type\":\"MemberCode\""));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "locked");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "1 identity locked now (lmdb store)"));
    CU_ASSERT_TRUE(ctl_has(r.out, "Login:42"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "locked", "Login");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"count\":1"));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"key\":\"Login:42\",\"action\":\"Login\","
                                  "\"type\":null,\"identity\":\"42\""));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "locked", "BankAccountUpdate");
    CU_ASSERT_TRUE(ctl_has(r.out, "no identity is locked now"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "unblock", "Login", "42");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "unblock"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "status", "Login", "42");
    CU_ASSERT_TRUE(ctl_has(r.out, "locked        no"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "locked");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"count\":0,\"locked\":[]"));
    ctl_run_free(&r);
}

static void test_lmdb_reset(void)
{
    ctl_run_t r;

    lmdb_hits("Login", 3, "7", 2);
    CTL_RUN(&r, "-c", path_lmdb, "status", "Login", "7");
    CU_ASSERT_TRUE(ctl_has(r.out, "2 in the window, 1 remaining"));
    ctl_run_free(&r);
    /* unblock drops only the hits that would refuse the next request
     * (none here); reset drops them all. */
    CTL_RUN(&r, "-c", path_lmdb, "unblock", "Login", "7");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "status", "Login", "7");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"in_window\":2,\"remaining\":1"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "reset", "Login", "7");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "status", "Login", "7");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"in_window\":0,\"remaining\":3"));
    ctl_run_free(&r);
}

/* -k names the key as `locked` lists it, also when the value was escaped. */
static void test_lmdb_key(void)
{
    ctl_run_t r;

    CTL_RUN(&r, "-c", path_lmdb, "block", "Login", "a:b c", "30");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "key Login:a%3Ab%20c"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "locked");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"identity\":\"a:b c\""));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "-k", "Login:a%3Ab%20c:locked", "status");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "locked until"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "-k", "Login:a%3Ab%20c", "unblock");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "status", "Login", "a:b c");
    CU_ASSERT_TRUE(ctl_has(r.out, "locked        no"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "-k", "Login:x", "block", "5");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "reset", "Login", "x");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
}

static void test_lmdb_simulate(void)
{
    static const char uri[] = "REQUEST_URI=/app.cgi?op=bank";
    ctl_run_t r;

    CTL_RUN(&r, "-c", path_lmdb, "simulate", "REQUEST_METHOD=POST", uri,
            "HTTP_COOKIE=member=55", "REMOTE_ADDR=192.0.2.1");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "-> BankAccountUpdate (2 per 120 s)"));
    CU_ASSERT_TRUE(ctl_has(r.out, "MemberCode, key BankAccountUpdate:55"));
    CU_ASSERT_TRUE(ctl_has(r.out, "ClientIp, key BankAccountUpdate:192.0.2.1"));
    CU_ASSERT_TRUE(
        ctl_has(r.out, "decision  allow (allowed), 1 remaining after it"));
    ctl_run_free(&r);
    lmdb_hits("BankAccountUpdate", 2, "55", 2);
    CTL_RUN(&r, "-c", path_lmdb, "simulate", "REQUEST_METHOD=POST", uri,
            "HTTP_COOKIE=member=55", "REMOTE_ADDR=192.0.2.1");
    CU_ASSERT_TRUE(ctl_has(r.out, "2 in the window, 0 remaining, not locked: "
                                  "would deny"));
    CU_ASSERT_TRUE(ctl_has(r.out, "decision  deny 429 (over the limit)"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "simulate", "REQUEST_METHOD=POST",
            uri, "HTTP_COOKIE=member=55", "REMOTE_ADDR=192.0.2.1");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"verdict\":\"deny\",\"status\":429"));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"would_deny\":true"));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"counted\":false"));
    ctl_run_free(&r);
    /* Nothing was counted: still the two hits made above. */
    CTL_RUN(&r, "-c", path_lmdb, "--json", "status", "BankAccountUpdate", "55");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"in_window\":2"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "--json", "status", "BankAccountUpdate",
            "192.0.2.1", "ClientIp");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"in_window\":0"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "simulate", "REQUEST_URI=/other");
    CU_ASSERT_TRUE(ctl_has(r.out, "route     none"));
    CU_ASSERT_TRUE(ctl_has(r.out, "decision  pass (no route)"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "simulate");
    CU_ASSERT_TRUE(ctl_has(r.out, "decision  reject 500"));
    ctl_run_free(&r);
}

static void test_lmdb_simulate_body(void)
{
    const char *const args[] = {
        "-c",       path_lmdb,      "--json",
        "simulate", "--body-stdin", "REQUEST_URI=/login.cgi",
        NULL};
    ctl_run_t r;

    ctl_run(&r, "x=1&member=a%22b", args);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"method\":\"POST\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"key\":\"Login:a\\\"b\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"verdict\":\"allow\""));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", path_lmdb, "simulate", "--body", "member=9",
            "REQUEST_URI=/login.cgi");
    CU_ASSERT_TRUE(ctl_has(r.out, "key Login:9"));
    ctl_run_free(&r);
    /* No body: the form identity is missing and skipped. */
    CTL_RUN(&r, "-c", path_lmdb, "simulate", "REQUEST_METHOD=POST",
            "REQUEST_URI=/login.cgi");
    CU_ASSERT_TRUE(ctl_has(r.out, "decision  pass (no identity)"));
    ctl_run_free(&r);
}

static void test_lmdb_missing(void)
{
    char conf[700], store[800];
    ctl_run_t r;

    snprintf(conf, sizeof(conf), "%s/nodb.xml", ctl_dir);
    snprintf(store, sizeof(store),
             "<Store type=\"lmdb\" path=\"%s/none.mdb\"/>", ctl_dir);
    CU_ASSERT_EQUAL_FATAL(ctl_write_conf(conf, store), 0);
    CTL_RUN(&r, "-c", conf, "status", "Login", "42");
    CU_ASSERT_EQUAL(r.status, 3);
    CU_ASSERT_TRUE(ctl_has(r.err, "no LMDB database at"));
    ctl_run_free(&r);
    snprintf(store, sizeof(store), "%s/none.mdb", ctl_dir);
    CU_ASSERT_NOT_EQUAL(access(store, F_OK), 0);
}

int register_suspectctl_suite(void)
{
    CU_pSuite s = CU_add_suite("suspectctl", suite_init, suite_clean);

    if (s == NULL ||
        !CU_add_test(s, "minimal JSON validator", test_json_validator) ||
        !CU_add_test(s, "check ok and failing", test_check) ||
        !CU_add_test(s, "usage errors exit 2", test_usage) ||
        !CU_add_test(s, "memory store exits 3", test_memory_store) ||
        !CU_add_test(s, "unknown action or type exits 4", test_not_found) ||
        !CU_add_test(s, "lmdb block, status, locked, unblock",
                     test_lmdb_block_unblock) ||
        !CU_add_test(s, "lmdb reset drops hits", test_lmdb_reset) ||
        !CU_add_test(s, "lmdb identities by key", test_lmdb_key) ||
        !CU_add_test(s, "lmdb simulate", test_lmdb_simulate) ||
        !CU_add_test(s, "lmdb simulate with a body", test_lmdb_simulate_body) ||
        !CU_add_test(s, "lmdb database missing", test_lmdb_missing) ||
        ctl_add_redis_tests(s) != 0 || ctl_add_unblock_tests(s) != 0 ||
        ctl_add_group_tests(s) != 0 || ctl_add_daemon_tests(s) != 0) {
        return -1;
    }
    return 0;
}
