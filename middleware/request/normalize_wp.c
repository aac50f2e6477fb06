/*
 * normalize_wp.c - the byte steps of WordPress's sanitize_user() that
 * strip-tags and trim do not cover, and Request Tracker's numeric names.
 *
 * WordPress reads a login name through sanitize_user() (wp-includes/
 * formatting.php), twice on the way to the database (wp_authenticate(),
 * then WP_User::get_data_by()):
 *
 *   wp_strip_all_tags():  preg_replace('@<(script|style)[^>]*?>.*?</\1>@si',
 *                         '', $v), strip_tags(), trim()
 *   remove_accents()
 *   preg_replace('|%([a-fA-F0-9][a-fA-F0-9])|', '', $v)
 *   preg_replace('/&.+?;/', '', $v)
 *   trim(), preg_replace('|\s+|', ' ', $v)
 *
 * so "al%41ice", "al&x;ice" and "al<script>x</script>ice" are alice.  The
 * three regular expressions are the steps here, each one left-to-right
 * pass that deletes non-overlapping matches as preg_replace() does (what
 * a deletion brings together is not looked at again: "%%4141" leaves
 * "%41"):
 *   - strip-scripts: '<', "script" or "style" in any case, up to the
 *     first '>', then up to the first "</" + the same name + '>' (any
 *     case); without that closing tag nothing is deleted there;
 *   - strip-octets: '%' and two hex digits;
 *   - strip-entities: '&', at least one byte other than '\n' (';'
 *     included), up to the first ';' after it; with a '\n' before that
 *     ';' nothing is deleted there.
 * remove-accents is remove_accents() (for a site in a locale without
 * letters of its own: not de_*, da_DK, ca, sr_RS, bs_BA): a value with a
 * byte past ASCII is put in NFC (as remove_accents() does where PHP has
 * the intl extension; without it NFD stays apart there, an over-count
 * here), then each character of WordPress's table is replaced (the table
 * below is that of WordPress 6.1, Debian 12: "ß" -> "s", "Æ" -> "AE",
 * "€" -> "E", "£" -> nothing).  A value that is not UTF-8, which
 * remove_accents() reads as ISO-8859-1, is refused.
 * The number step: a value of ASCII digits only loses its leading zeros
 * ("0027" is "27", "000" is "0"), as Request Tracker loads an all-digit
 * name as the numeric id of a user (RT::User->Load).
 *
 * Cost: one pass each; the output is never longer than the input.
 */
#include "normalize_internal.h"

#include <stdlib.h>
#include <string.h>
#include <uninorm.h>
#include <unistr.h>

#include "alloc.h"

/* remove_accents()'s table: a character (NFC) and what it becomes,
 * sorted by code point. */
