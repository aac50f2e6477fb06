/*
 * decision_log.h - the decision log: one JSON object per line for each
 * decision suspect-fcgi makes (<Log decisions="denials|all">), for jq,
 * a log shipper or a SIEM (docs/decision-log.md).
 *
 * A line holds what an analyst needs and nothing a client could use
 * against its owner: the time, the action and the route (file:line), the
 * outcome and why, the status answered, the type of the identity that
 * tripped and a keyed hash of its value (never the value), the client's
 * address, the method, the path without its query (cut at 256 bytes), the
 * end of the restriction, the store and the decision's latency.  Strings
 * a client controls are escaped for JSON, and bytes outside printable
 * ASCII become U+FFFD, so a line always parses.
 *
 * Each line is built on the stack and handed whole to a buffered file
 * (logfile.h): a request pays a memcpy, a thread of the log's own writes
 * many lines with one write(2) to a file opened O_APPEND, within 0.1 s,
 * and lines of different threads never mix.  mw_dlog_reopen() (SIGUSR1,
 * after logrotate moved the file) writes out what is buffered and opens
 * the path again into the same descriptor, so no line is lost to it.
 */
#ifndef MW_DECISION_LOG_H
#define MW_DECISION_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "siphash.h"
#include "suspect_error.h"

typedef struct mw_dlog mw_dlog_t;

/* Opens the log at path (created 0640 when missing), or stderr when path
 * is NULL, and starts its writing thread (all signals blocked in it).
 * SUSPECT_E_IO (errno) when it cannot be opened. */
suspect_rc_t mw_dlog_open(const char *path, mw_dlog_t **out,
                          suspect_err_t *err);

/* Opens path again into the same descriptor (no-op for stderr). */
suspect_rc_t mw_dlog_reopen(mw_dlog_t *d, suspect_err_t *err);

/* Writes out what is buffered, closes the file (not stderr) and frees.
 * NULL is a no-op. */
void mw_dlog_close(mw_dlog_t *d);

/* What one line says; NULL strings are left out. */
typedef struct mw_dlog_entry {
    int64_t time_ms;
    const char *action;
    const char *algorithm; /* how the action counts; NULL: not written */
    const char *route_file;
    int route_line;
    const char *outcome; /* mw_decision_outcome_name() */
    const char *reason;  /* the verdict's why (never a value) */
    int status;          /* answered with, 0: forwarded or allowed */
    const char *identity_type;
    const char *identity_hash; /* mw_dlog_hash() */
    bool device;               /* the account was counted as a trusted device */
    bool pass;      /* the shared address was counted as a pass (challenges) */
    unsigned calls; /* the calls of an XML-RPC or JSON body, 0: none */
    const char *client;
    const char *method;
    const char *path; /* path_len bytes, not NUL-terminated */
    size_t path_len;
    int64_t restriction_end_ms; /* 0: none */
    const char *store;
    int64_t latency_us;
} mw_dlog_entry_t;

/* Writes one line (buffered; a failed write is counted, never retried). */
void mw_dlog_write(mw_dlog_t *d, const mw_dlog_entry_t *e);

/* Lines written, and lines a write failed for. */
void mw_dlog_counts(const mw_dlog_t *d, uint64_t *written, uint64_t *failed);

/* Room for a hash: 16 hex digits and a NUL. */
#define MW_DLOG_HASH_LEN 17

/*
 * The keyed hash of one identity: SipHash-2-4 of type, a NUL, and the
 * value as its key holds it, under key, in 16 hex digits.  The same
 * identity hashes the same for every action and on every server that has
 * the same key; without the key, a value cannot be tried against it.
 */
void mw_dlog_hash(const suspect_siphash_key_t *key, const char *type,
                  const char *value, size_t len, char out[MW_DLOG_HASH_LEN]);

/* The hash key of <Log identityKey>: the first 16 bytes of its SHA-256.
 * Each thread keeps the last setting it derived, so a line costs no
 * SHA-256 while the setting stays. */
void mw_dlog_key(const char *setting, suspect_siphash_key_t *out);

#endif
