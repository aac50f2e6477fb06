/*
 * test_e2e_faults.c - the "faults" suite: what suspect-fcgi does when the
 * things around it fail, every process real (nginx, suspect-fcgi,
 * redis-server, php-cgi, shell CGI programs, a FastCGI server of the
 * test's own that misbehaves on purpose).
 *
 *   test_e2e_faults_redis.c  Redis killed, paused, restarted under load,
 *                            in each fail mode
 *   test_e2e_faults_app.c    the app (FastCGI or CGI) crashing, hanging,
 *                            answering garbage; the client leaving first
 *   test_e2e_faults_stop.c   SIGTERM while the app hangs
 *   test_e2e_faults_files.c  the limits file broken in every way; the
 *                            LMDB store's disk full
 *   test_e2e_faults_mistakes.c  configuration mistakes that would turn
 *                            protection off: no start, no reload
 *
 * This file: the suite, its teardown, and the shared tools of
 * test_e2e_faults.h.  Each check that says "the daemon stayed up" asks
 * the daemon itself: its process runs and its socket accepts.
 * docs/FAULTS.md lists every fault, what the client sees and what is
 * kept, with the test that shows it.
 */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "suites.h"
#include "test_e2e_faults.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

/* ---- HTTP from threads ------------------------------------------------ */

/* Connects to the web server; the fd or -1. */
static int http_connect(void)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)e2e.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
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

/* Whether the response (header block head, body_len bytes after it whose
 * last five are tail) ended as its framing says. */
static bool framed_end(const char *head, size_t body_len, const char *tail)
{
    const char *cl = strcasestr(head, "\r\nContent-Length:");

    if (strcasestr(head, "\r\nTransfer-Encoding: chunked") != NULL) {
        return body_len >= 5 && memcmp(tail, "0\r\n\r\n", 5) == 0;
    }
    if (cl != NULL) {
        return body_len == (size_t)strtoul(cl + 17, NULL, 10);
    }
    return true; /* delimited by the close */
}

/* Reads the response on fd until the server closes or the deadline. */
static void read_response(int fd, flt_resp_t *r, long long deadline)
{
    char buf[16384], tail[5] = {0};
    size_t head_len = 0;
    bool in_head = true, closed = false;

    while (!closed) {
        struct pollfd p = {fd, POLLIN, 0};
        long long left = deadline - mono_ms();
        ssize_t n;

        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            return; /* no complete answer in time */
        }
        n = recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            break; /* a reset: what came is what the client got */
        }
        closed = n == 0;
        for (ssize_t i = 0; i < n; i++) {
            if (in_head) {
                if (head_len + 1 < sizeof(r->head)) {
                    r->head[head_len++] = buf[i];
                    r->head[head_len] = '\0';
                }
                in_head = head_len < 4 ||
                          strcmp(r->head + head_len - 4, "\r\n\r\n") != 0;
                continue;
            }
            if (r->body_len + 1 < sizeof(r->body)) {
                r->body[r->body_len] = buf[i];
                r->body[r->body_len + 1] = '\0';
            }
            r->body_len++;
            memmove(tail, tail + 1, 4);
            tail[4] = buf[i];
        }
    }
    if (sscanf(r->head, "HTTP/%*s %d", &r->status) != 1) {
        r->status = 0;
    }
    r->complete = closed && !in_head && framed_end(r->head, r->body_len, tail);
}

