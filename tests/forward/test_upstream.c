/*
 * test_upstream.c - suite "upstream": the FastCGI client
 * (middleware/forward/upstream.c) against a
 * real php-cgi: `php-cgi -n -b ADDR` started per test with its own
 * PHP_FCGI_CHILDREN and PHP_FCGI_MAX_REQUESTS, over TCP and a unix
 * socket, with cgi.force_redirect on (so REDIRECT_STATUS must be sent).
 * Scripts are written into the suite's temp dir; each php-cgi runs in its
 * own process group and is killed and reaped after its test.
 *
 * Here: a GET with Status and headers, SCRIPT_FILENAME from the
 * configuration over a unix socket, a form POST with and without
 * CONTENT_LENGTH, the 413, connection reuse, an upstream that is down
 * (502), a slow script (504), STDERR in the log.  Large bodies both ways,
 * restarts, a client that goes away and threads are in
 * test_upstream_stream.c; protocol corner cases against a FastCGI server
 * written in the test are in test_upstream_fake.c; the runtime's reloads
 * with an <Upstream> in test_upstream_runtime.c.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fcgi/listen.h"
#include "helpers/redisserver.h"
#include "suites.h"
#include "upstream_test.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

char *up_dir; /* the suite's scripts */

static const struct {
    const char *name;
    const char *code;
} scripts[] = {
    {"hello.php", "<?php http_response_code(201); header('X-Test: yes');\n"
                  "echo 'hello ', $_SERVER['REQUEST_METHOD'], ' ',\n"
                  "     $_GET['t'] ?? '';\n"},
    {"form.php", "<?php echo 'CL=', $_SERVER['CONTENT_LENGTH'] ?? '-',\n"
                 "  ';a=', $_POST['a'] ?? '', ';b=', $_POST['b'] ?? '';\n"},
    /* Writes n bytes before it reads the body, then checks the body
     * against the pattern of test_pattern(). */
    {"big.php", "<?php $n = (int)$_GET['n']; echo str_repeat('x', $n);\n"
                "$in = file_get_contents('php://input');\n"
                "$b = ''; for ($i = 0; $i < 251; $i++) { $b .= chr($i); }\n"
                "$len = strlen($in);\n"
                "$exp = substr(str_repeat($b, intdiv($len, 251) + 1), 0, "
                "$len);\n"
                "echo \"\\n\", $len, $in === $exp ? ' OK' : ' BAD';\n"},
    {"sleep.php", "<?php usleep(1500000); echo 'late';\n"},
    {"stderr.php", "<?php error_log('suspect-marker one');\n"
                   "error_log(\"suspect-marker two\\nsecond line\");\n"
                   "if (isset($_GET['long'])) {\n"
                   "  error_log(str_repeat('L', 3000)); }\n"
                   "for ($i = 0; $i < (int)($_GET['n'] ?? 0); $i++) {\n"
                   "  error_log(\"spam $i\"); }\n"
                   "echo 'fine';\n"},
    {"env.php", "<?php foreach (['SCRIPT_FILENAME', 'REDIRECT_STATUS',\n"
                "  'HTTP_PROXY'] as $k) {\n"
                "  echo $k, '=', getenv($k) === false ? '-' : getenv($k), "
                "\"\\n\"; }\n"},
};

/* ---- php-cgi ---------------------------------------------------------- */

int up_capture_start(void)
{
    char path[4200];
    int saved, fd;

    snprintf(path, sizeof(path), "%s/stderr.log", up_dir);
    fflush(stderr);
    saved = dup(2);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || fd < 0) {
        close(fd);
        return saved;
    }
    dup2(fd, 2);
    close(fd);
    return saved;
}

char *up_capture_end(int saved)
{
    char path[4200];

    if (saved < 0) {
        return NULL;
    }
    dup2(saved, 2);
    close(saved);
    snprintf(path, sizeof(path), "%s/stderr.log", up_dir);
    return test_read_file(path, NULL);
}

