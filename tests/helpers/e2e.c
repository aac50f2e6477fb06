/*
 * e2e.c - the deployments of examples/ started for real, for the "e2e"
 * suite (see e2e.h).
 *
 * A stack: copy the CGI application (or point php-cgi at index.php),
 * copy limits.xml, write suspect.xml and the web server snippet from
 * examples/ with the production paths swapped for the test's own, start
 * the app server (php-cgi) if any, then suspect-fcgi (ready when its
 * socket accepts), then the web server (ready when its port accepts).
 * The web server's main configuration is generated (procs.c); the
 * snippet is included as it is.
 *
 * Length.  Every e2e suite's stack is built here, each from its example
 * files, so that all of them are written, started, waited for and torn
 * down the same way; a second file would split one sequence.
 */
#include "e2e.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "clock.h"
#include "redisserver.h"
#include "util.h"
#include "vgwrap.h"

e2e_t e2e;

static unsigned failures_before;

const char *e2e_src(char path[TEST_PATH_MAX], const char *rel)
{
    const char *src = getenv("SUSPECT_SRCDIR");
    char data[TEST_PATH_MAX];
    char *top;

    /* Absolute, since it ends up in configuration files. */
    if (src == NULL || src[0] == '\0') {
        src = test_data_path(data, "../..");
    }
    top = realpath(src, NULL);
    snprintf(path, TEST_PATH_MAX, "%s/%s", top != NULL ? top : src, rel);
    free(top);
    return path;
}

void e2e_setup(void)
{
    memset(&e2e, 0, sizeof(e2e));
    failures_before = CU_get_number_of_failures();
    e2e.dir = test_mkdtemp();
    if (e2e.dir == NULL) {
        return;
    }
    snprintf(e2e.sock, sizeof(e2e.sock), "%s/fcgi.sock", e2e.dir);
    snprintf(e2e.php_sock, sizeof(e2e.php_sock), "%s/php.sock", e2e.dir);
    snprintf(e2e.conf, sizeof(e2e.conf), "%s/suspect.xml", e2e.dir);
    snprintf(e2e.limits, sizeof(e2e.limits), "%s/limits.xml", e2e.dir);
    snprintf(e2e.app, sizeof(e2e.app), "%s/app", e2e.dir);
    snprintf(e2e.log, sizeof(e2e.log), "%s/suspect.log", e2e.dir);
    mkdir(e2e.app, 0755);
}

/* Prints the end of a log file to stderr. */
static void dump_log(const char *path)
{
    size_t len;
    char *text = test_read_file(path, &len);

    if (text == NULL) {
        return;
    }
    fprintf(stderr, "---- %s (last 3000 bytes)\n%s\n", path,
            len > 3000 ? text + len - 3000 : text);
    free(text);
}

/* Fails the test when suspect-fcgi's log holds a sanitizer report (the
 * daemon of a --enable-sanitizers build). */
static void check_daemon_log(void)
{
    static const char *const reports[] = {"AddressSanitizer", "LeakSanitizer",
                                          "runtime error:", "ThreadSanitizer"};
    char *text = test_read_file(e2e.log, NULL);

    for (size_t i = 0; text != NULL && i < sizeof(reports) / sizeof(*reports);
         i++) {
        if (strstr(text, reports[i]) != NULL) {
            CU_FAIL("suspect-fcgi's log has a sanitizer report");
            break;
        }
    }
    free(text);
}

void e2e_teardown(void)
{
    static const char *const logs[] = {
        "suspect.log", "nginx.log",     "lighttpd.log", "apache.log",
        "php.log",     "log/error.log", "check.log"};
    char path[TEST_PATH_MAX];

    /* SIGTERM first, so a sanitizer build reports leaks at exit. */
    test_proc_stop(&e2e.fcgi, SIGTERM, 2000);
    test_procs_stop_all();
    if (e2e.dir == NULL) {
        return;
    }
    check_daemon_log();
    if (CU_get_number_of_failures() != failures_before) {
        for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s", e2e.dir, logs[i]);
            dump_log(path);
        }
    }
    test_rmtree(e2e.dir);
    free(e2e.dir);
    e2e.dir = NULL;
}

