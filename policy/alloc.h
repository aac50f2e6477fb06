/*
 * alloc.h - the library's allocator: malloc and friends, plus the test hook
 * suspect_test_fail_alloc_after() that makes the n-th allocation fail, so
 * out-of-memory paths are tested.  Every allocation in libsuspect goes
 * through these; memory they return is released with free().  Private to
 * the library (libsuspect exports none of them); the layers above compile
 * their own copy.
 */
#ifndef SUSPECT_ALLOC_H
#define SUSPECT_ALLOC_H

#include <stddef.h>

void *suspect_malloc(size_t size);
void *suspect_calloc(size_t n, size_t size);
void *suspect_realloc(void *p, size_t size);
char *suspect_strdup(const char *s);
char *suspect_strndup(const char *s, size_t n);

/*
 * Test hook: make the n-th allocation from now on (1 = the next one) fail,
 * and every one after it until reset; n < 0 disables the hook.  Only the
 * allocations made through these functions are affected.  Private: the
 * test suite links the library's code itself (libsuspectcore) to reach it.
 */
void suspect_test_fail_alloc_after(long n);

#endif
