/*
 * test_e2e_ops.c - suite "e2e", operating suspect-fcgi: the limits file
 * edited while requests flow, a broken limits file, SIGHUP reloading
 * both files, SIGTERM draining a request in flight, hostile FastCGI
 * sent straight to the daemon's socket, and a header sent twice.  The
 * stack is the CGI one of test_e2e.c (examples/suspect.xml behind nginx).
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define APP "/app.cgi"

static const char *const fast_reload[] = {"reload=\"1\"", "reload=\"0.2\"",
                                          NULL};

/* A bank update by member=bank-1 (and 127.0.0.1): its status. */
static int bank(void)
{
    char url[E2E_URL];
    return e2e_status((const char *[]){"-b", "member=bank-1", "-d", "account=1",
                                       e2e_url(url, APP "?op=bank"), NULL});
}

/* examples/limits.xml with from replaced by to, written atomically. */
static int edit_limits(const char *from, const char *to)
{
    char src[TEST_PATH_MAX];
    const char *pairs[] = {from, to, NULL};
    char *text = test_read_file(e2e_src(src, "examples/limits.xml"), NULL);
    char *edited = text != NULL ? test_subst(text, pairs) : NULL;
    int rc = edited != NULL && strcmp(edited, text) != 0
                 ? e2e_write_limits(edited)
                 : -1;

    free(text);
    free(edited);
    return rc;
}

/* Sends bank updates until one is allowed (the new limit is in force);
 * true when that happened before ms. */
static bool wait_bank_allowed(unsigned ms)
{
    for (long long end = mono_ms() + test_scale_ms(ms); mono_ms() < end;) {
        int st = bank();
        if (st == 200) {
            return true;
        }
        if (st != 429) {
            fprintf(stderr, "e2e: bank update answered %d\n", st);
            return false;
        }
        usleep(50000);
    }
    return false;
}

typedef struct flow {
    atomic_bool stop;
    atomic_int sent, done, failed; /* done: answered, whatever the status */
} flow_t;

/* Promotion lookups, each by a new member (never over the limit), until
 * told to stop; any answer but 200 is a failure. */
static void *flow_main(void *arg)
{
    char url[E2E_URL];
    flow_t *f = arg;
    char path[128];

    while (!atomic_load(&f->stop)) {
        int n = atomic_fetch_add(&f->sent, 1);
        snprintf(path, sizeof(path), APP "?op=promo&member=flow%d&code=C1", n);
        if (e2e_status((const char *[]){e2e_url(url, path), NULL}) != 200) {
            atomic_fetch_add(&f->failed, 1);
        }
        atomic_fetch_add(&f->done, 1);
    }
    return NULL;
}

/* Waits until the flow has had n requests answered; false when that did
 * not happen within ms (scaled). */
static bool wait_flow_done(flow_t *f, int n, unsigned ms)
{
    for (long long end = mono_ms() + test_scale_ms(ms);
         atomic_load(&f->done) < n;) {
        if (mono_ms() >= end) {
            return false;
        }
        usleep(10000);
    }
    return true;
}

/* The limits file edited under load: the new limit applies within the
 * reload interval and no request fails meanwhile (the flow has requests
 * answered before the edit and after the new limit is in force). */
static void test_hot_reload(void)
{
    flow_t f;
    pthread_t th;
    int before;

    CU_ASSERT_FATAL(e2e_start_cgi(fast_reload) == 0);
    atomic_init(&f.stop, false);
    atomic_init(&f.sent, 0);
    atomic_init(&f.done, 0);
    atomic_init(&f.failed, 0);
    CU_ASSERT_FATAL(pthread_create(&th, NULL, flow_main, &f) == 0);
    CU_ASSERT(wait_flow_done(&f, 2, 5000));

    CU_ASSERT_EQUAL(bank(), 200);
    CU_ASSERT_EQUAL(bank(), 200);
    CU_ASSERT_EQUAL(bank(), 429);
    CU_ASSERT_EQUAL(
        edit_limits("Action=\"BankAccountUpdate\" LimitCount=\"2\"",
                    "Action=\"BankAccountUpdate\" LimitCount=\"4\""),
        0);
    /* Denied hits were not counted: two more fit under 4. */
    CU_ASSERT(wait_bank_allowed(5000));
    CU_ASSERT_EQUAL(bank(), 200);
    CU_ASSERT_EQUAL(bank(), 429);
    before = atomic_load(&f.sent);
    CU_ASSERT(wait_flow_done(&f, before + 2, 5000));

    atomic_store(&f.stop, true);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(atomic_load(&f.failed), 0);
    CU_ASSERT_EQUAL(test_wait_file_text(e2e.log, "limits reloaded", 1000), 0);
}

