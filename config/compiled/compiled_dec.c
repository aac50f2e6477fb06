/*
 * compiled_dec.c - bytes into a compiled configuration (compiled.h).
 *
 * A cursor over the payload hands out little-endian integers and strings;
 * reading past the end, or any value out of its range, marks the cursor
 * bad and yields zeros, so the walk goes on without a check per field and
 * the verdict is read once per part.  Strings are copied into the new
 * suspect.xml snapshot's arena (conf.c), NUL-terminated, and may not
 * hold a NUL themselves; a list's pack is copied too, unless the buffer
 * is a file mapping the snapshot takes (compiled_decode_map()), where it
 * stays; the rules go through limits_add_rule(), which
 * refuses duplicates.  Nothing of a refused file is kept.
 *
 * Checks, beyond the checksum: magic, version, the payload length equal
 * to what follows the header, the producer (PACKAGE_VERSION: a snapshot
 * of another version is stale, not wrong), every count within the
 * loader's own caps, enumerations within range, required strings present,
 * route paths absolute, action and type names valid, allow and deny
 * lists as the loader makes them or packed as compiled_pack_check() wants
 * them (rd_list()), rules with a count and a
 * window of at least 1, and the payload used up exactly.  A list's
 * entries are checked where the XML's are: when the guard compiles them.
 */
#include "config.h"

#include "compiled_internal.h"
#include "conf/conf_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "readfile.h"

typedef struct rd {
    const unsigned char *p;
    size_t left;
    bool bad;   /* refused: past the end, out of range, or nomem */
    bool nomem; /* an allocation failed */
    /* The whole buffer when it is a mapping the snapshot takes: packs
     * then point into it, not into copies (compiled_decode_map()). */
    const void *map;
    size_t map_len;
    bool map_taken; /* the snapshot holds map: it unmaps it */
} rd_t;

/* Marks r bad for want of memory. */
static void rd_nomem(rd_t *r)
{
    r->bad = true;
    r->nomem = true;
}

/* n little-endian bytes, or 0 (bad) past the end. */
static uint64_t rd_le(rd_t *r, size_t n)
{
    uint64_t v = 0;

    if (r->bad || r->left < n) {
        r->bad = true;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        v |= (uint64_t)r->p[i] << (8 * i);
    }
    r->p += n;
    r->left -= n;
    return v;
}

static uint32_t rd_u32(rd_t *r)
{
    return (uint32_t)rd_le(r, 4);
}

/* A u32 at most max, else bad. */
static uint32_t rd_max(rd_t *r, uint32_t max)
{
    uint32_t v = rd_u32(r);

    if (v > max) {
        r->bad = true;
        return 0;
    }
    return v;
}

/* A string or blob: *p and *n of the bytes in place (NUL-terminated
 * there), *p NULL for NULL.  false (bad) when it does not fit, lacks its
 * terminator, or holds a NUL and nul_ok is false. */
static bool rd_span(rd_t *r, const char **p, size_t *n, bool nul_ok)
{
    uint32_t len = rd_u32(r);

    *p = NULL;
    *n = 0;
    if (r->bad || len == COMPILED_NULL_STR) {
        return !r->bad;
    }
    if (len >= r->left || r->p[len] != '\0' ||
        (!nul_ok && memchr(r->p, '\0', len) != NULL)) {
        r->bad = true;
        return false;
    }
    *p = (const char *)r->p;
    *n = len;
    r->p += (size_t)len + 1;
    r->left -= (size_t)len + 1;
    return true;
}

/* rd_span() of a string: no NUL inside. */
static bool rd_blob(rd_t *r, const char **p, size_t *n)
{
    return rd_span(r, p, n, false);
}

/* A string into b's arena: *out, NULL for NULL (bad when required). */
static void rd_str(rd_t *r, conf_build_t *b, bool required, const char **out)
{
    const char *p;
    size_t n;

    *out = NULL;
    if (!rd_blob(r, &p, &n) || (p == NULL && required)) {
        r->bad = true;
        return;
    }
    if (p != NULL && (*out = conf_strndup(b, p, n)) == NULL) {
        rd_nomem(r);
    }
}

