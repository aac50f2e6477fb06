/*
 * test_normalize_alias.c - the aliases step (middleware/request/
 * normalize_alias.c), in the "normalize" suite: a table read by the
 * steps before it (WordPress's logins and e-mail addresses, Request
 * Tracker's ids), bad files refused at load, and a file replaced while
 * in use: a good one is taken within about a second, a bad or missing
 * one keeps the table and is logged.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log/log.h"
#include "request/normalize.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "normalize_test.h"

/* Writes text to dir/name through a temporary file and a rename, as the
 * examples' timer does; the path into path. */
static void put_table(const char *dir, const char *name, const char *text,
                      char path[TEST_PATH_MAX])
{
    char tmp[TEST_PATH_MAX + 8];

    snprintf(path, TEST_PATH_MAX, "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    CU_ASSERT_FATAL(test_write_file(tmp, text, strlen(text)) == 0);
    CU_ASSERT_FATAL(rename(tmp, path) == 0);
}

/* n applied to in, as a new string the caller frees; NULL when refused. */
static char *apply(const mw_norm_t *n, const char *in)
{
    char buf[64];
    const char *o = NULL;
    size_t len = 0;
    char *heap = NULL;
    char *copy;

    if (mw_norm_apply(n, in, strlen(in), buf, sizeof(buf), &o, &len, &heap) !=
        SUSPECT_OK) {
        return NULL;
    }
    copy = malloc(len + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
    memcpy(copy, o, len);
    copy[len] = '\0';
    free(heap);
    return copy;
}

static void expect(const mw_norm_t *n, const char *in, const char *want)
{
    char *got = apply(n, in);

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "aliases: '%s' became '%s', not '%s'\n", in, got, want);
        CU_FAIL("aliases");
    }
    free(got);
}

