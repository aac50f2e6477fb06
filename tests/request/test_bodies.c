/*
 * test_bodies.c - suite "bodies": the XML-RPC reader (request/xmlrpc.c)
 * and the JSON reader (request/jsonbody.c), each on a table of bodies:
 * what each call reads as ("method(p1,p2)" for XML-RPC, the values at
 * pointers for JSON), or the refusal expected.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/jsonbody.h"
#include "request/xmlrpc.h"
#include "suites.h"

#define OUT_MAX 1024

#define MC_HEAD                                                                \
    "<?xml version=\"1.0\"?><methodCall><methodName>system.multicall"          \
    "</methodName><params><param><value><array><data>"
#define MC_TAIL "</data></array></value></param></params></methodCall>"
#define MC_CALL(m, p)                                                          \
    "<value><struct><member><name>methodName</name><value><string>" m          \
    "</string></value></member><member><name>params</name><value><array>"      \
    "<data>" p "</data></array></value></member></struct></value>"
#define S(v) "<value><string>" v "</string></value>"
#define CALL(m, p)                                                             \
    "<methodCall><methodName>" m "</methodName><params>" p                     \
    "</params></methodCall>"
#define P(v) "<param>" v "</param>"

/* The calls of x as "m(p,p);m(p)" into out. */
static void xr_text(const mw_xmlrpc_t *x, char *out, size_t size)
{
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; i < mw_xmlrpc_ncalls(x); i++) {
        size_t mlen = 0;
        const char *m = mw_xmlrpc_method(x, i, &mlen);

        o += (size_t)snprintf(out + o, size - o, "%s%.*s(", i > 0 ? ";" : "",
                              (int)mlen, m);
        for (unsigned pos = 1; pos <= 4; pos++) {
            const char *v = NULL;
            size_t len = 0;
            suspect_rc_t rc = mw_xmlrpc_param(x, i, pos, &v, &len);

            if (rc == SUSPECT_E_NOTFOUND) {
                continue;
            }
            o += (size_t)snprintf(out + o, size - o, "%s%.*s",
                                  pos > 1 ? "," : "",
                                  rc == SUSPECT_OK ? (int)len : 7,
                                  rc == SUSPECT_OK ? v : "<inval>");
        }
        o += (size_t)snprintf(out + o, size - o, ")");
    }
}

static const struct {
    const char *body;
    const char *want; /* calls, or "!" and the refusal's text */
} xr_cases[] = {
    {CALL("wp.getUsersBlogs", P(S("alice")) P(S("pw"))),
     "wp.getUsersBlogs(alice,pw)"},
    /* an untyped value is a string; blanks kept; the method trimmed */
    {CALL(" wp.getPosts\n", P("<value>1</value>") P("<value> bob </value>")),
     "wp.getPosts(1, bob )"},
    /* entities and character references decoded, CDATA read */
    {CALL("wp.x", P(S("&#97;lice")) P(S("<![CDATA[a&b]]>"))),
     "wp.x(alice,a&b)"},
    /* an int as PHP's (int) leaves it */
    {CALL("wp.x", P("<value><int> 007 </int></value>") P(S("x"))), "wp.x(7,x)"},
    {CALL("wp.x", P("<value><i4>27abc</i4></value>")), "!int"},
    {CALL("wp.x", P("<value><base64>YWxpY2U=</base64></value>")),
     "wp.x(<inval>)"},
    {CALL("wp.x", P("<value><struct></struct></value>")), "wp.x(<inval>)"},
    /* values WordPress's IXR drops, moving the next ones: refused */
    {CALL("wp.x", P("<value><nil/></value>") P(S("b"))), "!unknown type"},
    {CALL("wp.x", P("<value><foo>a</foo></value>") P(S("b"))), "!unknown type"},
    {CALL("wp.getUsersBlogs", P("<value></value>") P(S("alice"))), "!blank"},
    {CALL("wp.getUsersBlogs", P("<value> \t </value>") P(S("alice"))),
     "!blank"},
    {CALL("wp.x", P("<value><string></string></value>") P(S("b"))), "wp.x(,b)"},
    {"<methodCall><methodName>a</methodName></methodCall>", "a()"},
    {MC_HEAD MC_CALL("wp.getUsersBlogs", S("alice") S("a"))
         MC_CALL("wp.getUsersBlogs", S("bob") S("b")) MC_TAIL,
     "wp.getUsersBlogs(alice,a);wp.getUsersBlogs(bob,b)"},
    {MC_HEAD MC_TAIL, ""},
    {MC_HEAD MC_CALL("system.multicall", "") MC_TAIL, "!inside"},
    /* member names trimmed as IXR trims them (and keeps the last) */
    {MC_HEAD "<value><struct><member><name>methodName</name><value>"
             "system.listMethods</value></member><member><name> methodName"
             "</name><value>wp.getUsersBlogs</value></member></struct>"
             "</value>" MC_TAIL,
     "!twice"},
    {MC_HEAD "<value><struct><member><name>methodName</name><value>"
             "wp.getUsersBlogs</value></member><member><name>params </name>"
             "<value><array><data>" S("alice")
                 S("pw") "</data></array>"
                         "</value></member></struct></value>" MC_TAIL,
     "wp.getUsersBlogs(alice,pw)"},
    {MC_HEAD "<value><struct><member><name>methodName</name><value>a</value>"
             "</member><member><name>methodName</name><value>b</value>"
             "</member></struct></value>" MC_TAIL,
     "!twice"},
    {MC_HEAD "<value><string>x</string></value>" MC_TAIL, "!struct"},
    {MC_HEAD "<value><struct><member><name>params</name><value><array><data>"
             "</data></array></value></member></struct></value>" MC_TAIL,
     "!without methodName"},
    {"<methodCall><methodName>a</methodName><methodName>b</methodName>"
     "</methodCall>",
     "!twice"},
    {"<methodCall><methodName>a</methodName><params></params><params>"
     "</params></methodCall>",
     "!twice"},
    {CALL("a", P(S("x") S("y"))), "!one value"},
    {CALL("a", P("<value>x<string>y</string></value>")), "!beside"},
    {CALL("a", P(S("x")) "junk"), "!text beside"},
    {"<methodResponse/>", "!not a methodCall"},
    {"<x:methodCall xmlns:x=\"u\"><methodName>a</methodName></x:methodCall>",
     "!not a methodCall"},
    {"<!DOCTYPE methodCall [<!ENTITY u \"alice\">]><methodCall><methodName>"
     "a</methodName><params><param><value>&u;</value></param></params>"
     "</methodCall>",
     "!does not parse"},
    {"<methodCall><methodName>a</methodName>", "!does not parse"},
    {"", "!not starting"},
    {"{\"a\": 1}", "!not starting"},
    /* the head as WordPress reads it: it deletes the first "<?xml...?>"
     * of the first 100 bytes, declares nothing but UTF-8 */
    {"\n<methodCall><methodName>a</methodName></methodCall>", "a()"},
    {"<?xml version=\"1.0\" encoding=\"utf-8\"?>" CALL("a", P(S("x"))), "a(x)"},
    {"\xef\xbb\xbf" CALL("a", P(S("x"))), "!not starting"},
    {"<methodCall><params><!--<?xml--><param><value>bob</value></param>"
     "<!--?>--><param><value>alice</value></param></params><methodName>"
     "wp.getUsersBlogs</methodName></methodCall>",
     "!after its start"},
    {"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" CALL(
         "wp.getUsersBlogs", P(S("alic\xc3\xa9")) P(S("pw"))),
     "!encoding"},
};

