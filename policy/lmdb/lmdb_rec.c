/*
 * lmdb_rec.c - the LMDB store's records and stored keys: how an identity's
 * window and lock are laid out in the map, read, judged and written.
 *
 * Keys.  The window key bytes (the lock is kept inside the same record, so
 * one key per identity).  LMDB keys hold at most K = 511 bytes; keys built
 * with a long prefix, the typed format and a large value cap can be longer.
 * A key shorter than K is stored as it is; a longer one becomes exactly K
 * bytes: its first K - 66 bytes, "%#" and the 64 hex digits of the SHA-256
 * of the whole key.  Stored lengths keep the two kinds apart (raw < K,
 * hashed == K), and the digest keeps long keys apart.
 *
 * Record (native byte order; an LMDB file is not portable across CPUs
 * anyway):
 *   magic u32 "SLR1" | count u32 | window_s u32 | ext_len u32 |
 *   lock_until_ms i64 | expires_ms i64 | hits[count] i64, ascending |
 *   extension (ext_len bytes, 0 = none):
 *     offences u32 | nresv u32 | offence_until_ms i64 |
 *     reservations[nresv] (id u64, at_ms i64, end_ms i64)
 * window_s is the window of the last decision on the record; expires_ms is
 * max(newest hit + window, lock_until, offence_until, each reservation's end +
 * window): after it the record means nothing.  The extension holds what
 * only some identities have: reservations and an
 * offence count (escalating rules); a record of the seed's kind has none,
 * and a file written before it existed reads the same (ext_len was 0).
 * Values are read with memcpy (LMDB gives no alignment).
 *
 * Metered record (an action counted by a token bucket or a sliding
 * counter, lmdb_meter.c), fixed size whatever the limit:
 *   magic u32 "SLM1" | algorithm u32 | window_s u32 | ext_len u32 |
 *   lock_until_ms i64 | expires_ms i64 | at i64 | cur i64 | prev i64 |
 *   extension (the offences; never a reservation)
 * expires_ms counts the meter's end (suspect_meter_end_ms()) in place of
 * the newest hit.
 *
 * A record is written whole from the store's scratch buffer (only inside a
 * write transaction, which LMDB serialises); one left with no hit and no
 * lock is deleted instead.  Views point into LMDB's pages and are valid
 * only inside their transaction.
 */
#include "lmdb_internal.h"

#include <string.h>

#include "alloc.h"
#include "text.h"

static int64_t get_i64(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static void put_i64(unsigned char *p, int64_t v)
{
    memcpy(p, &v, sizeof(v));
}

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}

/* Fills r from a stored value; false when the value is not a record. */
bool lm_rec_parse(const MDB_val *v, rec_view_t *r)
{
    const unsigned char *p = v->mv_data;
    size_t body;
    uint32_t ext;

    memset(r, 0, sizeof(*r));
    if (v->mv_size < REC_HEADER ||
        (get_u32(p) != REC_MAGIC && get_u32(p) != METER_MAGIC)) {
        return false;
    }
    r->metered = get_u32(p) == METER_MAGIC;
    if (r->metered) {
        r->algorithm = get_u32(p + 4);
    } else {
        r->count = get_u32(p + 4);
    }
    body = r->metered ? METER_BYTES : (size_t)r->count * 8;
    ext = get_u32(p + 12);
    if (v->mv_size != REC_HEADER + body + ext ||
        (ext != 0 && ext < EXT_HEADER)) {
        return false;
    }
    r->found = true;
    r->window_s = get_u32(p + 8);
    r->lock_until_ms = get_i64(p + 16);
    r->expires_ms = get_i64(p + 24);
    r->hits = p + REC_HEADER;
    if (r->metered) {
        r->meter.at = get_i64(p + REC_HEADER);
        r->meter.cur = get_i64(p + REC_HEADER + 8);
        r->meter.prev = get_i64(p + REC_HEADER + 16);
    }
    if (ext != 0) {
        const unsigned char *x = r->hits + body;

        r->offences = get_u32(x);
        r->nresv = get_u32(x + 4);
        r->offence_until_ms = get_i64(x + 8);
        r->resv = x + EXT_HEADER;
        if (ext != EXT_HEADER + (size_t)r->nresv * RESV_BYTES) {
            return false;
        }
    }
    return true;
}

