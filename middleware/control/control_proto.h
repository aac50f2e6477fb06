/*
 * control_proto.h - the control protocol's messages, without I/O.
 *
 * suspectctl and suspect-fcgi talk over the daemon's control socket in
 * messages of text lines (docs/control.md is the reference):
 *
 *   suspect-control 1          the header: the protocol and its version
 *   command status             field lines: a name, then arguments
 *   action SecureForgotAccount
 *   key SecureForgotAccount:12345
 *                              an empty line ends the message
 *
 * A field line is a name ([a-z][a-z0-9_]*, at most 32 bytes) and up to 8
 * arguments, each after one space.  An argument is at least one byte;
 * bytes outside '!'..'~', and '%', are written %XX (two hex digits), so an
 * argument carries any bytes (a key holding spaces, NUL or UTF-8) and a
 * line never holds a space, a control byte or a newline of its own.
 *
 * Bounds: a request is at most 64 KiB and 64 field lines, a reply at most
 * 8 MiB and 100,000; any line at most 8 KiB.  The parser looks at no more
 * than the bound, allocates at most twice the message's length, and
 * reports what is wrong without quoting the input.
 *
 * Versions: every version frames a message the same way (a header line
 * "suspect-control N", lines, an empty line), so a peer can always read a
 * message of a version it does not know, and answer that it does not: the
 * parser then returns the header's version with no field lines.
 */
#ifndef MW_CONTROL_PROTO_H
#define MW_CONTROL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

#define MW_CTL_MAGIC    "suspect-control"
#define MW_CTL_VERSION  1u
#define MW_CTL_NAME_MAX 32
#define MW_CTL_ARGS_MAX 8
#define MW_CTL_LINE_MAX 8192 /* one encoded line, its newline included */

/*
 * The protocol's names, each spelt once for both sides (suspect-fcgi
 * writes what suspectctl reads, and the other way round): the commands,
 * the request's fields, the reply's first line and error codes, the
 * reply's fields and the outcomes of a reload.  docs/control.md says what
 * each carries.
 */

/* Commands (the request's "command"). */
#define MW_CTL_CMD_HELLO   "hello"
#define MW_CTL_CMD_STATUS  "status"
#define MW_CTL_CMD_UNBLOCK "unblock"
#define MW_CTL_CMD_RESET   "reset"
#define MW_CTL_CMD_BLOCK   "block"
#define MW_CTL_CMD_LOCKED  "locked"
#define MW_CTL_CMD_STATS   "stats"
#define MW_CTL_CMD_RELOAD  "reload"

/* The request's fields. */
#define MW_CTL_REQ_COMMAND "command"
#define MW_CTL_REQ_ACTION  "action"
#define MW_CTL_REQ_KEY     "key"
#define MW_CTL_REQ_SECONDS "seconds"
#define MW_CTL_REQ_PREFIX  "prefix"

/* The error codes of a reply's "error" line. */
#define MW_CTL_ERR_USAGE    "usage"
#define MW_CTL_ERR_NOTFOUND "notfound"
#define MW_CTL_ERR_STORE    "store"
#define MW_CTL_ERR_INTERNAL "internal"

/* The reply's first line: "ok", or "error CODE TEXT"; then who answered:
 * the daemon's suspect.xml, pid, store name and clock. */
#define MW_CTL_REP_OK     "ok"
#define MW_CTL_REP_ERROR  "error"
#define MW_CTL_REP_CONFIG "config"
#define MW_CTL_REP_PID    "pid"
#define MW_CTL_REP_STORE  "store"
#define MW_CTL_REP_NOW_MS "now_ms"

/* status: the rule, then the identity's state. */
#define MW_CTL_REP_LIMIT           "limit"
#define MW_CTL_REP_WINDOW_S        "window_s"
#define MW_CTL_REP_BLOCK_S         "block_s"
#define MW_CTL_REP_IN_WINDOW       "in_window"
#define MW_CTL_REP_REMAINING       "remaining"
#define MW_CTL_REP_LOCKED_UNTIL_MS "locked_until_ms"
#define MW_CTL_REP_FREE_AT_MS      "free_at_ms"
/* a token bucket or sliding counter: its SUSPECT_ALGO_*, a bucket's
 * capacity, and when it holds nothing any more (absent = a sliding log) */
#define MW_CTL_REP_ALGORITHM  "algorithm"
#define MW_CTL_REP_BURST      "burst"
#define MW_CTL_REP_FULL_AT_MS "full_at_ms"

/* unblock: the lock dropped, the hits dropped and kept; block: the end. */
#define MW_CTL_REP_LOCK_UNTIL_MS "lock_until_ms"
#define MW_CTL_REP_DROPPED       "dropped"
#define MW_CTL_REP_KEPT          "kept"
#define MW_CTL_REP_UNTIL_MS      "until_ms"

/* locked: how many, how many not listed, a "lock KEY UNTIL_MS" line each. */
#define MW_CTL_REP_COUNT     "count"
#define MW_CTL_REP_TRUNCATED "truncated"
#define MW_CTL_REP_LOCK      "lock"

/* stats: since when, how often the store was full, then lines
 * "decisions ACTION OUTCOME N" and "locks_created ACTION N". */