static void test_xmlrpc_table(void)
{
    for (size_t i = 0; i < sizeof(xr_cases) / sizeof(xr_cases[0]); i++) {
        const char *want = xr_cases[i].want;
        mw_xmlrpc_t *x = NULL;
        const char *why = NULL;
        char got[OUT_MAX];
        suspect_rc_t rc = mw_xmlrpc_read(xr_cases[i].body,
                                         strlen(xr_cases[i].body), 0, &x, &why);

        if (want[0] == '!') {
            if (rc != SUSPECT_E_PARSE || why == NULL ||
                strstr(why, want + 1) == NULL) {
                fprintf(stderr, "xmlrpc case %zu: rc %d why %s, want %s\n", i,
                        rc, why != NULL ? why : "(none)", want);
            }
            CU_ASSERT_EQUAL(rc, SUSPECT_E_PARSE);
            CU_ASSERT_PTR_NULL(x);
            CU_ASSERT(why != NULL && strstr(why, want + 1) != NULL);
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(rc, SUSPECT_OK);
        xr_text(x, got, sizeof(got));
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "xmlrpc case %zu: got %s, want %s\n", i, got, want);
        }
        CU_ASSERT_STRING_EQUAL(got, want);
        mw_xmlrpc_free(x);
    }
}

/* More calls than the cap: refused, whatever the cap. */
static void test_xmlrpc_cap(void)
{
    char body[8192];
    size_t o = (size_t)snprintf(body, sizeof(body), "%s", MC_HEAD);
    mw_xmlrpc_t *x = NULL;
    const char *why = NULL;

    for (int i = 0; i < 20; i++) {
        o += (size_t)snprintf(body + o, sizeof(body) - o, "%s",
                              MC_CALL("wp.getUsersBlogs", S("alice") S("pw")));
    }
    o += (size_t)snprintf(body + o, sizeof(body) - o, "%s", MC_TAIL);
    CU_ASSERT_EQUAL(mw_xmlrpc_read(body, o, 20, &x, &why), SUSPECT_OK);
    CU_ASSERT_EQUAL(x != NULL ? mw_xmlrpc_ncalls(x) : 0, 20);
    mw_xmlrpc_free(x);
    CU_ASSERT_EQUAL(mw_xmlrpc_read(body, o, 19, &x, &why), SUSPECT_E_RANGE);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT(why != NULL && strstr(why, "maxCalls") != NULL);
}

/* ---- JSON ------------------------------------------------------------ */

/* The values at ptrs ("/a /b", space-separated) of each call of j:
 * "a,b;a,b", "-" for none, "<inval>". */
