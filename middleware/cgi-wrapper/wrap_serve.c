/*
 * wrap_serve.c - one request of suspect-cgi once its configuration is
 * loaded (wrap.h): find the program, resolve the request as
 * suspect-fcgi does (mw_guard_resolve), open the store and let it decide
 * (mw_guard_finish) only when the request has keys to count, then either
 * answer the denial and return, or put the body back and execve() the
 * program with the environment it was given, unchanged; on a route that
 * counts by the response (<Failure>, <Success>), run the program as a
 * child and read its answer instead (wrap_watch.c).  A request no
 * route counts (a page, a stylesheet) never opens the store: it costs the
 * exec and the configuration, not the LMDB environment.
 *
 * The program: the first operand, else $SUSPECT_CGI_TARGET (either must
 * lie inside <Cgi root> when there is one), else <Cgi program>, else
 * SCRIPT_FILENAME inside <Cgi root>: the checks of the CGI spawner,
 * cgi_resolve(), which also resolves symbolic links and wants an
 * executable regular file.  A program that would run suspect-cgi again
 * (this program, the suspect-cgi that executed it, or a #! script naming
 * either) is refused instead of looping.
 *
 * Failures never let a counted request through unchecked: an unusable
 * program, or a store that cannot be opened for a request with keys, is a
 * 500 (503 with failMode="closed", the route's or its action's, else the
 * store's) and one line on stderr, the web server's error log; only
 * failMode="open" (and a route in shadow mode, logged as would-deny) runs
 * the program when the store cannot be opened.  Denials, refusals and
 * would-denies are logged as suspect-fcgi logs them
 * (mw_guard_log_verdict()).  Nothing is freed before execve(), which
 * drops the whole address space anyway (closing the store first cost 50
 * to 70 us a request: docs/BENCHMARKS.md); every descriptor the stores
 * open is close-on-exec (the LMDB store's, the Redis store's), so none
 * reaches the program, as the suite checks.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "forward/cgi_internal.h"
#include "wrap.h"
#include "response/error_page.h"
#include "log/log.h"
#include "setup/open_store.h"
#include "suspect_failover.h"

/* Entries of the per-request local store: SUSPECT_MAX_IDENTITIES keys and
 * their locks, with room to spare. */
#define CGI_LOCAL_ENTRIES 64

/* One log line, then the error response; -1. */
int cgi_refuse(cgi_req_t *r, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    mw_vlog(status >= 500 ? MW_LOG_ERROR : MW_LOG_NOTICE, fmt, ap);
    va_end(ap);
    mw_error_respond(r->req, status);
    return -1;
}

/* cgi_refuse() with err formatted after what. */
int cgi_refuse_err(cgi_req_t *r, int status, const char *what,
                   const suspect_err_t *err)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    return cgi_refuse(r, status, "%s%s", what, msg);
}

/* Whether identity id reads an XML-RPC body (libxml2). */
static bool reads_xmlrpc(const suspect_conf_identity_t *id)
{
    for (size_t k = 0; k < id->nsources; k++) {
        if (id->source[k].kind == SUSPECT_SRC_XMLRPC) {
            return true;
        }
    }
    return false;
}

