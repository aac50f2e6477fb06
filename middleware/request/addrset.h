/*
 * addrset.h - a set of client address blocks (IPv4 and IPv6 CIDRs) for
 * allow and deny lists, looked up in O(log n): a list of 100,000 blocks
 * costs a decision about 17 comparisons, not 100,000.
 */
#ifndef MW_ADDRSET_H
#define MW_ADDRSET_H

#include <stdbool.h>
#include <stddef.h>

#include "lookup.h"
#include "suspect_error.h"

/* Blocks one set holds at most. */
#define MW_ADDRSET_MAX 1000000u

typedef struct mw_addrset mw_addrset_t;

/* An empty set (owned; mw_addrset_free()); NULL when out of memory. */
mw_addrset_t *mw_addrset_new(void);

/* Adds block c.  SUSPECT_E_FULL past MW_ADDRSET_MAX, SUSPECT_E_NOMEM. */
suspect_rc_t mw_addrset_add(mw_addrset_t *s, const mw_cidr_t *c);

/* Sorts and merges what was added; call once, after the last add and
 * before the first lookup.  The set never changes afterwards. */
void mw_addrset_finish(mw_addrset_t *s);

/* True when a lies in one of the blocks (s may be NULL: false). */
bool mw_addrset_contains(const mw_addrset_t *s, const mw_addr_t *a);

/* Disjoint ranges the set holds once finished (for tests and --check). */
size_t mw_addrset_ranges(const mw_addrset_t *s);

/* Range i (< mw_addrset_ranges()) of a finished set as two 16-byte
 * big-endian numbers (an IPv4 address as ::ffff:a.b.c.d), for a file
 * (compiled.h, packed lists). */
void mw_addrset_range(const mw_addrset_t *s, size_t i, unsigned char lo[16],
                      unsigned char hi[16]);

/*
 * A finished set over the n ranges at r (32 bytes each, as
 * mw_addrset_range() writes them, borrowed: they must outlive the set),
 * which must already be sorted and merged (compiled_pack_check() says
 * so): nothing is copied or sorted, lookups search r itself.  NULL when
 * out of memory.
 */
mw_addrset_t *mw_addrset_over(const unsigned char *r, size_t n);

/* NULL is a no-op. */
void mw_addrset_free(mw_addrset_t *s);

#endif
