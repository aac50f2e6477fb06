/*
 * test_e2e_faults_app.c - suite "faults": the application behind
 * suspect-fcgi fails.
 *
 * Upstream FastCGI (nginx -> suspect-fcgi -> app): the fake app of
 * test_e2e_faults_fake.c hangs (504 at <Upstream timeout>), answers bad
 * header lines, a body without headers, a header block of 1 MiB, binary
 * junk (502 each), dies mid-response with a reset, or closes a whole
 * response without END_REQUEST; php-cgi itself killed (-9) in the middle
 * of a response, then started again.  CGI (nginx -> suspect-fcgi ->
 * shell scripts): a script killed mid-response, one that hangs with a
 * child of its own (504 at <Cgi timeout>, both killed), binary junk, no
 * header block, an endless header block.
 *
 * Each test checks the answer the client got, that the daemon still runs
 * and answers, that a good request works afterwards, and that the
 * daemon's descriptors and child processes come back to what they were
 * before the faults (a pooled connection lives 1 s, a reaped script
 * leaves nothing).
 *
 * The client leaving first: while the app hangs, the client closes its
 * connection (nginx then closes its FastCGI connection), or a web server
 * speaking straight to the daemon sends ABORT_REQUEST; the daemon must
 * close its connection to the app at once, long before <Upstream
 * timeout>, and never pool it.
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "test_e2e_faults.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define PHP_CONF  "suspect-php.xml"
#define PHP_NGINX "nginx/suspect-php.conf"
/* How much later than its timeout a 504 may come, at most. */
#define LATE_MS 2000
/* How long descriptors and processes may take to come back (a pooled
 * upstream connection is closed after 1 s idle). */
#define SETTLE_MS 4000

void flt_app_cleanup(void)
{
    flt_fake_stop();
}

int flt_start_upstream(const char *timeout, const char *const extra[])
{
    char pinned[TEST_PATH_MAX + 32], up[64];
    const char *edits[] = {pinned, "", "<Upstream ", up, NULL};

    snprintf(pinned, sizeof(pinned), "scriptFilename=\"%s/index.php\"",
             e2e.app);
    snprintf(up, sizeof(up), "<Upstream timeout=\"%s\" ", timeout);
    /* nginx passes only scripts that exist (try_files) */
    snprintf(pinned + sizeof(pinned) / 2, sizeof(pinned) / 2, "%s/index.php",
             e2e.app);
    if (access(pinned + sizeof(pinned) / 2, F_OK) != 0 &&
        test_write_file(pinned + sizeof(pinned) / 2, "", 0) != 0) {
        return -1;
    }
    return flt_start_stack(PHP_CONF, PHP_NGINX, edits, extra);
}

/* ---- the fake app ------------------------------------------------------ */

static void test_app_hangs(void)
{
    flt_resp_t r;
    int fds;

    CU_ASSERT_EQUAL_FATAL(flt_fake_start(FK_HANG), 0);
    CU_ASSERT_EQUAL_FATAL(flt_start_upstream("1", NULL), 0);
    fds = flt_fd_count(e2e.fcgi.pid);
    flt_http(&r, "GET", "/index.php?op=hang", NULL, 10000);
    CU_ASSERT_EQUAL(r.status, 504);
    CU_ASSERT_TRUE(r.ms >= 900 && r.ms < test_scale_ms(1000 + LATE_MS));
    /* suspect-fcgi closed its connection to the app (the fake app's
     * thread notices a moment later) */
    CU_ASSERT_TRUE(flt_fake_wait_peer_gone(1, 1000));
    CU_ASSERT_EQUAL(flt_fake_peer_gone(NULL), 1);
    CU_ASSERT_TRUE(flt_daemon_alive());
    CU_ASSERT_TRUE(flt_settle(e2e.fcgi.pid, fds, 0, SETTLE_MS));
    CU_ASSERT_EQUAL(flt_log_count("no progress within the timeout"), 1);
}

/* A response the client can tell is broken: no answer at all, or a
 * status and a body that stops short of what its framing announced
 * (nginx sends no answer when it has not sent the header yet). */
#define CUT (-1)

typedef struct garbage {
    flt_fake_mode_t mode;
    const char *name;
    int status; /* what the client must see, or CUT */
} garbage_t;

