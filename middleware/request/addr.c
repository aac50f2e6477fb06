/*
 * addr.c - addresses, trusted proxy blocks and the client address
 * behind X-Forwarded-For and Forwarded (lookup.h).
 *
 * Client address: the forwarded header is scanned once, left to right,
 * keeping the last MW_HOPS_MAX hops in a ring (each either an address or
 * "stop"); the walk from the right then runs over the ring.  A hop that
 * falls out of the ring is treated as a stop, so a long header costs no
 * more than a short one and the walk is bounded.  Nothing allocates.
 */
#include "lookup.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lookup_internal.h"

#define ADDR_TEXT_IN 64 /* longest address text we parse (with zone) */

static const uint8_t v4_mapped_head[12] = {0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff};

/* Parses an address: see lookup.h. */
suspect_rc_t mw_addr_parse(const char *s, size_t len, mw_addr_t *out)
{
    char text[ADDR_TEXT_IN];
    char *zone;

    if (s == NULL || out == NULL || len == 0 || len >= sizeof(text)) {
        return SUSPECT_E_INVAL;
    }
    memcpy(text, s, len);
    text[len] = '\0';
    if (memchr(text, '\0', len) != NULL) {
        return SUSPECT_E_INVAL;
    }
    memset(out, 0, sizeof(*out));
    if (strchr(text, ':') == NULL) {
        out->family = MW_AF_V4;
        return inet_pton(AF_INET, text, out->bytes) == 1 ? SUSPECT_OK
                                                         : SUSPECT_E_INVAL;
    }
    zone = strchr(text, '%');
    if (zone != NULL) {
        if (zone[1] == '\0') {
            return SUSPECT_E_INVAL;
        }
        *zone = '\0';
    }
    if (inet_pton(AF_INET6, text, out->bytes) != 1) {
        return SUSPECT_E_INVAL;
    }
    out->family = MW_AF_V6;
    if (memcmp(out->bytes, v4_mapped_head, sizeof(v4_mapped_head)) == 0) {
        memmove(out->bytes, out->bytes + 12, 4);
        memset(out->bytes + 4, 0, 12);
        out->family = MW_AF_V4;
    }
    return SUSPECT_OK;
}

static unsigned family_bits(int family)
{
    return family == MW_AF_V4 ? 32 : 128;
}

/* Zeroes the bits of a after the first prefix bits. */
static void addr_mask(mw_addr_t *a, unsigned prefix)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;
        if (keep < 8) {
            a->bytes[i] &= (uint8_t)(0xff00u >> keep);
        }
    }
}

static bool addr_eq(const mw_addr_t *a, const mw_addr_t *b)
{
    return a->family == b->family && memcmp(a->bytes, b->bytes, 16) == 0;
}

/* Parses the digits of a prefix length; -1 when not 1..3 digits. */
static int parse_prefix(const char *p, const char *e)
{
    int v = 0;

    if (e - p < 1 || e - p > 3) {
        return -1;
    }
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        v = v * 10 + (*p - '0');
    }
    return v;
}

#define CIDR_ERR(fmt, ...)                                                     \
    suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,                            \
                    "address block \"%.*s\": " fmt, (int)shown, s,             \
                    __VA_ARGS__)

/* Parses a block: see lookup.h. */
suspect_rc_t mw_cidr_parse(const char *s, size_t len, mw_cidr_t *out,
                           suspect_err_t *err)
{
    size_t shown = len > 80 ? 80 : len;
    const char *slash = s != NULL ? memchr(s, '/', len) : NULL;
    size_t alen = slash != NULL ? (size_t)(slash - s) : len;
    int prefix;
    bool mapped;
    mw_cidr_t c;

    if (s == NULL || out == NULL || len == 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "address block: empty");
    }
    if (mw_addr_parse(s, alen, &c.addr) != SUSPECT_OK) {
        return CIDR_ERR("%s", "not an IPv4 or IPv6 address");
    }
    /* A block written as ::ffff:a.b.c.d/N counts its prefix over 128 bits. */
    mapped = c.addr.family == MW_AF_V4 && memchr(s, ':', alen) != NULL;
    prefix = (int)family_bits(mapped ? MW_AF_V6 : c.addr.family);
    if (slash != NULL) {
        prefix = parse_prefix(slash + 1, s + len);
        if (prefix < 0) {
            return CIDR_ERR("%s", "the prefix length after '/' is not a "
                                  "number");
        }
    }
    if ((unsigned)prefix > family_bits(mapped ? MW_AF_V6 : c.addr.family)) {
        return CIDR_ERR("prefix length %d is longer than the address (%u)",
                        prefix, family_bits(mapped ? 6 : c.addr.family));
    }
    if (mapped && prefix < 96) {
        return CIDR_ERR("%s", "an IPv4-mapped block needs a prefix of at "
                              "least 96");
    }
    c.prefix = (unsigned)(mapped ? prefix - 96 : prefix);
    *out = c;
    addr_mask(&out->addr, out->prefix);
    if (!addr_eq(&out->addr, &c.addr)) {
        return CIDR_ERR("bits are set after the prefix /%d", prefix);
    }
    return SUSPECT_OK;
}