static mw_norm_t *compile(const char *steps, const char *path)
{
    char spec[2 * TEST_PATH_MAX];
    mw_norm_t *n = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    snprintf(spec, sizeof(spec), "%s aliases:%s", steps, path);
    if (mw_norm_compile(spec, strlen(spec), &n, &err) != SUSPECT_OK) {
        fprintf(stderr, "%s: %s\n", spec, err.text);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    return n;
}

/* WordPress: wp_users' user_email and user_login; Request Tracker: the
 * id and Name of Users. */
static void test_alias_table(void)
{
    char *dir = test_mkdtemp(), path[TEST_PATH_MAX];
    mw_norm_t *n;

    CU_ASSERT_FATAL(dir != NULL);
    put_table(dir, "wp",
              "# user_email\tuser_login\n"
              "\n"
              "Alice@Example.org\talice\n"
              "bob@example.org\tBob\r\n"
              "alice@example.org\tmallory\n",
              path);
    n = compile("wordpress-user collate:mysql-unicode-520-ci", path);
    expect(n, "alice", "alice");
    expect(n, "ALICE ", "alice");
    expect(n, "alice@example.org", "alice");
    expect(n, "al%41ice@EXAMPLE.org", "alice");
    expect(n, "\xef\xbd\x81\xef\xbd\x8c\xef\xbd\x89\xef\xbd\x83\xef\xbd\x85",
           "alice");
    expect(n, "al\xe2\x80\x8bice", "alice");
    expect(n, "bob", "Bob");
    expect(n, "BOB@example.org", "Bob");
    mw_norm_free(n);
    /* without the table, a name counts as its key */
    {
        size_t len;
        char *a =
            norm_test_apply("collate:mysql-unicode-520-ci", "carol", 5, &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        n = compile("wordpress-user collate:mysql-unicode-520-ci", path);
        expect(n, "Carol", a);
        free(a);
        mw_norm_free(n);
    }
    put_table(dir, "rt", "27\talice\n28\tbob\n", path);
    n = compile("trim number", path);
    expect(n, "27", "alice");
    expect(n, "0027", "alice");
    expect(n, " 028", "bob");
    expect(n, "alice", "alice");
    expect(n, "29", "29");
    mw_norm_free(n);
    test_rmtree(dir);
    free(dir);
}

/* A table that cannot be used stops the load, with the file and line. */
static void test_alias_bad(void)
{
    static const struct {
        const char *text; /* NULL: no file */
        const char *steps;
        const char *msg;
    } bad[] = {
        {NULL, "login", "cannot read"},
        {"alice\talice\nbob alice\n", "login", "line 2"},
        {"alice\t\n", "login", "line 1"},
        {"\talice\n", "login", "line 1"},
        {"a\tb\tc\n", "login", "line 1"},
    };
    char *dir = test_mkdtemp(), path[TEST_PATH_MAX], spec[2 * TEST_PATH_MAX];

    CU_ASSERT_FATAL(dir != NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mw_norm_t *n = NULL;
        suspect_err_t err;

        if (bad[i].text != NULL) {
            put_table(dir, "t", bad[i].text, path);
        } else {
            snprintf(path, sizeof(path), "%s/missing", dir);
        }
        snprintf(spec, sizeof(spec), "%s aliases:%s", bad[i].steps, path);
        suspect_err_clear(&err);
        CU_ASSERT_NOT_EQUAL(mw_norm_compile(spec, strlen(spec), &n, &err),
                            SUSPECT_OK);
        CU_ASSERT_PTR_NULL(n);
        if (strstr(err.text, bad[i].msg) == NULL &&
            !(err.line > 0 && strstr(bad[i].msg, "line") != NULL)) {
            fprintf(stderr, "case %zu: %s (line %d)\n", i, err.text, err.line);
            CU_FAIL("aliases error");
        }
    }
    put_table(dir, "t", "a\tb\n", path);
    snprintf(spec, sizeof(spec), "aliases:%s login", path);
    CU_ASSERT_EQUAL(
        mw_norm_compile(spec, strlen(spec), &(mw_norm_t *){NULL}, NULL),
        SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(mw_norm_compile("aliases:t", 9, &(mw_norm_t *){NULL}, NULL),
                    SUSPECT_E_CONFIG);
    test_rmtree(dir);
    free(dir);
}

static int kept_logged;

static void sink(void *arg, mw_log_level_t level, const char *msg)
{
    (void)arg;
    if (level == MW_LOG_ERROR && strstr(msg, "table in use is kept") != NULL) {
        __atomic_add_fetch(&kept_logged, 1, __ATOMIC_SEQ_CST);
    }
}

/* Applies n to in until it gives want or the deadline (ms, scaled)
 * passes; whether it did. */
static bool wait_for(const mw_norm_t *n, const char *in, const char *want,
                     unsigned ms)
{
    int64_t end = mono_ms() + test_scale_ms(ms);

    do {
        char *got = apply(n, in);
        bool ok = got != NULL && strcmp(got, want) == 0;
        free(got);
        if (ok) {
            return true;
        }
        usleep(20000);
    } while (mono_ms() < end);
    return false;
}

/* Waits until the sink has seen more than before kept-table errors. */
static bool wait_logged(const mw_norm_t *n, int before, unsigned ms)
{
    int64_t end = mono_ms() + test_scale_ms(ms);

    do {
        free(apply(n, "x")); /* a lookup is what checks the file */
        if (__atomic_load_n(&kept_logged, __ATOMIC_SEQ_CST) > before) {
            return true;
        }
        usleep(20000);
    } while (mono_ms() < end);
    return false;
}

static void test_alias_reload(void)
{
    char *dir = test_mkdtemp(), path[TEST_PATH_MAX];
    mw_norm_t *n;
    int before;

    CU_ASSERT_FATAL(dir != NULL);
    mw_log_sink(sink, NULL);
    put_table(dir, "t", "alice@example.org\talice\n", path);
    n = compile("login", path);
    expect(n, "alice@example.org", "alice");
    expect(n, "carol@example.org", "carol@example.org");
    /* a new file, renamed over the old one, is taken */
    put_table(dir, "t", "carol@example.org\tcarol\n", path);
    CU_ASSERT(wait_for(n, "Carol@example.org", "carol", 5000));
    expect(n, "alice@example.org", "alice@example.org");
    /* a bad one keeps the table in use, and says so */
    before = __atomic_load_n(&kept_logged, __ATOMIC_SEQ_CST);
    put_table(dir, "t", "carol@example.org carol\n", path);
    CU_ASSERT(wait_logged(n, before, 5000));
    expect(n, "carol@example.org", "carol");
    /* so does a missing one */
    before = __atomic_load_n(&kept_logged, __ATOMIC_SEQ_CST);
    CU_ASSERT(unlink(path) == 0);
    CU_ASSERT(wait_logged(n, before, 5000));
    expect(n, "carol@example.org", "carol");
    /* and a good one again is taken */
    put_table(dir, "t", "dave@example.org\tdave\n", path);
    CU_ASSERT(wait_for(n, "dave@example.org", "dave", 5000));
    mw_norm_free(n);
    mw_log_sink(NULL, NULL);
    test_rmtree(dir);
    free(dir);
}

int normalize_register_alias(CU_pSuite s)
{
    if (CU_add_test(s, "aliases", test_alias_table) == NULL ||
        CU_add_test(s, "aliases: bad tables", test_alias_bad) == NULL ||
        CU_add_test(s, "aliases: reloads", test_alias_reload) == NULL) {
        return -1;
    }
    return 0;
}
