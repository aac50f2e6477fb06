/*
 * normalize.c - the normaliser of normalize.h: compiling a step list,
 * applying it to a value.
 *
 * Compiling: the text is split on blanks; each token is a preset (its
 * steps appended in its place) or a step, "name" or "name:ARG".  ARG is
 * bytes with escapes (\s space, \t \n \r \v \f \0, \xHH, and '\' before
 * any other byte for that byte, so "\," and "\=" are literal in a map).
 * Byte sets become a 256-bit table; a map's pairs are decoded into the
 * normaliser's pool, so applying never parses.
 *
 * Applying: the steps run in order, each from the previous result into
 * one of two work buffers (stack first, heap when a result outgrows it).
 * Byte steps are one linear pass.  Unicode steps take an ASCII fast path
 * when every byte is below 0x80 (folding ASCII lowercases it; NFKD and
 * mark removal leave it alone), else libunistring: u8_casefold() (full
 * case folding, "ß" -> "ss"), u8_normalize(UNINORM_NFKD) then the marks
 * (general category M) dropped, so "á" -> "a" and "ﬁ" -> "fi".
 *
 * Invariants: a compiled normaliser never changes (shared by threads);
 * apply's buffers are freed before it returns, except the result handed
 * to the caller in *heap.
 */
#include "normalize.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

#include "alloc.h"

#define MAP_MAX_PAIRS 64
/* Bytes of each work buffer on apply's stack. */
#define WORK_STACK 512

typedef enum step_kind {
    ST_TRIM,
    ST_LTRIM,
    ST_RTRIM,
    ST_STRIP,
    ST_COLLAPSE,
    ST_LOWER,
    ST_CASEFOLD,
    ST_UNACCENT,
    ST_ALNUM,
    ST_MAP
} step_kind_t;

typedef struct map_pair {
    const char *from;
    size_t from_len;
    const char *to;
    size_t to_len;
} map_pair_t;

typedef struct step {
    step_kind_t kind;
    uint8_t set[32]; /* trim, strip, collapse: the bytes */
    char first;      /* collapse: what a run becomes */
    size_t npairs;   /* map */
    map_pair_t *pairs;
    size_t grow;      /* map: the longest to, at least 1 (output bound) */
    const char *text; /* as written, for mw_norm_describe() */
} step_t;

struct mw_norm {
    size_t nsteps;
    step_t step[MW_NORM_MAX_STEPS];
    char *pool; /* texts and decoded arguments */
    size_t pool_used, pool_size;
    map_pair_t *pairs; /* every map's pairs */
    size_t npairs;
};

/* The bytes PHP's trim() removes by default. */
static const char php_trim_set[] = " \t\n\r\v";

/* ---- compiling ---------------------------------------------------------- */

typedef struct preset {
    const char *name;
    const char *steps;
} preset_t;

static const preset_t presets[] = {
    {"none", ""},
    {"php-trim", "trim"},
    {"login", "trim casefold"},
    {"email", "trim casefold"},
};

typedef struct step_def {
    const char *name;
    step_kind_t kind;
    int arg; /* 0 none, 1 optional set, 2 required set, 3 map */
} step_def_t;

static const step_def_t step_defs[] = {
    {"trim", ST_TRIM, 1},
    {"ltrim", ST_LTRIM, 1},
    {"rtrim", ST_RTRIM, 1},
    {"strip", ST_STRIP, 2},
    {"strip-controls", ST_STRIP, 0},
    {"collapse", ST_COLLAPSE, 2},
    {"lower", ST_LOWER, 0},
    {"casefold", ST_CASEFOLD, 0},
    {"unaccent", ST_UNACCENT, 0},
    {"alnum", ST_ALNUM, 0},
    {"map", ST_MAP, 3},
};

