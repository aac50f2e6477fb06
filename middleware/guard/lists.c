/*
 * lists.c - <Allow> and <Deny> compiled for requests: the address blocks
 * in an mw_addrset_t (sorted ranges, a binary search per lookup) and the
 * identity values as a sorted array of "Type=value" strings (a binary
 * search too), from the element's attributes and its file.
 *
 * Entries.  ip="..." holds blocks separated by blanks or commas;
 * identity="..." holds Type=value entries separated by blanks; a file
 * holds one entry per line, trimmed, '#' starting a comment line: an
 * entry whose text before its first '=' is a valid type name is an
 * identity value (the rest of the line, spaces and all), anything else an
 * address block.  A bad entry fails the compile with the file's own line
 * (or the element's), so a reload keeps the running lists.  Bounds:
 * MW_ADDRSET_MAX blocks and GUARD_LIST_MAX_IDS values per list, values of
 * at most GUARD_LIST_VALUE_MAX bytes, and the file's size cap
 * (SUSPECT_CONF_MAX_LIST_BYTES).
 *
 * A composite identity is matched by its parts joined with '_', a '_'
 * or '%' inside a part written "%5F" or "%25" ("a_b"+"c" is
 * "a%5Fb_c", "a"+"b_c" is "a_b%5Fc"), so that two different pairs never
 * meet one entry; a single value is matched as it came.  Ownership: a
 * list owns its set and its copy of the values; it borrows nothing of
 * the conf after compiling, except a packed list's values.
 *
 * Packed (suspect-cgi): suspect-cgi-compile writes each compiled list
 * into its compiled configuration (guard_list_pack(): the merged ranges,
 * the sorted values), and a request's guard takes the pack as it is
 * (unpack(): a set searching the pack's ranges in place, the values
 * pointed at in the conf, which the guard does not outlive), so it
 * parses, sorts and copies nothing but an index of the values.
 */
#include "guard_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "compiled/compiled.h"
#include "request/addrset.h"

#define CONF_ERR(err, file, line, ...)                                         \
    suspect_err_set((err), SUSPECT_E_CONFIG, (file), (line), __VA_ARGS__)

/* One identity value, "Type=value", in the list's pool. */
typedef struct id_entry {
    const char *s;
    size_t len;
} id_entry_t;

struct guard_list {
    mw_addrset_t *addrs;
    id_entry_t *ids;
    size_t nids, cap;
    int status;
    bool borrowed; /* the values point into the conf's pack */
};

/* Where an entry came from, for messages. */
typedef struct site {
    const char *file;
    int line;
    const char *elem; /* "Allow", "Deny" */
} site_t;

