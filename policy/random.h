/*
 * random.h - secret random bytes, from the kernel alone.
 *
 * Every key the project draws comes from here: the SipHash secrets of the
 * memory store and the failover wrapper, the salts of hit ids, ticket ids,
 * the hash key of a FastCGI connection's parameter table and the decision
 * log's key.  The source is getrandom(2) with no flags: it blocks only
 * until the kernel's pool is first seeded (early in boot; never again),
 * and returns fewer bytes than asked only when a signal interrupts it, so
 * it is called again until all are in.  It fails for good only where the
 * kernel has no getrandom() (ENOSYS: Linux before 3.17).
 *
 * No weaker source stands in (the clock, an address, /dev/urandom, which
 * the same kernels that lack getrandom() may serve unseeded): a key an
 * attacker can guess turns a hash table into a list, or a member id into
 * a collision.  A caller that gets no bytes fails and says why.
 *
 * Private to the library (libsuspect exports none of it); the layers above
 * compile their own copy, as they do the allocator.
 */
#ifndef SUSPECT_RANDOM_H
#define SUSPECT_RANDOM_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

/*
 * Fills buf with n random bytes.  SUSPECT_OK, or SUSPECT_E_IO with errno
 * saved in err ("no random bytes from the kernel"); buf's content is then
 * unspecified and must not be used as a key.
 */
suspect_rc_t suspect_random_bytes(void *buf, size_t n, suspect_err_t *err);

/*
 * Test hook: while on, suspect_random_bytes() fails as on a kernel without
 * getrandom() (ENOSYS), so the callers' failure paths are tested.
 */
void suspect_test_fail_random(bool on);

#endif
