/*
 * cgi_test.h - what the two files of the "cgi" suite share (test_cgi.c:
 * environment, I/O, refusals; test_cgi_proc.c: timeouts, zombies, threads,
 * client aborts): a temp dir with a script root, /bin/sh scripts written
 * into it, and requests run through mw_cgi_run() with fakereq.h.
 */
#ifndef SUSPECT_TESTS_CGI_TEST_H
#define SUSPECT_TESTS_CGI_TEST_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "forward/cgi.h"
#include "helpers/fakereq.h"

/* snprintf into an array, failing the test when it does not fit. */
#define FMT(buf, ...)                                                          \
    CU_ASSERT_FATAL(snprintf(buf, sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

/* A shell line that prints a minimal header block. */
#define HDR "printf 'Content-Type: text/plain\\r\\n\\r\\n'\n"

extern char *cgit_tmp;         /* the suite's temp dir */
extern char cgit_root[4096];   /* tmp/root: where scripts live */
extern char cgit_marker[4096]; /* a file scripts create to prove they ran */

/* Whether valgrind runs us (it emulates vfork with fork, and cannot
 * survive a failed execve in the child). */
bool cgit_under_valgrind(void);

/* Room for the path of a script. */
#define CGIT_PATH_MAX 4200

/* Writes dir/name as a /bin/sh script with body and mode; its path, in
 * path (the caller's). */
const char *cgit_script_in(char path[CGIT_PATH_MAX], const char *dir,
                           const char *name, const char *body, mode_t mode);

/* cgit_script_in() in the root, executable. */
const char *cgit_script(char path[CGIT_PATH_MAX], const char *name,
                        const char *body);

/* Runs a request with SCRIPT_FILENAME = path, the NULL-terminated vars
 * and body (len bytes) under the root with timeout (ms). */
suspect_rc_t cgit_run_vars(const char *path, const char *const *vars,
                           const char *body, size_t len, unsigned timeout,
                           fakereq_t *r, mw_fwd_result_t *res);

/* cgit_run_vars() with no other variable, no body, 5 s. */
suspect_rc_t cgit_run(const char *path, fakereq_t *r, mw_fwd_result_t *res);

/* The body of CGI output (after the blank line), or "". */
const char *cgit_body_of(const fakereq_t *r);

/* Whether the marker file exists (then removes it). */
bool cgit_ran(void);

/* n pseudo-random bytes (malloc'ed). */
char *cgit_make_body(size_t n);

/* Adds test_cgi_proc.c's tests to the suite; -1 when CUnit refused. */
int cgit_add_proc_tests(CU_pSuite s);

#endif