void up_php_stop(up_php_t *p)
{
    if (p->pid > 0) {
        kill(-p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->pid = 0;
    }
}

/* Waits (deadline 5 s) until addr accepts connections. */
static int wait_ready(up_php_t *p)
{
    long long deadline = mono_ms() + test_scale_ms(5000);

    while (mono_ms() < deadline) {
        int fd, st;

        if (mw_connect(p->addr, 200, &fd, NULL) == SUSPECT_OK) {
            close(fd);
            return 0;
        }
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            return -1;
        }
        usleep(5000);
    }
    return -1;
}

static void php_exec(const char *bind, int children, int max_requests)
{
    char env[32], log[4200];
    int fd;

    setpgid(0, 0);
    snprintf(env, sizeof(env), "%d", children);
    setenv("PHP_FCGI_CHILDREN", env, 1);
    snprintf(env, sizeof(env), "%d", max_requests);
    setenv("PHP_FCGI_MAX_REQUESTS", env, 1);
    snprintf(log, sizeof(log), "%s/php.log", up_dir);
    fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    closefrom(3); /* none of the runner's descriptors (see procs.c) */
    execlp("php-cgi", "php-cgi", "-n", "-d", "cgi.force_redirect=1", "-d",
           "fastcgi.logging=1", "-b", bind, (char *)NULL);
    _exit(127);
}

/* Starts php-cgi on a free loopback port or a unix socket in up_dir. */
int up_php_start(up_php_t *p, bool unix_sock, int children, int max_requests)
{
    char bind[600];

    memset(p, 0, sizeof(*p));
    if (unix_sock) {
        snprintf(bind, sizeof(bind), "%s/php.sock", up_dir);
        unlink(bind);
        snprintf(p->addr, sizeof(p->addr), "unix:%s", bind);
    } else {
        snprintf(bind, sizeof(bind), "127.0.0.1:%d", test_free_port());
        snprintf(p->addr, sizeof(p->addr), "tcp:%s", bind);
    }
    p->pid = fork();
    if (p->pid == 0) {
        php_exec(bind, children, max_requests);
    }
    if (p->pid < 0) {
        return -1;
    }
    setpgid(p->pid, p->pid);
    if (wait_ready(p) != 0) {
        fprintf(stderr, "php-cgi did not start on %s\n", p->addr);
        up_php_stop(p);
        return -1;
    }
    return 0;
}

mw_upstream_t *up_client(const char *addr, unsigned timeout_ms)
{
    mw_upstream_opts_t o;
    mw_upstream_t *u = NULL;

    memset(&o, 0, sizeof(o));
    o.address = addr;
    o.timeout_ms = timeout_ms;
    o.max_idle = 16;
    CU_ASSERT_EQUAL_FATAL(mw_upstream_new(&o, &u, NULL), SUSPECT_OK);
    return u;
}

/* ---- requests --------------------------------------------------------- */

const char *const *up_vars(up_vars_t *v, const char *method, const char *script,
                           const char *query, long long clen, const char *ctype)
{
    int n = 0, s = 0;

    snprintf(v->store[s], sizeof(v->store[s]), "SCRIPT_FILENAME=%s/%s", up_dir,
             script);
    v->list[n++] = v->store[s++];
    snprintf(v->store[s], sizeof(v->store[s]), "REQUEST_METHOD=%s", method);
    v->list[n++] = v->store[s++];
    snprintf(v->store[s], sizeof(v->store[s]), "QUERY_STRING=%s", query);
    v->list[n++] = v->store[s++];
    if (clen >= 0) {
        snprintf(v->store[s], sizeof(v->store[s]), "CONTENT_LENGTH=%lld", clen);
        v->list[n++] = v->store[s++];
    }
    if (ctype != NULL) {
        snprintf(v->store[s], sizeof(v->store[s]), "CONTENT_TYPE=%s", ctype);
        v->list[n++] = v->store[s++];
    }
    v->list[n++] = "SERVER_PROTOCOL=HTTP/1.1";
    v->list[n] = NULL;
    return v->list;
}

/* Runs a GET of script with query; the output is in r (freed by the
 * caller with fakereq_free). */
