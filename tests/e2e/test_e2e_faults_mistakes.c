/*
 * test_e2e_faults_mistakes.c - suite "faults": configuration mistakes that
 * would turn protection off.
 *
 * Each mistake is one an operator makes in a live edit: a one-letter typo
 * in an attribute of the limits file ("BlockDuraton": the lock-out would
 * be gone), a route whose action the limits file lacks (a typo on either
 * side, or a line deleted: its requests would pass uncounted), a
 * misspelled element of suspect.xml ("<Respose>").  suspect-fcgi must not
 * start on any of them (exit 1, the file, the line and "did you mean"),
 * and a running daemon that meets one on reload keeps the running pair of
 * files, says so once, and goes on counting and locking with it: the
 * resend lock-out holds and the promotion lookups stay counted.  Renaming
 * an action, which takes an edit of both files, applies once both are
 * done, in either order.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "test_e2e_faults.h"

/* examples/limits.xml with the replacements pairs {from, to, ..., NULL}
 * written as the limits file at path (NULL: the running stack's). */
static int edit_limits(const char *path, const char *const pairs[])
{
    char src[TEST_PATH_MAX];
    char *text = test_read_file(e2e_src(src, "examples/limits.xml"), NULL);
    char *edited = text != NULL ? test_subst(text, pairs) : NULL;
    int rc = -1;

    if (edited != NULL && strcmp(edited, text) == 0) {
        fprintf(stderr, "mistakes: the edit changed nothing\n");
    } else if (edited != NULL) {
        rc = path == NULL ? e2e_write_limits(edited)
                          : test_write_file(path, edited, strlen(edited));
    }
    free(text);
    free(edited);
    return rc;
}

/* examples/suspect-auth-request.xml with the standard replacements, the
 * reload interval of 0.1 s and pairs, written atomically over the
 * running stack's suspect.xml. */
static int edit_conf(const char *const pairs[])
{
    const char *all[16] = {"reload=\"1\"", "reload=\"0.1\""};
    size_t n = 2;
    char tmp[TEST_PATH_MAX];

    for (size_t i = 0; pairs != NULL && pairs[i] != NULL && n < 15; i++) {
        all[n++] = pairs[i];
    }
    all[n] = NULL;
    if (e2e_write_example("suspect-auth-request.xml", "suspect.xml.new", all) !=
        0) {
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "%s.new", e2e.conf);
    return rename(tmp, e2e.conf);
}

/* Runs suspect-fcgi (not --check) on DIR/suspect.xml as written with
 * conf_pairs and the limits file with limits_pairs: its exit status (-1:
 * still running after 5 s, killed) and, in out, what it logged. */
static int start_fails(const char *const conf_pairs[],
                       const char *const limits_pairs[], char *out, size_t size)
{
    char log[TEST_PATH_MAX], sock[TEST_PATH_MAX], src[TEST_PATH_MAX];
    char bin[TEST_PATH_MAX];
    const char *argv[] = {test_suspect_fcgi_path(bin),
                          "-c",
                          e2e.conf,
                          "-f",
                          "--listen",
                          sock,
                          NULL};
    test_proc_t p;
    char *text;
    int status = -1;

    out[0] = '\0';
    snprintf(log, sizeof(log), "%s/start.log", e2e.dir);
    snprintf(sock, sizeof(sock), "unix:%s/start.sock", e2e.dir);
    unlink(log);
    if (e2e_write_example("suspect-auth-request.xml", "suspect.xml",
                          conf_pairs) != 0 ||
        (limits_pairs != NULL
             ? edit_limits(e2e.limits, limits_pairs)
             : test_copy_file(e2e_src(src, "examples/limits.xml"), e2e.limits,
                              0644)) != 0 ||
        test_proc_start(&p, argv, NULL, log) != 0) {
        return -2;
    }
    if (test_proc_wait(&p, test_scale_ms(5000)) == 0 && WIFEXITED(p.status)) {
        status = WEXITSTATUS(p.status);
    } else {
        test_proc_stop(&p, SIGKILL, 1000);
    }
    text = test_read_file(log, NULL);
    snprintf(out, size, "%s", text != NULL ? text : "");
    free(text);
    return status;
}

/* Whether text holds want; says what it holds when not. */
static bool says(const char *text, const char *want)
{
    if (strstr(text, want) != NULL) {
        return true;
    }
    fprintf(stderr, "\n  want: %s\n  log:  %s\n", want, text);
    return false;
}