static const struct accent {
    uint32_t uc;
    const char *to;
} accents[] = {
    {0x00a3, ""},   {0x00aa, "a"},  {0x00ba, "o"}, {0x00c0, "A"},
    {0x00c1, "A"},  {0x00c2, "A"},  {0x00c3, "A"}, {0x00c4, "A"},
    {0x00c5, "A"},  {0x00c6, "AE"}, {0x00c7, "C"}, {0x00c8, "E"},
    {0x00c9, "E"},  {0x00ca, "E"},  {0x00cb, "E"}, {0x00cc, "I"},
    {0x00cd, "I"},  {0x00ce, "I"},  {0x00cf, "I"}, {0x00d0, "D"},
    {0x00d1, "N"},  {0x00d2, "O"},  {0x00d3, "O"}, {0x00d4, "O"},
    {0x00d5, "O"},  {0x00d6, "O"},  {0x00d8, "O"}, {0x00d9, "U"},
    {0x00da, "U"},  {0x00db, "U"},  {0x00dc, "U"}, {0x00dd, "Y"},
    {0x00de, "TH"}, {0x00df, "s"},  {0x00e0, "a"}, {0x00e1, "a"},
    {0x00e2, "a"},  {0x00e3, "a"},  {0x00e4, "a"}, {0x00e5, "a"},
    {0x00e6, "ae"}, {0x00e7, "c"},  {0x00e8, "e"}, {0x00e9, "e"},
    {0x00ea, "e"},  {0x00eb, "e"},  {0x00ec, "i"}, {0x00ed, "i"},
    {0x00ee, "i"},  {0x00ef, "i"},  {0x00f0, "d"}, {0x00f1, "n"},
    {0x00f2, "o"},  {0x00f3, "o"},  {0x00f4, "o"}, {0x00f5, "o"},
    {0x00f6, "o"},  {0x00f8, "o"},  {0x00f9, "u"}, {0x00fa, "u"},
    {0x00fb, "u"},  {0x00fc, "u"},  {0x00fd, "y"}, {0x00fe, "th"},
    {0x00ff, "y"},  {0x0100, "A"},  {0x0101, "a"}, {0x0102, "A"},
    {0x0103, "a"},  {0x0104, "A"},  {0x0105, "a"}, {0x0106, "C"},
    {0x0107, "c"},  {0x0108, "C"},  {0x0109, "c"}, {0x010a, "C"},
    {0x010b, "c"},  {0x010c, "C"},  {0x010d, "c"}, {0x010e, "D"},
    {0x010f, "d"},  {0x0110, "D"},  {0x0111, "d"}, {0x0112, "E"},
    {0x0113, "e"},  {0x0114, "E"},  {0x0115, "e"}, {0x0116, "E"},
    {0x0117, "e"},  {0x0118, "E"},  {0x0119, "e"}, {0x011a, "E"},
    {0x011b, "e"},  {0x011c, "G"},  {0x011d, "g"}, {0x011e, "G"},
    {0x011f, "g"},  {0x0120, "G"},  {0x0121, "g"}, {0x0122, "G"},
    {0x0123, "g"},  {0x0124, "H"},  {0x0125, "h"}, {0x0126, "H"},
    {0x0127, "h"},  {0x0128, "I"},  {0x0129, "i"}, {0x012a, "I"},
    {0x012b, "i"},  {0x012c, "I"},  {0x012d, "i"}, {0x012e, "I"},
    {0x012f, "i"},  {0x0130, "I"},  {0x0131, "i"}, {0x0132, "IJ"},
    {0x0133, "ij"}, {0x0134, "J"},  {0x0135, "j"}, {0x0136, "K"},
    {0x0137, "k"},  {0x0138, "k"},  {0x0139, "L"}, {0x013a, "l"},
    {0x013b, "L"},  {0x013c, "l"},  {0x013d, "L"}, {0x013e, "l"},
    {0x013f, "L"},  {0x0140, "l"},  {0x0141, "L"}, {0x0142, "l"},
    {0x0143, "N"},  {0x0144, "n"},  {0x0145, "N"}, {0x0146, "n"},
    {0x0147, "N"},  {0x0148, "n"},  {0x0149, "n"}, {0x014a, "N"},
    {0x014b, "n"},  {0x014c, "O"},  {0x014d, "o"}, {0x014e, "O"},
    {0x014f, "o"},  {0x0150, "O"},  {0x0151, "o"}, {0x0152, "OE"},
    {0x0153, "oe"}, {0x0154, "R"},  {0x0155, "r"}, {0x0156, "R"},
    {0x0157, "r"},  {0x0158, "R"},  {0x0159, "r"}, {0x015a, "S"},
    {0x015b, "s"},  {0x015c, "S"},  {0x015d, "s"}, {0x015e, "S"},
    {0x015f, "s"},  {0x0160, "S"},  {0x0161, "s"}, {0x0162, "T"},
    {0x0163, "t"},  {0x0164, "T"},  {0x0165, "t"}, {0x0166, "T"},
    {0x0167, "t"},  {0x0168, "U"},  {0x0169, "u"}, {0x016a, "U"},
    {0x016b, "u"},  {0x016c, "U"},  {0x016d, "u"}, {0x016e, "U"},
    {0x016f, "u"},  {0x0170, "U"},  {0x0171, "u"}, {0x0172, "U"},
    {0x0173, "u"},  {0x0174, "W"},  {0x0175, "w"}, {0x0176, "Y"},
    {0x0177, "y"},  {0x0178, "Y"},  {0x0179, "Z"}, {0x017a, "z"},
    {0x017b, "Z"},  {0x017c, "z"},  {0x017d, "Z"}, {0x017e, "z"},
    {0x017f, "s"},  {0x01a0, "O"},  {0x01a1, "o"}, {0x01af, "U"},
    {0x01b0, "u"},  {0x01cd, "A"},  {0x01ce, "a"}, {0x01cf, "I"},
    {0x01d0, "i"},  {0x01d1, "O"},  {0x01d2, "o"}, {0x01d3, "U"},
    {0x01d4, "u"},  {0x01d5, "U"},  {0x01d6, "u"}, {0x01d7, "U"},
    {0x01d8, "u"},  {0x01d9, "U"},  {0x01da, "u"}, {0x01db, "U"},
    {0x01dc, "u"},  {0x0218, "S"},  {0x0219, "s"}, {0x021a, "T"},
    {0x021b, "t"},  {0x0251, "a"},  {0x1ea0, "A"}, {0x1ea1, "a"},
    {0x1ea2, "A"},  {0x1ea3, "a"},  {0x1ea4, "A"}, {0x1ea5, "a"},
    {0x1ea6, "A"},  {0x1ea7, "a"},  {0x1ea8, "A"}, {0x1ea9, "a"},
    {0x1eaa, "A"},  {0x1eab, "a"},  {0x1eac, "A"}, {0x1ead, "a"},
    {0x1eae, "A"},  {0x1eaf, "a"},  {0x1eb0, "A"}, {0x1eb1, "a"},
    {0x1eb2, "A"},  {0x1eb3, "a"},  {0x1eb4, "A"}, {0x1eb5, "a"},
    {0x1eb6, "A"},  {0x1eb7, "a"},  {0x1eb8, "E"}, {0x1eb9, "e"},
    {0x1eba, "E"},  {0x1ebb, "e"},  {0x1ebc, "E"}, {0x1ebd, "e"},
    {0x1ebe, "E"},  {0x1ebf, "e"},  {0x1ec0, "E"}, {0x1ec1, "e"},
    {0x1ec2, "E"},  {0x1ec3, "e"},  {0x1ec4, "E"}, {0x1ec5, "e"},
    {0x1ec6, "E"},  {0x1ec7, "e"},  {0x1ec8, "I"}, {0x1ec9, "i"},
    {0x1eca, "I"},  {0x1ecb, "i"},  {0x1ecc, "O"}, {0x1ecd, "o"},
    {0x1ece, "O"},  {0x1ecf, "o"},  {0x1ed0, "O"}, {0x1ed1, "o"},
    {0x1ed2, "O"},  {0x1ed3, "o"},  {0x1ed4, "O"}, {0x1ed5, "o"},
    {0x1ed6, "O"},  {0x1ed7, "o"},  {0x1ed8, "O"}, {0x1ed9, "o"},
    {0x1eda, "O"},  {0x1edb, "o"},  {0x1edc, "O"}, {0x1edd, "o"},
    {0x1ede, "O"},  {0x1edf, "o"},  {0x1ee0, "O"}, {0x1ee1, "o"},
    {0x1ee2, "O"},  {0x1ee3, "o"},  {0x1ee4, "U"}, {0x1ee5, "u"},
    {0x1ee6, "U"},  {0x1ee7, "u"},  {0x1ee8, "U"}, {0x1ee9, "u"},
    {0x1eea, "U"},  {0x1eeb, "u"},  {0x1eec, "U"}, {0x1eed, "u"},
    {0x1eee, "U"},  {0x1eef, "u"},  {0x1ef0, "U"}, {0x1ef1, "u"},
    {0x1ef2, "Y"},  {0x1ef3, "y"},  {0x1ef4, "Y"}, {0x1ef5, "y"},
    {0x1ef6, "Y"},  {0x1ef7, "y"},  {0x1ef8, "Y"}, {0x1ef9, "y"},
    {0x20ac, "E"},
};

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Whether in[i..n) starts with word in any ASCII case. */
static bool starts_ci(const char *in, size_t i, size_t n, const char *word)
{
    size_t k = strlen(word);

    if (n - i < k) {
        return false;
    }
    for (size_t j = 0; j < k; j++) {
        unsigned char c = (unsigned char)in[i + j];
        if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)word[j]) {
            return false;
        }
    }
    return true;
}