/* True when a lies in c. */
bool mw_cidr_contains(const mw_cidr_t *c, const mw_addr_t *a)
{
    mw_addr_t m;

    if (c->addr.family != a->family) {
        return false;
    }
    m = *a;
    addr_mask(&m, c->prefix);
    return addr_eq(&m, &c->addr);
}

static bool is_list_sep(char c)
{
    return c == ',' || is_blank(c) || c == '\n' || c == '\r';
}

/* Adds the blocks of a list: see lookup.h. */
suspect_rc_t mw_trust_parse(mw_trust_t *t, const char *list, size_t len,
                            suspect_err_t *err)
{
    const char *p = list;
    const char *end;

    if (t == NULL || (list == NULL && len > 0)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "trusted proxies: no list");
    }
    if (list == NULL) {
        return SUSPECT_OK;
    }
    end = list + len;
    while (p < end) {
        const char *q = p;
        suspect_rc_t rc;

        while (q < end && !is_list_sep(*q)) {
            q++;
        }
        if (q > p) {
            if (t->n == MW_TRUST_MAX) {
                return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                                       "trusted proxies: more than %d blocks",
                                       MW_TRUST_MAX);
            }
            rc = mw_cidr_parse(p, (size_t)(q - p), &t->cidr[t->n], err);
            if (rc != SUSPECT_OK) {
                return rc;
            }
            t->n++;
        }
        p = q < end ? q + 1 : end;
    }
    return SUSPECT_OK;
}

/* True when a lies in one of t's blocks. */
bool mw_trust_contains(const mw_trust_t *t, const mw_addr_t *a)
{
    if (t == NULL) {
        return false;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (mw_cidr_contains(&t->cidr[i], a)) {
            return true;
        }
    }
    return false;
}

/* ---- forwarded hops ----------------------------------------------------- */

/* The last MW_HOPS_MAX hops of a header; ok false = stop the walk there. */
typedef struct hops {
    size_t n; /* hops seen in total */
    struct {
        bool ok;
        mw_addr_t addr;
    } h[MW_HOPS_MAX];
} hops_t;

static void hops_push(hops_t *hp, bool ok, const mw_addr_t *a)
{
    size_t i = hp->n % MW_HOPS_MAX;

    hp->h[i].ok = ok;
    if (ok) {
        hp->h[i].addr = *a;
    }
    hp->n++;
}

/* True for a port: 1-5 digits, or an obfuscated "_id" (RFC 7239). */
static bool is_port(const char *p, const char *e)
{
    bool obf = p < e && *p == '_';

    if (e - p < 1 || (!obf && e - p > 5)) {
        return false;
    }
    for (const char *q = p + obf; q < e; q++) {
        bool digit = *q >= '0' && *q <= '9';
        bool idch = digit || (*q >= 'A' && *q <= 'Z') ||
                    (*q >= 'a' && *q <= 'z') || *q == '.' || *q == '-' ||
                    *q == '_';
        if (obf ? !idch : !digit) {
            return false;
        }
    }
    return true;
}

/*
 * Parses one node: "a.b.c.d", "a.b.c.d:port", "[v6]", "[v6]:port" or a
 * bare "v6".  "unknown", "_obfuscated" and garbage are not addresses.
 */
static bool parse_node(span_t s, mw_addr_t *out)
{
    const char *colon;

    s = trim(s.p, s.e);
    if (span_len(s) > 0 && s.p[0] == '[') {
        const char *close = memchr(s.p, ']', span_len(s));
        if (close == NULL || (close + 1 < s.e &&
                              (close[1] != ':' || !is_port(close + 2, s.e)))) {
            return false;
        }
        return mw_addr_parse(s.p + 1, (size_t)(close - s.p - 1), out) ==
                   SUSPECT_OK &&
               memchr(s.p, '%', span_len(s)) == NULL;
    }
    colon = memchr(s.p, ':', span_len(s));
    if (colon != NULL &&
        memchr(colon + 1, ':', (size_t)(s.e - colon - 1)) == NULL) {
        /* exactly one ':' - an IPv4 address and a port */
        return is_port(colon + 1, s.e) &&
               mw_addr_parse(s.p, (size_t)(colon - s.p), out) == SUSPECT_OK;
    }
    return span_len(s) > 0 && memchr(s.p, '%', span_len(s)) == NULL &&
           mw_addr_parse(s.p, span_len(s), out) == SUSPECT_OK;
}

static void scan_xff(const char *p, const char *end, hops_t *hp)
{
    while (p < end) {
        const char *q = memchr(p, ',', (size_t)(end - p));
        const char *e = q != NULL ? q : end;
        mw_addr_t a;
        span_t s = {p, e};
        bool ok = parse_node(s, &a);

        hops_push(hp, ok, &a);
        p = q != NULL ? q + 1 : end;
    }
}

