/*
 * conf_route.c - <Route> and <Identity>: which requests are which action,
 * counted against which identities.
 *
 * A route matches by method (a list of upper-case tokens, none = any), by
 * an exact path or a path prefix, and optionally by a parameter (present,
 * or equal to a value).  Paths are normalised here once ("//" and "/./"
 * collapse, ".." is refused) because the middleware normalises request
 * paths the same way before comparing.  Each <Identity> names a type and
 * one to SUSPECT_MAX_PARTS sources (read by conf_sources.c, as are the
 * route's when= conditions); several sources make one composite value.  Unknown
 * names are errors, as everywhere in suspect.xml (conf_xml.c): a misspelt
 * <Identiy> would otherwise leave a route counting less than the operator
 * thinks.
 *
 * The routes array was sized by the root's begin hook (at most its number
 * of child elements) and each route's identities array by the route's
 * (at most its child elements), so nothing here grows or moves.
 */
#include "conf_internal.h"

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define ROFF(field)  offsetof(suspect_conf_route_t, field)
#define IOFF(field)  offsetof(suspect_conf_identity_t, field)
#define BODY_IN_AUTH "reads the request body, which %s mode never "

/* ---- <Route> attributes ---------------------------------------------------
 */

/* method="POST GET": tokens, upper-cased, each once. */
static suspect_rc_t set_methods(conf_build_t *b, const conf_site_t *at,
                                void *obj, const conf_attr_t *a, const char *v,
                                size_t n)
{
    suspect_conf_route_t *r = obj;
    const char *tok;
    size_t pos = 0, len;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    while (conf_next_token(v, n, &pos, &tok, &len)) {
        char *m;
        if (!conf_is_token(tok, len)) {
            return conf_bad_value(b, at, tok, len, "is not an HTTP method");
        }
        if (r->nmethods == SUSPECT_CONF_MAX_METHODS) {
            return conf_fail(b, at->line,
                             "Route: method lists more than %u "
                             "methods",
                             SUSPECT_CONF_MAX_METHODS);
        }
        m = conf_strndup(b, tok, len);
        if (m == NULL) {
            return conf_nomem(b, at->line);
        }
        for (size_t i = 0; i < len; i++) {
            m[i] = (char)toupper((unsigned char)m[i]);
        }
        for (size_t i = 0; i < r->nmethods; i++) {
            if (strcmp(r->methods[i], m) == 0) {
                return conf_bad_value(b, at, tok, len, "is given twice");
            }
        }
        r->methods[r->nmethods++] = m;
    }
    return SUSPECT_OK;
}

/* path="/cgi-bin/app.cgi" (exact) or prefix="/api/" (a->arg non-NULL). */
static suspect_rc_t set_path(conf_build_t *b, const conf_site_t *at, void *obj,
                             const conf_attr_t *a, const char *v, size_t n)
{
    suspect_conf_route_t *r = obj;
    const char *why;
    char *p;

    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (memchr(v, '?', n) != NULL || memchr(v, '#', n) != NULL) {
        return conf_bad_value(b, at, v, n,
                              "must not contain '?' or '#' (match the query "
                              "with param)");
    }
    p = conf_norm_path(b, v, n, 0, &why);
    if (p == NULL) {
        return why != NULL ? conf_bad_value(b, at, v, n, why)
                           : conf_nomem(b, at->line);
    }
    r->path = p;
    r->prefix = a->arg != NULL;
    return SUSPECT_OK;
}

/* param="op=forgot" (equal) or param="op" (present). */
static suspect_rc_t set_param(conf_build_t *b, const conf_site_t *at, void *obj,
                              const conf_attr_t *a, const char *v, size_t n)
{
    suspect_conf_route_t *r = obj;
    const char *eq = memchr(v, '=', n);
    size_t nlen = eq != NULL ? (size_t)(eq - v) : n;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (!conf_is_param_name(v, nlen)) {
        return conf_bad_value(b, at, v, n,
                              "must be NAME or NAME=VALUE (a name without "
                              "spaces, '&', '=', '#')");
    }
    for (size_t i = nlen; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f) {
            return conf_bad_value(b, at, v, n,
                                  "must not contain control characters");
        }
    }
    r->param_name = conf_strndup(b, v, nlen);
    if (r->param_name == NULL ||
        (eq != NULL &&
         (r->param_value = conf_strndup(b, eq + 1, n - nlen - 1)) == NULL)) {
        return conf_nomem(b, at->line);
    }
    return SUSPECT_OK;
}

static const conf_enum_item_t param_in_items[] = {
    {"query", SUSPECT_PARAM_QUERY},
    {"form", SUSPECT_PARAM_FORM},
    {"any", SUSPECT_PARAM_ANY},
    {"request", SUSPECT_PARAM_REQUEST},
    {NULL, 0}};
static const conf_enum_t param_in_enum = {param_in_items, 0};

static const conf_enum_item_t missing_items[] = {
    {"skip", SUSPECT_MISSING_SKIP},
    {"allow", SUSPECT_MISSING_ALLOW},
    {"reject", SUSPECT_MISSING_REJECT},
    {NULL, 0}};
