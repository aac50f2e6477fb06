/*
 * normalize_apply.c - applying a compiled normaliser (normalize.h) to a
 * value, and the default reading.
 *
 * The steps run in order, each from the previous result into one of two
 * work buffers (stack first, heap when a result outgrows it).  Byte steps
 * are one linear pass.  Unicode steps take an ASCII fast path when every
 * byte is below 0x80 (folding ASCII lowercases it; NFD, mark removal and
 * the Latin table leave it alone), else libunistring: u8_casefold() (full
 * case folding, "ß" -> "ss"), u8_normalize(UNINORM_NFD) then the marks
 * (general category M) dropped, so "á" -> "a", then the Latin letters
 * that have no decomposition from a table ("ł" -> "l", "æ" -> "ae").
 * Canonical decomposition only: compatibility characters ("²", "™",
 * "ª", "ﬁ") stay as they are, since applications read them apart (as
 * punctuation, or as letters of their own); alnum and only: judge them.
 * Bytes that are not UTF-8 are dropped first (and by utf8-clean alone).
 * only: checks and copies; html-entities is normalize_html.c's,
 * strip-tags normalize_tags.c's, WordPress's and Request Tracker's
 * normalize_wp.c's.
 *
 * Invariants: the normaliser is only read (threads share it); the work
 * buffers are freed before returning, except the result handed to the
 * caller in *heap.
 */
#include "normalize_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

#include "alloc.h"

/* Bytes of each work buffer on apply's stack. */
#define WORK_STACK 512

/* A work buffer: the stack part, or a heap block once that is too small. */
typedef struct wbuf {
    char *p;
    size_t len;
    size_t cap;
    char *heap;
} wbuf_t;

/* Makes room for n bytes (the content is not kept). */
static suspect_rc_t wb_reserve(wbuf_t *b, size_t n)
{
    char *h;

    if (n <= b->cap) {
        return SUSPECT_OK;
    }
    h = suspect_malloc(n);
    if (h == NULL) {
        return SUSPECT_E_NOMEM;
    }
    free(b->heap);
    b->heap = h;
    b->p = h;
    b->cap = n;
    return SUSPECT_OK;
}

/* Makes the block r (from libunistring, len bytes) b's content, unless it
 * is b's own memory. */
static void wb_adopt(wbuf_t *b, uint8_t *r, size_t len)
{
    if ((char *)r != b->p) {
        free(b->heap);
        b->heap = (char *)r;
        b->p = (char *)r;
        b->cap = len;
    }
    b->len = len;
}

static bool all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] >= 0x80) {
            return false;
        }
    }
    return true;
}

/* What a pass over UTF-8 does with one code point: NULL keeps it, else
 * the string written in its place ("" drops it; never longer than the
 * character, so a pass can run in place). */
typedef const char *(*cp_fn)(ucs4_t uc, const void *ctx);

/* One pass over s[0..n) into d (room for n; d may be s): the bytes that
 * are not UTF-8 dropped, each code point kept when fn is NULL, else as fn
 * says.  Returns the new length. */
static size_t utf8_pass(const char *s, size_t n, char *d, cp_fn fn,
                        const void *ctx)
{
    const uint8_t *p = (const uint8_t *)s;
    const uint8_t *e = p + n;
    size_t k = 0;

    while (p < e) {
        ucs4_t uc;
        int w = u8_mbtoucr(&uc, p, (size_t)(e - p));
        const char *to;
        if (w <= 0) {
            p++;
            continue;
        }
        to = fn != NULL ? fn(uc, ctx) : NULL;
        if (to != NULL) {
            memcpy(d + k, to, strlen(to));
            k += strlen(to);
        } else {
            memmove(d + k, p, (size_t)w);
            k += (size_t)w;
        }
        p += w;
    }
    return k;
}

/* Copies the valid UTF-8 of s[0..n) into d (room for n), dropping the
 * bytes that are not. */
static size_t utf8_clean(const char *s, size_t n, char *d)
{
    return utf8_pass(s, n, d, NULL, NULL);
}

static void do_trim(const step_t *s, const char *in, size_t n, wbuf_t *out)
{
    const char *e = in + n;

    if (s->kind != ST_RTRIM) {
        while (in < e && set_has(s->set, (unsigned char)*in)) {
            in++;
        }
    }
    if (s->kind != ST_LTRIM) {
        while (e > in && set_has(s->set, (unsigned char)e[-1])) {
            e--;
        }
    }
    out->len = (size_t)(e - in);
    memcpy(out->p, in, out->len);
}

