/*
 * test_limits.c - the "limits" suite: loading and validating limits files.
 *
 * Most invalid input is data: tests/data/limits/invalid/<case>.xml beside
 * <case>.err, the exact "file:line: message" expected, with the file as its
 * basename.  An .err ending in '*' is a prefix: used where the text after it
 * is libxml2's own wording, which may change between its versions.  The
 * suite fails if the directory holds fewer than MIN_INVALID cases, so the
 * corpus cannot silently vanish.  Every valid/ file must load.
 *
 * The rest: the example file, both forms giving the same table, warnings,
 * lookup, caps, files that are not regular, proof that external entities
 * are never opened (inotify), billion laughs failing fast, line numbers past
 * 65535, threads parsing at once, and every allocation failing in turn.
 *
 * Length.  One suite for one loader: each test is a short case of its
 * own (most invalid input is already data), sharing the parse helpers at
 * the top; split, the cases would only be further from them.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "dtd_test.h"
#include "helpers/corpus.h"
#include "suites.h"
#include "limits/suspect_limits.h"
#include "near.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define MIN_INVALID 15

/* Expected rules of examples/limits.xml, in file order. */
static const suspect_rule_t example_rules[] = {
    {"BankAccountUpdate", 2, 120, 0, 0, 0, 0, 0, 0, 0, 0},
    {"ComposeMessage", 5, 1800, 0, 0, 0, 0, 0, 0, 0, 0},
    {"SecureForgotAccount", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0},
    {"SecureChangeEmail", 3, 1800, 1800, 0, 0, 0, 0, 0, 0, 0},
    {"SecureLoginForceForgotAccount", 2, 86400, 86400, 0, 0, 0, 0, 0, 0, 0},
    {"PromoQuery", 10, 60, 0, 0, 0, 0, 0, 0, 0, 0},
    {"LoginVerificationResend", 3, 600, 900, 0, 0, 0, 0, 0, 0, 0},
    /* examples/limits.xml only (after the seed's seven): counted by the
     * response (examples/suspect-login.xml) */
    {"Login", 3, 600, 600, 0, 0, 0, 0, 0, 0, 0},
    {"OtpVerify", 3, 600, 900, 0, 0, 0, 0, 0, 0, 0},
};
#define EXAMPLE_COUNT (sizeof(example_rules) / sizeof(example_rules[0]))
#define SEED_COUNT    7 /* the seed system's, the test data's tables */

/* Parses a C string; returns the code, formats the error into msg. */
static suspect_rc_t parse_str(const char *doc, const char *name,
                              suspect_limits_t **out, char *msg, size_t size)
{
    suspect_err_t err;
    suspect_rc_t rc;

    suspect_err_clear(&err);
    rc = suspect_limits_parse(doc, strlen(doc), name, NULL, out, &err);
    msg[0] = '\0';
    if (rc != SUSPECT_OK) {
        suspect_err_format(&err, msg, size);
    }
    return rc;
}

/* True when lim holds exactly the first n rules of examples/limits.xml. */
static int is_example_table_n(const suspect_limits_t *lim, size_t n)
{
    if (suspect_limits_count(lim) != n) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const suspect_rule_t *r = suspect_limits_at(lim, i);
        const suspect_rule_t *w = &example_rules[i];
        if (strcmp(r->action, w->action) != 0 ||
            r->limit_count != w->limit_count || r->window_s != w->window_s ||
            r->block_s != w->block_s ||
            suspect_limits_find(lim, w->action) != r) {
            return 0;
        }
    }
    return 1;
}

/* True when lim holds exactly the seed system's rules. */
static int is_example_table(const suspect_limits_t *lim)
{
    return is_example_table_n(lim, SEED_COUNT);
}

/* Loads a limits file at path for the corpus runner (corpus.h). */
static suspect_rc_t load_limits(const char *path, suspect_err_t *err)
{
    suspect_limits_t *lim = NULL;
    suspect_rc_t rc = suspect_limits_load(path, NULL, &lim, err);

    suspect_limits_unref(lim);
    return rc != SUSPECT_OK && lim != NULL ? SUSPECT_OK : rc;
}

static void test_invalid_corpus(void)
{
    test_corpus_invalid("limits/invalid", load_limits, MIN_INVALID);
}

static void test_valid_corpus(void)
{
    test_corpus_valid("limits/valid", load_limits, 5);
}