int up_get(mw_upstream_t *u, fakereq_t *r, const char *script,
           const char *query)
{
    up_vars_t v;
    mw_fwd_result_t res;

    fakereq_init(r, up_vars(&v, "GET", script, query, -1, NULL), NULL, 0);
    /* fakereq's pointers are into v: copy them before v goes away. */
    if (mw_upstream_forward(u, &r->req, &res, NULL) != SUSPECT_OK &&
        res.status == 0) {
        return -1;
    }
    return res.status;
}

/* ---- tests ------------------------------------------------------------ */

static void test_get_hello(void)
{
    up_php_t p;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    up_vars_t v;
    mw_fwd_result_t res;

    CU_ASSERT_FATAL(up_php_start(&p, false, 0, 500) == 0);
    u = up_client(p.addr, 5000);
    fakereq_init(&r, up_vars(&v, "GET", "hello.php", "t=abc", -1, NULL), NULL,
                 0);
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_EQUAL(res.exit_status, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r.out);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Status: 201 Created\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "X-Test: yes\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\r\n\r\nhello GET abc"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "Security Alert"));
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.requests, 1);
    CU_ASSERT_EQUAL(st.connects, 1);
    CU_ASSERT_EQUAL(st.failures, 0);
    mw_upstream_free(u);
    up_php_stop(&p);
}

/* Over a unix socket, with SCRIPT_FILENAME set by the configuration and
 * HTTP_PROXY dropped. */
static void test_unix_socket_script(void)
{
    char script[4200];
    const char *const list[] = {"SCRIPT_FILENAME=/nonexistent.php",
                                "REQUEST_METHOD=GET",
                                "HTTP_PROXY=http://evil.example:1/", NULL};
    up_php_t p;
    mw_upstream_opts_t o;
    mw_upstream_t *u = NULL;
    fakereq_t r;
    mw_fwd_result_t res;

    CU_ASSERT_FATAL(up_php_start(&p, true, 0, 500) == 0);
    snprintf(script, sizeof(script), "%s/env.php", up_dir);
    memset(&o, 0, sizeof(o));
    o.address = p.addr;
    o.script_filename = script;
    CU_ASSERT_EQUAL_FATAL(mw_upstream_new(&o, &u, NULL), SUSPECT_OK);
    fakereq_init(&r, list, NULL, 0);
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r.out);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, script));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "REDIRECT_STATUS=200\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "HTTP_PROXY=-\n"));
    fakereq_free(&r);
    mw_upstream_free(u);
    up_php_stop(&p);
}

/* A form POST with and without CONTENT_LENGTH (then buffered and
 * counted by us), read in small pieces. */
static void test_post_form(void)
{
    static const char body[] = "a=1&b=two";
    up_php_t p;
    mw_upstream_t *u;
    fakereq_t r;
    up_vars_t v;
    mw_fwd_result_t res;
    const char *ct = "application/x-www-form-urlencoded";

    CU_ASSERT_FATAL(up_php_start(&p, false, 0, 500) == 0);
    u = up_client(p.addr, 5000);
    for (int with_cl = 1; with_cl >= 0; with_cl--) {
        fakereq_init(&r,
                     up_vars(&v, "POST", "form.php", "",
                             with_cl ? (long long)strlen(body) : -1, ct),
                     body, strlen(body));
        r.chunk = 3;
        CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, NULL), SUSPECT_OK);
        CU_ASSERT_EQUAL(res.status, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r.out);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\r\n\r\nCL=9;a=1;b=two"));
        fakereq_free(&r);
    }
    mw_upstream_free(u);
    up_php_stop(&p);
}

/* Without CONTENT_LENGTH a body over max_body is refused before any
 * connection is made. */