/* The end (one past) of a script or style element that starts at in[i]
 * (a '<'), or 0 when none does there. */
static size_t script_end(const char *in, size_t i, size_t n)
{
    static const char *const names[] = {"script", "style"};

    for (size_t k = 0; k < 2; k++) {
        size_t len = strlen(names[k]);
        const char *gt;

        if (!starts_ci(in, i + 1, n, names[k])) {
            continue;
        }
        gt = memchr(in + i + 1 + len, '>', n - i - 1 - len);
        for (size_t j = gt != NULL ? (size_t)(gt - in) + 1 : n;
             j + 3 + len <= n; j++) {
            if (in[j] == '<' && in[j + 1] == '/' &&
                starts_ci(in, j + 2, n, names[k]) && in[j + 2 + len] == '>') {
                return j + 3 + len;
            }
        }
    }
    return 0;
}

/* The end (one past) of a match of '&.+?;' at in[i] (a '&'), or 0. */
static size_t entity_end(const char *in, size_t i, size_t n)
{
    for (size_t j = i + 1; j < n && in[j] != '\n'; j++) {
        if (j >= i + 2 && in[j] == ';') {
            return j + 1;
        }
    }
    return 0;
}

/* The end of a match of the step's expression at in[i], or 0. */
static size_t match_end(step_kind_t kind, const char *in, size_t i, size_t n)
{
    switch (kind) {
    case ST_SCRIPTS:
        return in[i] == '<' ? script_end(in, i, n) : 0;
    case ST_OCTETS:
        return in[i] == '%' && n - i >= 3 && is_hex((unsigned char)in[i + 1]) &&
                       is_hex((unsigned char)in[i + 2])
                   ? i + 3
                   : 0;
    default: /* ST_ENTREFS */
        return in[i] == '&' ? entity_end(in, i, n) : 0;
    }
}

