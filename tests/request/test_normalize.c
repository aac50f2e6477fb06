/*
 * test_normalize.c - suite "normalize": identity values as applications
 * read them (middleware/request/normalize.c).  Tables: a normalize text,
 * an input and the value it must become; texts that must not compile,
 * with the message; long values that leave the stack buffers.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/normalize.h"
#include "suites.h"

/* The value of in (len bytes) after spec, as a new string the caller
 * frees, or NULL when spec does not compile. */
static char *norm(const char *spec, const char *in, size_t len, size_t *out_len)
{
    mw_norm_t *n = NULL;
    char buf[64];
    const char *out = NULL;
    char *heap = NULL;
    char *copy;

    if (mw_norm_compile(spec, strlen(spec), &n, NULL) != SUSPECT_OK) {
        return NULL;
    }
    CU_ASSERT_EQUAL_FATAL(
        mw_norm_apply(n, in, len, buf, sizeof(buf), &out, out_len, &heap),
        SUSPECT_OK);
    copy = malloc(*out_len + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
    memcpy(copy, out, *out_len);
    copy[*out_len] = '\0';
    free(heap);
    mw_norm_free(n);
    return copy;
}

static const struct {
    const char *spec;
    const char *in;
    size_t in_len; /* 0: strlen(in) */
    const char *want;
    size_t want_len; /* 0: strlen(want) */
} cases[] = {
    /* no steps: the bytes themselves */
    {"", " Alice ", 0, " Alice ", 0},
    {"none", "a\0b", 3, "a\0b", 3},
    /* PHP's trim(): NUL, \v, tabs, newlines; not form feed */
    {"trim", "\0 \t\n\r\vAlice\v\0", 13, "Alice", 0},
    {"php-trim", "\falice", 0, "\falice", 0},
    {"trim", "   ", 0, "", 0},
    {"trim:._\\s", "._ alice.", 0, "alice", 0},
    {"ltrim:_", "__a__", 0, "a__", 0},
    {"rtrim:_", "__a__", 0, "__a", 0},
    {"trim::._-", ":alice_", 0, "alice", 0},
    /* control characters anywhere, NUL included */
    {"strip-controls",
     "al\x01i\x1f"
     "c\x7f"
     "e",
     0, "alice", 0},
    {"strip-controls", "\0alice", 6, "alice", 0},
    {"strip:\\x00-", "a-l\0ice", 7, "alice", 0},
    /* case */
    {"lower", "ALICE\xc3\x81", 0, "alice\xc3\x81", 0},
    {"casefold", "ALICE", 0, "alice", 0},
    {"casefold", "\xc3\x81LICE", 0, "\xc3\xa1lice", 0}, /* Álice */
    {"casefold",
     "STRA\xc3\x9f"
     "E",
     0, "strasse", 0}, /* ß */
    {"casefold",
     "\xe2\x84\xaa"
     "ELVIN",
     0, "kelvin", 0}, /* K sign */
    {"login", " Alice\n", 0, "alice", 0},
    {"email", " Alice@Example.COM ", 0, "alice@example.com", 0},
    /* accents */
    {"unaccent", "\xc3\xa1lice", 0, "alice", 0},  /* á */
    {"unaccent", "a\xcc\x81lice", 0, "alice", 0}, /* a + ́ */
    {"unaccent",
     "\xef\xac\x81"
     "le",
     0, "file", 0},                                       /* ﬁ */
    {"casefold unaccent", "\xc3\x89LISE", 0, "elise", 0}, /* É */
    /* invalid UTF-8 is dropped by the Unicode steps */
    {"casefold", "AL\xffICE\xc3", 0, "alice", 0},
    {"unaccent", "al\xc3\xa1\xff", 0, "ala", 0},
    /* letters, marks and digits only */
    {"alnum", "a.l!i ce_2\xe3\x80\x82", 0, "alice2", 0},
    {"alnum", "j\xc3\xb6rg", 0, "j\xc3\xb6rg", 0},
    /* runs */
    {"collapse:_", "a___b_c", 0, "a_b_c", 0},
    {"collapse:\\s\\t", "a \t  b", 0, "a b", 0},
    /* maps, in order, leftmost first */
    {"map:ae=a,oe=o", "joerg", 0, "jorg", 0},
    {"map:\xc3\xa4=ae", "j\xc3\xa4ger", 0, "jaeger", 0},
    {"map:\\,=\\=,x=", "a,bx", 0, "a=b", 0},
    {"map:a=aaaa", "aa", 0, "aaaaaaaa", 0},
    /* presets mix with steps */
    {"login unaccent", " \xc3\x81LICE", 0, "alice", 0},
    /* a DokuWiki user name, over-merged */
    {"strip-controls casefold unaccent map:ae=a,oe=o,ue=u alnum",
     "\x01J\xc3\xb6rg.", 0, "jorg", 0},
};

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t in_len = cases[i].in_len ? cases[i].in_len : strlen(cases[i].in);
        size_t want_len =
            cases[i].want_len ? cases[i].want_len : strlen(cases[i].want);
        size_t len = 0;
        char *got = norm(cases[i].spec, cases[i].in, in_len, &len);

        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        if (len != want_len || memcmp(got, cases[i].want, len) != 0) {
            fprintf(stderr, "case %zu (%s): got %zu bytes '%s'\n", i,
                    cases[i].spec, len, got);
        }
        CU_ASSERT_EQUAL(len, want_len);
        CU_ASSERT_EQUAL(memcmp(got, cases[i].want, want_len), 0);
        free(got);
    }
}

