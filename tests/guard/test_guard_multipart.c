/*
 * test_guard_multipart.c - suite "guard", multipart/form-data bodies
 * (middleware/guard/guard_multipart.c): a login posted as multipart is
 * counted exactly as the urlencoded one, in every spelling (field order,
 * repeats, PHP's array names, quoted boundary, bare LF lines, a
 * preamble); readings that differ are refused (ambiguous copies, a file
 * named as the counted field, shapes parsers read differently); a body
 * longer than formMax is read to the application byte for byte through
 * its check, whatever the read sizes, and a counted field past formMax,
 * or a bad shape there, ends it with the refusal before the application
 * gets that part.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard_test.h"
#include "helpers/fakereq.h"

#define FORM_MAX 1024

typedef struct vars {
    char t[256], l[64];
    const char *v[6];
} vars_t;

/* Decides POST /login with a body of type; r stays open (the caller
 * frees it), on v (the caller's, kept as long as r). */
static mw_verdict_t login(gt_fixture_t *f, fakereq_t *r, vars_t *v,
                          const char *type, const char *body, size_t len,
                          size_t chunk)
{
    mw_verdict_t out;

    snprintf(v->t, sizeof(v->t), "CONTENT_TYPE=%s", type);
    snprintf(v->l, sizeof(v->l), "CONTENT_LENGTH=%zu", len);
    v->v[0] = "REQUEST_METHOD=POST";
    v->v[1] = "REQUEST_URI=/login";
    v->v[2] = "REMOTE_ADDR=192.0.2.1";
    v->v[3] = v->t;
    v->v[4] = v->l;
    v->v[5] = NULL;
    fakereq_init(r, v->v, body, len);
    r->chunk = chunk;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r->req, GT_NOW, &out, NULL),
        SUSPECT_OK);
    return out;
}

/* Everything the app reads of the body, into buf; *rc gets the last
 * read's result (0 at the end). */
static size_t read_all(fakereq_t *r, char *buf, size_t size, size_t piece,
                       ssize_t *rc)
{
    size_t n = 0;
    ssize_t k = 0;

    while (n < size) {
        size_t want = piece != 0 && piece < size - n ? piece : size - n;

        k = mw_req_read(&r->req, buf + n, want, true);
        if (k <= 0) {
            break;
        }
        n += (size_t)k;
    }
    *rc = k;
    return n;
}

/* A fixture with POST /login counting form:user (10 per window). */
static int open_login(gt_fixture_t *f, suspect_conf_identity_t *id,
                      suspect_conf_route_t *route, suspect_conf_t *conf)
{
    *id = gt_ident("User", "form:user");
    *route = gt_route("Many", "/login", id, 1);
    *conf = gt_conf(route, 1);
    conf->form_max = FORM_MAX;
    return gt_open(f, conf);
}

#define CT               "multipart/form-data; boundary=b"
#define CD               "Content-Disposition: form-data; "
#define FLD(name, value) "--b\r\n" CD "name=\"" name "\"\r\n\r\n" value "\r\n"

