/*
 * target.c - the script that will run for a request, as a path routes can
 * be matched against.
 *
 * A route protects an operation, not a URL: whatever a request's URL, the
 * route must match when the script that performs the operation runs.  The
 * URL (REQUEST_URI) and what the web server says it resolved (SCRIPT_NAME
 * + PATH_INFO, DOCUMENT_URI: path.c) are readings of that; this file adds
 * the ones that name the file itself, and decides when none can be told:
 *
 *  - the file, as a path under the document root: the file that runs,
 *    minus DOCUMENT_ROOT ("/srv/app/index.php" under "/srv/app" is
 *    "/index.php").  Which file runs depends on who runs it:
 *      forward mode, <Cgi root>: the program suspect-fcgi itself would run
 *        (mw_cgi_which(): symbolic links resolved), under the resolved
 *        root instead of DOCUMENT_ROOT, since that is where the program
 *        was looked up; a link "login.cgi" to app.cgi is "/app.cgi";
 *      forward mode, <Cgi program> or <Upstream scriptFilename>: that one
 *        file, whatever the URL: every request that reaches suspect-fcgi
 *        runs it.  When it does not lie under DOCUMENT_ROOT it has no
 *        URL path to be matched by, and routes are matched by the
 *        request's URL only (the operator must name every URL that
 *        reaches it; docs/suspect-xml.md says so): a route path cannot
 *        tell "this file" from "this URL" of a front controller;
 *      otherwise (an upstream running SCRIPT_FILENAME, an authorizer
 *        that the web server runs SCRIPT_FILENAME after): SCRIPT_FILENAME;
 *  - the directory index: a path ending in '/' is a directory, whose
 *    index file the web server chooses after asking an authorizer
 *    (lighttpd's index-file.names, Apache's DirectoryIndex: both ask
 *    first, with SCRIPT_FILENAME naming the directory).  With <Server
 *    index>, the directory is read as each of its names, in every mode
 *    but nginx auth_request (there nginx asks again in the location its
 *    index redirects to, with that script: the request would be counted
 *    twice).  Without it, an authorizer's request for a directory under
 *    which a route lies cannot be told: it is refused;
 *  - nginx auth_request: the subrequest only knows what the location
 *    that asked passes it.  SCRIPT_NAME must be there: the script that
 *    location runs ($fastcgi_script_name, examples/nginx/auth-request.conf),
 *    or empty where none runs (nginx asks again where one does).  A
 *    subrequest without it is refused: a configuration that does not say
 *    which script runs cannot be decided on.
 * A refusal is a 500 with its reason in the log (guard_decide.c); it is
 * the web server's or the operator's configuration that must change.
 *
 * Cost: a few variable lookups; in <Cgi root> mode, the realpath() of the
 * program and of the root, which the spawner does again (a few
 * microseconds against a fork and exec).
 */
#include "guard_internal.h"

#include <limits.h>
#include <string.h>

#include "forward/cgi.h"

/* The variable name of req, or NULL when missing or empty. */
static const char *var(const mw_req_t *req, const char *name, size_t *len)
{
    const char *v;

    *len = 0;
    v = mw_req_param(req, name, len);
    return v != NULL && *len > 0 ? v : NULL;
}

/* Whether the request is decided for a web server that runs the script
 * itself once the answer is 200 (an authorizer, either way). */
static bool authorizer(const mw_guard_t *g, const mw_req_t *req)
{
    return req->role == MW_ROLE_AUTHORIZER ||
           g->conf->mode == SUSPECT_MODE_AUTHORIZER;
}

/* Whether the request is nginx's auth_request subrequest. */
static bool auth_request(const mw_guard_t *g, const mw_req_t *req)
{
    return req->role != MW_ROLE_AUTHORIZER &&
           g->conf->mode == SUSPECT_MODE_AUTH_REQUEST;
}

/* file[0..len) under the directory root[0..root_len) (a trailing '/'
 * allowed on root): its path from there, starting with '/', into *out;
 * false when it does not lie there. */
