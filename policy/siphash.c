/*
 * siphash.c - SipHash-2-4 with a 128-bit output, computed by libsodium
 * (crypto_shorthash_siphashx24).
 *
 * What: the keyed pseudo-random function of Aumasson and Bernstein, in the
 * 128-bit output variant of their reference code.  The memory store names
 * each identity by this hash of its window key under a secret chosen at
 * start-up, so a client cannot aim its keys at one bucket, and a 64 KiB
 * hostile value costs 16 bytes to remember.
 *
 * The key's words k0 and k1 are its 16 bytes read little-endian, as the
 * reference code reads them; out[0] and out[1] are the two halves of the
 * 16-byte result read the same way, so the numbers are the same on every
 * machine.
 *
 * No sodium_init() is needed here: it only picks among implementations of
 * other primitives (BLAKE2b, ChaCha20, Salsa20, Poly1305, Curve25519,
 * Argon2); SipHash has one, and the hot path pays no lock.  Safe from any
 * thread; no allocation.
 */
#include "siphash.h"

#include <endian.h>
#include <sodium.h>

void suspect_siphash128(const suspect_siphash_key_t *key, const void *data,
                        size_t len, uint64_t out[2])
{
    uint64_t k[2] = {htole64(key->k0), htole64(key->k1)}, h[2];

    _Static_assert(sizeof(k) == crypto_shorthash_siphashx24_KEYBYTES &&
                       sizeof(h) == crypto_shorthash_siphashx24_BYTES,
                   "SipHash-2-4: a 16-byte key, a 16-byte result");
    crypto_shorthash_siphashx24((unsigned char *)h, (const unsigned char *)data,
                                (unsigned long long)len,
                                (const unsigned char *)k);
    out[0] = le64toh(h[0]);
    out[1] = le64toh(h[1]);
}
