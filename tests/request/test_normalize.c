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
#include "helpers/util.h"
#include "normalize_test.h"
#include "suites.h"

/* Applies spec to a value: see normalize_test.h. */
char *norm_test_apply(const char *spec, const char *in, size_t len,
                      size_t *out_len)
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
    /* canonical decomposition only: compatibility characters (ﬁ, ², ™,
     * ª) are left as they are, for alnum or only: to judge */
    {"unaccent", "\xef\xac\x81le", 0, "\xef\xac\x81le", 0}, /* ﬁ */
    {"unaccent", "alice\xc2\xb2\xe2\x84\xa2\xc2\xaa", 0,
     "alice\xc2\xb2\xe2\x84\xa2\xc2\xaa", 0}, /* ²™ª */
    /* Latin letters without a decomposition, from the table */
    {"unaccent",
     "a\xc5\x82\xc4\xb1"
     "ce",
     0, "alice", 0}, /* łı */
    {"unaccent", "\xc3\xb8\xc4\x91\xc4\xa7\xc5\xa7\xc6\x92", 0, "odhtf",
     0}, /* øđħŧƒ */
    {"unaccent", "\xc3\x86\xc5\x93\xc3\xbe\xc3\x9f\xe1\xba\x9e", 0,
     "AEoethssSS", 0},                                    /* Æœþßẞ */
    {"unaccent", "\xc5\x81ukasz", 0, "Lukasz", 0},        /* Ł */
    {"casefold unaccent", "\xc3\x89LISE", 0, "elise", 0}, /* É */
    /* invalid UTF-8 is dropped by the Unicode steps */
    {"casefold", "AL\xffICE\xc3", 0, "alice", 0},
    {"unaccent", "al\xc3\xa1\xff", 0, "ala", 0},
    /* letters, marks and digits only */
    {"alnum", "a.l!i ce_2\xe3\x80\x82", 0, "alice2", 0},
    {"alnum", "j\xc3\xb6rg", 0, "j\xc3\xb6rg", 0},
    {"alnum::",
     "User _:\xc2\xa0"
     "al.ice",
     0, "User:alice", 0},
    /* a prefix, once */
    {"strip-prefix:user:", "user:alice", 0, "alice", 0},
    {"strip-prefix:user:", "user:user:alice", 0, "user:alice", 0},
    {"strip-prefix:user:", "alice", 0, "alice", 0},
    {"strip-prefix:user\\s", "user", 0, "user", 0},
    /* character references, decoded once */
    {"html-entities", "&lrm;a&rlm;lice", 0,
     "\xe2\x80\x8e"
     "a\xe2\x80\x8flice",
     0},
    {"html-entities", "J&ouml;rg&#65;&#x42;&#X43;", 0, "J\xc3\xb6rgABC", 0},
    {"html-entities", "&#0;&#1;&#xd800;&#99999999999999;", 0,
     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 0},
    {"html-entities", "&#128512;", 0, "\xf0\x9f\x98\x80", 0},
    {"html-entities", "&amp;lrm;", 0, "&lrm;", 0},
    {"html-entities", "a&b &lrm &#; &#x; &; &", 0, "a&b &lrm &#; &#x; &; &", 0},
    /* strip_tags() as PHP 8 reads these (checked against php) */
    {"strip-tags", "alice<x1>", 0, "alice", 0},
    {"strip-tags", "<b>alice</b>", 0, "alice", 0},
    {"strip-tags", "alice<!--n-->", 0, "alice", 0},
    {"strip-tags", "alice<!-->x", 0, "alicex", 0},
    {"strip-tags", "al\0ice", 6, "alice", 0},
    {"strip-tags", "a < b>c", 0, "a < b>c", 0},
    {"strip-tags", "al<\tice", 0, "al<\tice", 0},
    {"strip-tags", "alice<", 0, "alice", 0},
    {"strip-tags", "ali<ce \"x", 0, "ali", 0},
    {"strip-tags", "al<>ice", 0, "alice", 0},
    {"strip-tags", "a>b", 0, "a>b", 0},
    /* rcube_charset::clean(): the bytes that are not UTF-8 go */
    {"utf8-clean", "al\xff\xc3ice\xc3\xa9", 0, "alice\xc3\xa9", 0},
    {"strip-tags utf8-clean trim casefold", "\xff <b>Alice</b>\xc3", 0, "alice",
     0},
    /* only: keeps what fits */
    {"only:a-z0-9._@-", "alice.b-2@x_", 0, "alice.b-2@x_", 0},
    {"only:a-z\xd0\xb0-\xd1\x8f",
     "\xd0\xb8\xd0\xb2"
     "an",
     0,
     "\xd0\xb8\xd0\xb2"
     "an",
     0}, /* а-я */
    /* MediaWiki's user names */
    {"html-entities casefold unaccent alnum:: strip-prefix:user: only:a-z0-9",
     "User:J&ouml;rg", 0, "jorg", 0},
    {"html-entities casefold unaccent alnum:: strip-prefix:user: only:a-z0-9",
     "a&rlm;l&lrm;ice", 0, "alice", 0},
    {"html-entities casefold unaccent alnum:: strip-prefix:user: only:a-z0-9",
     "uSeR _:\xc2\xa0"
     "Alice\xe2\x80\xaa",
     0, "alice", 0},
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
        char *got = norm_test_apply(cases[i].spec, cases[i].in, in_len, &len);

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
     "trim trim trim trim trim trim trim trim trim trim trim trim trim trim "
     "trim trim trim trim trim",
     "more than 32 steps"},
    {"alnum:", "has an empty argument"},
    {"html-entities:x", "takes no argument"},
    {"strip-prefix", "needs an argument"},
    {"only", "needs an argument"},
    {"only:z-a", "has a bad range"},
    {"only:a-\xff", "has a bad range"},
    {"only:\xff", "not UTF-8 or a bad escape"},
    {"only:\xc3", "not UTF-8 or a bad escape"},
    {"only:\xc3\xa0\xc3\xa2\xc3\xa4\xc3\xa6\xc3\xa8\xc3\xaa\xc3\xac"
     "\xc3\xae\xc3\xb0",
     "too many ranges"},
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