static void test_max_body_413(void)
{
    char body[2000];
    mw_upstream_opts_t o;
    mw_upstream_t *u = NULL;
    mw_upstream_stats_t st;
    fakereq_t r;
    up_vars_t v;
    mw_fwd_result_t res;

    memset(body, 'a', sizeof(body));
    memset(&o, 0, sizeof(o));
    o.address = "tcp:127.0.0.1:1"; /* never reached */
    o.max_body = 1000;
    CU_ASSERT_EQUAL_FATAL(mw_upstream_new(&o, &u, NULL), SUSPECT_OK);
    fakereq_init(&r, up_vars(&v, "POST", "form.php", "", -1, NULL), body,
                 sizeof(body));
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 413);
    CU_ASSERT_EQUAL(r.out_len, 0);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 0);
    CU_ASSERT_EQUAL(st.failures, 0);
    fakereq_free(&r);
    mw_upstream_free(u);
}

/* Sequential requests share one connection. */
static void test_reuse(void)
{
    up_php_t p;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;

    CU_ASSERT_FATAL(up_php_start(&p, false, 0, 500) == 0);
    u = up_client(p.addr, 5000);
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(up_get(u, &r, "hello.php", "t=x"), 0);
        CU_ASSERT(r.out != NULL && strstr(r.out, "hello GET x") != NULL);
        fakereq_free(&r);
    }
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.requests, 10);
    CU_ASSERT_EQUAL(st.connects, 1);
    CU_ASSERT_EQUAL(st.reused, 9);
    CU_ASSERT_EQUAL(st.retries, 0);
    mw_upstream_free(u);
    up_php_stop(&p);
}

/* Nobody listening: 502 at once, over TCP and a unix socket. */
static void test_upstream_down(void)
{
    char addr[600];
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    up_vars_t v;
    mw_fwd_result_t res;
    suspect_err_t err;
    long long t0 = mono_ms();

    snprintf(addr, sizeof(addr), "tcp:127.0.0.1:%d", test_free_port());
    u = up_client(addr, 5000);
    suspect_err_clear(&err);
    fakereq_init(&r, up_vars(&v, "GET", "hello.php", "", -1, NULL), NULL, 0);
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(res.status, 502);
    CU_ASSERT_FALSE(res.timed_out);
    CU_ASSERT_EQUAL(r.out_len, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "Connection refused"));
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.failures, 1);
    mw_upstream_free(u);
    snprintf(addr, sizeof(addr), "unix:%s/nobody.sock", up_dir);
    u = up_client(addr, 5000);
    CU_ASSERT_EQUAL(up_get(u, &r, "hello.php", ""), 502);
    fakereq_free(&r);
    mw_upstream_free(u);
    CU_ASSERT(mono_ms() - t0 < test_scale_ms(500));
}

/* A script that sleeps past timeout_ms: 504, in about timeout_ms. */
static void test_timeout_504(void)
{
    up_php_t p;
    mw_upstream_t *u;
    fakereq_t r;
    up_vars_t v;
    mw_fwd_result_t res;
    suspect_err_t err;
    long long t0;

    CU_ASSERT_FATAL(up_php_start(&p, false, 0, 500) == 0);
    u = up_client(p.addr, 300);
    suspect_err_clear(&err);
    fakereq_init(&r, up_vars(&v, "GET", "sleep.php", "", -1, NULL), NULL, 0);
    t0 = mono_ms();
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, &err),
                    SUSPECT_E_TIMEOUT);
    CU_ASSERT(mono_ms() - t0 < test_scale_ms(1200));
    CU_ASSERT_EQUAL(res.status, 504);
    CU_ASSERT(res.timed_out);
    CU_ASSERT_EQUAL(err.code, SUSPECT_E_TIMEOUT);
    CU_ASSERT_EQUAL(r.out_len, 0);
    fakereq_free(&r);
    mw_upstream_free(u);
    up_php_stop(&p);
}

/* Runs of c in s that are longer than 100 bytes, and the longest. */
static int count_runs(const char *s, char c)
{
    int runs = 0;

    while (*s != '\0') {
        size_t k = strspn(s, (char[]){c, '\0'});

        runs += k > 100;
        s += k > 0 ? k : 1;
    }
    return runs;
}