/* suspect-cgi's own checks of a loaded suspect.xml. */
suspect_rc_t cgi_check_conf(const suspect_conf_t *c, suspect_err_t *err)
{
    if (c->mode != SUSPECT_MODE_FORWARD) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, c->file, c->server_line,
                               "Server: suspect-cgi runs the program itself: "
                               "mode must be forward");
    }
    if (c->has_upstream) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, c->file, c->upstream_line,
                               "Upstream: suspect-cgi runs CGI programs: use "
                               "<Cgi>");
    }
    for (size_t i = 0; i < c->nroutes; i++) {
        for (size_t j = 0; j < c->routes[i].nidentities; j++) {
            const suspect_conf_identity_t *id = &c->routes[i].identities[j];
            if (id->normalize != NULL &&
                strstr(id->normalize, "html-entities") != NULL) {
                return suspect_err_set(
                    err, SUSPECT_E_CONFIG, c->file, id->line,
                    "Identity: normalize html-entities needs the HTML entity "
                    "table of an XML parser, which suspect-cgi does not link: "
                    "use suspect-fcgi");
            }
            if (reads_xmlrpc(id)) {
                return suspect_err_set(
                    err, SUSPECT_E_CONFIG, c->file, id->line,
                    "Identity: xmlrpc: sources need an XML parser, which "
                    "suspect-cgi does not link: use suspect-fcgi");
            }
            if (id->normalize != NULL &&
                strstr(id->normalize, "collate:") != NULL) {
                return suspect_err_set(
                    err, SUSPECT_E_CONFIG, c->file, id->line,
                    "Identity: normalize collate needs ICU's collation "
                    "tables, which suspect-cgi does not link: use "
                    "suspect-fcgi");
            }
        }
    }
    if (c->store_line != 0 && c->store == SUSPECT_STORE_MEMORY) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, c->file, c->store_line,
                               "Store: type memory forgets every count when "
                               "suspect-cgi exits after the request: use "
                               "lmdb or redis (no <Store>: lmdb at "
                               "%s)",
                               CGI_DEFAULT_LMDB);
    }
    return SUSPECT_OK;
}

/* Whether path is self or wrapper (NULL: only self). */
static bool is_us_as_is(const char *path, const char *self, const char *wrapper)
{
    return strcmp(path, self) == 0 ||
           (wrapper != NULL && strcmp(path, wrapper) == 0);
}

/* Whether path resolves to self or to wrapper. */
static bool is_us(const char *path, const char *self, const char *wrapper)
{
    char real[PATH_MAX];

    return is_us_as_is(path, self, wrapper) ||
           (realpath(path, real) != NULL && is_us_as_is(real, self, wrapper));
}

/* Whether script (resolved: cgi_resolve() followed its links) would start
 * suspect-cgi again: it is this program or wrapper, or a #! script whose
 * interpreter is. */
static bool runs_self(const char *script, const char *wrapper)
{
    char self[PATH_MAX], head[256];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    ssize_t got;
    char *p;
    int fd;

    if (n <= 0) {
        return false;
    }
    self[n] = '\0';
    if (is_us_as_is(script, self, wrapper)) {
        return true;
    }
    fd = open(script, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        return false; /* unreadable: no interpreter could run it */
    }
    got = read(fd, head, sizeof(head) - 1);
    close(fd);
    if (got < 2 || strncmp(head, "#!", 2) != 0) {
        return false;
    }
    head[got] = '\0';
    p = head + 2 + strspn(head + 2, " \t");
    p[strcspn(p, " \t\r\n")] = '\0';
    return is_us(p, self, wrapper);
}

/*
 * cgi_resolve() for a program named on the command line or in the
 * environment: inside <Cgi root> when there is one (checked as the
 * spawner checks a request's SCRIPT_FILENAME), else anywhere.
 */
static int resolve_named(const suspect_conf_t *c, const char *named,
                         char *script)
{
    mw_param_t p = {.name = "SCRIPT_FILENAME",
                    .name_len = 15,
                    .value = named,
                    .value_len = strlen(named)};
    mw_req_t one;
    mw_cgi_opts_t o;

    memset(&o, 0, sizeof(o));
    memset(&one, 0, sizeof(one));
    one.params = &p;
    one.nparams = 1;
    o.root = c->cgi_root;
    o.program = c->cgi_root == NULL ? named : NULL;
    return cgi_resolve(&o, &one, script);
}

