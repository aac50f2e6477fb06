/*
 * test_e2e.c - suite "e2e": curl -> nginx -> suspect-fcgi -> the example
 * CGI application (examples/app/app.cgi), as examples/suspect.xml and
 * examples/nginx/suspect-cgi.conf deploy it, every process real.
 *
 * This file: the seed's scenarios (BankAccountUpdate 2 per 120 s with
 * member and client address, SecureForgotAccount's block-lock, PromoQuery's
 * composite identity), identities from each source (form body, cookie,
 * query, header, client address), forwarded headers from an untrusted
 * peer, 2 MiB bodies both ways, and the CGI timeout.  test_e2e_ops.c has
 * reloads, signals and hostile FastCGI; test_e2e_shapes.c the PHP,
 * auth_request and authorizer deployments.
 *
 * Every test starts its own stack in a fresh temp dir (a new in-process
 * store each time, so counts never leak between tests), and the teardown
 * kills and reaps everything even when an assertion failed.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "suites.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define APP "/app.cgi"
#define MIB (1024 * 1024)

/* POSTs form to /app.cgi?op=op with the cookie (NULL = none). */
static int post(test_http_t *r, const char *op, const char *cookie,
                const char *form)
{
    char url[E2E_URL];
    char path[128];
    const char *args[8];
    size_t n = 0;

    snprintf(path, sizeof(path), APP "?op=%s", op);
    if (cookie != NULL) {
        args[n++] = "-b";
        args[n++] = cookie;
    }
    args[n++] = "-d";
    args[n++] = form;
    args[n++] = e2e_url(url, path);
    args[n] = NULL;
    return e2e_http(r, args);
}

/* The status of a POST (see post()). */
static int post_status(const char *op, const char *cookie, const char *form)
{
    test_http_t r;
    int status;

    post(&r, op, cookie, form);
    status = r.status;
    test_http_free(&r);
    return status;
}

/* GET /app.cgi?query: the status. */
static int get_status(const char *query)
{
    char url[E2E_URL];
    char path[256];

    snprintf(path, sizeof(path), APP "?%s", query);
    return e2e_status((const char *[]){e2e_url(url, path), NULL});
}

static void test_index(void)
{
    char url[E2E_URL];
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    e2e_http(&r, (const char *[]){e2e_url(url, APP), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    e2e_http(&r, (const char *[]){"-H", "Accept: text/html", e2e_url(url, APP),
                                  NULL});
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "<form method=\"post\""));
    test_http_free(&r);
    /* Not a route: counted nowhere, as often as wanted. */
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(get_status("op=nothing"), 404);
    }
}

/* Seed scenario 1: 2 updates per 120 s, by member and by client address. */
static void test_bank_account_update(void)
{
    char url[E2E_URL];
    const char *cookie = "member=M-7f3a9c";
    long long since;
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    since = mono_ms();
    for (int i = 0; i < 2; i++) {
        post(&r, "bank", cookie, "account=12345678");
        CU_ASSERT(e2e_body_starts(&r, 200, "ok bank"));
        test_http_free(&r);
    }
    post(&r, "bank", cookie, "account=12345678");
    CU_ASSERT(e2e_is_denial(&r, "BankAccountUpdate", 2, 120,
                            e2e_retry_floor(120, since), 120));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(test_http_header(&r, "Content-Type") ?: "", "text/html"));
    CU_ASSERT_PTR_NULL(strstr(r.body, "ok bank"));
    CU_ASSERT_PTR_NULL(strstr(r.body, "7f3a9c"));
    test_http_free(&r);

    /* An API client gets problem+json with the countdown's end. */
    e2e_http(&r, (const char *[]){
                     "-b", cookie, "-H", "Accept: application/problem+json",
                     "-d", "account=1", e2e_url(url, APP "?op=bank"), NULL});
    CU_ASSERT(e2e_is_denial(&r, "BankAccountUpdate", 2, 120,
                            e2e_retry_floor(120, since), 120));
    CU_ASSERT_STRING_EQUAL(test_http_header(&r, "Content-Type") ?: "",
                           "application/problem+json");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "\"action\":\"BankAccountUpdate\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "\"restrictionEndTime\":"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "\"retryAfterMs\":"));
    test_http_free(&r);

    /* Another member from the same address: the address is over too. */
    CU_ASSERT_EQUAL(post_status("bank", "member=M-other", "account=1"), 429);
}