/* A broken limits file is refused with file:line in the log, the last
 * good limits stay in force, and a fixed file is picked up again. */
static void test_broken_limits_kept(void)
{
    CU_ASSERT_FATAL(e2e_start_cgi(fast_reload) == 0);
    CU_ASSERT_EQUAL(bank(), 200);
    /* Line 9 of examples/limits.xml is BankAccountUpdate's. */
    CU_ASSERT_EQUAL(edit_limits("LimitCount=\"2\" LimitDuration=\"120\"",
                                "LimitCount=\"two\" LimitDuration=\"120\""),
                    0);
    CU_ASSERT_EQUAL(test_wait_file_text(e2e.log, "limits.xml:9", 5000), 0);
    CU_ASSERT_EQUAL(bank(), 200);
    CU_ASSERT_EQUAL(bank(), 429);
    CU_ASSERT(test_proc_running(&e2e.fcgi));

    CU_ASSERT_EQUAL(edit_limits("LimitCount=\"2\" LimitDuration=\"120\"",
                                "LimitCount=\"3\" LimitDuration=\"120\""),
                    0);
    CU_ASSERT(wait_bank_allowed(5000));
    CU_ASSERT_EQUAL(bank(), 429);
}

/* A promotion lookup: its status. */
static int promo(const char *member, const char *code)
{
    char url[E2E_URL];
    char path[160];

    snprintf(path, sizeof(path), APP "?op=promo&member=%s&code=%s", member,
             code);
    return e2e_status((const char *[]){e2e_url(url, path), NULL});
}

/* With polling off (an hour), SIGHUP alone reloads both files: PromoQuery
 * becomes 2 per minute (limits.xml) by member alone (suspect.xml). */
static void test_sighup_reload(void)
{
    const char *hour[] = {"reload=\"1\"", "reload=\"3600\"", NULL};
    const char *by_member[] = {"reload=\"1\"", "reload=\"3600\"",
                               "from=\"query:member query:code\"",
                               "from=\"query:member\"", NULL};
    bool applied = false;
    char code[32];

    CU_ASSERT_FATAL(e2e_start_cgi(hour) == 0);
    CU_ASSERT_EQUAL(edit_limits("Action=\"PromoQuery\" LimitCount=\"10\"",
                                "Action=\"PromoQuery\" LimitCount=\"2\""),
                    0);
    CU_ASSERT_EQUAL(e2e_write_example("suspect.xml", "suspect.xml", by_member),
                    0);
    /* Not yet: the old composite identity, the old limit. */
    for (int i = 0; i < 3; i++) {
        snprintf(code, sizeof(code), "OLD%d", i);
        CU_ASSERT_EQUAL(promo("probe", code), 200);
    }
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGHUP), 0);
    /* the reload is applied when the signal is handled: asked until then */
    for (long long i = 0, end = mono_ms() + test_scale_ms(5000);
         !applied && mono_ms() < end; i++) {
        snprintf(code, sizeof(code), "P%lld", i);
        applied = promo("probe2", code) == 429;
    }
    CU_ASSERT_FATAL(applied);
    CU_ASSERT_EQUAL(promo("m-hup", "X1"), 200);
    CU_ASSERT_EQUAL(promo("m-hup", "X2"), 200);
    CU_ASSERT_EQUAL(promo("m-hup", "X3"), 429);
    CU_ASSERT(test_proc_running(&e2e.fcgi));
}

