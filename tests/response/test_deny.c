/*
 * test_deny.c - denial responses of middleware/response/deny.c: the exact
 * header lines, Retry-After and RateLimit rounding, Accept negotiation
 * (accept.c), the JSON body (checked by a small JSON parser and against
 * exact text), the HTML page, operator templates and their escaping,
 * buffer sizes and the 503 fail-closed variant.
 *
 * Length.  One suite for one pure module whose cases are exact expected
 * responses, long by nature; the helpers that parse them are at the top.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/deny.h"
#include "suites.h"

#define NOW 1700000000000LL

static suspect_rule_t rule = {
    "BankAccountUpdate", 2, 120, 0, 0, 0, 0, 0, 0, 0, 0};

/* A denial at NOW that ends retry_ms later. */
static suspect_decision_t denial(int64_t retry_ms)
{
    suspect_decision_t d;

    memset(&d, 0, sizeof(d));
    d.allowed = false;
    d.tripped = 0;
    d.limit = rule.limit_count;
    d.remaining = 0;
    d.restriction_end_ms = NOW + retry_ms;
    d.retry_after_ms = retry_ms;
    return d;
}

static mw_deny_t request(const suspect_decision_t *dec, const char *accept)
{
    mw_deny_t d;

    memset(&d, 0, sizeof(d));
    d.rule = &rule;
    d.decision = dec;
    d.now_ms = NOW;
    d.accept = accept;
    d.accept_len = accept != NULL ? strlen(accept) : 0;
    return d;
}

/* Room for a response build() writes, and for a header value. */
#define RESPONSE_MAX 16384
#define VALUE_MAX    256

/* The response for d, written into buf (the caller's), or "<error>" when
 * building it fails. */
static const char *build(char buf[RESPONSE_MAX], const mw_deny_t *d,
                         bool unavailable)
{
    size_t len = 0;
    suspect_rc_t rc = unavailable
                          ? mw_unavailable_build(d, buf, RESPONSE_MAX, &len)
                          : mw_deny_build(d, buf, RESPONSE_MAX, &len);

    if (rc != SUSPECT_OK) {
        return "<error>";
    }
    CU_ASSERT_EQUAL(len, strlen(buf));
    return buf;
}

/* The body of response r (after the blank line), or "". */
static const char *body_of(const char *r)
{
    const char *b = strstr(r, "\r\n\r\n");
    return b != NULL ? b + 4 : "";
}

/* The value of header name in response r, written into value (the
 * caller's), or "<none>". */
static const char *header(char value[VALUE_MAX], const char *r,
                          const char *name)
{
    const char *end = strstr(r, "\r\n\r\n");
    size_t n = strlen(name);

    for (const char *p = r; p != NULL && p < end; p = strstr(p, "\r\n")) {
        p += p == r ? 0 : 2;
        if (strncmp(p, name, n) == 0 && p[n] == ':' && p[n + 1] == ' ') {
            const char *e = strstr(p, "\r\n");
            snprintf(value, VALUE_MAX, "%.*s", (int)(e - p - n - 2), p + n + 2);
            return value;
        }
    }
    return "<none>";
}

/* ---- a minimal JSON parser, to check the bodies are valid JSON ---------- */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
        p++;
    }
    return p;
}

static const char *json_string(const char *p)
{
    if (*p++ != '"') {
        return NULL;
    }
    while (*p != '"') {
        if ((unsigned char)*p < 0x20) {
            return NULL;
        }
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++) {
                    if (strchr("0123456789abcdefABCDEF", p[i]) == NULL ||
                        p[i] == '\0') {
                        return NULL;
                    }
                }
                p += 4;
            } else if (*p == '\0' || strchr("\"\\/bfnrt", *p) == NULL) {
                return NULL;
            }
        }
        p++;
    }
    return p + 1;
}

static const char *json_digits(const char *p)
{
    const char *s = p;

    while (*p >= '0' && *p <= '9') {
        p++;
    }
    return p > s ? p : NULL;
}

static const char *json_number(const char *p)
{
    p += *p == '-';
    if (*p == '0') {
        p++;
    } else if ((p = json_digits(p)) == NULL) {
        return NULL;
    }
    if (*p == '.' && (p = json_digits(p + 1)) == NULL) {
        return NULL;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        p += *p == '+' || *p == '-';
        p = json_digits(p);
    }
    return p;
}

