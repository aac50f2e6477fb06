/*
 * normalize_html.c - the html-entities step of the normaliser
 * (normalize.h): character references decoded as MediaWiki's
 * Sanitizer::decodeCharReferences() reads a user name.
 *
 * Algorithm: one pass.  At each '&':
 *   - "&#" decimal digits ";" and "&#x" (or "&#X") hex digits ";" become
 *     the character, or U+FFFD when it is not one HTML allows (controls
 *     but tab, LF and CR; surrogates; U+FFFE, U+FFFF; past U+10FFFF);
 *   - "&" NAME ";", NAME one or more bytes of [A-Za-z0-9] or >= 0x80,
 *     becomes the character libxml2's table of the HTML 4 entities
 *     (htmlEntityLookup(), case-sensitive) gives; a NAME it does not know
 *     refuses the whole value (SUSPECT_E_INVAL): HTML 5 defines some two
 *     thousand names and MediaWiki decodes them (and two of its own), so
 *     an unknown name may be a character the application removes
 *     ("&ZeroWidthSpace;"), and the value cannot be counted as it reads
 *     it;
 *   - anything else (a lone '&', no ';') is kept as it came.
 * Each reference is decoded once: the output is not scanned again
 * ("&amp;lrm;" is "&lrm;"), as the application does.
 *
 * The table is libxml2's: this file is a loading part (suspect-cgi,
 * which links no XML parser, goes without it: see normalize.h).
 *
 * Invariants: pure; writes at most n bytes (a reference is never shorter
 * than the UTF-8 of its character: "&lt;" is 4 bytes for 1, "&#9;" 4 for
 * at most 3, a 4-byte character needs "&#65536;").
 */
#include "normalize.h"

#include <libxml/HTMLparser.h>
#include <string.h>
#include <unistr.h>

#include "text.h"

/* Longest entity name looked up (HTML 4's longest is 8 bytes). */
#define NAME_MAX_BYTES 32

static bool name_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c >= 0x80;
}

static int digit(char c, bool hex)
{
    if (hex) {
        return hex_value(c);
    }
    return c >= '0' && c <= '9' ? c - '0' : -1;
}

/* A character HTML allows in a reference (MediaWiki's
 * Sanitizer::validateCodepoint()). */
static bool valid_char(uint32_t c)
{
    return c == 0x09 || c == 0x0a || c == 0x0d || (c >= 0x20 && c <= 0xd7ff) ||
           (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

/* The numeric reference at p ("&#", before e): its length, and its
 * character in *uc; 0 when there is none. */
static size_t numeric_ref(const char *p, const char *e, ucs4_t *uc)
{
    const char *s = p + 2;
    bool hex = s < e && (*s == 'x' || *s == 'X');
    uint32_t v = 0;
    bool big = false;
    const char *digits;

    s += hex ? 1 : 0;
    digits = s;
    while (s < e && digit(*s, hex) >= 0) {
        if (v > 0x10ffff) {
            big = true; /* PHP's intval() saturates: never a character */
        } else {
            v = v * (hex ? 16 : 10) + (uint32_t)digit(*s, hex);
        }
        s++;
    }
    if (s == digits || s == e || *s != ';') {
        return 0;
    }
    *uc = !big && valid_char(v) ? v : 0xfffd;
    return (size_t)(s + 1 - p);
}

/* The named reference at p ('&', before e): its length, 0 when there is
 * none; *uc its character, or 0 when the table does not know it. */
static size_t named_ref(const char *p, const char *e, ucs4_t *uc)
{
    const char *s = p + 1;
    char name[NAME_MAX_BYTES + 1];
    const htmlEntityDesc *d;
    size_t len;

    while (s < e && name_byte((unsigned char)*s)) {
        s++;
    }
    if (s == p + 1 || s == e || *s != ';') {
        return 0;
    }
    len = (size_t)(s - p - 1);
    *uc = 0;
    if (len <= NAME_MAX_BYTES) {
        memcpy(name, p + 1, len);
        name[len] = '\0';
        d = htmlEntityLookup((const xmlChar *)name);
        *uc = d != NULL ? d->value : 0;
    }
    return len + 2;
}

/* The html-entities step: see the file comment and normalize_internal.h. */
suspect_rc_t mw_norm_html_decode(const char *in, size_t n, char *out,
                                 size_t *out_len)
{
    const char *p = in;
    const char *e = in + n;
    size_t k = 0;

    while (p < e) {
        ucs4_t uc = 0;
        size_t ref = 0;

        if (*p == '&' && e - p > 2) {
            ref = p[1] == '#' ? numeric_ref(p, e, &uc) : named_ref(p, e, &uc);
        }
        if (ref == 0) {
            out[k++] = *p++;
            continue;
        }
        if (uc == 0) {
            return SUSPECT_E_INVAL;
        }
        k += (size_t)u8_uctomb((uint8_t *)out + k, uc, 4);
        p += ref;
    }
    *out_len = k;
    return SUSPECT_OK;
}
