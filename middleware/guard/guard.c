/*
 * guard.c - suspect.xml compiled for requests.
 *
 * Compiling (mw_guard_new): the trusted proxy list is parsed into an
 * mw_trust_t, every header source gets its CGI variable name
 * (X-Member-Code -> HTTP_X_MEMBER_CODE) in one pool, and every length the
 * request path needs (route paths, methods, parameter and source names) is
 * measured once.  Whatever a request could only find out too late (a bad
 * name, a path that is not normalised, a prefix too long for its family)
 * is refused here with "file:line: message".
 *
 * Deciding is guard_decide.c's, answering guard_respond.c's.
 *
 * Invariants: a guard never changes after mw_guard_new(); refs is only
 * touched atomically.
 */
#include "guard_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "alloc.h"
#include "response/challenge_page.h"
#include "request/xmlrpc.h"

/* ---- compiling ---------------------------------------------------------- */

/* Records a config error at the conf's line. */
#define CONF_ERR(err, conf, line, ...)                                         \
    suspect_err_set((err), SUSPECT_E_CONFIG, (conf)->file, (line), __VA_ARGS__)

static suspect_rc_t compile_trust(mw_guard_t *g, const suspect_conf_t *conf,
                                  suspect_err_t *err)
{
    suspect_err_t e;
    unsigned v4 = conf->ipv4_prefix;
    unsigned v6 = conf->ipv6_prefix;

    suspect_err_clear(&e);
    if (conf->trusted_proxies != NULL &&
        mw_trust_parse(&g->trust, conf->trusted_proxies,
                       strlen(conf->trusted_proxies), &e) != SUSPECT_OK) {
        return CONF_ERR(err, conf, conf->client_ip_line, "ClientIp: %s",
                        e.text);
    }
    /* "Forwarded, else X-Forwarded-For" would believe a header the proxy
     * does not write, and so a client's (the loader refuses it too). */
    if (conf->fwd_header != SUSPECT_FWD_NONE &&
        conf->fwd_header != SUSPECT_FWD_XFF &&
        conf->fwd_header != SUSPECT_FWD_FORWARDED) {
        return CONF_ERR(err, conf, conf->client_ip_line,
                        "ClientIp: header must name the one header the "
                        "trusted proxy sets (x-forwarded-for or forwarded)");
    }
    if (v4 > 32 || v6 > 128) {
        return CONF_ERR(err, conf, conf->client_ip_line,
                        "ClientIp: prefix %u is too long for IPv%d",
                        v4 > 32 ? v4 : v6, v4 > 32 ? 4 : 6);
    }
    return SUSPECT_OK;
}

/* True when s (NULL: the default) can be a header value. */
static bool header_safe(const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f) {
            return false;
        }
    }
    return true;
}

/* Bytes the header variable names of conf need in the pool. */
static size_t names_size(const suspect_conf_t *conf)
{
    size_t n = 0;

    for (size_t i = 0; i < conf->nroutes; i++) {
        const suspect_conf_route_t *r = &conf->routes[i];

        for (size_t k = 0; k < r->nwhen; k++) {
            if (r->when[k].kind == SUSPECT_SRC_HEADER) {
                n += strlen(r->when[k].name) + sizeof("HTTP_");
            }
        }
        for (size_t j = 0; j < r->nidentities; j++) {
            for (size_t k = 0; k < r->identities[j].nsources; k++) {
                const suspect_conf_source_t *s = &r->identities[j].source[k];

                if (s->kind == SUSPECT_SRC_HEADER && s->name != NULL) {
                    n += strlen(s->name) + sizeof("HTTP_");
                }
            }
        }
    }
    return n;
}

/* An xmlrpc source's "METHOD:POS" split into out: the method (or prefix,
 * its '*' left out) and the place. */
