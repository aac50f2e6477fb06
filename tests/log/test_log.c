/*
 * test_log.c - suite "log": the daemons' own log (middleware/log/log.c).
 *
 * Lines go to stderr, so each test points file descriptor 2 at a file of
 * its own for the time of the test, and reads the file back: the plain
 * line ("time prog[pid]: level: message"), the journal's ("<N>level:
 * message", only when JOURNAL_STREAM names that very stderr), control
 * bytes turned into '?', request targets cut before their query, and a
 * sink (mw_log_sink()) taking the lines instead of stderr.  And the
 * decision log's line (decision_log.c), byte for byte.
 */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers/util.h"
#include "log/decision_log.h"
#include "log/log.h"
#include "suites.h"

static char *dir;

/* Runs fn with stderr on a fresh file and journal (NULL: no
 * JOURNAL_STREAM, "self": the file's device and inode, else as given);
 * returns what it wrote (the caller frees it). */
static char *capture(void (*fn)(void), const char *journal)
{
    char path[600], env[64];
    struct stat st;
    int fd, saved = dup(STDERR_FILENO);
    char *text;

    snprintf(path, sizeof(path), "%s/stderr", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    close(fd);
    if (journal == NULL) {
        unsetenv("JOURNAL_STREAM");
    } else if (strcmp(journal, "self") == 0) {
        fstat(STDERR_FILENO, &st);
        snprintf(env, sizeof(env), "%lu:%lu", (unsigned long)st.st_dev,
                 (unsigned long)st.st_ino);
        setenv("JOURNAL_STREAM", env, 1);
    } else {
        setenv("JOURNAL_STREAM", journal, 1);
    }
    mw_log_init("suspect-test", MW_LOG_INFO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    unsetenv("JOURNAL_STREAM");
    mw_log_init("suspect-test", MW_LOG_NOTICE);
    text = test_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    return text;
}

static void three_lines(void)
{
    mw_log(MW_LOG_ERROR, "store down");
    mw_log(MW_LOG_INFO, "deny /a action=A");
    mw_log(MW_LOG_DEBUG, "not written at info");
    mw_log(MW_LOG_WARNING, "forged\nline\x01");
}

static void test_plain_lines(void)
{
    char *t = capture(three_lines, NULL);

    CU_ASSERT_PTR_NOT_NULL(strstr(t, "Z suspect-test["));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "]: error: store down\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "]: info: deny /a action=A\n"));
    CU_ASSERT_PTR_NULL(strstr(t, "not written"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "]: warning: forged?line?\n"));
    CU_ASSERT_PTR_NULL(strstr(t, "<3>"));
    free(t);
}

static void test_journal_priorities(void)
{
    char *t = capture(three_lines, "self");

    CU_ASSERT_STRING_EQUAL(t, "<3>error: store down\n"
                              "<6>info: deny /a action=A\n"
                              "<4>warning: forged?line?\n");
    free(t);
    /* A JOURNAL_STREAM that is not this stderr (inherited by a program
     * whose stderr was redirected) is not believed. */
    t = capture(three_lines, "1:2");
    CU_ASSERT_PTR_NULL(strstr(t, "<3>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "]: error: store down\n"));
    free(t);
    t = capture(three_lines, "junk");
    CU_ASSERT_PTR_NULL(strstr(t, "<3>"));
    free(t);
}

static void test_uri_without_query(void)
{
    int len;
    const char *u;

    u = mw_log_uri("/app.cgi?op=login&member=alice", 0, &len);
    CU_ASSERT_EQUAL(len, 8);
    CU_ASSERT_NSTRING_EQUAL(u, "/app.cgi", 8);
    u = mw_log_uri("/a#frag?x", 0, &len);
    CU_ASSERT_EQUAL(len, 2);
    u = mw_log_uri("/app.cgi?op=login", 1, &len);
    CU_ASSERT_EQUAL(len, 17);
    u = mw_log_uri(NULL, 0, &len);
    CU_ASSERT_NSTRING_EQUAL(u, "-", (size_t)len);
}

/* A decision log line, byte for byte: the time's milliseconds, numbers
 * (a negative one too), the route's file:line, a hash in hex, escapes. */
static void test_decision_line(void)
{
    static const char want[] =
        "{\"time\":\"2026-11-03T11:01:07.023Z\",\"action\":\"Lo\\\"gin\","
        "\"algorithm\":\"TokenBucket\",\"route\":\"/etc/suspect/"
        "suspect.xml:63\",\"outcome\":\"denied_locked\","
        "\"reason\":\"locked\",\"status\":429,\"identity_type\":\"AccountId\","
        "\"identity_hash\":\"%s\",\"client\":\"203.0.113.7\","
        "\"method\":\"POST\",\"path\":\"/app\\ufffd.cgi\","
        "\"restriction_end_ms\":1793705467423,\"store\":\"memory\","
        "\"latency_us\":-1}\n";
    char path[600], hash[MW_DLOG_HASH_LEN], expect[sizeof(want) + 32];
    suspect_siphash_key_t k;
    mw_dlog_entry_t e;
    mw_dlog_t *d = NULL;
    suspect_err_t err;
    char *text;

    snprintf(path, sizeof(path), "%s/decisions.log", dir);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(mw_dlog_open(path, &d, &err), SUSPECT_OK);
    mw_dlog_key("a key of sixteen bytes or more", &k);
    mw_dlog_hash(&k, "AccountId", "bob", 3, hash);
    CU_ASSERT_EQUAL(strlen(hash), 16);
    CU_ASSERT_EQUAL(strspn(hash, "0123456789abcdef"), 16);
    memset(&e, 0, sizeof(e));
    e.time_ms = 1793703667023; /* 2026-11-03T11:01:07.023Z */
    e.action = "Lo\"gin";
    e.algorithm = "TokenBucket";
    e.route_file = "/etc/suspect/suspect.xml";
    e.route_line = 63;
    e.outcome = "denied_locked";
    e.reason = "locked";
    e.status = 429;
    e.identity_type = "AccountId";
    e.identity_hash = hash;
    e.client = "203.0.113.7";
    e.method = "POST";
    e.path = "/app\x01.cgi?q=1";
    e.path_len = 9;
    e.restriction_end_ms = 1793705467423;
    e.store = "memory";
    e.latency_us = -1;
    mw_dlog_write(d, &e);
    mw_dlog_close(d);
    snprintf(expect, sizeof(expect), want, hash);
    text = test_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_STRING_EQUAL(text, expect);
    free(text);
}

/* A sink takes the message alone (defanged), and stderr gets nothing. */
static char sunk[256];
static int sunk_level = -1;

static void sink(void *arg, mw_log_level_t level, const char *msg)
{
    (void)arg;
    snprintf(sunk, sizeof(sunk), "%s", msg);
    sunk_level = (int)level;
}

static void log_to_sink(void)
{
    mw_log_sink(sink, NULL);
    mw_log(MW_LOG_WARNING, "to the sink: %s", "a\nb");
    mw_log(MW_LOG_DEBUG, "not at this level");
    mw_log_sink(NULL, NULL);
}

static void test_sink(void)
{
    char *text = capture(log_to_sink, NULL);

    CU_ASSERT_STRING_EQUAL(text, "");
    CU_ASSERT_STRING_EQUAL(sunk, "to the sink: a?b");
    CU_ASSERT_EQUAL(sunk_level, MW_LOG_WARNING);
    free(text);
}

static int suite_init(void)
{
    dir = test_mkdtemp();
    return dir != NULL ? 0 : -1;
}

static int suite_clean(void)
{
    test_rmtree(dir);
    free(dir);
    return 0;
}

int register_log_suite(void)
{
    CU_pSuite s = CU_add_suite("log", suite_init, suite_clean);

    if (s == NULL || !CU_add_test(s, "plain lines", test_plain_lines) ||
        !CU_add_test(s, "journal priorities", test_journal_priorities) ||
        !CU_add_test(s, "targets without their query",
                     test_uri_without_query) ||
        !CU_add_test(s, "a decision log line", test_decision_line) ||
        !CU_add_test(s, "a sink instead of stderr", test_sink)) {
        return -1;
    }
    return 0;
}