/* SIGTERM while a slow program runs: it finishes and is answered, then
 * suspect-fcgi exits 0 and removes its socket. */
static void test_sigterm_drains(void)
{
    char url[E2E_URL];
    char started[TEST_PATH_MAX];
    test_http_job_t job;
    test_http_t r;
    long long t0;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("slow.cgi",
                                  "#!/bin/sh\n"
                                  ": > @DIR@/slow.started\n"
                                  "sleep 1\n"
                                  "printf 'Status: 200 OK\\r\\n"
                                  "Content-Type: text/plain\\r\\n\\r\\n"
                                  "slow done\\n'\n") == 0);
    snprintf(started, sizeof(started), "%s/slow.started", e2e.dir);
    CU_ASSERT_FATAL(test_http_start(&job, e2e.dir,
                                    (const char *[]){e2e_url(url, "/slow.cgi"),
                                                     NULL}) == 0);
    CU_ASSERT_FATAL(test_wait_file_text(started, "", 5000) == 0);
    t0 = mono_ms();
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGTERM), 0);
    test_http_finish(&job, &r, 10000);
    CU_ASSERT(e2e_body_starts(&r, 200, "slow done"));
    test_http_free(&r);
    CU_ASSERT_FATAL(test_proc_wait(&e2e.fcgi, 5000) == 0);
    CU_ASSERT(mono_ms() - t0 < test_scale_ms(4000));
    CU_ASSERT(WIFEXITED(e2e.fcgi.status) && WEXITSTATUS(e2e.fcgi.status) == 0);
    CU_ASSERT_NOT_EQUAL(access(e2e.sock, F_OK), 0);
    CU_ASSERT_EQUAL(e2e_status((const char *[]){e2e_url(url, APP), NULL}), 502);
}

/* Waits until DIR/name holds a pid (written by a script); it, or -1. */
static pid_t wait_pid_file(const char *name)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", e2e.dir, name);
    for (long long end = mono_ms() + test_scale_ms(5000); mono_ms() < end;) {
        char *text = test_read_file(path, NULL);
        pid_t pid = text != NULL ? (pid_t)atoi(text) : 0;

        free(text);
        if (pid > 0) {
            return pid;
        }
        usleep(5000);
    }
    return -1;
}

/* Waits up to ms until the log holds text more than n times: a line of
 * the running daemon, not of one before it.  0 or -1. */
static int wait_log_more(const char *text, int n, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);

    while (test_count_text(e2e.log, text) <= n) {
        if (mono_ms() >= end) {
            return -1;
        }
        usleep(5000);
    }
    return 0;
}

/* Starts a request for /sleeper.cgi (30 s of silence) in job; the
 * program's pid, or -1. */
static pid_t start_sleeper(test_http_job_t *job, const char *pid_name)
{
    char url[E2E_URL];
    char script[256];

    snprintf(script, sizeof(script),
             "#!/bin/sh\n"
             "echo $$ > @DIR@/%s.tmp && mv @DIR@/%s.tmp @DIR@/%s\n"
             "exec sleep 30\n",
             pid_name, pid_name, pid_name);
    if (e2e_write_cgi("sleeper.cgi", script) != 0 ||
        test_http_start(job, e2e.dir,
                        (const char *[]){e2e_url(url, "/sleeper.cgi"), NULL}) !=
            0) {
        return -1;
    }
    return wait_pid_file(pid_name);
}

/* SIGTERM while a program sleeps 30 s (its <Cgi timeout> is longer):
 * suspect-fcgi stops accepting at once, gives the request the grace
 * period (--grace 1), then kills the program (the client gets 504) and
 * exits 0.  With the default grace (10 s), a second SIGTERM ends the wait
 * at once. */