/* One field of a table into the structure at base. */
static void rd_field(rd_t *r, conf_build_t *b, const compiled_field_t *f,
                     char *base)
{
    void *p = base + f->offset;
    const char *s;
    unsigned u;
    size_t z;
    bool v;
    int i;

    switch (f->kind) {
    case COMPILED_STR:
    case COMPILED_STR_REQ:
        rd_str(r, b, f->kind == COMPILED_STR_REQ, &s);
        memcpy(p, &s, sizeof(s));
        break;
    case COMPILED_UINT:
        u = rd_u32(r);
        memcpy(p, &u, sizeof(u));
        break;
    case COMPILED_SIZE:
        z = (size_t)rd_le(r, 8);
        memcpy(p, &z, sizeof(z));
        break;
    case COMPILED_BOOL:
        v = rd_max(r, 1) != 0;
        memcpy(p, &v, sizeof(v));
        break;
    case COMPILED_INT:
        i = (int)rd_u32(r);
        memcpy(p, &i, sizeof(i));
        break;
    case COMPILED_ENUM:
        i = (int)rd_max(r, f->max);
        memcpy(p, &i, sizeof(i));
        break;
    }
}

static void rd_fields(rd_t *r, conf_build_t *b, const compiled_field_t *table,
                      void *obj)
{
    for (const compiled_field_t *f = table; f->kind != 0 && !r->bad; f++) {
        rd_field(r, b, f, obj);
    }
}

/* Whether s is a valid action or type name. */
static bool name_ok(const char *s)
{
    return s != NULL && suspect_name_valid(s, strlen(s));
}

static void rd_identity(rd_t *r, conf_build_t *b, suspect_conf_identity_t *id)
{
    rd_str(r, b, true, &id->type);
    id->line = (int)rd_u32(r);
    rd_str(r, b, false, &id->normalize);
    id->account = rd_max(r, 1) != 0;
    id->shared = rd_max(r, 1) != 0;
    id->nparts = rd_max(r, SUSPECT_MAX_PARTS);
    id->nsources = rd_max(r, SUSPECT_CONF_MAX_SOURCES);
    if (!r->bad &&
        (id->nparts == 0 || id->nsources < id->nparts || !name_ok(id->type))) {
        r->bad = true;
    }
    for (size_t i = 0; i < id->nsources && !r->bad; i++) {
        suspect_conf_source_t *s = &id->source[i];

        s->kind = (suspect_src_kind_t)rd_max(r, SUSPECT_SRC_JSON);
        rd_str(r, b, s->kind != SUSPECT_SRC_CLIENT_IP, &s->name);
        s->part = (unsigned)rd_max(r, id->nparts - 1);
        if (s->kind == 0) {
            r->bad = true;
        }
    }
}

/* The longest ip= or identity= text, as the loader caps it. */
static bool list_text_ok(const char *s)
{
    return s == NULL || strlen(s) <= SUSPECT_CONF_MAX_LIST_TEXT;
}

/* Bytes that may hold NULs (a list file's text, a pack) into b's arena,
 * NUL-terminated: *out and *len, *out NULL for none. */
static void rd_bytes(rd_t *r, conf_build_t *b, size_t max, const char **out,
                     size_t *len)
{
    const char *p;
    size_t n;
    char *copy;

    *out = NULL;
    *len = 0;
    if (!rd_span(r, &p, &n, true) || n > max) {
        r->bad = true;
        return;
    }
    if (p == NULL) {
        return;
    }
    copy = conf_alloc(b, n + 1);
    if (copy == NULL) {
        rd_nomem(r);
        return;
    }
    memcpy(copy, p, n);
    copy[n] = '\0';
    *out = copy;
    *len = n;
}

/* A list's pack into *out and *len: where it lies when the snapshot will
 * hold the mapping (r->map), else a copy in b's arena.  A span of the
 * file is NUL-terminated either way (rd_span()). */
static void rd_pack(rd_t *r, conf_build_t *b, const char **out, size_t *len)
{
    if (r->map == NULL) {
        rd_bytes(r, b, COMPILED_MAX_LEN, out, len);
    } else if (!rd_span(r, out, len, true) || *len > COMPILED_MAX_LEN) {
        r->bad = true;
        *out = NULL;
        *len = 0;
    }
}

/* Whether l's text and pack are as the encoder writes them: a file's
 * text, or (compiled) no text and a sound pack. */
static bool list_body_ok(const suspect_conf_list_t *l)
{
    compiled_pack_view_t v;

    if (l->packed != NULL) {
        return l->file_text == NULL &&
               compiled_pack_check(l->packed, l->packed_len, &v);
    }
    return (l->file_text == NULL) == (l->file == NULL);
}

