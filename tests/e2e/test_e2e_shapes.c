/*
 * test_e2e_shapes.c - suite "e2e", the other deployments of examples/:
 *   - nginx -> suspect-fcgi -> php-cgi -b (suspect-php.xml, the PHP app);
 *   - nginx auth_request -> suspect-fcgi, nginx -> php-cgi for the app
 *     (suspect-auth-request.xml): the 403 mapped back to a 429;
 *   - lighttpd with suspect-fcgi as its FastCGI Authorizer and mod_cgi
 *     running the CGI app (suspect-authorizer.xml);
 *   - Apache mod_authnz_fcgi the same way, over TCP (apache/).
 * Each runs the bank scenario end to end and what is special to it.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/util.h"

#define MIB (1024 * 1024)

static void test_php_upstream(void)
{
    char url[E2E_URL];
    char data[TEST_PATH_MAX + 1], path[TEST_PATH_MAX], expect[64];
    test_http_t r;
    char *form;

    CU_ASSERT_FATAL(e2e_start_php(NULL) == 0);
    e2e_http(&r, (const char *[]){e2e_url(url, "/index.php"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    e2e_bank_scenario("/index.php?op=bank", NULL);

    /* form: identity read by suspect-fcgi, the body replayed to PHP. */
    for (int i = 0; i < 3; i++) {
        e2e_http(&r,
                 (const char *[]){"-d", "member=p1&password=demo",
                                  e2e_url(url, "/index.php?op=login"), NULL});
        CU_ASSERT(i < 2 ? e2e_body_starts(&r, 200, "ok login")
                        : r.status == 429);
        test_http_free(&r);
    }

    /* 2 MiB through the FastCGI client. */
    form = malloc(2 * MIB + 32);
    CU_ASSERT_FATAL(form != NULL);
    strcpy(form, "to=bob&message=");
    memset(form + strlen(form), 'q', 2 * MIB);
    snprintf(path, sizeof(path), "%s/form.txt", e2e.dir);
    CU_ASSERT_FATAL(test_write_file(path, form, 15 + 2 * MIB) == 0);
    free(form);
    snprintf(data, sizeof(data), "@%s", path);
    snprintf(expect, sizeof(expect), "ok compose: message sent (%d bytes)",
             2 * MIB);
    e2e_http(&r, (const char *[]){"-b", "SESSIONID=big", "--data-binary", data,
                                  e2e_url(url, "/index.php?op=compose"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, expect));
    test_http_free(&r);
}

static void test_nginx_auth_request(void)
{
    char url[E2E_URL];
    long long since;
    test_http_t r;
    char path[128];

    CU_ASSERT_FATAL(e2e_start_auth_request(NULL) == 0);
    e2e_http(&r, (const char *[]){e2e_url(url, "/index.php"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    e2e_bank_scenario("/index.php?op=bank", NULL);

    /* The query string reaches the subrequest (the $request_uri map). */
    since = mono_ms();
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(
            e2e_status((const char *[]){
                e2e_url(url, "/index.php?op=promo&member=q1&code=SPRING24"),
                NULL}),
            200);
    }
    snprintf(path, sizeof(path), "/index.php?op=promo&member=q1&code=SPRING24");
    e2e_http(&r, (const char *[]){e2e_url(url, path), NULL});
    CU_ASSERT(e2e_is_denial(&r, "PromoQuery", 10, 60,
                            e2e_retry_floor(60, since), 60));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "Too many requests"));
    test_http_free(&r);
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){
            e2e_url(url, "/index.php?op=promo&member=q2&code=SPRING24"), NULL}),
        200);
}

static void test_lighttpd_authorizer(void)
{
    const char *resend[] = {"-H", "X-Account-Id: acc-9", "-d", "", NULL, NULL};
    long long since;
    test_http_t r;
    char url[E2E_URL], index[E2E_URL];

    CU_ASSERT_FATAL(e2e_start_authorizer(NULL) == 0);
    resend[4] = e2e_url(url, "/app.cgi?op=resend");
    e2e_http(&r, (const char *[]){e2e_url(index, "/app.cgi"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    /* The bodies reach the app after the authorizer said yes. */
    e2e_bank_scenario("/app.cgi?op=bank", "Accept: application/problem+json");
    e2e_bank(&r, "/app.cgi?op=bank", "Accept: application/problem+json");
    CU_ASSERT_EQUAL(r.status, 429);
    CU_ASSERT_PTR_NOT_NULL(strstr(test_http_header(&r, "Content-Type") ?: "",
                                  "application/problem+json"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "\"retryAfterMs\":"));
    test_http_free(&r);

    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(e2e_status(resend), 200);
    }
    since = mono_ms(); /* the lock is made by the denial */
    e2e_http(&r, resend);
    CU_ASSERT(e2e_is_denial(&r, "LoginVerificationResend", 3, 600,
                            e2e_retry_floor(900, since), 900));
    test_http_free(&r);
}

/* Apache mod_authnz_fcgi with suspect-fcgi as its authorizer (TCP). */
static void test_apache_authorizer(void)
{
    char url[E2E_URL];
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_apache(NULL) == 0);
    e2e_http(&r, (const char *[]){e2e_url(url, "/app.cgi"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    e2e_bank_scenario("/app.cgi?op=bank", NULL);
    /* The denial's body reaches the client (Apache labels it HTML). */
    e2e_bank(&r, "/app.cgi?op=bank", "Accept: application/problem+json");
    CU_ASSERT_EQUAL(r.status, 429);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "\"retryAfterMs\":"));
    test_http_free(&r);
}

int e2e_add_shape_tests(CU_pSuite s)
{
    if (CU_add_test(s, "php-cgi upstream", test_php_upstream) == NULL ||
        CU_add_test(s, "nginx auth_request", test_nginx_auth_request) == NULL ||
        CU_add_test(s, "lighttpd authorizer", test_lighttpd_authorizer) ==
            NULL ||
        CU_add_test(s, "apache authorizer", test_apache_authorizer) == NULL) {
        return -1;
    }
    return 0;
}
