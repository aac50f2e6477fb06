/*
 * fcgi_params.c - the PARAMS of one FastCGI request: the raw stream kept
 * in one buffer per connection, decoded in place into mw_param_t entries
 * whose values are NUL-terminated, then repeated names merged into one.
 *
 * The buffer grows by doubling up to params_max + 1 bytes (the extra byte
 * holds the last value's NUL) and is kept for the next request.  Pairs
 * are laid out back to back, so the byte after a value is the first length
 * byte of the next pair: that byte becomes the value's NUL once the next
 * pair has been decoded.  The pair array is capped at pairs_max entries,
 * so hostile one-byte pairs cannot make it much larger than params_max.
 *
 * Repeated names.  nginx (before 1.23) sends a header that came twice as
 * two HTTP_* variables, and nginx configs may set one variable twice with
 * fastcgi_param.  Apps disagree on which copy they read (PHP, sh, Perl and
 * Python the last, getenv() the first), so a guard that counts one copy
 * can be walked around with the other.  The variables are therefore
 * merged into one, at the place of the first copy, before anyone sees
 * them: HTTP_COOKIE joined with "; ", any other HTTP_* with ", " (the
 * field list semantics of RFC 9110, section 5.3), anything else keeps its
 * last value (as PHP does).  The merged list is the request's params, so
 * the guard, the CGI environment and the upstream PARAMS all see the same
 * values.
 *
 * Algorithm: one pass hashes every name (SipHash-2-4 under a secret each
 * worker draws once, so a client cannot aim names at one cell) into an
 * open-addressing table at most two thirds full, and chains each repeat
 * after the previous copy of its name.  Without repeats that is all.
 * With them, a second pass walks each first copy's chain, writes the
 * joined value into the merge area (or points at the last copy's value)
 * and drops the repeats.  Both passes are linear in the pairs and bytes,
 * whatever the names.
 *
 * Memory: the pair array, the chain links, the table and the merge area
 * are one block (c->params, freed with the connection), grown by doubling
 * with the pair array and kept, so a request allocates nothing once the
 * worker has served one as large; the merge area only grows when a
 * request repeats a header.  It holds the joined values, NUL-terminated.
 * A joined value of k copies takes sum(values) + 2(k - 1) + 1 bytes while
 * its pairs took at least sum(values) + 7k bytes of PARAMS (two length
 * bytes and a name of at least "HTTP_"), so the merged variables never
 * take more than the bytes received, and params_max still bounds them.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "random.h"
#include "fcgi_conn.h"

#define PBUF_MIN 8192

/* Pair indices are 32-bit: far above any pairs_max that fits in memory. */
#define PAIRS_HARD_MAX (1u << 26)

/* One cell of the name table: first copy of a name (index + 1, 0 for an
 * empty cell), its latest copy so far, and the name's hash. */
typedef struct name_cell {
    uint32_t first;
    uint32_t last;
    uint32_t hash;
} name_cell_t;

/* How repeats of a name are merged. */
typedef struct merge_rule {
    const char *sep; /* NULL: the last value wins */
    size_t sep_len;
} merge_rule_t;

int mw_fc_add_params(conn_t *c, const uint8_t *p, size_t n)
{
    size_t want = c->plen + n + 1;

    if (c->plen + n > c->srv->params_max) {
        return -EMSGSIZE;
    }
    if (want > c->pcap) {
        size_t cap = c->pcap < PBUF_MIN ? PBUF_MIN : c->pcap;
        uint8_t *nb;

        while (cap < want) {
            cap *= 2;
        }
        if (cap > c->srv->params_max + 1) {
            cap = c->srv->params_max + 1;
        }
        nb = suspect_realloc(c->pbuf, cap);
        if (nb == NULL) {
            return -ENOMEM;
        }
        c->pbuf = nb;
        c->pcap = cap;
    }
    if (n > 0) {
        memcpy(c->pbuf + c->plen, p, n);
        c->plen += n;
    }
    return 0;
}

/* Table cells for cap pairs: a power of two, at least 1.5 * cap (so the
 * table is at most two thirds full). */
static size_t table_cells(size_t cap)
{
    size_t s = 16;

    while (s < cap + cap / 2) {
        s *= 2;
    }
    return s;
}

/* Bytes of the params block: pairs, links, table, then the merge area. */
static size_t block_size(size_t cap, size_t mcap)
{
    return cap * (sizeof(mw_param_t) + sizeof(uint32_t)) +
           table_cells(cap) * sizeof(name_cell_t) + mcap;
}

