/*
 * suspect_cgi_compile.c - suspect-cgi-compile: suspect-cgi with the XML
 * parsers, which suspect-cgi executes in its place when its compiled
 * configuration is missing or stale (suspect_cgi.c), and for --check.
 *
 * It takes the same command line, environment and standard input as
 * suspect-cgi (wrap.h) and does what suspect-cgi does, from the XML:
 * loads suspect.xml and its limits file (compiled_load(): with the identity
 * of each file as read), checks them for suspect-cgi, compiles the guard
 * (its allow and deny lists packed for the file: later requests take them
 * as they are, mw_guard_pack_lists()), saves the compiled
 * configuration for the requests after this one (wrap_compiled.c: atomically,
 * so concurrent first requests each write a whole file and the last
 * rename wins, all of them equal), and serves the request (wrap_serve.c).
 * Saving comes before deciding, so it never depends on the request.
 *
 * A file that does not load, or fails suspect-cgi's checks (a list entry
 * included), is not saved: the request is decided with the last compiled
 * configuration saved for this suspect.xml, as suspect-fcgi keeps its
 * running configuration on a bad reload, and the error is logged once;
 * the next request tries again.  Without one (the first request ever), a
 * 500 and one line in the error log, every time.  argv[0] is the path of the
 * suspect-cgi that executed this program (when run by hand, whatever it is): a
 * program that would start either again is refused.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wrap_compiled.h"
#include "wrap.h"
#include "setup/check.h"
#include "log/log.h"

/*
 * A compile failed with err: decides with the last compiled configuration
 * saved for this suspect.xml, as suspect-fcgi keeps its running one, and
 * says so once; without one (or when it no longer compiles), a 500.  0 or
 * -1 (answered).
 */
static int keep_last(cgi_req_t *r, const suspect_err_t *err)
{
    char path[PATH_MAX + 64], msg[600];
    suspect_err_t again;
    compiled_t s;

    suspect_err_format(err, msg, sizeof(msg));
    if (!cgi_snap_last(r->o->snapdir, r->o->conf, &s, path, sizeof(path))) {
        return cgi_refuse(r, 500, "%s", msg);
    }
    r->setup.conf = s.conf;
    r->setup.limits = s.limits;
    s.conf = NULL;
    s.limits = NULL;
    compiled_clear(&s);
    suspect_err_clear(&again);
    if (cgi_guard_new(r, &again) != SUSPECT_OK) {
        return cgi_refuse(r, 500, "%s", msg);
    }
    if (cgi_snap_first_to_say(path, msg)) {
        mw_log(MW_LOG_ERROR,
               "%s; keeping the last good configuration (%s) until this is "
               "fixed",
               msg, path);
    }
    return 0;
}

/* Loads the XML into r and saves the compiled configuration; a failure
 * keeps the last good one (keep_last()).  0 or -1 (answered). */
static int load(cgi_req_t *r)
{
    suspect_err_t err;
    compiled_t s;

    suspect_err_clear(&err);
    if (compiled_load(r->o->conf, &s, &err) != SUSPECT_OK) {
        return keep_last(r, &err);
    }
    r->setup.conf = suspect_conf_ref(s.conf);
    r->setup.limits = suspect_limits_ref(s.limits);
    if (cgi_guard_new(r, &err) != SUSPECT_OK) {
        compiled_clear(&s);
        mw_setup_release(&r->setup);
        return keep_last(r, &err);
    }
    /* The lists as compiled, so that later requests need not compile
     * them; without memory for it, their texts are saved. */
    (void)mw_guard_pack_lists(r->setup.guard, &s, NULL);
    cgi_snap_save(r->o->snapdir, &s);
    compiled_clear(&s);
    return 0;
}

/* --check: what suspect-cgi refuses first (so that nothing says "ok"
 * before the error), then the daemon's check and what differs here. */
static int check(const cgi_opts_t *o)
{
    const suspect_conf_t *c = NULL;
    suspect_err_t err;
    char msg[600];
    int rc = 0;

    suspect_err_clear(&err);
    if (suspect_conf_load(o->conf, &c, &err) == SUSPECT_OK &&
        cgi_check_conf(c, &err) != SUSPECT_OK) {
        suspect_err_format(&err, msg, sizeof(msg));
        fprintf(stderr, "%s\n", msg);
        suspect_conf_unref(c);
        return 1;
    }
    rc = mw_check(o->conf, stdout, stderr);
    if (rc == 0 && c != NULL && c->store_line == 0) {
        printf("store (suspect-cgi): lmdb at %s\n", CGI_DEFAULT_LMDB);
    }
    if (rc == 0 && c != NULL && c->shadow_header != NULL) {
        printf("shadowHeader (suspect-cgi): not added, the program writes "
               "the response; a would-deny is in the error log\n");
    }
    suspect_conf_unref(c);
    return rc;
}

/* One request. */
static void serve(cgi_req_t *r)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (mw_cgi_io_new(environ, STDIN_FILENO, STDOUT_FILENO, &r->io, &err) !=
        SUSPECT_OK) {
        mw_log(MW_LOG_ERROR, "out of memory");
        cgi_bare_500();
        return;
    }
    r->req = mw_cgi_io_req(r->io);
    if (load(r) == 0) {
        cgi_serve(r);
    }
}

int main(int argc, char **argv)
{
    char wrapper[PATH_MAX];
    cgi_opts_t o;
    cgi_req_t r;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(&r, 0, sizeof(r));
    rc = cgi_opts_parse(argc, argv, &o);
    mw_log_init("suspect-cgi", o.verbose > 0 ? MW_LOG_INFO : MW_LOG_NOTICE);
    if (rc != 0 || o.check) {
        rc = rc != 0 ? (rc < 0 ? 2 : 0) : check(&o);
        if (rc == 2 && getenv("GATEWAY_INTERFACE") != NULL) {
            cgi_bare_500(); /* a broken #! line: the client gets an answer */
        }
        cgi_opts_free(&o);
        return rc;
    }
    r.o = &o;
    r.wrapper_path = realpath(argv[0], wrapper) != NULL ? wrapper : NULL;
    serve(&r);
    cgi_release(&r);
    mw_cgi_io_free(r.io);
    cgi_opts_free(&o);
    return 0;
}