static void do_bytes(const step_t *s, const char *in, size_t n, wbuf_t *out)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        switch (s->kind) {
        case ST_STRIP:
            if (!set_has(s->set, c)) {
                out->p[k++] = (char)c;
            }
            break;
        case ST_COLLAPSE:
            if (!set_has(s->set, c)) {
                out->p[k++] = (char)c;
            } else if (i == 0 || !set_has(s->set, (unsigned char)in[i - 1])) {
                out->p[k++] = s->first;
            }
            break;
        default: /* ST_LOWER, and casefold's ASCII path */
            out->p[k++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            break;
        }
    }
    out->len = k;
}

static void do_map(const step_t *s, const char *in, size_t n, wbuf_t *out)
{
    size_t k = 0;
    size_t i = 0;

    while (i < n) {
        const map_pair_t *hit = NULL;
        for (size_t j = 0; j < s->npairs && hit == NULL; j++) {
            const map_pair_t *mp = &s->pairs[j];
            if (mp->from_len <= n - i &&
                memcmp(in + i, mp->from, mp->from_len) == 0) {
                hit = mp;
            }
        }
        if (hit == NULL) {
            out->p[k++] = in[i++];
            continue;
        }
        memcpy(out->p + k, hit->to, hit->to_len);
        k += hit->to_len;
        i += hit->from_len;
    }
    out->len = k;
}

/* keep_category's question: which category, kept or dropped, and the
 * ASCII bytes kept besides (NULL: none). */
struct keep_cat {
    uc_general_category_t cat;
    bool keep;
    const uint8_t *extra;
};

static const char *keep_cat_fn(ucs4_t uc, const void *ctx)
{
    const struct keep_cat *c = ctx;

    if (uc_is_general_category(uc, c->cat) == c->keep ||
        (c->extra != NULL && uc < 0x80 &&
         set_has(c->extra, (unsigned char)uc))) {
        return NULL;
    }
    return "";
}

/* Keeps the code points of s[0..n) (valid UTF-8) whose category is in
 * cat (or, when extra is not NULL, that are ASCII bytes of extra), in
 * place; returns the new length. */
static size_t keep_category(char *s, size_t n, uc_general_category_t cat,
                            bool keep, const uint8_t *extra)
{
    const struct keep_cat c = {cat, keep, extra};

    return utf8_pass(s, n, s, keep_cat_fn, &c);
}

/* Latin letters that canonical decomposition leaves whole, as unaccent
 * writes them (never longer than the letter): sorted by code point. */
static const struct latin {
    ucs4_t uc;
    const char *to;
} latin[] = {
    {0x00c6, "AE"}, {0x00d0, "D"},  {0x00d8, "O"},  {0x00de, "TH"},
    {0x00df, "ss"}, {0x00e6, "ae"}, {0x00f0, "d"},  {0x00f8, "o"},
    {0x00fe, "th"}, {0x0110, "D"},  {0x0111, "d"},  {0x0126, "H"},
    {0x0127, "h"},  {0x0131, "i"},  {0x013f, "L"},  {0x0140, "l"},
    {0x0141, "L"},  {0x0142, "l"},  {0x0152, "OE"}, {0x0153, "oe"},
    {0x0166, "T"},  {0x0167, "t"},  {0x0180, "b"},  {0x0191, "F"},
    {0x0192, "f"},  {0x1e9e, "SS"},
};