/* The replacements every example gets, then the extra ones. */
static char *rewrite(const char *text, const char *const edits[])
{
    const char *std[] = {"/run/suspect/fcgi.sock",
                         e2e.sock,
                         "/run/suspect/php.sock",
                         e2e.php_sock,
                         "/run/php/php8.2-fpm.sock",
                         e2e.php_sock,
                         "/run/app/fcgi.sock",
                         e2e.sock,
                         "/srv/suspect/app",
                         e2e.app,
                         NULL};
    char *once, *twice;

    once = test_subst(text, std);
    if (once == NULL || edits == NULL) {
        return once;
    }
    twice = test_subst(once, edits);
    free(once);
    return twice;
}

const char *e2e_path(char path[TEST_PATH_MAX], const char *name)
{
    snprintf(path, TEST_PATH_MAX, "%s/%s", e2e.dir, name);
    return path;
}

int e2e_write_example(const char *example, const char *name,
                      const char *const edits[])
{
    char rel[256], path[TEST_PATH_MAX], src[TEST_PATH_MAX];
    char *text, *out;
    int rc;

    snprintf(rel, sizeof(rel), "examples/%s", example);
    text = test_read_file(e2e_src(src, rel), NULL);
    if (text == NULL) {
        fprintf(stderr, "e2e: cannot read %s\n", src);
        return -1;
    }
    out = rewrite(text, edits);
    free(text);
    if (out == NULL) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", e2e.dir, name);
    rc = test_write_file(path, out, strlen(out));
    free(out);
    return rc;
}

int e2e_write_limits(const char *text)
{
    char tmp[TEST_PATH_MAX];

    snprintf(tmp, sizeof(tmp), "%s.new", e2e.limits);
    if (test_write_file(tmp, text, strlen(text)) != 0) {
        return -1;
    }
    return rename(tmp, e2e.limits);
}

int e2e_write_cgi(const char *name, const char *script)
{
    const char *pairs[] = {"@DIR@", e2e.dir, NULL};
    char path[TEST_PATH_MAX];
    char *text = test_subst(script, pairs);
    int rc;

    if (text == NULL) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", e2e.app, name);
    rc = test_write_file(path, text, strlen(text));
    free(text);
    return rc == 0 ? chmod(path, 0755) : -1;
}

int e2e_prepare(const char *example_conf, const char *const edits[])
{
    char src[TEST_PATH_MAX];
    if (e2e.dir == NULL) {
        return -1;
    }
    e2e.port = test_free_port();
    if (e2e.port <= 0 || test_copy_file(e2e_src(src, "examples/limits.xml"),
                                        e2e.limits, 0644) != 0) {
        return -1;
    }
    return e2e_write_example(example_conf, "suspect.xml", edits);
}

int e2e_start_suspect(void)
{
    return test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, e2e.sock, 0, NULL);
}

int e2e_start_nginx(const char *snippet)
{
    return e2e_start_nginx_edits(snippet, NULL);
}

int e2e_start_nginx_edits(const char *snippet, const char *const edits[])
{
    char http[3 * TEST_PATH_MAX];
    char idle[64];
    const char *idle_edits[] = {"keepalive_timeout 4s;", idle, NULL};

    snprintf(idle, sizeof(idle), "keepalive_timeout %s;",
             e2e.nginx_idle != NULL ? e2e.nginx_idle : "4s");
    if (e2e_write_example(snippet, "site.conf", edits) != 0 ||
        e2e_write_example("nginx/suspect-upstream.conf", "upstream.conf",
                          idle_edits) != 0) {
        return -1;
    }
    snprintf(http, sizeof(http),
             "    include %s/upstream.conf;\n"
             "    server {\n"
             "        listen 127.0.0.1:%d;\n"
             "        server_name _;\n"
             "        root %s;\n"
             "        index index.php index.html;\n"
             "        include %s/site.conf;\n"
             "    }",
             e2e.dir, e2e.port, e2e.app, e2e.dir);
    return test_nginx_start(&e2e.web, e2e.dir, http, e2e.port);
}

