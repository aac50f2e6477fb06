/*
 * route.c - which route, if any, a request belongs to.
 *
 * Routes are tried in file order and the first whose three conditions hold
 * wins:
 *  - method: REQUEST_METHOD is one of the route's methods, compared
 *    exactly (HTTP methods are case-sensitive); a route listing GET also
 *    takes HEAD, which web servers run the same script for; a route
 *    without methods takes any, and a request without a method only
 *    matches those;
 *  - path, against each normalised path of the request (path.c: the
 *    REQUEST_URI's, SCRIPT_NAME + PATH_INFO, DOCUMENT_URI), any of which
 *    may match, so a route for "/index.php" also takes "POST /?op=login"
 *    that the web server's index or try_files ran as /index.php; a request
 *    is still counted once, for the first route:
 *      "/app.cgi"        (exact, or a prefix without '/' at the end) the
 *                        path itself, or the path followed by '/' and
 *                        anything: "/app.cgi", "/app.cgi/" and
 *                        "/app.cgi/x/y" match (web servers run
 *                        "/app.cgi/x" as /app.cgi with PATH_INFO "/x"),
 *                        "/app.cgi2" does not.  An exact path and a prefix
 *                        without a trailing '/' are the same condition;
 *      exact "/dir/"     (ends in '/') only "/dir/" itself;
 *      prefix "/api/"    (ends in '/') the path starts with it: "/api/",
 *                        "/api/x" and "/api/x/y" match, "/api" does not;
 *  - parameter: when the route names one, it is present (and, when the
 *    route gives a value, has exactly that decoded value) in the query,
 *    the form body (urlencoded, or a multipart body's fields read as an
 *    urlencoded form: guard_multipart.c), or either (query first; the
 *    body is only read when the query does not satisfy the condition).
 *    A parameter given several times meets the condition when ANY
 *    occurrence does: apps differ on which one they read (PHP the last),
 *    so "?op=view&op=bank" is an "op=bank" request.  Names are compared
 *    as PHP files them too ("+op", "op[]" are "op": lookup.c), and
 *    parameters are split on ';' as well as on '&' (CGI.pm splits on
 *    both): a condition met either way is met, since matching more only
 *    counts more.  A query string, form body or Cookie header read
 *    for a condition and holding a "%uXXXX" escape, which CGI.pm alone
 *    decodes ("?op=%u006cogin" is its "op=login"), is refused
 *    (SUSPECT_E_PARSE, a 400: guard_call.c).  A condition that needs an
 * urlencoded body longer than form_max cannot be decided: SUSPECT_E_FULL (a
 * 413) rather than a guess from the body's head; a multipart body refused is
 *    SUSPECT_E_PARSE (its status in the call).
 *  - when: a route with when conditions matches only requests that
 *    carry one of them: a query or form parameter of that name (named
 *    and split as for param), a header, a cookie (named as any parser
 *    names it, CGI::Cookie's reading too: lookup.h); what makes the
 *    application check a password ("u" present), whatever its value;
 *  - paramIn="request" (PHP's $_REQUEST): the parameter is also looked
 *    for in the Cookie header, and a value condition that holds must
 *    hold for every copy: $_REQUEST takes one copy from the query, the
 *    body or a cookie, which one by php.ini (request_order,
 *    variables_order), so copies that disagree, or a value given only in
 *    a cookie (in $_REQUEST or not, by php.ini), make the request
 *    ambiguous (SUSPECT_E_INVAL, a 400): "?action=lostpassword" with
 *    "Cookie: action=login" would run the login under "request_order=GPC"
 *    while the reset route counted it;
 * Matching more has one catch: the first route wins, so a request could
 * meet an earlier route's condition while the app runs a later one's
 * ("?op=login&op=promo": PHP reads the last op, promo, while the login
 * route matched first and counted nothing promo would).  So when the
 * winning route asks for a value, the later routes for the same request
 * (method and path) that ask the same parameter for another value are
 * tried too, and one that also matches makes the request ambiguous
 * (SUSPECT_E_INVAL, a 400): which action runs depends on the app's parser.
 * Lengths are computed when the guard is built, so a request costs no
 * strlen() of the configuration.
 */
#include "guard_internal.h"

#include <string.h>