/* The end of the field at p: the next sep outside a quoted string, or e. */
static const char *field_end(const char *p, const char *e, char sep)
{
    bool quoted = false;

    for (; p < e; p++) {
        if (quoted && *p == '\\' && p + 1 < e) {
            p++;
        } else if (*p == '"') {
            quoted = !quoted;
        } else if (!quoted && *p == sep) {
            break;
        }
    }
    return p;
}

/* Unquotes a quoted-string value into buf; false when it does not fit. */
static bool unquote(span_t v, char *buf, size_t size, span_t *out)
{
    size_t n = 0;

    if (span_len(v) < 2 || v.p[0] != '"' || v.e[-1] != '"') {
        *out = v;
        return v.p[0] != '"';
    }
    for (const char *p = v.p + 1; p < v.e - 1; p++) {
        if (*p == '\\' && p + 1 < v.e - 1) {
            p++;
        }
        if (n == size) {
            return false;
        }
        buf[n++] = *p;
    }
    out->p = buf;
    out->e = buf + n;
    return true;
}

/* Parses one Forwarded element: exactly one for= holding an address. */
static bool parse_element(const char *p, const char *e, mw_addr_t *out)
{
    char text[ADDR_TEXT_IN];
    int found = 0;

    while (p < e) {
        const char *pe = field_end(p, e, ';');
        const char *eq = memchr(p, '=', (size_t)(pe - p));

        if (eq != NULL) {
            span_t key = trim(p, eq);
            span_t val = trim(eq + 1, pe);
            if (span_len(key) == 3 && strncasecmp(key.p, "for", 3) == 0) {
                if (found++ > 0 || span_len(val) == 0 ||
                    !unquote(val, text, sizeof(text), &val) ||
                    !parse_node(val, out)) {
                    return false;
                }
            }
        }
        p = pe < e ? pe + 1 : e;
    }
    return found == 1;
}

static void scan_forwarded(const char *p, const char *end, hops_t *hp)
{
    while (p < end) {
        const char *e = field_end(p, end, ',');
        mw_addr_t a;
        bool ok = parse_element(p, e, &a);

        hops_push(hp, ok, &a);
        p = e < end ? e + 1 : end;
    }
}

static bool is_present(const char *s, size_t len)
{
    span_t t;

    if (s == NULL) {
        return false;
    }
    t = trim(s, s + len);
    return span_len(t) > 0;
}

/* The client address: see lookup.h. */
suspect_rc_t mw_client_addr(const mw_client_src_t *src, mw_addr_t *out)
{
    hops_t hp;
    mw_addr_t cur;
    size_t stop;

    if (src == NULL || out == NULL ||
        mw_addr_parse(src->remote, src->remote_len, &cur) != SUSPECT_OK) {
        return SUSPECT_E_INVAL;
    }
    hp.n = 0;
    if (mw_trust_contains(src->trust, &cur)) {
        if (is_present(src->forwarded, src->forwarded_len)) {
            scan_forwarded(src->forwarded, src->forwarded + src->forwarded_len,
                           &hp);
        } else if (is_present(src->xff, src->xff_len)) {
            scan_xff(src->xff, src->xff + src->xff_len, &hp);
        }
    }
    stop = hp.n > MW_HOPS_MAX ? hp.n - MW_HOPS_MAX : 0;
    for (size_t i = hp.n; i > stop && mw_trust_contains(src->trust, &cur);
         i--) {
        size_t at = (i - 1) % MW_HOPS_MAX;
        if (!hp.h[at].ok) {
            break;
        }
        cur = hp.h[at].addr;
    }
    *out = cur;
    return SUSPECT_OK;
}

/* The identity text of an address: see lookup.h. */
suspect_rc_t mw_addr_identity(const mw_addr_t *a, unsigned v4_prefix,
                              unsigned v6_prefix, char *buf, size_t *len)
{
    mw_addr_t m;
    unsigned prefix;
    unsigned full;
    size_t n;

    if (a == NULL || buf == NULL || len == NULL ||
        (a->family != MW_AF_V4 && a->family != MW_AF_V6)) {
        return SUSPECT_E_INVAL;
    }
    full = family_bits(a->family);
    prefix = a->family == MW_AF_V4 ? (v4_prefix != 0 ? v4_prefix : 32)
                                   : (v6_prefix != 0 ? v6_prefix : 64);
    if (prefix > full) {
        return SUSPECT_E_INVAL;
    }
    m = *a;
    addr_mask(&m, prefix);
    if (inet_ntop(a->family == MW_AF_V4 ? AF_INET : AF_INET6, m.bytes, buf,
                  MW_ADDR_TEXT_MAX) == NULL) {
        return SUSPECT_E_INVAL;
    }
    n = strlen(buf);
    if (prefix < full) {
        n += (size_t)snprintf(buf + n, MW_ADDR_TEXT_MAX - n, "/%u", prefix);
    }
    *len = n;
    return SUSPECT_OK;
}
