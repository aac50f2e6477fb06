/*
 * conf_sources.c - where a value comes from: the sources of an
 * <Identity from="..."> and the conditions of a <Route when="...">, and
 * the names they take (conf_route.c reads the elements).
 *
 * A source is "kind:NAME" (header, cookie, query, form, env, auth-user)
 * or client-ip; alternatives are joined by '|' and each that is present
 * counts.  Two aliases stand for several kinds: param:NAME is the query
 * and the body, request:NAME what PHP may put in $_REQUEST (the query,
 * the body and the cookies: PHP without request_order lets a cookie
 * win), so no order a site's PHP is set to reads a name Suspect does not
 * count.  Names are checked here (an HTTP token, a CGI variable name, a
 * parameter name), each at most NAME_MAX_LEN bytes.
 *
 * Two kinds read each call of a body that carries calls, so a request of
 * twenty calls counts twenty attempts, each for its own account:
 * xmlrpc:METHOD:POS, the parameter at POS (1 .. 8) of an XML-RPC call to
 * METHOD ("wp.getUsersBlogs"), or to any method of a prefix ("wp.*", the
 * '*' last; the longest that matches a call wins among a part's
 * alternatives, an exact name over any prefix); json:/POINTER, the value
 * at a JSON pointer (RFC 6901) of each object of the body (each element
 * of a top-level array).  passMethods= of a <Route> names the XML-RPC
 * methods that check no password.
 */
#include "conf_internal.h"

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define NAME_MAX_LEN 128 /* longest header, cookie, parameter name */

/* True for the tchar of RFC 9110 (header names, methods, cookie names). */
static bool is_tchar(unsigned char c)
{
    return isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* True when (p, n) is 1 .. NAME_MAX_LEN tchars. */
bool conf_is_token(const char *p, size_t n)
{
    if (n == 0 || n > NAME_MAX_LEN) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_tchar((unsigned char)p[i])) {
            return false;
        }
    }
    return true;
}

/* True for a CGI variable name: a letter or '_', then alphanumerics, '_'. */
static bool is_env_name(const char *p, size_t n)
{
    if (n == 0 || n > NAME_MAX_LEN || isdigit((unsigned char)p[0])) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)p[i]) && p[i] != '_') {
            return false;
        }
    }
    return true;
}

/* True for a query or form parameter name: no controls, spaces, '&', '=',
 * '#' (bytes >= 0x80 are fine: names are compared decoded). */
bool conf_is_param_name(const char *p, size_t n)
{
    if (n == 0 || n > NAME_MAX_LEN) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= 0x20 || c == 0x7f || c == '&' || c == '=' || c == '#') {
            return false;
        }
    }
    return true;
}

/* Next space-separated token of (v, n) from *pos into (*tok, *tlen);
 * false at the end. */
bool conf_next_token(const char *v, size_t n, size_t *pos, const char **tok,
                     size_t *tlen)
{
    size_t i = *pos;

    while (i < n &&
           (v[i] == ' ' || v[i] == '\t' || v[i] == '\r' || v[i] == '\n')) {
        i++;
    }
    if (i == n) {
        return false;
    }
    *tok = v + i;
    while (i < n && v[i] != ' ' && v[i] != '\t' && v[i] != '\r' &&
           v[i] != '\n') {
        i++;
    }
    *tlen = (size_t)(v + i - *tok);
    *pos = i;
    return true;
}

/* The source kinds written "kind:NAME". */
static const struct {
    const char *name;
    suspect_src_kind_t kind;
} named_kinds[] = {
    {"header", SUSPECT_SRC_HEADER}, {"cookie", SUSPECT_SRC_COOKIE},
    {"query", SUSPECT_SRC_QUERY},   {"form", SUSPECT_SRC_FORM},
    {"env", SUSPECT_SRC_ENV},       {"auth-user", SUSPECT_SRC_AUTH_USER},
    {"xmlrpc", SUSPECT_SRC_XMLRPC}, {"json", SUSPECT_SRC_JSON},
};

#define SOURCE_FORMS                                                           \
    "is not header:NAME, cookie:NAME, query:NAME, form:NAME, param:NAME, "     \
    "request:NAME, env:NAME, xmlrpc:METHOD:POS, json:/POINTER, "               \
    "auth-user:basic, auth-user:any or client-ip"

/* True for a byte of an XML-RPC method name (the specification's
 * letters, digits, '_', '.', ':', '/'). */