static void test_example_file(void)
{
    char data[TEST_PATH_MAX];
    suspect_limits_t *lim = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_load(test_data_path(data, "../../examples/limits.xml"),
                            NULL, &lim, &err),
        SUSPECT_OK);
    CU_ASSERT(is_example_table_n(lim, EXAMPLE_COUNT));
    CU_ASSERT_EQUAL(suspect_limits_warning_count(lim), 0);
    CU_ASSERT_PTR_NULL(suspect_limits_find(lim, "bankaccountupdate"));
    CU_ASSERT_PTR_NULL(suspect_limits_find(lim, "Nope"));
    CU_ASSERT_PTR_NULL(suspect_limits_find(lim, ""));
    CU_ASSERT_PTR_NULL(suspect_limits_at(lim, EXAMPLE_COUNT));
    CU_ASSERT(suspect_limits_line(lim, 0) > 1);
    CU_ASSERT(suspect_limits_line(lim, 1) == suspect_limits_line(lim, 0) + 1);
    CU_ASSERT_EQUAL(suspect_limits_line(lim, EXAMPLE_COUNT), 0);
    suspect_limits_unref(lim);
}

/* Both forms (and a BOM, xmlns:xsi/xsd, nil and empty elements) load to
 * the same table, with no warning. */
static void test_both_forms(void)
{
    char data[TEST_PATH_MAX];
    suspect_limits_t *a = NULL, *b = NULL;

    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_load(test_data_path(data, "limits/valid/attributes.xml"),
                            NULL, &a, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_load(test_data_path(data, "limits/valid/serializer.xml"),
                            NULL, &b, NULL),
        SUSPECT_OK);
    CU_ASSERT(is_example_table(a));
    CU_ASSERT(is_example_table(b));
    CU_ASSERT_EQUAL(suspect_limits_warning_count(b), 0);
    CU_ASSERT_EQUAL(suspect_limits_line(b, 0), 3);
    CU_ASSERT_EQUAL(suspect_limits_line(b, 1), 8);
    suspect_limits_unref(a);
    suspect_limits_unref(b);
}

static void test_mixed_and_namespaces(void)
{
    char data[TEST_PATH_MAX];
    suspect_limits_t *lim = NULL;
    const suspect_rule_t *r;

    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_load(test_data_path(data, "limits/valid/mixed.xml"),
                            NULL, &lim, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), 3);
    r = suspect_limits_find(lim, "Mixed.One");
    CU_ASSERT(r != NULL && r->limit_count == 7 && r->window_s == 60 &&
              r->block_s == 0);
    r = suspect_limits_find(lim, "_mixed-two");
    CU_ASSERT(r != NULL && r->limit_count == SUSPECT_LIMIT_COUNT_MAX &&
              r->window_s == SUSPECT_DURATION_MAX && r->block_s == 0);
    r = suspect_limits_find(lim, "Mixed3");
    CU_ASSERT(r != NULL && r->limit_count == 1 && r->window_s == 1 &&
              r->block_s == SUSPECT_DURATION_MAX);
    CU_ASSERT_EQUAL(suspect_limits_warning_count(lim), 0);
    suspect_limits_unref(lim);

    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_load(test_data_path(data, "limits/valid/namespaced.xml"),
                            NULL, &lim, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), 2);
    CU_ASSERT_PTR_NOT_NULL(suspect_limits_find(lim, "Spaced"));
    CU_ASSERT_PTR_NOT_NULL(suspect_limits_find(lim, "Defaulted"));
    suspect_limits_unref(lim);
}

static void test_warnings(void)
{
    char data[TEST_PATH_MAX];
    static const char *const want[] = {
        "w.xml:2: warning: ArrayOfSuspectUsageSettingEntity: unknown "
        "attribute 'Version' ignored",
        "w.xml:3: warning: SuspectUsageSettingEntity: unknown attribute "
        "'Foo' ignored",
        "w.xml:4: warning: unknown element <Comment> ignored",
        "w.xml:9: warning: SuspectUsageSettingEntity: unknown element "
        "<Description> ignored",
    };
    char *doc =
        test_read_file(test_data_path(data, "limits/valid/warnings.xml"), NULL);
    suspect_limits_t *lim = NULL;
    char msg[512];

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_EQUAL_FATAL(parse_str(doc, "w.xml", &lim, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), 2);
    CU_ASSERT_EQUAL_FATAL(suspect_limits_warning_count(lim), 4);
    for (size_t i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(suspect_limits_warning(lim, i), want[i]);
    }
    CU_ASSERT_PTR_NULL(suspect_limits_warning(lim, 4));
    suspect_limits_unref(lim);
    free(doc);
}