/* Whether r is what status says. */
static bool answer_is(const flt_resp_t *r, int status)
{
    if (status == CUT) {
        return !r->complete && (r->status == 0 || r->status == 200);
    }
    return r->status == status && r->complete;
}

static void test_app_garbage(void)
{
    static const garbage_t cases[] = {
        {FK_BAD_HEADERS, "bad header lines", 502},
        {FK_NO_HEADERS, "no header block", 502},
        {FK_HUGE_HEADERS, "1 MiB header block", 502},
        {FK_JUNK, "binary junk", 502},
        {FK_CUT, "reset mid-response", CUT},
        {FK_NO_END, "no END_REQUEST", CUT},
    };
    flt_resp_t r;
    int fds, n = 0;

    CU_ASSERT_EQUAL_FATAL(flt_fake_start(FK_OK), 0);
    CU_ASSERT_EQUAL_FATAL(flt_start_upstream("5", NULL), 0);
    fds = flt_fd_count(e2e.fcgi.pid);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const garbage_t *c = &cases[i];

        flt_fake_set_mode(c->mode);
        flt_http(&r, "GET", "/index.php?op=x", NULL, 10000);
        if (!answer_is(&r, c->status)) {
            fprintf(stderr, "faults: %s: %d %s, want %d\n", c->name, r.status,
                    r.complete ? "complete" : "cut", c->status);
            CU_FAIL("the client got the wrong answer to a broken app");
        }
        CU_ASSERT_TRUE(r.ms < test_scale_ms(5000));
        CU_ASSERT_TRUE(flt_daemon_alive());
        /* a good answer right after: no broken connection was pooled */
        flt_fake_set_mode(FK_OK);
        flt_http(&r, "GET", "/index.php?op=x", NULL, 10000);
        CU_ASSERT_TRUE(r.status == 200 && strstr(r.body, "ok fake") != NULL);
        n += 2;
    }
    CU_ASSERT_EQUAL(flt_fake_requests(), n);
    CU_ASSERT_TRUE(flt_settle(e2e.fcgi.pid, fds, 0, SETTLE_MS));
}

/* ---- php-cgi killed mid-response --------------------------------------- */

static const char crash_php[] = "<?php\n"
                                "header('Content-Type: text/plain');\n"
                                "echo str_repeat('x', 100000);\n"
                                "flush();\n"
                                "exec('kill -9 ' . getmypid());\n"
                                "echo 'never';\n";

static const char hello_php[] = "<?php echo \"hello from php\\n\";\n";

static void test_php_killed(void)
{
    char path[TEST_PATH_MAX];
    flt_resp_t r;
    int fds;

    snprintf(path, sizeof(path), "%s/crash.php", e2e.app);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, crash_php, strlen(crash_php)),
                          0);
    snprintf(path, sizeof(path), "%s/hello.php", e2e.app);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, hello_php, strlen(hello_php)),
                          0);
    CU_ASSERT_EQUAL_FATAL(test_php_start(&e2e.php, e2e.dir, e2e.php_sock, NULL),
                          0);
    CU_ASSERT_EQUAL_FATAL(flt_start_upstream("5", NULL), 0);
    fds = flt_fd_count(e2e.fcgi.pid);
    CU_ASSERT_EQUAL(flt_http(&r, "GET", "/hello.php", NULL, 10000), 200);
    flt_http(&r, "GET", "/crash.php", NULL, 10000);
    /* the status and 100 kB went out before the crash: the client must
     * be able to tell that the rest is missing */
    CU_ASSERT_TRUE(answer_is(&r, CUT));
    CU_ASSERT_TRUE(test_proc_wait(&e2e.php, 3000) == 0);
    CU_ASSERT_TRUE(flt_daemon_alive());
    /* no app: a clean 502 from the daemon */
    CU_ASSERT_EQUAL(flt_http(&r, "GET", "/hello.php", NULL, 10000), 502);
    unlink(e2e.php_sock);
    CU_ASSERT_EQUAL_FATAL(test_php_start(&e2e.php, e2e.dir, e2e.php_sock, NULL),
                          0);
    CU_ASSERT_EQUAL(flt_http(&r, "GET", "/hello.php", NULL, 10000), 200);
    CU_ASSERT_TRUE(strstr(r.body, "hello from php") != NULL);
    CU_ASSERT_TRUE(flt_settle(e2e.fcgi.pid, fds, 0, SETTLE_MS));
}