static void set_add(uint8_t set[32], unsigned char c)
{
    set[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static bool set_has(const uint8_t set[32], unsigned char c)
{
    return (set[c >> 3] & (1u << (c & 7))) != 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Decodes one byte of an argument at *p (before e), escapes included;
 * *escaped tells whether it was.  -1 for a bad escape. */
static int arg_byte(const char **p, const char *e, bool *escaped)
{
    const char *s = *p;
    static const char from[] = "stnrvf0";
    static const char to[] = " \t\n\r\v\f";
    const char *k;

    *escaped = false;
    if (*s != '\\') {
        *p = s + 1;
        return (unsigned char)*s;
    }
    *escaped = true;
    if (e - s < 2) {
        return -1;
    }
    if (s[1] == 'x') {
        if (e - s < 4 || hex_digit(s[2]) < 0 || hex_digit(s[3]) < 0) {
            return -1;
        }
        *p = s + 4;
        return hex_digit(s[2]) * 16 + hex_digit(s[3]);
    }
    *p = s + 2;
    k = strchr(from, s[1]);
    if (k != NULL && s[1] != '\0') {
        return k - from < 6 ? (unsigned char)to[k - from] : 0;
    }
    return (unsigned char)s[1];
}

static suspect_rc_t bad(suspect_err_t *err, const char *tok, size_t len,
                        const char *why)
{
    return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0, "step '%.*s' %s",
                           (int)(len > 60 ? 60 : len), tok, why);
}

/* The argument [p, e) as a byte set. */
static suspect_rc_t parse_set(const char *p, const char *e, uint8_t set[32],
                              const char *tok, size_t len, suspect_err_t *err)
{
    bool esc;

    memset(set, 0, 32);
    while (p < e) {
        int c = arg_byte(&p, e, &esc);
        if (c < 0) {
            return bad(err, tok, len,
                       "has a bad escape (\\s \\t \\n \\r "
                       "\\v \\f \\0 \\xHH)");
        }
        set_add(set, (unsigned char)c);
    }
    return SUSPECT_OK;
}

/* Room for n bytes in the pool. */
static char *pool_take(mw_norm_t *n, size_t len)
{
    char *p;

    if (n->pool_size - n->pool_used < len) {
        return NULL;
    }
    p = n->pool + n->pool_used;
    n->pool_used += len;
    return p;
}

/* Decodes [*p, e) up to an unescaped byte of delims into the pool. */
static suspect_rc_t map_part(mw_norm_t *n, const char **p, const char *e,
                             const char *delims, const char **out,
                             size_t *out_len)
{
    char *dst = n->pool + n->pool_used;
    size_t k = 0;
    bool esc;

    while (*p < e) {
        const char *save = *p;
        int c = arg_byte(p, e, &esc);
        if (c < 0) {
            return SUSPECT_E_INVAL;
        }
        if (!esc && strchr(delims, c) != NULL) {
            *p = save;
            break;
        }
        dst[k++] = (char)c;
    }
    *out = pool_take(n, k);
    *out_len = k;
    return *out != NULL ? SUSPECT_OK : SUSPECT_E_FULL;
}

/* map:FROM=TO,FROM=TO into s. */
static suspect_rc_t parse_map(mw_norm_t *n, step_t *s, const char *p,
                              const char *e, const char *tok, size_t len,
                              suspect_err_t *err)
{
    s->pairs = &n->pairs[n->npairs];
    s->grow = 1;
    while (p < e) {
        map_pair_t *mp = &n->pairs[n->npairs];
        if (n->npairs == MAP_MAX_PAIRS) {
            return bad(err, tok, len, "has too many pairs");
        }
        if (map_part(n, &p, e, "=,", &mp->from, &mp->from_len) != SUSPECT_OK ||
            p == e || *p != '=' || mp->from_len == 0) {
            return bad(err, tok, len,
                       "must be map:FROM=TO,FROM=TO (FROM not empty; "
                       "\\, and \\= for the bytes themselves)");
        }
        p++;
        if (map_part(n, &p, e, ",", &mp->to, &mp->to_len) != SUSPECT_OK) {
            return bad(err, tok, len, "has a bad escape");
        }
        if (p < e) {
            p++; /* the ',' */
        }
        s->grow = mp->to_len > s->grow ? mp->to_len : s->grow;
        n->npairs++;
        s->npairs++;
    }
    return s->npairs > 0 ? SUSPECT_OK
                         : bad(err, tok, len, "needs FROM=TO pairs");
}

/* The step of token [tok, tok + len) into a new slot of n. */
static suspect_rc_t parse_step(mw_norm_t *n, const char *tok, size_t len,
                               suspect_err_t *err)
{
    const char *colon = memchr(tok, ':', len);
    size_t nlen = colon != NULL ? (size_t)(colon - tok) : len;
    const char *arg = colon != NULL ? colon + 1 : NULL;
    const char *e = tok + len;
    const step_def_t *d = NULL;
    step_t *s;
    char *text;

    for (size_t i = 0; i < sizeof(step_defs) / sizeof(step_defs[0]); i++) {
        if (strlen(step_defs[i].name) == nlen &&
            memcmp(step_defs[i].name, tok, nlen) == 0) {
            d = &step_defs[i];
        }
    }
    if (d == NULL) {
        return bad(err, tok, len, "is unknown");
    }
    if (n->nsteps == MW_NORM_MAX_STEPS) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "more than %d steps", MW_NORM_MAX_STEPS);
    }
    if (arg != NULL && (d->arg == 0 || arg == e)) {
        return bad(err, tok, len,
                   d->arg == 0 ? "takes no argument" : "has an empty argument");
    }
    if (arg == NULL && d->arg >= 2) {
        return bad(err, tok, len, "needs an argument (name:CHARS)");
    }
    s = &n->step[n->nsteps];
    memset(s, 0, sizeof(*s));
    s->kind = d->kind;
    text = pool_take(n, len + 1);
    if (text == NULL) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0, "too long");
    }
    memcpy(text, tok, len);
    text[len] = '\0';
    s->text = text;
    if (d->arg == 3) {
        suspect_rc_t rc = parse_map(n, s, arg, e, tok, len, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    } else if (arg != NULL) {
        bool esc;
        const char *q = arg;
        suspect_rc_t rc = parse_set(arg, e, s->set, tok, len, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        s->first = (char)arg_byte(&q, e, &esc);
    } else if (d->kind == ST_STRIP) {
        for (unsigned c = 0; c < 0x20; c++) {
            set_add(s->set, (unsigned char)c);
        }
        set_add(s->set, 0x7f);
    } else {
        for (const char *c = php_trim_set; *c != '\0'; c++) {
            set_add(s->set, (unsigned char)*c);
        }
        set_add(s->set, '\0');
    }
    n->nsteps++;
    return SUSPECT_OK;
}

/* Next blank-separated token of [*p, e), or false. */
static bool next_tok(const char **p, const char *e, const char **tok,
                     size_t *len)
{
    const char *s = *p;

    while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
        s++;
    }
    if (s == e) {
        return false;
    }
    *tok = s;
    while (s < e && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') {
        s++;
    }
    *len = (size_t)(s - *tok);
    *p = s;
    return true;
}