/* Values a step refuses: SUSPECT_E_INVAL, the request is refused. */
static void test_refused(void)
{
    static const struct {
        const char *spec;
        const char *in;
    } refused[] = {
        {"only:a-z0-9", "alice\xc2\xb2"},
        {"only:a-z0-9", "Alice"},
        {"only:a-z0-9", "al\xffice"},
        {"only:a-z\xd0\xb0-\xd1\x8f", "\xd0\x98"}, /* И */
        {"html-entities", "&ZeroWidthSpace;alice"},
        {"html-entities", "al&\xd7\xa8\xd7\x9c\xd7\x9e;ice"}, /* &רלמ; */
        {"html-entities", "&LRM;alice"},
        {"html-entities", "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;"},
        /* strip_tags() reads these by rules of its own */
        {"strip-tags", "a<a \">\">b"},
        {"strip-tags", "a<a<b>>c"},
        {"strip-tags", "ali<?ce?>x"},
        {"strip-tags", "a<!x>b"},
        {"strip-tags", "a<!--'-->b"},
        /* DokuWiki's recipe: what the wiki turns into '_' and trims */
        {"strip-controls casefold unaccent alnum only:a-z0-9",
         "alice\xc2\xb2\xc2\xb3"},
        {"strip-controls casefold unaccent alnum only:a-z0-9", "\xc2\xaa"
                                                               "alice"},
    };

    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        mw_norm_t *n = NULL;
        char buf[64];
        const char *out = NULL;
        size_t len = 0;
        char *heap = NULL;

        CU_ASSERT_EQUAL_FATAL(
            mw_norm_compile(refused[i].spec, strlen(refused[i].spec), &n, NULL),
            SUSPECT_OK);
        CU_ASSERT_EQUAL(mw_norm_apply(n, refused[i].in, strlen(refused[i].in),
                                      buf, sizeof(buf), &out, &len, &heap),
                        SUSPECT_E_INVAL);
        CU_ASSERT_PTR_NULL(heap);
        mw_norm_free(n);
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
    got = norm_test_apply("casefold unaccent map:a=aa", in, n, &len);
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

/* Writes n bytes of p as hex and a newline to f. */
static void put_hex(FILE *f, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%02x", p[i]);
    }
    fputc('\n', f);
}