static void test_sigterm_grace(void)
{
    char url[E2E_URL];
    test_http_job_t job;
    test_http_t r;
    long long t0, ms;
    pid_t pid;
    int seen;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    /* Again, with a 1 s grace. */
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGTERM), 0);
    CU_ASSERT_FATAL(test_proc_wait(&e2e.fcgi, 5000) == 0);
    CU_ASSERT_FATAL(
        test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, e2e.sock, 0,
                           (const char *[]){"--grace", "1", NULL}) == 0);
    pid = start_sleeper(&job, "sleeper1.pid");
    CU_ASSERT_FATAL(pid > 0);
    t0 = mono_ms();
    seen = test_count_text(e2e.log, "no new requests");
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGTERM), 0);
    CU_ASSERT_EQUAL(wait_log_more("no new requests", seen, 2000), 0);
    /* Not accepting any more: nginx cannot connect. */
    CU_ASSERT_EQUAL(e2e_status((const char *[]){e2e_url(url, APP), NULL}), 502);
    CU_ASSERT_FATAL(test_proc_wait(&e2e.fcgi, 5000) == 0);
    ms = mono_ms() - t0;
    CU_ASSERT(ms >= 900 && ms < test_scale_ms(3500));
    CU_ASSERT(WIFEXITED(e2e.fcgi.status) && WEXITSTATUS(e2e.fcgi.status) == 0);
    CU_ASSERT(e2e_pid_gone(pid));
    CU_ASSERT_EQUAL(test_http_finish(&job, &r, 5000), 0);
    CU_ASSERT_EQUAL(r.status, 504);
    test_http_free(&r);
    CU_ASSERT_EQUAL(test_wait_file_text(e2e.log, "grace period (1000 ms)", 0),
                    0);

    /* The default grace, cut short by a second SIGTERM. */
    CU_ASSERT_FATAL(test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, e2e.sock,
                                       0, NULL) == 0);
    pid = start_sleeper(&job, "sleeper2.pid");
    CU_ASSERT_FATAL(pid > 0);
    seen = test_count_text(e2e.log, "no new requests");
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGTERM), 0);
    CU_ASSERT_EQUAL(wait_log_more("no new requests", seen, 2000), 0);
    usleep(200000); /* the grace holds: still running */
    CU_ASSERT(test_proc_running(&e2e.fcgi));
    CU_ASSERT(!e2e_pid_gone(pid));
    t0 = mono_ms();
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGTERM), 0);
    CU_ASSERT_FATAL(test_proc_wait(&e2e.fcgi, 5000) == 0);
    CU_ASSERT(mono_ms() - t0 < test_scale_ms(2000));
    CU_ASSERT(WIFEXITED(e2e.fcgi.status) && WEXITSTATUS(e2e.fcgi.status) == 0);
    CU_ASSERT(e2e_pid_gone(pid));
    CU_ASSERT_EQUAL(test_http_finish(&job, &r, 5000), 0);
    CU_ASSERT_EQUAL(r.status, 504);
    test_http_free(&r);
}

/* Sends len bytes, then reads what comes back until EOF or ms. */
static size_t exchange(const void *data, size_t len, char *buf, size_t size,
                       unsigned ms, bool *eof)
{
    int fd = e2e_fcgi_connect();
    size_t got;

    *eof = false;
    if (fd < 0) {
        return 0;
    }
    if (len > 0) {
        send(fd, data, len, MSG_NOSIGNAL);
    }
    got = e2e_read_until_eof(fd, buf, size, ms, eof);
    close(fd);
    return got;
}

/* Writes a BEGIN_REQUEST body for role, without FCGI_KEEP_CONN, into b
 * (the caller's) and returns it. */
static const unsigned char *begin_body(unsigned char b[8], int role)
{
    memset(b, 0, 8);
    b[1] = (unsigned char)role;
    return b;
}

/* One whole request over a fresh connection: the output in buf. */
static size_t raw_request(int role, const char *const vars[], char *buf,
                          size_t size, bool *eof)
{
    unsigned char begin[8];
    char params[4096];
    size_t plen = 0, got = 0;
    int fd = e2e_fcgi_connect();

    *eof = false;
    if (fd < 0) {
        return 0;
    }
    for (size_t i = 0; vars[i] != NULL; i += 2) {
        e2e_fcgi_pair(params, sizeof(params), &plen, vars[i], vars[i + 1]);
    }
    if (e2e_fcgi_send(fd, 1, 1, begin_body(begin, role), 8) == 0 &&
        e2e_fcgi_send(fd, 4, 1, params, plen) == 0 &&
        e2e_fcgi_send(fd, 4, 1, NULL, 0) == 0 &&
        (role == 2 || e2e_fcgi_send(fd, 5, 1, NULL, 0) == 0)) {
        got = e2e_read_until_eof(fd, buf, size, 5000, eof);
    }
    close(fd);
    return got;
}

