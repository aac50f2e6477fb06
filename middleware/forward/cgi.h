/*
 * cgi.h - run a CGI program for an allowed request: a better fcgiwrap.
 *
 * The program is started with vfork + execve (no copy of the daemon's
 * address space) in its own process group, with PR_SET_PDEATHSIG so it
 * dies with the daemon, a CGI/1.1 environment (the request's CGI/1.1
 * variables and headers, what the operator lets through, nothing else:
 * fwd_params.c), the request body on its stdin and
 * its stdout relayed as the response.  One poll() loop moves bytes both
 * ways at once, so a script that writes before reading its stdin cannot
 * deadlock; stderr lines go to the daemon's log.  At the timeout, or when
 * the web server hangs up the request's connection (mw_req_t.has_conn),
 * the whole process group gets SIGKILL; the child is always reaped (no
 * zombies).
 *
 * Which program: opts->program when set, else SCRIPT_FILENAME (or
 * DOCUMENT_ROOT + SCRIPT_NAME), which must resolve (realpath) to an
 * executable regular file inside opts->root: anything else is refused with
 * 403/404 before a process exists.
 */
#ifndef MW_CGI_H
#define MW_CGI_H

#include "response/error_page.h"
#include "suspect_error.h"

typedef struct mw_cgi_opts {
    const char *root;     /* directory scripts must lie in (NULL: program) */
    const char *program;  /* fixed program, or NULL */
    unsigned timeout_ms;  /* whole run; 0 = 30000 */
    const char *pass_env; /* variables beyond CGI/1.1 and HTTP_* that the
                             program gets: blank-separated names, a
                             trailing '*' a prefix; NULL = none */
} mw_cgi_opts_t;

/*
 * Runs the CGI program for req and relays its output.  Returns SUSPECT_OK
 * when the request was handled one way or the other (res says how),
 * SUSPECT_E_NOMEM or SUSPECT_E_IO only when the daemon itself failed
 * (pipes, spawn); res->status is then 500 or 502.
 */
suspect_rc_t mw_cgi_run(const mw_cgi_opts_t *opts, mw_req_t *req,
                        mw_fwd_result_t *res, suspect_err_t *err);

/*
 * The program mw_cgi_run() would run for req, without running it: its
 * resolved path (realpath: no symbolic link left) into script (PATH_MAX
 * bytes), and in *root_len the length of the resolved <Cgi root> it lies
 * under (its path from there on is script + *root_len; 0 for a fixed
 * program, or the root "/").  0, or the status mw_cgi_run() would answer
 * instead (403, 404, 500): then no program runs.
 */
int mw_cgi_which(const mw_cgi_opts_t *opts, const mw_req_t *req, char *script,
                 size_t *root_len);

/* The descriptor limit (RLIMIT_NOFILE, soft) programs start with, when
 * the daemon raised its own: the one it was started with.  0: theirs is
 * the daemon's.  Call before the first run. */
void mw_cgi_limit_fds(unsigned long soft);

/* The CGI programs running now (for the metrics). */
size_t mw_cgi_running(void);

/* Kills the process groups of every CGI still running (daemon exit). */
void mw_cgi_kill_all(void);

/*
 * The daemon stops and will not wait any longer: every run in progress,
 * and any run that starts from now on, ends at once with its process
 * group killed (res->status 504 when nothing was sent yet, else the
 * response is cut).  Then mw_cgi_kill_all().  Irreversible.
 */
void mw_cgi_shutdown(void);

#endif