/* Zero entities is an empty table, with a warning. */
static void test_empty_table(void)
{
    suspect_limits_t *lim = NULL;
    char msg[512];

    CU_ASSERT_EQUAL_FATAL(parse_str("<ArrayOfSuspectUsageSettingEntity>\n"
                                    "</ArrayOfSuspectUsageSettingEntity>",
                                    "e.xml", &lim, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), 0);
    CU_ASSERT_PTR_NULL(suspect_limits_find(lim, "Any"));
    CU_ASSERT_EQUAL_FATAL(suspect_limits_warning_count(lim), 1);
    CU_ASSERT_STRING_EQUAL(suspect_limits_warning(lim, 0),
                           "e.xml:1: warning: no SuspectUsageSettingEntity: "
                           "nothing is limited");
    suspect_limits_unref(lim);
}

/* Warnings are capped; the rest are counted in one closing line. */
static void test_many_warnings(void)
{
    size_t cap = 64 * 1024, used = 0;
    char *doc = malloc(cap);
    suspect_limits_t *lim = NULL;
    size_t n;
    char msg[512];

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    used += (size_t)snprintf(doc, cap, "<ArrayOfSuspectUsageSettingEntity>");
    for (int i = 0; i < 150; i++) {
        used += (size_t)snprintf(doc + used, cap - used, "<X%d/>", i);
    }
    snprintf(doc + used, cap - used, "</ArrayOfSuspectUsageSettingEntity>");
    CU_ASSERT_EQUAL_FATAL(parse_str(doc, "m.xml", &lim, msg, sizeof(msg)),
                          SUSPECT_OK);
    n = suspect_limits_warning_count(lim);
    CU_ASSERT(n > 50 && n < 150);
    CU_ASSERT_STRING_EQUAL(suspect_limits_warning(lim, n - 1),
                           "m.xml: warning: 51 more warnings not shown");
    suspect_limits_unref(lim);
    free(doc);
}

/* Builds a document of n rules named R<i*7919 % n>, attributes form. */
static char *many_rules_doc(size_t n)
{
    size_t cap = 100 + n * 100, used = 0;
    char *doc = malloc(cap);

    if (doc == NULL) {
        return NULL;
    }
    used += (size_t)snprintf(doc, cap, "<ArrayOfSuspectUsageSettingEntity>\n");
    for (size_t i = 0; i < n; i++) {
        used += (size_t)snprintf(
            doc + used, cap - used,
            "<SuspectUsageSettingEntity Action=\"R%zu\" LimitCount=\"%zu\" "
            "LimitDuration=\"9\"/>\n",
            (i * 7919) % n, i + 1);
    }
    snprintf(doc + used, cap - used, "</ArrayOfSuspectUsageSettingEntity>\n");
    return doc;
}