static suspect_rc_t add_addr(guard_list_t *l, const char *p, size_t n,
                             const site_t *at, suspect_err_t *err)
{
    mw_cidr_t c;
    suspect_err_t e;
    suspect_rc_t rc;

    suspect_err_clear(&e);
    if (mw_cidr_parse(p, n, &c, &e) != SUSPECT_OK) {
        return CONF_ERR(err, at->file, at->line, "%s: %s", at->elem, e.text);
    }
    if (l->addrs == NULL && (l->addrs = mw_addrset_new()) == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    rc = mw_addrset_add(l->addrs, &c);
    if (rc == SUSPECT_E_FULL) {
        return CONF_ERR(err, at->file, at->line,
                        "%s: more than %u address blocks", at->elem,
                        MW_ADDRSET_MAX);
    }
    return rc == SUSPECT_OK
               ? rc
               : suspect_err_set(err, rc, NULL, 0, "guard: out of memory");
}

static suspect_rc_t add_id(guard_list_t *l, const char *p, size_t n,
                           const site_t *at, suspect_err_t *err)
{
    const char *eq = memchr(p, '=', n);
    char *copy;

    if (eq == NULL || !suspect_name_valid(p, (size_t)(eq - p)) ||
        eq + 1 == p + n) {
        return CONF_ERR(err, at->file, at->line, "%s: '%.*s' is not Type=value",
                        at->elem, (int)(n > 40 ? 40 : n), p);
    }
    if (n - (size_t)(eq + 1 - p) > GUARD_LIST_VALUE_MAX) {
        return CONF_ERR(err, at->file, at->line, "%s: a value over %u bytes",
                        at->elem, GUARD_LIST_VALUE_MAX);
    }
    if (l->nids == GUARD_LIST_MAX_IDS) {
        return CONF_ERR(err, at->file, at->line,
                        "%s: more than %u identity values", at->elem,
                        GUARD_LIST_MAX_IDS);
    }
    if (l->nids == l->cap) {
        size_t cap = l->cap != 0 ? l->cap * 2 : 16;
        id_entry_t *v = suspect_realloc(l->ids, cap * sizeof(*v));

        if (v == NULL) {
            return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "guard: out of memory");
        }
        l->ids = v;
        l->cap = cap;
    }
    copy = suspect_malloc(n);
    if (copy == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    memcpy(copy, p, n);
    l->ids[l->nids].s = copy;
    l->ids[l->nids++].len = n;
    return SUSPECT_OK;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\n';
}

/* The words of text (separated by blanks, and commas for addresses). */
static suspect_rc_t add_words(guard_list_t *l, const char *text, bool ids,
                              const site_t *at, suspect_err_t *err)
{
    const char *p = text;
    suspect_rc_t rc = SUSPECT_OK;

    while (rc == SUSPECT_OK && *p != '\0') {
        size_t n = 0;

        while (*p != '\0' && (ids ? isspace((unsigned char)*p) : blank(*p))) {
            p++;
        }
        while (p[n] != '\0' &&
               !(ids ? isspace((unsigned char)p[n]) : blank(p[n]))) {
            n++;
        }
        if (n > 0) {
            rc = ids ? add_id(l, p, n, at, err) : add_addr(l, p, n, at, err);
        }
        p += n;
    }
    return rc;
}

/* Whether the entry (p, n) is an identity value: a type name, then '='. */
static bool is_id_entry(const char *p, size_t n)
{
    const char *eq = memchr(p, '=', n);

    return eq != NULL && suspect_name_valid(p, (size_t)(eq - p));
}

/* The lines of a list file. */
static suspect_rc_t add_file(guard_list_t *l, const suspect_conf_list_t *cl,
                             const char *elem, suspect_err_t *err)
{
    const char *p = cl->file_text, *end = p + cl->file_len;
    site_t at = {cl->file, 0, elem};
    suspect_rc_t rc = SUSPECT_OK;

    while (rc == SUSPECT_OK && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *e = eol != NULL ? eol : end;

        at.line++;
        while (p < e && isspace((unsigned char)*p)) {
            p++;
        }
        while (e > p && isspace((unsigned char)e[-1])) {
            e--;
        }
        if (e > p && *p != '#') {
            rc = is_id_entry(p, (size_t)(e - p))
                     ? add_id(l, p, (size_t)(e - p), &at, err)
                     : add_addr(l, p, (size_t)(e - p), &at, err);
        }
        p = eol != NULL ? eol + 1 : end;
    }
    return rc;
}

static int id_cmp(const void *a, const void *b)
{
    const id_entry_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);

    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

void guard_list_free(guard_list_t *l)
{
    if (l != NULL) {
        mw_addrset_free(l->addrs);
        for (size_t i = 0; !l->borrowed && i < l->nids; i++) {
            free((char *)l->ids[i].s);
        }
        free(l->ids);
        free(l);
    }
}

/* The list of a pack, which the decoder checked (compiled_pack_check()):
 * ranges and values looked up where they are, in the conf, nothing
 * parsed or sorted. */
static suspect_rc_t unpack(guard_list_t *l, const suspect_conf_list_t *cl,
                           suspect_err_t *err)
{
    compiled_pack_view_t v;
    const unsigned char *pos;

    compiled_pack_view(cl->packed, &v);
    l->borrowed = true;
    if (v.nranges > 0 &&
        (l->addrs = mw_addrset_over(v.ranges, v.nranges)) == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    l->ids = v.nids > 0 ? suspect_malloc(v.nids * sizeof(*l->ids)) : NULL;
    if (v.nids > 0 && l->ids == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    pos = v.ids;
    for (size_t i = 0; i < v.nids; i++) {
        l->ids[i].s = compiled_pack_next_id(&pos, &l->ids[i].len);
    }
    l->nids = l->cap = v.nids;
    return SUSPECT_OK;
}

suspect_rc_t guard_list_pack(const guard_list_t *l, compiled_blob_t *out,
                             suspect_err_t *err)
{
    size_t nr = mw_addrset_ranges(l->addrs), bytes = 0, len;
    unsigned char *p;

    for (size_t i = 0; i < l->nids; i++) {
        bytes += l->ids[i].len;
    }
    len = compiled_pack_size(nr, l->nids, bytes);
    out->p = suspect_malloc(len);
    out->len = len;
    if (out->p == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    p = compiled_pack_ranges(out->p, nr);
    for (size_t i = 0; i < nr; i++, p += 32) {
        mw_addrset_range(l->addrs, i, p, p + 16);
    }
    p = compiled_pack_ids(p, l->nids);
    for (size_t i = 0; i < l->nids; i++) {
        p = compiled_pack_id(p, l->ids[i].s, l->ids[i].len);
    }
    return SUSPECT_OK;
}

suspect_rc_t guard_list_compile(const suspect_conf_t *conf,
                                const suspect_conf_list_t *cl, bool deny,
                                guard_list_t **out, suspect_err_t *err)
{
    const char *elem = deny ? "Deny" : "Allow";
    site_t at = {conf->file, cl->line, elem};
    guard_list_t *l = suspect_calloc(1, sizeof(*l));
    suspect_rc_t rc;

    *out = NULL;
    if (l == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    l->status = cl->status != 0 ? cl->status : 403;
    if (cl->packed != NULL) {
        rc = unpack(l, cl, err);
        if (rc != SUSPECT_OK) {
            guard_list_free(l);
            return rc;
        }
        *out = l;
        return SUSPECT_OK;
    }
    rc = cl->ip != NULL ? add_words(l, cl->ip, false, &at, err) : SUSPECT_OK;
    if (rc == SUSPECT_OK && cl->identity != NULL) {
        rc = add_words(l, cl->identity, true, &at, err);
    }
    if (rc == SUSPECT_OK && cl->file_text != NULL) {
        rc = add_file(l, cl, elem, err);
    }
    if (rc != SUSPECT_OK) {
        guard_list_free(l);
        return rc;
    }
    if (l->addrs != NULL) {
        mw_addrset_finish(l->addrs);
    }
    if (l->nids > 1) {
        qsort(l->ids, l->nids, sizeof(*l->ids), id_cmp);
    }
    *out = l;
    return SUSPECT_OK;
}

bool guard_list_addr(const guard_list_t *l, const mw_addr_t *a)
{
    return l != NULL && mw_addrset_contains(l->addrs, a);
}

/* Appends id's value to buf[*n..size) as entries write it (see the file
 * comment); false when it does not fit. */
static bool join_parts(const suspect_identity_t *id, char *buf, size_t size,
                       size_t *n)
{
    bool composite = id->nparts > 1;

    for (size_t i = 0; i < id->nparts; i++) {
        const char *p = id->part[i].ptr;

        if (i > 0) {
            if (*n == size) {
                return false;
            }
            buf[(*n)++] = '_';
        }
        for (size_t k = 0; k < id->part[i].len; k++) {
            bool esc = composite && (p[k] == '_' || p[k] == '%');

            if (size - *n < (esc ? 3u : 1u)) {
                return false;
            }
            if (esc) {
                memcpy(buf + *n, p[k] == '_' ? "%5F" : "%25", 3);
                *n += 3;
            } else {
                buf[(*n)++] = p[k];
            }
        }
    }
    return true;
}

bool guard_list_identity(const guard_list_t *l, const suspect_identity_t *id)
{
    char buf[SUSPECT_ACTION_MAX + 2 + GUARD_LIST_VALUE_MAX];
    size_t n, tlen;
    id_entry_t key;

    if (l == NULL || l->nids == 0) {
        return false;
    }
    tlen = strlen(id->type);
    if (tlen > SUSPECT_ACTION_MAX) {
        return false;
    }
    memcpy(buf, id->type, tlen);
    buf[tlen] = '=';
    n = tlen + 1;
    if (!join_parts(id, buf, sizeof(buf), &n)) {
        return false; /* longer than any value a list may hold */
    }
    key.s = buf;
    key.len = n;
    return bsearch(&key, l->ids, l->nids, sizeof(*l->ids), id_cmp) != NULL;
}

int guard_list_status(const guard_list_t *l)
{
    return l != NULL ? l->status : 403;
}

size_t guard_list_size(const guard_list_t *l, size_t *ids)
{
    if (ids != NULL) {
        *ids = l != NULL ? l->nids : 0;
    }
    return l != NULL ? mw_addrset_ranges(l->addrs) : 0;
}