/* Seed scenario 2: 3 per 30 min, then locked out for 30 min. */
static void test_forgot_block_lock(void)
{
    long long since;
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    for (int i = 0; i < 3; i++) {
        post(&r, "forgot", NULL, "account=login-a1");
        CU_ASSERT(e2e_body_starts(&r, 200, "ok forgot"));
        test_http_free(&r);
    }
    since = mono_ms(); /* the lock is made by the first denial */
    for (int i = 0; i < 2; i++) {
        post(&r, "forgot", NULL, "account=login-a1");
        CU_ASSERT(e2e_is_denial(&r, "SecureForgotAccount", 3, 1800,
                                e2e_retry_floor(1800, since), 1800));
        CU_ASSERT_PTR_NULL(strstr(r.body, "login-a1"));
        test_http_free(&r);
    }
    /* The lock is the account's, not everybody's. */
    CU_ASSERT_EQUAL(post_status("forgot", NULL, "account=login-a2"), 200);
}

/* Seed scenario 5: member and promo code together are one identity. */
static void test_promo_composite(void)
{
    char url[E2E_URL];
    long long since;
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    since = mono_ms();
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(get_status("op=promo&member=m1&code=SPRING24"), 200);
    }
    e2e_http(&r,
             (const char *[]){
                 e2e_url(url, APP "?op=promo&member=m1&code=SPRING24"), NULL});
    CU_ASSERT(e2e_is_denial(&r, "PromoQuery", 10, 60,
                            e2e_retry_floor(60, since), 60));
    test_http_free(&r);
    CU_ASSERT_EQUAL(get_status("op=promo&member=m1&code=SUMMER24"), 200);
    CU_ASSERT_EQUAL(get_status("op=promo&member=m2&code=SPRING24"), 200);
    /* The parameter order does not make a new identity. */
    CU_ASSERT_EQUAL(get_status("code=SPRING24&member=m1&op=promo"), 429);
}

/* form: (login), cookie: (compose) and header: (resend) identities. */
static void test_identity_sources(void)
{
    const char *acc1[] = {"-H", "X-Account-Id: acc-1", "-d", "", NULL, NULL};
    const char *acc2[] = {"-H", "X-Account-Id: acc-2", "-d", "", NULL, NULL};

    char url[E2E_URL];

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    e2e_url(url, APP "?op=resend");
    acc1[4] = acc2[4] = url;
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(post_status("login", NULL, "member=u1&password=demo"),
                        200);
    }
    CU_ASSERT_EQUAL(post_status("login", NULL, "password=demo&member=u1"), 429);
    CU_ASSERT_EQUAL(post_status("login", NULL, "member=u2&password=demo"), 200);

    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(
            post_status("compose", "SESSIONID=s1", "to=a&message=b"), 200);
    }
    CU_ASSERT_EQUAL(
        post_status("compose", "x=1; SESSIONID=s1", "to=a&message=b"), 429);
    CU_ASSERT_EQUAL(post_status("compose", "SESSIONID=s2", "to=a&message=b"),
                    200);
    /* the application sends a message without a session too: refused
     * (it would not be counted), however often */
    for (int i = 0; i < 7; i++) {
        CU_ASSERT_EQUAL(post_status("compose", i % 2 ? "SESSIONID=" : NULL,
                                    "to=a&message=b"),
                        400);
    }

    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(e2e_status(acc1), 200);
    }
    CU_ASSERT_EQUAL(e2e_status(acc1), 429);
    CU_ASSERT_EQUAL(e2e_status(acc2), 200);
}

/* Three bank updates by three members, each claiming another address
 * in X-Forwarded-For: the statuses in st[]. */
static void spoofed_updates(int st[3])
{
    char url[E2E_URL];
    static const char *const xff[] = {"X-Forwarded-For: 198.51.100.1",
                                      "X-Forwarded-For: 198.51.100.2",
                                      "X-Forwarded-For: 198.51.100.3"};
    static const char *const members[] = {"member=a", "member=b", "member=c"};

    for (int i = 0; i < 3; i++) {
        st[i] = e2e_status(
            (const char *[]){"-H", xff[i], "-b", members[i], "-d", "account=1",
                             e2e_url(url, APP "?op=bank"), NULL});
    }
}

/* The client is 127.0.0.1; the example trusts only 10.0.0.0/8, so its
 * X-Forwarded-For is ignored.  Trusting 127.0.0.1 makes it count. */