static bool is_method_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '.' || c == ':' || c == '/';
}

/* True for an XML-RPC method name, or a prefix of them ending in '*'. */
bool conf_is_method(const char *p, size_t n)
{
    if (n == 0 || n > NAME_MAX_LEN) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_method_char((unsigned char)p[i]) &&
            !(p[i] == '*' && i == n - 1)) {
            return false;
        }
    }
    return true;
}

/* Why "METHOD:POS" does not suit xmlrpc:, or NULL. */
static const char *check_xmlrpc(const char *p, size_t n)
{
    size_t m = n;

    while (m > 0 && p[m - 1] != ':') {
        m--;
    }
    if (m < 2 || n - m != 1 || p[n - 1] < '1' || p[n - 1] > '8') {
        return "is not xmlrpc:METHOD:POS (POS the parameter's place, 1 to 8)";
    }
    return conf_is_method(p, m - 1)
               ? NULL
               : "names no XML-RPC method (letters, digits, '_', '.', ':', "
                 "'/', a '*' last for a prefix)";
}

/* Why a JSON pointer does not suit json:, or NULL. */
static const char *check_pointer(const char *p, size_t n)
{
    if (n > NAME_MAX_LEN || p[0] != '/') {
        return "is not json:/POINTER (RFC 6901, at most 128 bytes)";
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c < 0x20 || c == 0x7f) {
            return "must not contain control characters";
        }
        if (c == '~' && (i + 1 == n || (p[i + 1] != '0' && p[i + 1] != '1'))) {
            return "has a '~' that is not ~0 or ~1";
        }
    }
    return NULL;
}

/* Why NAME does not suit kind, or NULL. */
static const char *check_source_name(suspect_src_kind_t kind, const char *p,
                                     size_t n)
{
    switch (kind) {
    case SUSPECT_SRC_HEADER:
        return conf_is_token(p, n) ? NULL : "is not an HTTP header name";
    case SUSPECT_SRC_COOKIE:
        return conf_is_token(p, n) ? NULL : "is not a cookie name";
    case SUSPECT_SRC_ENV:
        return is_env_name(p, n) ? NULL
                                 : "is not a CGI variable name (a letter or "
                                   "'_', then letters, digits, '_')";
    case SUSPECT_SRC_AUTH_USER:
        return (n == 5 && memcmp(p, "basic", 5) == 0) ||
                       (n == 3 && memcmp(p, "any", 3) == 0)
                   ? NULL
                   : "must be auth-user:basic (the Basic scheme, as PHP's "
                     "PHP_AUTH_USER) or auth-user:any (any scheme, as "
                     "substr($header, 6))";
    case SUSPECT_SRC_XMLRPC:
        return check_xmlrpc(p, n);
    case SUSPECT_SRC_JSON:
        return check_pointer(p, n);
    default:
        return conf_is_param_name(p, n) ? NULL
                                        : "is not a parameter name (no spaces, "
                                          "'&', '=', '#')";
    }
}

/* One source token into *src (its name in the arena). */
static suspect_rc_t parse_source(conf_build_t *b, const conf_site_t *at,
                                 const char *tok, size_t len,
                                 suspect_conf_source_t *src)
{
    const char *colon = memchr(tok, ':', len);
    size_t klen = colon != NULL ? (size_t)(colon - tok) : len;
    const char *name = colon != NULL ? colon + 1 : NULL;
    size_t nlen = colon != NULL ? len - klen - 1 : 0;
    const char *why;

    if (klen == 9 && memcmp(tok, "client-ip", 9) == 0) {
        src->kind = SUSPECT_SRC_CLIENT_IP;
        src->name = NULL;
        return colon == NULL ? SUSPECT_OK
                             : conf_bad_value(b, at, tok, len,
                                              "takes no name (write "
                                              "client-ip)");
    }
    for (size_t i = 0; i < sizeof(named_kinds) / sizeof(named_kinds[0]); i++) {
        if (colon == NULL || strlen(named_kinds[i].name) != klen ||
            memcmp(named_kinds[i].name, tok, klen) != 0) {
            continue;
        }
        why = nlen == 0 ? "needs a name after the ':'"
                        : check_source_name(named_kinds[i].kind, name, nlen);
        if (why != NULL) {
            return conf_bad_value(b, at, tok, len, why);
        }
        src->kind = named_kinds[i].kind;
        src->name = conf_strndup(b, name, nlen);
        return src->name != NULL ? SUSPECT_OK : conf_nomem(b, at->line);
    }
    return conf_bad_value(b, at, tok, len, SOURCE_FORMS);
}

