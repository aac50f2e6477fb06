/*
 * cgirun.h - running the built suspect-cgi the way a web server runs a
 * CGI program, for the "suspect-cgi" suite.
 *
 * A run is posix_spawn() of the binary (or of a #! wrapper naming it)
 * with a crafted environment (nothing inherited from the test runner),
 * the body on a pipe or in a regular file, and stdout and stderr on
 * pipes, all under a deadline: a process still running then is killed.
 * The binary: $SUSPECT_CGI, else $SUSPECT_BUILDDIR/suspect-cgi (a real
 * executable: it links no libtool library).  The compiler it executes:
 * $SUSPECT_CGI_COMPILE, else $SUSPECT_BUILDDIR/suspect-cgi-compile when
 * that is the program itself, else the real executable of a libtool build
 * (.libs/suspect-cgi-compile, with LD_LIBRARY_PATH added to every crafted
 * environment).
 *
 * Runs use the e2e fixture's directory (e2e.h): every environment holds
 * SUSPECT_LMDB=DIR/suspect.lmdb, so separate runs count in one store,
 * SUSPECT_SNAPSHOT_DIR=DIR (the compiled configuration) and
 * SUSPECT_CGI_COMPILE.
 */
#ifndef SUSPECT_TESTS_CGIRUN_H
#define SUSPECT_TESTS_CGIRUN_H

#include <stdbool.h>
#include <stddef.h>

#define CGIRUN_MAX_ENV 32

typedef struct cgi_out {
    int status;     /* wait status; -1 when it did not finish */
    char *out;      /* stdout (NUL-terminated, may hold NULs) */
    size_t out_len; /* its length */
    char *err;      /* stderr (NUL-terminated) */
} cgi_out_t;

/* Finds the binaries; 0, or -1 when they are not built. */
int cgirun_init(void);

/* The binary's absolute path. */
const char *cgirun_bin(void);

/* The compiler's absolute path. */
const char *cgirun_compiler(void);

/* "LD_LIBRARY_PATH=..." when the compiler needs it, else "". */
const char *cgirun_libenv(void);

/* "SUSPECT_CGI_COMPILE=..." */
const char *cgirun_compenv(void);

/* env = vars, then GATEWAY_INTERFACE, PATH, SUSPECT_LMDB,
 * SUSPECT_SNAPSHOT_DIR, SUSPECT_CGI_COMPILE (unless vars sets it) and
 * (when needed) LD_LIBRARY_PATH; NULL-terminated (CGIRUN_MAX_ENV
 * entries). */
void cgirun_env(const char *env[], const char *const vars[]);

/*
 * Runs argv with the environment cgirun_env(vars) and len bytes of body
 * on stdin: a pipe, or with spool the file DIR/body.in.  The result goes
 * into r (free with cgirun_free); a sanitizer report on stderr fails the
 * test.
 */
void cgirun(cgi_out_t *r, const char *const argv[], const char *const vars[],
            const char *body, size_t len, bool spool);

void cgirun_free(cgi_out_t *r);

/* Whether the process exited with 0. */
bool cgirun_exited_0(const cgi_out_t *r);

/* Whether stdout begins with prefix (else prints what it is). */
bool cgirun_starts(const cgi_out_t *r, const char *prefix);

/* Whether stdout holds line as a whole line. */
bool cgirun_has_line(const cgi_out_t *r, const char *line);

/* Whether stderr is exactly one line holding text (else says). */
bool cgirun_one_log_line(const cgi_out_t *r, const char *text);

/*
 * Starts lighttpd (e2e.web, on e2e.port) in Debian's layout in the
 * fixture's directory with examples/lighttpd/suspect-cgi.conf: every .cgi
 * of the document root DIR/www (made here; the caller writes its #!
 * wrappers) runs as a CGI program, with what a build tree's suspect-cgi
 * needs in its environment (SUSPECT_CGI_COMPILE, SUSPECT_SNAPSHOT_DIR=DIR,
 * LD_LIBRARY_PATH).  CGI programs' stderr goes to lighttpd's
 * (DIR/lighttpd.log). 0 or -1.
 */
int cgirun_start_lighttpd(void);

/* Adds the request I/O's tests (test_wrap_io.c), the compiled
 * configuration's (test_compiled.c), the runs that use it
 * (test_compiled_runs.c) and a CGI.pm program attacked
 * (test_suspect_cgi_cgipm.c) to s; 0 or -1. */
struct CU_Suite;
int cgirun_add_io_tests(struct CU_Suite *s);
int cgirun_add_snap_tests(struct CU_Suite *s);
int cgirun_add_snap_run_tests(struct CU_Suite *s);
int cgirun_add_cgipm_tests(struct CU_Suite *s);
int cgirun_add_watched_tests(struct CU_Suite *s);

#endif
