/*
 * suspect_limits.h - the limits file, as immutable snapshots, and reload.
 *
 * A limits file is the .NET system's ArrayOfSuspectUsageSettingEntity, in
 * either form: attributes (Action="..." LimitCount="..." ...) or the child
 * elements .NET's XmlSerializer writes.  Loading it yields a snapshot: an
 * immutable, reference-counted table of suspect_rule_t, in file order, with
 * a lookup by action.  A snapshot never changes; a reload builds a new one.
 *
 * Errors name file, line and field ("limits.xml:7: LimitCount: 'x' is not a
 * number").  Unknown attributes and elements are warnings kept on the
 * snapshot.  Parsing is safe: a size cap, no network, no DTD, no entities.
 *
 * The reloader owns the current snapshot of one file.  Readers take a
 * reference with suspect_reloader_acquire() and drop it when done, so a
 * request that started on the old table finishes on it.  A reload that fails
 * keeps the old snapshot and reports why.
 */
#ifndef SUSPECT_LIMITS_H
#define SUSPECT_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"
#include "suspect_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct suspect_limits suspect_limits_t;

#define SUSPECT_LIMITS_MAX_BYTES (4u << 20) /* default file size cap */
#define SUSPECT_LIMITS_MAX_RULES 10000u     /* default entry cap */
/* MaxBlockDuration when a BlockFactor is given without one: a day. */
#define SUSPECT_DEFAULT_BLOCK_MAX_S 86400u

typedef struct suspect_limits_opts {
    size_t max_bytes; /* 0 = SUSPECT_LIMITS_MAX_BYTES */
    size_t max_rules; /* 0 = SUSPECT_LIMITS_MAX_RULES */
} suspect_limits_opts_t;

/*
 * Loads and validates the limits file at path.  On success *out is a new
 * snapshot with one reference, owned by the caller.  On failure *out is
 * untouched and err says file:line and what is wrong.  opts may be NULL.
 */
suspect_rc_t suspect_limits_load(const char *path,
                                 const suspect_limits_opts_t *opts,
                                 suspect_limits_t **out, suspect_err_t *err);

/* As suspect_limits_load, from memory; name is used in messages. */
suspect_rc_t suspect_limits_parse(const char *buf, size_t len, const char *name,
                                  const suspect_limits_opts_t *opts,
                                  suspect_limits_t **out, suspect_err_t *err);

/*
 * Builds a snapshot from n rules in memory, as a file holding them would
 * load, without any file or XML (a program that keeps the limits in its
 * own form, such as suspect-cgi's compiled configuration).  Each action
 * is copied; lines[i] is rule i's line for messages (lines may be NULL);
 * name names the source in messages (NULL: "<memory>").  Fails with
 * SUSPECT_E_CONFIG on an invalid action name, a count or duration out of
 * range, a BlockFactor without both MaxBlockDuration and OffenceDuration
 * (a rule in memory is a resolved one: no defaults are filled in), or a
 * duplicate action; SUSPECT_E_NOMEM.  fail_mode is not kept.  On success *out
 * is a new snapshot with one reference for the caller.
 */
suspect_rc_t suspect_limits_from_rules(const suspect_rule_t *rules,
                                       const int *lines, size_t n,
                                       const char *name, suspect_limits_t **out,
                                       suspect_err_t *err);

/* Adds a reference and returns lim.  Thread-safe. */
suspect_limits_t *suspect_limits_ref(suspect_limits_t *lim);

/* Drops a reference; the last one frees.  NULL is a no-op.  Thread-safe. */
void suspect_limits_unref(suspect_limits_t *lim);

/* Rules in file order; pointers live as long as the snapshot. */
size_t suspect_limits_count(const suspect_limits_t *lim);
const suspect_rule_t *suspect_limits_at(const suspect_limits_t *lim, size_t i);

/* The rule of an action (exact, case-sensitive), or NULL. */
const suspect_rule_t *suspect_limits_find(const suspect_limits_t *lim,
                                          const char *action);

/* Line of rule i in its file (1-based). */
int suspect_limits_line(const suspect_limits_t *lim, size_t i);

/* Warnings found while loading, each "file:line: warning: text". */
size_t suspect_limits_warning_count(const suspect_limits_t *lim);
const char *suspect_limits_warning(const suspect_limits_t *lim, size_t i);

/* ---- reload ----------------------------------------------------------------
 */

typedef struct suspect_reloader suspect_reloader_t;

/*
 * Loads path (it must be valid) and returns a reloader owning that snapshot.
 * interval_ms is how often suspect_reloader_poll() looks at the file
 * (0 = 1000).  opts may be NULL; it is copied.
 */
suspect_rc_t suspect_reloader_new(const char *path,
                                  const suspect_limits_opts_t *opts,
                                  int64_t interval_ms, suspect_reloader_t **out,
                                  suspect_err_t *err);

/* Frees the reloader and drops its reference.  NULL is a no-op. */
void suspect_reloader_free(suspect_reloader_t *r);

/* The current snapshot with a new reference for the caller. Thread-safe. */
suspect_limits_t *suspect_reloader_acquire(suspect_reloader_t *r);

/*
 * Looks at the file now (stat: mtime, ctime, size, inode, device).  If it
 * changed, loads it; a valid file becomes the current snapshot.  Returns 1
 * when a new snapshot was swapped in, 0 when nothing changed, or a negative
 * code with err set when the file changed but is bad, missing or unreadable
 * (the old snapshot stays; the same bad file is reported once, not on every
 * call).  Thread-safe; concurrent callers serialise.
 */
int suspect_reloader_check(suspect_reloader_t *r, suspect_err_t *err);

/*
 * suspect_reloader_check() in two halves, for a caller that must check the
 * new snapshot against something else before it is used (suspect-fcgi:
 * every route's action must be in it).  prepare: when the file changed
 * and is valid, *fresh gets the new snapshot (a reference for the caller)
 * and 1 is returned, nothing swapped yet; 0 when nothing changed, or when
 * the file is in the state last refused or found bad (unless retry: a
 * refused file may fit once the other file changed); < 0 with err for a
 * bad, missing or unreadable file, as check.  Then exactly one of: commit
 * (fresh becomes the current snapshot; takes fresh) or refuse (the file is
 * not looked at again until it changes or a retry; frees fresh).  One
 * caller at a time between prepare and commit or refuse.
 */
int suspect_reloader_prepare(suspect_reloader_t *r, bool retry,
                             suspect_limits_t **fresh, suspect_err_t *err);
void suspect_reloader_commit(suspect_reloader_t *r, suspect_limits_t *fresh);
void suspect_reloader_refuse(suspect_reloader_t *r, suspect_limits_t *fresh);

/*
 * Forgets the state of the file last found bad or refused: the next check
 * or prepare loads it again and says what is wrong with it, as for a new
 * edit.  For a reload asked for by an operator, whose answer must be about
 * the file as it is now, even when a periodic check already reported it.
 */
void suspect_reloader_forget(suspect_reloader_t *r);

/*
 * As suspect_reloader_check, but at most once per interval_ms of now_ms;
 * other calls return 0 after one atomic read, so it is cheap per request.
 */
int suspect_reloader_poll(suspect_reloader_t *r, int64_t now_ms,
                          suspect_err_t *err);

/* Counts successful swaps; a reader may cache a snapshot per generation. */
uint64_t suspect_reloader_generation(suspect_reloader_t *r);

#ifdef __cplusplus
}
#endif

#endif
