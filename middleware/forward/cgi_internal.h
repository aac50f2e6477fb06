/*
 * cgi_internal.h - the parts of the CGI spawner (cgi.h) shared by its
 * files: cgi_spawn.c (script checks, environment, vfork + execve, the
 * registry of running process groups), cgi_io.c (the three pipes: body to
 * stdin, stdout to the response, stderr to the log) and cgi.c (the poll
 * loop and mw_cgi_run()).
 */
#ifndef MW_CGI_INTERNAL_H
#define MW_CGI_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgi.h"
#include "fwd_params.h"

/* Everything execve() needs, built before the process exists. */
typedef struct cgi_image {
    char *block;     /* the one allocation the pointers below live in */
    char **envp;     /* NAME=value strings, NULL-terminated */
    char *argv[2];   /* the script, NULL */
    const char *dir; /* the script's directory (the child's cwd) */
} cgi_image_t;

/* A started CGI process, registered until cgi_reap(). */
typedef struct cgi_child {
    pid_t pid;      /* also its process group id */
    int in_fd;      /* write end of its stdin (non-blocking), -1 closed */
    int out_fd;     /* read end of its stdout (non-blocking) */
    int err_fd;     /* read end of its stderr (non-blocking) */
    int pidfd;      /* readable once it exited; -1 when unsupported */
    int exec_errno; /* why it could not start (0: it did) */
    struct cgi_child *prev, *next; /* the registry */
} cgi_child_t;

/*
 * Finds the program for req and checks it: opts->program, else
 * SCRIPT_FILENAME, else DOCUMENT_ROOT + SCRIPT_NAME, resolved with
 * realpath() into script (PATH_MAX bytes).  Returns 0 when it is an
 * executable regular file (inside the resolved opts->root unless it is
 * opts->program), else the HTTP status to answer: 404 (missing), 403
 * (outside the root, not regular, not executable) or 500 (no root).
 */
int cgi_resolve(const mw_cgi_opts_t *opts, const mw_req_t *req, char *script);

/*
 * Builds img for script: the request's variables that fwd_param_allowed()
 * lets through (pass: the operator's list), as NAME=value, except
 * SCRIPT_FILENAME = script; GATEWAY_INTERFACE when missing, and the
 * daemon's PATH (unless pass lets the request's through).  clen NULL keeps
 * the request's CONTENT_LENGTH; otherwise it replaces it ("" drops it).
 * Returns SUSPECT_OK or SUSPECT_E_NOMEM; free img->block.
 */
suspect_rc_t cgi_image_build(const mw_req_t *req, const char *script,
                             const char *clen, const char *pass,
                             cgi_image_t *img);

/*
 * Starts img in a new process group with pipes on its stdin, stdout and
 * stderr, and registers it for mw_cgi_kill_all().  Returns SUSPECT_OK (a
 * program that cannot be executed still starts: it exits 127 with
 * exec_errno set), or SUSPECT_E_IO when pipes or vfork fail.
 */
suspect_rc_t cgi_spawn(const cgi_image_t *img, cgi_child_t *c,
                       suspect_err_t *err);

/* SIGKILLs the process group of c (which is not reaped yet). */
void cgi_kill(const cgi_child_t *c);

/* Whether c has exited (without reaping it): for when pidfd is -1. */
bool cgi_exited(const cgi_child_t *c);

/*
 * Waits for c to exit, unregisters it, reaps it and closes its remaining
 * descriptors.  Returns its wait status, or -1 when it cannot be known
 * (e.g. SIGCHLD is ignored, so the kernel reaped it).
 */
int cgi_reap(cgi_child_t *c);

/* Closes *fd when it is open and sets it to -1. */
void cgi_close(int *fd);

/* ---- one run (cgi.c, cgi_io.c) ------------------------------------------- */

#define CGI_HDR_MAX          8192
#define CGI_OUT_BUF          32768
#define CGI_IN_BUF           32768
#define CGI_BODY_MAX         ((size_t)16 << 20)
#define CGI_ERR_LINE_MAX     512
#define CGI_ERR_LINES_MAX    100
#define CGI_READS_PER_WAKEUP 8
#define CGI_BODY_STEPS       64

/* The state of one run. */
typedef struct cgi_run {
    mw_req_t *req;
    mw_fwd_result_t *res;
    const char *script;
    const char *pass_env; /* the operator's variables (mw_cgi_opts_t) */
    cgi_child_t child;
    char *scratch; /* CGI_OUT_BUF + CGI_IN_BUF bytes */
    /* body -> stdin */
    char *body;       /* the whole body, when it was read before the spawn */
    const char *pend; /* bytes read but not yet written to the child */
    size_t pend_len;
    unsigned long long body_left; /* bytes the child may still be given */
    bool body_eof;                /* nothing more to read from the request */
    bool body_wait;               /* the last read said -EAGAIN */
    /* stdout -> response */
    size_t hlen; /* header bytes held (while !hdr_done) */
    int hstate;  /* 0 line start, 1 line start after CR, 2 in a line */
    bool hfield; /* the current line is a header field so far */
    bool hdr_done;
    bool out_eof;
    bool unflushed;
    bool discard; /* output is dropped from now on */
    /* stderr -> log */
    char eline[CGI_ERR_LINE_MAX];
    size_t elen;
    bool ecut; /* the current line was cut */
    unsigned elines;
    bool err_eof;
    /* process */
    bool exited;
    bool killed;
    bool epipe; /* one of our writes met EPIPE */
    int64_t deadline_ms;
} cgi_run_t;

/* Kills the program's group (once) and drops any further output. */
void cgi_stop(cgi_run_t *r);

/* Sets the status the caller answers, unless something was sent or a
 * status is already set. */
void cgi_fail(cgi_run_t *r, int status);

/*
 * Reads the whole body before the spawn (no usable CONTENT_LENGTH); small
 * bodies stay in the scratch buffer, larger ones in r->body.  Returns 0,
 * 413 (over CGI_BODY_MAX) or 400 (unreadable), or -1 when out of memory;
 * *len gets its size.
 */
int cgi_body_slurp(cgi_run_t *r, size_t *len);

/*
 * Moves body bytes towards the child as far as it goes without waiting.
 * Returns true when it stopped with work left that needs no waiting (a
 * long body being dropped), so the loop does not sleep.
 */
bool cgi_body_pump(cgi_run_t *r);

/* Reads what stdout has now: holds the header block, then relays. */
void cgi_out_pump(cgi_run_t *r);

/* Reads what stderr has now and logs complete lines; with last, also the
 * line in progress. */
void cgi_err_pump(cgi_run_t *r, bool last);

#endif
