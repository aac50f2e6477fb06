/*
 * test_outcome.c - the response watcher (middleware/response/outcome.c):
 * statuses, Location prefixes and body texts judged on responses fed in
 * pieces, and what a cut, an overlong response or a body that cannot be
 * searched (HEAD, 204, 304, Content-Encoding) is judged.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/outcome.h"
#include "suites.h"

/* Judges text fed in pieces of step bytes (0: whole) against route, the
 * answer to a request of method; *why gets the reason of an undecided
 * one (why may be NULL). */
static mw_outcome_t judge_why(const suspect_conf_route_t *route,
                              const char *method, const char *text, size_t step,
                              bool complete, const char **why)
{
    mw_watch_t *w = calloc(1, sizeof(*w));
    size_t len = strlen(text);
    mw_outcome_t o;

    CU_ASSERT_FATAL(w != NULL && mw_watch_init(w, route, method, "shop.example",
                                               "/auth/login.php?x=1"));
    for (size_t i = 0; i < len; i += step != 0 ? step : len) {
        size_t n = step != 0 && len - i > step ? step : len - i;
        mw_watch_feed(w, text + i, n);
    }
    o = mw_watch_outcome(w, complete, why);
    mw_watch_free(w);
    free(w);
    return o;
}

/* Judges text, the answer to a POST. */
static mw_outcome_t judge(const suspect_conf_route_t *route, const char *text,
                          size_t step, bool complete)
{
    return judge_why(route, "POST", text, step, complete, NULL);
}

static suspect_conf_route_t route_of(suspect_count_t count,
                                     const suspect_conf_outcome_t *o, size_t n)
{
    suspect_conf_route_t r;

    memset(&r, 0, sizeof(r));
    r.count = count;
    r.outcomes = o;
    r.noutcomes = n;
    return r;
}

static void test_statuses(void)
{
    suspect_conf_outcome_t o[1] = {
        {2, {401, 403}, NULL, NULL, 4096, 1, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_FAILURES, o, 1);

    CU_ASSERT_EQUAL(judge(&r, "Status: 401 No\r\n\r\nx", 0, true),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r, "status:403\n\n", 3, true), MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r, "Content-Type: text/plain\r\n\r\nhi", 1, true),
                    MW_OUTCOME_SUCCEEDED); /* no Status: 200 */
    /* the first three digits, as nginx reads them */
    CU_ASSERT_EQUAL(judge(&r, "Status: 4011\r\n\r\n", 0, true),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r, "Status: 40", 0, false), MW_OUTCOME_UNKNOWN);
    CU_ASSERT_EQUAL(judge(&r, "", 0, true), MW_OUTCOME_UNKNOWN);
}

static void test_location(void)
{
    suspect_conf_outcome_t o[1] = {
        {0, {0}, "/login?error", NULL, 4096, 1, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_FAILURES, o, 1);

    CU_ASSERT_EQUAL(judge(&r, "Location: /login?error=1\r\n\r\n", 5, true),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r,
                          "Location: https://shop.example/login?error\r\n\r\n",
                          0, true),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r, "Location: /home\r\n\r\n", 0, true),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(judge(&r, "Status: 200\r\n\r\n", 0, true),
                    MW_OUTCOME_SUCCEEDED);
    /* a failure redirected to another host still counts */
    CU_ASSERT_EQUAL(
        judge(&r, "Location: https://sso.example/login?error\r\n\r\n", 0, true),
        MW_OUTCOME_FAILED);
    /* a Location that cannot be read one way counts */
    CU_ASSERT_EQUAL(judge(&r, "Location: /home\\x\r\n\r\n", 0, true),
                    MW_OUTCOME_UNKNOWN);
}

/* header="Set-Cookie: %7C0%7C": any line of that name holds the text;
 * header="X-Failed" is there at all. */