static void test_find_many(void)
{
    const size_t n = 3001;
    char *doc = many_rules_doc(n);
    suspect_limits_t *lim = NULL;
    suspect_limits_opts_t opts = {0, n - 1};
    suspect_err_t err;
    char name[32], msg[512];
    int found = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_EQUAL_FATAL(parse_str(doc, "n.xml", &lim, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), n);
    for (size_t i = 0; i < n; i++) {
        const suspect_rule_t *r;
        snprintf(name, sizeof(name), "R%zu", (i * 7919) % n);
        r = suspect_limits_find(lim, name);
        found += r != NULL && r == suspect_limits_at(lim, i) &&
                 r->limit_count == i + 1 &&
                 suspect_limits_line(lim, i) == (int)i + 2;
    }
    CU_ASSERT_EQUAL(found, (int)n);
    CU_ASSERT_PTR_NULL(suspect_limits_find(lim, "R3001"));
    CU_ASSERT_PTR_NULL(suspect_limits_find(lim, "R"));
    suspect_limits_unref(lim);

    /* One entity over max_rules is an error at its line. */
    suspect_err_clear(&err);
    lim = NULL;
    CU_ASSERT_EQUAL(
        suspect_limits_parse(doc, strlen(doc), "n.xml", &opts, &lim, &err),
        SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NULL(lim);
    suspect_err_format(&err, msg, sizeof(msg));
    CU_ASSERT_STRING_EQUAL(msg, "n.xml:3002: too many "
                                "SuspectUsageSettingEntity elements (at most "
                                "3000)");
    free(doc);
}

/* Values around the edges of the number rules, in both forms. */
static void test_numbers(void)
{
    static const struct {
        const char *value;
        const char *error; /* NULL: valid, with count */
        uint32_t count;
    } cases[] = {
        {"1", NULL, 1},
        {"0001", NULL, 1},
        {" \t5\r\n", NULL, 5},
        {"1000000", NULL, 1000000},
        {"1000001", "LimitCount: 1000001 is out of range (at most 1000000)", 0},
        {"4294967297",
         "LimitCount: 4294967297 is out of range (at most "
         "1000000)",
         0},
        {"18446744073709551616",
         "LimitCount: 18446744073709551616 is out "
         "of range (at most 1000000)",
         0},
        {"000000000000000000000000000007", NULL, 7},
        {"0", "LimitCount: must be at least 1 (got 0)", 0},
        {"-0", "LimitCount: '-0' is negative", 0},
        {"+1", "LimitCount: '+1' is not a number", 0},
        {"1.0", "LimitCount: '1.0' is not a number", 0},
        {"1,000", "LimitCount: '1,000' is not a number", 0},
        {"--1", "LimitCount: '--1' is not a number", 0},
        {"\xd9\xa3", "LimitCount: '\xd9\xa3' is not a number", 0},
        {"", "LimitCount: missing", 0},
        {"1\xc2\xa0", "LimitCount: '1\xc2\xa0' is not a number", 0},
    };
    char doc[512], msg[512], want[512];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int form = 0; form < 2; form++) {
            suspect_limits_t *lim = NULL;
            suspect_rc_t rc;
            snprintf(doc, sizeof(doc),
                     form == 0 ? "<ArrayOfSuspectUsageSettingEntity>\n"
                                 "<SuspectUsageSettingEntity Action='A' "
                                 "LimitCount='%s' LimitDuration='1'/>\n"
                                 "</ArrayOfSuspectUsageSettingEntity>"
                               : "<ArrayOfSuspectUsageSettingEntity>\n"
                                 "<SuspectUsageSettingEntity><Action>A"
                                 "</Action>\n<LimitCount>%s</LimitCount>"
                                 "<LimitDuration>1</LimitDuration>"
                                 "</SuspectUsageSettingEntity>\n"
                                 "</ArrayOfSuspectUsageSettingEntity>",
                     cases[i].value);
            rc = parse_str(doc, "n.xml", &lim, msg, sizeof(msg));
            if (cases[i].error == NULL) {
                CU_ASSERT_EQUAL(rc, SUSPECT_OK);
                CU_ASSERT(lim != NULL &&
                          suspect_limits_at(lim, 0)->limit_count ==
                              cases[i].count);
                suspect_limits_unref(lim);
                continue;
            }
            snprintf(want, sizeof(want), "n.xml:%d: %s", 2 + form,
                     cases[i].error);
            CU_ASSERT_EQUAL(rc, SUSPECT_E_CONFIG);
            CU_ASSERT_STRING_EQUAL(msg, want);
            CU_ASSERT_PTR_NULL(lim);
        }
    }
}

/* Size caps, from memory and from a file.  The file is checked before it
 * is read: an 8 GiB sparse file is refused at once. */
static void test_size_cap(void)
{
    static const char doc[] = "<ArrayOfSuspectUsageSettingEntity/>";
    suspect_limits_opts_t opts = {10, 0};
    suspect_limits_t *lim = NULL;
    suspect_err_t err;
    char *dir = test_mkdtemp(), path[4096], msg[4200];
    double t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(
        suspect_limits_parse(doc, strlen(doc), "c.xml", &opts, &lim, &err),
        SUSPECT_E_CONFIG);
    suspect_err_format(&err, msg, sizeof(msg));
    CU_ASSERT_STRING_EQUAL(msg,
                           "c.xml: file is too large (35 bytes, at most 10)");

    snprintf(path, sizeof(path), "%s/c.xml", dir);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, doc, strlen(doc)), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_limits_load(path, &opts, &lim, &err),
                    SUSPECT_E_CONFIG);
    snprintf(err.file, sizeof(err.file), "c.xml");
    suspect_err_format(&err, msg, sizeof(msg));
    CU_ASSERT_STRING_EQUAL(msg,
                           "c.xml: file is too large (35 bytes, at most 10)");
    opts.max_bytes = 35;
    CU_ASSERT_EQUAL(suspect_limits_load(path, &opts, &lim, NULL), SUSPECT_OK);
    suspect_limits_unref(lim);

    if (truncate(path, (off_t)8 << 30) == 0) {
        suspect_err_clear(&err);
        t0 = mono_ms();
        CU_ASSERT_EQUAL(suspect_limits_load(path, NULL, &lim, &err),
                        SUSPECT_E_CONFIG);
        CU_ASSERT(mono_ms() - t0 < test_scale_ms(100));
        CU_ASSERT_STRING_EQUAL(err.text, "file is too large (8589934592 "
                                         "bytes, at most 4194304)");
    }
    test_rmtree(dir);
    free(dir);
}