lm_resv_t lm_rec_resv(const rec_view_t *r, uint32_t i)
{
    const unsigned char *p = r->resv + (size_t)i * RESV_BYTES;
    lm_resv_t s;

    memcpy(&s.id, p, 8);
    s.at_ms = get_i64(p + 8);
    s.end_ms = get_i64(p + 16);
    return s;
}

lm_resv_t *lm_resv_alloc(const rec_view_t *r)
{
    return suspect_malloc(((size_t)r->nresv + 1) * sizeof(lm_resv_t));
}

void lm_rec_new(rec_new_t *nr, const rec_view_t *r, lm_resv_t *resv)
{
    memset(nr, 0, sizeof(*nr));
    nr->old = r;
    nr->lock_until_ms = r->lock_until_ms;
    nr->window_s = r->window_s;
    nr->offences = r->offences;
    nr->offence_until_ms = r->offence_until_ms;
    for (uint32_t i = 0; resv != NULL && i < r->nresv; i++) {
        resv[i] = lm_rec_resv(r, i);
    }
    nr->resv = resv;
    nr->nresv = resv != NULL ? r->nresv : 0; /* NULL: a meter's */
    nr->metered = r->metered;
    nr->algorithm = r->algorithm;
    nr->meter = r->meter;
}

void lm_rec_ext_state(const rec_view_t *r, const suspect_rule_t *rule,
                      int64_t now_ms, suspect_window_state_t *st)
{
    int64_t cutoff = now_ms - (int64_t)rule->window_s * 1000;

    for (uint32_t i = 0; r->found && i < r->nresv; i++) {
        lm_resv_t s = lm_rec_resv(r, i);

        if (s.end_ms > now_ms) {
            st->pending++;
            if (st->pending_end_ms == 0 || s.end_ms < st->pending_end_ms) {
                st->pending_end_ms = s.end_ms;
            }
        } else if (s.at_ms > cutoff) {
            st->in_window++; /* a hit not yet moved among the hits */
        }
    }
    if (r->found && suspect_rule_escalates(rule) &&
        r->offence_until_ms > now_ms) {
        st->offences = r->offences;
    }
}

int64_t lm_rec_hit(const rec_view_t *r, uint32_t i)
{
    return get_i64(r->hits + (size_t)i * 8);
}

/* Index of the first hit after cutoff (count when none): hits at or before
 * the cutoff have left the window. */