/* ---- CGI scripts -------------------------------------------------------- */

typedef struct script {
    const char *name, *text;
    int status; /* or CUT */
} script_t;

static const script_t scripts[] = {
    {"crash.cgi",
     "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\n"
     "head -c 100000 /dev/zero | tr '\\000' x\nkill -9 $$\n",
     CUT},
    {"hang.cgi", "#!/bin/sh\nsleep 30 &\nsleep 30\n", 504},
    {"junk.cgi", "#!/bin/sh\nprintf '\\377\\376\\001junk\\000\\002'\n", 502},
    {"nohead.cgi", "#!/bin/sh\necho 'just a body'\n", 502},
    {"badhead.cgi", "#!/bin/sh\nprintf 'not a header\\r\\n\\r\\nbody\\n'\n",
     502},
    {"huge.cgi", "#!/bin/sh\nwhile :; do echo 'X-Filler: 0123456789'; done\n",
     502},
};

static void test_cgi_faults(void)
{
    char timeout[32];
    const char *edits[] = {"timeout=\"30\"", timeout, NULL};
    char path[64];
    flt_resp_t r;
    int fds;

    /* 1 s (scaled): the hanging script is cut then; the others, which
     * end by themselves, must not be on a slow machine */
    snprintf(timeout, sizeof(timeout), "timeout=\"%u\"",
             test_scale_ms(1000) / 1000);

    for (size_t i = 0; i < sizeof(scripts) / sizeof(*scripts); i++) {
        CU_ASSERT_EQUAL_FATAL(e2e_write_cgi(scripts[i].name, scripts[i].text),
                              0);
    }
    CU_ASSERT_EQUAL_FATAL(e2e_start_cgi(edits), 0);
    fds = flt_fd_count(e2e.fcgi.pid);
    for (size_t i = 0; i < sizeof(scripts) / sizeof(*scripts); i++) {
        const script_t *s = &scripts[i];

        snprintf(path, sizeof(path), "/%s", s->name);
        flt_http(&r, "GET", path, NULL, 10000);
        if (!answer_is(&r, s->status)) {
            fprintf(stderr, "faults: %s: %d %s, want %d\n", s->name, r.status,
                    r.complete ? "complete" : "cut", s->status);
            CU_FAIL("the client got the wrong answer to a broken script");
        }
        CU_ASSERT_TRUE(r.ms < test_scale_ms(1000 + LATE_MS));
        CU_ASSERT_TRUE(flt_daemon_alive());
        CU_ASSERT_TRUE(flt_settle(e2e.fcgi.pid, fds, 0, SETTLE_MS));
    }
    CU_ASSERT_EQUAL(
        flt_http(&r, "GET", "/app.cgi?op=promo&member=a&code=b", NULL, 10000),
        200);
}

/* ---- the client leaves first -------------------------------------------- */

static void test_client_leaves(void)
{
    flt_resp_t r;
    long long gone_at, left_at;
    int fds;

    CU_ASSERT_EQUAL_FATAL(flt_fake_start(FK_HANG), 0);
    CU_ASSERT_EQUAL_FATAL(flt_start_upstream("30", NULL), 0);
    fds = flt_fd_count(e2e.fcgi.pid);
    /* the client gives up after 1 s; nginx closes its connection */
    flt_http(&r, "GET", "/index.php?op=hang", NULL, 1000);
    left_at = mono_ms();
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(flt_fake_requests(), 1);
    CU_ASSERT_TRUE(flt_fake_wait_peer_gone(1, 5000));
    CU_ASSERT_EQUAL_FATAL(flt_fake_peer_gone(&gone_at), 1);
    fprintf(stderr,
            "faults: client left: the app's connection closed %lld "
            "ms later\n",
            gone_at - left_at);
    /* within a few seconds, not the 30 of the timeout */
    CU_ASSERT_TRUE(gone_at - left_at < test_scale_ms(3000));
    CU_ASSERT_TRUE(
        flt_log_wait("request abandoned: the web server closed", 1, 3000));
    CU_ASSERT_TRUE(flt_daemon_alive());
    CU_ASSERT_TRUE(flt_settle(e2e.fcgi.pid, fds, 0, SETTLE_MS));
}

