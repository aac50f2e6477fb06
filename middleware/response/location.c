/*
 * location.c - a Location header read as a URI reference (location.h).
 *
 * Parsing (RFC 3986, section 3 and appendix B): a scheme is letters,
 * digits, '+', '-' and '.' from a letter up to the first ':'; "//" then
 * starts the authority, up to the first '/', '?' or '#'; the path runs
 * to '?' or '#', the query to '#'; the fragment is never read.  A value
 * with a byte RFC 3986 never allows (controls, space, '"', '<', '>',
 * '\\', '^', '`', '{', '|', '}') is refused rather than guessed at:
 * browsers read "\\" as "/", so "/\\evil.example/account" is another
 * host to them and a path to a naive reader.  Bytes from 0x80 up pass,
 * as browsers send them percent-encoded.
 *
 * Resolving (RFC 3986, 5.2): a reference with an authority keeps its path
 * ("" is "/"); an absolute path is itself; a relative path is merged with
 * the directory of the request's path; an empty one is the request's path
 * (and its query, unless the reference has one).  Then dot segments are
 * removed, "%2e" read as '.' as browsers read it: "/account/../login" is
 * "/login".  A scheme other than http and https never names a page of the
 * site; "http:/x" (a scheme without an authority: a path to one browser,
 * a host to another) cannot be told.
 *
 * The authority of an absolute URL must be one the pattern allows: the
 * request's own Host, or the pattern's hosts= list; userinfo
 * ("user@host") is not part of the host.  For a <Failure> pattern
 * (any_authority) the path is compared whatever the host: a match counts.
 *
 * Cost: one pass to parse, one to resolve into a stack buffer of
 * PATH_MAX_LEN bytes (a longer path cannot be told), one compare; only
 * for a response that has a Location, on a route whose pattern has one.
 */
#include "location.h"

#include <string.h>
#include <strings.h>

#define PATH_MAX_LEN 2048

