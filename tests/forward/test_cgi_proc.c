/*
 * test_cgi_proc.c - the process side of suite "cgi": a timeout kills the
 * whole process group (a background child too) and answers 504, or cuts a
 * started response short; no zombies after many runs; eight threads
 * spawning at once leak no descriptor into each other's children; a
 * client that goes away (a failed write, or the web server hanging up the
 * FastCGI connection while the script prints nothing) and
 * mw_cgi_kill_all() kill the script; a kept connection that is merely
 * silent does not.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "fcgi/fcgi_server.h"
#include "fcgi/listen.h"
#include "cgi_test.h"
#include "helpers/fcgiclient.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

/* Reaps pid (an orphan handed to us as subreaper) within a deadline;
 * returns its wait status or -1. */
static int reap_orphan(pid_t pid)
{
    int64_t end = mono_ms() + test_scale_ms(3000);
    int st;

    while (mono_ms() < end) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return st;
        }
        usleep(2000);
    }
    return -1;
}

static void test_timeout_kills_group(void)
{
    char spath[CGIT_PATH_MAX];
    char body[8192], pidfile[4200], *txt;
    fakereq_t r;
    mw_fwd_result_t res;
    const char *p;
    int64_t t0, ms;
    int st;
    pid_t bg;

    FMT(pidfile, "%s/bgpid", cgit_tmp);
    FMT(body, "sleep 30 &\necho $! > %s\nwait\n", pidfile);
    p = cgit_script(spath, "hang.cgi", body);
    /* the background sleep comes to us when its parent dies */
    CU_ASSERT_FATAL(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    t0 = mono_ms();
    CU_ASSERT_EQUAL(cgit_run_vars(p, NULL, NULL, 0, 300, &r, &res), SUSPECT_OK);
    ms = mono_ms() - t0;
    CU_ASSERT_TRUE(ms >= 290 && ms < test_scale_ms(2000));
    CU_ASSERT_EQUAL(res.status, 504);
    CU_ASSERT_TRUE(res.timed_out);
    CU_ASSERT_TRUE(WIFSIGNALED(res.exit_status) &&
                   WTERMSIG(res.exit_status) == SIGKILL);
    CU_ASSERT_EQUAL(r.out_len, 0);
    txt = test_read_file(pidfile, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(txt);
    bg = (pid_t)atoi(txt);
    free(txt);
    CU_ASSERT_TRUE(bg > 0);
    st = reap_orphan(bg);
    CU_ASSERT_TRUE(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    fakereq_free(&r);

    /* after output started: cut short, no status to answer */
    p = cgit_script(spath, "slow.cgi", HDR "echo partial\nexec sleep 30\n");
    CU_ASSERT_EQUAL(cgit_run_vars(p, NULL, NULL, 0, 300, &r, &res), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_TRUE(res.timed_out);
    CU_ASSERT_STRING_EQUAL(cgit_body_of(&r), "partial\n");
    fakereq_free(&r);
}

static void count_children(int *all, int *zombies)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    char path[300], buf[512];

    *all = *zombies = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        FILE *f;
        char *rp, state;
        int ppid;

        if (e->d_name[0] < '0' || e->d_name[0] > '9') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        rp = fgets(buf, sizeof(buf), f) != NULL ? strrchr(buf, ')') : NULL;
        if (rp != NULL && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 &&
            ppid == (int)getpid()) {
            (*all)++;
            *zombies += state == 'Z';
        }
        fclose(f);
    }
    if (d != NULL) {
        closedir(d);
    }
}

static void test_no_zombies(void)
{
    char spath[CGIT_PATH_MAX];
    const char *p = cgit_script(spath, "quick.cgi", HDR "echo hi\n");
    int all, zombies;

    for (int i = 0; i < 50; i++) {
        fakereq_t r;
        mw_fwd_result_t res;

        CU_ASSERT_EQUAL(cgit_run(p, &r, &res), SUSPECT_OK);
        CU_ASSERT_STRING_EQUAL(cgit_body_of(&r), "hi\n");
        fakereq_free(&r);
    }
    count_children(&all, &zombies);
    CU_ASSERT_EQUAL(all, 0);
    CU_ASSERT_EQUAL(zombies, 0);
}

#define THREADS     8
#define THREAD_RUNS 12

static const char *fds_script;
static int fd_failures;
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;

/* One thread: runs the descriptor lister and checks what it saw. */
static void *fds_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < THREAD_RUNS; i++) {
        fakereq_t r;
        mw_fwd_result_t res;
        mw_cgi_opts_t o = {cgit_root, NULL, 10000, NULL};
        char sf[4200];
        const char *vars[] = {sf, NULL};
        bool ok;

        if (snprintf(sf, sizeof(sf), "SCRIPT_FILENAME=%s", fds_script) >=
            (int)sizeof(sf)) {
            return NULL;
        }
        fakereq_init(&r, vars, NULL, 0);
        ok = mw_cgi_run(&o, &r.req, &res, NULL) == SUSPECT_OK &&
             res.status == 0 && strcmp(cgit_body_of(&r), "0 1 2 3 \n") == 0;
        if (!ok) {
            pthread_mutex_lock(&fd_lock);
            if (fd_failures++ == 0) {
                fprintf(stderr, "fds seen: [%s]\n", cgit_body_of(&r));
            }
            pthread_mutex_unlock(&fd_lock);
        }
        fakereq_free(&r);
    }
    return NULL;
}