/* True when method[0..len) is m[0..m_len). */
static bool method_is(const char *method, size_t len, const char *m,
                      size_t m_len)
{
    return len == m_len && memcmp(method, m, len) == 0;
}

/* True when the route takes the method (see the file comment). */
static bool method_match(const guard_route_t *r, const char *method,
                         size_t method_len)
{
    const suspect_conf_route_t *cr = r->conf;
    bool head = method != NULL && method_is(method, method_len, "HEAD", 4);

    if (cr->nmethods == 0) {
        return true;
    }
    for (size_t i = 0; method != NULL && i < cr->nmethods; i++) {
        if (method_is(method, method_len, cr->methods[i], r->method_len[i]) ||
            (head && method_is(cr->methods[i], r->method_len[i], "GET", 3))) {
            return true;
        }
    }
    return false;
}

/* True when path matches the route's path: see the file comment. */
bool guard_route_path_match(const guard_route_t *r, const char *path,
                            size_t path_len)
{
    const char *rp = r->conf->path;
    size_t n = r->path_len;

    if (path_len < n || memcmp(path, rp, n) != 0) {
        return false;
    }
    if (path_len == n) {
        return true;
    }
    /* Longer than the route's path: a directory prefix takes anything
     * under it; otherwise only the same script with a PATH_INFO. */
    if (rp[n - 1] == '/') {
        return r->conf->prefix;
    }
    return path[n] == '/';
}

/* Whether some occurrence of the parameter of r in s (query or body) is
 * as the route asks, s split on '&' alone or on '&' and ';': SUSPECT_OK or
 * SUSPECT_E_NOTFOUND. */
static suspect_rc_t param_in(const guard_route_t *r, const char *s,
                             size_t s_len)
{
    const suspect_conf_route_t *cr = r->conf;
    static const unsigned splits[] = {0, MW_PARAM_SEMICOLON};

    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        if (mw_param_match(s, s_len, splits[i], cr->param_name,
                           r->param_name_len, cr->param_value,
                           r->param_value_len) == SUSPECT_OK) {
            return SUSPECT_OK;
        }
    }
    return SUSPECT_E_NOTFOUND;
}

/* Whether parameter w->name occurs in s (split as by param_in()). */
static suspect_rc_t name_in(const char *s, size_t s_len,
                            const guard_source_t *w)
{
    static const unsigned splits[] = {0, MW_PARAM_SEMICOLON};

    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        if (mw_param_match(s, s_len, splits[i], w->name, w->name_len, NULL,
                           0) == SUSPECT_OK) {
            return SUSPECT_OK;
        }
    }
    return SUSPECT_E_NOTFOUND;
}

/* Whether cookie w->name is in the Cookie header hdr, as any parser
 * names it (mw_cookie_find(), mw_cookie_find_cgi()). */
static suspect_rc_t cookie_in(const char *hdr, size_t len,
                              const guard_source_t *w)
{
    char one;
    size_t n = 0;
    suspect_rc_t rc =
        mw_cookie_find(hdr, len, w->name, w->name_len, &one, 1, &n);

    if (rc == SUSPECT_E_NOTFOUND) {
        rc = mw_cookie_find_cgi(hdr, len, w->name, w->name_len, &one, 1, &n);
    }
    return rc == SUSPECT_E_FULL ? SUSPECT_OK : rc;
}

/* paramIn="request": whether every copy of the route's parameter in s (a
 * query or a body), split either way, has the route's value: SUSPECT_OK
 * (*seen set when there is one), else SUSPECT_E_INVAL. */
static suspect_rc_t copies_agree(const guard_route_t *r, const char *s,
                                 size_t s_len, bool *seen)
{
    const suspect_conf_route_t *cr = r->conf;
    static const unsigned splits[] = {0, MW_PARAM_SEMICOLON};

    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        char one;
        size_t n = 0;
        suspect_rc_t rc = mw_param_find(s, s_len, splits[i], cr->param_name,
                                        r->param_name_len, &one, 1, &n);

        if (rc == SUSPECT_E_NOTFOUND) {
            continue;
        }
        if (mw_param_ambiguous(s, s_len, splits[i], cr->param_name,
                               r->param_name_len) ||
            mw_param_match(s, s_len, splits[i], cr->param_name,
                           r->param_name_len, cr->param_value,
                           r->param_value_len) != SUSPECT_OK) {
            return SUSPECT_E_INVAL;
        }
        *seen = true;
    }
    return SUSPECT_OK;
}