/* No start on any of the mistakes; a start on the example as it is. */
static void test_no_start(void)
{
    static const char *const block_typo[] = {
        "Action=\"LoginVerificationResend\" LimitCount=\"3\" "
        "LimitDuration=\"600\" BlockDuration",
        "Action=\"LoginVerificationResend\" LimitCount=\"3\" "
        "LimitDuration=\"600\" BlockDuraton",
        NULL};
    static const char *const limits_typo[] = {"Action=\"PromoQuery\"",
                                              "Action=\"PromoQeury\"", NULL};
    static const char *const route_typo[] = {"action=\"PromoQuery\"",
                                             "action=\"PromoQuerry\"", NULL};
    static const char *const elem_typo[] = {
        "<Store type=\"memory\"/>",
        "<Store type=\"memory\"/>\n  <Respose format=\"json\"/>", NULL};
    char out[4096];
    char conf[TEST_PATH_MAX + 8];

    snprintf(conf, sizeof(conf), "%s:", e2e.conf);
    CU_ASSERT_EQUAL(start_fails(NULL, block_typo, out, sizeof(out)), 1);
    CU_ASSERT(says(out, "limits.xml:15: SuspectUsageSettingEntity: unknown "
                        "attribute 'BlockDuraton' (did you mean "
                        "'BlockDuration'?)"));
    CU_ASSERT_EQUAL(start_fails(NULL, limits_typo, out, sizeof(out)), 1);
    CU_ASSERT(says(out, conf));
    CU_ASSERT(says(out, "route action 'PromoQuery' is not in limits.xml "
                        "(did you mean 'PromoQeury'?)"));
    CU_ASSERT_EQUAL(start_fails(route_typo, NULL, out, sizeof(out)), 1);
    CU_ASSERT(says(out, "route action 'PromoQuerry' is not in limits.xml "
                        "(did you mean 'PromoQuery'?)"));
    CU_ASSERT_EQUAL(start_fails(elem_typo, NULL, out, sizeof(out)), 1);
    CU_ASSERT(says(out, "Suspect: unknown element <Respose> (did you mean "
                        "<Response>?)"));
    /* The example as shipped starts (and is killed after 5 s). */
    CU_ASSERT_EQUAL(start_fails(NULL, NULL, out, sizeof(out)), -1);
}

/* One resend for account: the status. */
static int resend(const char *account)
{
    return flt_resend(account, NULL);
}

/* A running daemon meets each mistake on reload and keeps its files. */
static void test_reload_keeps(void)
{
    const char *edits[] = {"reload=\"1\"", "reload=\"0.1\"", NULL};
    static const char *const block_typo[] = {
        "LimitDuration=\"600\" BlockDuration",
        "LimitDuration=\"600\" BlockDuraton", NULL};
    static const char *const promo_gone[] = {
        "<SuspectUsageSettingEntity Action=\"PromoQuery\" LimitCount=\"10\" "
        "LimitDuration=\"60\" />",
        "", NULL};
    static const char *const route_typo[] = {"action=\"PromoQuery\"",
                                             "action=\"PromoQuerry\"", NULL};
    static const char *const elem_typo[] = {
        "<Store type=\"memory\"/>",
        "<Store type=\"memory\"/>\n  <Respose format=\"json\"/>", NULL};
    int kept_limits = 0, kept_conf = 0, promos = 0;

    CU_ASSERT_EQUAL_FATAL(flt_start_auth(edits), 0);
    /* the lock-out lost to a typo: refused, the lock-out stays */
    CU_ASSERT_EQUAL_FATAL(edit_limits(NULL, block_typo), 0);
    CU_ASSERT_TRUE(flt_log_wait("keeping the running limits", ++kept_limits,
                                test_scale_ms(3000)));
    CU_ASSERT_TRUE(flt_log_wait("(did you mean 'BlockDuration'?)", 1, 100));
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(resend("acc-1"), 200);
    }
    CU_ASSERT_EQUAL(resend("acc-1"), 429);
    /* an action a route names deleted: refused, the route still counts */
    CU_ASSERT_EQUAL_FATAL(edit_limits(NULL, promo_gone), 0);
    CU_ASSERT_TRUE(flt_log_wait("keeping the running limits", ++kept_limits,
                                test_scale_ms(3000)));
    CU_ASSERT_TRUE(flt_log_wait("route action 'PromoQuery' is not in "
                                "limits.xml",
                                1, 100));
    for (; promos < 5; promos++) {
        CU_ASSERT_EQUAL(flt_promo("m1", NULL), 200);
    }
    /* a route's action misspelled: refused */
    CU_ASSERT_EQUAL_FATAL(edit_conf(route_typo), 0);
    CU_ASSERT_TRUE(flt_log_wait("keeping the running configuration",
                                ++kept_conf, test_scale_ms(3000)));
    CU_ASSERT_TRUE(flt_log_wait("(did you mean 'PromoQuery'?)", 1, 100));
    for (; promos < 10; promos++) {
        CU_ASSERT_EQUAL(flt_promo("m1", NULL), 200);
    }
    /* an element misspelled: refused */
    CU_ASSERT_EQUAL_FATAL(edit_conf(elem_typo), 0);
    CU_ASSERT_TRUE(flt_log_wait("keeping the running configuration",
                                ++kept_conf, test_scale_ms(3000)));
    CU_ASSERT_TRUE(flt_log_wait("(did you mean <Response>?)", 1, 100));
    /* all the while the old pair counted: the 11th lookup is denied, and
     * the account stays locked */
    CU_ASSERT_EQUAL(flt_promo("m1", NULL), 429);
    CU_ASSERT_EQUAL(resend("acc-1"), 429);
    /* each mistake was said once, however often the files were looked at */
    usleep((useconds_t)test_scale_ms(500) * 1000u);
    CU_ASSERT_EQUAL(flt_log_count("keeping the running limits"), kept_limits);
    CU_ASSERT_EQUAL(flt_log_count("keeping the running configuration"),
                    kept_conf);
    CU_ASSERT_TRUE(flt_daemon_alive());
}

