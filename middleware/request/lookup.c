/*
 * lookup.c - cookie, query, form and header lookups (lookup.h; the
 * client address is addr.c's).
 *
 * Everything here is a single left-to-right pass over its input, so the
 * work is linear in the input and no input can make it quadratic: a
 * Cookie header with thousands of pairs or a megabyte query string costs
 * one scan.  Nothing allocates; values go into caller buffers and a value
 * that does not fit is reported (SUSPECT_E_FULL) with its full length.
 *
 * Query and form: '&' separates parameters (WHATWG URL, PHP, Python >=
 * 3.9.2); ';' only with MW_PARAM_SEMICOLON, for apps using Perl's CGI.pm.
 * Parsing the way the protected app does matters: if the two disagree, a
 * client can send a value the app reads as the same member while Suspect
 * sees a new identity each time.  A parameter given twice is the same kind
 * of disagreement (PHP keeps the last, CGI.pm the first), hence
 * mw_param_match(), true when any occurrence matches, and
 * mw_param_ambiguous(), which finds occurrences that differ; both walk the
 * parameters once, comparing decoded bytes as they go, without a buffer.
 *
 * Parameter names are compared the way PHP files them, as well as byte
 * for byte: PHP cuts a decoded name at a NUL byte, drops its leading
 * spaces, turns ' ' and '.' into '_', and at the first '[' either ends
 * the name (a ']' follows: "name[...]" is an element of array "name") or
 * turns that '[' and every later ' ', '.' and '[' into '_'.  So "+op",
 * "op%00x" and "op[]" all reach PHP as "op", and "a.b" as "a_b".  Two
 * names are the same parameter here when they are equal, or when their
 * PHP forms are equal and not empty (PHP drops a parameter whose name
 * comes out empty).  For an app that is not PHP this only makes more
 * names the same, which is the safe side: a route condition matches more,
 * and differing copies are ambiguous (a 400) rather than counted as one
 * identity while the app reads another.  name_rd_t yields a name's PHP
 * form byte by byte; the one look-ahead (is there a ']' after the first
 * '['?) happens at most once per name, so the pass stays linear.
 *
 * Cookies: values are percent-decoded (%XX; '+' stays), as PHP decodes
 * them: "sid=%61bc" is the app's "abc", so it must be Suspect's too.
 * Cookie names are read five ways, because parsers disagree and a cookie
 * the app reads under the configured name must not hide behind another:
 * byte for byte (blanks around the name ignored, as RFC 6265 parsers do);
 * with any white space around it ignored (C's isspace(): space, tab, LF,
 * VT, FF, CR), as the regular expressions of Perl (\s) and Python's
 * http.cookies trim it ("member\v" is their "member"); as PHP 8 files them
 * (C white space before the name dropped, the name NOT decoded, then the
 * parameter-name rules above: "member.code", "member code" and
 * "member[code" all reach PHP as "member_code", trailing blank included:
 * "member_code " is PHP's "member_code_"); percent-decoded, '+' a space,
 * as Perl's CGI::Cookie reads them ("member%5Fcode"); and decoded, then
 * with white space around it ignored ("member%0B", for an application
 * that decodes and trims).  Every parser
 * keeps the FIRST cookie of a name, so the first pair named in any way is
 * the value; mw_cookie_ambiguous() tells when the first pair of one way
 * and the first of another differ ("member.code=victim;
 * member_code=decoy": PHP reads victim, a byte-for-byte parser decoy),
 * which the guard refuses like a repeated query parameter.  The same name
 * repeated ("sid=a; sid=b", cookies of two paths) is not ambiguous for
 * PHP and CGI.pm, which take the first (Python's http.cookies takes the
 * last: see docs/SECURITY.md).
 *
 * CGI::Cookie (Perl's CGI.pm) reads the header another way again, so it
 * has a lookup of its own, mw_cookie_find_cgi(): pairs split on ',' as
 * well as ';', names and values decoded with '+' a space, and a value
 * split into several at '&' ("member=m2&x" is its m2).  The guard counts
 * the value it finds as well as mw_cookie_find()'s.  CGI.pm's unescape()
 * also decodes "%uXXXX", which nothing here does: mw_has_u_escape() finds
 * such an escape, and the guard refuses the source that holds one.
 */
