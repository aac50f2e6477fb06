/*
 * dtd_test.h - the attacks through a DTD that both XML files (suspect.xml
 * and the limits file) must refuse, run against either parser: external
 * entities and DTDs naming a real file, and billion laughs.
 */
#ifndef SUSPECT_TESTS_DTD_TEST_H
#define SUSPECT_TESTS_DTD_TEST_H

#include <stddef.h>

/* Whether the parser under test refused doc with "DTD not allowed". */
typedef int (*dtd_refused_fn)(const char *doc);

/*
 * Writes a secret file in a temp dir, builds each document forms[i][0] +
 * its path + forms[i][1], and asserts that refused() refuses every one and
 * that the file is never even opened (inotify).
 */
void dtd_test_external(const char *const forms[][2], size_t n,
                       dtd_refused_fn refused);

/*
 * Builds billion laughs (l0 = "lol", each of l1 .. l30 ten of the one
 * before: 10^30 expansions) followed by tail, which names &l30;, and asserts
 * that refused() refuses it at once (within 500 ms, scaled).
 */
void dtd_test_laughs(const char *tail, dtd_refused_fn refused);

#endif
