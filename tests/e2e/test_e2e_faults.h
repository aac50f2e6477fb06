/*
 * test_e2e_faults.h - what the files of the "faults" suite share: HTTP
 * requests made straight from threads (so a request's time is its own,
 * not curl's start-up), a load of such requests with every answer and its
 * time recorded, the daemon's descriptors and child processes counted
 * from /proc, and the stacks the tests run.
 *
 * Every request of the load is timed from connect to the end of the
 * response; a phase of a fault is judged only by the requests that both
 * started and ended inside it.
 */
#ifndef SUSPECT_TESTS_E2E_FAULTS_H
#define SUSPECT_TESTS_E2E_FAULTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "clock.h"

#define FLT_THREADS_MAX 8

/* One HTTP response, as the client saw it. */
typedef struct flt_resp {
    int status;      /* 0: no answer (connect failed, timeout, reset) */
    bool complete;   /* the body ended as its framing said it would */
    long long ms;    /* from connect to the end of the response */
    size_t body_len; /* bytes after the header block (chunked: raw) */
    char head[2048]; /* the header block (cut) */
    char body[2048]; /* the start of the body (cut), NUL-terminated */
} flt_resp_t;

/*
 * One request to the stack's web server (127.0.0.1:e2e.port) with
 * "Connection: close": method, path, extra header lines (each ending in
 * "\r\n"; may be NULL) and, for POST, an empty body.  Waits at most ms.
 * Returns r->status.
 */
int flt_http(flt_resp_t *r, const char *method, const char *path,
             const char *headers, unsigned ms);

/* GET path: the status (0: none). */
int flt_get(const char *path);

/* One answer of a load. */
typedef struct flt_hit {
    long long start, end; /* mono_ms() */
    int status;
} flt_hit_t;

/* Threads sending requests one after the other until stopped; thread t's
 * n-th request is GET prefix + "TxN" (a new identity each time when the
 * prefix ends in an identity's parameter). */
typedef struct flt_load {
    pthread_t th[FLT_THREADS_MAX];
    int nthreads;
    const char *prefix;
    atomic_bool stop;
    atomic_int next; /* thread numbers */
    pthread_mutex_t mu;
    flt_hit_t *hits; /* under mu */
    size_t n, cap;
} flt_load_t;

/* Starts threads (<= FLT_THREADS_MAX); 0 or -1. */
int flt_load_start(flt_load_t *l, int threads, const char *prefix);

/* Stops and joins the threads; the hits stay until flt_load_free(). */
void flt_load_stop(flt_load_t *l);
void flt_load_free(flt_load_t *l);

/* Hits that started at or after from and ended before to, with status
 * (0: any status). */
size_t flt_load_count(flt_load_t *l, long long from, long long to, int status);

/* The longest hit that ended before to (LLONG_MAX: any), in ms; *status
 * gets its status. */
long long flt_load_max_ms(flt_load_t *l, long long to, int *status);

/* Prints how many hits got each status, one line, to stderr. */
void flt_load_print(flt_load_t *l, const char *what);

/* Open descriptors of pid (entries of /proc/PID/fd), or -1. */
int flt_fd_count(pid_t pid);

/* Processes descended from pid (children, grandchildren...). */
int flt_descendants(pid_t pid);

/* Waits up to ms until pid has at most fds descriptors and kids
 * descendants; says what is left on stderr when it does not. */
bool flt_settle(pid_t pid, int fds, int kids, unsigned ms);

/* Occurrences of text in the daemon's log. */
int flt_log_count(const char *text);

/* Waits up to ms until the daemon's log holds text at least n times. */
bool flt_log_wait(const char *text, int n, unsigned ms);

/* The value of the sample named, labels and a space included (e.g.
 * "\nsuspect_workers_busy "), in the metrics of the daemon's <Metrics>
 * on port; -1 when it cannot be read.  flt_metric_wait(): waits up to
 * ms (scaled) until it is at least want; whether it was. */
double flt_metric(int port, const char *sample);
bool flt_metric_wait(int port, const char *sample, double want, unsigned ms);

