/*
 * test_lookup.c - suite "request", lookups (middleware/request/lookup.c):
 * cookies, query and form parameters (first occurrence, any occurrence,
 * ambiguous repeats) and header variables; the addresses are
 * test_addr.c's.  Most tests are tables: input, name, expected
 * value (or outcome).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/lookup.h"
#include "request_test.h"
#include "suites.h"

/* The outcome of a lookup as a string: the value (copied into text, the
 * caller's) or one of the markers. */
static const char *outcome(char text[TEXT_MAX], suspect_rc_t rc,
                           const char *buf, size_t len)
{
    if (rc == SUSPECT_E_NOTFOUND) {
        return NOTFOUND;
    }
    if (rc == SUSPECT_E_FULL) {
        return FULL;
    }
    if (rc != SUSPECT_OK || len >= TEXT_MAX) {
        return INVAL;
    }
    memcpy(text, buf, len);
    text[len] = '\0';
    return text;
}

/* The cookie name in hdr: its value (in text, the caller's) or a marker. */
static const char *cookie(char text[TEXT_MAX], const char *hdr,
                          const char *name)
{
    char buf[4096];
    size_t len = 0;
    suspect_rc_t rc = mw_cookie_find(hdr, strlen(hdr), name, strlen(name), buf,
                                     sizeof(buf), &len);
    return outcome(text, rc, buf, len);
}

/* The parameter name in s: its value (in text, the caller's) or a
 * marker. */
static const char *param(char text[TEXT_MAX], const char *s, unsigned flags,
                         const char *name)
{
    char buf[4096];
    size_t len = 0;
    suspect_rc_t rc = mw_param_find(s, strlen(s), flags, name, strlen(name),
                                    buf, sizeof(buf), &len);
    return outcome(text, rc, buf, len);
}

/* ---- cookies ------------------------------------------------------------ */

static const struct {
    const char *hdr, *name, *want;
} cookie_cases[] = {
    {"a=b; c=d", "c", "d"},
    {"a=b;c=d", "c", "d"},
    {"  a = b  ;  c = d  ", "c", "d"},
    {"\ta=1", "a", "1"},
    {"a=b; c=d", "a", "b"},
    {"a=\"x y\"", "a", "x y"},
    {"a=\"\"", "a", ""},
    {"a=\"", "a", "\""},
    {"a=\"q", "a", "\"q"},
    {"a=1; a=2", "a", "1"},
    {"A=1; a=2", "a", "2"},
    {"a=", "a", ""},
    {"a=;b=2", "a", ""},
    {"", "a", NOTFOUND},
    {"ab=1", "a", NOTFOUND},
    {"a", "a", NOTFOUND},
    {"x=1; a", "a", NOTFOUND},
    {"a=b=c", "a", "b=c"},
    {";;a=1;;", "a", "1"},
    {"sid=abc; member=M1; lang=en", "member", "M1"},
    {"member =M2", "member", "M2"},
    {"mem ber=1", "mem ber", "1"},
    {"=1; a=2", "a", "2"},
    {"a=%41", "a", "A"},
    {"sid=%61bc", "sid", "abc"},
    {"a=x+y%2B", "a", "x+y+"},
    {"a=%zz%4", "a", "%zz%4"},
    {"a=\"%41\"", "a", "A"},
    {"a=%2541", "a", "%41"},
    /* Perl's CGI::Cookie decodes names: "%61" is its "a". */
    {"%61=1", "a", "1"},
    {"%62=1", "a", NOTFOUND},
    /* PHP's names: '.', ' ' and '[' are '_', leading white space goes. */
    {"member.code=v; member_code=d", "member_code", "v"},
    {"member code=v", "member_code", "v"},
    {"member[code=v", "member_code", "v"},
    {"\vmember_code=v", "member_code", "v"},
    {"member_code[]=v; member_code=d", "member_code", "v"},
    {"member%5Fcode=v", "member_code", "v"},
    {"member_codex=v", "member_code", NOTFOUND},
    /* White space around a name, as Perl's \s and Python's http.cookies
     * trim it, and the same percent-encoded for an app that decodes and
     * trims. */
    {"member\v=alice", "member", "alice"},
    {"member\f=alice", "member", "alice"},
    {"member\r=alice", "member", "alice"},
    {"member\n=alice", "member", "alice"},
    {"\v\fmember \v=alice", "member", "alice"},
    {"member%0B=alice", "member", "alice"},
    {"%0Cmember%20=alice", "member", "alice"},
    {"member+=alice", "member", "alice"},
    {"member%0Bx=alice", "member", NOTFOUND},
    {"mem\vber=alice", "member", NOTFOUND},
};

