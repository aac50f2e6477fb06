/*
 * corpus.h - data-driven tests of a loader: every tests/data/<area>/
 * invalid/<case>.xml must fail with the "file:line: message" of
 * <case>.err (file as its basename; an .err ending in '*' is a prefix, for
 * messages holding libxml2's wording or a path of this machine), and every
 * xml file of <area>/valid must load.  Too few cases fail the test, so a corpus
 * cannot silently vanish.
 */
#ifndef SUSPECT_TESTS_CORPUS_H
#define SUSPECT_TESTS_CORPUS_H

#include "suspect_error.h"

/* Loads the file at path and frees what it loaded.  Returns the loader's
 * code, with err filled on failure; a failed load that still produced a
 * result must return SUSPECT_OK, so the case fails. */
typedef suspect_rc_t (*test_load_fn)(const char *path, suspect_err_t *err);

/* Runs the invalid cases of data dir rel ("conf/invalid"), as CUnit
 * assertions; at least min_cases must exist. */
void test_corpus_invalid(const char *rel, test_load_fn load, int min_cases);

/* Loads every file of data dir rel ("conf/valid"); at least min_cases. */
void test_corpus_valid(const char *rel, test_load_fn load, int min_cases);

#endif