/* Whether suspect-fcgi still runs and answers on its socket. */
bool flt_daemon_alive(void);

/*
 * nginx (examples/nginx/<snippet>) in front of suspect-fcgi on
 * examples/<conf> with the replacements edits (may be NULL) and the extra
 * command line arguments extra (may be NULL); limits.xml from examples/.
 * Whatever the configuration forwards to must be started by the caller.
 * 0 or -1.
 */
int flt_start_stack(const char *conf, const char *snippet,
                    const char *const edits[], const char *const extra[]);

/* ---- the misbehaving FastCGI app (test_e2e_faults_fake.c) ------------- */

typedef enum flt_fake_mode {
    FK_OK,           /* a 200 "ok fake" */
    FK_HANG,         /* never answers; notes when the peer closes */
    FK_BAD_HEADERS,  /* header lines that are not headers, then END */
    FK_NO_HEADERS,   /* a body without a header block, then END */
    FK_HUGE_HEADERS, /* a header block of 1 MiB, never ended, then END */
    FK_JUNK,         /* 4 KiB of binary junk instead of records, close */
    FK_NO_END,       /* a whole response, then close without END_REQUEST */
    FK_CUT           /* headers and 100 kB of body, then a reset (crash) */
} flt_fake_mode_t;

/* Listens on e2e.php_sock (replacing any file there) in mode; 0 or -1. */
int flt_fake_start(flt_fake_mode_t mode);

/* The mode of the requests read from now on. */
void flt_fake_set_mode(flt_fake_mode_t mode);

/* Requests read whole since the start. */
int flt_fake_requests(void);

/* Waits up to ms until n requests were read. */
bool flt_fake_wait_requests(int n, unsigned ms);

/* Connections the peer (suspect-fcgi) closed mid-request or while the app
 * hung; *at_ms (may be NULL) gets mono_ms() of the last. */
int flt_fake_peer_gone(long long *at_ms);

/* Waits up to ms (scaled) until the app has seen n connections closed by
 * its peer: suspect-fcgi closes first, the app's thread notices after, as
 * late as a loaded machine runs it. */
bool flt_fake_wait_peer_gone(int n, unsigned ms);

/* Stops every thread and closes the socket.  No-op when not running. */
void flt_fake_stop(void);

/* flt_start_stack() of the upstream shape (examples/suspect-php.xml)
 * with <Upstream timeout="timeout"> and SCRIPT_FILENAME left as nginx
 * sends it (the script of the URL); the app must listen on
 * e2e.php_sock. */
int flt_start_upstream(const char *timeout, const char *const extra[]);

/* The nginx auth_request shape of examples/ with suspect.xml edited by
 * edits (may be NULL), and php-cgi told never to exit after a number of
 * requests (PHP_FCGI_MAX_REQUESTS=0: the default, 500, would end it in
 * the middle of a load).  Routes of interest: LoginVerificationResend
 * (POST op=resend, X-Account-Id; 3 per 600 s, then locked 900 s) and
 * PromoQuery (GET op=promo, member and code; 10 per 60 s).  0 or -1. */
int flt_start_auth(const char *const edits[]);

/* A verification resend by account (POST /index.php?op=resend) and a
 * promotion lookup by member (GET /index.php?op=promo&code=c&member=):
 * the status; *ms (may be NULL) is raised to the request's time. */
int flt_resend(const char *account, long long *ms);
int flt_promo(const char *member, long long *ms);

/* Per-test cleanups of the suite's files, run by the teardown once
 * suspect-fcgi has stopped. */
void flt_redis_cleanup(void);
void flt_app_cleanup(void);
void flt_files_cleanup(void);

/* The tests of test_e2e_faults_redis.c, _app.c, _stop.c, _files.c and
 * _mistakes.c. */
struct CU_Suite;
int flt_add_redis_tests(struct CU_Suite *s);
int flt_add_app_tests(struct CU_Suite *s);
int flt_add_stop_tests(struct CU_Suite *s);
int flt_add_files_tests(struct CU_Suite *s);
int flt_add_mistake_tests(struct CU_Suite *s);

#endif
