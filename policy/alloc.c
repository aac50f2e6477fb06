/*
 * alloc.c - allocation wrappers with a failure-injection hook for tests.
 *
 * fail_countdown is -1 when the hook is off.  When it is n > 0, each
 * allocation decrements it; the one that brings it to 0, and every later one,
 * fails until the hook is reset.  The counter is atomic so threaded tests may
 * use it, though they rarely should.
 */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "suspect_error.h"

static long fail_countdown = -1;

void suspect_test_fail_alloc_after(long n)
{
    __atomic_store_n(&fail_countdown, n < 0 ? -1 : n, __ATOMIC_SEQ_CST);
}

/* True when the hook says this allocation must fail. */
static int alloc_should_fail(void)
{
    long n = __atomic_load_n(&fail_countdown, __ATOMIC_RELAXED);
    if (n < 0) {
        return 0;
    }
    if (n == 0) {
        return 1;
    }
    return __atomic_sub_fetch(&fail_countdown, 1, __ATOMIC_SEQ_CST) <= 0;
}

void *suspect_malloc(size_t size)
{
    return alloc_should_fail() ? NULL : malloc(size);
}

void *suspect_calloc(size_t n, size_t size)
{
    return alloc_should_fail() ? NULL : calloc(n, size);
}

void *suspect_realloc(void *p, size_t size)
{
    return alloc_should_fail() ? NULL : realloc(p, size);
}

char *suspect_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *copy = suspect_malloc(len + 1);
    if (copy != NULL) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

char *suspect_strdup(const char *s)
{
    return suspect_strndup(s, strlen(s));
}