static bool under(const char *file, size_t len, const char *root,
                  size_t root_len, const char **out, size_t *out_len)
{
    while (root_len > 1 && root[root_len - 1] == '/') {
        root_len--;
    }
    if (root_len == 1 && root[0] == '/') {
        root_len = 0;
    }
    if (len <= root_len || memcmp(file, root, root_len) != 0 ||
        file[root_len] != '/') {
        return false;
    }
    *out = file + root_len;
    *out_len = len - root_len;
    return true;
}

/* The pinned file of forward mode (<Cgi program>, <Upstream
 * scriptFilename>), or NULL. */
static const char *pinned(const suspect_conf_t *c)
{
    if (c->mode != SUSPECT_MODE_FORWARD) {
        return NULL;
    }
    if (c->has_upstream) {
        return c->upstream_script;
    }
    return c->has_cgi ? c->cgi_program : NULL;
}

suspect_rc_t guard_target_file(const mw_guard_t *g, const mw_req_t *req,
                               char *buf, size_t size, size_t *len,
                               guard_target_t *t)
{
    const suspect_conf_t *c = g->conf;
    const char *file = pinned(c), *root, *rel = NULL;
    size_t flen = 0, root_len = 0, rel_len = 0;

    *len = 0;
    memset(t, 0, sizeof(*t));
    if (auth_request(g, req) &&
        mw_req_param(req, "SCRIPT_NAME", NULL) == NULL) {
        t->unknown = "nginx's auth_request subrequest carries no "
                     "SCRIPT_NAME: pass the script the location runs "
                     "(examples/nginx/auth-request.conf)";
        return SUSPECT_OK;
    }
    t->script_given =
        !auth_request(g, req) || var(req, "SCRIPT_NAME", &flen) != NULL;
    if (c->mode == SUSPECT_MODE_FORWARD && c->has_cgi && file == NULL) {
        mw_cgi_opts_t o;
        char real[PATH_MAX];

        memset(&o, 0, sizeof(o));
        o.root = c->cgi_root;
        if (mw_cgi_which(&o, req, real, &root_len) != 0 ||
            real[root_len] != '/') {
            return SUSPECT_OK; /* nothing will run */
        }
        rel = real + root_len;
        rel_len = strlen(rel);
        if (rel_len + 1 > size) {
            return SUSPECT_E_FULL;
        }
        memcpy(buf, rel, rel_len + 1);
        *len = rel_len;
        return SUSPECT_OK;
    }
    if (file != NULL) {
        flen = strlen(file);
    } else {
        file = var(req, "SCRIPT_FILENAME", &flen);
    }
    root = var(req, "DOCUMENT_ROOT", &root_len);
    if (file == NULL) {
        return SUSPECT_OK;
    }
    if (root == NULL || !under(file, flen, root, root_len, &rel, &rel_len)) {
        return SUSPECT_OK;
    }
    if (rel_len + 1 > size) {
        return SUSPECT_E_FULL;
    }
    memcpy(buf, rel, rel_len);
    buf[rel_len] = '\0';
    *len = rel_len;
    return SUSPECT_OK;
}

/* Whether some route's path lies under the directory dir[0..len)
 * (ending in '/'), beyond the directory itself. */
static bool route_under(const mw_guard_t *g, const char *dir, size_t len)
{
    for (size_t i = 0; i < g->nroutes; i++) {
        const guard_route_t *r = &g->routes[i];

        if (r->path_len > len && memcmp(r->conf->path, dir, len) == 0) {
            return true;
        }
    }
    return false;
}

bool guard_target_expand(const mw_guard_t *g, const mw_req_t *req,
                         const guard_target_t *t)
{
    return g->conf->index_files != NULL && !auth_request(g, req) &&
           t->script_given;
}

const char *guard_target_check(const mw_guard_t *g, const mw_req_t *req,
                               const guard_paths_t *paths)
{
    if (g->conf->index_files != NULL || !authorizer(g, req)) {
        return NULL;
    }
    for (size_t i = 0; i < paths->n; i++) {
        if (paths->len[i] == 0 || paths->path[i][paths->len[i] - 1] != '/') {
            return NULL; /* a file: that one runs */
        }
    }
    for (size_t i = 0; i < paths->n; i++) {
        if (route_under(g, paths->path[i], paths->len[i])) {
            return "the web server serves this directory's index file, "
                   "which <Server index> does not name";
        }
    }
    return NULL;
}
