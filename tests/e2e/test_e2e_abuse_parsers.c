/*
 * test_e2e_abuse_parsers.c - the "abuse" suite, part three: where the
 * application's parser and Suspect's could disagree.
 *
 *  - Cookie names as PHP files them ("SESSION.ID", "SESSION ID" and
 *    "SESSION[ID" are PHP's "SESSION_ID"; PHP keeps the first), through
 *    nginx -> suspect-fcgi -> a real php-cgi printing the cookie it got;
 *  - bodies Perl's CGI.pm reads as a form without the exact form media
 *    type (a type that starts with it, no CONTENT_TYPE at all), through
 *    nginx -> suspect-fcgi -> a real CGI.pm program printing the member it
 *    got (needs Debian's libcgi-pm-perl), and straight in FastCGI;
 *  - X-Forwarded-For and Forwarded from untrusted peers (ignored: every
 *    spoof counts against the peer) and from a trusted proxy (the
 *    rightmost untrusted hop, IPv6 in brackets with a port grouped by
 *    /64, a second header line appended, the other header ignored).
 * Each request is counted against what the application reads, or refused
 * (400) before the application runs.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "test_e2e_abuse.h"
#include "helpers/util.h"

/* Whether r has status and the body line want (else says). */
static bool got(const test_http_t *r, int status, const char *want)
{
    bool ok = r->status == status &&
              (want == NULL || strncmp(r->body, want, strlen(want)) == 0);

    if (!ok) {
        fprintf(stderr, "\n  got %d '%.80s', want %d '%s'\n", r->status,
                r->body, status, want != NULL ? want : "");
    }
    return ok;
}

/* POSTs to url with the raw Cookie header cookie. */
static void post_cookie(test_http_t *r, const char *url, const char *cookie)
{
    char h[512];

    snprintf(h, sizeof(h), "Cookie: %s", cookie);
    e2e_http(r, (const char *[]){"-H", h, "-d", "to=a", url, NULL});
}

/* PHP's cookie names: the cookie PHP reads under SESSION_ID is the one
 * counted; two candidates that differ are refused. */
static void test_php_cookie_names(void)
{
    static const struct {
        const char *cookie;
        int status;
        const char *app; /* PHP's line, NULL: PHP did not run */
    } cases[] = {
        {"SESSION.ID=victim", 200, "[victim]"},
        {"SESSION ID=victim", 200, "[victim]"},
        {"SESSION[ID=victim", 200, "[victim]"},
        {"lang=en;SESSION_ID=victim", 200, "[victim]"},
        {"SESSION_ID=victim; SESSION_ID=x", 200, "[victim]"},
        {"SESSION.ID=victim", 429, NULL}, /* the sixth: over 5 */
        /* PHP reads victim, a byte-for-byte parser rot: refused. */
        {"SESSION.ID=victim; SESSION_ID=rot-1", 400, NULL},
        {"SESSION_ID =rot-2; SESSION_ID=victim", 400, NULL},
        {"SESSION_ID[]=rot-3; SESSION_ID=victim", 400, NULL},
        /* Perl decodes the name: counted as victim, PHP reads none. */
        {"SESSION%5FID=victim", 429, NULL},
        /* Two cookies of one name: every parser takes the first. */
        {"SESSION_ID=fresh; SESSION_ID=victim", 200, "[fresh]"},
    };
    const char *edits[] = {"cookie:SESSIONID", "cookie:SESSION_ID", NULL};
    char path[TEST_PATH_MAX], url[E2E_URL];
    static const char php[] =
        "<?php echo '[', $_COOKIE['SESSION_ID'] ?? '-', \"]\\n\";\n";
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_php(edits) == 0);
    snprintf(path, sizeof(path), "%s/index.php", e2e.app);
    CU_ASSERT_FATAL(test_write_file(path, php, strlen(php)) == 0);
    e2e_url(url, "/index.php?op=compose");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        post_cookie(&r, url, cases[i].cookie);
        CU_ASSERT(got(&r, cases[i].status, cases[i].app));
        CU_ASSERT_PTR_NULL(cases[i].app == NULL ? strstr(r.body, "victim]")
                                                : NULL);
        test_http_free(&r);
    }
}

/* The CGI.pm program: prints the member it read. */
static const char cgipm[] =
    "#!/usr/bin/perl\n"
    "use CGI;\n"
    "my $q = CGI->new;\n"
    "print \"Content-Type: text/plain\\r\\n\\r\\n[\",\n"
    "    scalar($q->param('member')) // '-', \"]\\n\";\n";

/* A login with body and content_type (NULL: no CONTENT_TYPE at all)
 * straight in FastCGI: its status, the program's output in out. */
