/*
 * suspect_cgi.c - suspect-cgi: a CGI program that decides, then becomes
 * the real CGI program.
 *
 *   suspect-cgi [-c FILE] [-v] [--] [PROGRAM [ARG...]]   run by the server
 *   #!/usr/sbin/suspect-cgi -c FILE [PROGRAM]             a #! wrapper
 *   suspect-cgi -c FILE --check                            validate
 *
 * One process per request, so nothing is kept between requests: every run
 * loads suspect.xml (-c, else $SUSPECT_CONF, else /etc/suspect/suspect.xml)
 * and its limits file, opens the store, decides as suspect-fcgi does
 * (mw_guard_decide), and then either answers the denial itself and exits 0,
 * or execve()s the program with the environment it was given, unchanged,
 * and the request body on stdin: untouched when nothing read it, else put
 * back whole (cgi_front.h).  The memory store would forget everything at
 * exit, so it is refused; without <Store> the LMDB store at
 * /var/lib/suspect/suspect.lmdb ($SUSPECT_LMDB) counts.
 *
 * The program: the first operand, else $SUSPECT_CGI_TARGET (either must
 * lie inside <Cgi root> when there is one), else <Cgi program>, else
 * SCRIPT_FILENAME inside <Cgi root>: the checks of the CGI spawner,
 * cgi_resolve(), which also resolves symbolic links and wants an
 * executable regular file.  The kernel runs a #! wrapper as
 * "suspect-cgi '-c FILE [PROGRAM]' WRAPPER [ARG...]": an option argument
 * holding blanks is split at them, the wrapper path after it is dropped
 * (running it would start suspect-cgi again), and what follows, the
 * request's own arguments, goes to the program.  A program that
 * would run suspect-cgi again all the same (itself, or a #! script naming
 * it) is refused.
 *
 * Failures never let a request through unchecked: a missing or invalid
 * file, an unusable program or a store that cannot be opened is a 500
 * (503 with failMode="closed") and one line on stderr, the web server's
 * error log; only failMode="open" runs the program when the store cannot
 * be opened.  Everything is freed before execve(), so no descriptor of the
 * store leaks into the program.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "cgi_front.h"
#include "cgi_internal.h"
#include "check.h"
#include "forward.h"
#include "guard.h"
#include "log.h"
#include "mwstore.h"
#include "suspect_failover.h"

#define DEFAULT_CONF "/etc/suspect/suspect.xml"
#define DEFAULT_LMDB "/var/lib/suspect/suspect.lmdb"

typedef struct options {
    const char *conf;
    bool check;
    int verbose;
    char **prog;  /* the program named by the operands and its arguments,
                     or NULL */
    char **extra; /* with no program named: the slot before the request's
                     own arguments, then them (NULL-terminated) */
    char **args;  /* the expanded argument vector (owned) */
    char *split;  /* the copy of the #! argument it points into */
} options_t;

/* What one run holds; cleared by release(). */
typedef struct run {
    const options_t *o;
    mw_cgi_front_t *front;
    mw_req_t *req;
    const suspect_conf_t *conf;
    mw_guard_t *guard;
    suspect_limits_t *limits;
    suspect_store_t *store;
    char script[PATH_MAX];
} run_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: suspect-cgi [-c FILE] [-v] [--] [PROGRAM [ARG...]]\n"
               "       suspect-cgi [-c FILE] --check\n"
               "  -c, --config FILE   suspect.xml (default $SUSPECT_CONF, "
               "else " DEFAULT_CONF ")\n"
               "  -t, --check         validate the files for suspect-cgi, "
               "print the routes, exit\n"
               "  -v, --verbose       log each denial\n"
               "  -V, --version       print the version\n"
               "PROGRAM defaults to $SUSPECT_CGI_TARGET, <Cgi program>, or "
               "SCRIPT_FILENAME under <Cgi root>.\n");
}

/* ---- arguments ---------------------------------------------------------- */

/* Whether a is the one argument the kernel makes of a #! line's options. */
static bool is_shebang_arg(const char *a)
{
    return a[0] == '-' && strpbrk(a, " \t") != NULL;
}

/*
 * o->args = argv with a #! argument split at blanks and the wrapper path
 * after it dropped.  *nopt gets how many may hold options and the
 * program: with a #! argument only its words, since what follows the
 * wrapper path are the request's arguments.  -1 when out of memory.
 */