static const char *json_object(const char *p, int depth)
{
    p = json_ws(p + 1);
    if (*p == '}') {
        return p + 1;
    }
    for (;;) {
        p = json_string(json_ws(p));
        if (p == NULL || *(p = json_ws(p)) != ':') {
            return NULL;
        }
        p = json_value(p + 1, depth + 1);
        if (p == NULL) {
            return NULL;
        }
        p = json_ws(p);
        if (*p == '}') {
            return p + 1;
        }
        if (*p++ != ',') {
            return NULL;
        }
    }
}

static const char *json_value(const char *p, int depth)
{
    p = json_ws(p);
    if (depth > 16) {
        return NULL;
    }
    if (*p == '{') {
        return json_object(p, depth);
    }
    if (*p == '"') {
        return json_string(p);
    }
    if (strncmp(p, "true", 4) == 0 || strncmp(p, "null", 4) == 0) {
        return p + 4;
    }
    if (strncmp(p, "false", 5) == 0) {
        return p + 5;
    }
    return json_number(p);
}

static bool json_valid(const char *s)
{
    const char *p = json_value(s, 0);
    return p != NULL && *json_ws(p) == '\0';
}

static void test_json_checker(void)
{
    CU_ASSERT_TRUE(json_valid("{\"a\":1,\"b\":\"x\\u0001\",\"c\":-2.5e3}"));
    CU_ASSERT_TRUE(json_valid(" {} \n"));
    CU_ASSERT_FALSE(json_valid("{\"a\":1,}"));
    CU_ASSERT_FALSE(json_valid("{\"a\":\"x\ny\"}"));
    CU_ASSERT_FALSE(json_valid("{\"a\":\"\\x\"}"));
    CU_ASSERT_FALSE(json_valid("{\"a\":1} x"));
    CU_ASSERT_FALSE(json_valid("{\"a\" 1}"));
}

/* ---- headers and numbers ------------------------------------------------ */

static void test_exact_json_response(void)
{
    char resp[RESPONSE_MAX];
    suspect_decision_t dec = denial(120000);
    mw_deny_t d = request(&dec, "application/problem+json");
    const char *body =
        "{\"type\":\"about:blank\",\"title\":\"Too Many Requests\","
        "\"status\":429,\"detail\":\"Too many requests for this action; "
        "retry after 120 seconds.\",\"action\":\"BankAccountUpdate\","
        "\"restrictionEndTime\":1700000120000,\"retryAfterMs\":120000}\n";
    char want[2048];

    snprintf(want, sizeof(want),
             "Status: 429 Too Many Requests\r\n"
             "Retry-After: 120\r\n"
             "RateLimit-Policy: \"BankAccountUpdate\";q=2;w=120\r\n"
             "RateLimit: \"BankAccountUpdate\";r=0;t=120\r\n"
             "Cache-Control: no-store\r\n"
             "Content-Type: application/problem+json\r\n"
             "Content-Length: %zu\r\n"
             "\r\n%s",
             strlen(body), body);
    CU_ASSERT_STRING_EQUAL(build(resp, &d, false), want);
    CU_ASSERT_TRUE(json_valid(body_of(build(resp, &d, false))));
}

static const struct {
    int64_t retry_ms;
    const char *want;
} retry_cases[] = {
    {1, "1"},        {999, "1"},        {1000, "1"},
    {1001, "2"},     {1999, "2"},       {2000, "2"},
    {0, "1"},        {-5, "1"},         {119001, "120"},
    {120000, "120"}, {1800000, "1800"}, {31536000000LL, "31536000"},
};

static void test_retry_after_rounding(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    for (size_t i = 0; i < sizeof(retry_cases) / sizeof(retry_cases[0]); i++) {
        suspect_decision_t dec = denial(retry_cases[i].retry_ms);
        mw_deny_t d = request(&dec, NULL);
        const char *r = build(resp, &d, false);
        char t[64];

        CU_ASSERT_STRING_EQUAL(header(value, r, "Retry-After"),
                               retry_cases[i].want);
        snprintf(t, sizeof(t), "\"BankAccountUpdate\";r=0;t=%s",
                 retry_cases[i].want);
        CU_ASSERT_STRING_EQUAL(header(value, r, "RateLimit"), t);
    }
}