/* The kinds an alias stands for, "param:NAME" (the query and the body)
 * or "request:NAME" (what PHP puts in $_REQUEST: the query, the body and
 * the cookies, since variables_order "EGPCS" without request_order, as in
 * PHP without a php.ini, puts the cookie there and lets it win); NULL
 * when tok is none, else *skip is the length of "alias:". */
static const char *const *alias_kinds(const char *tok, size_t len, size_t *skip)
{
    static const char *const param[] = {"query", "form", NULL};
    static const char *const request[] = {"query", "form", "cookie", NULL};

    if (len > 6 && memcmp(tok, "param:", 6) == 0) {
        *skip = 6;
        return param;
    }
    if (len > 8 && memcmp(tok, "request:", 8) == 0) {
        *skip = 8;
        return request;
    }
    return NULL;
}

/* Source i of tok (an alias, *kinds its kinds) into *src. */
static suspect_rc_t parse_alias(conf_build_t *b, const conf_site_t *at,
                                const char *tok, size_t len, size_t skip,
                                const char *kind, suspect_conf_source_t *src)
{
    size_t klen = strlen(kind), n = klen + 1 + (len - skip);
    char *q = conf_alloc(b, n + 1);

    if (q == NULL) {
        return conf_nomem(b, at->line);
    }
    memcpy(q, kind, klen);
    q[klen] = ':';
    memcpy(q + klen + 1, tok + skip, len - skip);
    q[n] = '\0';
    return parse_source(b, at, q, n, src);
}

/* True when src equals one of the first n of list. */
static bool source_seen(const suspect_conf_source_t *list, size_t n,
                        const suspect_conf_source_t *src)
{
    for (size_t i = 0; i < n; i++) {
        const suspect_conf_source_t *o = &list[i];
        if (o->kind == src->kind &&
            (o->name == NULL || strcmp(o->name, src->name) == 0)) {
            return true;
        }
    }
    return false;
}

/* One alternative of the part being read (tok, or the kind k of the
 * alias tok when kinds is not NULL) into id. */
static suspect_rc_t add_source(conf_build_t *b, const conf_site_t *at,
                               suspect_conf_identity_t *id, const char *tok,
                               size_t n, const char *const *kinds, size_t skip,
                               size_t k)
{
    suspect_conf_source_t *src = &id->source[id->nsources];
    suspect_rc_t rc;

    if (id->nsources == SUSPECT_CONF_MAX_SOURCES) {
        return conf_fail(b, at->line, "Identity: from has more than %u sources",
                         SUSPECT_CONF_MAX_SOURCES);
    }
    rc = kinds != NULL ? parse_alias(b, at, tok, n, skip, kinds[k], src)
                       : parse_source(b, at, tok, n, src);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (source_seen(id->source, id->nsources, src)) {
        return conf_bad_value(b, at, tok, n, "is given twice");
    }
    src->part = (unsigned)id->nparts;
    id->nsources++;
    return SUSPECT_OK;
}

/* One part's alternatives, "form:u|query:u", into id. */
static suspect_rc_t parse_part(conf_build_t *b, const conf_site_t *at,
                               suspect_conf_identity_t *id, const char *tok,
                               size_t len)
{
    const char *whole = tok;
    const char *e = tok + len;

    while (tok <= e) {
        const char *bar = memchr(tok, '|', (size_t)(e - tok));
        size_t n = bar != NULL ? (size_t)(bar - tok) : (size_t)(e - tok);
        size_t skip = 0;
        const char *const *kinds = alias_kinds(tok, n, &skip);
        suspect_rc_t rc;

        if (n == 0) {
            return conf_bad_value(b, at, whole, len,
                                  "has an empty alternative ('||' or a "
                                  "'|' at an end)");
        }
        for (size_t k = 0; kinds == NULL ? k < 1 : kinds[k] != NULL; k++) {
            rc = add_source(b, at, id, tok, n, kinds, skip, k);
            if (rc != SUSPECT_OK) {
                return rc;
            }
        }
        tok += n + 1;
    }
    id->nparts++;
    return SUSPECT_OK;
}

/* from="cookie:member query:promo": 1 .. SUSPECT_MAX_PARTS parts, each
 * one source or alternatives separated by '|'. */