/* Finds and checks the program into r->script; 0 or -1 (answered). */
static int resolve_target(cgi_req_t *r)
{
    const char *named =
        r->o->prog != NULL ? r->o->prog[0] : getenv("SUSPECT_CGI_TARGET");
    mw_cgi_opts_t o;
    int st;

    memset(&o, 0, sizeof(o));
    if (named != NULL && named[0] != '\0') {
        st = resolve_named(r->setup.conf, named, r->script);
        o.program = named;
    } else {
        o.program = r->setup.conf->cgi_program;
        o.root = r->setup.conf->cgi_root;
        st = cgi_resolve(&o, r->req, r->script);
    }
    if (st != 0 && o.program != NULL) {
        return cgi_refuse(r, 500, "program %s: %s", o.program,
                          st == 404   ? "not found"
                          : st == 403 ? "not an executable file (inside <Cgi "
                                        "root> if there is one)"
                                      : "cannot be resolved");
    }
    if (st != 0) {
        const char *sf = mw_req_param(r->req, "SCRIPT_FILENAME", NULL);

        return cgi_refuse(
            r, st, "SCRIPT_FILENAME %s: %s", sf != NULL ? sf : "-",
            st == 404   ? "not found"
            : st == 403 ? "not an executable file inside <Cgi root>"
                        : "no <Cgi root> to look in");
    }
    if (runs_self(r->script, r->wrapper_path)) {
        return cgi_refuse(r, 500,
                          "program %s would start suspect-cgi again: name "
                          "the real program on the #! line, in "
                          "SUSPECT_CGI_TARGET or in <Cgi program>",
                          r->script);
    }
    return 0;
}

/* The fail mode of the resolution's route: its own or its action's,
 * else the store's. */
static suspect_failmode_t fail_mode_of(const suspect_conf_t *c,
                                       const mw_resolution_t *res)
{
    uint32_t m = res->verdict.rule.fail_mode;

    if (m >= SUSPECT_RULE_FAIL_LOCAL && m <= SUSPECT_RULE_FAIL_CLOSED) {
        return (suspect_failmode_t)(m - 1);
    }
    return (suspect_failmode_t)c->fail_mode;
}

/*
 * Opens the store: <Store>, or without one the LMDB store at the default
 * path (a copy of the configuration with only the store changed, since
 * mw_store_new() reads nothing else that matters).  The in-process store
 * of failMode="local" lives for this one request, which touches a few
 * keys: it is made small unless maxEntries says otherwise.  A store that
 * cannot be opened takes the route's fail mode (open: the program runs
 * unchecked; closed: 503; local: 500, a configuration to fix), and a
 * route in shadow mode lets the request through, logged as would-deny.
 * 0, 1 when the program may run without the store, -1 (answered).
 */
static int open_store(cgi_req_t *r, const mw_resolution_t *res)
{
    const char *env = getenv("SUSPECT_LMDB");
    suspect_conf_t copy = *r->setup.conf;
    const suspect_conf_t *c = &copy;
    suspect_failmode_t mode = fail_mode_of(c, res);
    mw_verdict_t v = res->verdict;
    suspect_err_t err;
    char msg[600];

    if (copy.store_line == 0) {
        copy.store = SUSPECT_STORE_LMDB;
        copy.lmdb_path = env != NULL && env[0] != '\0' ? env : CGI_DEFAULT_LMDB;
    }
    if (copy.memory_max_entries == 0) {
        copy.memory_max_entries = CGI_LOCAL_ENTRIES;
    }
    suspect_err_clear(&err);
    if (mw_store_new(c, &r->setup.store, &err) == SUSPECT_OK) {
        return 0;
    }
    suspect_err_format(&err, msg, sizeof(msg));
    if (mode == SUSPECT_FAIL_OPEN) {
        mw_log(MW_LOG_WARNING, "store: %s; failMode open: running %s unchecked",
               msg, r->script);
        return 1;
    }
    if (!v.shadow) {
        return cgi_refuse(r, mode == SUSPECT_FAIL_CLOSED ? 503 : 500,
                          "store: %s", msg);
    }
    mw_log(MW_LOG_ERROR, "store: %s", msg);
    v.kind = MW_VERDICT_ALLOW;
    v.would_deny = true;
    v.status = mode == SUSPECT_FAIL_CLOSED ? 503 : 500;
    v.why = "store unusable";
    mw_guard_log_verdict(r->setup.guard, r->req, &v);
    return 1;
}

/* Logs v when it is a refusal or a would-deny, and answers it when it
 * stops the request: 0 when the program may run, -1 when answered. */