static void test_threads_no_fd_leak(void)
{
    char spath[CGIT_PATH_MAX];
    pthread_t t[THREADS];
    int all, zombies;

    /* ls lists its own descriptors: 0-2 and the one of /proc/self/fd */
    fds_script = strdup(cgit_script(spath, "fds.cgi",
                                    HDR "ls /proc/self/fd | tr '\\n' ' '\n"
                                        "echo\n"));
    fd_failures = 0;
    for (int i = 0; i < THREADS; i++) {
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, fds_thread, NULL) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    CU_ASSERT_EQUAL(fd_failures, 0);
    count_children(&all, &zombies);
    CU_ASSERT_EQUAL(all, 0);
    free((void *)fds_script);
}

/* A client that has gone away: every write fails. */
static int gone_write(mw_req_t *req, const void *buf, size_t n)
{
    (void)req;
    (void)buf;
    (void)n;
    return -EPIPE;
}

static void test_client_gone(void)
{
    char spath[CGIT_PATH_MAX];
    const char *p =
        cgit_script(spath, "talker.cgi", HDR "echo start\nexec sleep 30\n");
    mw_req_ops_t ops;
    mw_cgi_opts_t o = {cgit_root, NULL, 10000, NULL};
    char sf[4200];
    const char *vars[] = {sf, NULL};
    fakereq_t r;
    mw_fwd_result_t res;
    int64_t t0 = mono_ms();

    FMT(sf, "SCRIPT_FILENAME=%s", p);
    fakereq_init(&r, vars, NULL, 0);
    ops = *r.req.ops;
    ops.write = gone_write;
    r.req.ops = &ops;
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(3000));
    CU_ASSERT_EQUAL(res.status, 0); /* output had started */
    CU_ASSERT_FALSE(res.timed_out);
    CU_ASSERT_TRUE(WIFSIGNALED(res.exit_status) &&
                   WTERMSIG(res.exit_status) == SIGKILL);
    fakereq_free(&r);
}

typedef struct bg_run {
    const char *path;
    mw_fwd_result_t res;
    suspect_rc_t rc;
} bg_run_t;

static void *bg_runner(void *arg)
{
    bg_run_t *b = arg;
    fakereq_t r;

    b->rc = cgit_run_vars(b->path, NULL, NULL, 0, 20000, &r, &b->res);
    fakereq_free(&r);
    return NULL;
}