static const char *latin_find(ucs4_t uc, const void *ctx)
{
    size_t lo = 0;
    size_t hi = sizeof(latin) / sizeof(latin[0]);

    (void)ctx;
    if (uc < 0x80) {
        return NULL;
    }

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (latin[mid].uc == uc) {
            return latin[mid].to;
        }
        if (latin[mid].uc < uc) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* unaccent's last pass over s[0..n) (valid UTF-8, marks dropped): the
 * letters of the table replaced, in place; returns the new length. */
static size_t unaccent_latin(char *s, size_t n)
{
    return utf8_pass(s, n, s, latin_find, NULL);
}

/* only: true when every character of in[0..n) is in the step's class
 * (a byte that is not UTF-8 never is). */
static bool only_fits(const step_t *s, const char *in, size_t n)
{
    const uint8_t *p = (const uint8_t *)in;
    const uint8_t *e = p + n;

    while (p < e) {
        ucs4_t uc;
        int w;
        bool in_class = false;

        if (*p < 0x80) {
            if (!set_has(s->set, *p++)) {
                return false;
            }
            continue;
        }
        w = u8_mbtoucr(&uc, p, (size_t)(e - p));
        for (size_t i = 0; w > 0 && i < s->nranges && !in_class; i++) {
            in_class = uc >= s->lo[i] && uc <= s->hi[i];
        }
        if (!in_class) {
            return false;
        }
        p += w;
    }
    return true;
}

/* strip-prefix: in without the step's prefix when it starts with it. */
static void do_prefix(const step_t *s, const char *in, size_t n, wbuf_t *out)
{
    if (n >= s->prefix_len && memcmp(in, s->prefix, s->prefix_len) == 0) {
        in += s->prefix_len;
        n -= s->prefix_len;
    }
    memcpy(out->p, in, n);
    out->len = n;
}

/* casefold and unaccent: libunistring from in (valid UTF-8) into out. */
static suspect_rc_t do_unicode(const step_t *s, const char *in, size_t n,
                               wbuf_t *out)
{
    size_t len = out->cap;
    uint8_t *r;

    if (s->kind == ST_CASEFOLD) {
        r = u8_casefold((const uint8_t *)in, n, NULL, NULL, (uint8_t *)out->p,
                        &len);
    } else {
        r = u8_normalize(UNINORM_NFD, (const uint8_t *)in, n, (uint8_t *)out->p,
                         &len);
    }
    if (r == NULL) {
        return SUSPECT_E_NOMEM;
    }
    wb_adopt(out, r, len);
    if (s->kind == ST_UNACCENT) {
        out->len = keep_category(out->p, out->len, UC_CATEGORY_M, false, NULL);
        out->len = unaccent_latin(out->p, out->len);
    }
    return SUSPECT_OK;
}

/* remove-accents from in into out. */
static suspect_rc_t do_accents(const char *in, size_t n, wbuf_t *out)
{
    char *r = NULL;
    size_t len = 0;
    suspect_rc_t rc = mw_norm_remove_accents(in, n, &r, &len);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (r == NULL) {
        memcpy(out->p, in, n);
        out->len = n;
        return SUSPECT_OK;
    }
    wb_adopt(out, (uint8_t *)r, len);
    return SUSPECT_OK;
}

/* collate from in into out (the key may be longer than the value). */
static suspect_rc_t do_collate(const step_t *s, const char *in, size_t n,
                               wbuf_t *out)
{
    char *r = NULL;
    size_t len = 0;
    suspect_rc_t rc = mw_norm_collate_key(s->coll, in, n, &r, &len);

    if (rc == SUSPECT_OK) {
        wb_adopt(out, (uint8_t *)r, len);
    }
    return rc;
}

/* aliases from in into out: the canonical name, or in itself. */
static suspect_rc_t do_alias(const step_t *s, const char *in, size_t n,
                             wbuf_t *out)
{
    char *r = NULL;
    size_t len = 0;
    suspect_rc_t rc = mw_alias_lookup(s->alias, in, n, &r, &len);

    if (rc == SUSPECT_OK && r != NULL) {
        wb_adopt(out, (uint8_t *)r, len);
    } else if (rc == SUSPECT_OK) {
        memcpy(out->p, in, n);
        out->len = n;
    }
    return rc;
}

/* One step from in[0..n) into out (in never points into out). */
static suspect_rc_t run_step(const step_t *s, const char *in, size_t n,
                             wbuf_t *out, wbuf_t *tmp)
{
    suspect_rc_t rc;
    bool ascii;

    rc = wb_reserve(out, s->kind == ST_MAP ? n * s->grow + 1 : n + 1);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    switch (s->kind) {
    case ST_TRIM:
    case ST_LTRIM:
    case ST_RTRIM:
        do_trim(s, in, n, out);
        return SUSPECT_OK;
    case ST_STRIP:
    case ST_COLLAPSE:
    case ST_LOWER:
        do_bytes(s, in, n, out);
        return SUSPECT_OK;
    case ST_MAP:
        do_map(s, in, n, out);
        return SUSPECT_OK;
    case ST_ENTITIES:
        return mw_norm_html_decode(in, n, out->p, &out->len);
    case ST_PREFIX:
        do_prefix(s, in, n, out);
        return SUSPECT_OK;
    case ST_TAGS:
        return mw_norm_strip_tags(in, n, out->p, &out->len);
    case ST_UTF8:
        out->len = utf8_clean(in, n, out->p);
        return SUSPECT_OK;
    case ST_SCRIPTS:
    case ST_OCTETS:
    case ST_ENTREFS:
        mw_norm_strip_matches(s->kind, in, n, out->p, &out->len);
        return SUSPECT_OK;
    case ST_NUMBER:
        mw_norm_number(in, n, out->p, &out->len);
        return SUSPECT_OK;
    case ST_ACCENTS:
        return do_accents(in, n, out);
    case ST_COLLATE:
        return do_collate(s, in, n, out);
    case ST_ALIAS:
        return do_alias(s, in, n, out);
    case ST_ONLY:
        if (!only_fits(s, in, n)) {
            return SUSPECT_E_INVAL;
        }
        memcpy(out->p, in, n);
        out->len = n;
        return SUSPECT_OK;
    default:
        break;
    }
    ascii = all_ascii(in, n);
    if (s->kind == ST_ALNUM) {
        out->len = utf8_clean(in, n, out->p);
        out->len = keep_category(
            out->p, out->len,
            uc_general_category_or(
                UC_CATEGORY_L,
                uc_general_category_or(UC_CATEGORY_N, UC_CATEGORY_M)),
            true, s->set);
        return SUSPECT_OK;
    }
    if (ascii) {
        /* ASCII folds to its lower case, has no marks to drop and no
         * letter of the Latin table. */
        if (s->kind == ST_CASEFOLD) {
            do_bytes(s, in, n, out);
        } else {
            memcpy(out->p, in, n);
            out->len = n;
        }
        return SUSPECT_OK;
    }
    if (u8_check((const uint8_t *)in, n) != NULL) {
        rc = wb_reserve(tmp, n + 1);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        tmp->len = utf8_clean(in, n, tmp->p);
        in = tmp->p;
        n = tmp->len;
    }
    return do_unicode(s, in, n, out);
}

/* Applies n to in: see normalize.h. */
suspect_rc_t mw_norm_apply(const mw_norm_t *n, const char *in, size_t len,
                           char *buf, size_t size, const char **out,
                           size_t *out_len, char **heap)
{
    return mw_norm_apply_steps(n, n != NULL ? n->nsteps : 0, in, len, buf, size,
                               out, out_len, heap);
}

/* The first nsteps steps: see normalize_internal.h. */
suspect_rc_t mw_norm_apply_steps(const mw_norm_t *n, size_t nsteps,
                                 const char *in, size_t len, char *buf,
                                 size_t size, const char **out, size_t *out_len,
                                 char **heap)
{
    char stack[3][WORK_STACK];
    wbuf_t w[3] = {{stack[0], 0, WORK_STACK, NULL},
                   {stack[1], 0, WORK_STACK, NULL},
                   {stack[2], 0, WORK_STACK, NULL}};
    const char *cur = in;
    size_t cur_len = len;
    suspect_rc_t rc = SUSPECT_OK;
    int next = 0;

    *heap = NULL;
    for (size_t i = 0; n != NULL && i < nsteps && rc == SUSPECT_OK; i++) {
        rc = run_step(&n->step[i], cur, cur_len, &w[next], &w[2]);
        cur = w[next].p;
        cur_len = w[next].len;
        next ^= 1;
    }
    if (rc == SUSPECT_OK && cur_len <= size) {
        memcpy(buf, cur, cur_len);
        *out = buf;
    } else if (rc == SUSPECT_OK) {
        /* The last result is on the heap when it is longer than the
         * caller's buffer, or copy it there. */
        wbuf_t *last = &w[next ^ 1];
        if (last->heap != NULL && last->p == last->heap) {
            *heap = last->heap;
            last->heap = NULL;
        } else {
            *heap = suspect_malloc(cur_len);
            if (*heap != NULL) {
                memcpy(*heap, cur, cur_len);
            }
        }
        rc = *heap != NULL ? SUSPECT_OK : SUSPECT_E_NOMEM;
        *out = *heap;
    }
    *out_len = rc == SUSPECT_OK ? cur_len : 0;
    for (int i = 0; i < 3; i++) {
        free(w[i].heap);
    }
    return rc;
}

/* The white space of Python's str.strip() beyond ASCII, in UTF-8:
 * U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
 * U+205F, U+3000 (Perl's \s on decoded text takes the same). */
static const char *const uni_spaces[] = {
    "\xc2\x85",     "\xc2\xa0",     "\xe1\x9a\x80", "\xe2\x80\x80",
    "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84",
    "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88",
    "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8", "\xe2\x80\xa9",
    "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};

/* True for the bytes trimmed one by one: NUL, ASCII white space, and
 * 0x1C..0x1F (Python's str.isspace() takes them). */
static bool trim_byte(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == '\0' ||
           (c >= 0x1c && c <= 0x1f);
}

/* The length of the white space [p, e) starts (from_end: ends) with. */
static size_t space_len(const char *p, const char *e, bool from_end)
{
    if (p == e) {
        return 0;
    }
    if (trim_byte(from_end ? e[-1] : *p)) {
        return 1;
    }
    for (size_t i = 0; i < sizeof(uni_spaces) / sizeof(uni_spaces[0]); i++) {
        size_t n = strlen(uni_spaces[i]);
        if ((size_t)(e - p) >= n &&
            memcmp(from_end ? e - n : p, uni_spaces[i], n) == 0) {
            return n;
        }
    }
    return 0;
}

/* The default reading: see normalize.h. */
void mw_norm_trim_default(const char **val, size_t *len)
{
    const char *p = *val;
    const char *e = p + *len;
    size_t n;

    while ((n = space_len(p, e, false)) > 0) {
        p += n;
    }
    while ((n = space_len(p, e, true)) > 0) {
        e -= n;
    }
    *val = p;
    *len = (size_t)(e - p);
}