#include "lookup.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lookup_internal.h"
#include "text.h"

static bool span_eq(span_t s, const char *name, size_t name_len)
{
    return span_len(s) == name_len && memcmp(s.p, name, name_len) == 0;
}

static bool lookup_args_ok(const char *s, size_t s_len, const char *name,
                           size_t name_len, const char *buf, size_t size,
                           const size_t *len)
{
    return (s != NULL || s_len == 0) && name != NULL && name_len > 0 &&
           (buf != NULL || size == 0) && len != NULL;
}

/* Decodes the byte at *p (%XX, '+' as a space when plus, or itself) and
 * steps past it. */
static unsigned char decode_byte(const char **p, const char *e, bool plus)
{
    const char *s = *p;

    if (*s == '+' && plus) {
        *p = s + 1;
        return ' ';
    }
    if (*s == '%' && e - s >= 3 && hex_value(s[1]) >= 0 &&
        hex_value(s[2]) >= 0) {
        *p = s + 3;
        return (unsigned char)(hex_value(s[1]) * 16 + hex_value(s[2]));
    }
    *p = s + 1;
    return (unsigned char)*s;
}

/* decode_byte() as query and form components are decoded. */
static unsigned char decode_next(const char **p, const char *e)
{
    return decode_byte(p, e, true);
}

/* True when the raw name [p, e) decodes to exactly name. */
static bool decoded_eq(const char *p, const char *e, const char *name,
                       size_t name_len)
{
    size_t i = 0;

    while (p < e) {
        if (i == name_len || decode_next(&p, e) != (unsigned char)name[i]) {
            return false;
        }
        i++;
    }
    return i == name_len;
}

/* Decodes [p, e) into buf (%XX; '+' too when plus); the lookup result as
 * copy_out(). */
static suspect_rc_t decode_out(const char *p, const char *e, bool plus,
                               char *buf, size_t size, size_t *len)
{
    size_t n = 0;

    while (p < e) {
        unsigned char c = decode_byte(&p, e, plus);
        if (n < size) {
            buf[n] = (char)c;
        }
        n++;
    }
    *len = n;
    return n > size ? SUSPECT_E_FULL : SUSPECT_OK;
}

/* ---- parameter names as PHP files them ----------------------------------- */

enum name_state {
    NAME_START, /* leading spaces are dropped */
    NAME_IN,    /* ' ' and '.' become '_'; a '[' may open an index */
    NAME_REST,  /* after a '[' without ']': '[' becomes '_' too */
    NAME_END
};

/* A reader of a name's PHP form (see the file comment). */
typedef struct name_rd {
    const char *p;
    const char *e;
    bool decode; /* the input is urlencoded (a request's), else plain */
    enum name_state state;
} name_rd_t;

/* The next byte of the name itself, or -1 at its end: a NUL ends it, as
 * it ends PHP's C string. */
static int rd_byte(name_rd_t *r)
{
    unsigned char c;

    if (r->p >= r->e) {
        return -1;
    }
    c = r->decode ? decode_next(&r->p, r->e) : (unsigned char)*r->p++;
    return c != 0 ? c : -1;
}

/* True when a ']' follows in the rest of the name. */
static bool rd_closes(const name_rd_t *r)
{
    name_rd_t t = *r;
    int c;

    while ((c = rd_byte(&t)) >= 0) {
        if (c == ']') {
            return true;
        }
    }
    return false;
}

