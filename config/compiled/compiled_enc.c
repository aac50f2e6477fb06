/*
 * compiled_enc.c - a compiled configuration into bytes (compiled.h).
 *
 * A growing buffer takes little-endian integers and length-prefixed
 * strings; running out of memory sets a flag checked once at the end, so
 * the walk needs no error path per field.  The header is written last,
 * over the space reserved for it, once the payload's length and checksum
 * are known.  The order of everything here is the decoder's
 * (compiled_dec.c): the tables of compiled.c, then the hand-coded parts in
 * the same sequence.
 */
#include "config.h"

#include "compiled_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

typedef struct wr {
    unsigned char *buf;
    size_t len, cap;
    bool nomem;
    bool big;            /* a string longer than the format allows */
    const compiled_t *s; /* what is written: its packed lists */
} wr_t;

/* Room for n more bytes; false (and nomem) when there is none. */
static bool wr_room(wr_t *w, size_t n)
{
    size_t cap = w->cap == 0 ? 4096 : w->cap;
    unsigned char *nb;

    if (w->nomem) {
        return false;
    }
    while (cap - w->len < n) {
        if (cap > SIZE_MAX / 2) {
            w->nomem = true;
            return false;
        }
        cap *= 2;
    }
    if (cap != w->cap) {
        nb = suspect_realloc(w->buf, cap);
        if (nb == NULL) {
            w->nomem = true;
            return false;
        }
        w->buf = nb;
        w->cap = cap;
    }
    return true;
}

static void wr_bytes(wr_t *w, const void *p, size_t n)
{
    if (n > 0 && wr_room(w, n)) {
        memcpy(w->buf + w->len, p, n);
        w->len += n;
    }
}

/* v as n little-endian bytes at p. */
static void put_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static void wr_u32(wr_t *w, uint32_t v)
{
    unsigned char b[4];

    put_le(b, v, 4);
    wr_bytes(w, b, 4);
}

static void wr_u64(wr_t *w, uint64_t v)
{
    unsigned char b[8];

    put_le(b, v, 8);
    wr_bytes(w, b, 8);
}

/* n bytes at p and a NUL, or NULL; longer than the format allows marks
 * the whole too big (only list files come near it). */
static void wr_blob(wr_t *w, const char *p, size_t n)
{
    if (p == NULL) {
        wr_u32(w, COMPILED_NULL_STR);
    } else if (n >= COMPILED_MAX_LEN) {
        w->big = true;
    } else {
        wr_u32(w, (uint32_t)n);
        wr_bytes(w, p, n);
        wr_bytes(w, "", 1);
    }
}

static void wr_str(wr_t *w, const char *s)
{
    wr_blob(w, s, s != NULL ? strlen(s) : 0);
}

/* The fields of table from the structure at obj. */
static void wr_fields(wr_t *w, const compiled_field_t *table, const void *obj)
{
    const char *base = obj;

    for (const compiled_field_t *f = table; f->kind != 0; f++) {
        const void *p = base + f->offset;
        const char *s;
        unsigned u;
        size_t z;
        bool b;
        int i;

        switch (f->kind) {
        case COMPILED_STR:
        case COMPILED_STR_REQ:
            memcpy(&s, p, sizeof(s));
            wr_str(w, s);
            break;
        case COMPILED_UINT:
            memcpy(&u, p, sizeof(u));
            wr_u32(w, u);
            break;
        case COMPILED_SIZE:
            memcpy(&z, p, sizeof(z));
            wr_u64(w, z);
            break;
        case COMPILED_BOOL:
            memcpy(&b, p, sizeof(b));
            wr_u32(w, b ? 1 : 0);
            break;
        case COMPILED_INT:
        case COMPILED_ENUM:
            memcpy(&i, p, sizeof(i));
            wr_u32(w, (uint32_t)i);
            break;
        }
    }
}

static void wr_identity(wr_t *w, const suspect_conf_identity_t *id)
{
    wr_str(w, id->type);
    wr_u32(w, (uint32_t)id->line);
    wr_str(w, id->normalize);
    wr_u32(w, id->account ? 1u : 0u);
    wr_u32(w, id->shared ? 1u : 0u);
    wr_u32(w, (uint32_t)id->nparts);
    wr_u32(w, (uint32_t)id->nsources);
    for (size_t i = 0; i < id->nsources; i++) {
        wr_u32(w, (uint32_t)id->source[i].kind);
        wr_str(w, id->source[i].name);
        wr_u32(w, id->source[i].part);
    }
}

/* An <Allow> or <Deny> at index at (COMPILED_PACK_INDEX()): whether there is
 * one, then its fields, the list file's identity, then its text and no
 * pack, or, when there is a pack (the compiled_t's for that index, else the
 * one a decoded list holds), no text and the pack. */
static void wr_list(wr_t *w, const suspect_conf_list_t *l, size_t at)
{
    const compiled_blob_t *b = at < w->s->npacked && w->s->packed[at].p != NULL
                                   ? &w->s->packed[at]
                                   : NULL;
    const unsigned char *pack = b != NULL ? b->p : NULL;
    size_t pack_len = b != NULL ? b->len : 0;

    wr_u32(w, l != NULL ? 1 : 0);
    if (l == NULL) {
        return;
    }
    if (pack == NULL) {
        pack = l->packed;
        pack_len = l->packed_len;
    }
    wr_str(w, l->ip);
    wr_str(w, l->identity);
    wr_str(w, l->file);
    wr_blob(w, pack == NULL ? l->file_text : NULL, l->file_len);
    for (size_t i = 0; i < 5; i++) {
        wr_u64(w, l->file_id[i]);
    }
    wr_u32(w, (uint32_t)l->status);
    wr_u32(w, (uint32_t)l->line);
    wr_blob(w, (const char *)pack, pack_len);
}