/* The chain links of the block: links[i] is the next copy of pair i's
 * name (always > i), or 0. */
static uint32_t *block_links(conn_t *c)
{
    return (uint32_t *)(void *)(c->params + c->params_cap);
}

static name_cell_t *block_table(conn_t *c)
{
    return (name_cell_t *)(void *)(block_links(c) + c->params_cap);
}

static char *block_merge_area(conn_t *c)
{
    return (char *)(block_table(c) + table_cells(c->params_cap));
}

/* Makes room for one more pair in the params array. */
static int grow_pairs(conn_t *c, size_t n)
{
    size_t cap = c->params_cap < 32 ? 32 : c->params_cap * 2;
    size_t max = c->srv->pairs_max;
    mw_param_t *np;

    if (n < c->params_cap) {
        return 0;
    }
    if (max > PAIRS_HARD_MAX) {
        max = PAIRS_HARD_MAX;
    }
    if (n >= max) {
        return -EMSGSIZE;
    }
    if (cap > max) {
        cap = max;
    }
    /* Only the pairs decoded so far need to survive: links, table and
     * merge area are filled after decoding. */
    np = suspect_realloc(c->params, block_size(cap, c->mcap));
    if (np == NULL) {
        return -ENOMEM;
    }
    c->params = np;
    c->params_cap = cap;
    return 0;
}

/* Makes the merge area hold at least need bytes; keeps the rest of the
 * block (pairs, links, table) as it is. */
static int grow_merge_area(conn_t *c, size_t need)
{
    size_t mcap = c->mcap < PBUF_MIN ? PBUF_MIN : c->mcap;
    mw_param_t *np;

    if (need <= c->mcap) {
        return 0;
    }
    while (mcap < need) {
        mcap *= 2;
    }
    if (mcap > c->srv->params_max + 1 && need <= c->srv->params_max + 1) {
        mcap = c->srv->params_max + 1;
    }
    np = suspect_realloc(c->params, block_size(c->params_cap, mcap));
    if (np == NULL) {
        return -ENOMEM;
    }
    c->params = np;
    c->mcap = mcap;
    return 0;
}

/* Draws the connection's secret hash key once: 0, or -EIO when the
 * kernel gives no random bytes (random.h; the request is then refused
 * rather than hashed under a key a client could guess and aim names at
 * one cell with). */
static int hash_key(conn_t *c)
{
    if (c->hkey_set) {
        return 0;
    }
    if (suspect_random_bytes(&c->hkey, sizeof(c->hkey), NULL) != SUSPECT_OK) {
        return -EIO;
    }
    c->hkey_set = true;
    return 0;
}

static uint32_t name_hash(const conn_t *c, const mw_param_t *p)
{
    uint64_t h[2];

    suspect_siphash128(&c->hkey, p->name, p->name_len, h);
    return (uint32_t)h[0];
}

/* How repeats of p's name are merged. */
static merge_rule_t merge_rule(const mw_param_t *p)
{
    merge_rule_t r = {NULL, 0};

    if (p->name_len == 11 && memcmp(p->name, "HTTP_COOKIE", 11) == 0) {
        r.sep = "; ";
        r.sep_len = 2;
    } else if (p->name_len >= 5 && memcmp(p->name, "HTTP_", 5) == 0) {
        r.sep = ", ";
        r.sep_len = 2;
    }
    return r;
}

/*
 * Finds p's name (hash h) in the table of mask + 1 cells: the cell that
 * holds it, or the empty cell where it belongs.
 */
static name_cell_t *table_find(conn_t *c, name_cell_t *tab, size_t mask,
                               uint32_t h, const mw_param_t *p)
{
    size_t s = h & mask;

    for (;;) {
        const mw_param_t *q;

        if (tab[s].first == 0) {
            return &tab[s];
        }
        q = &c->params[tab[s].first - 1];
        if (tab[s].hash == h && q->name_len == p->name_len &&
            memcmp(q->name, p->name, p->name_len) == 0) {
            return &tab[s];
        }
        s = (s + 1) & mask;
    }
}

/*
 * Chains every repeat of a name to the copy before it (block_links()).
 * Returns the number of repeats; *need gets the merge area bytes the
 * joined values take, NULs included.
 */