static size_t longest_run(const char *s, char c)
{
    size_t best = 0;

    while (*s != '\0') {
        size_t k = strspn(s, (char[]){c, '\0'});

        best = k > best ? k : best;
        s += k > 0 ? k : 1;
    }
    return best;
}

/* error_log() arrives as STDERR records: logged line by line, the
 * response intact; past UP_STDERR_LINES lines the rest is counted. */
static void test_stderr_logged(void)
{
    up_php_t p;
    mw_upstream_t *u;
    fakereq_t r;
    char *log;
    int saved, status;

    CU_ASSERT_FATAL(up_php_start(&p, false, 0, 500) == 0);
    u = up_client(p.addr, 5000);
    saved = up_capture_start();
    status = up_get(u, &r, "stderr.php", "long=1");
    log = up_capture_end(saved);
    CU_ASSERT_EQUAL(status, 0);
    CU_ASSERT(r.out != NULL && strstr(r.out, "\r\n\r\nfine") != NULL);
    fakereq_free(&r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "warning: upstream stderr: "
                                       "suspect-marker one\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "suspect-marker two\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "upstream stderr: second line\n"));
    CU_ASSERT_PTR_NULL(strstr(log, "dropped"));
    /* A 3000-byte line is logged in pieces of UP_STDERR_LINE bytes. */
    CU_ASSERT_EQUAL(count_runs(log, 'L'), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, ": LLL"));
    CU_ASSERT_EQUAL(longest_run(log, 'L'), 1024);
    free(log);
    /* 3 + 100 lines: 32 logged, the rest dropped and counted. */
    saved = up_capture_start();
    status = up_get(u, &r, "stderr.php", "n=100");
    log = up_capture_end(saved);
    CU_ASSERT_EQUAL(status, 0);
    CU_ASSERT(r.out != NULL && strstr(r.out, "\r\n\r\nfine") != NULL);
    fakereq_free(&r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "upstream stderr: spam 28\n"));
    CU_ASSERT_PTR_NULL(strstr(log, "spam 29"));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "more bytes dropped"));
    free(log);
    mw_upstream_free(u);
    up_php_stop(&p);
}

static void test_bad_address(void)
{
    mw_upstream_opts_t o;
    mw_upstream_t *u = NULL;
    suspect_err_t err;

    memset(&o, 0, sizeof(o));
    o.address = "127.0.0.1:9000";
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_upstream_new(&o, &u, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NULL(u);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "127.0.0.1:9000"));
    o.address = NULL;
    CU_ASSERT_EQUAL(mw_upstream_new(&o, &u, NULL), SUSPECT_E_INVAL);
    mw_upstream_free(NULL);
}

static int suite_init(void)
{
    char path[4200];

    signal(SIGPIPE, SIG_IGN);
    up_dir = test_mkdtemp();
    if (up_dir == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", up_dir, scripts[i].name);
        if (test_write_file(path, scripts[i].code, strlen(scripts[i].code)) !=
            0) {
            return -1;
        }
    }
    return 0;
}

static int suite_clean(void)
{
    if (up_dir != NULL) {
        test_rmtree(up_dir);
        free(up_dir);
        up_dir = NULL;
    }
    return 0;
}

int register_upstream_suite(void)
{
    CU_pSuite s = CU_add_suite("upstream", suite_init, suite_clean);

    if (s == NULL || !CU_add_test(s, "get hello", test_get_hello) ||
        !CU_add_test(s, "unix socket, script", test_unix_socket_script) ||
        !CU_add_test(s, "post form", test_post_form) ||
        !CU_add_test(s, "max body 413", test_max_body_413) ||
        !CU_add_test(s, "reuse", test_reuse) ||
        !CU_add_test(s, "upstream down", test_upstream_down) ||
        !CU_add_test(s, "timeout 504", test_timeout_504) ||
        !CU_add_test(s, "stderr logged", test_stderr_logged) ||
        !CU_add_test(s, "bad address", test_bad_address)) {
        return -1;
    }
    if (upstream_stream_register(s) != 0 || upstream_fake_register(s) != 0) {
        return -1;
    }
    return upstream_runtime_register(s);
}
