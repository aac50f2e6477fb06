/*
 * limits_internal.h - what limits.c, limits_load.c, limits_xml.c and
 * reload.c share.
 *
 * A snapshot is built in two steps.  limits_xml.c walks the document and
 * feeds each valid entity to limits_add_rule() and each warning to
 * limits_add_warning(); limits.c owns the growing arrays, rejects duplicate
 * actions as they arrive (a hash of action -> index, so the error names the
 * first duplicate in document order) and, once the walk succeeded,
 * limits_finish() builds the sorted index that suspect_limits_find()
 * searches.  After limits_finish() nothing changes until the last unref.
 *
 * Only limits_xml.c includes libxml2; this header exposes none of it.
 */
#ifndef SUSPECT_LIMITS_INTERNAL_H
#define SUSPECT_LIMITS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "suspect_limits.h"

/* Warnings kept on a snapshot; more are counted in one closing line. */
#define LIMITS_MAX_WARNINGS 100

struct suspect_limits {
    int refs;              /* atomic; the last unref frees */
    const char *name;      /* file name for messages; owned; "" when done */
    size_t count;          /* rules in file order */
    size_t cap;            /* allocated rules, lines */
    suspect_rule_t *rules; /* rules[i].action owned */
    int *lines;            /* lines[i] = line of rule i */
    const suspect_rule_t **index; /* rules sorted by action, for bsearch */
    size_t *hash;     /* open addressing: rule index + 1, 0 = empty */
    size_t hash_cap;  /* power of two, > 2 * count; 0 when done */
    size_t nwarnings; /* stored warnings */
    size_t dropped;   /* warnings beyond LIMITS_MAX_WARNINGS */
    char **warnings;  /* "file:line: warning: text", owned */
};

/* A new, empty snapshot under construction; NULL when out of memory.
 * name is copied. */
suspect_limits_t *limits_new(const char *name);

/*
 * Appends a rule (action is copied from the len bytes at action).  Fails with
 * SUSPECT_E_CONFIG "Action: 'X' duplicates line N" at line when the action is
 * already there, or SUSPECT_E_NOMEM.
 */
suspect_rc_t limits_add_rule(suspect_limits_t *lim, const char *action,
                             size_t len, const suspect_rule_t *values, int line,
                             suspect_err_t *err);

/*
 * Checks the repeat-offender fields of rule against each other and, with
 * defaults, fills in the two a file may leave out (see limits.c); without,
 * a rule must give them (a rule in memory: what a file gave once
 * resolved).  The lines are where BlockFactor, MaxBlockDuration and
 * OffenceDuration were given, for messages.  SUSPECT_E_CONFIG
 * "file:line: field: why".
 */
suspect_rc_t limits_escalation_check(const suspect_limits_t *lim,
                                     suspect_rule_t *rule, int factor_line,
                                     int max_line, int offence_line,
                                     bool defaults, suspect_err_t *err);

/* Records "name:line: warning: text"; SUSPECT_E_NOMEM when it cannot. */
suspect_rc_t limits_add_warning(suspect_limits_t *lim, int line,
                                const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Builds the lookup index and drops the build-time state; the snapshot is
 * immutable afterwards.  SUSPECT_E_NOMEM when it cannot. */
suspect_rc_t limits_finish(suspect_limits_t *lim);

/* Frees a snapshot regardless of its reference count (for build errors). */
void limits_free(suspect_limits_t *lim);

/*
 * Parses the document of len bytes at buf into lim (limits_xml.c).  Stops at
 * the first error, which names lim's file and the line.  At most max_rules
 * entities.
 */
suspect_rc_t limits_xml_parse(const char *buf, size_t len, size_t max_rules,
                              suspect_limits_t *lim, suspect_err_t *err);

/*
 * suspect_limits_load(), also giving the fstat() of the file that was read
 * (or, when the file could not be opened, leaving *st untouched), so the
 * reloader knows exactly which version of the file a snapshot came from.
 */
suspect_rc_t limits_load_stat(const char *path,
                              const suspect_limits_opts_t *opts,
                              suspect_limits_t **out, struct stat *st,
                              suspect_err_t *err);

#endif
