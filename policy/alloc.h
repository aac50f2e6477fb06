/*
 * alloc.h - the library's allocator: malloc and friends, plus the test hook
 * suspect_test_fail_alloc_after() that makes the n-th allocation fail, so
 * out-of-memory paths are tested.  Every allocation in libsuspect goes
 * through these; memory they return is released with free().
 */
#ifndef SUSPECT_ALLOC_H
#define SUSPECT_ALLOC_H

#include <stddef.h>

void *suspect_malloc(size_t size);
void *suspect_calloc(size_t n, size_t size);
void *suspect_realloc(void *p, size_t size);
char *suspect_strdup(const char *s);
char *suspect_strndup(const char *s, size_t n);

#endif
