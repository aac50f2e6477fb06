/*
 * normalize_collate.c - the collate step: a value as a database compares
 * it, so that every spelling the database calls equal is one counter.
 *
 * WordPress finds a login with "WHERE user_login = %s" on a column in
 * utf8mb4_unicode_520_ci: the database ignores case, accents, width
 * (fullwidth "ａｌｉｃｅ"), compatibility forms (circled letters, "ﬁ"),
 * ignorable code points (zero-width and direction marks) and trailing
 * spaces.  The step writes the value's primary-strength sort key from
 * ICU's root collator (the Unicode Collation Algorithm): two values have
 * the same key exactly when ICU calls them equal, so equality under the
 * collation is equality of keys, with no hand-made table.  The key is
 * written in hex (lowercase, two characters a byte), so it stays text in
 * every store and in suspectctl's output.
 *
 * ICU 72 implements UCA 15.0; MySQL and MariaDB keep older tables:
 *   mysql-unicode-ci      utf8mb4_unicode_ci      UCA 4.0.0, PAD SPACE;
 *                         characters past U+FFFF all weigh as U+FFFD
 *   mysql-unicode-520-ci  utf8mb4_unicode_520_ci  UCA 5.2.0, PAD SPACE
 *   mariadb-uca1400-ai-ci utf8mb4_uca1400_ai_ci   UCA 14.0.0, PAD SPACE
 *   mysql-0900-ai-ci      utf8mb4_0900_ai_ci      UCA 9.0.0, NO PAD
 * What each preset does before ICU's key closes the gaps that would go
 * the wrong way (two values the database calls equal must never be two
 * counters): trailing characters that weigh as a space or nothing
 * dropped for PAD SPACE collations, the few characters an old table
 * weighs as ICU does not rewritten (fixes[] below: two it ignores, the
 * Georgian capitals and four Bengali signs UCA 4.0.0 weighs as other
 * letters and digits), and for
 * the UCA 4.0.0 one every character past U+FFFF made U+FFFD.  The gaps
 * left go the other way: characters the old table does not know (it
 * gives each an implicit weight of its own) ICU may weigh as a letter,
 * and weights ICU's newer table merges, so some values the database
 * tells apart share a counter here (an over-count).  The suite checks
 * the direction against a real MariaDB over every code point of the
 * Basic Multilingual Plane and a few thousand mixed values
 * (tests/request/test_normalize_collate.c).
 *
 * A value that is not UTF-8 is refused (SUSPECT_E_INVAL): the database
 * refuses it or turns its bytes into '?', by its sql_mode.
 *
 * Linked like html-entities (normalize.h): the normaliser refers to this
 * file weakly, the programs that load suspect.xml link it.  ICU's
 * collator is shared by the threads that apply a normaliser: sort keys
 * are read-only use of it (ICU's thread-safety guide: const methods).
 */
#include "normalize_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unicode/ucol.h>
#include <unicode/ustring.h>

#include "alloc.h"

typedef struct coll_def {
    const char *name;
    bool pad_space; /* trailing spaces are not compared */
    bool bmp_only;  /* past U+FFFF weighs as U+FFFD */
    unsigned uca;   /* the UCA version of the table: 400, 520, ... */
} coll_def_t;

static const coll_def_t coll_defs[] = {
    {"mysql-unicode-ci", true, true, 400},
    {"mysql-unicode-520-ci", true, false, 520},
    {"mariadb-uca1400-ai-ci", true, false, 1400},
    {"mysql-0900-ai-ci", false, false, 900},
};

/* Characters an old table weighs as ICU's does not, found by the suite
 * over every code point of the BMP: lo..hi become to.. (to 0: dropped,
 * the old table ignores them) for the tables up to version uca. */
static const struct fix {
    UChar lo, hi, to;
    unsigned uca;
} fixes[] = {
    {0x06de, 0x06de, 0, 520},      /* ARABIC START OF RUB EL HIZB */
    {0x108d, 0x108d, 0, 520},      /* MYANMAR SIGN SHAN COUNCIL EMPHATIC */
    {0x09f4, 0x09f7, 0x0031, 400}, /* BENGALI CURRENCY NUMERATOR 1-4 */
    {0x10a0, 0x10c5, 0x10d0, 400}, /* GEORGIAN CAPITAL (Asomtavruli) */
};

/* c as the table of def weighs it (see fixes[]): a character, or 0. */
static UChar fix_char(const coll_def_t *def, UChar c)
{
    for (size_t i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++) {
        if (c >= fixes[i].lo && c <= fixes[i].hi && def->uca <= fixes[i].uca) {
            return fixes[i].to == 0 ? 0
                                    : (UChar)(fixes[i].to + c - fixes[i].lo);
        }
    }
    return c;
}

typedef struct mw_coll {
    UCollator *ucol;
    const coll_def_t *def;
    uint8_t space[8]; /* the sort key of " " */
    int32_t space_len;
} mw_coll_t;