static int login_raw(const char *content_type, const char *body, char *out,
                     size_t size)
{
    char script[TEST_PATH_MAX], clen[16], params[4096];
    const char *vars[] = {"REQUEST_METHOD",
                          "POST",
                          "REQUEST_URI",
                          "/app.cgi?op=login",
                          "QUERY_STRING",
                          "op=login",
                          "SCRIPT_NAME",
                          "/app.cgi",
                          "SCRIPT_FILENAME",
                          script,
                          "REMOTE_ADDR",
                          "192.0.2.1",
                          "CONTENT_LENGTH",
                          clen,
                          "CONTENT_TYPE",
                          content_type,
                          NULL};
    size_t plen = 0;
    int fd = e2e_fcgi_connect(), rc;

    snprintf(script, sizeof(script), "%s/app.cgi", e2e.app);
    snprintf(clen, sizeof(clen), "%zu", strlen(body));
    for (size_t k = 0; vars[k] != NULL && vars[k + 1] != NULL; k += 2) {
        e2e_fcgi_pair(params, sizeof(params), &plen, vars[k], vars[k + 1]);
    }
    rc = e2e_fcgi_exchange(fd, 1, false, params, plen, body, strlen(body), out,
                           size, 5000);
    close(fd);
    return rc == 0 ? e2e_cgi_status(out) : -1;
}

/* POSTs body to /app.cgi?op=login through nginx with the Content-Type
 * header ct ("" removes it). */
static void login_nginx(test_http_t *r, const char *ct, const char *body)
{
    char url[E2E_URL];
    char h[256];

    snprintf(h, sizeof(h), "Content-Type:%s%s", ct[0] != '\0' ? " " : "", ct);
    e2e_http(r, (const char *[]){"-H", h, "--data-binary", body,
                                 e2e_url(url, "/app.cgi?op=login"), NULL});
}

/* Bodies CGI.pm reads as forms are read as forms (the login's member,
 * 2 a day, then locked): no bypass through the media type. */
static void test_cgipm_form_types(void)
{
    const char *body = "member=cgipm&password=x";
    char out[4096];
    test_http_t r;

    if (system("perl -MCGI -e 1 2>/dev/null") != 0) {
        CU_FAIL("Perl's CGI.pm is missing (Debian: libcgi-pm-perl)");
        return;
    }
    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("app.cgi", cgipm) == 0);
    /* text/plain: neither CGI.pm nor Suspect reads it as a form. */
    login_nginx(&r, "text/plain", body);
    CU_ASSERT(got(&r, 200, "[-]"));
    test_http_free(&r);
    /* No CONTENT_TYPE (lighttpd sends none for a body without one). */
    CU_ASSERT_EQUAL(login_raw(NULL, body, out, sizeof(out)), 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "[cgipm]"));
    /* A type CGI.pm matches by its start. */
    login_nginx(&r, "application/x-www-form-urlencodedX", body);
    CU_ASSERT(got(&r, 200, "[cgipm]"));
    test_http_free(&r);
    /* Counted twice: the third is the lock, however spelt. */
    login_nginx(&r, "application/x-www-form-urlencoded-v2", body);
    CU_ASSERT(got(&r, 429, NULL));
    test_http_free(&r);
    CU_ASSERT_EQUAL(login_raw(NULL, body, out, sizeof(out)), 429);
    login_nginx(&r, "", body); /* nginx sends CONTENT_TYPE "" */
    CU_ASSERT(got(&r, 429, NULL));
    test_http_free(&r);
}

/* A login from addr with the extra variables {name, value, ..., NULL}:
 * its status. */
static int login_from(int fd, const char *addr, const char *const extra[])
{
    const char *vars[24] = {
        "REQUEST_METHOD", "POST",     "REQUEST_URI", "/app.cgi?op=login",
        "QUERY_STRING",   "op=login", "SCRIPT_NAME", "/app.cgi",
        "REMOTE_ADDR",    addr};
    size_t n = 10;
    char out[4096];

    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 22; i++) {
        vars[n++] = extra[i];
    }
    vars[n] = NULL;
    return abuse_decide(fd, 2, vars, out, sizeof(out));
}

#define XFF "HTTP_X_FORWARDED_FOR"
#define FWD "HTTP_FORWARDED"

/* Spoofs from an untrusted peer: every one counts against the peer. */
static void spoofs_ignored(int fd, const char *peer)
{
    static const char *const spoofs[][5] = {
        {XFF, "198.51.100.1", NULL},
        {XFF, "198.51.100.2", XFF, "198.51.100.3", NULL},
        {XFF, "garbage", NULL},
        {XFF, "[2001:db8::1]:80", NULL},
        {FWD, "for=198.51.100.4", NULL},
        {FWD, "for=\"[2001:db8::2]:443\"", NULL},
        {FWD, "for=10.0.0.1;proto=http, for=198.51.100.5", NULL},
        {XFF, "10.0.0.2", FWD, "for=10.0.0.3", NULL},
    };

    for (size_t i = 0; i < sizeof(spoofs) / sizeof(spoofs[0]); i++) {
        CU_ASSERT_EQUAL(login_from(fd, peer, spoofs[i]), i < 2 ? 200 : 429);
    }
}