static void test_header(void)
{
    suspect_conf_outcome_t o[2] = {
        {0, {0}, NULL, NULL, 4096, 1, NULL, "Set-Cookie", "%7C0%7C"},
        {0, {0}, NULL, NULL, 4096, 2, NULL, "X-Login", NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_UNLESS_OK, o, 2);

    CU_ASSERT_EQUAL(judge(&r,
                          "Status: 302\r\nSet-Cookie: s=1\r\n"
                          "set-cookie: DW1=YWxpY2U%3D%7C0%7Cx; path=/\r\n\r\n",
                          3, true),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(judge(&r,
                          "Status: 403\r\nSet-Cookie: DW1=deleted\r\n\r\n"
                          "%7C0%7C",
                          0, true),
                    MW_OUTCOME_FAILED); /* in the body: not a header */
    CU_ASSERT_EQUAL(judge(&r, "X-Login: ok\r\n\r\n", 0, true),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(judge(&r, "X-Login-Not: ok\r\n\r\n", 0, true),
                    MW_OUTCOME_FAILED);
}

/* A <Success location> an attacker can make a failure spell: what the
 * client sent echoed into the failure's Location, an open redirect to
 * another host, dot segments, a backslash. */
static void test_location_spelled(void)
{
    static const struct {
        const char *location;
        mw_outcome_t want;
    } cases[] = {
        {"/account", MW_OUTCOME_SUCCEEDED},
        {"/account/home?tab=1#x", MW_OUTCOME_SUCCEEDED},
        {"https://shop.example/account", MW_OUTCOME_SUCCEEDED},
        {"HTTPS://SHOP.EXAMPLE/account", MW_OUTCOME_SUCCEEDED},
        {"//shop.example/account", MW_OUTCOME_SUCCEEDED},
        {"../account", MW_OUTCOME_SUCCEEDED}, /* from /auth/login.php */
        {"/x/../account", MW_OUTCOME_SUCCEEDED},
        /* what the client sent, echoed after the failure's own path */
        {"/login.php?failed=1&return=http://x/account", MW_OUTCOME_FAILED},
        {"/login.php?failed=1&return=/account", MW_OUTCOME_FAILED},
        {"/login.php#/account", MW_OUTCOME_FAILED},
        /* an open redirect to a host the client names */
        {"https://evil.example/account", MW_OUTCOME_FAILED},
        {"//evil.example/account", MW_OUTCOME_FAILED},
        {"https://shop.example@evil.example/account", MW_OUTCOME_FAILED},
        {"https://shop.example.evil.example/account", MW_OUTCOME_FAILED},
        {"///evil.example/account", MW_OUTCOME_FAILED},
        {"javascript:/account", MW_OUTCOME_FAILED},
        {"/accounts", MW_OUTCOME_FAILED},
        {"/account/..", MW_OUTCOME_FAILED},
        {"/account/%2e%2E/login", MW_OUTCOME_FAILED},
        {"account", MW_OUTCOME_FAILED}, /* /auth/account */
        /* cannot be read one way: counted as unknown */
        {"/\\evil.example/account", MW_OUTCOME_UNKNOWN},
        {"http:/account", MW_OUTCOME_UNKNOWN},
        {"/acc ount", MW_OUTCOME_UNKNOWN},
    };
    suspect_conf_outcome_t o[1] = {
        {1, {302}, "/account", NULL, 4096, 1, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_UNLESS_OK, o, 1);
    char text[200];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(text, sizeof(text), "Location: %s\r\n\r\n", cases[i].location);
        if (judge(&r, text, 0, true) != cases[i].want) {
            CU_FAIL(cases[i].location);
        }
    }
    /* hosts= replaces the request's own Host */
    o[0].hosts = "www.shop.example shop.example:8443";
    CU_ASSERT_EQUAL(judge(&r,
                          "Location: https://shop.example:8443/account\r\n\r\n",
                          0, true),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(
        judge(&r, "Location: https://shop.example/account\r\n\r\n", 0, true),
        MW_OUTCOME_FAILED);
    /* a query in the pattern takes part, as a prefix of the query */
    o[0].hosts = NULL;
    o[0].location = "/account?welcome";
    CU_ASSERT_EQUAL(judge(&r, "Location: /account?welcome=1\r\n\r\n", 0, true),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(judge(&r, "Location: /account?x=welcome\r\n\r\n", 0, true),
                    MW_OUTCOME_FAILED);
}

static void test_body_text(void)
{
    suspect_conf_outcome_t o[1] = {
        {1, {200}, NULL, "Invalid password", 32, 1, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_FAILURES, o, 1);

    /* found across pieces */
    CU_ASSERT_EQUAL(judge(&r, "\r\n<p>Invalid password</p>", 2, true),
                    MW_OUTCOME_FAILED);
    /* past the bytes searched: not found */
    CU_ASSERT_EQUAL(judge(&r,
                          "\r\n0123456789012345678901234567890Invalid password",
                          0, true),
                    MW_OUTCOME_SUCCEEDED);
    /* a cut response that may still have held it: unknown */
    CU_ASSERT_EQUAL(judge(&r, "\r\n<p>Inval", 0, false), MW_OUTCOME_UNKNOWN);
    /* a complete short one without it: succeeded */
    CU_ASSERT_EQUAL(judge(&r, "\r\n<p>Welcome</p>", 0, true),
                    MW_OUTCOME_SUCCEEDED);
    /* another status: the pattern does not match */
    CU_ASSERT_EQUAL(judge(&r, "Status: 500\r\n\r\nInvalid password", 0, true),
                    MW_OUTCOME_SUCCEEDED);
}

static void test_success_patterns(void)
{
    suspect_conf_outcome_t o[2] = {
        {1, {302}, "/account", NULL, 4096, 1, NULL, NULL, NULL},
        {1, {200}, NULL, "Welcome", 64, 2, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_UNLESS_OK, o, 2);

    CU_ASSERT_EQUAL(judge(&r, "Location: /account\r\n\r\n", 0, true),
                    MW_OUTCOME_SUCCEEDED); /* 302 implied */
    CU_ASSERT_EQUAL(judge(&r, "\r\nWelcome back", 4, true),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(judge(&r, "\r\nInvalid code", 0, true), MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r, "Status: 502\r\n\r\n", 0, true),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge(&r, "\r\nWel", 0, false), MW_OUTCOME_UNKNOWN);
}

/* A body that cannot be searched (HEAD, 204, 304, Content-Encoding) is
 * never "without the text": the pattern is undecided, the attempt counts
 * with the reason; a pattern without a text still judges. */
static void test_blind_body(void)
{
    suspect_conf_outcome_t o[2] = {
        {1, {401}, NULL, NULL, 4096, 1, NULL, NULL, NULL},
        {0, {0}, NULL, "Invalid password", 64, 2, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_FAILURES, o, 2);
    const char *why = "";

    CU_ASSERT(mw_outcome_reads_body(&r));
    CU_ASSERT_EQUAL(
        judge_why(&r, "HEAD", "Content-Type: text/html\r\n\r\n", 0, true, &why),
        MW_OUTCOME_UNKNOWN);
    CU_ASSERT(why != NULL && strstr(why, "HEAD") != NULL);
    CU_ASSERT_EQUAL(judge_why(&r, "HEAD", "Status: 401\r\n\r\n", 0, true, &why),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_PTR_NULL(why);
    CU_ASSERT_EQUAL(
        judge(&r, "Content-Encoding: gzip\r\n\r\n\x1f\x8b\x08", 0, true),
        MW_OUTCOME_UNKNOWN);
    /* every Content-Encoding line counts, any case; identity is plain */
    CU_ASSERT_EQUAL(judge(&r,
                          "content-encoding: identity\r\n"
                          "CONTENT-ENCODING:  br \r\n\r\nWelcome",
                          3, true),
                    MW_OUTCOME_UNKNOWN);
    CU_ASSERT_EQUAL(
        judge(&r, "Content-Encoding: Identity\r\n\r\nWelcome", 0, true),
        MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_EQUAL(judge(&r,
                          "Content-Encoding: identity\r\n\r\nInvalid password",
                          0, true),
                    MW_OUTCOME_FAILED);
    CU_ASSERT_EQUAL(judge_why(&r, "GET", "Status: 304\r\n\r\n", 0, true, &why),
                    MW_OUTCOME_UNKNOWN);
    CU_ASSERT(why != NULL && strstr(why, "304") != NULL);
    CU_ASSERT_EQUAL(judge(&r, "Status: 204\r\n\r\n", 0, true),
                    MW_OUTCOME_UNKNOWN);
    CU_ASSERT_EQUAL(judge_why(&r, "GET", "\r\nWelcome", 0, true, &why),
                    MW_OUTCOME_SUCCEEDED);
    CU_ASSERT_PTR_NULL(why);
}

/* A success text that cannot be read is no success: counted. */
static void test_blind_success(void)
{
    suspect_conf_outcome_t o[1] = {
        {1, {200}, NULL, "Welcome", 64, 1, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_UNLESS_OK, o, 1);
    suspect_conf_outcome_t s[1] = {
        {1, {303}, NULL, NULL, 4096, 1, NULL, NULL, NULL}};
    suspect_conf_route_t plain = route_of(SUSPECT_COUNT_UNLESS_OK, s, 1);

    CU_ASSERT_EQUAL(judge_why(&r, "HEAD", "\r\n", 0, true, NULL),
                    MW_OUTCOME_UNKNOWN);
    CU_ASSERT_EQUAL(judge(&r, "Content-Encoding: gzip\r\n\r\nWelcome", 0, true),
                    MW_OUTCOME_UNKNOWN);
    CU_ASSERT_EQUAL(judge(&r, "\r\nWelcome", 0, true), MW_OUTCOME_SUCCEEDED);
    /* no text: nothing to read, a HEAD is judged by its status */
    CU_ASSERT(!mw_outcome_reads_body(&plain));
    CU_ASSERT_EQUAL(
        judge_why(&plain, "HEAD", "Status: 303\r\n\r\n", 0, true, NULL),
        MW_OUTCOME_SUCCEEDED);
}

static void test_overlong_headers(void)
{
    suspect_conf_outcome_t o[1] = {
        {1, {200}, NULL, NULL, 4096, 1, NULL, NULL, NULL}};
    suspect_conf_route_t r = route_of(SUSPECT_COUNT_UNLESS_OK, o, 1);
    char *big = malloc(MW_OUTCOME_HEAD_MAX + 64);

    memset(big, 'a', MW_OUTCOME_HEAD_MAX + 32);
    memcpy(big, "X-Pad: ", 7);
    strcpy(big + MW_OUTCOME_HEAD_MAX + 32, "\r\n\r\nok");
    CU_ASSERT_EQUAL(judge(&r, big, 1000, true), MW_OUTCOME_UNKNOWN);
    free(big);
}

int deny_add_outcome_tests(CU_pSuite s)
{
    return CU_add_test(s, "outcome: statuses", test_statuses) == NULL ||
                   CU_add_test(s, "outcome: location", test_location) == NULL ||
                   CU_add_test(s, "outcome: response headers", test_header) ==
                       NULL ||
                   CU_add_test(s, "outcome: a location the client spells",
                               test_location_spelled) == NULL ||
                   CU_add_test(s, "outcome: body text", test_body_text) ==
                       NULL ||
                   CU_add_test(s, "outcome: success patterns",
                               test_success_patterns) == NULL ||
                   CU_add_test(s, "outcome: overlong headers",
                               test_overlong_headers) == NULL ||
                   CU_add_test(s, "outcome: a body that cannot be read",
                               test_blind_body) == NULL ||
                   CU_add_test(s, "outcome: a success that cannot be read",
                               test_blind_success) == NULL
               ? -1
               : 0;
}
