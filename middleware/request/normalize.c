/*
 * normalize.c - the normaliser of normalize.h: compiling a step list.
 *
 * Compiling: the text is split on blanks; each token is a preset (its
 * steps appended in its place) or a step, "name" or "name:ARG".  ARG is
 * bytes with escapes (\s space, \t \n \r \v \f \0, \xHH, and '\' before
 * any other byte for that byte, so "\," and "\=" are literal in a map).
 * Byte sets become a 256-bit table; a map's pairs and a prefix are
 * decoded into the normaliser's pool, so applying never parses.  An
 * only: class is characters (UTF-8) and ranges (a-z): its ASCII part a
 * table, the rest at most 8 ranges of code points.
 *
 * Applying is normalize_apply.c's.
 *
 * Invariants: a compiled normaliser never changes (shared by threads);
 * it owns its pool and pairs, freed by mw_norm_free().
 */
#include "normalize_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

#include "alloc.h"
#include "text.h"

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
    /* sanitize_user() as wp_authenticate() and WP_User::get_data_by()
     * each apply it (normalize_wp.c) */
    {"wordpress-user",
     "strip-scripts strip-tags trim remove-accents strip-octets strip-entities "
     "trim collapse:\\s\\t\\n\\v\\f\\r "
     "strip-scripts strip-tags trim remove-accents strip-octets strip-entities "
     "trim collapse:\\s\\t\\n\\v\\f\\r"},
};

typedef struct step_def {
    const char *name;
    step_kind_t kind;
    int arg; /* 0 none, 1 optional set, 2 required set, 3 map, 4 bytes,
                5 character class, 6 collation name, 7 path */
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
    {"alnum", ST_ALNUM, 1},
    {"map", ST_MAP, 3},
    {"html-entities", ST_ENTITIES, 0},
    {"strip-prefix", ST_PREFIX, 4},
    {"only", ST_ONLY, 5},
    {"strip-tags", ST_TAGS, 0},
    {"utf8-clean", ST_UTF8, 0},
    {"strip-scripts", ST_SCRIPTS, 0},
    {"strip-octets", ST_OCTETS, 0},
    {"strip-entities", ST_ENTREFS, 0},
    {"number", ST_NUMBER, 0},
    {"remove-accents", ST_ACCENTS, 0},
    {"collate", ST_COLLATE, 6},
    {"aliases", ST_ALIAS, 7},
};

static void set_add(uint8_t set[32], unsigned char c)
{
    set[c >> 3] |= (uint8_t)(1u << (c & 7));
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
        if (e - s < 4 || hex_value(s[2]) < 0 || hex_value(s[3]) < 0) {
            return -1;
        }
        *p = s + 4;
        return hex_value(s[2]) * 16 + hex_value(s[3]);
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

/* One character of an only: class at *p (before e): UTF-8, or an
 * escape for an ASCII byte.  -1 when it is neither. */
static int class_char(const char **p, const char *e, ucs4_t *cp)
{
    bool esc;
    int w;

    if (**p == '\\') {
        int c = arg_byte(p, e, &esc);
        *cp = (ucs4_t)c;
        return c >= 0 && c < 0x80 ? 0 : -1;
    }
    w = u8_mbtoucr(cp, (const uint8_t *)*p, (size_t)(e - *p));
    if (w <= 0) {
        return -1;
    }
    *p += w;
    return 0;
}

/* Adds lo..hi to the class of s: ASCII to its table, the rest as a
 * range.  false when the ranges are full. */
static bool class_add(step_t *s, ucs4_t lo, ucs4_t hi)
{
    for (ucs4_t c = lo; c <= hi && c < 0x80; c++) {
        set_add(s->set, (unsigned char)c);
    }
    if (hi < 0x80) {
        return true;
    }
    if (s->nranges == CLASS_MAX_RANGES) {
        return false;
    }
    s->lo[s->nranges] = lo < 0x80 ? 0x80 : lo;
    s->hi[s->nranges++] = hi;
    return true;
}

/* only:CLASS, characters and ranges (a-z0-9._@-: a '-' between two
 * characters makes a range, elsewhere it is itself), into s. */
static suspect_rc_t parse_class(step_t *s, const char *p, const char *e,
                                const char *tok, size_t len, suspect_err_t *err)
{
    while (p < e) {
        ucs4_t lo;
        ucs4_t hi;

        if (class_char(&p, e, &lo) != 0) {
            return bad(err, tok, len,
                       "has a character that is not UTF-8 or a bad escape "
                       "(\\xHH: ASCII only)");
        }
        hi = lo;
        if (e - p > 1 && *p == '-') {
            p++;
            if (class_char(&p, e, &hi) != 0 || hi < lo) {
                return bad(err, tok, len, "has a bad range (a-z)");
            }
        }
        if (!class_add(s, lo, hi)) {
            return bad(err, tok, len,
                       "has too many ranges past ASCII (at most 8)");
        }
    }
    return SUSPECT_OK;
}

/* collate:NAME: the collator of NAME into s. */
static suspect_rc_t parse_collation(step_t *s, const char *p, const char *e,
                                    const char *tok, size_t len,
                                    suspect_err_t *err)
{
    suspect_rc_t rc;

    if (mw_norm_collate_open == NULL) {
        return bad(err, tok, len,
                   "needs ICU's collation tables, which suspect-fcgi and "
                   "libsuspect-guard link (suspect-cgi does not: "
                   "docs/suspect-xml.md)");
    }
    rc = mw_norm_collate_open(p, (size_t)(e - p), &s->coll);
    if (rc == SUSPECT_E_NOTFOUND) {
        return bad(err, tok, len,
                   "names an unknown collation (mysql-unicode-ci, "
                   "mysql-unicode-520-ci, mariadb-uca1400-ai-ci, "
                   "mysql-0900-ai-ci)");
    }
    return rc == SUSPECT_OK ? SUSPECT_OK
                            : suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                              "cannot open ICU's collator");
}

