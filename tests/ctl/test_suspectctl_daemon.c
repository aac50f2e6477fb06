/*
 * test_suspectctl_daemon.c - the suspectctl suite with a running
 * suspect-fcgi: every command through its control socket.
 *
 * The daemon is this build's, on the suite's suspect.xml (ctl_test.c) in
 * a temp dir, answering FastCGI AUTHORIZER requests sent straight to its
 * socket (no web server needed: the decision is the same); suspectctl is
 * the built binary.  Memory store: status, unblock (then the next request
 * is allowed), block, locked, reset, simulate with known counts, stats,
 * reload applied and rejected (file:line), a socket that belongs to the
 * daemon of another suspect.xml.  LMDB: an unblock through the daemon
 * reaches its lock cache at once, so the next request is allowed; Redis
 * the same.  A shadow route: stats and the decision log say would_deny; a
 * deny list: denied_list.  The memory store full of locks: the 503 is counted
 * in suspect_store_full_total (read from the metrics listener).
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ctl_test.h"
#include "helpers/procs.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

typedef struct daemon {
    test_proc_t proc;
    char conf[700];
    char sock[700];
} daemon_t;

/* Starts suspect-fcgi in authorizer mode on ctl_dir/NAME.xml (one route,
 * Login by the member cookie, counted in store, with the elements extra),
 * listening on ctl_dir/NAME.sock; its control socket is
 * ctl_dir/control.sock. */
static int daemon_start_with(daemon_t *d, const char *name, const char *store,
                             const char *extra)
{
    char body[2048];

    memset(d, 0, sizeof(*d));
    snprintf(d->conf, sizeof(d->conf), "%s/%s.xml", ctl_dir, name);
    snprintf(d->sock, sizeof(d->sock), "%s/%s.sock", ctl_dir, name);
    snprintf(body, sizeof(body),
             "<Suspect>\n"
             "  <Server listen=\"unix:%s\" mode=\"authorizer\"/>\n"
             "  <Limits path=\"limits.xml\"/>\n"
             "  %s\n"
             "  <Control socket=\"control.sock\"/>\n"
             "  %s\n"
             "  <Route action=\"Login\" method=\"POST\" path=\"/login.cgi\">\n"
             "    <Identity type=\"Cookie\" from=\"cookie:member\"/>\n"
             "  </Route>\n"
             "</Suspect>\n",
             d->sock, store, extra);
    if (test_write_file(d->conf, body, strlen(body)) != 0) {
        return -1;
    }
    return test_suspect_start(&d->proc, ctl_dir, d->conf, d->sock, 0, NULL);
}

static int daemon_start(daemon_t *d, const char *name, const char *store)
{
    return daemon_start_with(d, name, store, "");
}

static void daemon_stop(daemon_t *d)
{
    test_proc_stop(&d->proc, SIGTERM, test_scale_ms(5000));
}

/* Waits (5 s, scaled) until the log holds text n times; whether it did. */
static bool wait_log_count(const daemon_t *d, const char *text, int n)
{
    long long end = mono_ms() + test_scale_ms(5000);

    while (test_count_text(d->proc.log, text) < n) {
        if (mono_ms() >= end) {
            return false;
        }
        usleep(10000);
    }
    return true;
}

/* One AUTHORIZER request for the login form of member: its status. */
static int login(const daemon_t *d, const char *member)
{
    return ctl_authorize(d->sock, "/login.cgi", member);
}