static void test_cookie_table(void)
{
    char text[TEXT_MAX];
    for (size_t i = 0; i < sizeof(cookie_cases) / sizeof(cookie_cases[0]);
         i++) {
        const char *got =
            cookie(text, cookie_cases[i].hdr, cookie_cases[i].name);
        if (strcmp(got, cookie_cases[i].want) != 0) {
            fprintf(stderr, "\ncookie case %zu [%s] %s: got [%s] want [%s]\n",
                    i, cookie_cases[i].hdr, cookie_cases[i].name, got,
                    cookie_cases[i].want);
        }
        CU_ASSERT_STRING_EQUAL(got, cookie_cases[i].want);
    }
}

/* CGI::Cookie's reading (mw_cookie_find_cgi()); each "want" is what
 * CGI.pm 4.55's CGI::Cookie->parse() gives for the header. */
static const struct {
    const char *hdr, *want;
} cgi_cookie_cases[] = {
    {"member=m2&N", "m2"},         {"member=m2,x=3", "m2"},
    {"x=4, member=m2", "m2"},      {"x=1,member=m2&z", "m2"},
    {"member=m+3", "m 3"},         {" member = v", NOTFOUND},
    {"member= v ", " v"},          {"member=%41b", "Ab"},
    {"member%3D=x,member=y", "y"}, {"member=\"q\"", "\"q\""},
    {"a=1 ,member=m2&7", "m2"},    {"member=,member=z", ""},
    {"member", NOTFOUND},          {"member=&v", ""},
    {"\vmember=v\f", "v"},         {"me%6dber=v", "v"},
    {"member=a=b", "a=b"},
};

static void test_cookie_cgi_table(void)
{
    char text[TEXT_MAX];

    for (size_t i = 0; i < sizeof(cgi_cookie_cases) / sizeof(*cgi_cookie_cases);
         i++) {
        const char *hdr = cgi_cookie_cases[i].hdr;
        char buf[256];
        size_t len = 0;
        suspect_rc_t rc = mw_cookie_find_cgi(hdr, strlen(hdr), "member", 6, buf,
                                             sizeof(buf), &len);
        const char *got = outcome(text, rc, buf, len);

        if (strcmp(got, cgi_cookie_cases[i].want) != 0) {
            fprintf(stderr, "\nCGI::Cookie case %zu [%s]: got [%s]\n", i, hdr,
                    got);
        }
        CU_ASSERT_STRING_EQUAL(got, cgi_cookie_cases[i].want);
    }
}