/* Hostile records straight to the socket: each refused, the daemon still
 * serves, over the socket and through nginx. */
static void test_hostile_fastcgi(void)
{
    unsigned char begin[8];
    char url[E2E_URL];
    static const unsigned char bad_version[16] = {2, 1, 0, 1, 0, 8, 0, 0};
    static const unsigned char unknown_type[8] = {1, 42, 0, 0, 0, 0, 0, 0};
    static char big[200 * 1024], out[65536];
    char script[TEST_PATH_MAX], stdout_text[8192];
    const char *index_vars[] = {"REQUEST_METHOD",
                                "GET",
                                "SCRIPT_FILENAME",
                                script,
                                "SCRIPT_NAME",
                                APP,
                                "REQUEST_URI",
                                APP,
                                "QUERY_STRING",
                                "",
                                "REMOTE_ADDR",
                                "127.0.0.1",
                                "SERVER_PROTOCOL",
                                "HTTP/1.1",
                                NULL};
    size_t n, len = 0;
    bool eof;
    int fd;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    snprintf(script, sizeof(script), "%s/app.cgi", e2e.app);

    exchange(bad_version, sizeof(bad_version), out, sizeof(out), 3000, &eof);
    CU_ASSERT(eof);
    exchange(bad_version, 3, out, sizeof(out), 200, &eof); /* truncated */
    /* The answer is one 16-byte record; the connection stays open. */
    n = exchange(unknown_type, sizeof(unknown_type), out, 16, 3000, &eof);
    CU_ASSERT(e2e_fcgi_has(out, n, 11, NULL, 0)); /* FCGI_UNKNOWN_TYPE */

    /* A name-value pair longer than its record. */
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    e2e_fcgi_send(fd, 1, 1, begin_body(begin, 1), 8);
    e2e_fcgi_send(fd, 4, 1,
                  "\x7f\x01"
                  "AB",
                  4);
    e2e_fcgi_send(fd, 4, 1, NULL, 0);
    e2e_fcgi_send(fd, 5, 1, NULL, 0);
    n = e2e_read_until_eof(fd, out, sizeof(out), 3000, &eof);
    CU_ASSERT(eof);
    CU_ASSERT(!e2e_fcgi_has(out, n, 6, stdout_text, sizeof(stdout_text)) ||
              strstr(stdout_text, "ok index") == NULL);
    close(fd);

    /* PARAMS over the 128 KiB cap. */
    memset(big, 'v', sizeof(big) - 1);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    e2e_fcgi_send(fd, 1, 1, begin_body(begin, 1), 8);
    for (int i = 0; i < 4; i++) {
        char rec[60000];
        len = 0;
        big[50000] = '\0';
        snprintf(rec, 16, "HTTP_X_%d", i);
        e2e_fcgi_pair(rec + 16, sizeof(rec) - 16, &len, rec, big);
        if (e2e_fcgi_send(fd, 4, 1, rec + 16, len) != 0) {
            break;
        }
    }
    n = e2e_read_until_eof(fd, out, sizeof(out), 3000, &eof);
    CU_ASSERT(eof);
    CU_ASSERT(e2e_fcgi_has(out, n, 6, stdout_text, sizeof(stdout_text)) &&
              strstr(stdout_text, "431") != NULL);
    close(fd);

    /* Still serving: a whole request over the socket, then through nginx. */
    CU_ASSERT_FATAL(test_proc_running(&e2e.fcgi));
    n = raw_request(1, index_vars, out, sizeof(out), &eof);
    CU_ASSERT(e2e_fcgi_has(out, n, 6, stdout_text, sizeof(stdout_text)));
    CU_ASSERT_PTR_NOT_NULL(strstr(stdout_text, "ok index"));
    CU_ASSERT(e2e_fcgi_has(out, n, 3, NULL, 0)); /* END_REQUEST */
    CU_ASSERT(eof);
    CU_ASSERT_EQUAL(e2e_status((const char *[]){e2e_url(url, APP), NULL}), 200);
}

