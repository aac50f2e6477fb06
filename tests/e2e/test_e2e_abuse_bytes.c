/*
 * test_e2e_abuse_bytes.c - the "abuse" suite, part two: hostile values.
 *
 * Identity values of 64 KiB, NUL, CR, LF and blanks in header values
 * (bytes no web server sends, so straight in FastCGI), thousands of
 * cookies and a Cookie header of the PARAMS limit, cookie names as PHP
 * and Perl read them (through nginx to a real php-cgi), bodies that Perl's
 * CGI.pm reads as a form without the form media type (through nginx to a
 * real CGI.pm program, and straight in FastCGI without CONTENT_TYPE), and
 * forwarded headers from untrusted peers.  For each: the request is
 * counted against the identity the application acts for, or refused, or
 * it does not reach the application at all.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "test_e2e_abuse.h"
#include "helpers/util.h"

#define KIB 1024

/* The variables of a decision on POST /app.cgi?op=op: {name, value...}
 * with room for two more pairs and the NULL. */
static void op_vars(const char *vars[16], const char *uri, const char *qs,
                    const char *addr)
{
    const char *v[] = {"REQUEST_METHOD", "POST", "REQUEST_URI", uri,
                       "QUERY_STRING",   qs,     "SCRIPT_NAME", "/app.cgi",
                       "REMOTE_ADDR",    addr,   NULL};

    memcpy(vars, v, sizeof(v));
}

/* A resend (header:X-Account-Id) decided in the authorizer role with the
 * account value of len bytes (NULs allowed): its status. */
static int resend_raw(int fd, const char *account, size_t len, char *out,
                      size_t size)
{
    size_t plen = 0, cap = 200 * KIB;
    char *params = malloc(cap);
    const char *vars[16];
    int rc;

    if (params == NULL) {
        return -1;
    }
    op_vars(vars, "/app.cgi?op=resend", "op=resend", "192.0.2.1");
    for (size_t i = 0; vars[i] != NULL; i += 2) {
        e2e_fcgi_pair(params, cap, &plen, vars[i], vars[i + 1]);
    }
    rc = e2e_fcgi_pair_n(params, cap, &plen, "HTTP_X_ACCOUNT_ID", 17, account,
                         len) != 0 ||
                 e2e_fcgi_exchange(fd, 2, true, params, plen, "", 0, out, size,
                                   5000) != 0
             ? -1
             : e2e_cgi_status(out);
    free(params);
    return rc;
}

/* A resend in the authorizer role with the X-Account-Id header sent as
 * each of the n values, one FastCGI variable each (as nginx 1.22 passes
 * repeated headers): its status. */
static int resend_lines(int fd, const char *const values[], size_t n)
{
    const char *vars[16];
    char out[4096];

    op_vars(vars, "/app.cgi?op=resend", "op=resend", "192.0.2.1");
    for (size_t i = 0; i < n; i++) {
        vars[10 + 2 * i] = "HTTP_X_ACCOUNT_ID";
        vars[11 + 2 * i] = values[i];
    }
    vars[10 + 2 * n] = NULL;
    return abuse_decide(fd, 2, vars, out, sizeof(out));
}

/* A header identity sent twice is refused where the web server hands the
 * app the copies (PHP keeps the last, the decision would see both): a
 * client cannot vary the first copy while the app acts for the second. */
static void test_repeated_header(void)
{
    int fd;

    CU_ASSERT_FATAL(abuse_start_authorizer(1000) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(resend_lines(fd, (const char *[]){"victim"}, 1), 200);
    }
    CU_ASSERT_EQUAL(resend_lines(fd, (const char *[]){"victim"}, 1), 429);
    CU_ASSERT_EQUAL(resend_lines(fd, (const char *[]){"decoy-1", "victim"}, 2),
                    400);
    CU_ASSERT_EQUAL(resend_lines(fd, (const char *[]){"victim", "victim"}, 2),
                    400);
    close(fd);
}

/* A compose (cookie:SESSIONID) in the authorizer role with cookie. */
static int compose_raw(int fd, const char *cookie, char *out, size_t size)
{
    const char *vars[16];

    op_vars(vars, "/app.cgi?op=compose", "op=compose", "192.0.2.1");
    vars[10] = "HTTP_COOKIE";
    vars[11] = cookie;
    vars[12] = NULL;
    return abuse_decide(fd, 2, vars, out, size);
}

/* 64 KiB values are whole identities: counted, locked, and one differing
 * in its last or first byte only is another identity. */
static void test_long_values(void)
{
    size_t n = 64 * KIB;
    char *v = malloc(n + 16), *cookie = malloc(n + 16), out[4096];
    int fd;

    CU_ASSERT_FATAL(v != NULL && cookie != NULL);
    CU_ASSERT_FATAL(abuse_start_authorizer(1000) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    memset(v, 'a', n);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(resend_raw(fd, v, n, out, sizeof(out)), 200);
    }
    CU_ASSERT_EQUAL(resend_raw(fd, v, n, out, sizeof(out)), 429);
    CU_ASSERT_EQUAL(abuse_retry_after(out), 900);
    CU_ASSERT_PTR_NULL(strstr(out, "aaaa")); /* never echoed */
    v[n - 1] = 'b';
    CU_ASSERT_EQUAL(resend_raw(fd, v, n, out, sizeof(out)), 200);
    v[n - 1] = 'a';
    v[0] = 'b';
    CU_ASSERT_EQUAL(resend_raw(fd, v, n, out, sizeof(out)), 200);

    /* A 64 KiB session id. */
    strcpy(cookie, "SESSIONID=");
    memset(cookie + 10, 's', n);
    cookie[10 + n] = '\0';
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 429);
    cookie[10 + n - 1] = 't';
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 200);
    close(fd);
    free(v);
    free(cookie);
}