static suspect_rc_t compile_xmlrpc(const suspect_conf_t *conf, int line,
                                   guard_source_t *out, suspect_err_t *err)
{
    size_t n = out->name_len;

    if (mw_xmlrpc_read == NULL) {
        return CONF_ERR(err, conf, line,
                        "Identity: xmlrpc: sources need an XML parser, which "
                        "suspect-cgi does not link (use suspect-fcgi or "
                        "libsuspect-guard)");
    }
    if (n < 3 || out->name[n - 2] != ':' || out->name[n - 1] < '1' ||
        out->name[n - 1] > '8') {
        return CONF_ERR(err, conf, line, "Identity: bad xmlrpc source");
    }
    out->pos = (unsigned)(out->name[n - 1] - '0');
    out->name_len = n - 2;
    out->prefix = out->name[out->name_len - 1] == '*';
    if (out->prefix) {
        out->name_len--;
    }
    return SUSPECT_OK;
}

/* Compiles one source (of an identity of type, or a route's condition
 * when type is NULL) at line; *pool advances past a header's variable
 * name. */
static suspect_rc_t compile_source(const suspect_conf_t *conf, const char *type,
                                   int line, const suspect_conf_source_t *s,
                                   guard_source_t *out, char **pool,
                                   suspect_err_t *err)
{
    size_t len = 0;
    const char *what = type != NULL ? "Identity" : "Route: when";

    out->kind = s->kind;
    out->part = s->part;
    if (s->kind == SUSPECT_SRC_CLIENT_IP) {
        return SUSPECT_OK;
    }
    if (s->kind < SUSPECT_SRC_HEADER || s->kind > SUSPECT_SRC_JSON ||
        s->name == NULL || s->name[0] == '\0') {
        return CONF_ERR(err, conf, line, "%s %s: bad source", what,
                        type != NULL ? type : "");
    }
    out->name = s->name;
    out->name_len = strlen(s->name);
    if (s->kind == SUSPECT_SRC_XMLRPC) {
        return compile_xmlrpc(conf, line, out, err);
    }
    if (s->kind != SUSPECT_SRC_HEADER) {
        return SUSPECT_OK;
    }
    /* The pool was sized for this name: it fits. */
    if (mw_header_var(s->name, out->name_len, *pool,
                      out->name_len + sizeof("HTTP_"), &len) != SUSPECT_OK) {
        return CONF_ERR(err, conf, line, "%s: '%s' is not a header name", what,
                        s->name);
    }
    out->name = *pool;
    out->name_len = len;
    *pool += len + 1;
    return SUSPECT_OK;
}

/* The identity's normalize text compiled into out->norm. */
static suspect_rc_t compile_normalize(const suspect_conf_t *conf,
                                      const suspect_conf_identity_t *ci,
                                      guard_identity_t *out, suspect_err_t *err)
{
    suspect_err_t e;

    if (ci->normalize == NULL) {
        return SUSPECT_OK;
    }
    suspect_err_clear(&e);
    if (mw_norm_compile(ci->normalize, strlen(ci->normalize), &out->norm, &e) !=
        SUSPECT_OK) {
        return e.code == SUSPECT_E_NOMEM
                   ? suspect_err_set(err, e.code, NULL, 0, "%s", e.text)
                   : CONF_ERR(err, conf, ci->line, "Identity: normalize %s",
                              e.text);
    }
    return SUSPECT_OK;
}