/* Renaming an action: both files change; whichever comes first is refused
 * until the other follows, then the pair applies. */
static void test_rename_both(void)
{
    char src[TEST_PATH_MAX];
    const char *edits[] = {"reload=\"1\"", "reload=\"0.1\"", NULL};
    static const char *const limits_new[] = {"Action=\"PromoQuery\"",
                                             "Action=\"PromoLookup\"", NULL};
    static const char *const conf_new[] = {"action=\"PromoQuery\"",
                                           "action=\"PromoLookup\"", NULL};

    CU_ASSERT_EQUAL_FATAL(flt_start_auth(edits), 0);
    for (int order = 0; order < 2; order++) {
        const char *member = order == 0 ? "r0" : "r1";
        int refused = flt_log_count("is not in limits.xml");
        int limits = flt_log_count("limits reloaded");
        int conf = flt_log_count("suspect.xml: reloaded");

        /* the file edited first alone: refused */
        CU_ASSERT_EQUAL_FATAL(order == 0 ? edit_conf(conf_new)
                                         : edit_limits(NULL, limits_new),
                              0);
        CU_ASSERT_TRUE(flt_log_wait("is not in limits.xml", refused + 1,
                                    test_scale_ms(3000)));
        /* the other one: the pair applies */
        CU_ASSERT_EQUAL_FATAL(order == 0 ? edit_limits(NULL, limits_new)
                                         : edit_conf(conf_new),
                              0);
        CU_ASSERT_TRUE(
            flt_log_wait("limits reloaded", limits + 1, test_scale_ms(3000)));
        CU_ASSERT_TRUE(flt_log_wait("suspect.xml: reloaded", conf + 1,
                                    test_scale_ms(3000)));
        for (int i = 0; i < 10; i++) {
            CU_ASSERT_EQUAL(flt_promo(member, NULL), 200);
        }
        CU_ASSERT_EQUAL(flt_promo(member, NULL), 429);
        if (order == 1) {
            break;
        }
        /* back to the example, in the same two steps */
        limits = flt_log_count("limits reloaded");
        conf = flt_log_count("suspect.xml: reloaded");
        CU_ASSERT_EQUAL_FATAL(edit_conf(NULL), 0);
        CU_ASSERT_EQUAL_FATAL(
            test_copy_file(e2e_src(src, "examples/limits.xml"), e2e.limits,
                           0644),
            0);
        CU_ASSERT_TRUE(
            flt_log_wait("limits reloaded", limits + 1, test_scale_ms(3000)));
        CU_ASSERT_TRUE(flt_log_wait("suspect.xml: reloaded", conf + 1,
                                    test_scale_ms(3000)));
    }
    CU_ASSERT_TRUE(flt_daemon_alive());
}

int flt_add_mistake_tests(CU_pSuite s)
{
    return CU_add_test(s, "mistakes: no start", test_no_start) == NULL ||
                   CU_add_test(s, "mistakes: reload keeps the running pair",
                               test_reload_keeps) == NULL ||
                   CU_add_test(s, "mistakes: an action renamed in both files",
                               test_rename_both) == NULL
               ? -1
               : 0;
}
