/*
 * procs.h - real servers and clients for end-to-end tests.
 *
 * Processes: test_proc_start() runs a program with posix_spawn (no shell),
 * its stdout and stderr appended to a log file, and remembers it; every
 * process still running is killed (SIGKILL) and reaped by
 * test_procs_stop_all(), which a suite's per-test teardown calls, so
 * nothing survives a failed assertion.  Readiness is checked by connecting
 * (a TCP port of 127.0.0.1 or a unix socket) until a deadline, failing
 * early when the process exits.
 *
 * Servers: nginx (a generated nginx.conf around the caller's http block,
 * one process, pid, logs and temp paths inside the directory), lighttpd
 * (-D -f), php-cgi -b and php-fpm on a unix socket, and suspect-fcgi
 * itself (the binary is $SUSPECT_FCGI, else $SUSPECT_BUILDDIR/
 * suspect-fcgi, else ./suspect-fcgi: the runner's cwd under `make check`
 * is the build dir).
 *
 * HTTP: test_http_*() run curl (no shell, no ~/.curlrc, no proxy) and
 * collect the status, the last header block and the body; the async form
 * lets a test keep requests in flight while it does something else.
 */
#ifndef SUSPECT_TESTS_PROCS_H
#define SUSPECT_TESTS_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "clock.h"
#include "util.h"

typedef struct test_proc {
    pid_t pid;  /* 0 when not running (never started, or reaped) */
    int status; /* wait status once reaped, else -1 */
    char name[32];
    char log[TEST_PATH_MAX]; /* where its stdout and stderr go */
} test_proc_t;

/*
 * Starts argv[0] (searched in PATH when it has no '/') with argv, the
 * environment plus the "NAME=value" strings of env (NULL = none; they
 * replace variables of the same name), stdin from /dev/null and stdout
 * and stderr appended to log (NULL: /dev/null).  0, or -1 with a message
 * on stderr.
 */
int test_proc_start(test_proc_t *p, const char *const argv[],
                    const char *const env[], const char *log);

/* Sends sig; 0, or -1 when p is not running. */
int test_proc_signal(const test_proc_t *p, int sig);

/* Waits up to ms for p to exit and reaps it: 0 (p->status set), or -1
 * when it still runs at the deadline. */
int test_proc_wait(test_proc_t *p, unsigned ms);

/* Whether p still runs (reaps it when it has exited). */
bool test_proc_running(test_proc_t *p);

/* Sends sig (0: SIGTERM), waits up to ms, then SIGKILL; always reaps. */
void test_proc_stop(test_proc_t *p, int sig, unsigned ms);

/* Kills (SIGKILL) and reaps every process started and not yet reaped. */
void test_procs_stop_all(void);

/* Waits until 127.0.0.1:port (or, port 0, the unix socket path) accepts a
 * connection: 0, or -1 at the deadline or when p (may be NULL) exits. */
int test_wait_listen(int port, const char *path, test_proc_t *p, unsigned ms);

/* Waits until the file path contains text: 0, or -1 at the deadline. */
int test_wait_file_text(const char *path, const char *text, unsigned ms);

/*
 * A copy of text with every occurrence of each key replaced by its value:
 * pairs is {key, value, key, value, ..., NULL}.  malloc'ed; NULL when out
 * of memory.
 */
char *test_subst(const char *text, const char *const pairs[]);

/* Copies the file src to dst with mode; 0 or -1. */
int test_copy_file(const char *src, const char *dst, unsigned mode);

/* ---- servers ----------------------------------------------------------- */

/*
 * Writes dir/nginx.conf (one process, no daemon, pid, temp paths and the
 * access log in dir, error log on stderr) around http, the body of the
 * http block, and runs nginx -p dir/ on it; waits until 127.0.0.1:port
 * answers.  0 or -1 (see dir/nginx.log).
 */
int test_nginx_start(test_proc_t *p, const char *dir, const char *http,
                     int port);

/* Writes dir/lighttpd.conf (conf, then the pid and log settings) and runs
 * lighttpd -D; waits for port.  0 or -1 (see dir/lighttpd.log). */
int test_lighttpd_start(test_proc_t *p, const char *dir, const char *conf,
                        int port);

/* Runs php-cgi -b sock (with env, NULL = none); waits for the socket. */
int test_php_start(test_proc_t *p, const char *dir, const char *sock,
                   const char *const env[]);

/* Writes dir/php-fpm.conf (one pool of 8 children on the unix socket
 * sock, no php.ini) and runs php-fpm on it in the foreground, its log in
 * dir/php.log; waits for the socket.  Its children share its process
 * group, so they die with it.  0 or -1. */
int test_fpm_start(test_proc_t *p, const char *dir, const char *sock);

/* Writes the path of the suspect-fcgi binary to test (see the top of this
 * file) into path (the caller's) and returns it. */
const char *test_suspect_fcgi_path(char path[TEST_PATH_MAX]);

/*
 * Runs suspect-fcgi -c conf -f -v (plus the NULL-terminated extra
 * arguments, may be NULL), its log in dir/suspect.log; waits until the
 * unix socket sock accepts or, with sock NULL, 127.0.0.1:port, and until
 * the daemon logs that it listens (everything it opens at start is open
 * then: the socket accepts a moment earlier).  0 or -1.
 */
int test_suspect_start(test_proc_t *p, const char *dir, const char *conf,
                       const char *sock, int port, const char *const extra[]);

/* Writes dir/httpd.conf (one process: apache2 -X; modules for CGI and
 * mod_authnz_fcgi, pid and logs in dir) with conf appended, and runs it;
 * waits for port.  0 or -1 (see dir/apache.log). */
int test_apache_start(test_proc_t *p, const char *dir, const char *conf,
                      int port);

/* ---- HTTP through curl ------------------------------------------------- */

typedef struct test_http {
    int status;  /* the HTTP status, 0 when there was no response */
    int curl_rc; /* curl's exit status; -1 when it did not run or exit */
    char *head;  /* the last header block (malloc'ed, NUL-terminated) */
    char *lines; /* a copy of head, each CR and LF made a NUL: the values
                  * test_http_header() returns point into it */
    char *body;  /* the body (malloc'ed, NUL-terminated) */
    size_t body_len;
} test_http_t;

typedef struct test_http_job {
    test_proc_t proc;
    char out[TEST_PATH_MAX], head[TEST_PATH_MAX], body[TEST_PATH_MAX];
    char max_time[16]; /* curl's --max-time, scaled */
} test_http_job_t;

/*
 * Starts curl -q -sS --noproxy '*' -H 'Expect:' --max-time 10 (times
 * SUSPECT_TEST_SCALE) with args
 * (NULL-terminated; the URL among them), writing into files in dir.
 * 0, or -1 when it could not start.
 */
int test_http_start(test_http_job_t *j, const char *dir,
                    const char *const args[]);

/* Waits (up to ms) for the job and reads its result into r (free with
 * test_http_free); 0, or -1 when curl did not finish (it is killed). */
int test_http_finish(test_http_job_t *j, test_http_t *r, unsigned ms);

/* test_http_start + test_http_finish. */
int test_http(test_http_t *r, const char *dir, const char *const args[]);

/* The value of header name (case-insensitive) in r's header block, or NULL
 * when absent; it lives as long as r (until test_http_free). */
const char *test_http_header(const test_http_t *r, const char *name);

void test_http_free(test_http_t *r);

#endif