static bool uri_byte_ok(unsigned char c)
{
    return c > 0x20 && c != 0x7f && strchr("\"<>\\^`{|}", c) == NULL;
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Length of the scheme at the start of v[0..n) (the ':' not counted), or
 * 0 when there is none. */
static size_t scheme_len(const char *v, size_t n)
{
    size_t i = 0;

    if (n == 0 || !is_alpha(v[0])) {
        return 0;
    }
    while (i < n && (is_alpha(v[i]) || (v[i] >= '0' && v[i] <= '9') ||
                     v[i] == '+' || v[i] == '-' || v[i] == '.')) {
        i++;
    }
    return i < n && v[i] == ':' ? i : 0;
}

/* Index of the first byte of v[i..n) in stops, or n. */
static size_t span_to(const char *v, size_t i, size_t n, const char *stops)
{
    while (i < n && strchr(stops, v[i]) == NULL) {
        i++;
    }
    return i;
}

bool mw_uri_parse(const char *v, size_t n, mw_uri_t *u)
{
    size_t i = 0, end;

    memset(u, 0, sizeof(*u));
    for (size_t k = 0; k < n; k++) {
        if (!uri_byte_ok((unsigned char)v[k])) {
            return false;
        }
    }
    u->scheme_len = scheme_len(v, n);
    if (u->scheme_len > 0) {
        u->scheme = v;
        i = u->scheme_len + 1;
    }
    if (n - i >= 2 && v[i] == '/' && v[i + 1] == '/') {
        end = span_to(v, i + 2, n, "/?#");
        u->auth = v + i + 2;
        u->auth_len = end - (i + 2);
        i = end;
    }
    end = span_to(v, i, n, "?#");
    u->path = v + i;
    u->path_len = end - i;
    if (end < n && v[end] == '?') {
        i = end + 1;
        end = span_to(v, i, n, "#");
        u->query = v + i;
        u->query_len = end - i;
    }
    return true;
}

/* 1 for a "." segment, 2 for "..", 0 otherwise ("%2e" is a dot). */
static int dots(const char *s, size_t n)
{
    int count = 0;

    for (size_t i = 0; i < n; count++) {
        if (s[i] == '.') {
            i++;
        } else if (n - i >= 3 && s[i] == '%' && s[i + 1] == '2' &&
                   (s[i + 2] == 'e' || s[i + 2] == 'E')) {
            i += 3;
        } else {
            return 0;
        }
    }
    return count <= 2 ? count : 0;
}

/* Appends in[0..n) (an absolute path) to out[*len..] with its dot
 * segments removed; false when out (PATH_MAX_LEN) is too small. */
static bool remove_dots(const char *in, size_t n, char *out, size_t *len)
{
    size_t i = 0;

    while (i < n) {
        size_t e = span_to(in, i + 1, n, "/");
        int d = dots(in + i + 1, e - i - 1);

        if (d == 2) {
            while (*len > 0 && out[--*len] != '/') {
            }
        }
        if (d > 0) {
            if (e == n) {
                out[(*len)++] = '/';
            }
        } else {
            if (*len + (e - i) > PATH_MAX_LEN) {
                return false;
            }
            memcpy(out + *len, in + i, e - i);
            *len += e - i;
        }
        i = e;
    }
    if (*len == 0) {
        out[(*len)++] = '/';
    }
    return true;
}

/* The resolved path of u into out (PATH_MAX_LEN bytes), its length, or
 * -1 when it cannot be told; *query, *qlen the query that goes with it. */
static long resolve(const mw_uri_t *u, const char *base, char *out,
                    const char **query, size_t *qlen)
{
    size_t len = 0, blen, dir;
    char joined[PATH_MAX_LEN];

    *query = u->query;
    *qlen = u->query_len;
    if (u->auth != NULL || (u->path_len > 0 && u->path[0] == '/')) {
        if (!remove_dots(u->path_len > 0 ? u->path : "/",
                         u->path_len > 0 ? u->path_len : 1, out, &len)) {
            return -1;
        }
        return (long)len;
    }
    if (base == NULL || base[0] != '/') {
        return -1;
    }
    blen = span_to(base, 0, strlen(base), "?#");
    if (u->path_len == 0) {
        if (u->query == NULL && base[blen] == '?') {
            *query = base + blen + 1;
            *qlen = span_to(base, blen + 1, strlen(base), "#") - blen - 1;
        }
        return remove_dots(base, blen, out, &len) ? (long)len : -1;
    }
    for (dir = blen; base[dir - 1] != '/'; dir--) {
    }
    if (dir + u->path_len > sizeof(joined)) {
        return -1;
    }
    memcpy(joined, base, dir);
    memcpy(joined + dir, u->path, u->path_len);
    return remove_dots(joined, dir + u->path_len, out, &len) ? (long)len : -1;
}

/* Whether authority a[0..n) (userinfo dropped) is one of the
 * space-separated names in list. */
static bool host_listed(const char *a, size_t n, const char *list)
{
    const char *at = memchr(a, '@', n);

    while (at != NULL) {
        n -= (size_t)(at + 1 - a);
        a = at + 1;
        at = memchr(a, '@', n);
    }
    while (list != NULL && *list != '\0') {
        size_t k = strcspn(list, " ");

        if (k == n && n > 0 && strncasecmp(list, a, n) == 0) {
            return true;
        }
        list += k;
        list += strspn(list, " ");
    }
    return false;
}

static bool is_http(const mw_uri_t *u)
{
    return (u->scheme_len == 4 && strncasecmp(u->scheme, "http", 4) == 0) ||
           (u->scheme_len == 5 && strncasecmp(u->scheme, "https", 5) == 0);
}

/* Whether path p[0..n) is pattern path pp[0..pn) or under it. */
static bool path_under(const char *p, size_t n, const char *pp, size_t pn)
{
    if (pn == 0 || n < pn || memcmp(p, pp, pn) != 0) {
        return false;
    }
    return n == pn || pp[pn - 1] == '/' || p[pn] == '/';
}

int mw_location_match(const char *v, size_t n, const char *pattern,
                      const mw_location_ctx_t *ctx)
{
    const char *pq = strchr(pattern, '?'), *query;
    size_t pn = pq != NULL ? (size_t)(pq - pattern) : strlen(pattern), qlen;
    char path[PATH_MAX_LEN];
    mw_uri_t u;
    long len;

    if (!mw_uri_parse(v, n, &u)) {
        return -1;
    }
    if (u.scheme != NULL && !is_http(&u)) {
        return 0;
    }
    if (u.scheme != NULL && u.auth == NULL) {
        return -1; /* "http:/x": a path to one browser, a host to another */
    }
    if (u.auth != NULL && !ctx->any_authority &&
        !host_listed(u.auth, u.auth_len,
                     ctx->hosts != NULL ? ctx->hosts : ctx->host)) {
        return 0;
    }
    len = resolve(&u, ctx->base, path, &query, &qlen);
    if (len < 0) {
        return -1;
    }
    if (!path_under(path, (size_t)len, pattern, pn)) {
        return 0;
    }
    if (pq == NULL) {
        return 1;
    }
    pq++;
    return query != NULL && qlen >= strlen(pq) &&
           memcmp(query, pq, strlen(pq)) == 0;
}