static void test_memory_daemon(void)
{
    char limits[700];
    daemon_t d;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(daemon_start(&d, "memd", "<Store type=\"memory\"/>"),
                          0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(login(&d, "42"), 200);
    }
    CU_ASSERT_EQUAL(login(&d, "42"), 429);
    /* status and locked see what only the daemon's memory holds */
    CTL_RUN(&r, "-c", d.conf, "status", "Login", "42", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "3 in the window, 0 remaining"));
    CU_ASSERT_TRUE(ctl_has(r.out, "locked until"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", d.conf, "--json", "locked");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"via\":\"daemon\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"store\":\"memory\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"count\":1"));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"key\":\"Login:42\""));
    ctl_run_free(&r);
    /* unblock: the next request is allowed, the one after locked again */
    CTL_RUN(&r, "-c", d.conf, "unblock", "Login", "42", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "the next request is allowed"));
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(login(&d, "42"), 200);
    CU_ASSERT_EQUAL(login(&d, "42"), 429);
    /* block and reset */
    CTL_RUN(&r, "-c", d.conf, "block", "Login", "7", "60", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(login(&d, "7"), 429);
    CTL_RUN(&r, "-c", d.conf, "reset", "Login", "7", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(login(&d, "7"), 200);
    /* simulate reads the daemon's counts */
    CTL_RUN(&r, "-c", d.conf, "--json", "simulate", "REQUEST_METHOD=POST",
            "REQUEST_URI=/login.cgi", "HTTP_COOKIE=member=42");
    CU_ASSERT_TRUE(ctl_has(r.out, "\"verdict\":\"deny\""));
    ctl_run_free(&r);
    /* stats: what it decided since it started */
    CTL_RUN(&r, "-c", d.conf, "stats");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "Login: allowed 5 denied_locked 3"));
    CU_ASSERT_TRUE(ctl_has(r.out, "locks created 2"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", d.conf, "--json", "stats");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"Login\":{\"allowed\":5,"));
    ctl_run_free(&r);
    /* reload: applied, then rejected with the file:line */
    CTL_RUN(&r, "-c", d.conf, "reload");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "memd.xml: applied"));
    ctl_run_free(&r);
    snprintf(limits, sizeof(limits), "%s/limits.xml", ctl_dir);
    {
        char *good = test_read_file(limits, NULL);
        static const char bad[] =
            "<ArrayOfSuspectUsageSettingEntity>\n"
            "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"x\" "
            "LimitDuration=\"60\"/>\n"
            "</ArrayOfSuspectUsageSettingEntity>\n";

        int said = test_count_text(d.proc.log, "keeping the running limits");

        CU_ASSERT_EQUAL(test_write_file(limits, bad, strlen(bad)), 0);
        /* The daemon's own look (every second) reports the file first;
         * the reload asked for still says what is wrong with it. */
        CU_ASSERT_TRUE(
            wait_log_count(&d, "keeping the running limits", said + 1));
        CTL_RUN(&r, "-c", d.conf, "--direct", "reload");
        CU_ASSERT_EQUAL(r.status, 2);
        ctl_run_free(&r);
        CTL_RUN(&r, "-c", d.conf, "reload");
        CU_ASSERT_EQUAL(r.status, 1);
        CU_ASSERT_TRUE(ctl_has(r.out, "memd.xml: applied"));
        CU_ASSERT_TRUE(ctl_has(r.out, "limits.xml: rejected: "));
        CU_ASSERT_TRUE(ctl_has(r.out, "limits.xml:2: "));
        ctl_run_free(&r);
        /* the running limits stay: member 42 is still locked */
        CU_ASSERT_EQUAL(login(&d, "42"), 429);
        CU_ASSERT_EQUAL(test_write_file(limits, good, strlen(good)), 0);
        free(good);
    }
    {
        /* suspect.xml itself, an attribute it does not know on line 7: the
         * file:line, and the daemon keeps what it runs */
        char *good = test_read_file(d.conf, NULL), *bad;
        const char *const swap[] = {"<Route action=\"Login\"",
                                    "<Route action=\"Login\" rate=\"9\"", NULL};

        CU_ASSERT_PTR_NOT_NULL_FATAL(good);
        bad = test_subst(good, swap);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
        CU_ASSERT_EQUAL(test_write_file(d.conf, bad, strlen(bad)), 0);
        CTL_RUN(&r, "-c", d.conf, "reload");
        CU_ASSERT_EQUAL(r.status, 1); /* suspectctl reads it first */
        CU_ASSERT_TRUE(ctl_has(r.err, "memd.xml:7: Route: unknown attribute"));
        ctl_run_free(&r);
        CU_ASSERT_EQUAL(login(&d, "42"), 429);
        CU_ASSERT_EQUAL(test_write_file(d.conf, good, strlen(good)), 0);
        free(bad);
        free(good);
    }
    daemon_stop(&d);
    /* no daemon now: the memory store cannot be reached */
    CTL_RUN(&r, "-c", d.conf, "stats");
    CU_ASSERT_EQUAL(r.status, 3);
    CU_ASSERT_TRUE(ctl_has(r.err, "needs the running suspect-fcgi"));
    ctl_run_free(&r);
}

/* A control socket answered by the daemon of another suspect.xml is not
 * used: suspectctl says whose it is. */