static void test_ratelimit_reset_from_end(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    /* t counts to restriction_end_ms; Retry-After from retry_after_ms */
    suspect_decision_t dec = denial(5000);
    mw_deny_t d = request(&dec, NULL);

    dec.restriction_end_ms = NOW + 9001;
    CU_ASSERT_STRING_EQUAL(header(value, build(resp, &d, false), "RateLimit"),
                           "\"BankAccountUpdate\";r=0;t=10");
    CU_ASSERT_STRING_EQUAL(header(value, build(resp, &d, false), "Retry-After"),
                           "5");
    /* an end that is not in the future falls back to Retry-After */
    dec.restriction_end_ms = NOW;
    CU_ASSERT_STRING_EQUAL(header(value, build(resp, &d, false), "RateLimit"),
                           "\"BankAccountUpdate\";r=0;t=5");
    /* no end at all: now + retry_after */
    dec.restriction_end_ms = 0;
    d.accept = "application/json";
    d.accept_len = strlen(d.accept);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(build(resp, &d, false), "\"restrictionEndTime\":1700000005000"));
}

static void test_status_override(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    suspect_decision_t dec = denial(1000);
    mw_deny_t d = request(&dec, "application/json");
    const char *r;

    d.status = 403;
    r = build(resp, &d, false);
    CU_ASSERT_EQUAL(strncmp(r, "Status: 403 Forbidden\r\n", 23), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r, "\"title\":\"Forbidden\",\"status\":403"));
    CU_ASSERT_STRING_EQUAL(header(value, r, "Content-Type"),
                           "application/json");
    d.status = 503;
    CU_ASSERT_EQUAL(strncmp(build(resp, &d, false),
                            "Status: 503 Service Unavailable\r\n", 33),
                    0);
    d.status = 499;
    CU_ASSERT_EQUAL(
        strncmp(build(resp, &d, false), "Status: 499 Client Error\r\n", 26), 0);
    d.status = 200;
    CU_ASSERT_STRING_EQUAL(build(resp, &d, false), "<error>");
    d.status = 600;
    CU_ASSERT_STRING_EQUAL(build(resp, &d, false), "<error>");
}

static void test_reasons(void)
{
    CU_ASSERT_STRING_EQUAL(mw_status_reason(429), "Too Many Requests");
    CU_ASSERT_STRING_EQUAL(mw_status_reason(403), "Forbidden");
    CU_ASSERT_STRING_EQUAL(mw_status_reason(503), "Service Unavailable");
    CU_ASSERT_STRING_EQUAL(mw_status_reason(401), "Unauthorized");
    CU_ASSERT_STRING_EQUAL(mw_status_reason(420), "Client Error");
    CU_ASSERT_STRING_EQUAL(mw_status_reason(599), "Server Error");
}

static void test_bad_arguments(void)
{
    suspect_decision_t dec = denial(1000);
    mw_deny_t d = request(&dec, NULL);
    suspect_rule_t noname = {"", 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    char buf[64];
    size_t len;

    CU_ASSERT_EQUAL(mw_deny_build(NULL, buf, sizeof(buf), &len),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, sizeof(buf), NULL), SUSPECT_E_INVAL);
    d.decision = NULL;
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, sizeof(buf), &len), SUSPECT_E_INVAL);
    d.decision = &dec;
    d.rule = NULL;
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, sizeof(buf), &len), SUSPECT_E_INVAL);
    d.rule = &noname;
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, sizeof(buf), &len), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_unavailable_build(&d, buf, sizeof(buf), &len),
                    SUSPECT_E_INVAL);
    d.rule = &rule;
    CU_ASSERT_EQUAL(mw_deny_build(&d, NULL, 10, &len), SUSPECT_E_INVAL);
}