/* The spellings a client could try: each is the account alice. */
static void test_login_spellings(void)
{
    static const struct {
        const char *type, *body;
    } cases[] = {
        {CT, FLD("user", "alice") FLD("password", "x") "--b--\r\n"},
        {CT, FLD("password", "x") FLD("user", "alice") "--b--"},
        {CT, FLD("user", "alice") FLD("user", "alice") "--b--"},
        {CT, FLD("user[]", "alice") "--b--"},
        {CT, FLD(" user", "alice") "--b--"},
        {CT, "--b\r\n" CD "name=user\r\n\r\nalice\r\n--b--"},
        {CT, "--b\r\n" CD "NAME=\"user\"\r\n\r\nalice\r\n--b--"},
        {"multipart/form-data; boundary=\"b\"", FLD("user", "alice") "--b--"},
        {"Multipart/Form-Data; charset=utf-8; boundary=b",
         FLD("user", " alice\t") "--b--"},
        {CT, "--b\n" CD "name=\"user\"\n\nalice\n--b--\n"},
        {CT, "preamble\r\n" FLD("user", "alice") "--b--\r\nepilogue"},
        {CT,
         "--b\r\nX-Note: 1\r\n\r\nuser=bob\r\n" FLD("user", "alice") "--b--"},
        {CT, "--b\r\n" CD "name=\"f\"; filename=\"user\"\r\n\r\nbob\r\n" FLD(
                 "user", "alice") "--b--"},
        {"multipart/mixed; boundary=b", FLD("user", "alice") "--b--"},
    };
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    suspect_conf_t conf;
    gt_fixture_t f;

    if (open_login(&f, &id, &route, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fakereq_t r;
        vars_t v;
        mw_verdict_t out = login(&f, &r, &v, cases[i].type, cases[i].body,
                                 strlen(cases[i].body), 0);

        CU_ASSERT_EQUAL(out.kind, MW_VERDICT_ALLOW);
        CU_ASSERT_EQUAL(gt_count(&f, "Many", "alice"), i + 1);
        if (out.kind != MW_VERDICT_ALLOW) {
            fprintf(stderr, "\n  case %zu: %d %s\n", i, out.status,
                    out.why != NULL ? out.why : "");
        }
        fakereq_free(&r);
    }
    /* The urlencoded login is the same counter. */
    {
        fakereq_t r;
        vars_t v;

        login(&f, &r, &v, "application/x-www-form-urlencoded",
              "user=alice&password=x", 21, 0);
        CU_ASSERT_EQUAL(gt_count(&f, "Many", "alice"),
                        sizeof(cases) / sizeof(cases[0]) + 1);
        fakereq_free(&r);
    }
    gt_close(&f);
}

/* Readings that differ: refused, nothing counted. */
static void test_refused(void)
{
    static const struct {
        const char *type, *body;
        int status;
    } cases[] = {
        /* PHP reads the last copy, CGI.pm the first. */
        {CT, FLD("user", "decoy") FLD("user", "alice") "--b--", 400},
        {CT, FLD("user", "decoy") FLD("user[]", "alice") "--b--", 400},
        /* A file named as the counted field: CGI.pm reads its name. */
        {CT, "--b\r\n" CD "name=\"user\"; filename=\"alice\"\r\n\r\nx\r\n--b--",
         400},
        {CT,
         "--b\r\n" CD "name=\"user[]\"; filename=\"\"\r\n\r\nalice\r\n"
         "--b--",
         400},
        /* Shapes parsers read differently. */
        {CT, "--b\r\n" CD "name='user'\r\n\r\nalice\r\n--b--", 415},
        {CT, "--b\r\n" CD "name=\"user\";filename=\"f\"\r\n\r\nalice\r\n--b--",
         415},
        {CT, FLD("user", "alice") "--b", 415},
        {CT, FLD("user", "alice") "--b--\r\n" FLD("user", "alice") "--b--",
         415},
        {CT, "--b\r\n" CD "name=\"user\"\r\n\r\nalice\n--b--", 415},
        {"multipart/form-data; boundary=b ; x=y", FLD("user", "alice") "--b--",
         415},
        {"multipart/form-data", FLD("user", "alice") "--b--", 415},
    };
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    suspect_conf_t conf;
    gt_fixture_t f;

    if (open_login(&f, &id, &route, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fakereq_t r;
        vars_t v;
        mw_verdict_t out = login(&f, &r, &v, cases[i].type, cases[i].body,
                                 strlen(cases[i].body), 0);

        CU_ASSERT_EQUAL(out.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(out.status, cases[i].status);
        CU_ASSERT_PTR_NOT_NULL(out.why);
        if (out.status != cases[i].status) {
            fprintf(stderr, "\n  case %zu: %d\n", i, out.status);
        }
        fakereq_free(&r);
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "alice"), 0);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "decoy"), 0);
    gt_close(&f);
}

/* A body with a file of size bytes between fields before and after,
 * malloc'ed (*len). */
static char *upload(size_t size, const char *before, const char *after,
                    size_t *len)
{
    char *b = malloc(size + 4096);
    size_t n = 0;

    if (b == NULL) {
        return NULL;
    }
    n += (size_t)sprintf(b,
                         "%s--b\r\n" CD "name=\"file\"; filename=\"a.bin\""
                         "\r\nContent-Type: application/octet-stream\r\n\r\n",
                         before);
    for (size_t i = 0; i < size; i++) {
        /* Every byte value, "--" and line ends, never "--b". */
        b[n + i] = (char)(i % 7 == 0   ? '-'
                          : i % 5 == 0 ? '\n'
                                       : (i * 31) & 0xff);
        if (b[n + i] == 'b') {
            b[n + i] = 'c';
        }
    }
    n += size;
    n += (size_t)sprintf(b + n, "\r\n%s--b--\r\n", after);
    *len = n;
    return b;
}

/* Longer than formMax: the field before the file counts, the app gets
 * every byte, in any read size. */
static void test_long_body(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    suspect_conf_t conf;
    gt_fixture_t f;
    size_t len = 0;
    char *body =
        upload(300000, FLD("user", "alice"), FLD("comment", "hi"), &len);
    char *got = malloc(len + 16);
    static const size_t pieces[] = {0, 1, 7, 4096, 100000};

    CU_ASSERT_FATAL(body != NULL && got != NULL);
    if (open_login(&f, &id, &route, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        fakereq_t r;
        vars_t v;
        ssize_t rc = -1;
        mw_verdict_t out = login(&f, &r, &v, CT, body, len, i == 1 ? 3 : 0);

        CU_ASSERT_EQUAL(out.kind, MW_VERDICT_ALLOW);
        CU_ASSERT_EQUAL(read_all(&r, got, len + 16, pieces[i], &rc), len);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT(memcmp(got, body, len) == 0);
        CU_ASSERT_EQUAL(r.req.refused, 0);
        fakereq_free(&r);
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "alice"), 5);
    free(body);
    free(got);
    gt_close(&f);
}

/* A counted field past formMax: the decision counted the head's, the app
 * gets the body up to the late part only, and the request ends 413. */
