/*
 * wrap.h - what the two programs of suspect-cgi share: its command
 * line (wrap_args.c) and the request after the configuration is loaded
 * (wrap_serve.c).
 *
 * suspect-cgi (suspect_cgi.c) loads the compiled configuration and links
 * no XML parser; suspect-cgi-compile (suspect_cgi_compile.c) parses
 * suspect.xml and the limits file, saves the compiled configuration, and
 * is what suspect-cgi executes, with the same arguments, environment and
 * standard input, when there is none or it is stale.  Both then serve the
 * request the same way: cgi_serve().
 */
#ifndef MW_WRAP_H
#define MW_WRAP_H

#include <limits.h>
#include <stdbool.h>

#include "wrap_io.h"
#include "guard/guard.h"
#include "conf/suspect_conf.h"
#include "suspect_error.h"
#include "limits/suspect_limits.h"
#include "setup/setup.h"
#include "suspect_store.h"

#define CGI_DEFAULT_CONF     "/etc/suspect/suspect.xml"
#define CGI_DEFAULT_LMDB     "/var/lib/suspect/suspect.lmdb"
#define CGI_DEFAULT_SNAPSHOT "/var/lib/suspect"

typedef struct cgi_opts {
    const char *conf;    /* suspect.xml */
    const char *snapdir; /* where compiled configurations live */
    bool check;
    int verbose;
    char **prog;  /* the program named by the operands and its arguments,
                     or NULL */
    char **extra; /* with no program named: the place before the request's
                     own arguments, then them (NULL-terminated) */
    char **args;  /* the expanded argument vector (owned) */
    char *split;  /* the copy of the #! argument it points into */
} cgi_opts_t;

/*
 * Parses argv (a #! argument split at its blanks, wrap_args.c) into o,
 * with the defaults of the environment.  0 to serve a request, 1 to exit
 * 0 (--help, --version: printed), -1 to exit 2 (a bad command line:
 * said on stderr).  o must be zeroed first; free it with cgi_opts_free().
 */
int cgi_opts_parse(int argc, char **argv, cgi_opts_t *o);
void cgi_opts_free(cgi_opts_t *o);

/* Answers 500 without the request's I/O (it could not be made, or the command
 * line is broken and the web server still needs an answer). */
void cgi_bare_500(void);

/* One request. */
typedef struct cgi_req {
    const cgi_opts_t *o;
    const char *wrapper_path; /* the suspect-cgi that executed this program,
                               or NULL: a program that would start it
                               again is refused too (wrap_serve.c) */
    mw_cgi_io_t *io;
    mw_req_t *req;
    mw_setup_t setup; /* conf and limits the loader's; all owned */
    char script[PATH_MAX];
} cgi_req_t;

/*
 * Logs one line (an error for a 5xx) and answers status on r's request.
 * Returns -1.
 */
int cgi_refuse(cgi_req_t *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* cgi_refuse() with what, then the message of err. */
int cgi_refuse_err(cgi_req_t *r, int status, const char *what,
                   const suspect_err_t *err);

/*
 * What suspect-cgi needs of a loaded suspect.xml beyond what the loader
 * checks: mode forward, <Cgi> (no <Upstream>), a store that outlives the
 * process.  SUSPECT_E_CONFIG with file:line.
 */
suspect_rc_t cgi_check_conf(const suspect_conf_t *c, suspect_err_t *err);

/*
 * Checks r->setup.conf (cgi_check_conf()) and compiles its guard into
 * r->setup.guard (its allow and deny lists' entries checked there), with
 * the body timeout of the configuration.  SUSPECT_OK, or the error of
 * either (nothing answered).
 */
suspect_rc_t cgi_guard_new(cgi_req_t *r, suspect_err_t *err);

/* cgi_guard_new(), its failure answered: 0, or -1 (a 500 answered). */
int cgi_compile_guard(cgi_req_t *r);

/*
 * Serves the request with r->setup.conf and r->setup.limits (loaded; the guard
 * compiled first when r->setup.guard is NULL): finds the program, opens the
 * store, decides, and either answers (a denial, an error) or puts the body
 * back and execve()s the program.  Returns only when it answered; what it
 * opened is freed by cgi_release().
 */
void cgi_serve(cgi_req_t *r);

/* A request of a route that counts by the response, allowed with a reservation
 * (v->ticket.id != 0): the program run as suspect-cgi's child, its
 * response relayed and read, the reservation settled by what it said
 * (wrap_watch.c).  Answers every failure itself. */
void cgi_run_watched(cgi_req_t *r, const mw_resolution_t *res,
                     const mw_verdict_t *v);

/* Frees what r holds but its I/O. */
void cgi_release(cgi_req_t *r);

#endif