static void test_buffer_sizes(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    suspect_decision_t dec = denial(1000);
    mw_deny_t d = request(&dec, NULL);
    char *full = strdup(build(resp, &d, false));
    size_t need = strlen(full);
    char *buf = malloc(need + 1);
    size_t len = 0;

    CU_ASSERT_FATAL(full != NULL && buf != NULL);
    CU_ASSERT_TRUE(need < MW_DENY_BUF);
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, 10, &len), SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(len, need);
    CU_ASSERT_STRING_EQUAL(buf, "Status: 4");
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, need, &len), SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(len, need);
    CU_ASSERT_EQUAL(mw_deny_build(&d, NULL, 0, &len), SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(len, need);
    CU_ASSERT_EQUAL(mw_deny_build(&d, buf, need + 1, &len), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(buf, full);
    /* Content-Length is the body's length */
    CU_ASSERT_EQUAL((size_t)atol(header(value, full, "Content-Length")),
                    strlen(body_of(full)));
    free(buf);
    free(full);
}

/* ---- Accept ------------------------------------------------------------- */

#define H MW_BODY_HTML
#define P MW_BODY_PROBLEM
#define J MW_BODY_JSON

static const struct {
    const char *accept;
    mw_body_kind_t want;
} accept_cases[] = {
    {NULL, H},
    {"", H},
    {"*/*", H},
    {"text/html", H},
    {"application/json", J},
    {"application/problem+json", P},
    {"APPLICATION/JSON", J},
    {"application/json; charset=utf-8", J},
    {"application/json, text/html", J},
    {"text/html, application/json", H},
    {"text/html;q=0.5, application/json", J},
    {"application/json;q=0.5, text/html;q=0.9", H},
    {"application/json;q=0.9, text/html;q=0.9", J},
    {" text/html ; q=0.9 , application/json ; q=0.9", H},
    {"application/*", P},
    {"text/*", H},
    {"text/html;q=0, */*", P},
    {"application/json;q=0, */*;q=0.1", H},
    {"application/json;q=0, application/problem+json;q=0, */*", H},
    {"image/png", H},
    {"application/json;q=abc, text/html;q=0.1", H},
    {"application/json;q=1.5", H},
    {"application/json;q=1.0001", H},
    {"application/json;q=1.000", J},
    {"application/json;q=0.001", J},
    {"application/json;Q=0.5", J},
    {"application/problem+json;q=0.8, application/json;q=0.9", J},
    {"application/problem+json, application/json", P},
    {"application/json, application/problem+json", J},
    {"*/*;q=0.8, application/json", J},
    {"application/json, */*", J},
    {"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
     "image/webp,*/*;q=0.8",
     H},
    {"application/json, text/plain, */*", J},
    {"text/html;level=1;q=0.2, application/json;q=0.1", H},
    {"/json, application/", H},
    {",,,", H},
    {"text/html;q=0", H},
};

static void test_accept_table(void)
{
    for (size_t i = 0; i < sizeof(accept_cases) / sizeof(accept_cases[0]);
         i++) {
        const char *a = accept_cases[i].accept;
        mw_body_kind_t got = mw_accept_choose(a, a != NULL ? strlen(a) : 0);
        if (got != accept_cases[i].want) {
            fprintf(stderr, "\naccept case %zu [%s]: got %d want %d\n", i,
                    a != NULL ? a : "(null)", got, accept_cases[i].want);
        }
        CU_ASSERT_EQUAL(got, accept_cases[i].want);
    }
}

static void test_content_types(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    suspect_decision_t dec = denial(1000);
    mw_deny_t d = request(&dec, "text/html");

    CU_ASSERT_STRING_EQUAL(
        header(value, build(resp, &d, false), "Content-Type"),
        "text/html; charset=utf-8");
    d = request(&dec, "application/json");
    CU_ASSERT_STRING_EQUAL(
        header(value, build(resp, &d, false), "Content-Type"),
        "application/json");
    CU_ASSERT_TRUE(json_valid(body_of(build(resp, &d, false))));
    d = request(&dec, "application/*");
    CU_ASSERT_STRING_EQUAL(
        header(value, build(resp, &d, false), "Content-Type"),
        "application/problem+json");
    CU_ASSERT_STRING_EQUAL(
        header(value, build(resp, &d, false), "Cache-Control"), "no-store");
}

/* ---- bodies ------------------------------------------------------------- */

static void test_html_page(void)
{
    char resp[RESPONSE_MAX];
    suspect_decision_t dec = denial(119500);
    mw_deny_t d = request(&dec, "text/html,*/*;q=0.8");
    const char *r = build(resp, &d, false);
    const char *b = body_of(r);

    CU_ASSERT_EQUAL(strncmp(b, "<!DOCTYPE html>", 15), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "<title>429 Too Many Requests</title>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "<style>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "<h1>Too many attempts</h1>"));
    /* the operator's action name is not the visitor's business */
    CU_ASSERT_PTR_NULL(strstr(b, "BankAccountUpdate"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(b, "try again in <span id=\"wait\">120</span> <span "
                  "id=\"unit\">seconds</span>.</p>"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(b, "var end = 1700000119500 + (Date.now() - 1700000000000);"));
    /* the countdown ends by offering to try again, never "0 seconds" */
    CU_ASSERT_PTR_NOT_NULL(
        strstr(b, "<p id=\"now\" hidden>You can try again now.</p>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(
        b, "<button id=\"again\" type=\"button\" hidden>Try again</button>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "if (s > 0) {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "location.reload()"));
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "</html>\n"));
    /* self-contained: nothing fetched from anywhere */
    CU_ASSERT_PTR_NULL(strstr(b, "src="));
    CU_ASSERT_PTR_NULL(strstr(b, "href="));
    CU_ASSERT_PTR_NULL(strstr(b, "http"));
    CU_ASSERT_PTR_NULL(strstr(b, "url("));
}

static void test_hostile_action_escaped(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    suspect_rule_t evil = {
        "Ev\"il\\<b>&'\x01\n", 3, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_decision_t dec = denial(1000);
    mw_deny_t d = request(&dec, "application/json");
    const char *r;

    d.rule = &evil;
    r = build(resp, &d, false);
    CU_ASSERT_TRUE(json_valid(body_of(r)));
    CU_ASSERT_PTR_NOT_NULL(strstr(
        r, "\"action\":\"Ev\\\"il\\\\\\u003cb\\u003e\\u0026'\\u0001\\u000a\""));
    /* header values stay on one line: sf-string escapes, '?' for controls */
    CU_ASSERT_STRING_EQUAL(header(value, r, "RateLimit-Policy"),
                           "\"Ev\\\"il\\\\<b>&'??\";q=3;w=60");
    d.accept = NULL;
    r = build(resp, &d, false);
    /* the built-in page names no action (templates escape theirs, see
     * "template escaping") */
    CU_ASSERT_PTR_NULL(strstr(body_of(r), "Ev&quot;il"));
    CU_ASSERT_PTR_NULL(strstr(body_of(r), "Ev\"il"));
    CU_ASSERT_PTR_NULL(strstr(body_of(r), "<b>"));
}

static void test_template(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    static const char tmpl[] =
        "<p>{action}: wait {retry_after}s ({retry_after_ms} ms) until "
        "{restriction_end}; {limit} per {window}s; {status} {unknown} "
        "{retry_after {} {{limit}} {RETRY_AFTER} {</p>";
    static const char want[] = "<p>BankAccountUpdate: wait 2s (1500 ms) until "
                               "1700000001500; 2 per 120s; 429 {unknown} "
                               "{retry_after {} {2} {RETRY_AFTER} {</p>";
    suspect_decision_t dec = denial(1500);
    mw_deny_t d = request(&dec, NULL);
    const char *r;

    d.tmpl = tmpl;
    d.tmpl_len = strlen(tmpl);
    r = build(resp, &d, false);
    CU_ASSERT_STRING_EQUAL(body_of(r), want);
    CU_ASSERT_STRING_EQUAL(header(value, r, "Content-Type"),
                           "text/html; charset=utf-8");
    d.tmpl_type = "text/plain; charset=utf-8";
    CU_ASSERT_STRING_EQUAL(
        header(value, build(resp, &d, false), "Content-Type"),
        "text/plain; charset=utf-8");
    /* API clients still get JSON */
    d.accept = "application/json";
    d.accept_len = strlen(d.accept);
    CU_ASSERT_TRUE(json_valid(body_of(build(resp, &d, false))));
    /* a template type that would inject a header is refused */
    d.accept = NULL;
    d.tmpl_type = "text/html\r\nSet-Cookie: x=1";
    CU_ASSERT_STRING_EQUAL(build(resp, &d, false), "<error>");
}

static void test_template_escapes_values(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    suspect_rule_t evil = {"A<b>&\"'", 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_decision_t dec = denial(1000);
    mw_deny_t d = request(&dec, "text/html");

    d.rule = &evil;
    d.tmpl = "[{action}]";
    d.tmpl_len = 10;
    CU_ASSERT_STRING_EQUAL(body_of(build(resp, &d, false)),
                           "[A&lt;b&gt;&amp;&quot;&#39;]");
    /* the template's own length bounds it, not a NUL */
    d.tmpl = "{limit}{action}";
    d.tmpl_len = 7;
    CU_ASSERT_STRING_EQUAL(body_of(build(resp, &d, false)), "1");
    d.tmpl_len = 0;
    CU_ASSERT_STRING_EQUAL(body_of(build(resp, &d, false)), "");
    CU_ASSERT_STRING_EQUAL(
        header(value, build(resp, &d, false), "Content-Length"), "0");
}

static void test_identity_never_echoed(void)
{
    char resp[RESPONSE_MAX];
    /* The API has no place for an identity; whatever the decision holds
     * (which identity tripped), the output only has the rule's numbers. */
    static const char *const accepts[] = {"application/json", "text/html",
                                          NULL};
    static const char *const never[] = {"MemberCode", "ClientIp", "identity",
                                        "192.0.2.",   "2001:db8", "tripped"};
    suspect_decision_t dec = denial(1000);

    dec.tripped = 1;
    dec.locked = true;
    for (size_t i = 0; i < 3; i++) {
        mw_deny_t d = request(&dec, accepts[i]);
        const char *r = build(resp, &d, false);
        for (size_t j = 0; j < sizeof(never) / sizeof(never[0]); j++) {
            CU_ASSERT_PTR_NULL(strstr(r, never[j]));
        }
        r = build(resp, &d, true);
        for (size_t j = 0; j < sizeof(never) / sizeof(never[0]); j++) {
            CU_ASSERT_PTR_NULL(strstr(r, never[j]));
        }
    }
}

/* ---- 503 ---------------------------------------------------------------- */

static void test_unavailable_exact(void)
{
    char resp[RESPONSE_MAX];
    mw_deny_t d = request(NULL, "application/problem+json");
    const char *body =
        "{\"type\":\"about:blank\",\"title\":\"Service Unavailable\","
        "\"status\":503,\"detail\":\"The service cannot decide on this "
        "request now; retry after 1 second.\",\"action\":"
        "\"BankAccountUpdate\",\"restrictionEndTime\":1700000001000,"
        "\"retryAfterMs\":1000}\n";
    char want[2048];
    const char *r;

    snprintf(want, sizeof(want),
             "Status: 503 Service Unavailable\r\n"
             "Retry-After: 1\r\n"
             "Cache-Control: no-store\r\n"
             "Content-Type: application/problem+json\r\n"
             "Content-Length: %zu\r\n"
             "\r\n%s",
             strlen(body), body);
    d.status = 429; /* ignored */
    r = build(resp, &d, true);
    CU_ASSERT_STRING_EQUAL(r, want);
    CU_ASSERT_TRUE(json_valid(body_of(r)));
    CU_ASSERT_PTR_NULL(strstr(r, "RateLimit"));
}

static void test_unavailable_variants(void)
{
    char value[VALUE_MAX];
    char resp[RESPONSE_MAX];
    mw_deny_t d = request(NULL, NULL);
    const char *r;

    r = build(resp, &d, true);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(body_of(r), "<title>503 Service Unavailable</title>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(
        body_of(r), "<span id=\"wait\">1</span> <span id=\"unit\">second<"));
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(r), "<h1>This service is busy</h1>"));
    CU_ASSERT_PTR_NULL(strstr(r, "RateLimit"));
    /* without a rule: no action */
    d.rule = NULL;
    d.accept = "application/json";
    d.accept_len = strlen(d.accept);
    r = build(resp, &d, true);
    CU_ASSERT_TRUE(json_valid(body_of(r)));
    CU_ASSERT_PTR_NULL(strstr(r, "\"action\""));
    CU_ASSERT_STRING_EQUAL(header(value, r, "Retry-After"), "1");
    /* the template serves 503s too */
    d.accept = NULL;
    d.tmpl = "{status} {retry_after} [{action}]";
    d.tmpl_len = strlen(d.tmpl);
    CU_ASSERT_STRING_EQUAL(body_of(build(resp, &d, true)), "503 1 []");
}

int register_deny_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"JSON checker", test_json_checker},
        {"exact JSON response", test_exact_json_response},
        {"Retry-After rounding", test_retry_after_rounding},
        {"RateLimit reset", test_ratelimit_reset_from_end},
        {"status override", test_status_override},
        {"reason phrases", test_reasons},
        {"bad arguments", test_bad_arguments},
        {"buffer sizes", test_buffer_sizes},
        {"Accept table", test_accept_table},
        {"content types", test_content_types},
        {"HTML page", test_html_page},
        {"hostile action escaped", test_hostile_action_escaped},
        {"template", test_template},
        {"template escaping", test_template_escapes_values},
        {"identity never echoed", test_identity_never_echoed},
        {"503 exact", test_unavailable_exact},
        {"503 variants", test_unavailable_variants},
    };
    CU_pSuite s = CU_add_suite("deny", NULL, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return deny_add_outcome_tests(s);
}