/* The AUTHORIZER role straight over the socket: no body is read, 200
 * allows, the third bank update gets the 429. */
static void test_raw_authorizer_role(void)
{
    const char *vars[] = {
        "REQUEST_METHOD", "POST",       "REQUEST_URI", APP "?op=bank",
        "QUERY_STRING",   "op=bank",    "HTTP_COOKIE", "member=raw",
        "REMOTE_ADDR",    "192.0.2.10", NULL};
    char out[16384], text[8192];
    bool eof;
    size_t n;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    for (int i = 0; i < 3; i++) {
        n = raw_request(2, vars, out, sizeof(out), &eof);
        CU_ASSERT(e2e_fcgi_has(out, n, 6, text, sizeof(text)));
        CU_ASSERT(e2e_fcgi_has(out, n, 3, NULL, 0));
        if (i < 2) {
            CU_ASSERT(strncmp(text, "Status: 200", 11) == 0 ||
                      strstr(text, "Status:") == NULL);
            CU_ASSERT_PTR_NULL(strstr(text, "ok bank"));
        } else {
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "Status: 429"));
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "Retry-After: "));
        }
    }
}

/* A header sent twice reaches suspect-fcgi as two variables (nginx 1.22)
 * and is counted as the one merged value the program reads: a varying
 * decoy first copy makes another identity for the program too, never a
 * free request for the victim's account, whose plain requests get the 429
 * after the limit (3).  Repeated cookies arrive joined with "; ". */
static void test_repeated_header(void)
{
    char url[E2E_URL];
    char decoy[64], want[96];
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("app.cgi",
                                  "#!/bin/sh\n"
                                  "printf 'Status: 200 OK\\r\\n"
                                  "Content-Type: text/plain\\r\\n\\r\\n"
                                  "[%s] [%s]\\n' \"$HTTP_X_ACCOUNT_ID\" "
                                  "\"$HTTP_COOKIE\"\n") == 0);
    for (int i = 0; i < 4; i++) {
        snprintf(decoy, sizeof(decoy), "X-Account-Id: decoy-%d", i);
        snprintf(want, sizeof(want), "[decoy-%d, victim] [a=1; b=2]\n", i);
        CU_ASSERT(
            e2e_http(&r, (const char *[]){
                             "-H", decoy, "-H", "X-Account-Id: victim", "-H",
                             "Cookie: a=1", "-H", "Cookie: b=2", "-d", "x=1",
                             e2e_url(url, APP "?op=resend"), NULL}) == 0);
        CU_ASSERT(e2e_body_starts(&r, 200, want));
        test_http_free(&r);
        CU_ASSERT_EQUAL(e2e_status((const char *[]){
                            "-H", "X-Account-Id: victim", "-d", "x=1",
                            e2e_url(url, APP "?op=resend"), NULL}),
                        i < 3 ? 200 : 429);
    }
}

int e2e_add_ops_tests(CU_pSuite s)
{
    if (CU_add_test(s, "hot reload under load", test_hot_reload) == NULL ||
        CU_add_test(s, "broken limits kept", test_broken_limits_kept) == NULL ||
        CU_add_test(s, "SIGHUP reload", test_sighup_reload) == NULL ||
        CU_add_test(s, "SIGTERM drains", test_sigterm_drains) == NULL ||
        CU_add_test(s, "SIGTERM grace", test_sigterm_grace) == NULL ||
        CU_add_test(s, "hostile FastCGI", test_hostile_fastcgi) == NULL ||
        CU_add_test(s, "raw authorizer role", test_raw_authorizer_role) ==
            NULL ||
        CU_add_test(s, "repeated header", test_repeated_header) == NULL) {
        return -1;
    }
    return 0;
}