static const conf_enum_t missing_enum = {missing_items, 0};

static const conf_num_t status_range = {400, 599, CONF_PLAIN, CONF_INT};
static const conf_num_t calls_range = {1, SUSPECT_CONF_MAX_CALLS, CONF_PLAIN,
                                       CONF_UNSIGNED};

/* cost=: whether the action can take it is checked against the limits
 * file (conf_actions.c) */
static const conf_num_t cost_range = {1, SUSPECT_COST_MAX, CONF_PLAIN,
                                      CONF_UNSIGNED};

/* ---- <Identity> ------------------------------------------------------------
 */

static const conf_attr_t identity_attrs[] = {
    {"type", conf_set_name, IOFF(type), NULL, CONF_REQUIRED},
    {"from", conf_set_sources, 0, NULL, CONF_REQUIRED},
    {"normalize", conf_set_normalize, 0, NULL, 0},
    {"account", conf_set_bool, IOFF(account), NULL, 0},
    {"shared", conf_set_bool, IOFF(shared), NULL, 0},
    {NULL, NULL, 0, NULL, 0}};

/* The next identity entry of the current route. */
static suspect_rc_t identity_begin(conf_build_t *b, int line, size_t nchildren,
                                   void **obj)
{
    suspect_conf_route_t *r = *obj;

    (void)nchildren;
    if (r->nidentities == b->identities_cap) {
        return conf_fail(b, line, "Route: more than %d <Identity> elements",
                         SUSPECT_MAX_IDENTITIES);
    }
    *obj = &r->identities[r->nidentities++];
    return SUSPECT_OK;
}

/* Two identities of a route never share a type (their keys would). */
static suspect_rc_t identity_end(conf_build_t *b, void *obj, uint32_t seen,
                                 int line)
{
    const suspect_conf_route_t *r = &b->routes[b->conf->nroutes - 1];
    const suspect_conf_identity_t *id = obj;

    (void)seen;
    for (size_t i = 0; i + 1 < r->nidentities; i++) {
        if (strcmp(r->identities[i].type, id->type) == 0) {
            return conf_fail(b, line, "Identity: type '%s' duplicates line %d",
                             id->type, r->identities[i].line);
        }
    }
    return SUSPECT_OK;
}

static const conf_elem_t identity_elem = {
    "Identity",   identity_attrs, NULL, identity_begin,
    identity_end, IOFF(line),     0};

/* ---- <Route> ---------------------------------------------------------------
 */

enum {
    RT_ACTION,
    RT_METHOD,
    RT_PATH,
    RT_PREFIX,
    RT_PARAM,
    RT_PARAM_IN,
    RT_MISSING,
    RT_STATUS,
    RT_WHEN,
    RT_SHADOW,
    RT_FAIL_MODE,
    RT_PASS_METHODS,
    RT_MAX_CALLS,
    RT_COST,
    RT_REFUSE
};

static const conf_attr_t route_attrs[] = {
    [RT_ACTION] = {"action", conf_set_name, ROFF(action), NULL, CONF_REQUIRED},
    [RT_METHOD] = {"method", set_methods, 0, NULL, 0},
    [RT_PATH] = {"path", set_path, 0, NULL, 0},
    [RT_PREFIX] = {"prefix", set_path, 0, "prefix", 0},
    [RT_PARAM] = {"param", set_param, 0, NULL, 0},
    [RT_PARAM_IN] = {"paramIn", conf_set_enum, ROFF(param_in), &param_in_enum,
                     0},
    [RT_MISSING] = {"missing", conf_set_enum, ROFF(missing), &missing_enum, 0},
    [RT_STATUS] = {"status", conf_set_num, ROFF(status), &status_range, 0},
    [RT_WHEN] = {"when", conf_set_when, 0, NULL, 0},
    [RT_SHADOW] = {"shadow", conf_set_enum, ROFF(shadow), &conf_shadow_enum, 0},
    [RT_FAIL_MODE] = {"failMode", conf_set_enum, ROFF(fail_mode),
                      &conf_rule_fail_enum, 0},
    [RT_PASS_METHODS] = {"passMethods", conf_set_pass_methods, 0, NULL, 0},
    [RT_MAX_CALLS] = {"maxCalls", conf_set_num, ROFF(max_calls), &calls_range,
                      0},
    [RT_COST] = {"cost", conf_set_num, ROFF(cost), &cost_range, 0},
    [RT_REFUSE] = {"refuse", conf_set_bool, ROFF(refuse), NULL, 0},
    {NULL, NULL, 0, NULL, 0}};

/* The next route entry, with its identity entries. */
static suspect_rc_t route_begin(conf_build_t *b, int line, size_t nchildren,
                                void **obj)
{
    size_t cap =
        nchildren < SUSPECT_MAX_IDENTITIES ? nchildren : SUSPECT_MAX_IDENTITIES;
    suspect_conf_route_t *r;

    if (b->conf->nroutes == b->routes_cap) {
        return conf_fail(b, line, "more than %u <Route> elements",
                         SUSPECT_CONF_MAX_ROUTES);
    }
    r = &b->routes[b->conf->nroutes++];
    r->param_in = 0; /* not given: conf_routes_check() sets the default */
    r->missing = SUSPECT_MISSING_SKIP;
    if (cap > 0) {
        r->identities = conf_alloc(b, cap * sizeof(*r->identities));
        if (r->identities == NULL) {
            return conf_nomem(b, line);
        }
    }
    b->identities_cap = cap;
    *obj = r;
    return SUSPECT_OK;
}