/* The argument of s, [arg, e), as the kind of its step wants it. */
static suspect_rc_t parse_arg(mw_norm_t *n, step_t *s, const step_def_t *d,
                              const char *arg, const char *e, const char *tok,
                              size_t len, suspect_err_t *err)
{
    bool esc;
    const char *q = arg;
    suspect_rc_t rc;

    switch (d->arg) {
    case 3:
        return parse_map(n, s, arg, e, tok, len, err);
    case 4:
        if (map_part(n, &q, e, "", &s->prefix, &s->prefix_len) != SUSPECT_OK ||
            s->prefix_len == 0) {
            return bad(err, tok, len, "has a bad escape");
        }
        return SUSPECT_OK;
    case 5:
        return parse_class(s, arg, e, tok, len, err);
    case 6:
        return parse_collation(s, arg, e, tok, len, err);
    case 7:
        return SUSPECT_OK; /* opened once the list is whole */
    default:
        rc = parse_set(arg, e, s->set, tok, len, err);
        s->first = (char)arg_byte(&q, e, &esc);
        return rc;
    }
}

/* The step of token [tok, tok + len) into a new entry of n. */
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
    if (d->kind == ST_ENTITIES && mw_norm_html_decode == NULL) {
        return bad(err, tok, len,
                   "needs the HTML entity table that suspect-fcgi and "
                   "libsuspect-guard link (suspect-cgi links no XML parser)");
    }
    if (arg != NULL) {
        suspect_rc_t rc = parse_arg(n, s, d, arg, e, tok, len, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    } else if (d->kind == ST_STRIP) {
        for (unsigned c = 0; c < 0x20; c++) {
            set_add(s->set, (unsigned char)c);
        }
        set_add(s->set, 0x7f);
    } else if (d->kind == ST_TRIM || d->kind == ST_LTRIM ||
               d->kind == ST_RTRIM) {
        for (const char *c = MW_NORM_PHP_TRIM; *c != '\0'; c++) {
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

/* The aliases key function: a name read by the steps before the aliases
 * step (ctx: the normaliser). */
static suspect_rc_t alias_key(const void *ctx, const char *in, size_t n,
                              char **out, size_t *out_len)
{
    const mw_norm_t *norm = ctx;
    char buf[256];
    const char *o = NULL;
    char *heap = NULL;
    suspect_rc_t rc = mw_norm_apply_steps(norm, norm->nsteps - 1, in, n, buf,
                                          sizeof(buf), &o, out_len, &heap);

    if (rc != SUSPECT_OK || heap != NULL) {
        *out = heap;
        return rc;
    }
    *out = suspect_malloc(*out_len + 1);
    if (*out == NULL) {
        return SUSPECT_E_NOMEM;
    }
    memcpy(*out, o, *out_len);
    return SUSPECT_OK;
}

/* Opens the table of an aliases step, which must be the last and only
 * one. */
static suspect_rc_t open_aliases(mw_norm_t *n, suspect_err_t *err)
{
    for (size_t i = 0; i < n->nsteps; i++) {
        step_t *s = &n->step[i];
        if (s->kind != ST_ALIAS) {
            continue;
        }
        if (i + 1 != n->nsteps) {
            return bad(err, s->text, strlen(s->text),
                       "must be the last step (names are looked up after "
                       "the other steps)");
        }
        return mw_alias_open(s->text + 8, strlen(s->text + 8), alias_key, n,
                             (mw_alias_t **)&s->alias, err);
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
    if (rc == SUSPECT_OK) {
        rc = open_aliases(n, err);
    }
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
        for (size_t i = 0; i < MW_NORM_MAX_STEPS; i++) {
            if (n->step[i].coll != NULL) {
                mw_norm_collate_close(n->step[i].coll);
            }
            mw_alias_free(n->step[i].alias);
        }
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