/*
 * An <Allow> or <Deny> (deny true) into *out, NULL when there is none.
 * The loader's promises: some entries, texts within their cap, a file
 * absolute and read, a status only on a <Deny> and in 400..599.  The
 * entries themselves are the guard's to check, as when loaded from XML.
 */
static void rd_list(rd_t *r, conf_build_t *b, bool deny,
                    const suspect_conf_list_t **out)
{
    suspect_conf_list_t *l;
    const char *pack;

    *out = NULL;
    if (rd_max(r, 1) == 0 || r->bad) {
        return;
    }
    l = conf_alloc(b, sizeof(*l));
    if (l == NULL) {
        rd_nomem(r);
        return;
    }
    memset(l, 0, sizeof(*l));
    rd_str(r, b, false, &l->ip);
    rd_str(r, b, false, &l->identity);
    rd_str(r, b, false, &l->file);
    rd_bytes(r, b, SUSPECT_CONF_MAX_LIST_BYTES, &l->file_text, &l->file_len);
    for (size_t i = 0; i < 5; i++) {
        l->file_id[i] = rd_le(r, 8);
    }
    l->status = (int)rd_u32(r);
    l->line = (int)rd_max(r, INT32_MAX);
    rd_pack(r, b, &pack, &l->packed_len);
    l->packed = (const unsigned char *)pack;
    if (r->bad || !list_body_ok(l) ||
        (l->ip == NULL && l->identity == NULL && l->file == NULL) ||
        !list_text_ok(l->ip) || !list_text_ok(l->identity) ||
        (l->file != NULL && l->file[0] != '/') ||
        (l->status != 0 && (!deny || l->status < 400 || l->status > 599))) {
        r->bad = true;
        return;
    }
    *out = l;
}

/* A pattern as wr_outcome() wrote it, held to what the loader allows. */
static void rd_outcome(rd_t *r, conf_build_t *b, suspect_conf_outcome_t *o)
{
    o->nstatus = rd_max(r, SUSPECT_CONF_MAX_STATUSES);
    for (size_t i = 0; i < o->nstatus && !r->bad; i++) {
        o->status[i] = (int)rd_max(r, 599);
        r->bad |= o->status[i] < 100;
    }
    rd_str(r, b, false, &o->location);
    rd_str(r, b, false, &o->body);
    o->within = rd_max(r, SUSPECT_CONF_WITHIN_MAX);
    o->line = (int)rd_u32(r);
    rd_str(r, b, false, &o->hosts);
    rd_str(r, b, false, &o->header);
    rd_str(r, b, false, &o->header_text);
    if (!r->bad && ((o->location != NULL && o->location[0] != '/') ||
                    (o->body != NULL && o->within == 0) ||
                    (o->nstatus == 0 && o->location == NULL &&
                     o->body == NULL && o->header == NULL))) {
        r->bad = true;
    }
}

/* The route's patterns: as many as its count needs, none for a route
 * that counts every attempt. */
static void rd_outcomes(rd_t *r, conf_build_t *b, suspect_conf_route_t *rt)
{
    suspect_conf_outcome_t *o;

    rt->noutcomes = rd_max(r, SUSPECT_CONF_MAX_OUTCOMES);
    if (r->bad || (rt->noutcomes == 0) != (rt->count == SUSPECT_COUNT_ALL)) {
        r->bad = true;
        return;
    }
    if (rt->noutcomes == 0) {
        return;
    }
    o = conf_alloc(b, rt->noutcomes * sizeof(*o));
    if (o == NULL) {
        rd_nomem(r);
        return;
    }
    memset(o, 0, rt->noutcomes * sizeof(*o));
    for (size_t i = 0; i < rt->noutcomes && !r->bad; i++) {
        rd_outcome(r, b, &o[i]);
    }
    rt->outcomes = o;
}