/* Compiles [p, e); depth 0 allows presets. */
static suspect_rc_t parse_list(mw_norm_t *n, const char *p, const char *e,
                               int depth, suspect_err_t *err)
{
    const char *tok;
    size_t len;

    while (next_tok(&p, e, &tok, &len)) {
        const preset_t *pre = NULL;
        suspect_rc_t rc;

        for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
            if (strlen(presets[i].name) == len &&
                memcmp(presets[i].name, tok, len) == 0) {
                pre = &presets[i];
            }
        }
        rc = pre != NULL && depth == 0
                 ? parse_list(n, pre->steps, pre->steps + strlen(pre->steps), 1,
                              err)
                 : parse_step(n, tok, len, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    return SUSPECT_OK;
}

/* Compiles a normalize text: see normalize.h. */
suspect_rc_t mw_norm_compile(const char *spec, size_t len, mw_norm_t **out,
                             suspect_err_t *err)
{
    mw_norm_t *n;
    suspect_rc_t rc;

    if (spec == NULL || out == NULL || len > MW_NORM_MAX_TEXT) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "longer than %d bytes", MW_NORM_MAX_TEXT);
    }
    n = suspect_calloc(1, sizeof(*n));
    if (n != NULL) {
        /* Texts (the whole spec plus presets) and decoded arguments. */
        n->pool_size = 2 * len + 512;
        n->pool = suspect_malloc(n->pool_size);
        n->pairs = suspect_calloc(MAP_MAX_PAIRS, sizeof(*n->pairs));
    }
    if (n == NULL || n->pool == NULL || n->pairs == NULL) {
        mw_norm_free(n);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    rc = parse_list(n, spec, spec + len, 0, err);
    if (rc != SUSPECT_OK) {
        mw_norm_free(n);
        return rc;
    }
    *out = n;
    return SUSPECT_OK;
}

