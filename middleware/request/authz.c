/*
 * authz.c - the user of an Authorization header (authz.h).
 *
 * Decoding is PHP's non-strict base64_decode(): each byte of the
 * alphabet adds 6 bits, '=' and every other byte are skipped wherever
 * they are, and only whole bytes come out.  The user is what precedes the
 * first ':' of the decoded text.  Linear in the header's length; no
 * allocation.
 */
#include "authz.h"

#include <string.h>
#include <strings.h>

/* The 6-bit value of base64 byte c, or -1. */
static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+') {
        return 62;
    }
    return c == '/' ? 63 : -1;
}

/* Decodes s[0..n) leniently into buf (room for n bytes); the length. */
static size_t b64_decode(const char *s, size_t n, char *buf)
{
    unsigned acc = 0;
    unsigned bits = 0;
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) {
            continue;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[k++] = (char)((acc >> bits) & 0xff);
        }
    }
    return k;
}

/* The user of an Authorization value: see authz.h. */
suspect_rc_t mw_authz_user(const char *hdr, size_t len, bool any, char *buf,
                           size_t size, size_t *out_len)
{
    const char *colon;
    size_t n;

    if (hdr == NULL || len < 6 || (!any && strncasecmp(hdr, "basic ", 6))) {
        return SUSPECT_E_NOTFOUND;
    }
    if (size < len - 6) {
        *out_len = len - 6;
        return SUSPECT_E_FULL;
    }
    n = b64_decode(hdr + 6, len - 6, buf);
    colon = memchr(buf, ':', n);
    if (colon == NULL && !any) {
        return SUSPECT_E_NOTFOUND;
    }
    *out_len = colon != NULL ? (size_t)(colon - buf) : n;
    return SUSPECT_OK;
}