static void test_other_daemon(void)
{
    char other[700];
    char *text;
    daemon_t d;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(daemon_start(&d, "memo", "<Store type=\"memory\"/>"),
                          0);
    snprintf(other, sizeof(other), "%s/other.xml", ctl_dir);
    text = test_read_file(d.conf, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_EQUAL(test_write_file(other, text, strlen(text)), 0);
    free(text);
    CTL_RUN(&r, "-c", other, "status", "Login", "42", "Cookie");
    CU_ASSERT_EQUAL(r.status, 3);
    CU_ASSERT_TRUE(ctl_has(r.err, "memo.xml, not "));
    ctl_run_free(&r);
    daemon_stop(&d);
}

/* LMDB: the daemon denies a locked identity from its lock cache for up to
 * a second without asking the store; an unblock through the daemon clears
 * that cache too, so the very next request is allowed. */
static void test_lmdb_daemon_cache(void)
{
    char store[900];
    daemon_t d;
    ctl_run_t r;

    snprintf(store, sizeof(store),
             "<Store type=\"lmdb\" path=\"%s/daemon.mdb\"/>", ctl_dir);
    CU_ASSERT_EQUAL_FATAL(daemon_start(&d, "lmdbd", store), 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(login(&d, "99"), 200);
    }
    CU_ASSERT_EQUAL(login(&d, "99"), 429); /* locked, and cached */
    CTL_RUN(&r, "-c", d.conf, "--json", "unblock", "Login", "99", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "\"via\":\"daemon\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"lock_dropped\":true"));
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(login(&d, "99"), 200);
    /* without the daemon, suspectctl still reaches LMDB itself */
    daemon_stop(&d);
    CTL_RUN(&r, "-c", d.conf, "--json", "status", "Login", "99", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "\"via\":\"store\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"in_window\":3"));
    ctl_run_free(&r);
}

/* Redis, as LMDB: the daemon's lock cache denies the locked identity
 * without asking Redis; an unblock through the daemon clears the lock in
 * Redis and in that cache, so the very next request is allowed (one
 * straight to Redis, --direct, would leave the cache denying it). */
static void test_redis_daemon_cache(void)
{
    char store[900];
    test_redis_t rs;
    daemon_t d;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&rs, false, NULL), 0);
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"%u\"/>", rs.url,
             test_scale_ms(5000));
    CU_ASSERT_EQUAL_FATAL(daemon_start(&d, "redisd", store), 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(login(&d, "77"), 200);
    }
    CU_ASSERT_EQUAL(login(&d, "77"), 429); /* locked, and cached */
    CTL_RUN(&r, "-c", d.conf, "--json", "unblock", "Login", "77", "Cookie");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "\"via\":\"daemon\""));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"lock_dropped\":true"));
    ctl_run_free(&r);
    CU_ASSERT_EQUAL(login(&d, "77"), 200);
    CU_ASSERT_EQUAL(login(&d, "77"), 429);
    daemon_stop(&d);
    test_redis_stop(&rs);
}

/* A shadow route lets everything through: what enforcing would have
 * refused is counted as would_deny, and the decision log at "denials"
 * holds those, with the status answered (0: it went on) and the end the
 * restriction would have had. */
static void test_shadow_outcome(void)
{
    char path[700];
    char *text;
    const char *p;
    int n = 0;
    daemon_t d;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(
        daemon_start_with(&d, "shadowd", "<Store type=\"memory\"/>",
                          "<Log decisions=\"denials\" path=\"shadow.log\"/>\n"
                          "  <Action name=\"Login\" shadow=\"yes\"/>"),
        0);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(login(&d, "5"), 200);
    }
    CTL_RUN(&r, "-c", d.conf, "stats");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "Login: allowed 3 would_deny 3"));
    ctl_run_free(&r);
    daemon_stop(&d); /* a stop writes the log's last lines out */
    snprintf(path, sizeof(path), "%s/shadow.log", ctl_dir);
    text = test_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    for (p = text; (p = strstr(p, "\"outcome\":\"would_deny\"")) != NULL; p++) {
        n++;
    }
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"status\":0,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"restriction_end_ms\":"));
    CU_ASSERT_PTR_NULL(strstr(text, "\"outcome\":\"allowed\""));
    free(text);
}

/* A value on a deny list: refused before anything is counted, and
 * counted apart from the limit's denials. */
