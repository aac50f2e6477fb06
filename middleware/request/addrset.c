/*
 * addrset.c - address blocks as sorted, disjoint ranges (addrset.h).
 *
 * Every address is a 128-bit number: an IPv6 address as it is, an IPv4
 * address as its IPv4-mapped form (::ffff:a.b.c.d), so one array holds
 * both families and a block of either is a range [lo, hi].  Adding
 * appends; finishing sorts the ranges by lo and merges those that overlap
 * or touch, so the array is sorted and disjoint; a lookup is one binary
 * search for the last range whose lo <= the address, then one comparison
 * with its hi.  Memory: 32 bytes per block.  A finished set can be
 * written out range by range (big-endian) and searched in place where it
 * was written (mw_addrset_over(): suspect-cgi's compiled configuration
 * keeps its lists so, sorted once, and a request copies nothing).
 *
 * Why by hand: no Debian library keeps a static CIDR set for lookups (a
 * radix tree library would do more than this needs and allocate per
 * node); sorted ranges are the smallest structure with a logarithmic
 * lookup and no pointers.
 */
#include "addrset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

typedef struct u128 {
    uint64_t hi, lo;
} u128_t;

typedef struct range {
    u128_t lo, hi;
} range_t;

struct mw_addrset {
    size_t n, cap;
    range_t *r;
    const unsigned char *packed; /* or n borrowed 32-byte big-endian
                                    ranges (mw_addrset_over()) */
};

static int u128_cmp(const u128_t *a, const u128_t *b)
{
    if (a->hi != b->hi) {
        return a->hi < b->hi ? -1 : 1;
    }
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The 128-bit number of a (IPv4 as ::ffff:a.b.c.d). */
static u128_t to_u128(const mw_addr_t *a)
{
    uint8_t b[16];
    u128_t v = {0, 0};

    if (a->family == 4) {
        memset(b, 0, 10);
        b[10] = b[11] = 0xff;
        memcpy(b + 12, a->bytes, 4);
    } else {
        memcpy(b, a->bytes, 16);
    }
    for (int i = 0; i < 8; i++) {
        v.hi = v.hi << 8 | b[i];
        v.lo = v.lo << 8 | b[8 + i];
    }
    return v;
}

mw_addrset_t *mw_addrset_new(void)
{
    return suspect_calloc(1, sizeof(mw_addrset_t));
}

suspect_rc_t mw_addrset_add(mw_addrset_t *s, const mw_cidr_t *c)
{
    unsigned bits = (c->addr.family == 4 ? 96 : 0) + c->prefix;
    u128_t lo = to_u128(&c->addr), mask_hi, mask_lo;

    if (s->n == MW_ADDRSET_MAX) {
        return SUSPECT_E_FULL;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap != 0 ? s->cap * 2 : 64;
        range_t *r = suspect_realloc(s->r, cap * sizeof(*r));

        if (r == NULL) {
            return SUSPECT_E_NOMEM;
        }
        s->r = r;
        s->cap = cap;
    }
    /* the host bits, all ones */
    mask_hi.hi = bits >= 64 ? 0 : UINT64_MAX >> bits;
    mask_lo.lo = bits >= 128  ? 0
                 : bits <= 64 ? UINT64_MAX
                              : UINT64_MAX >> (bits - 64);
    s->r[s->n].lo = lo;
    s->r[s->n].hi.hi = lo.hi | mask_hi.hi;
    s->r[s->n].hi.lo = lo.lo | mask_lo.lo;
    s->n++;
    return SUSPECT_OK;
}

static int range_cmp(const void *a, const void *b)
{
    return u128_cmp(&((const range_t *)a)->lo, &((const range_t *)b)->lo);
}

/* hi + 1 >= lo: the ranges overlap or touch. */
static bool joins(const u128_t *hi, const u128_t *lo)
{
    u128_t next = *hi;

    if (next.hi == UINT64_MAX && next.lo == UINT64_MAX) {
        return true;
    }
    next.lo++;
    next.hi += next.lo == 0;
    return u128_cmp(lo, &next) <= 0;
}

void mw_addrset_finish(mw_addrset_t *s)
{
    size_t m = 0;

    if (s->n == 0) {
        return;
    }
    qsort(s->r, s->n, sizeof(*s->r), range_cmp);
    for (size_t i = 1; i < s->n; i++) {
        if (joins(&s->r[m].hi, &s->r[i].lo)) {
            if (u128_cmp(&s->r[i].hi, &s->r[m].hi) > 0) {
                s->r[m].hi = s->r[i].hi;
            }
        } else {
            s->r[++m] = s->r[i];
        }
    }
    s->n = m + 1;
}

static void put_u128(unsigned char *p, const u128_t *v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v->hi >> (56 - 8 * i));
        p[8 + i] = (unsigned char)(v->lo >> (56 - 8 * i));
    }
}

void mw_addrset_range(const mw_addrset_t *s, size_t i, unsigned char lo[16],
                      unsigned char hi[16])
{
    if (s->packed != NULL) {
        memcpy(lo, s->packed + 32 * i, 16);
        memcpy(hi, s->packed + 32 * i + 16, 16);
        return;
    }
    put_u128(lo, &s->r[i].lo);
    put_u128(hi, &s->r[i].hi);
}

mw_addrset_t *mw_addrset_over(const unsigned char *r, size_t n)
{
    mw_addrset_t *s = mw_addrset_new();

    if (s != NULL) {
        s->packed = r;
        s->n = n;
    }
    return s;
}

/* mw_addrset_contains() over borrowed big-endian ranges, whose byte
 * order is their numeric order: memcmp() compares them. */
static bool packed_contains(const mw_addrset_t *s, const u128_t *v)
{
    unsigned char key[16];
    size_t lo = 0, hi = s->n;

    put_u128(key, v);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (memcmp(s->packed + 32 * mid, key, 16) <= 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo > 0 && memcmp(key, s->packed + 32 * (lo - 1) + 16, 16) <= 0;
}

bool mw_addrset_contains(const mw_addrset_t *s, const mw_addr_t *a)
{
    u128_t v;
    size_t lo = 0, hi;

    if (s == NULL || s->n == 0) {
        return false;
    }
    v = to_u128(a);
    if (s->packed != NULL) {
        return packed_contains(s, &v);
    }
    hi = s->n;
    /* the first range whose lo is above v */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (u128_cmp(&s->r[mid].lo, &v) <= 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo > 0 && u128_cmp(&v, &s->r[lo - 1].hi) <= 0;
}

size_t mw_addrset_ranges(const mw_addrset_t *s)
{
    return s != NULL ? s->n : 0;
}

void mw_addrset_free(mw_addrset_t *s)
{
    if (s != NULL) {
        free(s->r);
        free(s);
    }
}
