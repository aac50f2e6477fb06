/*
 * dtd_test.c - the DTD attacks of both XML suites (dtd_test.h).
 */
#include "dtd_test.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/inotify.h>
#endif

#include "clock.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

void dtd_test_external(const char *const forms[][2], size_t n,
                       dtd_refused_fn refused)
{
    char *dir = test_mkdtemp(), secret[4096], doc[8192];
    int nrefused = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(secret, sizeof(secret), "%s/secret.txt", dir);
    CU_ASSERT_EQUAL_FATAL(test_write_file(secret, "TOPSECRET", 9), 0);
#ifdef __linux__
    int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CU_ASSERT_FATAL(ino >= 0);
    CU_ASSERT_FATAL(inotify_add_watch(ino, secret, IN_OPEN | IN_ACCESS) >= 0);
#endif
    for (size_t i = 0; i < n; i++) {
        snprintf(doc, sizeof(doc), "%s%s%s", forms[i][0], secret, forms[i][1]);
        nrefused += refused(doc);
    }
    CU_ASSERT_EQUAL(nrefused, (int)n);
#ifdef __linux__
    {
        char ev[4096];
        ssize_t r = read(ino, ev, sizeof(ev));
        CU_ASSERT(r < 0 && errno == EAGAIN); /* no event: never opened */
        close(ino);
    }
#endif
    test_rmtree(dir);
    free(dir);
}

void dtd_test_laughs(const char *tail, dtd_refused_fn refused)
{
    size_t cap = 64 * 1024, used = 0;
    char *doc = malloc(cap);
    double t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    used += (size_t)snprintf(doc, cap,
                             "<?xml version='1.0'?>\n<!DOCTYPE r [\n"
                             "<!ENTITY l0 'lol'>\n");
    for (int i = 1; i <= 30; i++) {
        used += (size_t)snprintf(doc + used, cap - used, "<!ENTITY l%d '", i);
        for (int j = 0; j < 10; j++) {
            used += (size_t)snprintf(doc + used, cap - used, "&l%d;", i - 1);
        }
        used += (size_t)snprintf(doc + used, cap - used, "'>\n");
    }
    snprintf(doc + used, cap - used, "]>\n%s", tail);
    t0 = mono_ms();
    CU_ASSERT(refused(doc));
    CU_ASSERT(mono_ms() - t0 < test_scale_ms(500));
    free(doc);
}
