/*
 * hitid.h - unique ids for hits, the members of a window in the stores that
 * keep hits by name (Redis sorted sets, the failover wrapper's journal).
 *
 * Two hits in the same millisecond must not collapse into one, so each gets
 * an id: a random 64-bit salt per source (random.h) and a counter, laid out
 * like a GUID, as the .NET code's members are.  Ids from one source never
 * repeat; ids from two sources collide only if their salts are equal and
 * their counters meet, a 2^-64 event per pair.  A source is not locked: one
 * per thread, or its owner serialises the calls.  Inline: the Redis store
 * draws one on every decision.  Private to the library.
 */
#ifndef SUSPECT_HITID_H
#define SUSPECT_HITID_H

#include <stdint.h>

#include "random.h"
#include "text.h"

typedef struct hit_ids {
    uint64_t salt;
    uint64_t counter;
} hit_ids_t;

#define HIT_ID_LEN 36

/* Gives ids a fresh random salt: SUSPECT_OK, or SUSPECT_E_IO when
 * the kernel gives no random bytes (random.h). */
static inline suspect_rc_t hit_ids_init(hit_ids_t *ids, suspect_err_t *err)
{
    ids->counter = 0;
    return suspect_random_bytes(&ids->salt, sizeof(ids->salt), err);
}

/* Writes the low 4 * digits bits of v as hex digits at p. */
static inline char *hit_ids_hex(char *p, uint64_t v, int digits)
{
    for (int i = digits - 1; i >= 0; i--) {
        p[i] = hex_lower[v & 15];
        v >>= 4;
    }
    return p + digits;
}

/* Writes the next id (HIT_ID_LEN chars and a NUL) into buf. */
static inline void hit_ids_next(hit_ids_t *ids, char buf[HIT_ID_LEN + 1])
{
    uint64_t s = ids->salt, c = ids->counter++;
    char *p = buf;

    /* 8-4-4-4-12 hex digits: the salt's 64 bits, then the counter's.
     * By hand: this runs on every decision. */
    p = hit_ids_hex(p, s >> 32, 8);
    *p++ = '-';
    p = hit_ids_hex(p, s >> 16, 4);
    *p++ = '-';
    p = hit_ids_hex(p, s, 4);
    *p++ = '-';
    p = hit_ids_hex(p, c >> 48, 4);
    *p++ = '-';
    p = hit_ids_hex(p, c, 12);
    *p = '\0';
}

#endif