static int answer(cgi_req_t *r, const mw_verdict_t *v)
{
    mw_guard_log_verdict(r->setup.guard, r->req, v);
    if (v->kind == MW_VERDICT_DENY || v->kind == MW_VERDICT_REJECT ||
        v->kind == MW_VERDICT_UNAVAILABLE) {
        mw_guard_respond(r->setup.guard, r->req, v);
        return -1;
    }
    return 0;
}

/*
 * Decides the request: resolves it, and opens the store and has it
 * decide only when there are keys.  0 when the program may run (also when
 * the store failed and the fail mode or shadow mode lets it), -1 when
 * answered.
 */
static int decide(cgi_req_t *r, mw_resolution_t *res, mw_verdict_t *v)
{
    suspect_err_t err;
    int st;

    suspect_err_clear(&err);
    memset(v, 0, sizeof(*v));
    if (mw_guard_resolve(r->setup.guard, r->setup.limits, r->req, wall_ms(),
                         res, &err) != SUSPECT_OK) {
        return cgi_refuse_err(r, err.code == SUSPECT_E_NOMEM ? 503 : 400,
                              "request refused: ", &err);
    }
    *v = res->verdict;
    if (res->nkeys == 0) {
        return answer(r, v);
    }
    st = open_store(r, res);
    if (st != 0) {
        return st < 0 ? -1 : 0;
    }
    mw_guard_finish(r->setup.store, res, v);
    mw_resolution_release(res); /* only a slot's keys are needed after */
    return answer(r, v);
}

/* Frees the store, the snapshots and the guard. */
void cgi_release(cgi_req_t *r)
{
    mw_setup_release(&r->setup);
}

/* Puts the body back, enters the program's directory and executes it;
 * returns only on failure (answered). */
static int exec_target(cgi_req_t *r)
{
    char **argv = r->o->prog != NULL ? r->o->prog : r->o->extra;
    char dir[PATH_MAX];
    suspect_err_t err;
    int st;

    suspect_err_clear(&err);
    if (mw_cgi_io_rewind(r->io, CGI_BODY_MAX, &st, &err) != SUSPECT_OK) {
        return cgi_refuse_err(r, st, "", &err);
    }
    memcpy(dir, r->script, sizeof(dir));
    *strrchr(dir, '/') = '\0';
    if (chdir(dir[0] != '\0' ? dir : "/") != 0) {
        return cgi_refuse(r, 500, "program %s: cannot enter its directory: %s",
                          r->script, strerror(errno));
    }
    argv[0] = r->script;
    execve(r->script, argv, environ);
    return cgi_refuse(r, 500, "program %s: cannot execute: %s", r->script,
                      strerror(errno));
}

/* Checks r->setup.conf and compiles its guard; see wrap.h. */
suspect_rc_t cgi_guard_new(cgi_req_t *r, suspect_err_t *err)
{
    suspect_rc_t rc = cgi_check_conf(r->setup.conf, err);

    if (rc == SUSPECT_OK) {
        rc = mw_guard_new(r->setup.conf, &r->setup.guard, err);
    }
    if (rc == SUSPECT_OK) {
        mw_cgi_io_set_timeout(r->io, r->setup.conf->io_timeout_ms);
    }
    return rc;
}

/* cgi_guard_new(), a failure answered; 0 or -1. */
int cgi_compile_guard(cgi_req_t *r)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (cgi_guard_new(r, &err) != SUSPECT_OK) {
        return cgi_refuse_err(r, 500, "", &err);
    }
    return 0;
}

/* Program, decision (the store when needed), then the answer or
 * execve(). */
void cgi_serve(cgi_req_t *r)
{
    mw_resolution_t res;
    mw_verdict_t v;

    if ((r->setup.guard == NULL && cgi_compile_guard(r) != 0) ||
        resolve_target(r) != 0 || decide(r, &res, &v) != 0) {
        return;
    }
    if (v.ticket.id != 0) {
        cgi_run_watched(r, &res, &v); /* the answer read: the child's parent */
        return;
    }
    exec_target(r); /* the store left open: see the top */
}