/* Three logins through the trusted proxy 10.0.0.5 with XFF or Forwarded
 * values a, b, c (name the header): 200, 200, 429 when they are one
 * client. */
static void one_client(int fd, const char *name, const char *a, const char *b,
                       const char *c)
{
    const char *vals[] = {a, b, c};

    for (int i = 0; i < 3; i++) {
        const char *extra[] = {name, vals[i], NULL};

        CU_ASSERT_EQUAL(login_from(fd, "10.0.0.5", extra), i < 2 ? 200 : 429);
    }
}

/* X-Forwarded-For and Forwarded: believed only from the trusted proxy,
 * and only the header the configuration names. */
static void test_forwarded_spoofing(void)
{
    const char *fwd[] = {"header=\"x-forwarded-for\"", "header=\"forwarded\"",
                         NULL};
    int fd;

    CU_ASSERT_FATAL(abuse_start_authorizer(1000) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    spoofs_ignored(fd, "192.0.2.50");
    spoofs_ignored(fd, "2001:db8:50::1");
    /* Through the proxy: the rightmost hop it did not add, and a client
     * cannot rotate what comes before it. */
    one_client(fd, XFF, "198.51.100.9", " 198.51.100.9 ", "198.51.100.9");
    one_client(fd, XFF, "203.0.113.1, 198.51.100.10",
               "203.0.113.2,198.51.100.10", "unknown, 198.51.100.10");
    one_client(fd, XFF, "[2001:db8:5:6::1]:8080", "2001:db8:5:6::2",
               "[2001:db8:5:6:7::3]");
    /* Forwarded is not the configured header: the proxy is the client. */
    one_client(fd, FWD, "for=198.51.100.11", "for=198.51.100.12",
               "for=198.51.100.13");
    close(fd);

    e2e_stop();
    CU_ASSERT_FATAL(e2e_start_authorizer(fwd) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    spoofs_ignored(fd, "192.0.2.50");
    one_client(fd, FWD, "for=\"[2001:db8:9:9::1]:1\"",
               "for=198.51.100.1;proto=https, for=\"[2001:db8:9:9::2]\"",
               "for=\"2001:db8:9:9::3\";by=10.0.0.5");
    one_client(fd, XFF, "198.51.100.14", "198.51.100.15", "198.51.100.16");
    close(fd);
}

/* nginx 1.22 passes two Cookie header lines to PHP as two HTTP_COOKIE
 * variables (PHP keeps the last) and to suspect-fcgi too (which joins
 * them, the first cookie winning): the auth_request example passes PHP
 * the joined $http_cookie, so both read the first session. */
static void test_auth_request_two_cookie_lines(void)
{
    char url[E2E_URL];
    static const char php[] =
        "<?php echo '[', $_COOKIE['SESSIONID'] ?? '-', \"]\\n\";\n";
    char path[TEST_PATH_MAX], want[32], c1[64];
    test_http_t r;

    CU_ASSERT_FATAL(e2e_start_auth_request(NULL) == 0);
    snprintf(path, sizeof(path), "%s/index.php", e2e.app);
    CU_ASSERT_FATAL(test_write_file(path, php, strlen(php)) == 0);
    for (int i = 0; i < 3; i++) {
        snprintf(c1, sizeof(c1), "Cookie: SESSIONID=rot-%d", i);
        snprintf(want, sizeof(want), "[rot-%d]", i);
        e2e_http(&r, (const char *[]){
                         "-H", c1, "-H", "Cookie: SESSIONID=victim", "-d",
                         "to=a", e2e_url(url, "/index.php?op=compose"), NULL});
        CU_ASSERT(got(&r, 200, want));
        test_http_free(&r);
    }
}

int abuse_add_parser_tests(CU_pSuite s)
{
    if (CU_add_test(s, "PHP's cookie names", test_php_cookie_names) == NULL ||
        CU_add_test(s, "CGI.pm form media types", test_cgipm_form_types) ==
            NULL ||
        CU_add_test(s, "forwarded headers spoofed", test_forwarded_spoofing) ==
            NULL ||
        CU_add_test(s, "auth_request: two Cookie lines",
                    test_auth_request_two_cookie_lines) == NULL) {
        return -1;
    }
    return 0;
}