/* Missing files, directories and FIFOs fail fast with clear messages. */
static void test_not_regular(void)
{
    suspect_limits_t *lim = NULL;
    suspect_err_t err;
    char *dir = test_mkdtemp(), path[4096], msg[4200], want[4200];

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(path, sizeof(path), "%s/missing.xml", dir);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_limits_load(path, NULL, &lim, &err),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL(err.sys_errno, ENOENT);
    suspect_err_format(&err, msg, sizeof(msg));
    snprintf(want, sizeof(want), "%s: cannot open: %s", path, strerror(ENOENT));
    CU_ASSERT_STRING_EQUAL(msg, want);

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_limits_load(dir, NULL, &lim, &err), SUSPECT_E_IO);
    suspect_err_format(&err, msg, sizeof(msg));
    snprintf(want, sizeof(want), "%s: not a regular file", dir);
    CU_ASSERT_STRING_EQUAL(msg, want);

    /* A FIFO with no writer would block a plain open() forever. */
    snprintf(path, sizeof(path), "%s/fifo.xml", dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_limits_load(path, NULL, &lim, &err), SUSPECT_E_IO);
    CU_ASSERT_STRING_EQUAL(err.text, "not a regular file");
    CU_ASSERT_PTR_NULL(lim);

    CU_ASSERT_EQUAL(suspect_limits_load(NULL, NULL, &lim, NULL),
                    SUSPECT_E_INVAL);
    test_rmtree(dir);
    free(dir);
}

/* Parses doc, which must fail with "DTD not allowed"; 1 when it did. */
static int dtd_refused(const char *doc)
{
    suspect_limits_t *lim = NULL;
    char msg[512];
    suspect_rc_t rc = parse_str(doc, "x.xml", &lim, msg, sizeof(msg));

    suspect_limits_unref(lim);
    return rc == SUSPECT_E_PARSE && lim == NULL &&
           strcmp(msg, "x.xml:2: DTD not allowed") == 0;
}

/*
 * External entities and DTDs naming a real file: the document is refused
 * and, as inotify proves, the file is never even opened.
 */
static void test_xxe_never_read(void)
{
    static const char *const forms[][2] = {
        {"<?xml version='1.0'?>\n<!DOCTYPE r [ <!ENTITY xxe SYSTEM 'file://",
         "'> ]>\n<ArrayOfSuspectUsageSettingEntity>"
         "<SuspectUsageSettingEntity Action='&xxe;' LimitCount='1' "
         "LimitDuration='1'/></ArrayOfSuspectUsageSettingEntity>"},
        {"<?xml version='1.0'?>\n<!DOCTYPE r SYSTEM '",
         "'>\n<ArrayOfSuspectUsageSettingEntity/>"},
        {"<?xml version='1.0'?>\n<!DOCTYPE r [ <!ENTITY % p SYSTEM '",
         "'> %p; ]>\n<ArrayOfSuspectUsageSettingEntity/>"},
        {"<?xml version='1.0'?>\n<!DOCTYPE r PUBLIC '-//x//y' '",
         "'>\n<ArrayOfSuspectUsageSettingEntity>&xxe;"
         "</ArrayOfSuspectUsageSettingEntity>"},
    };
    dtd_test_external(forms, sizeof(forms) / sizeof(forms[0]), dtd_refused);
}

/* Billion laughs (10^9 and 10^30 expansions) is refused at once. */
static void test_billion_laughs(void)
{
    dtd_test_laughs("<ArrayOfSuspectUsageSettingEntity>&l30;"
                    "</ArrayOfSuspectUsageSettingEntity>\n",
                    dtd_refused);
}