static void rd_route(rd_t *r, conf_build_t *b, suspect_conf_route_t *rt)
{
    suspect_conf_identity_t *ids;

    rd_fields(r, b, compiled_route_fields, rt);
    rt->nmethods = rd_max(r, SUSPECT_CONF_MAX_METHODS);
    for (size_t i = 0; i < rt->nmethods && !r->bad; i++) {
        rd_str(r, b, true, &rt->methods[i]);
    }
    rt->nwhen = rd_max(r, SUSPECT_CONF_MAX_WHEN);
    for (size_t i = 0; i < rt->nwhen && !r->bad; i++) {
        rt->when[i].kind = (suspect_src_kind_t)rd_max(r, SUSPECT_SRC_COOKIE);
        rd_str(r, b, true, &rt->when[i].name);
        if (rt->when[i].kind == 0) {
            r->bad = true;
        }
    }
    rt->nidentities = rd_max(r, SUSPECT_MAX_IDENTITIES);
    if (r->bad || !name_ok(rt->action) || rt->path[0] != '/') {
        r->bad = true;
        return;
    }
    ids = rt->nidentities == 0 ? NULL
                               : conf_alloc(b, rt->nidentities * sizeof(*ids));
    if (rt->nidentities > 0 && ids == NULL) {
        rd_nomem(r);
        return;
    }
    for (size_t i = 0; i < rt->nidentities && !r->bad; i++) {
        rd_identity(r, b, &ids[i]);
    }
    rt->identities = ids;
    rd_outcomes(r, b, rt);
    rd_list(r, b, false, &rt->allow);
    rd_list(r, b, true, &rt->deny);
}

/* The template's bytes: template_body and template_len. */
static void rd_template(rd_t *r, conf_build_t *b)
{
    const char *p;
    size_t n;
    char *copy;

    if (!rd_blob(r, &p, &n) || p == NULL) {
        return;
    }
    copy = conf_strndup(b, p, n);
    if (copy == NULL) {
        rd_nomem(r);
        return;
    }
    b->conf->template_body = copy;
    b->conf->template_len = n;
}

static void rd_conf(rd_t *r, conf_build_t *b)
{
    suspect_conf_route_t *routes = NULL;
    size_t n;

    rd_fields(r, b, compiled_conf_fields, b->conf);
    rd_template(r, b);
    n = rd_max(r, SUSPECT_CONF_MAX_ROUTES);
    if (!r->bad && n > 0) {
        routes = conf_alloc(b, n * sizeof(*routes));
        if (routes == NULL) {
            rd_nomem(r);
        }
    }
    for (size_t i = 0; i < n && !r->bad; i++) {
        rd_route(r, b, &routes[i]);
    }
    b->conf->routes = routes;
    b->conf->nroutes = r->bad ? 0 : n;
    rd_list(r, b, false, &b->conf->allow);
    rd_list(r, b, true, &b->conf->deny);
}

/* The rules into a new limits snapshot named name (the limits file);
 * SUSPECT_OK, SUSPECT_E_PARSE or SUSPECT_E_NOMEM.  The actions point into
 * the payload while suspect_limits_from_rules() copies them. */
static suspect_rc_t rd_limits(rd_t *r, const char *name, suspect_limits_t **out)
{
    size_t count = rd_max(r, COMPILED_MAX_RULES), n;
    suspect_rule_t *rules;
    suspect_rc_t rc;
    int *lines;

    /* each rule takes at least 41 bytes: no allocation beyond the file */
    if (r->bad || count > r->left / 41) {
        return SUSPECT_E_PARSE;
    }
    rules = suspect_calloc(count > 0 ? count : 1, sizeof(*rules));
    lines = suspect_calloc(count > 0 ? count : 1, sizeof(*lines));
    for (size_t i = 0; i < count && rules != NULL && lines != NULL; i++) {
        rd_blob(r, &rules[i].action, &n);
        rules[i].limit_count = rd_u32(r);
        rules[i].window_s = rd_u32(r);
        rules[i].block_s = rd_u32(r);
        rules[i].block_factor_pct = rd_u32(r);
        rules[i].block_max_s = rd_u32(r);
        rules[i].offence_s = rd_u32(r);
        rules[i].algorithm = rd_u32(r);
        rules[i].burst = rd_u32(r);
        lines[i] = (int)rd_u32(r);
    }
    if (rules == NULL || lines == NULL) {
        rc = SUSPECT_E_NOMEM;
    } else if (r->bad) {
        rc = SUSPECT_E_PARSE;
    } else {
        rc = suspect_limits_from_rules(rules, lines, count, name, out, NULL);
        rc = rc == SUSPECT_OK || rc == SUSPECT_E_NOMEM ? rc : SUSPECT_E_PARSE;
    }
    free(rules);
    free(lines);
    return rc;
}

/* The header: the payload's bounds in *r when magic, version, length and
 * checksum hold. */