static const struct {
    const char *spec;
    const char *msg; /* a part of the message */
} bad_cases[] = {
    {"lowwer", "step 'lowwer' is unknown"},
    {"strip", "needs an argument"},
    {"collapse", "needs an argument"},
    {"casefold:x", "takes no argument"},
    {"trim:", "has an empty argument"},
    {"trim:\\x4", "bad escape"},
    {"map:ab", "must be map:FROM=TO"},
    {"map:=b", "must be map:FROM=TO"},
    {"trim trim trim trim trim trim trim trim trim trim trim trim trim trim "
     "trim trim trim",
     "more than 16 steps"},
};

static void test_bad(void)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        mw_norm_t *n = NULL;
        suspect_err_t err;

        suspect_err_clear(&err);
        CU_ASSERT_EQUAL(mw_norm_compile(bad_cases[i].spec,
                                        strlen(bad_cases[i].spec), &n, &err),
                        SUSPECT_E_CONFIG);
        CU_ASSERT_PTR_NULL(n);
        if (strstr(err.text, bad_cases[i].msg) == NULL) {
            fprintf(stderr, "'%s': %s\n", bad_cases[i].spec, err.text);
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, bad_cases[i].msg));
    }
}

/* Values longer than the stack buffers and the caller's buffer. */
static void test_long(void)
{
    size_t n = 40000;
    char *in = malloc(n);
    char *want = malloc(n * 2);
    size_t len = 0;
    char *got;

    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    for (size_t i = 0; i < n; i += 2) {
        memcpy(in + i, "\xc3\x81", 2); /* Á */
        memcpy(want + i, "a", 1);
    }
    got = norm("casefold unaccent map:a=aa", in, n, &len);
    CU_ASSERT_EQUAL(len, n);
    for (size_t i = 0; got != NULL && i < len; i++) {
        if (got[i] != 'a') {
            CU_FAIL("long value");
            break;
        }
    }
    free(got);
    free(in);
    free(want);
}

/* The text --check prints. */
static void test_describe(void)
{
    mw_norm_t *n = NULL;
    char buf[128];
    const char *spec = "login  strip:\\s";

    CU_ASSERT_EQUAL_FATAL(mw_norm_compile(spec, strlen(spec), &n, NULL),
                          SUSPECT_OK);
    mw_norm_describe(n, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "trim casefold strip:\\s");
    mw_norm_free(n);
    mw_norm_describe(NULL, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "none");
}

/* The default reading when none is declared: what PHP, Perl and Python
 * trim, in UTF-8 too; the middle is kept. */
static void test_trim_default(void)
{
    static const struct {
        const char *in;
        size_t len;
    } spaced[] = {
        {"\0\f alice\v\0", 11},
        {"\xc2\xa0"
         "alice\x1f",
         8},
        {"\xe3\x80\x80\xe2\x80\x89"
         "alice\xc2\x85",
         13},
        {"\x1c\r\nalice", 8},
    };

    for (size_t i = 0; i < sizeof(spaced) / sizeof(spaced[0]); i++) {
        const char *v = spaced[i].in;
        size_t len = spaced[i].len;

        mw_norm_trim_default(&v, &len);
        CU_ASSERT_EQUAL(len, 5);
        CU_ASSERT_EQUAL(memcmp(v, "alice", 5), 0);
    }
    {
        const char *v = "a\xc2\xa0"
                        "b\xc2";
        size_t len = 5;

        mw_norm_trim_default(&v, &len);
        CU_ASSERT_EQUAL(len, 5); /* a lone 0xC2 is not white space */
    }
}

int register_normalize_suite(void)
{
    CU_pSuite s = CU_add_suite("normalize", NULL, NULL);

    if (s == NULL || CU_add_test(s, "table", test_cases) == NULL ||
        CU_add_test(s, "bad texts", test_bad) == NULL ||
        CU_add_test(s, "long values", test_long) == NULL ||
        CU_add_test(s, "describe", test_describe) == NULL ||
        CU_add_test(s, "default trim", test_trim_default) == NULL) {
        return -1;
    }
    return 0;
}