#define MW_CTL_REP_STARTED_MS    "started_ms"
#define MW_CTL_REP_STORE_FULL    "store_full"
#define MW_CTL_REP_DECISIONS     "decisions"
#define MW_CTL_REP_LOCKS_CREATED "locks_created"

/* reload: "conf RESULT [WHY]" for suspect.xml, "limits ..." for the
 * limits file; RESULT one of MW_CTL_RELOAD_*. */
#define MW_CTL_REP_CONF   "conf"
#define MW_CTL_REP_LIMITS "limits"

/* What a reload did with each file. */
#define MW_CTL_RELOAD_UNCHANGED "unchanged"
#define MW_CTL_RELOAD_APPLIED   "applied"
#define MW_CTL_RELOAD_REJECTED  "rejected"

typedef struct mw_ctl_limits {
    size_t max_bytes; /* the whole encoded message */
    size_t max_lines; /* field lines */
} mw_ctl_limits_t;

/* What suspect-fcgi reads, and what suspectctl reads. */
extern const mw_ctl_limits_t mw_ctl_request_limits;
extern const mw_ctl_limits_t mw_ctl_reply_limits;

/* A decoded argument: len bytes at p, followed by a NUL (p may hold NULs
 * of its own). */
typedef struct mw_ctl_arg {
    const char *p;
    size_t len;
} mw_ctl_arg_t;

typedef struct mw_ctl_line {
    const char *name;
    size_t nargs;
    mw_ctl_arg_t arg[MW_CTL_ARGS_MAX];
} mw_ctl_line_t;

/* A parsed message; owns lines and text.  version is the header's: when
 * it is not MW_CTL_VERSION, nlines is 0 (the lines were not read). */
typedef struct mw_ctl_msg {
    unsigned version;
    size_t nlines;
    mw_ctl_line_t *lines;
    char *text;
} mw_ctl_msg_t;

/*
 * Parses the message at the start of buf[0..len).  SUSPECT_OK: *out is
 * filled (free it with mw_ctl_msg_free()) and *used is its length in
 * bytes.  SUSPECT_E_NOTFOUND: it is not complete yet (read more).
 * SUSPECT_E_PARSE: it is malformed or over a bound of lim; err says which
 * line and what, never quoting it.  SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_ctl_parse(const char *buf, size_t len,
                          const mw_ctl_limits_t *lim, mw_ctl_msg_t *out,
                          size_t *used, suspect_err_t *err);

/* Frees what a message owns; a zeroed or freed message is fine. */
void mw_ctl_msg_free(mw_ctl_msg_t *m);

/* The first line named name, or NULL. */
const mw_ctl_line_t *mw_ctl_get(const mw_ctl_msg_t *m, const char *name);

/* The first argument of the first line named name (its length in *len
 * when len is not NULL), or NULL when there is none. */
const char *mw_ctl_get_str(const mw_ctl_msg_t *m, const char *name,
                           size_t *len);

/* An argument as a decimal integer (an optional '-', digits, no more than
 * 18 of them); false when it is not one. */
bool mw_ctl_arg_i64(const mw_ctl_arg_t *a, int64_t *v);

/* The first argument of the first line named name as an integer. */
bool mw_ctl_get_i64(const mw_ctl_msg_t *m, const char *name, int64_t *v);

/* ---- writing --------------------------------------------------------- */

/* A message being written; zero it, then mw_ctl_out_begin().  A failure
 * (out of memory, an empty argument, a line over MW_CTL_LINE_MAX) is kept
 * and reported once, by mw_ctl_out_end(). */
typedef struct mw_ctl_out {
    char *buf;
    size_t len, cap;
    size_t line_start; /* where the line being written starts */
    bool in_line;
    suspect_rc_t rc;
} mw_ctl_out_t;

/* Writes the header line of this version. */
void mw_ctl_out_begin(mw_ctl_out_t *o);

/* Starts a field line named name (a valid name), ending the one before. */
void mw_ctl_out_line(mw_ctl_out_t *o, const char *name);

/* Appends an argument of len bytes (len >= 1), escaped. */
void mw_ctl_out_arg(mw_ctl_out_t *o, const void *p, size_t len);

/* A C string argument, and a decimal one. */
void mw_ctl_out_str(mw_ctl_out_t *o, const char *s);
void mw_ctl_out_i64(mw_ctl_out_t *o, int64_t v);

/* A whole line: name and one argument. */
void mw_ctl_out_field(mw_ctl_out_t *o, const char *name, const char *s);
void mw_ctl_out_field_i64(mw_ctl_out_t *o, const char *name, int64_t v);

/* Appends the field lines written so far into from (begun, not ended) to
 * o; a failure of from's is o's. */
void mw_ctl_out_append(mw_ctl_out_t *o, const mw_ctl_out_t *from);

/* Ends the last line and the message.  SUSPECT_OK (o->buf[0..o->len) is
 * the message), or the first failure: SUSPECT_E_NOMEM, SUSPECT_E_INVAL. */
suspect_rc_t mw_ctl_out_end(mw_ctl_out_t *o);

/* Frees the buffer; the writer may be begun again. */
void mw_ctl_out_free(mw_ctl_out_t *o);

#endif
