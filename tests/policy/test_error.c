/*
 * test_error.c - the error record: first error wins, formats, errno text.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>

#include "suites.h"
#include "suspect_error.h"

static void test_first_error_wins(void)
{
    suspect_err_t err;
    char buf[512];

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_err_set(&err, SUSPECT_E_CONFIG, "limits.xml", 7,
                                    "LimitCount: '%s' is not a number", "x"),
                    SUSPECT_E_CONFIG);
    suspect_err_set(&err, SUSPECT_E_IO, "other", 1, "later");
    CU_ASSERT_EQUAL(err.code, SUSPECT_E_CONFIG);
    suspect_err_format(&err, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf,
                           "limits.xml:7: LimitCount: 'x' is not a number");
}

static void test_formats_without_file_or_line(void)
{
    suspect_err_t err;
    char buf[64];

    suspect_err_clear(&err);
    suspect_err_set(&err, SUSPECT_E_INVAL, NULL, 0, "plain");
    suspect_err_format(&err, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "plain");

    suspect_err_clear(&err);
    suspect_err_set(&err, SUSPECT_E_INVAL, "f.xml", 0, "whole file");
    suspect_err_format(&err, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "f.xml: whole file");

    /* Truncation keeps the buffer terminated. */
    CU_ASSERT_TRUE(suspect_err_format(&err, buf, 4) > 3);
    CU_ASSERT_STRING_EQUAL(buf, "f.x");
}

static void test_sys_saves_errno(void)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    errno = ENOENT;
    suspect_err_sys(&err, SUSPECT_E_IO, "missing.xml", "cannot open");
    CU_ASSERT_EQUAL(err.sys_errno, ENOENT);
    CU_ASSERT_STRING_EQUAL(err.text, "cannot open: No such file or directory");
    CU_ASSERT_EQUAL(errno, ENOENT);
}

static void test_null_record_is_fine(void)
{
    CU_ASSERT_EQUAL(suspect_err_set(NULL, SUSPECT_E_NOMEM, NULL, 0, "x"),
                    SUSPECT_E_NOMEM);
    suspect_err_clear(NULL);
    CU_ASSERT_STRING_EQUAL(suspect_rc_str(SUSPECT_E_NOMEM), "out of memory");
    CU_ASSERT_STRING_EQUAL(suspect_rc_str(12345), "unknown error");
}

int register_error_suite(void)
{
    CU_pSuite s = CU_add_suite("error", NULL, NULL);
    if (s == NULL ||
        !CU_add_test(s, "first error wins", test_first_error_wins) ||
        !CU_add_test(s, "formats", test_formats_without_file_or_line) ||
        !CU_add_test(s, "sys saves errno", test_sys_saves_errno) ||
        !CU_add_test(s, "NULL record", test_null_record_is_fine)) {
        return -1;
    }
    return 0;
}