static bool rd_header(const unsigned char *buf, size_t len, rd_t *r)
{
    rd_t h = {.p = buf, .left = len};
    uint64_t sum[2], want0, want1, plen;
    uint32_t version, zero;

    if (len < COMPILED_HEADER || memcmp(buf, COMPILED_MAGIC, 8) != 0) {
        return false;
    }
    h.p += 8;
    h.left -= 8;
    version = rd_u32(&h);
    zero = rd_u32(&h);
    plen = rd_le(&h, 8);
    want0 = rd_le(&h, 8);
    want1 = rd_le(&h, 8);
    if (version != COMPILED_VERSION || zero != 0 || plen != h.left) {
        return false;
    }
    compiled_sum(h.p, h.left, sum);
    if (sum[0] != want0 || sum[1] != want1) {
        return false;
    }
    *r = h;
    return true;
}

/* The producer, the suspect.xml path and the identities. */
static void rd_preamble(rd_t *r, compiled_t *out)
{
    const char *p;
    size_t n;

    if (!rd_blob(r, &p, &n) || p == NULL || n != strlen(PACKAGE_VERSION) ||
        memcmp(p, PACKAGE_VERSION, n) != 0 || !rd_blob(r, &p, &n) ||
        p == NULL || n == 0 || p[0] != '/') {
        r->bad = true;
        return;
    }
    out->conf_path = suspect_strndup(p, n);
    if (out->conf_path == NULL) {
        rd_nomem(r);
        return;
    }
    for (size_t i = 0; i < COMPILED_NSRC; i++) {
        file_id_t *id = &out->id[i];

        id->dev = rd_le(r, 8);
        id->ino = rd_le(r, 8);
        id->size = rd_le(r, 8);
        id->mtime_ns = (int64_t)rd_le(r, 8);
        id->ctime_ns = (int64_t)rd_le(r, 8);
    }
}

/* The suspect.xml snapshot of the payload into *out (r bad on failure). */
static void rd_snapshot(rd_t *r, const suspect_conf_t **out)
{
    conf_build_t b;

    memset(&b, 0, sizeof(b));
    b.snap = conf_snap_new();
    if (b.snap == NULL) {
        rd_nomem(r);
        return;
    }
    b.conf = &b.snap->conf;
    rd_conf(r, &b);
    if (r->bad) {
        conf_snap_free(b.snap);
        return;
    }
    b.snap->map = r->map;
    b.snap->map_len = r->map_len;
    r->map_taken = r->map != NULL;
    *out = &b.snap->conf;
}

/* Header, preamble, suspect.xml, rules, nothing left; see the header.
 * map: buf is a mapping for the snapshot to take; *taken says whether it
 * did (then freeing the snapshot unmaps it, on a refusal too). */
static suspect_rc_t decode(const void *buf, size_t len, bool map,
                           const char *name, compiled_t *out, bool *taken,
                           suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_E_PARSE;
    rd_t r;

    memset(out, 0, sizeof(*out));
    memset(&r, 0, sizeof(r));
    if (len > COMPILED_MAX_BYTES || !rd_header(buf, len, &r)) {
        return suspect_err_set(err, SUSPECT_E_PARSE, name, 0,
                               "not a compiled configuration of version %u, "
                               "or damaged",
                               COMPILED_VERSION);
    }
    r.map = map ? buf : NULL;
    r.map_len = map ? len : 0;
    rd_preamble(&r, out);
    if (!r.bad) {
        rd_snapshot(&r, &out->conf);
    }
    if (!r.bad) {
        rc = rd_limits(&r, out->conf->limits_path, &out->limits);
    } else if (r.nomem) {
        rc = SUSPECT_E_NOMEM;
    }
    if (rc == SUSPECT_OK && r.left != 0) {
        rc = SUSPECT_E_PARSE;
    }
    *taken = r.map_taken;
    if (rc != SUSPECT_OK) {
        compiled_clear(out); /* unmaps what the snapshot took */
        return rc == SUSPECT_E_NOMEM
                   ? suspect_err_set(err, rc, name, 0, "out of memory")
                   : suspect_err_set(err, rc, name, 0,
                                     "compiled configuration of another "
                                     "version, or inconsistent");
    }
    return SUSPECT_OK;
}

suspect_rc_t compiled_decode(const void *buf, size_t len, const char *name,
                             compiled_t *out, suspect_err_t *err)
{
    bool taken = false;

    return decode(buf, len, false, name, out, &taken, err);
}

suspect_rc_t compiled_decode_map(const void *map, size_t len, const char *name,
                                 compiled_t *out, suspect_err_t *err)
{
    bool taken = false;
    suspect_rc_t rc = decode(map, len, map != NULL, name, out, &taken, err);

    if (!taken) {
        config_unmap_file(map, len);
    }
    return rc;
}
