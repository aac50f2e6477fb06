/*
 * upstream_test.h - what the files of the "upstream" test suite share: a
 * php-cgi started per test (in its own process group, killed and reaped
 * by up_php_stop), request variables for the suite's scripts, stderr
 * capture, the FastCGI server written for the tests (upstream_fakesrv.c),
 * and the registration of the tests kept outside test_upstream.c.
 */
#ifndef SUSPECT_TESTS_UPSTREAM_TEST_H
#define SUSPECT_TESTS_UPSTREAM_TEST_H

#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "clock.h"
#include "forward/upstream.h"
#include "helpers/fakereq.h"

/* The suite's temp dir with the PHP scripts (hello.php, form.php,
 * big.php, sleep.php, stderr.php, env.php). */
extern char *up_dir;

typedef struct up_php {
    pid_t pid;
    char addr[640]; /* unix:... or tcp:127.0.0.1:PORT */
} up_php_t;

/* Starts `php-cgi -n -b` on a free loopback port or a unix socket in
 * up_dir with PHP_FCGI_CHILDREN and PHP_FCGI_MAX_REQUESTS, and waits
 * (deadline 5 s) until it accepts.  0, or -1 with a message on stderr. */
int up_php_start(up_php_t *p, bool unix_sock, int children, int max_requests);

/* Kills php-cgi's process group and reaps it. */
void up_php_stop(up_php_t *p);

/* A client of addr with timeout_ms, pooling up to 16 idle connections
 * (asserts that it was created). */
mw_upstream_t *up_client(const char *addr, unsigned timeout_ms);

/* Variables of a request for up_dir/script: method, query, and when
 * given CONTENT_LENGTH (clen >= 0) and CONTENT_TYPE; the strings live in
 * v, which must outlive the request. */
typedef struct up_vars {
    char store[6][700];
    const char *list[8];
} up_vars_t;

const char *const *up_vars(up_vars_t *v, const char *method, const char *script,
                           const char *query, long long clen,
                           const char *ctype);

/* GETs up_dir/script?query into r (freed by the caller with
 * fakereq_free); the result status, or -1 when forwarding failed. */
int up_get(mw_upstream_t *u, fakereq_t *r, const char *script,
           const char *query);

/* Sends stderr (the log) to a file in up_dir until up_capture_end(),
 * which restores it and returns what was written (malloc'ed, or NULL).
 * up_capture_start() returns the saved descriptor. */
int up_capture_start(void);
char *up_capture_end(int saved);

/* The FastCGI server of upstream_fakesrv.c and what it answers. */
typedef enum fmode {
    F_ECHO,         /* answer with what was received */
    F_CLOSE_KEPT,   /* close a connection at its second request */
    F_CLOSE_ALL,    /* close at every request after reading it */
    F_ANSWER_CLOSE, /* answer, then close even a kept connection */
    F_SMALL,        /* the answer in tiny padded records */
    F_WRONG_ID,     /* END_REQUEST for request id 2 */
    F_END_EARLY,    /* answer before reading STDIN, then close */
    F_GARBAGE       /* not FastCGI */
} fmode_t;

typedef struct fake {
    char *dir;
    char addr[600]; /* unix:DIR/fcgi.sock */
    int lfd;
    pthread_t th;
    atomic_int mode;     /* fmode_t, read at each request */
    atomic_int accepted; /* connections accepted */
    atomic_int closed;   /* connections ended */
    atomic_int requests; /* requests read */
} fake_t;

/* Starts a server in mode on a unix socket in a fresh temp dir; 0 or
 * -1. */
int fake_start(fake_t *f, fmode_t mode);

/* Stops the server and removes its dir.  Free the client first: the
 * server waits on a connection the client keeps until it is closed. */
void fake_stop(fake_t *f);

/* Add the tests of test_upstream_stream.c, test_upstream_fake.c and
 * test_upstream_runtime.c to s; 0, or -1 when CUnit refused. */
int upstream_stream_register(CU_pSuite s);
int upstream_fake_register(CU_pSuite s);
int upstream_runtime_register(CU_pSuite s);

#endif