/* paramIn="request", a value condition that holds: PHP's $_REQUEST takes
 * one copy of the parameter from the query, the body or a cookie, which
 * one by php.ini (request_order, variables_order), so every copy must
 * have the value, and a cookie alone, which $_REQUEST holds or not by
 * php.ini, does not decide: SUSPECT_OK, else SUSPECT_E_INVAL (a 400,
 * as an ambiguous route), or an error reading the body. */
static suspect_rc_t request_copies(guard_call_t *c, const guard_route_t *r)
{
    const suspect_conf_route_t *cr = r->conf;
    const char *s = NULL;
    size_t len = 0, n = 0;
    bool seen = false;
    char value[256];
    suspect_rc_t rc = guard_call_query(c, &s, &len);

    rc = rc == SUSPECT_OK ? copies_agree(r, s, len, &seen) : rc;
    if (rc == SUSPECT_OK) {
        rc = guard_call_body(c, &s, &len);
        rc = rc == SUSPECT_OK ? copies_agree(r, s, len, &seen) : rc;
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (guard_call_cookie(c, &s, &len) == SUSPECT_OK && s != NULL) {
        rc = mw_cookie_find(s, len, cr->param_name, r->param_name_len, value,
                            sizeof(value), &n);
        if (rc != SUSPECT_E_NOTFOUND &&
            (rc != SUSPECT_OK || n != r->param_value_len ||
             memcmp(value, cr->param_value, n) != 0 ||
             mw_cookie_ambiguous(s, len, cr->param_name, r->param_name_len))) {
            return SUSPECT_E_INVAL;
        }
    }
    return seen ? SUSPECT_OK : SUSPECT_E_INVAL;
}

/* Whether the parameter condition of r holds: SUSPECT_OK,
 * SUSPECT_E_NOTFOUND, SUSPECT_E_FULL (the body is too long to tell),
 * SUSPECT_E_INVAL (paramIn="request": copies disagree), or an error
 * reading the body. */
static suspect_rc_t param_match(guard_call_t *c, const guard_route_t *r)
{
    const suspect_conf_route_t *cr = r->conf;
    suspect_rc_t rc = SUSPECT_E_NOTFOUND;

    if (cr->param_name == NULL) {
        return SUSPECT_OK;
    }
    if ((cr->param_in & SUSPECT_PARAM_QUERY) != 0) {
        size_t qs_len = 0;
        const char *qs = NULL;

        rc = guard_call_query(c, &qs, &qs_len);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        rc = param_in(r, qs, qs_len);
    }
    if (rc == SUSPECT_E_NOTFOUND && (cr->param_in & SUSPECT_PARAM_FORM) != 0) {
        const char *body = NULL;
        size_t body_len = 0;

        rc = guard_call_body(c, &body, &body_len);
        if (rc == SUSPECT_OK) {
            rc = param_in(r, body, body_len);
        }
    }
    if (rc == SUSPECT_E_NOTFOUND &&
        (cr->param_in & SUSPECT_PARAM_COOKIE) != 0) {
        const char *hdr = NULL;
        size_t hdr_len = 0;
        guard_source_t w = {0};

        w.name = cr->param_name;
        w.name_len = r->param_name_len;
        rc = guard_call_cookie(c, &hdr, &hdr_len);
        rc = rc == SUSPECT_OK ? cookie_in(hdr, hdr_len, &w) : rc;
        rc = rc == SUSPECT_E_INVAL ? SUSPECT_E_NOTFOUND : rc;
    }
    if (rc == SUSPECT_OK && cr->param_in == SUSPECT_PARAM_REQUEST &&
        cr->param_value != NULL) {
        rc = request_copies(c, r);
    }
    return rc;
}

/* Whether one of the route's when conditions holds (none: it does):
 * SUSPECT_OK, SUSPECT_E_NOTFOUND, or an error reading the body. */
static suspect_rc_t when_match(guard_call_t *c, const guard_route_t *r)
{
    suspect_rc_t rc = SUSPECT_E_NOTFOUND;

    if (r->nwhen == 0) {
        return SUSPECT_OK;
    }
    for (size_t i = 0; i < r->nwhen && rc == SUSPECT_E_NOTFOUND; i++) {
        const guard_source_t *w = &r->when[i];
        const char *s = NULL;
        size_t len = 0;

        switch (w->kind) {
        case SUSPECT_SRC_HEADER:
            rc = mw_req_param_find(c->req, w->name, w->name_len) != NULL
                     ? SUSPECT_OK
                     : SUSPECT_E_NOTFOUND;
            break;
        case SUSPECT_SRC_COOKIE:
            rc = guard_call_cookie(c, &s, &len);
            rc = rc == SUSPECT_OK ? cookie_in(s, len, w) : rc;
            break;
        case SUSPECT_SRC_QUERY:
            rc = guard_call_query(c, &s, &len);
            rc = rc == SUSPECT_OK ? name_in(s, len, w) : rc;
            break;
        default: /* SUSPECT_SRC_FORM */
            rc = guard_call_body(c, &s, &len);
            rc = rc == SUSPECT_OK ? name_in(s, len, w) : rc;
            break;
        }
        rc = rc == SUSPECT_E_INVAL ? SUSPECT_E_NOTFOUND : rc;
    }
    return rc;
}

/* True when one of paths matches the route's path. */
static bool paths_match(const guard_route_t *r, const guard_paths_t *paths)
{
    for (size_t i = 0; i < paths->n; i++) {
        if (guard_route_path_match(r, paths->path[i], paths->len[i])) {
            return true;
        }
    }
    return false;
}

/* True when r2 asks r's parameter for another value. */
static bool other_value(const guard_route_t *r, const guard_route_t *r2)
{
    const suspect_conf_route_t *a = r->conf;
    const suspect_conf_route_t *b = r2->conf;

    return b->param_name != NULL && b->param_value != NULL &&
           strcmp(a->param_name, b->param_name) == 0 &&
           strcmp(a->param_value, b->param_value) != 0;
}

/* After routes[i] matched with a value condition: SUSPECT_E_INVAL when a
 * later route for the same request also matches with another value of
 * the parameter (see the file comment), SUSPECT_OK when none does, or an
 * error reading the body. */
static suspect_rc_t check_rivals(guard_call_t *c, size_t i, const char *method,
                                 size_t method_len, const guard_paths_t *paths)
{
    const mw_guard_t *g = c->g;
    const guard_route_t *r = &g->routes[i];

    for (size_t j = i + 1; j < g->nroutes; j++) {
        const guard_route_t *r2 = &g->routes[j];
        suspect_rc_t rc;

        if (!other_value(r, r2) || !method_match(r2, method, method_len) ||
            !paths_match(r2, paths)) {
            continue;
        }
        rc = param_match(c, r2);
        if (rc == SUSPECT_OK) {
            rc = when_match(c, r2);
        }
        if (rc != SUSPECT_E_NOTFOUND) {
            return rc == SUSPECT_OK ? SUSPECT_E_INVAL : rc;
        }
    }
    return SUSPECT_OK;
}

/* The first matching route: see guard_internal.h. */
suspect_rc_t guard_route_find(guard_call_t *c, const char *method,
                              size_t method_len, const guard_paths_t *paths,
                              const guard_route_t **out)
{
    const mw_guard_t *g = c->g;

    *out = NULL;
    for (size_t i = 0; i < g->nroutes; i++) {
        const guard_route_t *r = &g->routes[i];
        suspect_rc_t rc;

        if (!method_match(r, method, method_len) || !paths_match(r, paths)) {
            continue;
        }
        rc = param_match(c, r);
        if (rc == SUSPECT_OK) {
            rc = when_match(c, r);
        }
        if (rc == SUSPECT_OK && r->conf->param_value != NULL) {
            rc = check_rivals(c, i, method, method_len, paths);
            if (rc != SUSPECT_OK) {
                return rc;
            }
        }
        if (rc == SUSPECT_OK) {
            *out = r;
            return SUSPECT_OK;
        }
        if (rc != SUSPECT_E_NOTFOUND) {
            return rc;
        }
    }
    return SUSPECT_OK;
}
