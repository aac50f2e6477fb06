/*
 * vgwrap.h - the suite's own programs run under valgrind, on request.
 *
 * scripts/valgrind runs the test runner under valgrind and sets
 * SUSPECT_VALGRIND to the command the programs of this build that the
 * tests start (suspect-fcgi, suspect-cgi, suspectctl) are to run under:
 * blank-separated words, the first an absolute path ("/usr/bin/valgrind.bin
 * --error-exitcode=99 ... --log-file=DIR/vg.%p.log").  Unset or empty,
 * the programs run as they are.  SUSPECT_TEST_SCALE, a whole number
 * (default 1), multiplies the suite's process and request deadlines:
 * programs under valgrind start and answer several times slower.
 */
#ifndef SUSPECT_TESTS_VGWRAP_H
#define SUSPECT_TESTS_VGWRAP_H

#include <stdbool.h>
#include <stddef.h>

/* The most words SUSPECT_VALGRIND may hold. */
#define TEST_VG_MAX_WORDS 16

/*
 * argv with the words of SUSPECT_VALGRIND in front, in out (cap entries,
 * NULL-terminated; the words point into a static copy of the variable),
 * or argv itself when the variable is unset or empty, or when out is too
 * small (said on stderr).
 */
const char *const *test_vg_argv(const char *const argv[], const char *out[],
                                size_t cap);

/* Whether SUSPECT_VALGRIND is set (the programs run under valgrind). */
bool test_vg_on(void);

/* ms times SUSPECT_TEST_SCALE. */
unsigned test_scale_ms(unsigned ms);

#endif
