/*
 * suspect_cgi.c - suspect-cgi: a CGI program that decides, then becomes
 * the real CGI program.
 *
 *   suspect-cgi [-c FILE] [-s DIR] [-v] [--] [PROGRAM [ARG...]]
 *   #!/usr/sbin/suspect-cgi -c FILE [PROGRAM]             a #! wrapper
 *   suspect-cgi -c FILE --check                            validate
 *
 * One process per request, so nothing is kept in memory between requests,
 * and what this program costs is mostly its own start.  So it links no
 * XML parser: it reads the compiled configuration (compiled.h), one binary
 * file holding suspect.xml (-c, else $SUSPECT_CONF, else
 * /etc/suspect/suspect.xml) and its limits file already parsed, checks
 * with one stat() per source that none of them changed since, and serves
 * the request (wrap_serve.c): decide, then answer the denial or execve()
 * the program with the environment, arguments and body it was given.
 *
 * When the compiled configuration is missing, damaged, of another
 * version, not trustworthy or stale, or for --check, this program
 * executes suspect-cgi-compile (wrap.h) in its place, with the same
 * arguments, environment and standard input, nothing of which has been
 * read or changed: it parses the XML, saves a new compiled configuration
 * and serves the request exactly as this program would.  So an edit costs
 * one slower request, never a decision on old settings.  Its argv[0] is
 * this program's own path, so that it too refuses a program that would
 * start suspect-cgi again.
 *
 * The compiler: $SUSPECT_CGI_COMPILE, else the one installed with this
 * program (SUSPECT_CGI_COMPILE_PATH, set by the build).  When it cannot be
 * executed the request gets a 500 and one line in the error log.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wrap_compiled.h"
#include "wrap.h"
#include "log/log.h"

#ifndef SUSPECT_CGI_COMPILE_PATH
#define SUSPECT_CGI_COMPILE_PATH "/usr/libexec/suspect/suspect-cgi-compile"
#endif

/*
 * Loads the compiled configuration of o into *s when it is there, sound
 * and fresh; false otherwise (*s then holds nothing).
 */
static bool load_compiled(const cgi_opts_t *o, compiled_t *s)
{
    char abs[PATH_MAX], path[PATH_MAX + 64];

    if (cgi_snap_path(o->snapdir, o->conf, abs, sizeof(abs), path,
                      sizeof(path)) != 0 ||
        compiled_read(path, s, NULL) != SUSPECT_OK) {
        return false;
    }
    if (!compiled_fresh(s, abs)) {
        compiled_clear(s);
        return false;
    }
    return true;
}

/*
 * Executes the compiler with argv (argv[0] replaced by this program's
 * path).  Returns only when it could not: 500 (as a CGI program) and one
 * line in the log, or for --check the message alone.  The exit status.
 */
static int run_compiler(char **argv, const cgi_opts_t *o)
{
    const char *env = getenv("SUSPECT_CGI_COMPILE");
    const char *compiler =
        env != NULL && env[0] != '\0' ? env : SUSPECT_CGI_COMPILE_PATH;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

    if (n > 0) {
        self[n] = '\0';
        argv[0] = self;
    }
    execv(compiler, argv);
    mw_log(MW_LOG_ERROR, "cannot run %s: %s (SUSPECT_CGI_COMPILE)", compiler,
           strerror(errno));
    if (o->check) {
        return 1;
    }
    cgi_bare_500();
    return 0;
}

/* Serves the request with the compiled configuration s (taken). */
static void serve(const cgi_opts_t *o, compiled_t *s)
{
    suspect_err_t err;
    cgi_req_t r;

    memset(&r, 0, sizeof(r));
    r.o = o;
    r.setup.conf = s->conf;
    r.setup.limits = s->limits;
    s->conf = NULL;
    s->limits = NULL;
    suspect_err_clear(&err);
    if (mw_cgi_io_new(environ, STDIN_FILENO, STDOUT_FILENO, &r.io, &err) !=
        SUSPECT_OK) {
        mw_log(MW_LOG_ERROR, "out of memory");
        cgi_bare_500();
    } else {
        r.req = mw_cgi_io_req(r.io);
        cgi_serve(&r);
    }
    cgi_release(&r);
    mw_cgi_io_free(r.io);
}

int main(int argc, char **argv)
{
    cgi_opts_t o;
    compiled_t s;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(&s, 0, sizeof(s));
    rc = cgi_opts_parse(argc, argv, &o);
    mw_log_init("suspect-cgi", o.verbose > 0 ? MW_LOG_INFO : MW_LOG_NOTICE);
    if (rc != 0) {
        if (rc < 0 && getenv("GATEWAY_INTERFACE") != NULL) {
            cgi_bare_500(); /* a broken #! line: the client gets an answer */
        }
        cgi_opts_free(&o);
        return rc < 0 ? 2 : 0;
    }
    if (o.check || !load_compiled(&o, &s)) {
        rc = run_compiler(argv, &o);
    } else {
        serve(&o, &s);
    }
    compiled_clear(&s);
    cgi_opts_free(&o);
    return rc;
}