/* Opens the collator of name[0..len): see normalize_internal.h. */
suspect_rc_t mw_norm_collate_open(const char *name, size_t len, void **out)
{
    const coll_def_t *def = NULL;
    UErrorCode st = U_ZERO_ERROR;
    mw_coll_t *c;

    for (size_t i = 0; i < sizeof(coll_defs) / sizeof(coll_defs[0]); i++) {
        if (strlen(coll_defs[i].name) == len &&
            memcmp(coll_defs[i].name, name, len) == 0) {
            def = &coll_defs[i];
        }
    }
    if (def == NULL) {
        return SUSPECT_E_NOTFOUND;
    }
    c = suspect_calloc(1, sizeof(*c));
    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    c->def = def;
    c->ucol = ucol_open("", &st);
    if (U_SUCCESS(st)) {
        ucol_setAttribute(c->ucol, UCOL_STRENGTH, UCOL_PRIMARY, &st);
        ucol_setAttribute(c->ucol, UCOL_ALTERNATE_HANDLING, UCOL_NON_IGNORABLE,
                          &st);
        ucol_setAttribute(c->ucol, UCOL_NORMALIZATION_MODE, UCOL_ON, &st);
    }
    if (U_SUCCESS(st)) {
        static const UChar sp = 0x20;
        c->space_len =
            ucol_getSortKey(c->ucol, &sp, 1, c->space, sizeof(c->space));
    }
    if (U_FAILURE(st) || c->space_len <= 0 ||
        c->space_len > (int32_t)sizeof(c->space)) {
        mw_norm_collate_close(c);
        return SUSPECT_E_NOMEM;
    }
    *out = c;
    return SUSPECT_OK;
}

void mw_norm_collate_close(void *coll)
{
    mw_coll_t *c = coll;

    if (c != NULL) {
        if (c->ucol != NULL) {
            ucol_close(c->ucol);
        }
        free(c);
    }
}

/* Whether the last character of u[0..n) (n > 0) weighs as a space or
 * nothing; *w receives its length in UTF-16 units. */
static bool space_at_end(const mw_coll_t *c, const UChar *u, int32_t n,
                         int32_t *w)
{
    uint8_t key[64];
    int32_t len;

    *w = n > 1 && U16_IS_TRAIL(u[n - 1]) && U16_IS_LEAD(u[n - 2]) ? 2 : 1;
    len = ucol_getSortKey(c->ucol, u + n - *w, *w, key, sizeof(key));
    return len == 1 ||
           (len == c->space_len && memcmp(key, c->space, (size_t)len) == 0);
}

/* What the collation does before weighing, on u[0..*n) (UTF-16): see the
 * file comment.  PAD SPACE: the database pads the shorter value with
 * spaces, so a value ending in characters that weigh as a space (U+00A0,
 * U+3000, ...) or nothing equals it without them. */
static void prepare(const mw_coll_t *c, UChar *u, int32_t *n)
{
    const coll_def_t *def = c->def;
    int32_t w;
    int32_t k = 0;

    for (int32_t i = 0; i < *n; i++) {
        UChar f;
        if (U16_IS_LEAD(u[i]) && i + 1 < *n && U16_IS_TRAIL(u[i + 1])) {
            if (def->bmp_only) {
                u[k++] = 0xfffd;
                i++;
            } else {
                u[k++] = u[i++];
                u[k++] = u[i];
            }
            continue;
        }
        f = def->uca < 900 ? fix_char(def, u[i]) : u[i];
        if (f != 0) {
            u[k++] = f;
        }
    }
    *n = k;
    while (def->pad_space && *n > 0 && space_at_end(c, u, *n, &w)) {
        *n -= w;
    }
}

/* The sort key of u[0..n) in a new heap block *key, *key_len bytes
 * without the final 0. */
static suspect_rc_t sort_key(const mw_coll_t *c, const UChar *u, int32_t n,
                             uint8_t **key, size_t *key_len)
{
    int32_t cap = 2 * n + 16;
    int32_t need;

    for (;;) {
        uint8_t *k = suspect_malloc((size_t)cap);
        if (k == NULL) {
            return SUSPECT_E_NOMEM;
        }
        need = ucol_getSortKey(c->ucol, u, n, k, cap);
        if (need > 0 && need <= cap) {
            *key = k;
            *key_len = (size_t)need - 1;
            return SUSPECT_OK;
        }
        free(k);
        if (need <= 0) {
            return SUSPECT_E_NOMEM;
        }
        cap = need;
    }
}

/* The collate step: see normalize_internal.h. */
suspect_rc_t mw_norm_collate_key(const void *coll, const char *in, size_t n,
                                 char **out, size_t *out_len)
{
    static const char hex[] = "0123456789abcdef";
    const mw_coll_t *c = coll;
    UErrorCode st = U_ZERO_ERROR;
    UChar *u;
    int32_t ulen = 0;
    uint8_t *key = NULL;
    size_t key_len = 0;
    suspect_rc_t rc;

    if (n > INT32_MAX / 2) {
        return SUSPECT_E_INVAL;
    }
    u = suspect_malloc((n + 1) * sizeof(UChar));
    if (u == NULL) {
        return SUSPECT_E_NOMEM;
    }
    u_strFromUTF8(u, (int32_t)n + 1, &ulen, in, (int32_t)n, &st);
    if (U_FAILURE(st)) {
        free(u);
        return SUSPECT_E_INVAL;
    }
    prepare(c, u, &ulen);
    rc = sort_key(c, u, ulen, &key, &key_len);
    free(u);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    *out = suspect_malloc(2 * key_len + 1);
    if (*out == NULL) {
        free(key);
        return SUSPECT_E_NOMEM;
    }
    for (size_t i = 0; i < key_len; i++) {
        (*out)[2 * i] = hex[key[i] >> 4];
        (*out)[2 * i + 1] = hex[key[i] & 15];
    }
    *out_len = 2 * key_len;
    free(key);
    return SUSPECT_OK;
}