static void test_xff_untrusted_ignored(void)
{
    char url[E2E_URL];
    const char *trust_local[] = {"trustedProxies=\"10.0.0.0/8\"",
                                 "trustedProxies=\"127.0.0.1\"", NULL};
    int st[3];

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    spoofed_updates(st);
    CU_ASSERT_EQUAL(st[0], 200);
    CU_ASSERT_EQUAL(st[1], 200);
    CU_ASSERT_EQUAL(st[2], 429);

    e2e_stop();
    CU_ASSERT_FATAL(e2e_start_cgi(trust_local) == 0);
    spoofed_updates(st);
    CU_ASSERT_EQUAL(st[0], 200);
    CU_ASSERT_EQUAL(st[1], 200);
    CU_ASSERT_EQUAL(st[2], 200);
    /* 198.51.100.1 is now an identity of its own: a second hit is fine,
     * the third is over. */
    for (int i = 0; i < 2; i++) {
        st[i] = e2e_status(
            (const char *[]){"-H", "X-Forwarded-For: 203.0.113.7, 198.51.100.1",
                             "-b", i == 0 ? "member=d" : "member=e", "-d",
                             "account=1", e2e_url(url, APP "?op=bank"), NULL});
    }
    CU_ASSERT_EQUAL(st[0], 200);
    CU_ASSERT_EQUAL(st[1], 429);
}

/* Writes head, then size pseudo-random bytes (letters, or any byte when
 * binary) to DIR/name; its path (in path, the caller's), or NULL. */
static const char *write_big(char path[TEST_PATH_MAX], const char *name,
                             const char *head, size_t size, bool binary)
{
    size_t hlen = strlen(head);
    char *buf = malloc(hlen + size);
    unsigned x = 12345;
    int rc;

    if (buf == NULL) {
        return NULL;
    }
    memcpy(buf, head, hlen);
    for (size_t i = 0; i < size; i++) {
        x = x * 1103515245u + 12345u;
        buf[hlen + i] = binary ? (char)(x >> 16) : (char)('a' + (x >> 16) % 26);
    }
    e2e_path(path, name);
    rc = test_write_file(path, buf, hlen + size);
    free(buf);
    return rc == 0 ? path : NULL;
}

/* 2 MiB in: a form body that reaches the program whole; 2 MiB out: a
 * program echoing its stdin.  A route that must read such a body (a form:
 * identity, the body past formMax) answers 413 rather than count from its
 * head. */
static void test_large_bodies(void)
{
    char url[E2E_URL];
    const char *form_id[] = {"from=\"cookie:SESSIONID\"", "from=\"form:to\"",
                             NULL};
    char data[TEST_PATH_MAX + 1], form[TEST_PATH_MAX + 1], expect[64];
    char big[TEST_PATH_MAX];
    const char *path;
    test_http_t r;
    size_t len;
    char *sent;

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    /* Like most CGI programs it reads its whole body before answering:
     * nginx stops sending a request body once the response has begun. */
    CU_ASSERT_FATAL(e2e_write_cgi("echo.cgi",
                                  "#!/bin/sh\n"
                                  "tmp=@DIR@/echo.$$\n"
                                  "cat > \"$tmp\"\n"
                                  "printf 'Status: 200 OK\\r\\n"
                                  "Content-Type: application/octet-stream"
                                  "\\r\\n\\r\\n'\n"
                                  "cat \"$tmp\"\n"
                                  "rm -f \"$tmp\"\n") == 0);
    path = write_big(big, "form.txt", "to=bob&message=", 2 * MIB, false);
    CU_ASSERT_FATAL(path != NULL);
    snprintf(form, sizeof(form), "@%s", path);
    snprintf(expect, sizeof(expect), "ok compose: message sent (%d bytes)",
             2 * MIB);
    /* The compose route counts the session cookie: no body is read. */
    e2e_http(&r, (const char *[]){"-b", "SESSIONID=big", "--data-binary", form,
                                  e2e_url(url, APP "?op=compose"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, expect));
    test_http_free(&r);

    path = write_big(big, "blob.bin", "", 2 * MIB, true);
    CU_ASSERT_FATAL(path != NULL);
    snprintf(data, sizeof(data), "@%s", path);
    e2e_http(&r, (const char *[]){
                     "-H", "Content-Type: application/octet-stream",
                     "--data-binary", data, e2e_url(url, "/echo.cgi"), NULL});
    sent = test_read_file(path, &len);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_EQUAL(r.body_len, len);
    CU_ASSERT(sent != NULL && r.body_len == len &&
              memcmp(sent, r.body, len) == 0);
    free(sent);
    test_http_free(&r);

    /* Counted by the form's "to": a sixth message to bob is over
     * ComposeMessage's 5. */
    e2e_stop();
    CU_ASSERT_FATAL(e2e_start_cgi(form_id) == 0);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(post_status("compose", NULL, "to=bob&message=x"), 200);
    }
    CU_ASSERT_EQUAL(post_status("compose", NULL, "to=bob&message=x"), 429);
    /* 2 MiB is past formMax: a 413, not "bob" from the head (a later
     * "to" could be another); with most of the body unread, still the
     * 413, never a 502 (the rest must not turn the close into a reset). */
    for (int i = 0; i < 2; i++) {
        e2e_http(&r, (const char *[]){"--data-binary", form,
                                      e2e_url(url, APP "?op=compose"), NULL});
        CU_ASSERT(e2e_body_starts(&r, 413, "413 Content Too Large"));
        test_http_free(&r);
    }
}

