/*
 * siphash.c - SipHash-2-4 with a 128-bit output.
 *
 * What: the keyed pseudo-random function of Aumasson and Bernstein, in the
 * 128-bit output variant of their reference code (outlen = 16).  The memory
 * store names each identity by this hash of its window key under a secret
 * chosen at start-up, so a client cannot aim its keys at one bucket, and a
 * 64 KiB hostile value costs 16 bytes to remember.
 *
 * Algorithm: four 64-bit words of state initialised from the key and the
 * "somepseudorandomlygeneratedbytes" constants, with v1 ^= 0xee for the
 * 128-bit variant.  Each little-endian 8-byte word m of the message is
 * mixed in with two SipRounds (v3 ^= m; 2 rounds; v0 ^= m); the last word
 * holds the remaining 0..7 bytes and the message length mod 256 in its top
 * byte.  Finalisation: v2 ^= 0xee, four rounds, first half = v0^v1^v2^v3;
 * then v1 ^= 0xdd, four rounds, second half = v0^v1^v2^v3.  The reference
 * code writes each half little-endian; out[0] and out[1] are those halves
 * as numbers, so on a little-endian machine out[] has the reference bytes.
 *
 * Invariants: none beyond the arithmetic; no allocation, no state between
 * calls, safe from any thread.
 */
#include "siphash.h"

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

typedef struct sip_state {
    uint64_t v0, v1, v2, v3;
} sip_state_t;

/* Reads 8 bytes little-endian, whatever the host's byte order. */
static uint64_t load_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* One SipRound of the ARX network. */
static void sip_round(sip_state_t *s)
{
    s->v0 += s->v1;
    s->v1 = ROTL64(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = ROTL64(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = ROTL64(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = ROTL64(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = ROTL64(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = ROTL64(s->v2, 32);
}

/* Mixes one message word in (the "2" of SipHash-2-4). */
static void sip_compress(sip_state_t *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

/* Four rounds and the xor of the state (the "4" of SipHash-2-4). */
static uint64_t sip_finish(sip_state_t *s)
{
    for (int i = 0; i < 4; i++) {
        sip_round(s);
    }
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* The last word: the 0..7 trailing bytes and the length in the top byte. */
static uint64_t sip_tail(const unsigned char *p, size_t len)
{
    uint64_t b = (uint64_t)len << 56;
    size_t left = len & 7;

    for (size_t i = 0; i < left; i++) {
        b |= (uint64_t)p[i] << (8 * i);
    }
    return b;
}

/* Computes the 128-bit SipHash-2-4 of data under key; cannot fail. */
void suspect_siphash128(const suspect_siphash_key_t *key, const void *data,
                        size_t len, uint64_t out[2])
{
    const unsigned char *p = data;
    const unsigned char *end = p + (len & ~(size_t)7);
    sip_state_t s;

    s.v0 = key->k0 ^ UINT64_C(0x736f6d6570736575);
    s.v1 = key->k1 ^ UINT64_C(0x646f72616e646f6d) ^ 0xee;
    s.v2 = key->k0 ^ UINT64_C(0x6c7967656e657261);
    s.v3 = key->k1 ^ UINT64_C(0x7465646279746573);
    for (; p != end; p += 8) {
        sip_compress(&s, load_le64(p));
    }
    sip_compress(&s, sip_tail(p, len));
    s.v2 ^= 0xee;
    out[0] = sip_finish(&s);
    s.v1 ^= 0xdd;
    out[1] = sip_finish(&s);
}