static size_t link_repeats(conn_t *c, size_t n, size_t *need)
{
    uint32_t *links = block_links(c);
    name_cell_t *tab = block_table(c);
    size_t mask = table_cells(n) - 1, repeats = 0;

    *need = 0;
    memset(tab, 0, (mask + 1) * sizeof(*tab));
    for (size_t i = 0; i < n; i++) {
        const mw_param_t *p = &c->params[i];
        uint32_t h = name_hash(c, p);
        name_cell_t *s = table_find(c, tab, mask, h, p);

        links[i] = 0;
        if (s->first == 0) {
            s->first = (uint32_t)i + 1;
            s->last = (uint32_t)i;
            s->hash = h;
            continue;
        }
        if (merge_rule(p).sep != NULL) {
            if (s->last == s->first - 1) { /* the first repeat */
                *need += c->params[s->last].value_len + 1;
            }
            *need += p->value_len + 2;
        }
        links[s->last] = (uint32_t)i;
        s->last = (uint32_t)i;
        repeats++;
    }
    return repeats;
}

/*
 * Merges the copies chained from pair i into pair i, writing a joined
 * value at area + *used, and marks the repeats dropped (name NULL).
 */
static void merge_one(conn_t *c, size_t i, char *area, size_t *used)
{
    const uint32_t *links = block_links(c);
    mw_param_t *p = &c->params[i];
    merge_rule_t r = merge_rule(p);
    char *dst = area + *used;
    size_t len = 0;

    if (r.sep != NULL) {
        memcpy(dst, p->value, p->value_len);
        len = p->value_len;
    }
    for (uint32_t j = links[i]; j != 0; j = links[j]) {
        mw_param_t *q = &c->params[j];

        if (r.sep == NULL) {
            p->value = q->value; /* NUL-terminated in pbuf */
            p->value_len = q->value_len;
        } else {
            memcpy(dst + len, r.sep, r.sep_len);
            memcpy(dst + len + r.sep_len, q->value, q->value_len);
            len += r.sep_len + q->value_len;
        }
        q->name = NULL;
        p->repeated = true;
    }
    if (r.sep != NULL) {
        dst[len] = '\0';
        p->value = dst;
        p->value_len = len;
        *used += len + 1;
    }
}

/*
 * Merges repeated names of the n decoded pairs (see the top of the file);
 * *out gets the number of variables left.  0, -ENOMEM, or -EIO (no hash
 * key: hash_key()).
 */
static int merge_repeats(conn_t *c, size_t n, size_t *out)
{
    size_t need, used = 0, w = 0;
    char *area;

    *out = n;
    if (n < 2) {
        return 0;
    }
    if (hash_key(c) != 0) {
        return -EIO;
    }
    if (link_repeats(c, n, &need) == 0) {
        return 0;
    }
    if (grow_merge_area(c, need) != 0) {
        return -ENOMEM;
    }
    area = block_merge_area(c);
    for (size_t i = 0; i < n; i++) {
        if (c->params[i].name == NULL) {
            continue; /* a repeat, merged into its first copy */
        }
        if (block_links(c)[i] != 0) {
            merge_one(c, i, area, &used);
        }
        c->params[w++] = c->params[i];
    }
    *out = w;
    return 0;
}

int mw_fc_decode_params(conn_t *c)
{
    size_t off = 0, n = 0;
    uint8_t *nul = NULL;
    fcgi_nv_t nv;
    suspect_rc_t rc;
    int r;

    if (c->pbuf == NULL && mw_fc_add_params(c, NULL, 0) != 0) {
        return -ENOMEM;
    }
    while ((rc = fcgi_nv_decode(c->pbuf, c->plen, &off, &nv)) == SUSPECT_OK) {
        r = grow_pairs(c, n);
        if (r < 0) {
            return r;
        }
        if (nul != NULL) {
            *nul = '\0'; /* this pair's lengths are decoded: reuse a byte */
        }
        c->params[n].name = (const char *)nv.name;
        c->params[n].name_len = nv.name_len;
        c->params[n].value = (const char *)nv.value;
        c->params[n].value_len = nv.value_len;
        c->params[n].repeated = false;
        nul = (uint8_t *)nv.value + nv.value_len;
        n++;
    }
    if (rc != SUSPECT_E_NOTFOUND) {
        return -EPROTO;
    }
    c->pbuf[c->plen] = '\0';
    if (nul != NULL) {
        *nul = '\0';
    }
    r = merge_repeats(c, n, &n);
    if (r != 0) {
        return r;
    }
    c->req.params = c->params;
    c->req.nparams = n;
    return 0;
}
