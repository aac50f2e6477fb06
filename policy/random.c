/*
 * random.c - secret random bytes from getrandom(2): see random.h.
 *
 * The loop takes what each call gives (a signal may cut a large request
 * short) and calls again on EINTR; any other error ends it.  The test
 * hook is an atomic flag, so threaded tests may flip it.
 */
#include "random.h"

#include <errno.h>
#include <sys/random.h>

static bool fail_all;

void suspect_test_fail_random(bool on)
{
    __atomic_store_n(&fail_all, on, __ATOMIC_SEQ_CST);
}

suspect_rc_t suspect_random_bytes(void *buf, size_t n, suspect_err_t *err)
{
    unsigned char *p = buf;
    size_t got = 0;

    if (__atomic_load_n(&fail_all, __ATOMIC_RELAXED)) {
        errno = ENOSYS;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "no random bytes from the kernel");
    }
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            if (r == 0) {
                errno = EIO;
            }
            return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                   "no random bytes from the kernel");
        }
        got += (size_t)r;
    }
    return SUSPECT_OK;
}