/* "%uXXXX" as CGI.pm's unescape() finds it, and ';' as a separator. */
static void test_u_escape_and_semicolon(void)
{
    char text[TEXT_MAX], buf[64];
    size_t len = 0;

    CU_ASSERT_TRUE(mw_has_u_escape("op=%u006cogin", 13));
    CU_ASSERT_TRUE(mw_has_u_escape("%uD83D", 6));
    CU_ASSERT_TRUE(mw_has_u_escape("a%%u00aF", 8));
    CU_ASSERT_FALSE(mw_has_u_escape("%u006", 5));
    CU_ASSERT_FALSE(mw_has_u_escape("%U006c", 6));
    CU_ASSERT_FALSE(mw_has_u_escape("%u00g1", 6));
    CU_ASSERT_FALSE(mw_has_u_escape("%25u006c", 8));
    CU_ASSERT_FALSE(mw_has_u_escape(NULL, 0));
    CU_ASSERT_EQUAL(mw_param_find_semicolon("x=1;member=v", 12, "member", 6,
                                            buf, sizeof(buf), &len),
                    SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(outcome(text, SUSPECT_OK, buf, len), "v");
    CU_ASSERT_EQUAL(
        mw_query_find("x=1;member=v", 12, "member", 6, buf, sizeof(buf), &len),
        SUSPECT_E_NOTFOUND);
}

/* Cookies that parsers read differently: the first pair named one way
 * and the first named another differ (the guard refuses them). */
static void test_cookie_ambiguous(void)
{
    static const struct {
        const char *hdr;
        bool want;
    } cases[] = {
        {"member=a", false},
        {"member=a; member=b", false},
        {"member\v=a; member=b", true},
        {"member=a; member\v=b", false}, /* every parser: a */
        {"member%0B=a; member=b", true},
        {"member.x=a; member_x=b", false},
        {"member\v=a; member\f=a", false},
        {"member\v=a; member=a", false},
        {"member=a; member\v=%61", false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = mw_cookie_ambiguous(cases[i].hdr, strlen(cases[i].hdr),
                                       "member", 6);

        if (got != cases[i].want) {
            fprintf(stderr, "\nambiguous cookie case %zu: got %d\n", i, got);
        }
        CU_ASSERT_EQUAL(got, cases[i].want);
    }
}

static void test_cookie_not_terminated(void)
{
    /* The value ends where the given length ends, not at a NUL. */
    const char hdr[] = "a=12345; b=6";
    char buf[16];
    size_t len = 0;

    CU_ASSERT_EQUAL(mw_cookie_find(hdr, 4, "a", 1, buf, sizeof(buf), &len),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 2);
    CU_ASSERT_NSTRING_EQUAL(buf, "12", 2);
    CU_ASSERT_EQUAL(mw_cookie_find(hdr, 8, "b", 1, buf, sizeof(buf), &len),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL(mw_cookie_find(NULL, 0, "b", 1, buf, sizeof(buf), &len),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL(mw_cookie_find(hdr, 4, "", 0, buf, sizeof(buf), &len),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_cookie_find(hdr, 4, NULL, 1, buf, sizeof(buf), &len),
                    SUSPECT_E_INVAL);
}

static void test_cookie_thousands(void)
{
    char text[TEXT_MAX];
    size_t cap = 5000 * 24;
    char *hdr = malloc(cap);
    size_t n = 0;

    CU_ASSERT_FATAL(hdr != NULL);
    for (int i = 0; i < 5000; i++) {
        n += (size_t)snprintf(hdr + n, cap - n, "%sc%d=v%d", i ? "; " : "", i,
                              i);
    }
    CU_ASSERT_STRING_EQUAL(cookie(text, hdr, "c0"), "v0");
    CU_ASSERT_STRING_EQUAL(cookie(text, hdr, "c4999"), "v4999");
    CU_ASSERT_STRING_EQUAL(cookie(text, hdr, "c2500"), "v2500");
    CU_ASSERT_STRING_EQUAL(cookie(text, hdr, "c5000"), NOTFOUND);
    CU_ASSERT_STRING_EQUAL(cookie(text, hdr, "c"), NOTFOUND);
    free(hdr);
}

static void test_cookie_64k_value(void)
{
    size_t big = 64 * 1024;
    char *hdr = malloc(big + 32);
    char buf[256];
    size_t len = 0;

    CU_ASSERT_FATAL(hdr != NULL);
    memcpy(hdr, "x=1; big=", 9);
    memset(hdr + 9, 'v', big);
    memcpy(hdr + 9 + big, "; y=2", 5);
    /* Too long for the buffer: the head is copied, the full length told. */
    CU_ASSERT_EQUAL(
        mw_cookie_find(hdr, 9 + big + 5, "big", 3, buf, sizeof(buf), &len),
        SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(len, big);
    CU_ASSERT_EQUAL(buf[0], 'v');
    CU_ASSERT_EQUAL(buf[sizeof(buf) - 1], 'v');
    CU_ASSERT_EQUAL(
        mw_cookie_find(hdr, 9 + big + 5, "y", 1, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 1);
    CU_ASSERT_EQUAL(buf[0], '2');
    free(hdr);
}

/* ---- query and form ----------------------------------------------------- */

static const struct {
    const char *s, *name, *want;
} query_cases[] = {
    {"a=1&b=2", "b", "2"},
    {"a=1&b=2", "a", "1"},
    {"a=1&a=2", "a", "1"},
    {"a+b=c+d", "a b", "c d"},
    {"%61=1", "a", "1"},
    {"a=%41%42", "a", "AB"},
    {"a=%4a%4A", "a", "JJ"},
    {"a=%zz", "a", "%zz"},
    {"a=%4", "a", "%4"},
    {"a=%", "a", "%"},
    {"a=%%41", "a", "%A"},
    {"a=%2541", "a", "%41"},
    {"a=%2B+", "a", "+ "},
    {"a", "a", ""},
    {"a&b=1", "a", ""},
    {"a=&b=1", "a", ""},
    {"=1&a=2", "a", "2"},
    {"&&a=1&&", "a", "1"},
    {"a=1;b=2", "b", NOTFOUND},
    {"a=1;b=2", "a", "1;b=2"},
    {"a%3Db=c", "a=b", "c"},
    {"a%3Db=c", "a", NOTFOUND},
    {"a=b=c", "a", "b=c"},
    {"A=1", "a", NOTFOUND},
    {"ab=1", "a", NOTFOUND},
    {"a=1", "ab", NOTFOUND},
    {"%C3%A9=x", "\xc3\xa9", "x"},
    {"a=%E2%82%AC", "a", "\xe2\x82\xac"},
    {"a%26b=1", "a&b", "1"},
    {"a=x%26b%3D2", "b", NOTFOUND},
    {"", "a", NOTFOUND},
    {"op=update&member=M1", "member", "M1"},
};

static void test_query_table(void)
{
    char text[TEXT_MAX];
    for (size_t i = 0; i < sizeof(query_cases) / sizeof(query_cases[0]); i++) {
        const char *got = param(text, query_cases[i].s, 0, query_cases[i].name);
        if (strcmp(got, query_cases[i].want) != 0) {
            fprintf(stderr, "\nquery case %zu [%s] %s: got [%s] want [%s]\n", i,
                    query_cases[i].s, query_cases[i].name, got,
                    query_cases[i].want);
        }
        CU_ASSERT_STRING_EQUAL(got, query_cases[i].want);
    }
}

static void test_query_semicolon_flag(void)
{
    char text[TEXT_MAX];
    CU_ASSERT_STRING_EQUAL(param(text, "a=1;b=2", MW_PARAM_SEMICOLON, "b"),
                           "2");
    CU_ASSERT_STRING_EQUAL(param(text, "a=1;b=2&c=3", MW_PARAM_SEMICOLON, "c"),
                           "3");
    CU_ASSERT_STRING_EQUAL(param(text, "a=1%3Bb=2", MW_PARAM_SEMICOLON, "b"),
                           NOTFOUND);
}

static void test_query_nul_bytes(void)
{
    const char *qs = "a%00b=x%00y&c=1";
    char buf[16];
    size_t len = 0;

    CU_ASSERT_EQUAL(
        mw_query_find(qs, strlen(qs), "a\0b", 3, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 3);
    CU_ASSERT_EQUAL(memcmp(buf, "x\0y", 3), 0);
    /* PHP's names end at a NUL: "a%00b" is its "a". */
    len = 0;
    CU_ASSERT_EQUAL(
        mw_query_find(qs, strlen(qs), "a", 1, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 3);
    CU_ASSERT_EQUAL(
        mw_query_find(qs, strlen(qs), "b", 1, buf, sizeof(buf), &len),
        SUSPECT_E_NOTFOUND);
}

static void test_query_limits(void)
{
    const char *qs = "a=%41%42%43&b=2";
    char buf[2];
    size_t len = 0;

    /* The decoded value is 3 bytes; 2 fit; the full length is told. */
    CU_ASSERT_EQUAL(
        mw_query_find(qs, strlen(qs), "a", 1, buf, sizeof(buf), &len),
        SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(len, 3);
    CU_ASSERT_NSTRING_EQUAL(buf, "AB", 2);
    CU_ASSERT_EQUAL(
        mw_query_find(qs, strlen(qs), "b", 1, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(
        mw_query_find(qs, strlen(qs), "", 0, buf, sizeof(buf), &len),
        SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_query_find(qs, strlen(qs), "b", 1, NULL, 4, &len),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_query_find(NULL, 0, "b", 1, buf, sizeof(buf), &len),
                    SUSPECT_E_NOTFOUND);
    /* The given length ends the input. */
    CU_ASSERT_EQUAL(mw_query_find(qs, 12, "b", 1, buf, sizeof(buf), &len),
                    SUSPECT_E_NOTFOUND);
}

static void test_query_very_long(void)
{
    char text[TEXT_MAX];
    size_t reps = 200000;
    size_t cap = reps * 4 + 64;
    char *qs = malloc(cap);
    size_t n = 0;

    CU_ASSERT_FATAL(qs != NULL);
    for (size_t i = 0; i < reps; i++) {
        memcpy(qs + n, "x=1&", 4);
        n += 4;
    }
    memcpy(qs + n, "member=M%2042", 13);
    n += 13;
    qs[n] = '\0';
    CU_ASSERT_STRING_EQUAL(param(text, qs, 0, "member"), "M 42");
    CU_ASSERT_STRING_EQUAL(param(text, qs, 0, "x"), "1");
    CU_ASSERT_STRING_EQUAL(param(text, qs, 0, "nope"), NOTFOUND);
    free(qs);
}

static void test_form_same_rules(void)
{
    const char *body = "member=M%2B1&member=M2&pin=12+34";
    char buf[32];
    size_t len = 0;

    CU_ASSERT_EQUAL(
        mw_form_find(body, strlen(body), "member", 6, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 3);
    CU_ASSERT_NSTRING_EQUAL(buf, "M+1", 3);
    CU_ASSERT_EQUAL(
        mw_form_find(body, strlen(body), "pin", 3, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_NSTRING_EQUAL(buf, "12 34", 5);
}

/* ---- repeated parameters ------------------------------------------------ */

static const struct {
    const char *s, *name, *value; /* value NULL: present at all */
    unsigned flags;
    suspect_rc_t want;
} match_cases[] = {
    {"op=view&op=bank", "op", "bank", 0, SUSPECT_OK},
    {"op=view&op=bank", "op", "view", 0, SUSPECT_OK},
    {"op=view&op=bank", "op", "ban", 0, SUSPECT_E_NOTFOUND},
    {"op=view&op=bank", "op", "bankx", 0, SUSPECT_E_NOTFOUND},
    {"op=view&op=bank", "op", NULL, 0, SUSPECT_OK},
    {"a=1&op=x&b=2&op=bank&c=3", "op", "bank", 0, SUSPECT_OK},
    {"op=bankx&op=ban", "op", "bank", 0, SUSPECT_E_NOTFOUND},
    {"op=view", "op", "bank", 0, SUSPECT_E_NOTFOUND},
    {"%6Fp=b%61nk", "op", "bank", 0, SUSPECT_OK},
    {"op=bank+x", "op", "bank x", 0, SUSPECT_OK},
    {"op=bank%00", "op", "bank", 0, SUSPECT_E_NOTFOUND},
    {"op=OP&op=bank;x", "op", "bank", 0, SUSPECT_E_NOTFOUND},
    {"op=OP&op=bank;x", "op", "bank", MW_PARAM_SEMICOLON, SUSPECT_OK},
    {"op", "op", "", 0, SUSPECT_OK},
    {"op", "op", NULL, 0, SUSPECT_OK},
    {"op=", "op", "", 0, SUSPECT_OK},
    {"op=x", "op", "", 0, SUSPECT_E_NOTFOUND},
    {"xop=bank&opx=bank&OP=bank", "op", "bank", 0, SUSPECT_E_NOTFOUND},
    {"xop=bank&opx=bank", "op", NULL, 0, SUSPECT_E_NOTFOUND},
    {"", "op", NULL, 0, SUSPECT_E_NOTFOUND},
};

static void test_param_match_table(void)
{
    for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
        const char *v = match_cases[i].value;
        suspect_rc_t rc = mw_param_match(
            match_cases[i].s, strlen(match_cases[i].s), match_cases[i].flags,
            match_cases[i].name, strlen(match_cases[i].name), v,
            v != NULL ? strlen(v) : 0);
        if (rc != match_cases[i].want) {
            fprintf(stderr, "\nmatch case %zu [%s] %s=%s: got %d\n", i,
                    match_cases[i].s, match_cases[i].name,
                    v != NULL ? v : "(any)", rc);
        }
        CU_ASSERT_EQUAL(rc, match_cases[i].want);
    }
}

static void test_param_match_args(void)
{
    const char *qs = "op=bank&x=1";

    /* The given lengths end the input and the value. */
    CU_ASSERT_EQUAL(mw_param_match(qs, 6, 0, "op", 2, "bank", 4),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL(mw_param_match(qs, 7, 0, "op", 2, "bank", 4), SUSPECT_OK);
    CU_ASSERT_EQUAL(mw_param_match(qs, strlen(qs), 0, "op", 2, "banker", 4),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(mw_param_match(qs, strlen(qs), 0, "o\0", 2, NULL, 0),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL(mw_param_match(NULL, 0, 0, "op", 2, NULL, 0),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL(mw_param_match(NULL, 3, 0, "op", 2, NULL, 0),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_param_match(qs, strlen(qs), 0, "", 0, NULL, 0),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_param_match(qs, strlen(qs), 0, NULL, 2, NULL, 0),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_param_match(qs, strlen(qs), 0, "op", 2, NULL, 4),
                    SUSPECT_E_INVAL);
}

static const struct {
    const char *s;
    unsigned flags;
    bool want;
} ambiguous_cases[] = {
    {"member=A&member=B", 0, true},
    {"member=A&member=A", 0, false},
    {"member=A", 0, false},
    {"", 0, false},
    {"x=1&y=2", 0, false},
    {"member=A&member=%41", 0, false},
    {"member=A+B&member=A%20B", 0, false},
    {"member=&member=B", 0, true},
    {"member&member=B", 0, true},
    {"member&member=", 0, false},
    {"member=A&x=1&member=A&member=A", 0, false},
    {"member=A&member=A&member=AB", 0, true},
    {"member=AB&member=A", 0, true},
    {"member=A&member=a", 0, true},
    {"member=A%00&member=A", 0, true},
    {"%6Dember=A&member=B", 0, true},
    {"member=A&members=B&Member=C", 0, false},
    {"member=A;member=B", 0, false},
    {"member=A;member=B", MW_PARAM_SEMICOLON, true},
    {"member=A;member=A", MW_PARAM_SEMICOLON, false},
};

static void test_param_ambiguous_table(void)
{
    for (size_t i = 0; i < sizeof(ambiguous_cases) / sizeof(ambiguous_cases[0]);
         i++) {
        bool got = mw_param_ambiguous(ambiguous_cases[i].s,
                                      strlen(ambiguous_cases[i].s),
                                      ambiguous_cases[i].flags, "member", 6);
        if (got != ambiguous_cases[i].want) {
            fprintf(stderr, "\nambiguous case %zu [%s]: got %d\n", i,
                    ambiguous_cases[i].s, got);
        }
        CU_ASSERT_EQUAL(got, ambiguous_cases[i].want);
    }
    CU_ASSERT_FALSE(mw_param_ambiguous("a=1&a=2", 7, 0, NULL, 1));
    CU_ASSERT_FALSE(mw_param_ambiguous("a=1&a=2", 7, 0, "", 0));
    CU_ASSERT_FALSE(mw_param_ambiguous(NULL, 0, 0, "a", 1));
    /* Only s[0..s_len) is read. */
    CU_ASSERT_FALSE(mw_param_ambiguous("a=1&a=2", 4, 0, "a", 1));
    CU_ASSERT_TRUE(mw_param_ambiguous("a=1&a=2", 5, 0, "a", 1));
    CU_ASSERT_TRUE(mw_param_ambiguous("a=1&a=2", 7, 0, "a", 1));
}

/* Many repeats of a long value stay one linear pass: 10000 copies of a
 * 1 KiB value, then one that differs in its last byte. */
static void test_param_repeats_long(void)
{
    size_t vlen = 1024, reps = 10000;
    size_t one = 2 + vlen + 1;
    char *qs = malloc(one * (reps + 1) + 1);
    size_t n = 0;

    CU_ASSERT_FATAL(qs != NULL);
    for (size_t i = 0; i <= reps; i++) {
        memcpy(qs + n, "m=", 2);
        memset(qs + n + 2, 'v', vlen);
        qs[n + 2 + vlen] = '&';
        n += one;
    }
    n--; /* no '&' after the last */
    CU_ASSERT_FALSE(mw_param_ambiguous(qs, n, 0, "m", 1));
    CU_ASSERT_EQUAL(mw_param_match(qs, n, 0, "m", 1, "w", 1),
                    SUSPECT_E_NOTFOUND);
    qs[n - 1] = 'w';
    CU_ASSERT_TRUE(mw_param_ambiguous(qs, n, 0, "m", 1));
    CU_ASSERT_EQUAL(mw_param_match(qs, n, 0, "m", 1, qs + n - vlen, vlen),
                    SUSPECT_OK);
    free(qs);
}

/* ---- header variables --------------------------------------------------- */

static const struct {
    const char *name, *want;
} header_cases[] = {
    {"X-Member-Code", "HTTP_X_MEMBER_CODE"},
    {"user-agent", "HTTP_USER_AGENT"},
    {"Cookie", "HTTP_COOKIE"},
    {"Content-Type", "CONTENT_TYPE"},
    {"content-length", "CONTENT_LENGTH"},
    {"Content-Typo", "HTTP_CONTENT_TYPO"},
    {"x_member", "HTTP_X_MEMBER"},
    {"A1", "HTTP_A1"},
    {"", INVAL},
    {"X Member", INVAL},
    {"X:Y", INVAL},
    {"a\nb", INVAL},
    {"\xc3\xa9", INVAL},
};

static void test_header_var_table(void)
{
    for (size_t i = 0; i < sizeof(header_cases) / sizeof(header_cases[0]);
         i++) {
        char buf[64];
        size_t len = 0;
        const char *n = header_cases[i].name;
        suspect_rc_t rc = mw_header_var(n, strlen(n), buf, sizeof(buf), &len);
        const char *got = rc == SUSPECT_OK ? buf : INVAL;
        CU_ASSERT_STRING_EQUAL(got, header_cases[i].want);
        if (rc == SUSPECT_OK) {
            CU_ASSERT_EQUAL(len, strlen(header_cases[i].want));
        }
    }
}

static void test_header_var_full(void)
{
    char buf[8];
    size_t len = 0;

    /* "HTTP_ABC" is 8 bytes and needs a 9th for the NUL. */
    CU_ASSERT_EQUAL(mw_header_var("ABC", 3, buf, sizeof(buf), &len),
                    SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(len, 8);
    CU_ASSERT_EQUAL(mw_header_var("AB", 2, buf, sizeof(buf), &len), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(buf, "HTTP_AB");
    CU_ASSERT_EQUAL(mw_header_var(NULL, 3, buf, sizeof(buf), &len),
                    SUSPECT_E_INVAL);
}

int register_request_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"cookie table", test_cookie_table},
        {"cookie lengths, not NULs", test_cookie_not_terminated},
        {"cookies read differently", test_cookie_ambiguous},
        {"cookies as CGI::Cookie reads them", test_cookie_cgi_table},
        {"%uXXXX and ';'", test_u_escape_and_semicolon},
        {"cookie among thousands", test_cookie_thousands},
        {"cookie of 64 KiB", test_cookie_64k_value},
        {"query table", test_query_table},
        {"query ';' flag", test_query_semicolon_flag},
        {"query %00", test_query_nul_bytes},
        {"query buffer limits", test_query_limits},
        {"query very long", test_query_very_long},
        {"form same rules", test_form_same_rules},
        {"parameter match table", test_param_match_table},
        {"parameter match arguments", test_param_match_args},
        {"ambiguous parameter table", test_param_ambiguous_table},
        {"repeated long parameters", test_param_repeats_long},
        {"header variable table", test_header_var_table},
        {"header variable buffer", test_header_var_full},
    };
    CU_pSuite s = CU_add_suite("request", request_addr_init, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return request_register_addr(s) == 0 && request_register_names(s) == 0 &&
                   request_register_addrset(s) == 0
               ? 0
               : -1;
}
