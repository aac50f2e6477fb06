/*
 * location.h - a Location header read as the URI reference it is
 * (RFC 3986), and compared with a <Failure>/<Success> location.
 *
 * An application's redirect often carries what the client sent
 * ("/login.php?failed=1&return=http://x/account"), and some applications
 * redirect to an address the client names.  So a Location is never
 * searched for a text: it is parsed (scheme, authority, path, query),
 * its path resolved (dot segments; a relative path against the
 * request's), and only the path is compared with the pattern's, its
 * query only when the pattern has one, an absolute URL only when its
 * authority is the site's own.
 */
#ifndef MW_LOCATION_H
#define MW_LOCATION_H

#include <stdbool.h>
#include <stddef.h>

/* A URI reference cut into its parts (spans into the value; a part that
 * is absent has a NULL pointer). */
typedef struct mw_uri {
    const char *scheme, *auth, *path, *query;
    size_t scheme_len, auth_len, path_len, query_len;
} mw_uri_t;

/* Cuts v[0..n) into its parts; false when it is not a URI reference a
 * browser reads one way only (a control byte, a space, a backslash,
 * which browsers read as '/', or another byte RFC 3986 never allows). */
bool mw_uri_parse(const char *v, size_t n, mw_uri_t *u);

/* What a pattern is compared with: the request's own Host (HTTP_HOST),
 * the authorities the pattern allows instead (space-separated, NULL: the
 * request's Host), the request's path for a relative reference
 * (REQUEST_URI; its query is ignored), and whether another authority
 * still has its path compared (a <Failure>: what matches counts). */
typedef struct mw_location_ctx {
    const char *host;  /* NULL: none */
    const char *hosts; /* NULL: host */
    const char *base;  /* NULL: a relative reference cannot be resolved */
    bool any_authority;
} mw_location_ctx_t;

/*
 * Whether the Location value v[0..n) names pattern ("/path" or
 * "/path?query"): its path is the pattern's or under it ("/account"
 * holds "/account" and "/account/x", not "/accounts"), and when the
 * pattern has a query, the value's query starts with it.  1 when it
 * does, 0 when it does not, -1 when it cannot be told (not a URI
 * reference, a relative one without a base, a path too long to resolve).
 */
int mw_location_match(const char *v, size_t n, const char *pattern,
                      const mw_location_ctx_t *ctx);

#endif
