/*
 * inproc_test.h - what the files of the "inproc" suite share: a temp dir
 * with suspect.xml and limits.xml written per test, request variables,
 * a body reader over memory, and the lines the guard logs.
 */
#ifndef SUSPECT_TESTS_INPROC_TEST_H
#define SUSPECT_TESTS_INPROC_TEST_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>

#include "inproc/suspect_guard.h"

/* The suite's temp dir (made per test, removed after). */
extern char *ip_dir;

/* The routes of ip_conf() (all POST /app, by ?op=):
 *   op=bank    Bank, cookie:member, 2 per 120 s
 *   op=login   Lock, form:user, 2 per 600 s then locked 600 s
 *   op=signin  Login, form:user, <Failure status="401"/>, 3 per 600 s then
 *              locked 600 s
 *   op=acct    Acct, header:X-Account-Id, missing="reject", 5 per 60 s
 *   op=env     Env, env:REMOTE_USER, 5 per 60 s
 *   op=peek    Peek, cookie:member, shadow="yes", 1 per 60 s
 * IP_LIMITS: those limits; a Server line, Store line and extra elements
 * replace the defaults when given (NULL: forward mode, memory, an
 * <Upstream> at a socket nobody listens on). */
extern const char IP_LIMITS[];

/* A suspect.xml in authorizer mode (one route, on a cookie): valid for
 * suspect-fcgi, not in-process. */
#define IP_AUTHORIZER_XML                                                      \
    "<Suspect><Server mode='authorizer'/><Limits path='limits.xml'/>"          \
    "<Route action='Bank' path='/app'>"                                        \
    "<Identity type='MemberCode' from='cookie:member'/></Route></Suspect>"

/* Writes ip_dir/suspect.xml with server (a whole <Server .../> element or
 * NULL), store (a <Store/> element or NULL) and extra (elements placed
 * before the routes, or NULL); 0 or -1. */
int ip_write_conf(const char *server, const char *store, const char *extra);

/* Writes text to ip_dir/name as a new file (rename); 0 or -1. */
int ip_write_file(const char *name, const char *text);

/* Writes ip_dir/limits.xml (text, or IP_LIMITS when NULL); 0 or -1. */
int ip_write_limits(const char *text);

/* ip_dir/name into path (the caller's, TEST_PATH_MAX bytes). */
const char *ip_path(char *path, const char *name);

/* Opens a guard on ip_dir/suspect.xml (written with the defaults first
 * when write) in reload mode; asserts it opened. */
suspect_guard_t *ip_open(bool write, int reload);

/* Variables of a request: POST /app?op=OP with the given cookie, Accept
 * (NULL: none) and a urlencoded body of body_len bytes (-1: no body);
 * extra "NAME=value" strings (NULL-terminated list, may be NULL) after
 * them.  The strings live in v. */
typedef struct ip_vars {
    char store[12][512];
    const char *list[32];
} ip_vars_t;

const char *const *ip_vars(ip_vars_t *v, const char *op, const char *cookie,
                           const char *accept, long body_len,
                           const char *const *extra);

/* A body in memory, read chunk bytes at a time (0: all at once). */
typedef struct ip_body {
    const char *data;
    size_t len, off, chunk;
    size_t reads;
} ip_body_t;

ssize_t ip_body_read(void *arg, void *buf, size_t n);

/* Decides a request of vars and body (NULL: none) on g; asserts a
 * request came back. */
suspect_guard_req_t *ip_decide(suspect_guard_t *g, const char *const *vars,
                               ip_body_t *body);

/* The verdict of one request of op with cookie (the request is freed). */
suspect_guard_verdict_t ip_verdict(suspect_guard_t *g, const char *op,
                                   const char *cookie);

/* The suite's log callback (suspect_guard_set_log()): keeps the lines. */
void ip_log_line(void *arg, int level, const char *msg);

/* The lines logged since the last ip_log_take() (malloc'ed, "" when
 * none; the caller frees). */
char *ip_log_take(void);

/* Registration of the other files' tests in suite s; 0 or -1. */
int inproc_register_reload(CU_pSuite s);

#endif