static void test_deny_list_outcome(void)
{
    daemon_t d;
    ctl_run_t r;

    CU_ASSERT_EQUAL_FATAL(daemon_start_with(&d, "denyd",
                                            "<Store type=\"memory\"/>",
                                            "<Deny identity=\"Cookie=666\"/>"),
                          0);
    CU_ASSERT_EQUAL(login(&d, "666"), 403);
    CU_ASSERT_EQUAL(login(&d, "1"), 200);
    CTL_RUN(&r, "-c", d.conf, "stats");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "Login: allowed 1 denied_list 1\n"));
    ctl_run_free(&r);
    daemon_stop(&d);
}

/* The memory store full of live locks (maxEntries 1): a new identity
 * gets a 503, counted in suspect_store_full_total and by suspectctl
 * stats, and the lock holds.
 * The decision log without a path: its lines on standard error, among
 * the daemon's own. */
static void test_memory_full(void)
{
    char extra[200], url[64], log[700];
    int mport = test_free_port();
    test_http_t h;
    daemon_t d;
    ctl_run_t r;
    char *text;

    snprintf(extra, sizeof(extra),
             "<Metrics listen=\"tcp:127.0.0.1:%d\"/>\n"
             "  <Log decisions=\"denials\"/>",
             mport);
    CU_ASSERT_EQUAL_FATAL(
        daemon_start_with(&d, "fulld",
                          "<Store type=\"memory\" maxEntries=\"1\"/>", extra),
        0);
    CU_ASSERT_EQUAL_FATAL(
        test_wait_listen(mport, NULL, &d.proc, test_scale_ms(5000)), 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(login(&d, "1"), 200);
    }
    CU_ASSERT_EQUAL(login(&d, "1"), 429);
    CU_ASSERT_EQUAL(login(&d, "2"), 503);
    CU_ASSERT_EQUAL(login(&d, "1"), 429);
    CTL_RUN(&r, "-c", d.conf, "stats");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(ctl_has(r.out, "Login: allowed 3 denied_locked 2 "
                                  "fail_closed 1;"));
    CU_ASSERT_TRUE(
        ctl_has(r.out, "store full (no room for a new identity): 1\n"));
    ctl_run_free(&r);
    CTL_RUN(&r, "-c", d.conf, "--json", "stats");
    CU_ASSERT_TRUE(ctl_json_object(r.out));
    CU_ASSERT_TRUE(ctl_has(r.out, "\"store_full\":1}"));
    ctl_run_free(&r);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", mport);
    CU_ASSERT_EQUAL_FATAL(test_http(&h, ctl_dir, (const char *[]){url, NULL}),
                          0);
    CU_ASSERT_EQUAL(h.status, 200);
    CU_ASSERT_TRUE(ctl_has(h.body, "\nsuspect_store_full_total"
                                   "{store=\"memory\"} 1\n"));
    CU_ASSERT_TRUE(ctl_has(h.body, "\nsuspect_decisions_total{action=\"Login\","
                                   "outcome=\"fail_closed\"} 1\n"));
    test_http_free(&h);
    daemon_stop(&d); /* a stop writes the log's last lines out */
    snprintf(log, sizeof(log), "%s/suspect.log", ctl_dir);
    text = test_read_file(log, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_TRUE(ctl_has(text, "\n{\"time\":\""));
    CU_ASSERT_TRUE(ctl_has(text, "\"outcome\":\"fail_closed\",\"reason\":"
                                 "\"store full\",\"status\":503,"));
    CU_ASSERT_TRUE(ctl_has(text, "\"outcome\":\"denied_locked\""));
    CU_ASSERT_PTR_NULL(strstr(text, "\"outcome\":\"allowed\""));
    free(text);
}

int ctl_add_daemon_tests(CU_pSuite s)
{
    if (!CU_add_test(s, "daemon: every command on the memory store",
                     test_memory_daemon) ||
        !CU_add_test(s, "daemon: another suspect.xml's socket",
                     test_other_daemon) ||
        !CU_add_test(s, "daemon: lmdb unblock reaches the lock cache",
                     test_lmdb_daemon_cache) ||
        !CU_add_test(s, "daemon: redis unblock reaches the lock cache",
                     test_redis_daemon_cache) ||
        !CU_add_test(s, "daemon: a shadow route's would-deny",
                     test_shadow_outcome) ||
        !CU_add_test(s, "daemon: a deny list's refusal",
                     test_deny_list_outcome) ||
        !CU_add_test(s, "daemon: the memory store full, in the metrics",
                     test_memory_full)) {
        return -1;
    }
    return 0;
}