/* The next byte of the PHP form, or -1 at its end. */
static int rd_next(name_rd_t *r)
{
    int c;

    if (r->state == NAME_END) {
        return -1;
    }
    c = rd_byte(r);
    while (r->state == NAME_START && c == ' ') {
        c = rd_byte(r);
    }
    if (r->state == NAME_START) {
        r->state = NAME_IN;
    }
    if (c < 0 || (c == '[' && r->state == NAME_IN && rd_closes(r))) {
        r->state = NAME_END;
        return -1;
    }
    if (c == '[') {
        r->state = NAME_REST;
        return '_';
    }
    return c == ' ' || c == '.' ? '_' : c;
}

/* True when the raw name [p, e) (urlencoded when decode) and name have
 * the same, non-empty, PHP form. */
static bool php_name_eq(const char *p, const char *e, bool decode,
                        const char *name, size_t name_len)
{
    name_rd_t a = {p, e, decode, NAME_START};
    name_rd_t b = {name, name + name_len, false, NAME_START};
    size_t n = 0;
    int ca, cb;

    do {
        ca = rd_next(&a);
        cb = rd_next(&b);
        if (ca != cb) {
            return false;
        }
        n++;
    } while (ca >= 0);
    return n > 1;
}

/* True when the raw name [p, e) names parameter name: see the file
 * comment. */
static bool name_eq(const char *p, const char *e, const char *name,
                    size_t name_len)
{
    return decoded_eq(p, e, name, name_len) ||
           php_name_eq(p, e, true, name, name_len);
}

/* True when the raw values a and b decode to the same bytes ('+' as a
 * space when plus).  Steps stop at the shorter one, so the cost is at
 * most b's length. */
static bool decoded_same(span_t a, span_t b, bool plus)
{
    const char *p = a.p;
    const char *q = b.p;

    while (p < a.e && q < b.e) {
        if (decode_byte(&p, a.e, plus) != decode_byte(&q, b.e, plus)) {
            return false;
        }
    }
    return p == a.e && q == b.e;
}

/* ---- cookies ------------------------------------------------------------ */

/* The ways a cookie name can name a cookie (see the file comment). */
enum cookie_way {
    WAY_PLAIN,         /* byte for byte, blanks around it ignored */
    WAY_SPACE,         /* white space (\s) around it ignored (Perl's and
                          Python's regular expressions) */
    WAY_PHP,           /* PHP's form of the raw name */
    WAY_DECODED,       /* percent-decoded, '+' a space (Perl's CGI::Cookie) */
    WAY_DECODED_SPACE, /* decoded, then white space around it ignored */
    WAY_COUNT
};

/* The value of one "name=value" pair, trimmed and unquoted. */
static span_t cookie_value(const char *p, const char *e)
{
    span_t v = trim(p, e);

    if (span_len(v) >= 2 && v.p[0] == '"' && v.e[-1] == '"') {
        v.p++;
        v.e--;
    }
    return v;
}

/* True for the bytes C's isspace() takes, which PHP drops before a
 * cookie name. */
static bool is_c_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* [p, e) without the bytes C's isspace() takes at both ends. */
static span_t trim_space(const char *p, const char *e)
{
    span_t s;

    while (p < e && is_c_space(*p)) {
        p++;
    }
    while (e > p && is_c_space(e[-1])) {
        e--;
    }
    s.p = p;
    s.e = e;
    return s;
}

/* True when the raw name [p, e) decodes ('+' a space) to name with
 * white space (is_c_space()) around it; no buffer, one pass. */
static bool decoded_space_eq(const char *p, const char *e, const char *name,
                             size_t name_len)
{
    size_t i = 0;
    bool started = false;

    while (p < e) {
        unsigned char c = decode_next(&p, e);

        if (!started && is_c_space((char)c)) {
            continue;
        }
        started = true;
        if (i < name_len && c == (unsigned char)name[i]) {
            i++;
        } else if (i == name_len && is_c_space((char)c)) {
            continue; /* trailing white space; only more may follow */
        } else {
            return false;
        }
    }
    return i == name_len;
}

