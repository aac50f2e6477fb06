/*
 * compiled_pack.c - an <Allow> or <Deny> list as suspect-cgi's compiled
 * configuration carries it once the guard has compiled it (compiled.h):
 * the merged address ranges and the sorted identity values, so that a
 * request looks them up without parsing or sorting anything.
 *
 * Layout (counts and lengths little-endian, addresses big-endian):
 *
 *   u32 nranges, then nranges times { lo[16], hi[16] }: 128-bit numbers
 *       (an IPv4 address as ::ffff:a.b.c.d), lo <= hi, sorted by lo,
 *       merged: each hi + 1 is below the next lo;
 *   u32 nids, then nids times { u32 len, len bytes }: "Type=value", a
 *       valid type name, '=', then 1 .. SUSPECT_CONF_MAX_LIST_VALUE bytes
 *       (any byte), sorted by memcmp() with the shorter of two equal
 *       prefixes first (equal neighbours allowed);
 *
 * and nothing after.  compiled_pack_check() is the definition: it is what
 * the decoder asks of every list it reads, so the guard can take a pack
 * as it is (its lookups rely on exactly this order).  The writers below
 * are the only other code that knows the layout.
 */
#include "compiled.h"

#include <endian.h>
#include <string.h>

#include "suspect_policy.h"

#define RANGE_BYTES 32

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
    return p + 4;
}

/* A 16-byte big-endian number as two halves, high first. */
typedef struct be128 {
    uint64_t hi, lo;
} be128_t;

/* Two 8-byte loads, not sixteen: the check reads every range of a list
 * on every request of suspect-cgi. */
static be128_t get_be128(const unsigned char *p)
{
    uint64_t hi, lo;
    be128_t v;

    memcpy(&hi, p, 8);
    memcpy(&lo, p + 8, 8);
    v.hi = be64toh(hi);
    v.lo = be64toh(lo);
    return v;
}

static bool be128_lt(be128_t a, be128_t b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

/* The ranges at p: lo <= hi, ordered and merged (each hi + 1 below the
 * next lo; a hi of all ones ends the list). */
static bool ranges_ok(const unsigned char *p, size_t n)
{
    be128_t prev_hi = {0, 0};

    for (size_t i = 0; i < n; i++, p += RANGE_BYTES) {
        be128_t lo = get_be128(p), hi = get_be128(p + 16), next = prev_hi;

        if (be128_lt(hi, lo)) {
            return false;
        }
        if (i > 0) {
            if (next.hi == UINT64_MAX && next.lo == UINT64_MAX) {
                return false;
            }
            next.lo++;
            next.hi += next.lo == 0;
            if (!be128_lt(next, lo)) {
                return false;
            }
        }
        prev_hi = hi;
    }
    return true;
}

/* One value "Type=value" of len bytes. */
static bool id_ok(const char *s, size_t len)
{
    const char *eq = memchr(s, '=', len);

    return eq != NULL && suspect_name_valid(s, (size_t)(eq - s)) &&
           len - (size_t)(eq - s) - 1 >= 1 &&
           len - (size_t)(eq - s) - 1 <= SUSPECT_CONF_MAX_LIST_VALUE;
}

/* a then b in the guard's order: memcmp(), the shorter first. */
static bool id_le(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    return c < 0 || (c == 0 && alen <= blen);
}

bool compiled_pack_check(const void *pack, size_t len, compiled_pack_view_t *v)
{
    const unsigned char *p = pack, *end = p + len;
    const char *prev = NULL;
    size_t prev_len = 0;

    memset(v, 0, sizeof(*v));
    if (len < 8) {
        return false;
    }
    v->nranges = get_u32(p);
    p += 4;
    if (v->nranges > SUSPECT_CONF_MAX_LIST_ENTRIES ||
        (size_t)(end - p) < v->nranges * RANGE_BYTES + 4 ||
        !ranges_ok(p, v->nranges)) {
        return false;
    }
    v->ranges = p;
    p += v->nranges * RANGE_BYTES;
    v->nids = get_u32(p);
    p += 4;
    v->ids = p;
    if (v->nids > SUSPECT_CONF_MAX_LIST_ENTRIES) {
        return false;
    }
    for (size_t i = 0; i < v->nids; i++) {
        size_t n;

        if (end - p < 4) {
            return false;
        }
        n = get_u32(p);
        p += 4;
        if ((size_t)(end - p) < n || !id_ok((const char *)p, n) ||
            (prev != NULL && !id_le(prev, prev_len, (const char *)p, n))) {
            return false;
        }
        prev = (const char *)p;
        prev_len = n;
        p += n;
    }
    return p == end;
}

void compiled_pack_view(const void *pack, compiled_pack_view_t *v)
{
    const unsigned char *p = pack;

    v->nranges = get_u32(p);
    v->ranges = p + 4;
    p = v->ranges + v->nranges * RANGE_BYTES;
    v->nids = get_u32(p);
    v->ids = p + 4;
}

const char *compiled_pack_next_id(const unsigned char **pos, size_t *len)
{
    const char *s = (const char *)*pos + 4;

    *len = get_u32(*pos);
    *pos += 4 + *len;
    return s;
}

size_t compiled_pack_size(size_t nranges, size_t nids, size_t id_bytes)
{
    return 8 + nranges * RANGE_BYTES + nids * 4 + id_bytes;
}

unsigned char *compiled_pack_ranges(unsigned char *p, size_t nranges)
{
    return put_u32(p, (uint32_t)nranges);
}

unsigned char *compiled_pack_ids(unsigned char *p, size_t nids)
{
    return put_u32(p, (uint32_t)nids);
}

unsigned char *compiled_pack_id(unsigned char *p, const char *s, size_t len)
{
    p = put_u32(p, (uint32_t)len);
    memcpy(p, s, len);
    return p + len;
}