int e2e_prepare_backend(const char *example_conf,
                        const char *const conf_edits[])
{
    char src[TEST_PATH_MAX], rel[64], app[TEST_PATH_MAX];
    bool php = strcmp(example_conf, "suspect-php.xml") == 0 ||
               strcmp(example_conf, "suspect-auth-request.xml") == 0;
    const char *name = php ? "index.php" : "app.cgi";

    snprintf(rel, sizeof(rel), "examples/app/%s", name);
    snprintf(app, sizeof(app), "%s/%s", e2e.app, name);
    if (e2e_prepare(example_conf, conf_edits) != 0 ||
        test_copy_file(e2e_src(src, rel), app, php ? 0644 : 0755) != 0 ||
        (php && test_php_start(&e2e.php, e2e.dir, e2e.php_sock, NULL) != 0)) {
        return -1;
    }
    return 0;
}

int e2e_start_backend(const char *example_conf, const char *const conf_edits[])
{
    if (e2e_prepare_backend(example_conf, conf_edits) != 0) {
        return -1;
    }
    return e2e_start_suspect();
}

int e2e_start_cgi(const char *const conf_edits[])
{
    if (e2e_start_backend("suspect.xml", conf_edits) != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/suspect-cgi.conf");
}

int e2e_start_php(const char *const conf_edits[])
{
    if (e2e_start_backend("suspect-php.xml", conf_edits) != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/suspect-php.conf");
}

/* Copies examples/app/name into DIR/app.  0 or -1. */
static int e2e_copy_app(const char *name)
{
    char src[TEST_PATH_MAX], rel[TEST_PATH_MAX], dst[TEST_PATH_MAX];

    snprintf(rel, sizeof(rel), "examples/app/%s", name);
    snprintf(dst, sizeof(dst), "%s/%s", e2e.app, name);
    return test_copy_file(e2e_src(src, rel), dst, 0644);
}

int e2e_start_login(const char *const conf_edits[])
{
    char src[TEST_PATH_MAX];
    char app[TEST_PATH_MAX];
    const char *const env[] = {"PHP_FCGI_CHILDREN=8", NULL};

    snprintf(app, sizeof(app), "%s/login.php", e2e.app);
    if (e2e_prepare("suspect-login.xml", conf_edits) != 0 ||
        test_copy_file(e2e_src(src, "examples/app/login.php"), app, 0644) !=
            0 ||
        e2e_copy_app("xmlrpc.php") != 0 || e2e_copy_app("jsonrpc.php") != 0 ||
        test_php_start(&e2e.php, e2e.dir, e2e.php_sock, env) != 0 ||
        e2e_start_suspect() != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/suspect-php.conf");
}

int e2e_start_auth_request(const char *const conf_edits[])
{
    if (e2e_start_backend("suspect-auth-request.xml", conf_edits) != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/auth-request.conf");
}

int e2e_start_authorizer(const char *const conf_edits[])
{
    static const char main_conf[] = "server.port = @PORT@\n"
                                    "server.bind = \"127.0.0.1\"\n"
                                    "server.modules = ( \"mod_access\" )\n"
                                    "server.pid-file = \"@DIR@/lighttpd.pid\"\n"
                                    "server.upload-dirs = ( \"@DIR@\" )\n"
                                    "server.document-root = \"@APP@\"\n"
                                    "include \"@DIR@/site.conf\"\n";
    char port[16];
    const char *pairs[] = {"@PORT@", port, "@APP@", e2e.app, NULL};
    char *conf;
    int rc;

    if (e2e_start_backend("suspect-authorizer.xml", conf_edits) != 0 ||
        e2e_write_example("lighttpd/authorizer.conf", "site.conf", NULL) != 0) {
        return -1;
    }
    snprintf(port, sizeof(port), "%d", e2e.port);
    conf = test_subst(main_conf, pairs);
    if (conf == NULL) {
        return -1;
    }
    rc = test_lighttpd_start(&e2e.web, e2e.dir, conf, e2e.port);
    free(conf);
    return rc;
}

int e2e_start_apache(const char *const conf_edits[])
{
    char src[TEST_PATH_MAX];
    char app[TEST_PATH_MAX], listen[64], fcgi_addr[64];
    char conf[2 * TEST_PATH_MAX];
    const char *pairs[] = {"127.0.0.1:9010", fcgi_addr, NULL};
    const char *extra[] = {"--listen", listen, NULL};
    int fcgi_port = test_free_port();

    snprintf(app, sizeof(app), "%s/app.cgi", e2e.app);
    snprintf(listen, sizeof(listen), "tcp:127.0.0.1:%d", fcgi_port);
    snprintf(fcgi_addr, sizeof(fcgi_addr), "127.0.0.1:%d", fcgi_port);
    snprintf(conf, sizeof(conf), "DocumentRoot %s\nInclude %s/site.conf\n",
             e2e.app, e2e.dir);
    /* The CGI program runs as www-data: it must reach DIR/app. */
    if (fcgi_port <= 0 || chmod(e2e.dir, 0755) != 0 ||
        e2e_prepare("suspect-authorizer.xml", conf_edits) != 0 ||
        test_copy_file(e2e_src(src, "examples/app/app.cgi"), app, 0755) != 0 ||
        e2e_write_example("apache/authnz-fcgi.conf", "site.conf", pairs) != 0 ||
        test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, NULL, fcgi_port,
                           extra) != 0) {
        return -1;
    }
    return test_apache_start(&e2e.web, e2e.dir, conf, e2e.port);
}

void e2e_stop(void)
{
    test_proc_stop(&e2e.web, SIGKILL, 2000);
    test_proc_stop(&e2e.fcgi, SIGKILL, 2000);
    test_proc_stop(&e2e.php, SIGKILL, 2000);
    unlink(e2e.sock);
    unlink(e2e.php_sock);
}

const char *e2e_url(char url[E2E_URL], const char *path)
{
    snprintf(url, E2E_URL, "http://127.0.0.1:%d%s", e2e.port, path);
    return url;
}

int e2e_http(test_http_t *r, const char *const args[])
{
    return test_http(r, e2e.dir, args);
}

int e2e_status(const char *const args[])
{
    test_http_t r;
    int status;

    test_http(&r, e2e.dir, args);
    status = r.status;
    test_http_free(&r);
    return status;
}

/* ---- raw FastCGI ------------------------------------------------------- */

int e2e_fcgi_connect(void)
{
    struct sockaddr_un un;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    if (snprintf(un.sun_path, sizeof(un.sun_path), "%s", e2e.sock) >=
            (int)sizeof(un.sun_path) ||
        connect(fd, (struct sockaddr *)&un, sizeof(un)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int e2e_fcgi_send(int fd, int type, int id, const void *data, size_t len)
{
    unsigned char h[8] = {1,
                          (unsigned char)type,
                          (unsigned char)(id >> 8),
                          (unsigned char)id,
                          (unsigned char)(len >> 8),
                          (unsigned char)len,
                          0,
                          0};

    if (send(fd, h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
        return -1;
    }
    return len == 0 || send(fd, data, len, MSG_NOSIGNAL) == (ssize_t)len ? 0
                                                                         : -1;
}

/* Appends a FastCGI length (1 or 4 bytes). */
static size_t put_len(unsigned char *p, size_t n)
{
    if (n < 128) {
        p[0] = (unsigned char)n;
        return 1;
    }
    p[0] = (unsigned char)(0x80 | (n >> 24));
    p[1] = (unsigned char)(n >> 16);
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
    return 4;
}

int e2e_fcgi_pair(char *buf, size_t cap, size_t *len, const char *name,
                  const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    unsigned char *p = (unsigned char *)buf + *len;

    if (*len + 8 + nl + vl > cap) {
        return -1;
    }
    p += put_len(p, nl);
    p += put_len(p, vl);
    memcpy(p, name, nl);
    memcpy(p + nl, value, vl);
    *len = (size_t)((char *)p + nl + vl - buf);
    return 0;
}

size_t e2e_read_until_eof(int fd, char *buf, size_t size, unsigned ms,
                          bool *eof)
{
    long long deadline = mono_ms() + test_scale_ms(ms);
    size_t got = 0;

    *eof = false;
    while (got < size) {
        struct pollfd pfd = {fd, POLLIN, 0};
        long long left = deadline - mono_ms();
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
            break;
        }
        n = recv(fd, buf + got, size - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            *eof = true;
            break;
        }
        got += (size_t)n;
    }
    return got;
}

bool e2e_fcgi_has(const char *buf, size_t len, int type, char *out,
                  size_t out_size)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t off = 0, used = 0;
    bool found = false;

    while (off + 8 <= len) {
        size_t clen = (size_t)p[off + 4] << 8 | p[off + 5];
        size_t plen = p[off + 6];
        if (p[off + 1] == type) {
            found = true;
            for (size_t i = 0; i < clen && off + 8 + i < len && out != NULL &&
                               used + 1 < out_size;
                 i++) {
                out[used++] = (char)p[off + 8 + i];
            }
        }
        off += 8 + clen + plen;
    }
    if (out != NULL && out_size > 0) {
        out[used] = '\0';
    }
    return found;
}

bool e2e_pid_gone(pid_t pid)
{
    char path[64], stat[512];
    const char *paren;
    char state = '?';
    int ppid = 0;
    FILE *f;

    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return true;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return true;
    }
    if (fgets(stat, sizeof(stat), f) == NULL) {
        stat[0] = '\0';
    }
    fclose(f);
    paren = strrchr(stat, ')');
    if (paren == NULL || sscanf(paren + 1, " %c %d", &state, &ppid) != 2) {
        return false;
    }
    /* A zombie is gone unless suspect-fcgi, its parent, failed to reap it
     * (a grandchild is reparented and reaped by init). */
    return state == 'Z' && ppid != (int)e2e.fcgi.pid;
}

/* ---- shared checks ----------------------------------------------------- */

/* The integer value of header name, or -1. */
static long header_num(const test_http_t *r, const char *name)
{
    const char *v = test_http_header(r, name);
    char *end;
    long n;

    if (v == NULL) {
        return -1;
    }
    n = strtol(v, &end, 10);
    return end != v && *end == '\0' ? n : -1;
}

bool e2e_is_denial(const test_http_t *r, const char *action, int limit,
                   int window_s, long retry_min, long retry_max)
{
    char policy[160], rl[160];
    const char *v;
    long retry = header_num(r, "Retry-After");
    bool ok = true;

    snprintf(policy, sizeof(policy), "\"%s\";q=%d;w=%d", action, limit,
             window_s);
    snprintf(rl, sizeof(rl), "\"%s\";r=0;t=", action);
    if (r->status != 429) {
        fprintf(stderr, "e2e: status %d, not 429\n", r->status);
        return false;
    }
    if (retry < retry_min || retry > retry_max) {
        fprintf(stderr, "e2e: Retry-After %ld not in %ld..%ld\n", retry,
                retry_min, retry_max);
        ok = false;
    }
    v = test_http_header(r, "RateLimit-Policy");
    if (v == NULL || strcmp(v, policy) != 0) {
        fprintf(stderr, "e2e: RateLimit-Policy '%s', want '%s'\n",
                v ? v : "(none)", policy);
        ok = false;
    }
    v = test_http_header(r, "RateLimit");
    if (v == NULL || strncmp(v, rl, strlen(rl)) != 0) {
        fprintf(stderr, "e2e: RateLimit '%s', want '%s...'\n", v ? v : "(none)",
                rl);
        ok = false;
    }
    v = test_http_header(r, "Cache-Control");
    if (v == NULL || strstr(v, "no-store") == NULL) {
        fprintf(stderr, "e2e: Cache-Control '%s'\n", v ? v : "(none)");
        ok = false;
    }
    return ok;
}

void e2e_bank(test_http_t *r, const char *path, const char *accept)
{
    char url[E2E_URL];

    e2e_http(r, (const char *[]){"-b", "member=shape-1", "-H",
                                 accept != NULL ? accept : "X-None: 1", "-d",
                                 "account=12345678", e2e_url(url, path), NULL});
}

long e2e_retry_floor(long window_s, long long since)
{
    return window_s - (mono_ms() - since + 999) / 1000 - 1;
}

long long e2e_bank_scenario(const char *path, const char *accept)
{
    long long since = mono_ms();
    test_http_t r;

    for (int i = 0; i < 2; i++) {
        e2e_bank(&r, path, NULL);
        CU_ASSERT(e2e_body_starts(&r, 200, "ok bank"));
        test_http_free(&r);
    }
    e2e_bank(&r, path, accept);
    CU_ASSERT(e2e_is_denial(&r, "BankAccountUpdate", 2, 120,
                            e2e_retry_floor(120, since), 120));
    CU_ASSERT_PTR_NULL(strstr(r.body, "ok bank"));
    test_http_free(&r);
    return since;
}

bool e2e_body_starts(const test_http_t *r, int status, const char *prefix)
{
    if (r->status == status && strncmp(r->body, prefix, strlen(prefix)) == 0) {
        return true;
    }
    fprintf(stderr, "e2e: got %d '%.200s', want %d '%s...'\n", r->status,
            r->body, status, prefix);
    return false;
}

/* ---- raw FastCGI on kept connections, and memory ----------------------- */

int e2e_fcgi_pair_n(char *buf, size_t cap, size_t *len, const char *name,
                    size_t name_len, const char *value, size_t value_len)
{
    unsigned char *p = (unsigned char *)buf + *len;

    if (*len + 8 + name_len + value_len > cap) {
        return -1;
    }
    p += put_len(p, name_len);
    p += put_len(p, value_len);
    memcpy(p, name, name_len);
    memcpy(p + name_len, value, value_len);
    *len = (size_t)((char *)p + name_len + value_len - buf);
    return 0;
}

/* Appends a record of type with len bytes of data to buf at *used. */
static void put_record(char *buf, size_t *used, int type, const char *data,
                       size_t len)
{
    unsigned char *h = (unsigned char *)buf + *used;

    h[0] = 1;
    h[1] = (unsigned char)type;
    h[2] = 0;
    h[3] = 1;
    h[4] = (unsigned char)(len >> 8);
    h[5] = (unsigned char)len;
    h[6] = h[7] = 0;
    if (len > 0) {
        memcpy(buf + *used + 8, data, len);
    }
    *used += 8 + len;
}

/* Appends data as records of type (at most 65535 bytes each), then the
 * empty record that ends the stream. */
static void put_stream(char *buf, size_t *used, int type, const char *data,
                       size_t len)
{
    while (len > 0) {
        size_t n = len > 65535 ? 65535 : len;

        put_record(buf, used, type, data, n);
        data += n;
        len -= n;
    }
    put_record(buf, used, type, NULL, 0);
}

/* Sends all of buf; 0 or -1. */
static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Copies the STDOUT records of the complete records at buf[0..*len) to
 * out at *used and drops them from buf; true once END_REQUEST was seen. */
static bool take_records(unsigned char *buf, size_t *len, char *out,
                         size_t out_size, size_t *used)
{
    size_t off = 0;
    bool end = false;

    while (!end && off + 8 <= *len) {
        size_t clen = (size_t)buf[off + 4] << 8 | buf[off + 5];
        size_t rlen = 8 + clen + buf[off + 6];

        if (off + rlen > *len) {
            break;
        }
        for (size_t i = 0;
             buf[off + 1] == 6 && i < clen && *used + 1 < out_size; i++) {
            out[(*used)++] = (char)buf[off + 8 + i];
        }
        end = buf[off + 1] == 3;
        off += rlen;
    }
    memmove(buf, buf + off, *len - off);
    *len -= off;
    return end;
}

int e2e_fcgi_exchange(int fd, int role, bool keep, const char *params,
                      size_t params_len, const char *body, size_t body_len,
                      char *out, size_t out_size, unsigned ms)
{
    unsigned char begin[8] = {0, (unsigned char)role, keep ? 1 : 0};
    size_t cap = 64 + (params_len + body_len) * 9 / 8 + 16, used = 0;
    long long deadline = mono_ms() + test_scale_ms(ms);
    size_t in_size = 2 * 65536;
    unsigned char *in = malloc(in_size);
    char *req = malloc(cap);
    size_t have = 0, got = 0;
    int rc = 0;

    if (req == NULL || in == NULL) {
        free(req);
        free(in);
        return -1;
    }
    put_record(req, &used, 1, (const char *)begin, sizeof(begin));
    put_stream(req, &used, 4, params, params_len);
    if (role == 1) {
        put_stream(req, &used, 5, body, body_len);
    }
    /* A refusal (431) may come and close the connection while the rest
     * is still being sent: the answer is read all the same. */
    send_all(fd, req, used);
    free(req);
    rc = 0;
    while (rc == 0 && !take_records(in, &have, out, out_size, &got)) {
        struct pollfd pfd = {fd, POLLIN, 0};
        long long left = deadline - mono_ms();
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            rc = -1;
            break;
        }
        n = recv(fd, in + have, in_size - have, 0);
        if (n <= 0 && !(n < 0 && errno == EINTR)) {
            rc = -1;
        }
        have += n > 0 ? (size_t)n : 0;
    }
    free(in);
    if (out_size > 0) {
        out[got] = '\0';
    }
    return rc;
}

int e2e_cgi_status(const char *text)
{
    const char *s = strstr(text, "Status:");

    /* Only a header line counts, not a body that mentions it. */
    if (s == NULL || (s != text && s[-1] != '\n')) {
        return 200;
    }
    return atoi(s + 7);
}

long e2e_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* See e2e.h. */
void e2e_storm(const char *path, const char *body, int n, int *ok, int *denied,
               int *other)
{
    /* 16 options, 3 per request, NULL */
    const char *argv[17 + 3 * E2E_STORM_MAX];
    char url[E2E_URL], log[TEST_PATH_MAX], max_time[16];
    test_proc_t p;
    size_t k = 0;
    char *out, *line;

    n = n < E2E_STORM_MAX ? n : E2E_STORM_MAX;
    snprintf(max_time, sizeof(max_time), "%u", test_scale_ms(30000) / 1000);
    snprintf(log, sizeof(log), "%s/storm.out", e2e.dir);
    remove(log);
    e2e_url(url, path);
    argv[k++] = "curl";
    argv[k++] = "-q";
    argv[k++] = "-s";
    argv[k++] = "--no-progress-meter";
    argv[k++] = "--noproxy";
    argv[k++] = "*";
    argv[k++] = "--max-time";
    argv[k++] = max_time;
    argv[k++] = "-Z";
    argv[k++] = "--parallel-immediate";
    argv[k++] = "--parallel-max";
    argv[k++] = "100";
    argv[k++] = "-w";
    argv[k++] = "%{http_code}\\n";
    argv[k++] = "-d";
    argv[k++] = body;
    for (int i = 0; i < n; i++) {
        argv[k++] = "-o";
        argv[k++] = "/dev/null";
    }
    for (int i = 0; i < n; i++) {
        argv[k++] = url;
    }
    argv[k] = NULL;
    *ok = *denied = *other = 0;
    CU_ASSERT_FATAL(test_proc_start(&p, argv, NULL, log) == 0);
    CU_ASSERT_EQUAL(test_proc_wait(&p, test_scale_ms(60000)), 0);
    out = test_read_file(log, NULL);
    for (line = out != NULL ? strtok(out, "\n") : NULL; line != NULL;
         line = strtok(NULL, "\n")) {
        int code = atoi(line);

        *ok += code >= 200 && code < 400;
        *denied += code == 429;
        *other += code < 200 || (code >= 400 && code != 429);
    }
    if (*ok + *denied + *other != n) {
        fprintf(stderr, "\n  storm: %d ok, %d denied, %d other\n", *ok, *denied,
                *other);
    }
    free(out);
}