int flt_http(flt_resp_t *r, const char *method, const char *path,
             const char *headers, unsigned ms)
{
    long long start = mono_ms();
    char req[4096];
    int fd, n;

    memset(r, 0, sizeof(*r));
    n = snprintf(req, sizeof(req),
                 "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                 "%s%s\r\n",
                 method, path, headers != NULL ? headers : "",
                 strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");
    fd = http_connect();
    if (fd >= 0 && n > 0 && (size_t)n < sizeof(req) &&
        send_all(fd, req, (size_t)n) == 0) {
        read_response(fd, r, start + test_scale_ms(ms));
    }
    if (fd >= 0) {
        close(fd);
    }
    r->ms = mono_ms() - start;
    return r->status;
}

int flt_get(const char *path)
{
    flt_resp_t r;

    return flt_http(&r, "GET", path, NULL, 10000);
}

/* ---- load ------------------------------------------------------------- */

/* Between two requests of a thread: a steady load (a few hundred
 * requests a second from three threads), not a flood of the machine. */
#define LOAD_PAUSE_US 5000

static void *load_main(void *arg)
{
    flt_load_t *l = arg;
    int t = atomic_fetch_add(&l->next, 1);
    char path[256];

    for (int i = 0; !atomic_load(&l->stop); i++) {
        flt_resp_t r;
        flt_hit_t h;

        snprintf(path, sizeof(path), "%s%dx%d", l->prefix, t, i);
        h.start = mono_ms();
        h.status = flt_http(&r, "GET", path, NULL, 10000);
        h.end = mono_ms();
        pthread_mutex_lock(&l->mu);
        if (l->n == l->cap) {
            size_t cap = l->cap == 0 ? 1024 : l->cap * 2;
            flt_hit_t *p = realloc(l->hits, cap * sizeof(*p));

            if (p != NULL) {
                l->hits = p;
                l->cap = cap;
            }
        }
        if (l->n < l->cap) {
            l->hits[l->n++] = h;
        }
        pthread_mutex_unlock(&l->mu);
        usleep(LOAD_PAUSE_US);
    }
    return NULL;
}

int flt_load_start(flt_load_t *l, int threads, const char *prefix)
{
    memset(l, 0, sizeof(*l));
    l->prefix = prefix;
    atomic_init(&l->stop, false);
    atomic_init(&l->next, 0);
    pthread_mutex_init(&l->mu, NULL);
    for (; l->nthreads < threads && l->nthreads < FLT_THREADS_MAX;
         l->nthreads++) {
        if (pthread_create(&l->th[l->nthreads], NULL, load_main, l) != 0) {
            flt_load_stop(l);
            return -1;
        }
    }
    return 0;
}

void flt_load_stop(flt_load_t *l)
{
    atomic_store(&l->stop, true);
    for (int i = 0; i < l->nthreads; i++) {
        pthread_join(l->th[i], NULL);
    }
    l->nthreads = 0;
}

void flt_load_free(flt_load_t *l)
{
    flt_load_stop(l);
    free(l->hits);
    l->hits = NULL;
    l->n = l->cap = 0;
    pthread_mutex_destroy(&l->mu);
}

size_t flt_load_count(flt_load_t *l, long long from, long long to, int status)
{
    size_t k = 0;

    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n; i++) {
        const flt_hit_t *h = &l->hits[i];

        k += h->start >= from && h->end < to &&
             (status == 0 || h->status == status);
    }
    pthread_mutex_unlock(&l->mu);
    return k;
}