static uint32_t rec_first_after(const rec_view_t *r, int64_t cutoff)
{
    uint32_t lo = 0, hi = r->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (lm_rec_hit(r, mid) <= cutoff) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The state of r under rule at now; *first gets the oldest hit still in
 * the window. */
void lm_rec_state(const rec_view_t *r, const suspect_rule_t *rule,
                  int64_t now_ms, suspect_window_state_t *st, uint32_t *first)
{
    int64_t window_ms = (int64_t)rule->window_s * 1000;

    memset(st, 0, sizeof(*st));
    *first = 0;
    if (!r->found) {
        return;
    }
    *first = rec_first_after(r, now_ms - window_ms);
    st->lock_until_ms = r->lock_until_ms;
    st->in_window = r->count - *first;
    if (st->in_window >= rule->limit_count) {
        uint32_t k = *first + (st->in_window - rule->limit_count);
        st->free_at_ms = lm_rec_hit(r, k) + window_ms;
    }
}

static uint32_t rec_new_count(const rec_new_t *nr)
{
    uint32_t kept = nr->old->found ? nr->old->count - nr->from : 0;

    return nr->metered ? 0 : kept + (nr->add ? 1 : 0) + nr->nextra;
}

/* Whether the record needs its extension. */
static bool rec_new_ext(const rec_new_t *nr)
{
    return nr->nresv > 0 || nr->offences > 0;
}

/* Makes the scratch buffer hold at least size bytes; false on ENOMEM. */
static bool scratch_reserve(lmstore_t *ls, size_t size)
{
    unsigned char *p;

    if (size <= ls->scratch_cap) {
        return true;
    }
    p = suspect_realloc(ls->scratch, size);
    if (p == NULL) {
        return false;
    }
    ls->scratch = p;
    ls->scratch_cap = size;
    return true;
}

/* Writes the kept hits, the added one and the extra ones, merged in
 * ascending order, at h. */
static void put_hits(unsigned char *h, const rec_new_t *nr, uint32_t kept)
{
    uint32_t i = 0, j = 0, k = 0;

    while (i < kept || j < nr->nextra) {
        int64_t a = i < kept ? lm_rec_hit(nr->old, nr->from + i) : 0;

        if (i < kept && (j == nr->nextra || a <= nr->extra[j])) {
            put_i64(h + (size_t)k++ * 8, a);
            i++;
        } else {
            put_i64(h + (size_t)k++ * 8, nr->extra[j++]);
        }
    }
    if (nr->add) {
        put_i64(h + (size_t)k * 8, nr->add_ts);
    }
}

/* Writes the extension nr describes at x; the latest end of a reservation plus
 * the window, or 0. */
static int64_t put_ext(unsigned char *x, const rec_new_t *nr)
{
    int64_t last = 0;

    put_u32(x, nr->offences);
    put_u32(x + 4, nr->nresv);
    put_i64(x + 8, nr->offence_until_ms);
    for (uint32_t i = 0; i < nr->nresv; i++) {
        unsigned char *s = x + EXT_HEADER + (size_t)i * RESV_BYTES;

        memcpy(s, &nr->resv[i].id, 8);
        put_i64(s + 8, nr->resv[i].at_ms);
        put_i64(s + 16, nr->resv[i].end_ms);
        last = nr->resv[i].end_ms > last ? nr->resv[i].end_ms : last;
    }
    return last > 0 ? last + (int64_t)nr->window_s * 1000 : 0;
}

/* The moment a metered record's meter says nothing any more (its rule as
 * far as the record keeps it: algorithm and window). */
static int64_t meter_end(const rec_new_t *nr)
{
    suspect_rule_t r;

    memset(&r, 0, sizeof(r));
    r.algorithm = nr->algorithm;
    r.window_s = nr->window_s != 0 ? nr->window_s : 1;
    r.limit_count = 1;
    return suspect_meter_end_ms(&r, &nr->meter);
}

/* Builds the metered record nr describes in the scratch buffer. */
static int meter_build(lmstore_t *ls, const rec_new_t *nr, MDB_val *v)
{
    size_t ext = nr->offences > 0 ? EXT_HEADER : 0;
    size_t size = REC_HEADER + METER_BYTES + ext;
    int64_t expires = meter_end(nr);
    unsigned char *p;

    if (!scratch_reserve(ls, size)) {
        return LM_NOMEM;
    }
    p = ls->scratch;
    expires = nr->lock_until_ms > expires ? nr->lock_until_ms : expires;
    if (ext > 0) {
        put_u32(p + REC_HEADER + METER_BYTES, nr->offences);
        put_u32(p + REC_HEADER + METER_BYTES + 4, 0);
        put_i64(p + REC_HEADER + METER_BYTES + 8, nr->offence_until_ms);
        expires =
            nr->offence_until_ms > expires ? nr->offence_until_ms : expires;
    }
    put_u32(p, METER_MAGIC);
    put_u32(p + 4, nr->algorithm);
    put_u32(p + 8, nr->window_s);
    put_u32(p + 12, (uint32_t)ext);
    put_i64(p + 16, nr->lock_until_ms);
    put_i64(p + 24, expires);
    put_i64(p + REC_HEADER, nr->meter.at);
    put_i64(p + REC_HEADER + 8, nr->meter.cur);
    put_i64(p + REC_HEADER + 16, nr->meter.prev);
    v->mv_data = p;
    v->mv_size = size;
    return 0;
}

/* Builds the record nr describes in the scratch buffer; *v points at it. */
static int rec_build(lmstore_t *ls, const rec_new_t *nr, MDB_val *v)
{
    uint32_t count = rec_new_count(nr);
    uint32_t kept = count - (nr->add ? 1 : 0) - nr->nextra;
    size_t ext =
        rec_new_ext(nr) ? EXT_HEADER + (size_t)nr->nresv * RESV_BYTES : 0;
    size_t size = REC_HEADER + (size_t)count * 8 + ext;
    int64_t expires = nr->lock_until_ms;
    unsigned char *p;

    if (!scratch_reserve(ls, size)) {
        return LM_NOMEM;
    }
    p = ls->scratch;
    memset(p, 0, REC_HEADER);
    put_hits(p + REC_HEADER, nr, kept);
    if (ext > 0) {
        int64_t last = put_ext(p + REC_HEADER + (size_t)count * 8, nr);

        expires = last > expires ? last : expires;
        expires =
            nr->offence_until_ms > expires ? nr->offence_until_ms : expires;
    }
    if (count > 0) {
        int64_t newest = get_i64(p + REC_HEADER + (size_t)(count - 1) * 8);
        int64_t end = newest + (int64_t)nr->window_s * 1000;
        expires = end > expires ? end : expires;
    }
    put_u32(p, REC_MAGIC);
    put_u32(p + 4, count);
    put_u32(p + 8, nr->window_s);
    put_u32(p + 12, (uint32_t)ext);
    put_i64(p + 16, nr->lock_until_ms);
    put_i64(p + 24, expires);
    v->mv_data = p;
    v->mv_size = size;
    return 0;
}

/* The stored form of key's window key (see the top of this file). */
void lm_store_key(const lmstore_t *ls, const suspect_key_t *key, skey_t *sk)
{
    uint8_t d[SUSPECT_SHA256_LEN];
    size_t head;

    if (key->window_len < ls->key_max) {
        sk->val.mv_data = (void *)key->buf;
        sk->val.mv_size = key->window_len;
        return;
    }
    head = ls->key_max - HASH_TAIL;
    suspect_sha256(key->buf, key->window_len, d);
    memcpy(sk->buf, key->buf, head);
    sk->buf[head] = '%';
    sk->buf[head + 1] = '#';
    for (size_t i = 0; i < SUSPECT_SHA256_LEN; i++) {
        sk->buf[head + 2 + 2 * i] = hex_lower[d[i] >> 4];
        sk->buf[head + 3 + 2 * i] = hex_lower[d[i] & 15];
    }
    sk->val.mv_data = sk->buf;
    sk->val.mv_size = ls->key_max;
}

/* Reads the record of sk into r (r->found false when there is none). */
int lm_rec_get(const lmstore_t *ls, MDB_txn *txn, skey_t *sk, rec_view_t *r)
{
    MDB_val v;
    int rc = mdb_get(txn, ls->recs, &sk->val, &v);

    memset(r, 0, sizeof(*r));
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    return lm_rec_parse(&v, r) ? 0 : LM_CORRUPT;
}

/* Writes what nr describes under sk, or deletes the record when it would
 * hold no hit and no lock. */
int lm_rec_store(lmstore_t *ls, MDB_txn *txn, skey_t *sk, const rec_new_t *nr)
{
    MDB_val v;
    int rc;

    bool meter = nr->metered && (nr->meter.at != 0 || nr->meter.cur != 0 ||
                                 nr->meter.prev != 0);

    if (rec_new_count(nr) == 0 && nr->lock_until_ms == 0 && !rec_new_ext(nr) &&
        !meter) {
        return nr->old->found ? mdb_del(txn, ls->recs, &sk->val, NULL) : 0;
    }
    rc = nr->metered ? meter_build(ls, nr, &v) : rec_build(ls, nr, &v);
    return rc != 0 ? rc : mdb_put(txn, ls->recs, &sk->val, &v, 0);
}
