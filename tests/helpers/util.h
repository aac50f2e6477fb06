/*
 * util.h - small helpers shared by the test suites.
 */
#ifndef SUSPECT_TESTS_UTIL_H
#define SUSPECT_TESTS_UTIL_H

#include <stddef.h>

#include "suspect_policy.h"

/* Room for any path the tests build. */
#define TEST_PATH_MAX 1024

/* Writes $SUSPECT_TEST_DATA/rel (or tests/data/rel from the source tree)
 * into path (the caller's, cut to fit) and returns it. */
const char *test_data_path(char path[TEST_PATH_MAX], const char *rel);

/* A fresh private directory under $TMPDIR, removed by test_rmtree(). */
char *test_mkdtemp(void);
void test_rmtree(const char *dir);

/* Writes len bytes of data to path (replacing it); 0 on success. */
int test_write_file(const char *path, const char *data, size_t len);

/* Reads a whole file into a NUL-terminated malloc'ed buffer, or NULL. */
char *test_read_file(const char *path, size_t *len);

/* How many lines of the file at path are exactly line (0 when there is no
 * such file). */
int test_count_lines(const char *path, const char *line);

/* How many times text (not empty) stands in the file at path, counted
 * without overlap (0 when there is no such file). */
int test_count_text(const char *path, const char *text);

/* An identity with one value (a C string). */
suspect_identity_t test_identity(const char *type, const char *value);

/* Builds the default (seed-format) key of one value for action; aborts
 * the test program if that fails, which no valid input does. */
suspect_key_t test_key(const char *action, const char *value);

#endif
