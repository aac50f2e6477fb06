/*
 * sha256.c - SHA-256, one-shot, computed by libsodium
 * (crypto_hash_sha256), for identity values too long to keep whole.
 *
 * No sodium_init() is needed here: it only picks among implementations of
 * other primitives (BLAKE2b, ChaCha20, Salsa20, Poly1305, Curve25519,
 * Argon2); SHA-256 has one.  Safe from any thread; no allocation.
 */
#include "sha256.h"

#include <sodium.h>

_Static_assert(SUSPECT_SHA256_LEN == crypto_hash_sha256_BYTES,
               "SHA-256 is 32 bytes");

void suspect_sha256(const void *data, size_t len,
                    uint8_t digest[SUSPECT_SHA256_LEN])
{
    crypto_hash_sha256(digest, (const unsigned char *)data,
                       (unsigned long long)len);
}