/* strip-scripts, strip-octets, strip-entities: see the file comment. */
void mw_norm_strip_matches(step_kind_t kind, const char *in, size_t n,
                           char *out, size_t *out_len)
{
    size_t k = 0;
    size_t i = 0;

    while (i < n) {
        size_t end = match_end(kind, in, i, n);
        if (end > 0) {
            i = end;
        } else {
            out[k++] = in[i++];
        }
    }
    *out_len = k;
}

/* The number step: see the file comment. */
void mw_norm_number(const char *in, size_t n, char *out, size_t *out_len)
{
    size_t i = 0;
    bool digits = n > 0;

    for (size_t j = 0; j < n && digits; j++) {
        digits = in[j] >= '0' && in[j] <= '9';
    }
    while (digits && i + 1 < n && in[i] == '0') {
        i++;
    }
    memcpy(out, in + i, n - i);
    *out_len = n - i;
}

/* The replacement of uc in accents[], or NULL. */
static const char *accent_find(uint32_t uc)
{
    size_t lo = 0;
    size_t hi = sizeof(accents) / sizeof(accents[0]);

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (accents[mid].uc == uc) {
            return accents[mid].to;
        }
        if (accents[mid].uc < uc) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* The remove-accents step: see the file comment.  *out receives a new
 * heap block (the caller frees it) or NULL when in[0..n) is ASCII and
 * stays as it is. */
suspect_rc_t mw_norm_remove_accents(const char *in, size_t n, char **out,
                                    size_t *out_len)
{
    const uint8_t *p;
    const uint8_t *e;
    uint8_t *nfc;
    size_t len = 0;
    size_t k = 0;
    bool ascii = true;

    *out = NULL;
    for (size_t i = 0; i < n && ascii; i++) {
        ascii = (unsigned char)in[i] < 0x80;
    }
    if (ascii) {
        return SUSPECT_OK;
    }
    if (u8_check((const uint8_t *)in, n) != NULL) {
        return SUSPECT_E_INVAL;
    }
    nfc = u8_normalize(UNINORM_NFC, (const uint8_t *)in, n, NULL, &len);
    if (nfc == NULL) {
        return SUSPECT_E_NOMEM;
    }
    /* Every replacement is shorter than its character: in place. */
    for (p = nfc, e = nfc + len; p < e;) {
        ucs4_t uc;
        int w = u8_mbtoucr(&uc, p, (size_t)(e - p));
        const char *to = accent_find(uc);
        if (to != NULL) {
            memcpy(nfc + k, to, strlen(to));
            k += strlen(to);
        } else {
            memmove(nfc + k, p, (size_t)w);
            k += (size_t)w;
        }
        p += w;
    }
    *out = (char *)nfc;
    *out_len = k;
    return SUSPECT_OK;
}