static suspect_rc_t compile_identity(const suspect_conf_t *conf,
                                     const suspect_conf_identity_t *ci,
                                     guard_identity_t *out, char **pool,
                                     suspect_err_t *err)
{
    out->conf = ci;
    out->nparts = ci->nparts;
    out->nsources = ci->nsources;
    if (ci->type == NULL || !suspect_name_valid(ci->type, strlen(ci->type)) ||
        ci->nparts < 1 || ci->nparts > SUSPECT_MAX_PARTS ||
        ci->nsources < ci->nparts || ci->nsources > SUSPECT_CONF_MAX_SOURCES) {
        return CONF_ERR(err, conf, ci->line, "Identity: bad type or sources");
    }
    for (size_t k = 0; k < ci->nsources; k++) {
        suspect_rc_t rc = compile_source(
            conf, ci->type, ci->line, &ci->source[k], &out->src[k], pool, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        if (out->src[k].part >= ci->nparts ||
            (k > 0 && out->src[k].part < out->src[k - 1].part)) {
            return CONF_ERR(err, conf, ci->line,
                            "Identity: sources out of part order");
        }
    }
    return compile_normalize(conf, ci, out, err);
}

/* True when path is absolute and already in normal form. */
static bool path_normal(const char *path)
{
    char buf[GUARD_PATH_STACK];
    size_t n = 0;
    size_t len = strlen(path);

    return guard_path_build(path, len, NULL, 0, false, buf, sizeof(buf), &n) ==
               SUSPECT_OK &&
           n == len && memcmp(buf, path, n) == 0;
}

/* The calls kind route r reads (GUARD_CALLS_*): SUSPECT_E_CONFIG (*why)
 * when it mixes XML-RPC and JSON. */
static suspect_rc_t calls_kind(const guard_route_t *r, int *kind,
                               const char **why)
{
    *kind = GUARD_CALLS_NONE;
    for (size_t j = 0; j < r->nids; j++) {
        const guard_identity_t *gi = &r->ids[j];

        for (size_t k = 0; k < gi->nsources; k++) {
            int this = gi->src[k].kind == SUSPECT_SRC_XMLRPC
                           ? GUARD_CALLS_XMLRPC
                       : gi->src[k].kind == SUSPECT_SRC_JSON ? GUARD_CALLS_JSON
                                                             : GUARD_CALLS_NONE;
            if (this != GUARD_CALLS_NONE && *kind != GUARD_CALLS_NONE &&
                this != *kind) {
                *why = "Route: reads XML-RPC or JSON bodies, not both";
                return SUSPECT_E_CONFIG;
            }
            if (this != GUARD_CALLS_NONE) {
                *kind = this;
            }
        }
    }
    return SUSPECT_OK;
}

/* The body of calls the route reads (guard_calls.c). */
static suspect_rc_t compile_calls(const suspect_conf_t *conf,
                                  const suspect_conf_route_t *cr,
                                  guard_route_t *out, suspect_err_t *err)
{
    const char *why = NULL;

    if (calls_kind(out, &out->calls, &why) != SUSPECT_OK) {
        return CONF_ERR(err, conf, cr->line, "%s", why);
    }
    return SUSPECT_OK;
}

static suspect_rc_t compile_route(const suspect_conf_t *conf,
                                  const suspect_conf_route_t *cr,
                                  guard_route_t *out, guard_identity_t *ids,
                                  char **pool, suspect_err_t *err)
{
    out->conf = cr;
    out->ids = ids;
    out->nids = cr->nidentities;
    if (cr->action == NULL ||
        !suspect_name_valid(cr->action, strlen(cr->action))) {
        return CONF_ERR(err, conf, cr->line, "Route: bad action name");
    }
    if (cr->path == NULL || !path_normal(cr->path)) {
        return CONF_ERR(err, conf, cr->line,
                        "Route: path must be absolute and normalised");
    }
    if (cr->param_name != NULL && cr->param_name[0] == '\0') {
        return CONF_ERR(err, conf, cr->line, "Route: empty parameter name");
    }
    if (cr->nmethods > SUSPECT_CONF_MAX_METHODS ||
        (cr->nidentities < 1 && !cr->refuse) ||
        cr->nidentities > SUSPECT_MAX_IDENTITIES ||
        (cr->status != 0 && (cr->status < 400 || cr->status > 599))) {
        return CONF_ERR(err, conf, cr->line, "Route: out of range");
    }
    out->path_len = strlen(cr->path);
    for (size_t i = 0; i < cr->nmethods; i++) {
        out->method_len[i] = strlen(cr->methods[i]);
    }
    out->param_name_len = cr->param_name != NULL ? strlen(cr->param_name) : 0;
    out->param_value_len =
        cr->param_value != NULL ? strlen(cr->param_value) : 0;
    out->nwhen = cr->nwhen;
    for (size_t k = 0; k < cr->nwhen && k < SUSPECT_CONF_MAX_WHEN; k++) {
        suspect_rc_t rc = compile_source(conf, NULL, cr->line, &cr->when[k],
                                         &out->when[k], pool, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    for (size_t j = 0; j < cr->nidentities; j++) {
        suspect_rc_t rc =
            compile_identity(conf, &cr->identities[j], &ids[j], pool, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    return compile_calls(conf, cr, out, err);
}

/* Compiles the allow and deny lists, the global ones and each route's. */
static suspect_rc_t compile_lists(mw_guard_t *g, const suspect_conf_t *conf,
                                  suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    if (conf->allow != NULL) {
        rc = guard_list_compile(conf, conf->allow, false, &g->allow, err);
    }
    if (rc == SUSPECT_OK && conf->deny != NULL) {
        rc = guard_list_compile(conf, conf->deny, true, &g->deny, err);
    }
    for (size_t i = 0; rc == SUSPECT_OK && i < conf->nroutes; i++) {
        const suspect_conf_route_t *cr = &conf->routes[i];

        if (cr->allow != NULL) {
            rc = guard_list_compile(conf, cr->allow, false, &g->routes[i].allow,
                                    err);
        }
        if (rc == SUSPECT_OK && cr->deny != NULL) {
            rc = guard_list_compile(conf, cr->deny, true, &g->routes[i].deny,
                                    err);
        }
    }
    return rc;
}

/* See guard.h. */
suspect_rc_t mw_guard_pack_lists(const mw_guard_t *g, compiled_t *s,
                                 suspect_err_t *err)
{
    size_t n = 2 + 2 * g->nroutes;
    compiled_blob_t *b = suspect_calloc(n, sizeof(*b));
    suspect_rc_t rc = SUSPECT_OK;

    if (b == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    for (size_t k = 0; k < n && rc == SUSPECT_OK; k++) {
        const guard_list_t *l =
            k < 2 ? (k == 0 ? g->allow : g->deny)
                  : ((k & 1) == 0 ? g->routes[(k - 2) / 2].allow
                                  : g->routes[(k - 2) / 2].deny);

        if (l != NULL) {
            rc = guard_list_pack(l, &b[k], err);
        }
    }
    if (rc != SUSPECT_OK) {
        for (size_t k = 0; k < n; k++) {
            free(b[k].p);
        }
        free(b);
        return rc;
    }
    s->packed = b;
    s->npacked = n;
    return SUSPECT_OK;
}

static void guard_free(mw_guard_t *g)
{
    guard_list_free(g->allow);
    guard_list_free(g->deny);
    for (size_t i = 0; g->routes != NULL && i < g->nroutes; i++) {
        guard_list_free(g->routes[i].allow);
        guard_list_free(g->routes[i].deny);
    }
    for (size_t i = 0; g->ids != NULL && i < g->nids; i++) {
        mw_norm_free(g->ids[i].norm);
    }
    if (g->conf_ref) {
        suspect_conf_unref(g->conf);
    }
    guard_device_free(g->device);
    free(g->routes);
    free(g->ids);
    free(g->names);
    free(g);
}

/* A guard with its arrays allocated for conf, or NULL. */
static mw_guard_t *guard_alloc(const suspect_conf_t *conf)
{
    mw_guard_t *g = suspect_calloc(1, sizeof(*g));
    size_t nids = 0;

    if (g == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < conf->nroutes; i++) {
        nids += conf->routes[i].nidentities;
    }
    g->routes = suspect_calloc(conf->nroutes + 1, sizeof(*g->routes));
    g->ids = suspect_calloc(nids + 1, sizeof(*g->ids));
    g->nids = nids;
    g->names = suspect_malloc(names_size(conf) + 1);
    if (g->routes == NULL || g->ids == NULL || g->names == NULL) {
        guard_free(g);
        return NULL;
    }
    return g;
}

static suspect_rc_t compile(mw_guard_t *g, const suspect_conf_t *conf,
                            suspect_err_t *err)
{
    guard_identity_t *ids = g->ids;
    char *pool = g->names;
    suspect_rc_t rc = compile_trust(g, conf, err);

    if (rc == SUSPECT_OK && conf->template_body != NULL &&
        (conf->template_len > SUSPECT_CONF_MAX_TEMPLATE ||
         !header_safe(conf->template_type))) {
        return CONF_ERR(err, conf, conf->response_line,
                        "Response: template over %u bytes or its type has "
                        "control characters",
                        SUSPECT_CONF_MAX_TEMPLATE);
    }
    for (size_t i = 0; rc == SUSPECT_OK && i < conf->nroutes; i++) {
        rc = compile_route(conf, &conf->routes[i], &g->routes[i], ids, &pool,
                           err);
        ids += conf->routes[i].nidentities;
    }
    g->nroutes = conf->nroutes;
    if (rc == SUSPECT_OK) {
        rc = compile_lists(g, conf, err);
    }
    g->keyopts.format = conf->key_format;
    g->keyopts.prefix = conf->key_prefix;
    g->keyopts.hash_tag = conf->key_hash_tag != 0;
    g->form_max = conf->form_max != 0 ? conf->form_max : GUARD_FORM_MAX_DEFAULT;
    return rc;
}

/* Compiles conf into a guard that holds a reference on it. */
suspect_rc_t mw_guard_new(const suspect_conf_t *conf, mw_guard_t **out,
                          suspect_err_t *err)
{
    mw_guard_t *g;
    suspect_rc_t rc;

    if (conf == NULL || out == NULL || (conf->nroutes > 0 && !conf->routes)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "guard: no configuration");
    }
    g = guard_alloc(conf);
    if (g == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "guard: out of memory");
    }
    rc = compile(g, conf, err);
    if (rc == SUSPECT_OK &&
        (rc = guard_device_new(conf, &g->device)) != SUSPECT_OK) {
        rc = suspect_err_set(err, rc, NULL, 0,
                             rc == SUSPECT_E_NOMEM
                                 ? "guard: out of memory"
                                 : "guard: libsodium cannot start (device "
                                   "cookies need it)");
    }
    if (rc != SUSPECT_OK) {
        guard_free(g);
        return rc;
    }
    g->conf = suspect_conf_ref(conf);
    g->conf_ref = true;
    g->refs = 1;
    if (conf->challenge_key != NULL &&
        (sodium_init() < 0 ||
         mw_challenge_csp(g->challenge_csp, sizeof(g->challenge_csp)) == 0)) {
        guard_free(g);
        return suspect_err_set(err, SUSPECT_E_IO, NULL, 0,
                               "guard: libsodium cannot start (challenges "
                               "need it)");
    }
    *out = g;
    return SUSPECT_OK;
}

/* Adds a reference (thread-safe) and returns g. */
mw_guard_t *mw_guard_ref(mw_guard_t *g)
{
    if (g != NULL) {
        __atomic_fetch_add(&g->refs, 1, __ATOMIC_RELAXED);
    }
    return g;
}

/* Drops a reference; the last frees the guard and its conf reference. */
void mw_guard_unref(mw_guard_t *g)
{
    if (g != NULL && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        guard_free(g);
    }
}

/* The conf the guard was built from (borrowed from the guard). */
const suspect_conf_t *mw_guard_conf(const mw_guard_t *g)
{
    return g != NULL ? g->conf : NULL;
}