/* Header values with a NUL, CR, LF or blanks are counted as the values
 * applications read: whole and cut at the NUL (PHP keeps a NUL, a C
 * program or the environment cuts there), trimmed.  The program (a shell
 * CGI behind suspect-fcgi in forward mode) shows what it got. */
static void test_nul_crlf_header(void)
{
    static const struct {
        const char *v;
        size_t len;
        int status;
        const char *app; /* what the program printed, NULL: not run */
    } cases[] = {
        {"victim\0rot-1", 12, 200, "[victim]"},
        {"victim\0rot-2", 12, 200, "[victim]"},
        {" victim\r\n", 9, 200, "[ victim\r\n]"},
        {"victim\0rot-3", 12, 429, NULL},
        {"\tvictim \0x", 10, 429, NULL},
        {"victim\r\n\0", 9, 429, NULL},
        {"vic\0tim", 7, 200, "[vic]"},
        /* Cut at the NUL it is empty, but PHP's trim() reads victim. */
        {"\0victim", 7, 429, NULL},
    };
    char script[TEST_PATH_MAX], params[4096], out[8192];
    const char *vars[] = {
        "REQUEST_METHOD",  "POST",      "REQUEST_URI", "/app.cgi?op=resend",
        "QUERY_STRING",    "op=resend", "SCRIPT_NAME", "/app.cgi",
        "SCRIPT_FILENAME", script,      "REMOTE_ADDR", "192.0.2.1",
        "CONTENT_LENGTH",  "0",         NULL};
    int fd;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("app.cgi",
                                  "#!/bin/sh\n"
                                  "printf 'Content-Type: text/plain\\r\\n\\r\\n"
                                  "[%s]' \"$HTTP_X_ACCOUNT_ID\"\n") == 0);
    snprintf(script, sizeof(script), "%s/app.cgi", e2e.app);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t plen = 0;
        const char *body;

        for (size_t k = 0; vars[k] != NULL; k += 2) {
            e2e_fcgi_pair(params, sizeof(params), &plen, vars[k], vars[k + 1]);
        }
        e2e_fcgi_pair_n(params, sizeof(params), &plen, "HTTP_X_ACCOUNT_ID", 17,
                        cases[i].v, cases[i].len);
        CU_ASSERT_EQUAL_FATAL(e2e_fcgi_exchange(fd, 1, true, params, plen, "",
                                                0, out, sizeof(out), 5000),
                              0);
        body = strstr(out, "\r\n\r\n");
        CU_ASSERT_EQUAL(e2e_cgi_status(out), cases[i].status);
        if (cases[i].app != NULL) {
            CU_ASSERT(body != NULL && strcmp(body + 4, cases[i].app) == 0);
        } else {
            CU_ASSERT_PTR_NULL(strstr(out, "[victim"));
        }
        if (e2e_cgi_status(out) != cases[i].status) {
            fprintf(stderr, "\n  case %zu: %.200s\n", i, out);
        }
    }
    close(fd);
}

/* Thousands of cookies, and a Cookie header as large as PARAMS may be:
 * the session at the end is found and counted; one byte more than the
 * limit is refused (431) before anything runs. */
static void test_many_cookies(void)
{
    size_t cap = 128 * KIB + 64, n = 0;
    char *cookie = malloc(cap), out[4096];
    int fd;

    CU_ASSERT_FATAL(cookie != NULL);
    CU_ASSERT_FATAL(abuse_start_authorizer(1000) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    for (int i = 0; i < 5000; i++) {
        n += (size_t)snprintf(cookie + n, cap - n, "c%d=%d; ", i, i);
    }
    snprintf(cookie + n, cap - n, "SESSIONID=many");
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 429);
    CU_ASSERT_EQUAL(compose_raw(fd, "SESSIONID=many", out, sizeof(out)), 429);

    /* Pad to just under the 128 KiB PARAMS limit (the other variables
     * take well under 512 bytes), the session last. */
    memset(cookie, 'x', cap);
    memcpy(cookie, "pad=", 4);
    n = 128 * KIB - 512 - strlen("; SESSIONID=big");
    strcpy(cookie + n, "; SESSIONID=big");
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose_raw(fd, "SESSIONID=big", out, sizeof(out)), 429);
    close(fd);

    /* Over the limit: 431, and the connection is closed. */
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    memset(cookie, 'x', cap - 1);
    cookie[cap - 1] = '\0';
    memcpy(cookie + cap - 20, "; SESSIONID=new", 16);
    CU_ASSERT_EQUAL(compose_raw(fd, cookie, out, sizeof(out)), 431);
    close(fd);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(compose_raw(fd, "SESSIONID=new", out, sizeof(out)), 200);
    close(fd);
    free(cookie);
}

int abuse_add_bytes_tests(CU_pSuite s)
{
    if (CU_add_test(s, "64 KiB identity values", test_long_values) == NULL ||
        CU_add_test(s, "a header identity sent twice", test_repeated_header) ==
            NULL ||
        CU_add_test(s, "NUL, CR, LF in header values", test_nul_crlf_header) ==
            NULL ||
        CU_add_test(s, "thousands of cookies, PARAMS-sized Cookie",
                    test_many_cookies) == NULL) {
        return -1;
    }
    return 0;
}