/* strip-tags against PHP's own strip_tags(): random values over the
 * bytes that matter to it, each read by php-cgi; every value the step
 * does not refuse must come out as PHP's. */
static void test_strip_tags_as_php(void)
{
    static const char alphabet[] = "a<>!-?\"' \t\v/=b\0";
    enum { VALUES = 3000 };
    char *dir = test_mkdtemp(), in[TEST_PATH_MAX], out[TEST_PATH_MAX],
         script[TEST_PATH_MAX], cmd[3 * TEST_PATH_MAX];
    unsigned char vals[VALUES][12];
    size_t lens[VALUES];
    unsigned seed = 7;
    mw_norm_t *n = NULL;
    FILE *f;
    char *text, *line;
    int compared = 0, refused = 0;

    CU_ASSERT_FATAL(dir != NULL);
    snprintf(in, sizeof(in), "%s/values", dir);
    snprintf(out, sizeof(out), "%s/stripped", dir);
    f = fopen(in, "w");
    CU_ASSERT_FATAL(f != NULL);
    for (size_t i = 0; i < VALUES; i++) {
        lens[i] = 1 + (seed = seed * 1103515245u + 12345u) % 12;
        for (size_t k = 0; k < lens[i]; k++) {
            seed = seed * 1103515245u + 12345u;
            vals[i][k] =
                (unsigned char)alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        put_hex(f, vals[i], lens[i]);
    }
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "<?php foreach (file('%s') as $l) "
             "echo bin2hex(strip_tags(hex2bin(trim($l)))), \"\\n\";\n",
             in);
    snprintf(script, sizeof(script), "%s/strip.php", dir);
    CU_ASSERT_FATAL(test_write_file(script, cmd, strlen(cmd)) == 0);
    snprintf(cmd, sizeof(cmd), "php-cgi -q %s > %s", script, out);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    text = test_read_file(out, NULL);
    CU_ASSERT_FATAL(text != NULL);
    CU_ASSERT_EQUAL_FATAL(mw_norm_compile("strip-tags", 10, &n, NULL),
                          SUSPECT_OK);
    line = text;
    for (size_t i = 0; i < VALUES && line != NULL; i++) {
        char buf[64], hex[64] = "";
        const char *o = NULL;
        size_t len = 0;
        char *heap = NULL;
        char *eol = strchr(line, '\n');

        if (eol != NULL) {
            *eol = '\0';
        }
        if (mw_norm_apply(n, (const char *)vals[i], lens[i], buf, sizeof(buf),
                          &o, &len, &heap) == SUSPECT_OK) {
            for (size_t k = 0; k < len; k++) {
                snprintf(hex + 2 * k, 3, "%02x", (unsigned char)o[k]);
            }
            if (strcmp(hex, line) != 0) {
                CU_FAIL("strip-tags reads a value other than PHP");
                fprintf(stderr, "value #%zu: php %s, strip-tags %s\n", i, line,
                        hex);
            }
            compared++;
        } else {
            refused++;
        }
        free(heap);
        line = eol != NULL ? eol + 1 : NULL;
    }
    CU_ASSERT_EQUAL(compared + refused, VALUES);
    CU_ASSERT(compared > VALUES / 2); /* most are read, not refused */
    mw_norm_free(n);
    free(text);
    test_rmtree(dir);
    free(dir);
}

int register_normalize_suite(void)
{
    CU_pSuite s = CU_add_suite("normalize", NULL, NULL);

    if (s == NULL || CU_add_test(s, "table", test_cases) == NULL ||
        CU_add_test(s, "bad texts", test_bad) == NULL ||
        CU_add_test(s, "refused values", test_refused) == NULL ||
        CU_add_test(s, "long values", test_long) == NULL ||
        CU_add_test(s, "describe", test_describe) == NULL ||
        CU_add_test(s, "default trim", test_trim_default) == NULL ||
        CU_add_test(s, "strip-tags reads as PHP's strip_tags()",
                    test_strip_tags_as_php) == NULL ||
        normalize_register_wp(s) != 0 || normalize_register_alias(s) != 0) {
        return -1;
    }
    return 0;
}
