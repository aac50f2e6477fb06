/*
 * ctl_test.h - what the suspectctl suite's files share (ctl_test.c,
 * test_suspectctl.c, test_suspectctl_redis.c): running the built binary
 * and collecting its exit status and output, a minimal JSON validator, and
 * suspect.xml files around a <Store>.
 */
#ifndef SUSPECT_TESTS_CTL_TEST_H
#define SUSPECT_TESTS_CTL_TEST_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"

/* The suite's temp dir (set by its init): limits.xml lives there, and the
 * runs' stdin, stdout and stderr files. */
extern char *ctl_dir;

typedef struct ctl_run {
    int status; /* exit status, or -1 (did not run, killed at 10 s) */
    char *out;
    char *err;
} ctl_run_t;

/*
 * Runs $SUSPECT_BUILDDIR/suspectctl (else ./suspectctl) with args
 * (NULL-terminated) and input as stdin (NULL: empty); waits for it with a
 * deadline and fills r.  Free with ctl_run_free().
 */
void ctl_run(ctl_run_t *r, const char *input, const char *const args[]);
void ctl_run_free(ctl_run_t *r);

#define CTL_RUN(r, ...)                                                        \
    do {                                                                       \
        const char *const args_[] = {__VA_ARGS__, NULL};                       \
        ctl_run((r), NULL, args_);                                             \
    } while (0)

/* True when needle is in s; else prints both and returns false. */
bool ctl_has(const char *s, const char *needle);

/* The end of the JSON value at p, or NULL when it is not one. */
const char *ctl_json_value(const char *p);

/* True when text is exactly one JSON object (and white space); else prints
 * it and returns false. */
bool ctl_json_object(const char *text);

/* Writes the suite's suspect.xml (two routes) around store at path; 0 on
 * success. */
int ctl_write_conf(const char *path, const char *store);

/* One FastCGI AUTHORIZER request to the suspect-fcgi listening on sock:
 * POST uri with the cookie member=member; its status (200 when the
 * daemon allowed it), or -1. */
int ctl_authorize(const char *sock, const char *uri, const char *member);

/* Adds the tests against a real redis-server (test_suspectctl_redis.c). */
int ctl_add_redis_tests(CU_pSuite s);

/* Adds the man page's unblock example (test_suspectctl_unblock.c). */
int ctl_add_unblock_tests(CU_pSuite s);

/* Adds the LMDB mode and group test (test_suspectctl_group.c). */
int ctl_add_group_tests(CU_pSuite s);

/* Adds the tests with a running suspect-fcgi (test_suspectctl_daemon.c). */
int ctl_add_daemon_tests(CU_pSuite s);

#endif