static int expand_args(int argc, char **argv, options_t *o, int *nopt)
{
    bool shebang = argc >= 2 && is_shebang_arg(argv[1]);
    int k = 0;

    o->args = suspect_calloc((size_t)argc + (shebang ? strlen(argv[1]) : 0) + 1,
                             sizeof(char *));
    if (o->args == NULL) {
        return -1;
    }
    o->args[k++] = argv[0];
    if (shebang) {
        char *save = NULL;

        o->split = suspect_strdup(argv[1]);
        if (o->split == NULL) {
            return -1;
        }
        for (char *w = strtok_r(o->split, " \t", &save); w != NULL;
             w = strtok_r(NULL, " \t", &save)) {
            o->args[k++] = w;
        }
    }
    *nopt = shebang ? k : argc;
    for (int i = shebang ? 3 : 1; i < argc; i++) {
        o->args[k++] = argv[i];
    }
    o->args[k] = NULL;
    return 0;
}

/* Parses the arguments; 0 to run, 1 to exit 0, -1 to exit 2. */
static int parse_args(int argc, char **argv, options_t *o)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 't'},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *env = getenv("SUSPECT_CONF");
    int nopt, ch;

    o->conf = env != NULL && env[0] != '\0' ? env : DEFAULT_CONF;
    if (expand_args(argc, argv, o, &nopt) != 0) {
        fprintf(stderr, "suspect-cgi: out of memory\n");
        return -1;
    }
    /* '+': stop at the program, whose own arguments are not ours. */
    opterr = 0;
    while ((ch = getopt_long(nopt, o->args, "+c:tvVh", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->conf = optarg;
            break;
        case 't':
            o->check = true;
            break;
        case 'v':
            o->verbose++;
            break;
        case 'V':
            printf("suspect-cgi %s\n", PACKAGE_VERSION);
            return 1;
        case 'h':
            usage(stdout);
            return 1;
        default:
            /* One line: it may end up in a web server's error log. */
            if (optopt != 0) {
                fprintf(stderr,
                        "suspect-cgi: bad option or missing value: "
                        "'-%c' (see suspect-cgi --help)\n",
                        optopt);
            } else {
                fprintf(stderr,
                        "suspect-cgi: bad option or missing value: "
                        "'%s' (see suspect-cgi --help)\n",
                        o->args[optind - 1]);
            }
            return -1;
        }
    }
    o->prog = optind < nopt ? &o->args[optind] : NULL;
    o->extra = &o->args[nopt - 1];
    return 0;
}

/* ---- answers ------------------------------------------------------------ */

/* Logs one line (an error for a 5xx) and answers status.  Returns -1. */
__attribute__((format(printf, 3, 4))) static int refuse(run_t *r, int status,
                                                        const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    mw_vlog(status >= 500 ? MW_LOG_ERROR : MW_LOG_NOTICE, fmt, ap);
    va_end(ap);
    mw_error_respond(r->req, status);
    return -1;
}

/* refuse() with the message of err. */
static int refuse_err(run_t *r, int status, const char *what,
                      const suspect_err_t *err)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    return refuse(r, status, "%s%s", what, msg);
}

static void log_verdict(const run_t *r, const mw_verdict_t *v)
{
    mw_log_level_t level = v->status >= 500 ? MW_LOG_WARNING : MW_LOG_INFO;
    const char *uri;

    if (!mw_log_enabled(level)) {
        return;
    }
    uri = mw_req_param(r->req, "REQUEST_URI", NULL);
    mw_log(level, "%s %s action=%s status=%d (%s)",
           v->kind == MW_VERDICT_DENY ? "deny" : "refuse",
           uri != NULL ? uri : "-", v->route != NULL ? v->route->action : "-",
           v->status, v->why != NULL ? v->why : "");
}

/* ---- configuration ------------------------------------------------------ */

/*
 * What suspect-cgi needs of a loaded suspect.xml beyond what the loader
 * checks: it runs the program itself (mode forward, <Cgi>) and counts
 * across processes (not the memory store).
 */
static suspect_rc_t check_conf(const suspect_conf_t *c, suspect_err_t *err)
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
    if (c->store_line != 0 && c->store == SUSPECT_STORE_MEMORY) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, c->file, c->store_line,
                               "Store: type memory forgets every count when "
                               "suspect-cgi exits after the request: use "
                               "lmdb or redis (no <Store>: lmdb at "
                               "%s)",
                               DEFAULT_LMDB);
    }
    return SUSPECT_OK;
}

/* Loads suspect.xml, its guard and its limits file; 0 or -1 (answered). */
static int load(run_t *r)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (suspect_conf_load(r->o->conf, &r->conf, &err) != SUSPECT_OK ||
        check_conf(r->conf, &err) != SUSPECT_OK ||
        mw_guard_new(r->conf, &r->guard, &err) != SUSPECT_OK ||
        suspect_limits_load(r->conf->limits_path, NULL, &r->limits, &err) !=
            SUSPECT_OK) {
        return refuse_err(r, 500, "", &err);
    }
    mw_cgi_front_set_timeout(r->front, r->conf->io_timeout_ms);
    return 0;
}

