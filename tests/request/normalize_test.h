/*
 * normalize_test.h - what the files of the "normalize" suite share
 * (test_normalize.c: the steps; test_normalize_wp.c: WordPress's and
 * Request Tracker's readings; test_normalize_alias.c: alias tables;
 * test_normalize_collate.c, a suite of its own: collations): applying a
 * normalize text to a value, and the registration of the WordPress tests.
 */
#ifndef SUSPECT_TESTS_NORMALIZE_TEST_H
#define SUSPECT_TESTS_NORMALIZE_TEST_H

#include <CUnit/CUnit.h>
#include <stddef.h>

/* The value of in (len bytes) after spec, as a new NUL-terminated string
 * the caller frees (*out_len its length), or NULL when spec does not
 * compile. */
char *norm_test_apply(const char *spec, const char *in, size_t len,
                      size_t *out_len);

/* Adds the tests of test_normalize_wp.c to s; 0 or -1. */
int normalize_register_wp(CU_pSuite s);

/* Adds the tests of test_normalize_alias.c to s; 0 or -1. */
int normalize_register_alias(CU_pSuite s);

#endif