static void test_kill_all(void)
{
    char spath[CGIT_PATH_MAX];
    char body[4400];
    bg_run_t b;
    pthread_t t;
    int64_t end, t0;

    FMT(body, "touch %s\nexec sleep 30\n", cgit_marker);
    memset(&b, 0, sizeof(b));
    b.path = strdup(cgit_script(spath, "sleeper.cgi", body));
    CU_ASSERT_FATAL(pthread_create(&t, NULL, bg_runner, &b) == 0);
    end = mono_ms() + test_scale_ms(5000);
    while (access(cgit_marker, F_OK) != 0 && mono_ms() < end) {
        usleep(2000);
    }
    CU_ASSERT_TRUE(cgit_ran());
    t0 = mono_ms();
    mw_cgi_kill_all();
    pthread_join(t, NULL);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(3000));
    CU_ASSERT_EQUAL(b.rc, SUSPECT_OK);
    CU_ASSERT_EQUAL(b.res.status, 502);
    CU_ASSERT_TRUE(WIFSIGNALED(b.res.exit_status) &&
                   WTERMSIG(b.res.exit_status) == SIGKILL);
    free((void *)b.path);
    mw_cgi_kill_all(); /* nothing left: a no-op */
}

/* ---- the web server hangs up -------------------------------------------- */

/* A FastCGI server whose handler runs mw_cgi_run() (as suspect-fcgi's
 * forward mode does), on a unix socket in the suite's temp dir. */
typedef struct hup_srv {
    char spec[4300];
    int lfd;
    mw_server_t *s;
    mw_cgi_opts_t opts;
} hup_srv_t;

static void cgi_handler(mw_req_t *req, void *arg)
{
    mw_fwd_result_t res;

    mw_cgi_run(arg, req, &res, NULL);
    if (res.status != 0 && !req->output_started) {
        mw_error_respond(req, res.status);
    }
}