static void test_late_field(void)
{
    static const struct {
        const char *after;
        int status;
    } cases[] = {
        {FLD("user", "victim"), 413},
        {FLD("user[x]", "victim"), 413},
        {"--b\r\n" CD "name=\"user\"; filename=\"victim\"\r\n\r\nx\r\n", 400},
        {"--b\r\n" CD "name='user'\r\n\r\nvictim\r\n", 415},
    };
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    suspect_conf_t conf;
    gt_fixture_t f;

    if (open_login(&f, &id, &route, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = 0, n;
        char *body = upload(200000, FLD("user", "alice"), cases[i].after, &len);
        char *got = malloc(len);
        const char *late = body != NULL
                               ? memmem(body + 100, len - 100, cases[i].after,
                                        strlen(cases[i].after))
                               : NULL;
        fakereq_t r;
        vars_t v;
        ssize_t rc = 0;
        mw_verdict_t out;

        CU_ASSERT_FATAL(body != NULL && got != NULL && late != NULL);
        out = login(&f, &r, &v, CT, body, len, 0);
        CU_ASSERT_EQUAL(out.kind, MW_VERDICT_ALLOW);
        n = read_all(&r, got, len, 1000, &rc);
        CU_ASSERT_EQUAL(rc, -EMSGSIZE);
        CU_ASSERT_EQUAL(r.req.refused, cases[i].status);
        CU_ASSERT_PTR_NOT_NULL(r.req.refused_why);
        /* Not a byte of the late part's delimiter line reached the app. */
        CU_ASSERT(n < (size_t)(late - body) - 1);
        CU_ASSERT(memcmp(got, body, n) == 0);
        /* Reads go on failing. */
        CU_ASSERT_EQUAL(mw_req_read(&r.req, got, 10, true), -EMSGSIZE);
        fakereq_free(&r);
        free(body);
        free(got);
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "victim"), 0);
    gt_close(&f);
}

/* A counted field whose value crosses formMax: refused before anything
 * counts; one whose headers cross it: on its way, before the app gets
 * it. */
static void test_crossing_field(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    suspect_conf_t conf;
    gt_fixture_t f;
    char body[4 * FORM_MAX], got[4 * FORM_MAX];
    size_t n;
    fakereq_t r;
    vars_t v;
    mw_verdict_t out;
    ssize_t rc = 0;

    if (open_login(&f, &id, &route, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    n = (size_t)sprintf(body,
                        FLD("pad", "%0*d") FLD("user", "alice%0*d") "--b--",
                        FORM_MAX - 120, 0, 200, 0);
    out = login(&f, &r, &v, CT, body, n, 0);
    CU_ASSERT_EQUAL(out.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(out.status, 413);
    fakereq_free(&r);
    n = (size_t)sprintf(body, FLD("pad", "%0*d") FLD("user", "alice") "--b--",
                        FORM_MAX - 80, 0);
    out = login(&f, &r, &v, CT, body, n, 0);
    CU_ASSERT_EQUAL(out.kind, MW_VERDICT_PASS); /* no user in the head */
    CU_ASSERT(read_all(&r, got, sizeof(got), 0, &rc) <
              (size_t)(strstr(body, "name=\"user") - body));
    CU_ASSERT_EQUAL(rc, -EMSGSIZE);
    CU_ASSERT_EQUAL(r.req.refused, 413);
    fakereq_free(&r);
    /* A field the route does not read may cross it. */
    n = (size_t)sprintf(body, FLD("user", "alice") FLD("pad", "%0*d") "--b--",
                        2 * FORM_MAX, 0);
    out = login(&f, &r, &v, CT, body, n, 0);
    CU_ASSERT_EQUAL(out.kind, MW_VERDICT_ALLOW);
    fakereq_free(&r);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "alice"), 1);
    gt_close(&f);
}

/* A route that needs no body never reads one; a body with no route
 * needing it is not checked either. */
static void test_body_not_needed(void)
{
    suspect_conf_identity_t id = gt_ident("Ip", "client-ip");
    suspect_conf_route_t route = gt_route("Many", "/login", &id, 1);
    suspect_conf_t conf = gt_conf(&route, 1);
    gt_fixture_t f;
    size_t len = 0;
    char *body = upload(100000, "", FLD("user", "victim"), &len);
    char *got = malloc(len);
    fakereq_t r;
    vars_t v;
    ssize_t rc = -1;

    conf.form_max = FORM_MAX;
    CU_ASSERT_FATAL(body != NULL && got != NULL);
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(login(&f, &r, &v, CT, body, len, 0).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_PTR_NULL(r.req.filter);
    CU_ASSERT_EQUAL(read_all(&r, got, len, 0, &rc), len);
    fakereq_free(&r);
    free(body);
    free(got);
    gt_close(&f);
}

int guard_register_multipart(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"multipart login spellings", test_login_spellings},
        {"multipart readings refused", test_refused},
        {"multipart body over formMax", test_long_body},
        {"multipart field past formMax", test_late_field},
        {"multipart field across formMax", test_crossing_field},
        {"multipart body not needed", test_body_not_needed},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