/* The ways (bit 1 << WAY_*) in which the raw name [p, e) names name. */
static unsigned cookie_ways(const char *p, const char *e, const char *name,
                            size_t name_len)
{
    span_t t = trim(p, e);
    unsigned ways = 0;

    if (span_eq(t, name, name_len)) {
        ways |= 1u << WAY_PLAIN;
    }
    if (span_eq(trim_space(p, e), name, name_len)) {
        ways |= 1u << WAY_SPACE;
    }
    if (decoded_space_eq(p, e, name, name_len)) {
        ways |= 1u << WAY_DECODED_SPACE;
    }
    while (p < e && is_c_space(*p)) {
        p++;
    }
    /* PHP 8 files cookie names undecoded, trailing blanks included. */
    if (php_name_eq(p, e, false, name, name_len)) {
        ways |= 1u << WAY_PHP;
    }
    if (decoded_eq(t.p, t.e, name, name_len)) {
        ways |= 1u << WAY_DECODED;
    }
    return ways;
}

/*
 * Walks the pairs of a Cookie header: first[w] gets the value of the
 * first pair that names name in way w (found[w] set).  With stop_at_one,
 * stops at the first pair that names it in any way (its ways in found).
 */
static void cookie_scan(const char *hdr, size_t hdr_len, const char *name,
                        size_t name_len, bool stop_at_one,
                        span_t first[WAY_COUNT], bool found[WAY_COUNT])
{
    const char *p = hdr;
    const char *end = hdr + hdr_len;
    unsigned seen = 0;

    memset(found, 0, WAY_COUNT * sizeof(*found));
    while (p < end && seen != (1u << WAY_COUNT) - 1) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *pe = semi != NULL ? semi : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        unsigned ways = eq != NULL ? cookie_ways(p, eq, name, name_len) : 0;

        for (unsigned w = 0; w < WAY_COUNT; w++) {
            if ((ways & ~seen & (1u << w)) != 0) {
                first[w] = cookie_value(eq + 1, pe);
                found[w] = true;
            }
        }
        seen |= ways;
        if (stop_at_one && ways != 0) {
            return;
        }
        p = semi != NULL ? semi + 1 : end;
    }
}

/* Finds cookie name: see lookup.h. */
suspect_rc_t mw_cookie_find(const char *hdr, size_t hdr_len, const char *name,
                            size_t name_len, char *buf, size_t size,
                            size_t *len)
{
    span_t first[WAY_COUNT];
    bool found[WAY_COUNT];

    if (!lookup_args_ok(hdr, hdr_len, name, name_len, buf, size, len)) {
        return SUSPECT_E_INVAL;
    }
    if (hdr == NULL) {
        return SUSPECT_E_NOTFOUND;
    }
    cookie_scan(hdr, hdr_len, name, name_len, true, first, found);
    for (unsigned w = 0; w < WAY_COUNT; w++) {
        if (found[w]) {
            return decode_out(first[w].p, first[w].e, false, buf, size, len);
        }
    }
    return SUSPECT_E_NOTFOUND;
}

/* Whether the cookie the parsers read differs: see lookup.h. */
bool mw_cookie_ambiguous(const char *hdr, size_t hdr_len, const char *name,
                         size_t name_len)
{
    span_t first[WAY_COUNT];
    bool found[WAY_COUNT];
    int ref = -1;

    if (hdr == NULL || name == NULL || name_len == 0) {
        return false;
    }
    cookie_scan(hdr, hdr_len, name, name_len, false, first, found);
    for (unsigned w = 0; w < WAY_COUNT; w++) {
        if (!found[w]) {
            continue;
        }
        if (ref < 0) {
            ref = (int)w;
        } else if (!decoded_same(first[ref], first[w], false)) {
            return true;
        }
    }
    return false;
}

/* The end of the CGI::Cookie pair starting at p: the next ';' or ','. */
static const char *cgi_pair_end(const char *p, const char *e)
{
    while (p < e && *p != ';' && *p != ',') {
        p++;
    }
    return p;
}