static void json_text(const mw_json_t *j, const char *ptrs, char *out,
                      size_t size)
{
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; i < mw_json_ncalls(j); i++) {
        const char *p = ptrs;

        o += (size_t)snprintf(out + o, size - o, "%s", i > 0 ? ";" : "");
        while (*p != '\0') {
            size_t plen = strcspn(p, " ");
            char buf[MW_JSON_INT_TEXT];
            const char *v = NULL;
            size_t len = 0;
            suspect_rc_t rc = mw_json_value(j, i, p, plen, buf, &v, &len);

            o += (size_t)snprintf(out + o, size - o, "%s%.*s",
                                  p != ptrs ? "," : "",
                                  rc == SUSPECT_OK        ? (int)len
                                  : rc == SUSPECT_E_INVAL ? 7
                                                          : 1,
                                  rc == SUSPECT_OK        ? v
                                  : rc == SUSPECT_E_INVAL ? "<inval>"
                                                          : "-");
            p += plen;
            p += strspn(p, " ");
        }
    }
}

static const struct {
    const char *body;
    const char *ptrs;
    const char *want;
} json_cases[] = {
    {"{\"username\":\"alice\",\"password\":\"x\"}", "/username", "alice"},
    {"{\"params\":[\"alice\",\"pw\"]}", "/params/0 /params/1 /params/2",
     "alice,pw,-"},
    {"[{\"u\":\"a\"},{\"u\":\"b\"},{\"v\":1},7]", "/u", "a;b;-;-"},
    {"{\"u\":27}", "/u", "27"},
    {"{\"u\":-0}", "/u", "0"},
    {"{\"u\":null}", "/u", "-"},
    {"{\"u\":1.0}", "/u", "<inval>"},
    {"{\"u\":true}", "/u", "<inval>"},
    {"{\"u\":[\"a\"]}", "/u", "<inval>"},
    {"{\"a/b\":\"x\",\"m~n\":\"y\"}", "/a~1b /m~0n", "x,y"},
    {"{\"l\":[\"a\",\"b\"]}", "/l/01 /l/1 /l/-", "-,b,-"},
    {"{\"u\":\"\\u00e9\"}", "/u", "\xc3\xa9"},
    {"[]", "/u", ""},
    {"{\"u\":\"a\",\"u\":\"b\"}", "/u", "!twice"},
    {"[{\"x\":{\"u\":1,\"u\":2}}]", "/u", "!twice"},
    /* the same key spelled with an escape */
    {"{\"u\":\"a\",\"\\u0075\":\"b\"}", "/u", "!twice"},
    {"{\"u\":123456789012345678901234}", "/u", "!does not parse"},
    {"{\"u\":\"a\\u0000b\"}", "/u", "!does not parse"},
    {"{\"u\":\"a\",}", "/u", "!does not parse"},
    {"{\"u\":\"\xff\"}", "/u", "!does not parse"},
    {"{\"u\":\"a\"} x", "/u", "!does not parse"},
    /* json_decode($b, true) makes this a list: a batch to PHP */
    {"{\"0\":{\"u\":\"a\"},\"1\":{\"u\":\"b\"}}", "/u", "!key \"0\""},
    {"", "/u", "!does not parse"},
};

static void test_json_table(void)
{
    for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
        const char *want = json_cases[i].want;
        mw_json_t *j = NULL;
        const char *why = NULL;
        char got[OUT_MAX];
        suspect_rc_t rc = mw_json_read(
            json_cases[i].body, strlen(json_cases[i].body), 100, &j, &why);

        if (want[0] == '!') {
            CU_ASSERT_EQUAL(rc, SUSPECT_E_PARSE);
            CU_ASSERT_PTR_NULL(j);
            if (why == NULL || strstr(why, want + 1) == NULL) {
                fprintf(stderr, "json case %zu: why %s, want %s\n", i,
                        why != NULL ? why : "(none)", want);
                CU_FAIL("refused for another reason");
            }
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(rc, SUSPECT_OK);
        json_text(j, json_cases[i].ptrs, got, sizeof(got));
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "json case %zu: got %s, want %s\n", i, got, want);
        }
        CU_ASSERT_STRING_EQUAL(got, want);
        mw_json_free(j);
    }
}

static void test_json_cap(void)
{
    mw_json_t *j = NULL;
    const char *why = NULL;

    CU_ASSERT_EQUAL(mw_json_read("[1,2,3]", 7, 3, &j, &why), SUSPECT_OK);
    mw_json_free(j);
    CU_ASSERT_EQUAL(mw_json_read("[1,2,3]", 7, 2, &j, &why), SUSPECT_E_RANGE);
    CU_ASSERT_PTR_NULL(j);
    CU_ASSERT(why != NULL && strstr(why, "maxCalls") != NULL);
}

int register_bodies_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"XML-RPC table", test_xmlrpc_table},
        {"XML-RPC maxCalls", test_xmlrpc_cap},
        {"JSON table", test_json_table},
        {"JSON maxCalls", test_json_cap},
    };
    CU_pSuite s = CU_add_suite("bodies", NULL, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