/* Whether script would start suspect-cgi again: it is this program, or a
 * #! script whose interpreter is. */
static bool runs_self(const char *script)
{
    char self[PATH_MAX], interp[PATH_MAX], head[256];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *p;
    FILE *f;

    if (n <= 0) {
        return false;
    }
    self[n] = '\0';
    if (strcmp(script, self) == 0) {
        return true;
    }
    f = fopen(script, "re");
    if (f == NULL) {
        return false; /* unreadable: no interpreter could run it */
    }
    p = fgets(head, sizeof(head), f);
    fclose(f);
    if (p == NULL || strncmp(head, "#!", 2) != 0) {
        return false;
    }
    p = head + 2 + strspn(head + 2, " \t");
    p[strcspn(p, " \t\r\n")] = '\0';
    return realpath(p, interp) != NULL && strcmp(interp, self) == 0;
}

/*
 * cgi_resolve() for a program named on the command line or in the
 * environment: inside <Cgi root> when there is one (checked as the
 * spawner checks a request's SCRIPT_FILENAME), else anywhere.
 */
static int resolve_named(const suspect_conf_t *c, const char *named,
                         char *script)
{
    mw_param_t p = {"SCRIPT_FILENAME", 15, named, strlen(named)};
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
static int resolve_target(run_t *r)
{
    const char *named =
        r->o->prog != NULL ? r->o->prog[0] : getenv("SUSPECT_CGI_TARGET");
    mw_cgi_opts_t o;
    int st;

    memset(&o, 0, sizeof(o));
    if (named != NULL && named[0] != '\0') {
        st = resolve_named(r->conf, named, r->script);
        o.program = named;
    } else {
        o.program = r->conf->cgi_program;
        o.root = r->conf->cgi_root;
        st = cgi_resolve(&o, r->req, r->script);
    }
    if (st != 0 && o.program != NULL) {
        return refuse(r, 500, "program %s: %s", o.program,
                      st == 404   ? "not found"
                      : st == 403 ? "not an executable file (inside <Cgi "
                                    "root> if there is one)"
                                  : "cannot be resolved");
    }
    if (st != 0) {
        const char *sf = mw_req_param(r->req, "SCRIPT_FILENAME", NULL);

        return refuse(r, st, "SCRIPT_FILENAME %s: %s", sf != NULL ? sf : "-",
                      st == 404   ? "not found"
                      : st == 403 ? "not an executable file inside <Cgi root>"
                                  : "no <Cgi root> to look in");
    }
    if (runs_self(r->script)) {
        return refuse(r, 500,
                      "program %s would start suspect-cgi again: name the "
                      "real program on the #! line, in SUSPECT_CGI_TARGET or "
                      "in <Cgi program>",
                      r->script);
    }
    return 0;
}

/*
 * Opens the store: <Store>, or without one the LMDB store at the default
 * path (a copy of the snapshot with only the store changed, since
 * mw_store_new() reads nothing else that matters).  0, 1 when it failed
 * and failMode="open" lets the program run unchecked, -1 (answered).
 */
static int open_store(run_t *r)
{
    const suspect_conf_t *c = r->conf;
    const char *env = getenv("SUSPECT_LMDB");
    suspect_conf_t dflt;
    suspect_err_t err;
    char msg[600];

    if (c->store_line == 0) {
        dflt = *c;
        dflt.store = SUSPECT_STORE_LMDB;
        dflt.lmdb_path = env != NULL && env[0] != '\0' ? env : DEFAULT_LMDB;
        c = &dflt;
    }
    suspect_err_clear(&err);
    if (mw_store_new(c, &r->store, &err) == SUSPECT_OK) {
        return 0;
    }
    suspect_err_format(&err, msg, sizeof(msg));
    if (c->fail_mode == SUSPECT_FAIL_OPEN) {
        mw_log(MW_LOG_WARNING, "store: %s; failMode open: running %s unchecked",
               msg, r->script);
        return 1;
    }
    return refuse(r, c->fail_mode == SUSPECT_FAIL_CLOSED ? 503 : 500,
                  "store: %s", msg);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Decides the request; 0 when the program may run, -1 when answered. */
static int decide(run_t *r)
{
    mw_verdict_t v;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (mw_guard_decide(r->guard, r->limits, r->store, r->req, now_ms(), &v,
                        &err) != SUSPECT_OK) {
        return refuse_err(r, err.code == SUSPECT_E_NOMEM ? 503 : 400,
                          "request refused: ", &err);
    }
    if (v.kind == MW_VERDICT_DENY || v.kind == MW_VERDICT_REJECT ||
        v.kind == MW_VERDICT_UNAVAILABLE) {
        log_verdict(r, &v);
        mw_guard_respond(r->guard, r->req, &v);
        return -1;
    }
    return 0;
}

/* Frees what the decision needed (the front end stays). */
static void release(run_t *r)
{
    suspect_store_free(r->store);
    suspect_limits_unref(r->limits);
    mw_guard_unref(r->guard);
    suspect_conf_unref(r->conf);
    r->store = NULL;
    r->limits = NULL;
    r->guard = NULL;
    r->conf = NULL;
}

/* Puts the body back, enters the program's directory and executes it;
 * returns only on failure (answered). */
static int exec_target(run_t *r)
{
    char **argv = r->o->prog != NULL ? r->o->prog : r->o->extra;
    char dir[PATH_MAX];
    suspect_err_t err;
    int st;

    suspect_err_clear(&err);
    if (mw_cgi_front_rewind(r->front, CGI_BODY_MAX, &st, &err) != SUSPECT_OK) {
        return refuse_err(r, st, "", &err);
    }
    memcpy(dir, r->script, sizeof(dir));
    *strrchr(dir, '/') = '\0';
    if (chdir(dir[0] != '\0' ? dir : "/") != 0) {
        return refuse(r, 500, "program %s: cannot enter its directory: %s",
                      r->script, strerror(errno));
    }
    argv[0] = r->script;
    execve(r->script, argv, environ);
    return refuse(r, 500, "program %s: cannot execute: %s", r->script,
                  strerror(errno));
}

/* One request; returns only when it was answered here. */
static void serve(run_t *r)
{
    int unchecked;

    if (load(r) != 0 || resolve_target(r) != 0) {
        return;
    }
    unchecked = open_store(r);
    if (unchecked < 0 || (unchecked == 0 && decide(r) != 0)) {
        return;
    }
    release(r);
    exec_target(r);
}

/* --check: the daemon's check, then what suspect-cgi needs on top. */
static int check(const options_t *o)
{
    const suspect_conf_t *c = NULL;
    suspect_err_t err;
    char msg[600];
    int rc = mw_check(o->conf, stdout, stderr);

    suspect_err_clear(&err);
    if (rc == 0 && (suspect_conf_load(o->conf, &c, &err) != SUSPECT_OK ||
                    check_conf(c, &err) != SUSPECT_OK)) {
        suspect_err_format(&err, msg, sizeof(msg));
        fprintf(stderr, "%s\n", msg);
        rc = 1;
    } else if (rc == 0 && c->store_line == 0) {
        printf("store (suspect-cgi): lmdb at %s\n", DEFAULT_LMDB);
    }
    suspect_conf_unref(c);
    return rc;
}

static void free_options(options_t *o)
{
    free(o->args);
    free(o->split);
}

/* Answers 500 without the front end (it could not be made). */
static void bare_500(void)
{
    static const char resp[] = "Status: 500 Internal Server Error\r\n"
                               "Content-Type: text/plain; charset=utf-8\r\n"
                               "Cache-Control: no-store\r\n\r\n"
                               "500 Internal Server Error\n";

    if (write(STDOUT_FILENO, resp, sizeof(resp) - 1) < 0) {
        /* Nowhere left to say it. */
    }
}

int main(int argc, char **argv)
{
    options_t o;
    run_t r;
    suspect_err_t err;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(&r, 0, sizeof(r));
    rc = parse_args(argc, argv, &o);
    mw_log_init("suspect-cgi", o.verbose > 0 ? MW_LOG_INFO : MW_LOG_NOTICE);
    if (rc != 0 || o.check) {
        rc = rc != 0 ? (rc < 0 ? 2 : 0) : check(&o);
        if (rc == 2 && getenv("GATEWAY_INTERFACE") != NULL) {
            bare_500(); /* a broken #! line: the client still gets an answer */
        }
        free_options(&o);
        return rc;
    }
    suspect_err_clear(&err);
    r.o = &o;
    if (mw_cgi_front_new(environ, STDIN_FILENO, STDOUT_FILENO, &r.front,
                         &err) != SUSPECT_OK) {
        mw_log(MW_LOG_ERROR, "out of memory");
        bare_500();
    } else {
        r.req = mw_cgi_front_req(r.front);
        serve(&r);
    }
    release(&r);
    mw_cgi_front_free(r.front);
    free_options(&o);
    return 0;
}
