/*
 * test_e2e_abuse.h - what the files of the "abuse" suite share: the
 * lighttpd authorizer deployment with the flood limits, and decisions
 * over raw FastCGI on a kept connection.
 */
#ifndef SUSPECT_TESTS_E2E_ABUSE_H
#define SUSPECT_TESTS_E2E_ABUSE_H

#include <stddef.h>

/* Starts the lighttpd authorizer shape of examples/ with the memory store
 * capped at cap entries and the abuse limits (ComposeMessage: 1 per hour,
 * then locked 600 s; SecureLoginForceForgotAccount: 2 per day, then 600 s;
 * LoginVerificationResend: 3 per 600 s, then 900 s; the others as in
 * examples/limits.xml).  0 or -1. */
int abuse_start_authorizer(int cap);

/* One request on the kept connection fd in role (1 responder, 2
 * authorizer) with vars {name, value, ..., NULL}, no body: its HTTP
 * status, the response text in out; -1 when no answer came. */
int abuse_decide(int fd, int role, const char *const vars[], char *out,
                 size_t out_size);

/* The Retry-After of a response text, or -1. */
long abuse_retry_after(const char *text);

/* POST /app.cgi?qs with body from addr (cookie: NULL for none) straight
 * to suspect-fcgi (the CGI shape), on a new connection: the status, the
 * response text in out; -1 when no answer came. */
int abuse_post(const char *qs, const char *body, const char *cookie,
               const char *addr, char *out, size_t size);

/* How many lines of DIR/app/performed.log are exactly "op who". */
int abuse_performed(const char *op, const char *who);

/* The tests of test_e2e_abuse_bytes.c, test_e2e_abuse_parsers.c,
 * test_e2e_abuse_paths.c, test_e2e_abuse_env.c, test_e2e_abuse_slow.c and
 * test_e2e_abuse_readings.c, test_e2e_abuse_multipart.c,
 * test_e2e_abuse_reset.c and test_e2e_abuse_cgipm.c; 0 or -1. */
struct CU_Suite;
int abuse_add_bytes_tests(struct CU_Suite *s);
int abuse_add_parser_tests(struct CU_Suite *s);
int abuse_add_path_tests(struct CU_Suite *s);
int abuse_add_env_tests(struct CU_Suite *s);
int abuse_add_slow_tests(struct CU_Suite *s);
int abuse_add_target_tests(struct CU_Suite *s);
int abuse_add_cookie_tests(struct CU_Suite *s);
int abuse_add_readings_tests(struct CU_Suite *s);
int abuse_add_multipart_tests(struct CU_Suite *s);
int abuse_add_reset_tests(struct CU_Suite *s);
int abuse_add_cgipm_tests(struct CU_Suite *s);

#endif