/* Finds cookie name as CGI::Cookie reads it: see lookup.h. */
suspect_rc_t mw_cookie_find_cgi(const char *hdr, size_t hdr_len,
                                const char *name, size_t name_len, char *buf,
                                size_t size, size_t *len)
{
    const char *p = hdr;
    const char *end = hdr != NULL ? hdr + hdr_len : NULL;

    if (!lookup_args_ok(hdr, hdr_len, name, name_len, buf, size, len)) {
        return SUSPECT_E_INVAL;
    }
    while (p != NULL && p < end) {
        const char *pe = cgi_pair_end(p, end);
        span_t pair;
        const char *eq;

        pair = trim_space(p, pe); /* Perl's \s is C's isspace() */
        eq = memchr(pair.p, '=', span_len(pair));
        p = pe < end ? pe + 1 : end;
        if (eq != NULL && decoded_eq(pair.p, eq, name, name_len)) {
            const char *amp = memchr(eq + 1, '&', (size_t)(pair.e - eq - 1));

            return decode_out(eq + 1, amp != NULL ? amp : pair.e, true, buf,
                              size, len);
        }
    }
    return SUSPECT_E_NOTFOUND;
}

/* ---- query and form ----------------------------------------------------- */

/* The end of the parameter starting at p: the next separator or e. */
static const char *param_end(const char *p, const char *e, unsigned flags)
{
    while (p < e && *p != '&' &&
           !(*p == ';' && (flags & MW_PARAM_SEMICOLON) != 0)) {
        p++;
    }
    return p;
}

/*
 * The next parameter of [*p, end) that names name (name_eq()): its raw
 * value in *v (empty for a parameter without '='), *p past it.  False when
 * none is left.
 */
static bool next_named(const char **p, const char *end, unsigned flags,
                       const char *name, size_t name_len, span_t *v)
{
    while (*p < end) {
        const char *pe = param_end(*p, end, flags);
        const char *eq = memchr(*p, '=', (size_t)(pe - *p));
        bool hit = name_eq(*p, eq != NULL ? eq : pe, name, name_len);

        *p = pe < end ? pe + 1 : end;
        if (hit) {
            v->p = eq != NULL ? eq + 1 : pe;
            v->e = pe;
            return true;
        }
    }
    return false;
}

/* Finds the first occurrence of name: see lookup.h. */
suspect_rc_t mw_param_find(const char *s, size_t s_len, unsigned flags,
                           const char *name, size_t name_len, char *buf,
                           size_t size, size_t *len)
{
    const char *p = s;
    span_t v;

    if (!lookup_args_ok(s, s_len, name, name_len, buf, size, len)) {
        return SUSPECT_E_INVAL;
    }
    if (s != NULL && next_named(&p, s + s_len, flags, name, name_len, &v)) {
        return decode_out(v.p, v.e, true, buf, size, len);
    }
    return SUSPECT_E_NOTFOUND;
}

/* Whether any occurrence of name has value: see lookup.h. */
suspect_rc_t mw_param_match(const char *s, size_t s_len, unsigned flags,
                            const char *name, size_t name_len,
                            const char *value, size_t value_len)
{
    const char *p = s;
    span_t v;

    if ((s == NULL && s_len > 0) || name == NULL || name_len == 0 ||
        (value == NULL && value_len > 0)) {
        return SUSPECT_E_INVAL;
    }
    while (s != NULL && next_named(&p, s + s_len, flags, name, name_len, &v)) {
        if (value == NULL || decoded_eq(v.p, v.e, value, value_len)) {
            return SUSPECT_OK;
        }
    }
    return SUSPECT_E_NOTFOUND;
}

/* Whether two occurrences of name differ: see lookup.h. */
bool mw_param_ambiguous(const char *s, size_t s_len, unsigned flags,
                        const char *name, size_t name_len)
{
    const char *p = s;
    const char *end = s != NULL ? s + s_len : NULL;
    span_t first, v;

    if (s == NULL || name == NULL || name_len == 0 ||
        !next_named(&p, end, flags, name, name_len, &first)) {
        return false;
    }
    while (next_named(&p, end, flags, name, name_len, &v)) {
        if (!decoded_same(first, v, true)) {
            return true;
        }
    }
    return false;
}