static void hup_start(hup_srv_t *h)
{
    mw_server_opts_t o;

    memset(h, 0, sizeof(*h));
    h->opts.root = cgit_root;
    h->opts.timeout_ms = 20000;
    FMT(h->spec, "unix:%s/hup.sock", cgit_tmp);
    CU_ASSERT_EQUAL_FATAL(mw_listen_open(h->spec, 16, 0600, &h->lfd, NULL),
                          SUSPECT_OK);
    memset(&o, 0, sizeof(o));
    o.listen_fd = h->lfd;
    o.workers = 2;
    o.io_timeout_ms = 3000;
    o.handler = cgi_handler;
    o.arg = &h->opts;
    CU_ASSERT_EQUAL_FATAL(mw_server_new(&o, &h->s, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(mw_server_start(h->s, NULL), SUSPECT_OK);
}

static void hup_stop(hup_srv_t *h)
{
    mw_server_stop(h->s);
    mw_server_free(h->s);
    close(h->lfd);
    mw_listen_cleanup(h->spec);
}

/* Connects and sends a whole request for script (a GET: empty STDIN);
 * keep sets FCGI_KEEP_CONN.  The descriptor, or -1. */
static int hup_request(const hup_srv_t *h, const char *script, bool keep)
{
    char sf[4200];
    const char *vars[] = {sf, "REQUEST_METHOD=GET", "CONTENT_LENGTH=", NULL};
    fcbuf_t b = {0};
    int fd = fcc_connect(h->spec + 5);

    if (snprintf(sf, sizeof(sf), "SCRIPT_FILENAME=%s", script) >=
            (int)sizeof(sf) ||
        fd < 0) {
        close(fd);
        return -1;
    }
    fcbuf_begin(&b, 1, FCGI_RESPONDER, keep ? FCGI_KEEP_CONN : 0);
    fcbuf_params(&b, 1, vars, 65535);
    fcbuf_stream(&b, FCGI_STDIN, 1, NULL, 0);
    if (fcc_send(fd, b.p, b.len, 0) != 0) {
        close(fd);
        fd = -1;
    }
    fcbuf_free(&b);
    return fd;
}

/* Waits until pidfile names a process; its pid, or -1. */
static pid_t wait_pidfile(const char *pidfile)
{
    int64_t end = mono_ms() + test_scale_ms(5000);

    while (mono_ms() < end) {
        char *txt = test_read_file(pidfile, NULL);
        pid_t pid = txt != NULL ? (pid_t)atoi(txt) : 0;

        free(txt);
        if (pid > 0) {
            return pid;
        }
        usleep(2000);
    }
    return -1;
}

/* Whether pid is gone (reaped) within ms. */
static bool gone_within(pid_t pid, int ms)
{
    int64_t end = mono_ms() + test_scale_ms(ms);

    while (mono_ms() < end) {
        if (kill(pid, 0) != 0 && errno == ESRCH) {
            return true;
        }
        usleep(2000);
    }
    return false;
}

/* A script that prints nothing for 30 s: when the web server closes the
 * connection (its client went away), the script is killed at once, with
 * or without FCGI_KEEP_CONN, and the worker is free again. */
static void test_hangup_kills_silent_script(void)
{
    char spath[CGIT_PATH_MAX];
    char body[4400], pidfile[4200];
    const char *p;
    hup_srv_t h;
    mw_server_stats_t st;

    FMT(pidfile, "%s/silent.pid", cgit_tmp);
    FMT(body, "echo $$ > %s.tmp && mv %s.tmp %s\nexec sleep 30\n", pidfile,
        pidfile, pidfile);
    p = cgit_script(spath, "silent.cgi", body);
    hup_start(&h);
    for (int keep = 0; keep < 2; keep++) {
        int fd;
        pid_t pid;
        int64_t t0;

        unlink(pidfile);
        fd = hup_request(&h, p, keep == 1);
        CU_ASSERT_FATAL(fd >= 0);
        pid = wait_pidfile(pidfile);
        CU_ASSERT_FATAL(pid > 0);
        t0 = mono_ms();
        close(fd);
        CU_ASSERT_TRUE(gone_within(pid, 3000));
        CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(2000));
    }
    mw_server_stats(h.s, &st);
    for (int64_t end = mono_ms() + test_scale_ms(3000);
         st.busy > 0 && mono_ms() < end; usleep(2000)) {
        mw_server_stats(h.s, &st);
    }
    CU_ASSERT_EQUAL(st.busy, 0);
    hup_stop(&h);
}

/* A kept connection that stays open and silent is no hang-up: the script
 * runs to its end, the answer arrives, and the connection serves the
 * next request. */
static void test_kept_connection_not_hangup(void)
{
    char spath[CGIT_PATH_MAX];
    const char *p =
        cgit_script(spath, "pause.cgi", "sleep 0.3\n" HDR "echo after pause\n");
    hup_srv_t h;
    fcc_response_t resp;
    int fd;

    hup_start(&h);
    fd = hup_request(&h, p, true);
    CU_ASSERT_FATAL(fd >= 0);
    memset(&resp, 0, sizeof(resp));
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 5000), 0);
    CU_ASSERT_TRUE(resp.ended);
    fcbuf_add(&resp.out, "", 1);
    CU_ASSERT_PTR_NOT_NULL(strstr((char *)resp.out.p, "\r\n\r\nafter pause\n"));
    fcbuf_free(&resp.out);
    close(fd);
    hup_stop(&h);
}

/* Adds this file's tests to the "cgi" suite (cgi_test.h). */
int cgit_add_proc_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"timeout kills the process group", test_timeout_kills_group},
        {"no zombies", test_no_zombies},
        {"8 threads, no descriptor leak", test_threads_no_fd_leak},
        {"client gone kills the script", test_client_gone},
        {"kill all", test_kill_all},
        {"hang-up kills a silent script", test_hangup_kills_silent_script},
        {"kept connection is no hang-up", test_kept_connection_not_hangup},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