/* A program that never answers is killed with its process group at
 * <Cgi timeout>, the client gets a 504, and the daemon keeps serving. */
static void test_cgi_timeout(void)
{
    char url[E2E_URL];
    const char *one_second[] = {"timeout=\"30\"", "timeout=\"1\"", NULL};
    char pids_path[TEST_PATH_MAX];
    long long start, took;
    int sh = 0, sleeper = 0;
    test_http_t r;
    char *pids;

    CU_ASSERT_FATAL(e2e_start_cgi(one_second) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("hang.cgi", "#!/bin/sh\n"
                                              "sleep 30 &\n"
                                              "echo \"$$ $!\" > @DIR@/pids\n"
                                              "wait\n") == 0);
    start = mono_ms();
    e2e_http(&r, (const char *[]){e2e_url(url, "/hang.cgi"), NULL});
    took = mono_ms() - start;
    CU_ASSERT_EQUAL(r.status, 504);
    CU_ASSERT(took >= 900 && took < test_scale_ms(5000));
    test_http_free(&r);

    snprintf(pids_path, sizeof(pids_path), "%s/pids", e2e.dir);
    pids = test_read_file(pids_path, NULL);
    CU_ASSERT_FATAL(pids != NULL);
    CU_ASSERT_EQUAL(sscanf(pids, "%d %d", &sh, &sleeper), 2);
    free(pids);
    for (long long end = mono_ms() + test_scale_ms(2000); mono_ms() < end;) {
        if (sh > 0 && sleeper > 0 && e2e_pid_gone(sh) &&
            e2e_pid_gone(sleeper)) {
            break;
        }
        usleep(10000);
    }
    CU_ASSERT(sh > 0 && e2e_pid_gone(sh));
    CU_ASSERT(sleeper > 0 && e2e_pid_gone(sleeper));
    CU_ASSERT(test_proc_running(&e2e.fcgi));
    CU_ASSERT_EQUAL(get_status("op="), 200);
}

int register_e2e_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("e2e", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    if (s == NULL || CU_add_test(s, "cgi index", test_index) == NULL ||
        CU_add_test(s, "BankAccountUpdate 2/120s", test_bank_account_update) ==
            NULL ||
        CU_add_test(s, "SecureForgotAccount lock", test_forgot_block_lock) ==
            NULL ||
        CU_add_test(s, "PromoQuery composite", test_promo_composite) == NULL ||
        CU_add_test(s, "identity sources", test_identity_sources) == NULL ||
        CU_add_test(s, "X-Forwarded-For untrusted",
                    test_xff_untrusted_ignored) == NULL ||
        CU_add_test(s, "2 MiB bodies", test_large_bodies) == NULL ||
        CU_add_test(s, "CGI timeout", test_cgi_timeout) == NULL) {
        return -1;
    }
    return e2e_add_ops_tests(s) == 0 && e2e_add_shape_tests(s) == 0 &&
                   e2e_add_failure_tests(s) == 0 &&
                   e2e_add_device_tests(s) == 0 && e2e_add_body_tests(s) == 0 &&
                   e2e_add_challenge_tests(s) == 0
               ? 0
               : -1;
}