suspect_rc_t conf_set_sources(conf_build_t *b, const conf_site_t *at, void *obj,
                              const conf_attr_t *a, const char *v, size_t n)
{
    suspect_conf_identity_t *id = obj;
    conf_site_t src_at = {at->elem, "from source", at->line};
    const char *tok;
    size_t pos = 0, len;
    suspect_rc_t rc;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    while (conf_next_token(v, n, &pos, &tok, &len)) {
        if (id->nparts == SUSPECT_MAX_PARTS) {
            return conf_fail(b, at->line,
                             "Identity: from has more than %d parts",
                             SUSPECT_MAX_PARTS);
        }
        rc = parse_part(b, &src_at, id, tok, len);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    return SUSPECT_OK;
}

/* normalize="trim casefold": kept as written (UTF-8, no control
 * characters); the middleware compiles and checks the steps. */
suspect_rc_t conf_set_normalize(conf_build_t *b, const conf_site_t *at,
                                void *obj, const conf_attr_t *a, const char *v,
                                size_t n)
{
    suspect_conf_identity_t *id = obj;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (n > SUSPECT_CONF_MAX_NORMALIZE) {
        return conf_bad_value(b, at, v, n, "is longer than 1024 bytes");
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            return conf_bad_value(b, at, v, n,
                                  "must not contain control characters "
                                  "(write \\xHH)");
        }
    }
    id->normalize = conf_strndup(b, v, n);
    return id->normalize != NULL ? SUSPECT_OK : conf_nomem(b, at->line);
}

/* One condition of when= (tok, or the kind k of the alias tok) into r. */
static suspect_rc_t add_when(conf_build_t *b, const conf_site_t *at,
                             suspect_conf_route_t *r, const char *tok,
                             size_t len, const char *const *kinds, size_t skip,
                             size_t k)
{
    suspect_conf_source_t src;
    suspect_rc_t rc = kinds != NULL
                          ? parse_alias(b, at, tok, len, skip, kinds[k], &src)
                          : parse_source(b, at, tok, len, &src);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (src.kind != SUSPECT_SRC_QUERY && src.kind != SUSPECT_SRC_FORM &&
        src.kind != SUSPECT_SRC_HEADER && src.kind != SUSPECT_SRC_COOKIE) {
        return conf_bad_value(b, at, tok, len,
                              "is not query:NAME, form:NAME, param:NAME, "
                              "request:NAME, header:NAME or cookie:NAME");
    }
    if (r->nwhen == SUSPECT_CONF_MAX_WHEN) {
        return conf_fail(b, at->line, "Route: when has more than %u conditions",
                         SUSPECT_CONF_MAX_WHEN);
    }
    if (source_seen(r->when, r->nwhen, &src)) {
        return conf_bad_value(b, at, tok, len, "is given twice");
    }
    r->when[r->nwhen++] = src;
    return SUSPECT_OK;
}

/* when="query:u form:u header:Authorization": the route matches only
 * requests that carry one of these; param:NAME is query and form,
 * request:NAME query, form and cookie. */
suspect_rc_t conf_set_when(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n)
{
    suspect_conf_route_t *r = obj;
    const char *tok;
    size_t pos = 0, len;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    while (conf_next_token(v, n, &pos, &tok, &len)) {
        size_t skip = 0;
        const char *const *kinds = alias_kinds(tok, len, &skip);

        for (size_t k = 0; kinds == NULL ? k < 1 : kinds[k] != NULL; k++) {
            suspect_rc_t rc = add_when(b, at, r, tok, len, kinds, skip, k);
            if (rc != SUSPECT_OK) {
                return rc;
            }
        }
    }
    return SUSPECT_OK;
}

/* passMethods="pingback.ping system.listMethods": XML-RPC methods that
 * check no password, kept as written (names, no prefixes). */
suspect_rc_t conf_set_pass_methods(conf_build_t *b, const conf_site_t *at,
                                   void *obj, const conf_attr_t *a,
                                   const char *v, size_t n)
{
    suspect_conf_route_t *r = obj;
    const char *tok;
    size_t pos = 0, len;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    while (conf_next_token(v, n, &pos, &tok, &len)) {
        if (!conf_is_method(tok, len) || tok[len - 1] == '*') {
            return conf_bad_value(b, at, tok, len,
                                  "is not an XML-RPC method name");
        }
    }
    r->pass_methods = conf_strndup(b, v, n);
    return r->pass_methods != NULL ? SUSPECT_OK : conf_nomem(b, at->line);
}
