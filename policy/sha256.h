/*
 * sha256.h - SHA-256 (FIPS 180-4), used to name identity values too long to
 * keep whole in a key: collisions between long values must not be findable.
 */
#ifndef SUSPECT_SHA256_H
#define SUSPECT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SUSPECT_SHA256_LEN 32

/* digest = SHA-256(data[0..len-1]). */
void suspect_sha256(const void *data, size_t len,
                    uint8_t digest[SUSPECT_SHA256_LEN]);

#endif