/* A <Failure> or <Success> pattern (the route's count says which). */
static void wr_outcome(wr_t *w, const suspect_conf_outcome_t *o)
{
    wr_u32(w, (uint32_t)o->nstatus);
    for (size_t i = 0; i < o->nstatus; i++) {
        wr_u32(w, (uint32_t)o->status[i]);
    }
    wr_str(w, o->location);
    wr_str(w, o->body);
    wr_u32(w, (uint32_t)o->within);
    wr_u32(w, (uint32_t)o->line);
    wr_str(w, o->hosts);
    wr_str(w, o->header);
    wr_str(w, o->header_text);
}

static void wr_route(wr_t *w, const suspect_conf_route_t *r, int index)
{
    wr_fields(w, compiled_route_fields, r);
    wr_u32(w, (uint32_t)r->nmethods);
    for (size_t i = 0; i < r->nmethods; i++) {
        wr_str(w, r->methods[i]);
    }
    wr_u32(w, (uint32_t)r->nwhen);
    for (size_t i = 0; i < r->nwhen; i++) {
        wr_u32(w, (uint32_t)r->when[i].kind);
        wr_str(w, r->when[i].name);
    }
    wr_u32(w, (uint32_t)r->nidentities);
    for (size_t i = 0; i < r->nidentities; i++) {
        wr_identity(w, &r->identities[i]);
    }
    wr_u32(w, (uint32_t)r->noutcomes);
    for (size_t i = 0; i < r->noutcomes; i++) {
        wr_outcome(w, &r->outcomes[i]);
    }
    wr_list(w, r->allow, COMPILED_PACK_INDEX(index, 0));
    wr_list(w, r->deny, COMPILED_PACK_INDEX(index, 1));
}

static void wr_conf(wr_t *w, const suspect_conf_t *c)
{
    wr_fields(w, compiled_conf_fields, c);
    wr_blob(w, c->template_body, c->template_len);
    wr_u32(w, (uint32_t)c->nroutes);
    for (size_t i = 0; i < c->nroutes; i++) {
        wr_route(w, &c->routes[i], (int)i);
    }
    wr_list(w, c->allow, COMPILED_PACK_INDEX(-1, 0));
    wr_list(w, c->deny, COMPILED_PACK_INDEX(-1, 1));
}

static void wr_limits(wr_t *w, const suspect_limits_t *lim)
{
    size_t n = suspect_limits_count(lim);

    wr_u32(w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        const suspect_rule_t *r = suspect_limits_at(lim, i);

        wr_str(w, r->action);
        wr_u32(w, r->limit_count);
        wr_u32(w, r->window_s);
        wr_u32(w, r->block_s);
        wr_u32(w, r->block_factor_pct);
        wr_u32(w, r->block_max_s);
        wr_u32(w, r->offence_s);
        wr_u32(w, r->algorithm);
        wr_u32(w, r->burst);
        wr_u32(w, (uint32_t)suspect_limits_line(lim, i));
    }
}

static void wr_id(wr_t *w, const file_id_t *id)
{
    wr_u64(w, id->dev);
    wr_u64(w, id->ino);
    wr_u64(w, id->size);
    wr_u64(w, (uint64_t)id->mtime_ns);
    wr_u64(w, (uint64_t)id->ctime_ns);
}

/* Fills the reserved header once the payload is complete. */
static void wr_header(wr_t *w)
{
    size_t plen = w->len - COMPILED_HEADER;
    uint64_t sum[2];

    compiled_sum(w->buf + COMPILED_HEADER, plen, sum);
    memcpy(w->buf, COMPILED_MAGIC, 8);
    put_le(w->buf + 8, COMPILED_VERSION, 4);
    put_le(w->buf + 12, 0, 4);
    put_le(w->buf + 16, plen, 8);
    put_le(w->buf + 24, sum[0], 8);
    put_le(w->buf + 32, sum[1], 8);
}

/* Header space, payload, then the header; see the header file. */
suspect_rc_t compiled_encode(const compiled_t *s, unsigned char **buf,
                             size_t *len, suspect_err_t *err)
{
    static const unsigned char zero[COMPILED_HEADER];
    wr_t w;

    if (s->conf == NULL || s->limits == NULL || s->conf_path == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "compiled_encode: incomplete");
    }
    memset(&w, 0, sizeof(w));
    w.s = s;
    wr_bytes(&w, zero, sizeof(zero));
    wr_str(&w, PACKAGE_VERSION);
    wr_str(&w, s->conf_path);
    for (size_t i = 0; i < COMPILED_NSRC; i++) {
        wr_id(&w, &s->id[i]);
    }
    wr_conf(&w, s->conf);
    wr_limits(&w, s->limits);
    if (w.nomem) {
        free(w.buf);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "compiled configuration: out of memory");
    }
    if (w.big || w.len > COMPILED_MAX_BYTES) {
        free(w.buf);
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "compiled configuration larger than %u bytes "
                               "(allow and deny list files too large)",
                               COMPILED_MAX_BYTES);
    }
    wr_header(&w);
    *buf = w.buf;
    *len = w.len;
    return SUSPECT_OK;
}