/* A GET of /index.php straight to suspect-fcgi on a kept connection. */
static int send_get(int fd)
{
    static const char *const vars[] = {
        "REQUEST_METHOD", "GET",       "REQUEST_URI", "/index.php?op=abort",
        "QUERY_STRING",   "op=abort",  "SCRIPT_NAME", "/index.php",
        "REMOTE_ADDR",    "127.0.0.1", NULL};
    static const unsigned char begin[8] = {0, 1, 1}; /* responder, keep */
    char params[1024];
    size_t len = 0;

    for (size_t i = 0; vars[i] != NULL; i += 2) {
        if (e2e_fcgi_pair(params, sizeof(params), &len, vars[i], vars[i + 1]) !=
            0) {
            return -1;
        }
    }
    return e2e_fcgi_send(fd, 1, 1, begin, 8) == 0 &&
                   e2e_fcgi_send(fd, 4, 1, params, len) == 0 &&
                   e2e_fcgi_send(fd, 4, 1, NULL, 0) == 0 &&
                   e2e_fcgi_send(fd, 5, 1, NULL, 0) == 0
               ? 0
               : -1;
}

static void test_abort_request(void)
{
    char buf[4096];
    long long sent_at, gone_at;
    size_t n;
    bool eof;
    int fd, fds;

    CU_ASSERT_EQUAL_FATAL(flt_fake_start(FK_HANG), 0);
    CU_ASSERT_EQUAL_FATAL(flt_start_upstream("30", NULL), 0);
    fds = flt_fd_count(e2e.fcgi.pid);
    fd = e2e_fcgi_connect();
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(send_get(fd), 0);
    CU_ASSERT_TRUE(flt_fake_wait_requests(1, 5000));
    sent_at = mono_ms();
    CU_ASSERT_EQUAL(e2e_fcgi_send(fd, 2, 1, NULL, 0), 0); /* ABORT_REQUEST */
    /* the request ends (END_REQUEST) and the kept connection stays */
    n = 0;
    eof = false;
    for (long long end = sent_at + test_scale_ms(3000);
         !eof && mono_ms() < end && !e2e_fcgi_has(buf, n, 3, NULL, 0);) {
        n += e2e_read_until_eof(fd, buf + n, sizeof(buf) - n, 50, &eof);
    }
    CU_ASSERT_TRUE(e2e_fcgi_has(buf, n, 3, NULL, 0));
    CU_ASSERT_FALSE(eof);
    CU_ASSERT_TRUE(flt_fake_wait_peer_gone(1, 3000));
    CU_ASSERT_EQUAL(flt_fake_peer_gone(&gone_at), 1);
    fprintf(stderr,
            "faults: ABORT_REQUEST: the app's connection closed %lld "
            "ms later\n",
            gone_at - sent_at);
    CU_ASSERT_TRUE(gone_at - sent_at < test_scale_ms(3000));
    CU_ASSERT_TRUE(
        flt_log_wait("request abandoned: the web server aborted", 1, 3000));
    close(fd);
    CU_ASSERT_TRUE(flt_daemon_alive());
    CU_ASSERT_TRUE(flt_settle(e2e.fcgi.pid, fds, 0, SETTLE_MS));
}

int flt_add_app_tests(CU_pSuite s)
{
    return CU_add_test(s, "app hangs: 504, connection closed",
                       test_app_hangs) == NULL ||
                   CU_add_test(s, "app answers garbage: 502 or a cut",
                               test_app_garbage) == NULL ||
                   CU_add_test(s, "php-cgi killed mid-response",
                               test_php_killed) == NULL ||
                   CU_add_test(s, "CGI crash, hang, garbage",
                               test_cgi_faults) == NULL ||
                   CU_add_test(s, "client leaves: app connection closed",
                               test_client_leaves) == NULL ||
                   CU_add_test(s, "ABORT_REQUEST: app connection closed",
                               test_abort_request) == NULL
               ? -1
               : 0;
}