/* A file libxml2 cannot convert (UCS-4 with a broken character; found by
 * fuzz/fuzz_limits) fails as a parse error and prints nothing: libxml2
 * reports such errors to the thread's generic handler, whose default
 * writes to stderr, the daemons' log. */
static void test_encoding_error_silent(void)
{
    static const char doc[] = "\0\0\0<\0\0\0a\0\0\0/\0\0\0>\xff\xff\xff\xff";
    char path[] = "/tmp/suspect-limits-stderr.XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    suspect_limits_t *lim = NULL;
    suspect_err_t err;
    struct stat st;

    suspect_err_clear(&err);
    CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
    unlink(path);
    CU_ASSERT_FATAL(dup2(fd, 2) == 2);
    CU_ASSERT(suspect_limits_parse(doc, sizeof(doc) - 1, "ucs4.xml", NULL, &lim,
                                   &err) == SUSPECT_E_PARSE);
    dup2(saved, 2);
    close(saved);
    CU_ASSERT_PTR_NULL(lim);
    CU_ASSERT(fstat(fd, &st) == 0 && st.st_size == 0);
    close(fd);
}

/* Line numbers past 65535 are right (XML_PARSE_BIG_LINES). */
static void test_big_lines(void)
{
    size_t blank = 70000;
    char *doc = malloc(blank + 512);
    suspect_limits_t *lim = NULL;
    char msg[512];

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    strcpy(doc, "<ArrayOfSuspectUsageSettingEntity>");
    memset(doc + strlen(doc), '\n', blank);
    strcpy(doc + 34 + blank,
           "<SuspectUsageSettingEntity Action='A' LimitCount='x' "
           "LimitDuration='1'/></ArrayOfSuspectUsageSettingEntity>");
    CU_ASSERT_EQUAL(parse_str(doc, "b.xml", &lim, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(msg, "b.xml:70001: LimitCount: 'x' is not a "
                                "number");
    free(doc);
}

/* A very long bad value is quoted short; control bytes are not echoed. */
static void test_value_quoting(void)
{
    char doc[1024], msg[512], want[512];
    suspect_limits_t *lim = NULL;

    snprintf(doc, sizeof(doc),
             "<ArrayOfSuspectUsageSettingEntity><SuspectUsageSettingEntity>"
             "<Action>A&#9;B</Action><LimitCount>1</LimitCount>"
             "<LimitDuration>1</LimitDuration></SuspectUsageSettingEntity>"
             "</ArrayOfSuspectUsageSettingEntity>");
    CU_ASSERT_EQUAL(parse_str(doc, "q.xml", &lim, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "Action: 'A?B' is not"));
    snprintf(doc, sizeof(doc),
             "<ArrayOfSuspectUsageSettingEntity><SuspectUsageSettingEntity "
             "Action='A' LimitCount='1' LimitDuration='%0200d'/>"
             "</ArrayOfSuspectUsageSettingEntity>",
             1);
    CU_ASSERT_EQUAL(parse_str(doc, "q.xml", &lim, msg, sizeof(msg)),
                    SUSPECT_OK);
    suspect_limits_unref(lim);
    snprintf(doc, sizeof(doc),
             "<ArrayOfSuspectUsageSettingEntity><SuspectUsageSettingEntity "
             "Action='A' LimitCount='1' LimitDuration='%0100d'/>"
             "</ArrayOfSuspectUsageSettingEntity>",
             -1);
    CU_ASSERT_EQUAL(parse_str(doc, "q.xml", &lim, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    snprintf(want, sizeof(want),
             "q.xml:1: LimitDuration: '-%039d...' is negative", 0);
    CU_ASSERT_STRING_EQUAL(msg, want);
}

static void test_refcount_and_args(void)
{
    suspect_limits_t *lim = NULL, *again;
    char msg[512];

    CU_ASSERT_EQUAL_FATAL(
        parse_str("<ArrayOfSuspectUsageSettingEntity><SuspectUsageSetting"
                  "Entity Action='A' LimitCount='1' LimitDuration='2'/>"
                  "</ArrayOfSuspectUsageSettingEntity>",
                  NULL, &lim, msg, sizeof(msg)),
        SUSPECT_OK);
    again = suspect_limits_ref(lim);
    CU_ASSERT_PTR_EQUAL(again, lim);
    suspect_limits_unref(lim);
    CU_ASSERT_STRING_EQUAL(suspect_limits_at(again, 0)->action, "A");
    suspect_limits_unref(again);
    suspect_limits_unref(NULL);
    CU_ASSERT_PTR_NULL(suspect_limits_ref(NULL));
    CU_ASSERT_EQUAL(suspect_limits_count(NULL), 0);
    CU_ASSERT_PTR_NULL(suspect_limits_find(NULL, "A"));

    CU_ASSERT_EQUAL(parse_str("<a>", NULL, &lim, msg, sizeof(msg)),
                    SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(strncmp(msg, "<memory>:1: not well-formed XML: ", 33), 0);
    CU_ASSERT_EQUAL(suspect_limits_parse("x", 1, "n", NULL, NULL, NULL),
                    SUSPECT_E_INVAL);
}

/* Every allocation of a load fails in turn: each attempt either works or
 * says out of memory, and (under ASan/valgrind) leaks nothing. */
static void oom_loop(const char *rel, suspect_rc_t final)
{
    char data[TEST_PATH_MAX];
    suspect_rc_t rc = SUSPECT_E_NOMEM;
    int bad = 0;
    long n;

    for (n = 1; n < 100000 && rc == SUSPECT_E_NOMEM; n++) {
        suspect_limits_t *lim = NULL;
        suspect_err_t err;
        suspect_err_clear(&err);
        suspect_test_fail_alloc_after(n);
        rc = suspect_limits_load(test_data_path(data, rel), NULL, &lim, &err);
        suspect_test_fail_alloc_after(-1);
        bad += rc != SUSPECT_E_NOMEM && rc != final;
        bad += rc == SUSPECT_E_NOMEM && (err.code != rc || lim != NULL);
        suspect_limits_unref(lim);
    }
    CU_ASSERT_EQUAL(rc, final);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(n > 3);
}

static void test_out_of_memory(void)
{
    oom_loop("limits/valid/attributes.xml", SUSPECT_OK);
    oom_loop("limits/valid/serializer.xml", SUSPECT_OK);
    oom_loop("limits/valid/warnings.xml", SUSPECT_OK);
    oom_loop("limits/valid/empty_table.xml", SUSPECT_OK);
    oom_loop("limits/invalid/duplicate_action.xml", SUSPECT_E_CONFIG);
}

/* Threads parse at once, good and bad documents: each gets its own
 * result and its own message (no shared libxml2 error state). */
static void *parse_worker(void *arg)
{
    char *doc = arg, msg[512];
    long bad = 0;

    for (int i = 0; i < 100; i++) {
        suspect_limits_t *lim = NULL;
        if (i % 2 == 0) {
            bad += parse_str(doc, "t.xml", &lim, msg, sizeof(msg)) != 0 ||
                   !is_example_table(lim);
            suspect_limits_unref(lim);
        } else {
            bad +=
                parse_str("<ArrayOfSuspectUsageSettingEntity>\n<a></b>",
                          "u.xml", &lim, msg, sizeof(msg)) != SUSPECT_E_PARSE ||
                strncmp(msg,
                        "u.xml:2: not well-formed XML: Opening and "
                        "ending tag mismatch",
                        60) != 0;
        }
    }
    return (void *)bad;
}

static void test_parse_threads(void)
{
    char data[TEST_PATH_MAX];
    char *doc = test_read_file(
        test_data_path(data, "limits/valid/serializer.xml"), NULL);
    pthread_t th[4];
    long bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, parse_worker, doc),
                              0);
    }
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        bad += (long)ret;
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(doc);
}

/* "Did you mean": names a few edits from a known one, case ignored, and
 * only those (near.h). */

/* Repeat-offender fields in both forms, with their defaults; a rule given
 * in memory gets the same checks and defaults. */
static void test_escalation_fields(void)
{
    char data[TEST_PATH_MAX];
    suspect_limits_t *lim = NULL;
    const suspect_rule_t *r;
    suspect_rule_t mem[1] = {{"M", 1, 1, 10, 200, 0, 0, 3, 0, 0, 0}};
    suspect_rule_t full[1] = {{"M", 1, 1, 10, 200, 600, 700, 3, 0, 0, 0}};
    suspect_rule_t bad[1] = {{"B", 1, 1, 0, 200, 0, 0, 0, 0, 0, 0}};
    suspect_err_t err;

    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_load(test_data_path(data, "limits/valid/escalation.xml"),
                            NULL, &lim, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_warning_count(lim), 0);
    r = suspect_limits_find(lim, "Login");
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(r->block_factor_pct, 400);
    CU_ASSERT_EQUAL(r->block_max_s, 86400);
    CU_ASSERT_EQUAL(r->offence_s, 604800);
    r = suspect_limits_find(lim, "Otp");
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(r->block_factor_pct, 150);
    CU_ASSERT_EQUAL(r->block_max_s, SUSPECT_DEFAULT_BLOCK_MAX_S);
    CU_ASSERT_EQUAL(r->offence_s, SUSPECT_DEFAULT_BLOCK_MAX_S);
    r = suspect_limits_find(lim, "Forgot"); /* the elements' form */
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(r->block_factor_pct, 200);
    CU_ASSERT_EQUAL(r->block_max_s, 172800); /* at least BlockDuration */
    CU_ASSERT_EQUAL(r->offence_s, 172800);
    suspect_limits_unref(lim);

    lim = NULL;
    /* in memory, a rule is a resolved one: no defaults */
    CU_ASSERT_EQUAL(suspect_limits_from_rules(mem, NULL, 1, NULL, &lim, NULL),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_from_rules(full, NULL, 1, NULL, &lim, NULL), SUSPECT_OK);
    r = suspect_limits_find(lim, "M");
    CU_ASSERT_EQUAL(r->block_max_s, 600);
    CU_ASSERT_EQUAL(r->offence_s, 700);
    CU_ASSERT_EQUAL(r->fail_mode, SUSPECT_RULE_FAIL_STORE); /* per call */
    suspect_limits_unref(lim);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_limits_from_rules(bad, NULL, 1, NULL, &lim, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "needs a BlockDuration"));
}

static void test_near_names(void)
{
    static const char *const known[] = {"Action", "LimitCount", "LimitDuration",
                                        "BlockDuration"};
    static const struct {
        const char *name;
        const char *want; /* NULL: near nothing */
    } cases[] = {
        {"BlockDuraton", "BlockDuration"},
        {"blockduration", "BlockDuration"},
        {"BLOCKDURATION", "BlockDuration"},
        {"BlockDuartion", "BlockDuration"},
        {"BlokDuraton", "BlockDuration"},
        {"LimitCuont", "LimitCount"},
        {"LimitCounts", "LimitCount"},
        {"Acton", "Action"},
        {"action", "Action"},
        {"BlockDuration", NULL},
        {"BlockMultiplier", NULL},
        {"MaxBlockDuration", NULL},
        {"EscalationFactor", NULL},
        {"Note", NULL},
        {"", NULL},
    };
    char longer[CONFIG_NEAR_MAX + 8];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = config_near(cases[i].name, known, 4);

        if (cases[i].want == NULL ? got != NULL
                                  : got == NULL || strcmp(got, cases[i].want)) {
            fprintf(stderr, "\n  %s: got %s\n", cases[i].name,
                    got != NULL ? got : "(none)");
            CU_FAIL("near name");
        }
    }
    CU_ASSERT_EQUAL(config_near_distance("ab", "ba"), 1);
    CU_ASSERT_EQUAL(config_near_distance("kitten", "sitting"), 3);
    CU_ASSERT_EQUAL(config_near_distance("", "abc"), 3);
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    CU_ASSERT_EQUAL(config_near_distance(longer, longer), CONFIG_NEAR_MAX + 1);
    CU_ASSERT_PTR_NULL(config_near(longer, known, 4));
}

int register_limits_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"invalid corpus", test_invalid_corpus},
        {"valid corpus", test_valid_corpus},
        {"example file", test_example_file},
        {"both forms", test_both_forms},
        {"mixed forms and namespaces", test_mixed_and_namespaces},
        {"warnings", test_warnings},
        {"empty table", test_empty_table},
        {"many warnings", test_many_warnings},
        {"find among many, max_rules", test_find_many},
        {"numbers", test_numbers},
        {"size cap", test_size_cap},
        {"not regular files", test_not_regular},
        {"external entities never read", test_xxe_never_read},
        {"billion laughs fails fast", test_billion_laughs},
        {"encoding errors not printed", test_encoding_error_silent},
        {"big line numbers", test_big_lines},
        {"value quoting", test_value_quoting},
        {"refcount and arguments", test_refcount_and_args},
        {"out of memory", test_out_of_memory},
        {"threads parsing", test_parse_threads},
        {"escalation fields", test_escalation_fields},
        {"near names", test_near_names},
    };
    CU_pSuite suite = CU_add_suite("limits", NULL, NULL);

    if (suite == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(suite, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