long long flt_load_max_ms(flt_load_t *l, long long to, int *status)
{
    long long max = 0;

    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n; i++) {
        if (l->hits[i].end < to && l->hits[i].end - l->hits[i].start > max) {
            max = l->hits[i].end - l->hits[i].start;
            *status = l->hits[i].status;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return max;
}

void flt_load_print(flt_load_t *l, const char *what)
{
    static const int codes[] = {200, 429, 502, 503, 504, 0};
    char line[256];
    size_t len = 0, other = 0;

    pthread_mutex_lock(&l->mu);
    for (size_t c = 0; c < sizeof(codes) / sizeof(*codes); c++) {
        size_t k = 0;

        for (size_t i = 0; i < l->n; i++) {
            k += l->hits[i].status == codes[c];
        }
        len += (size_t)snprintf(line + len, sizeof(line) - len, " %d:%zu",
                                codes[c], k);
        other += k;
    }
    fprintf(stderr, "faults: %s: %zu requests,%s, other:%zu\n", what, l->n,
            line, l->n - other);
    pthread_mutex_unlock(&l->mu);
}

/* ---- the daemon's resources ------------------------------------------- */

int flt_fd_count(pid_t pid)
{
    char path[64];
    struct dirent *e;
    DIR *d;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

/* The parent of pid from /proc/PID/stat, or -1. */
static int parent_of(int pid)
{
    char path[64], stat[512];
    const char *paren;
    int ppid = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    if (fgets(stat, sizeof(stat), f) != NULL &&
        (paren = strrchr(stat, ')')) != NULL &&
        sscanf(paren + 1, " %*c %d", &ppid) != 1) {
        ppid = -1;
    }
    fclose(f);
    return ppid;
}

int flt_descendants(pid_t pid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        int p = atoi(e->d_name);

        /* Walk up to init (pid 1) or to pid; a short chain always. */
        for (int hops = 0; p > 1 && hops < 64; hops++) {
            p = parent_of(p);
            if (p == (int)pid) {
                n++;
                break;
            }
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

/* Prints what each descriptor of pid is, for a failed flt_settle. */
static void print_fds(pid_t pid)
{
    char path[64], link[TEST_PATH_MAX], target[256];
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    while (d != NULL && (e = readdir(d)) != NULL) {
        ssize_t n;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
        n = readlink(link, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        fprintf(stderr, "faults:   fd %s -> %s\n", e->d_name, target);
    }
    if (d != NULL) {
        closedir(d);
    }
}

bool flt_settle(pid_t pid, int fds, int kids, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);
    int f, k;

    do {
        f = flt_fd_count(pid);
        k = flt_descendants(pid);
        if (f >= 0 && f <= fds && k <= kids) {
            return true;
        }
        usleep(20000);
    } while (mono_ms() < end);
    fprintf(stderr,
            "faults: daemon %d has %d descriptors (want <= %d), %d "
            "processes under it (want <= %d)\n",
            (int)pid, f, fds, k, kids);
    print_fds(pid);
    return false;
}

int flt_log_count(const char *text)
{
    return test_count_text(e2e.log, text);
}

bool flt_log_wait(const char *text, int n, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);

    while (flt_log_count(text) < n) {
        if (mono_ms() >= end) {
            fprintf(stderr, "faults: the log has '%s' %d times, not %d\n", text,
                    flt_log_count(text), n);
            return false;
        }
        usleep(20000);
    }
    return true;
}

bool flt_daemon_alive(void)
{
    int fd;

    if (!test_proc_running(&e2e.fcgi)) {
        fprintf(stderr, "faults: suspect-fcgi is gone\n");
        return false;
    }
    fd = e2e_fcgi_connect();
    if (fd < 0) {
        fprintf(stderr, "faults: suspect-fcgi's socket does not accept\n");
        return false;
    }
    close(fd);
    return true;
}

/* ---- stacks ----------------------------------------------------------- */

int flt_start_stack(const char *conf, const char *snippet,
                    const char *const edits[], const char *const extra[])
{
    char src[TEST_PATH_MAX];

    if (e2e.dir == NULL) {
        return -1;
    }
    e2e.port = test_free_port();
    if (e2e.port <= 0 ||
        test_copy_file(e2e_src(src, "examples/limits.xml"), e2e.limits, 0644) !=
            0 ||
        e2e_write_example(conf, "suspect.xml", edits) != 0 ||
        test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, e2e.sock, 0, extra) !=
            0) {
        return -1;
    }
    return e2e_start_nginx(snippet);
}

int flt_start_auth(const char *const edits[])
{
    char src[TEST_PATH_MAX];
    static const char *const php_env[] = {"PHP_FCGI_MAX_REQUESTS=0", NULL};
    char app[TEST_PATH_MAX];

    snprintf(app, sizeof(app), "%s/index.php", e2e.app);
    if (e2e.dir == NULL ||
        test_copy_file(e2e_src(src, "examples/app/index.php"), app, 0644) !=
            0 ||
        test_php_start(&e2e.php, e2e.dir, e2e.php_sock, php_env) != 0) {
        return -1;
    }
    return flt_start_stack("suspect-auth-request.xml",
                           "nginx/auth-request.conf", edits, NULL);
}

int flt_resend(const char *account, long long *ms)
{
    char h[128];
    flt_resp_t r;

    snprintf(h, sizeof(h), "X-Account-Id: %s\r\n", account);
    flt_http(&r, "POST", "/index.php?op=resend", h, 10000);
    if (ms != NULL && r.ms > *ms) {
        *ms = r.ms;
    }
    return r.status;
}

double flt_metric(int port, const char *sample)
{
    char url[64];
    const char *at;
    test_http_t r;
    double v = -1;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
    if (e2e_http(&r, (const char *[]){url, NULL}) == 0 && r.status == 200 &&
        r.body != NULL && (at = strstr(r.body, sample)) != NULL) {
        v = strtod(at + strlen(sample), NULL);
    }
    test_http_free(&r);
    return v;
}

bool flt_metric_wait(int port, const char *sample, double want, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);

    for (;;) {
        double v = flt_metric(port, sample);

        if (v >= want) {
            return true;
        }
        if (mono_ms() >= end) {
            return false;
        }
        usleep(10000);
    }
}

int flt_promo(const char *member, long long *ms)
{
    char path[160];
    flt_resp_t r;

    snprintf(path, sizeof(path), "/index.php?op=promo&code=c&member=%s",
             member);
    flt_http(&r, "GET", path, NULL, 10000);
    if (ms != NULL && r.ms > *ms) {
        *ms = r.ms;
    }
    return r.status;
}

/* ---- the suite -------------------------------------------------------- */

/* Stops the daemon first (it may hold the LMDB file on a tmpfs, or wait
 * for a FastCGI server of the test), then the suite's own servers. */
static void faults_teardown(void)
{
    test_proc_stop(&e2e.fcgi, SIGTERM, 3000);
    flt_app_cleanup();
    flt_redis_cleanup();
    flt_files_cleanup();
    e2e_teardown();
}

/* Every test's fixture: nginx lets its idle connections to suspect-fcgi
 * go after 1 s (4 s as shipped), so the daemon's descriptors come back
 * to what they were within flt_settle()'s wait. */
static void faults_setup(void)
{
    e2e_setup();
    e2e.nginx_idle = "1s";
}

/* Registers the "faults" suite. */
int register_faults_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown(
        "faults", NULL, NULL, faults_setup, faults_teardown);

    if (s == NULL || flt_add_redis_tests(s) != 0 || flt_add_app_tests(s) != 0 ||
        flt_add_stop_tests(s) != 0 || flt_add_files_tests(s) != 0 ||
        flt_add_mistake_tests(s) != 0) {
        return -1;
    }
    return 0;
}
