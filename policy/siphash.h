/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein) with a 128-bit output.
 * Keyed with a secret chosen at start-up, it gives the memory store hash
 * values an attacker cannot aim at one bucket, and 128 bits that name an
 * identity without keeping its key.
 */
#ifndef SUSPECT_SIPHASH_H
#define SUSPECT_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct suspect_siphash_key {
    uint64_t k0, k1;
} suspect_siphash_key_t;

/* out[0], out[1]: the 128-bit SipHash-2-4 of data under key. */
void suspect_siphash128(const suspect_siphash_key_t *key, const void *data,
                        size_t len, uint64_t out[2]);

#endif