/* refuse="yes": nothing to count, so nothing that counts. */
static suspect_rc_t refusing_end(conf_build_t *b, const suspect_conf_route_t *r,
                                 uint32_t seen, int line)
{
    if (r->nidentities != 0 || r->noutcomes != 0 ||
        (seen & (1u << RT_COST)) != 0) {
        return conf_fail(b, line,
                         "Route: refuse=\"yes\" counts nothing: no "
                         "<Identity>, <Failure>, <Success> or cost");
    }
    return SUSPECT_OK;
}

/* One of path and prefix; at least one identity. */
static suspect_rc_t route_end(conf_build_t *b, void *obj, uint32_t seen,
                              int line)
{
    const suspect_conf_route_t *r = obj;
    uint32_t where = seen & ((1u << RT_PATH) | (1u << RT_PREFIX));

    if (where == 0) {
        return conf_fail(b, line, "Route: path or prefix is required");
    }
    if (where != (1u << RT_PATH) && where != (1u << RT_PREFIX)) {
        return conf_fail(b, line,
                         "Route: path and prefix exclude each other: give one");
    }
    if (r->refuse) {
        return refusing_end(b, r, seen, line);
    }
    if (r->nidentities == 0) {
        return conf_fail(b, line,
                         "Route: no <Identity>: a route counts "
                         "against at least one");
    }
    if ((seen & (1u << RT_PARAM_IN)) && !(seen & (1u << RT_PARAM)) &&
        conf_warn(b, line, "Route: paramIn without param; ignored") != 0) {
        return SUSPECT_E_NOMEM;
    }
    return SUSPECT_OK;
}

static const conf_elem_t *const route_children[] = {
    &identity_elem,   &conf_failure_elem, &conf_success_elem,
    &conf_allow_elem, &conf_deny_elem,    NULL};

const conf_elem_t conf_route_elem = {
    "Route", route_attrs, route_children, route_begin, route_end, ROFF(line),
    0};

/*
 * The default paramIn, once the mode is known: "any" in forward mode,
 * where the body is at hand and apps reading $_REQUEST or CGI.pm's
 * param() take the parameter from the query or the body alike; "query"
 * in the deciding modes, which never see a body.
 */
static void routes_default_param_in(conf_build_t *b)
{
    suspect_param_in_t def = b->conf->mode == SUSPECT_MODE_FORWARD
                                 ? SUSPECT_PARAM_ANY
                                 : SUSPECT_PARAM_QUERY;

    for (size_t i = 0; i < b->conf->nroutes; i++) {
        if (b->routes[i].param_in == 0) {
            b->routes[i].param_in = def;
        }
    }
}

/* Sets the defaults that depend on the mode; then, in the deciding modes,
 * checks that nothing reads the body: the web server sends none. */
suspect_rc_t conf_routes_check(conf_build_t *b)
{
    const suspect_conf_t *c = b->conf;
    const char *mode = conf_mode_name(c->mode);

    routes_default_param_in(b);
    if (c->mode == SUSPECT_MODE_FORWARD) {
        return SUSPECT_OK;
    }
    for (size_t i = 0; i < c->nroutes; i++) {
        const suspect_conf_route_t *r = &c->routes[i];
        if (r->param_name != NULL && r->param_in != SUSPECT_PARAM_QUERY) {
            return conf_fail(b, r->line,
                             "Route: paramIn=\"%s\" " BODY_IN_AUTH
                             "gets; use paramIn=\"query\"",
                             r->param_in == SUSPECT_PARAM_FORM      ? "form"
                             : r->param_in == SUSPECT_PARAM_REQUEST ? "request"
                                                                    : "any",
                             mode);
        }
        for (size_t j = 0; j < r->nwhen; j++) {
            if (r->when[j].kind == SUSPECT_SRC_FORM) {
                return conf_fail(b, r->line,
                                 "Route: when condition 'form:%s' " BODY_IN_AUTH
                                 "gets; use query:%s",
                                 r->when[j].name, mode, r->when[j].name);
            }
        }
        for (size_t j = 0; j < r->nidentities; j++) {
            const suspect_conf_identity_t *id = &r->identities[j];
            for (size_t k = 0; k < id->nsources; k++) {
                suspect_src_kind_t kind = id->source[k].kind;

                if (kind == SUSPECT_SRC_FORM || kind == SUSPECT_SRC_XMLRPC ||
                    kind == SUSPECT_SRC_JSON) {
                    return conf_fail(
                        b, id->line,
                        "Identity: from source '%s:%s' " BODY_IN_AUTH "gets",
                        suspect_src_kind_name(kind), id->source[k].name, mode);
                }
            }
        }
    }
    return SUSPECT_OK;
}
