/*
 * corpus.c - the invalid/ and valid/ corpus runners of corpus.h.
 */
#include "corpus.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* True when got matches the expected line (a trailing '*' = prefix). */
static int err_matches(const char *want, const char *got)
{
    size_t n = strlen(want);

    if (n > 0 && want[n - 1] == '*') {
        return strncmp(want, got, n - 1) == 0;
    }
    return strcmp(want, got) == 0;
}

/* Loads one invalid case and compares with its .err; 1 when it matches. */
static int check_invalid_case(const char *dir, const char *xml,
                              test_load_fn load)
{
    char path[4096], errpath[4096], got[1024];
    suspect_err_t err;
    suspect_rc_t rc;
    char *want;
    size_t n;

    if (snprintf(path, sizeof(path), "%s/%s", dir, xml) >= (int)sizeof(path) ||
        snprintf(errpath, sizeof(errpath), "%s/%.*s.err", dir,
                 (int)(strlen(xml) - 4), xml) >= (int)sizeof(errpath)) {
        return 0;
    }
    want = test_read_file(errpath, &n);
    if (want == NULL) {
        fprintf(stderr, "\n  %s: no .err file\n", xml);
        return 0;
    }
    while (n > 0 && (want[n - 1] == '\n' || want[n - 1] == '\r')) {
        want[--n] = '\0';
    }
    suspect_err_clear(&err);
    rc = load(path, &err);
    snprintf(err.file, sizeof(err.file), "%s", xml);
    suspect_err_format(&err, got, sizeof(got));
    if (rc == SUSPECT_OK || !err_matches(want, got) ||
        (rc != SUSPECT_E_PARSE && rc != SUSPECT_E_CONFIG)) {
        fprintf(stderr, "\n  %s: rc %d\n   want: %s\n    got: %s\n", xml, rc,
                want, got);
        free(want);
        return 0;
    }
    free(want);
    return 1;
}

/* Calls fn for each *.xml of data dir rel; returns how many it saw and
 * adds the cases fn passed to *good. */
static int each_xml(const char *rel, test_load_fn load, int *good,
                    int (*fn)(const char *dir, const char *xml,
                              test_load_fn load))
{
    char data[TEST_PATH_MAX];
    char dir[4096];
    struct dirent *e;
    int cases = 0;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s", test_data_path(data, rel));
    d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);

        if (n > 4 && strcmp(e->d_name + n - 4, ".xml") == 0) {
            cases++;
            *good += fn(dir, e->d_name, load);
        }
    }
    closedir(d);
    return cases;
}

void test_corpus_invalid(const char *rel, test_load_fn load, int min_cases)
{
    int good = 0, cases = each_xml(rel, load, &good, check_invalid_case);

    CU_ASSERT(cases >= min_cases);
    CU_ASSERT_EQUAL(good, cases);
}

/* Loads one valid file; 1 when it loads. */
static int check_valid_case(const char *dir, const char *xml, test_load_fn load)
{
    char path[4096 + 256], msg[512];
    suspect_err_t err;

    snprintf(path, sizeof(path), "%s/%s", dir, xml);
    suspect_err_clear(&err);
    if (load(path, &err) != SUSPECT_OK) {
        suspect_err_format(&err, msg, sizeof(msg));
        fprintf(stderr, "\n  %s\n", msg);
        return 0;
    }
    return 1;
}

void test_corpus_valid(const char *rel, test_load_fn load, int min_cases)
{
    int good = 0, cases = each_xml(rel, load, &good, check_valid_case);

    CU_ASSERT(cases >= min_cases);
    CU_ASSERT_EQUAL(good, cases);
}