/* Whether a plain name names name: see lookup.h. */
bool mw_param_name_is(const char *raw, size_t raw_len, const char *name,
                      size_t name_len)
{
    return (raw_len == name_len && memcmp(raw, name, name_len) == 0) ||
           php_name_eq(raw, raw + raw_len, false, name, name_len);
}

/* mw_param_find() split on '&' and ';'. */
suspect_rc_t mw_param_find_semicolon(const char *s, size_t s_len,
                                     const char *name, size_t name_len,
                                     char *buf, size_t size, size_t *len)
{
    return mw_param_find(s, s_len, MW_PARAM_SEMICOLON, name, name_len, buf,
                         size, len);
}

/* Whether s holds a "%uXXXX" escape: see lookup.h. */
bool mw_has_u_escape(const char *s, size_t s_len)
{
    const char *p = s;
    const char *end = s != NULL ? s + s_len : NULL;

    while (p != NULL && (p = memchr(p, '%', (size_t)(end - p))) != NULL) {
        if (end - p >= 6 && p[1] == 'u' && hex_value(p[2]) >= 0 &&
            hex_value(p[3]) >= 0 && hex_value(p[4]) >= 0 &&
            hex_value(p[5]) >= 0) {
            return true;
        }
        p++;
    }
    return false;
}

/* mw_param_find() over a query string. */
suspect_rc_t mw_query_find(const char *qs, size_t qs_len, const char *name,
                           size_t name_len, char *buf, size_t size, size_t *len)
{
    return mw_param_find(qs, qs_len, 0, name, name_len, buf, size, len);
}

/* mw_param_find() over a urlencoded body. */
suspect_rc_t mw_form_find(const char *body, size_t body_len, const char *name,
                          size_t name_len, char *buf, size_t size, size_t *len)
{
    return mw_param_find(body, body_len, 0, name, name_len, buf, size, len);
}

/* ---- headers ------------------------------------------------------------ */

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool name_is(const char *name, size_t len, const char *lit)
{
    return len == strlen(lit) && strncasecmp(name, lit, len) == 0;
}

/* The CGI variable of a header: see lookup.h. */
suspect_rc_t mw_header_var(const char *name, size_t name_len, char *buf,
                           size_t size, size_t *len)
{
    size_t pre;

    if (name == NULL || name_len == 0 || len == NULL ||
        (buf == NULL && size > 0)) {
        return SUSPECT_E_INVAL;
    }
    pre = name_is(name, name_len, "Content-Type") ||
                  name_is(name, name_len, "Content-Length")
              ? 0
              : 5;
    for (size_t i = 0; i < name_len; i++) {
        if (!is_tchar((unsigned char)name[i])) {
            return SUSPECT_E_INVAL;
        }
    }
    *len = pre + name_len;
    if (*len >= size) {
        return SUSPECT_E_FULL;
    }
    memcpy(buf, "HTTP_", pre);
    for (size_t i = 0; i < name_len; i++) {
        char c = name[i];
        buf[pre + i] = c == '-' ? '_' : (c >= 'a' && c <= 'z') ? c - 32 : c;
    }
    buf[*len] = '\0';
    return SUSPECT_OK;
}

size_t mw_cookie_find_own(const char *hdr, size_t hdr_len, const char *name,
                          char vals[2][MW_OWN_COOKIE], size_t lens[2])
{
    size_t found = 0;
    char full[80];

    for (int host = 0; host < 2 && hdr != NULL; host++) {
        int n =
            snprintf(full, sizeof(full), "%s%s", host ? "__Host-" : "", name);

        if (n > 0 && (size_t)n < sizeof(full) &&
            mw_cookie_find(hdr, hdr_len, full, (size_t)n, vals[found],
                           MW_OWN_COOKIE, &lens[found]) == SUSPECT_OK) {
            found++;
        }
    }
    return found;
}