void mw_norm_free(mw_norm_t *n)
{
    if (n != NULL) {
        free(n->pool);
        free(n->pairs);
        free(n);
    }
}

/* The steps as text: see normalize.h. */
void mw_norm_describe(const mw_norm_t *n, char *buf, size_t size)
{
    size_t used = 0;

    if (size == 0) {
        return;
    }
    buf[0] = '\0';
    for (size_t i = 0; n != NULL && i < n->nsteps && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i > 0 ? " " : "",
                         n->step[i].text);
        used += w > 0 ? (size_t)w : 0;
    }
    if (n == NULL || n->nsteps == 0) {
        snprintf(buf, size, "none");
    }
}

/* ---- applying ----------------------------------------------------------- */

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

/* Copies the valid UTF-8 of s[0..n) into d (room for n), dropping the
 * bytes that are not. */
static size_t utf8_clean(const char *s, size_t n, char *d)
{
    const uint8_t *p = (const uint8_t *)s;
    const uint8_t *e = p + n;
    size_t k = 0;

    while (p < e) {
        ucs4_t uc;
        int w = u8_mbtoucr(&uc, p, (size_t)(e - p));
        if (w <= 0) {
            p++;
            continue;
        }
        memcpy(d + k, p, (size_t)w);
        k += (size_t)w;
        p += w;
    }
    return k;
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

/* Keeps the code points of s[0..n) (valid UTF-8) whose category is in
 * cat, in place; returns the new length. */
static size_t keep_category(char *s, size_t n, uc_general_category_t cat,
                            bool keep)
{
    const uint8_t *p = (const uint8_t *)s;
    const uint8_t *e = p + n;
    size_t k = 0;

    while (p < e) {
        ucs4_t uc;
        int w = u8_mbtoucr(&uc, p, (size_t)(e - p));
        if (w <= 0) {
            p++;
            continue;
        }
        if (uc_is_general_category(uc, cat) == keep) {
            memmove(s + k, p, (size_t)w);
            k += (size_t)w;
        }
        p += w;
    }
    return k;
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
        r = u8_normalize(UNINORM_NFKD, (const uint8_t *)in, n,
                         (uint8_t *)out->p, &len);
    }
    if (r == NULL) {
        return SUSPECT_E_NOMEM;
    }
    wb_adopt(out, r, len);
    if (s->kind == ST_UNACCENT) {
        out->len = keep_category(out->p, out->len, UC_CATEGORY_M, false);
    }
    return SUSPECT_OK;
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
            true);
        return SUSPECT_OK;
    }
    if (ascii) {
        /* ASCII folds to its lower case and has no marks to drop. */
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
    char stack[3][WORK_STACK];
    wbuf_t w[3] = {{stack[0], 0, WORK_STACK, NULL},
                   {stack[1], 0, WORK_STACK, NULL},
                   {stack[2], 0, WORK_STACK, NULL}};
    const char *cur = in;
    size_t cur_len = len;
    suspect_rc_t rc = SUSPECT_OK;
    int next = 0;

    *heap = NULL;
    for (size_t i = 0; n != NULL && i < n->nsteps && rc == SUSPECT_OK; i++) {
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

/* The default reading: see normalize.h. */
void mw_norm_trim_default(const char **val, size_t *len)
{
    const char *p = *val;
    const char *e = p + *len;

    while (p < e &&
           (*p == '\0' || strchr(php_trim_set, *p) != NULL || *p == '\f')) {
        p++;
    }
    while (e > p && (e[-1] == '\0' || strchr(php_trim_set, e[-1]) != NULL ||
                     e[-1] == '\f')) {
        e--;
    }
    *val = p;
    *len = (size_t)(e - p);
}
