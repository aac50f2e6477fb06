/*
 * limits.c - limits snapshots: building, lookup, reference counting, and
 * reading the file.
 *
 * A snapshot holds the rules in file order (rules[], lines[]), the warnings
 * met while loading, and index[], the rules sorted by action, searched with
 * bsearch() by suspect_limits_find().  While a snapshot is built, a small
 * open-addressing hash of action -> rule index catches duplicate actions as
 * they arrive, so the error is the first duplicate in document order; the
 * hash is freed by limits_finish().
 *
 * Invariants: after limits_finish() a snapshot never changes, so readers
 * need no lock; refs is only touched with atomic operations; the snapshot
 * owns every string it points to.
 *
 * Reading and parsing the file is limits_load.c's; this file needs no XML,
 * so suspect-cgi's snapshot reader links it without libxml2.
 */
#include "limits_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* A new snapshot under construction, one reference; see the header. */
suspect_limits_t *limits_new(const char *name)
{
    suspect_limits_t *lim = suspect_calloc(1, sizeof(*lim));
    if (lim == NULL) {
        return NULL;
    }
    lim->refs = 1;
    lim->name = suspect_strdup(name);
    if (lim->name == NULL) {
        free(lim);
        return NULL;
    }
    return lim;
}

/* Frees lim and all it owns, whatever its reference count. */
void limits_free(suspect_limits_t *lim)
{
    if (lim == NULL) {
        return;
    }
    for (size_t i = 0; i < lim->count; i++) {
        free((char *)lim->rules[i].action);
    }
    for (size_t i = 0; i < lim->nwarnings; i++) {
        free(lim->warnings[i]);
    }
    free(lim->rules);
    free(lim->lines);
    free(lim->index);
    free(lim->hash);
    free(lim->warnings);
    free((char *)lim->name);
    free(lim);
}

/* FNV-1a of the len bytes at s. */
static size_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    }
    return (size_t)h;
}

/* The hash cell holding action, or the empty cell where it would go. */
static size_t hash_cell(const suspect_limits_t *lim, const char *action,
                        size_t len)
{
    size_t mask = lim->hash_cap - 1;
    size_t i = hash_bytes(action, len) & mask;

    while (lim->hash[i] != 0) {
        const char *other = lim->rules[lim->hash[i] - 1].action;
        if (strncmp(other, action, len) == 0 && other[len] == '\0') {
            break;
        }
        i = (i + 1) & mask;
    }
    return i;
}

/* Doubles the hash (or creates it) and re-inserts every rule. */
static suspect_rc_t hash_grow(suspect_limits_t *lim)
{
    size_t old_cap = lim->hash_cap;
    size_t *old = lim->hash;
    size_t cap = old_cap == 0 ? 64 : old_cap * 2;
    size_t *fresh = suspect_calloc(cap, sizeof(*fresh));

    if (fresh == NULL) {
        return SUSPECT_E_NOMEM;
    }
    lim->hash = fresh;
    lim->hash_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i] != 0) {
            const char *a = lim->rules[old[i] - 1].action;
            fresh[hash_cell(lim, a, strlen(a))] = old[i];
        }
    }
    free(old);
    return SUSPECT_OK;
}

/* Makes room for one more rule in rules[] and lines[]. */
static suspect_rc_t rules_reserve(suspect_limits_t *lim)
{
    size_t cap = lim->cap == 0 ? 16 : lim->cap * 2;
    suspect_rule_t *rules;
    int *lines;

    if (lim->count < lim->cap) {
        return SUSPECT_OK;
    }
    rules = suspect_realloc(lim->rules, cap * sizeof(*rules));
    if (rules == NULL) {
        return SUSPECT_E_NOMEM;
    }
    lim->rules = rules;
    lines = suspect_realloc(lim->lines, cap * sizeof(*lines));
    if (lines == NULL) {
        return SUSPECT_E_NOMEM;
    }
    lim->lines = lines;
    lim->cap = cap;
    return SUSPECT_OK;
}

/* Appends one rule unless its action is already there (hash lookup). */
suspect_rc_t limits_add_rule(suspect_limits_t *lim, const char *action,
                             size_t len, const suspect_rule_t *values, int line,
                             suspect_err_t *err)
{
    size_t cell;
    char *copy;

    if ((lim->count + 1) * 2 > lim->hash_cap && hash_grow(lim) != 0) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, lim->name, line,
                               "out of memory");
    }
    cell = hash_cell(lim, action, len);
    if (lim->hash[cell] != 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "Action: '%.*s' duplicates line %d", (int)len,
                               action, lim->lines[lim->hash[cell] - 1]);
    }
    if (rules_reserve(lim) != 0 ||
        (copy = suspect_strndup(action, len)) == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, lim->name, line,
                               "out of memory");
    }
    lim->rules[lim->count] = *values;
    lim->rules[lim->count].action = copy;
    lim->lines[lim->count] = line;
    lim->count++;
    lim->hash[cell] = lim->count;
    return SUSPECT_OK;
}

/* Formats and keeps one warning, or only counts it past the cap. */
suspect_rc_t limits_add_warning(suspect_limits_t *lim, int line,
                                const char *fmt, ...)
{
    char text[SUSPECT_ERR_TEXT_MAX];
    char **grown;
    char *w;
    va_list ap;
    int n;

    if (lim->nwarnings == LIMITS_MAX_WARNINGS) {
        lim->dropped++;
        return SUSPECT_OK;
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    n = snprintf(NULL, 0, "%s:%d: warning: %s", lim->name, line, text);
    grown =
        suspect_realloc(lim->warnings, (lim->nwarnings + 2) * sizeof(*grown));
    if (n < 0 || grown == NULL) {
        return SUSPECT_E_NOMEM;
    }
    lim->warnings = grown; /* one spare entry, for the closing line */
    w = suspect_malloc((size_t)n + 1);
    if (w == NULL) {
        return SUSPECT_E_NOMEM;
    }
    snprintf(w, (size_t)n + 1, "%s:%d: warning: %s", lim->name, line, text);
    lim->warnings[lim->nwarnings++] = w;
    return SUSPECT_OK;
}

/* Adds "name: warning: N more warnings not shown" when some were dropped;
 * limits_add_warning() left room for it. */
static suspect_rc_t add_dropped_line(suspect_limits_t *lim)
{
    int n;
    char *w;

    if (lim->dropped == 0) {
        return SUSPECT_OK;
    }
    n = snprintf(NULL, 0, "%s: warning: %zu more warnings not shown", lim->name,
                 lim->dropped);
    w = n < 0 ? NULL : suspect_malloc((size_t)n + 1);
    if (w == NULL) {
        return SUSPECT_E_NOMEM;
    }
    snprintf(w, (size_t)n + 1, "%s: warning: %zu more warnings not shown",
             lim->name, lim->dropped);
    lim->warnings[lim->nwarnings++] = w;
    lim->dropped = 0;
    return SUSPECT_OK;
}

/* qsort order of index[]: by action, bytewise. */
static int rule_cmp(const void *a, const void *b)
{
    const suspect_rule_t *const *ra = a;
    const suspect_rule_t *const *rb = b;
    return strcmp((*ra)->action, (*rb)->action);
}

/* Sorts the lookup index and drops the duplicate hash. */
suspect_rc_t limits_finish(suspect_limits_t *lim)
{
    if (add_dropped_line(lim) != 0) {
        return SUSPECT_E_NOMEM;
    }
    if (lim->count > 0) {
        lim->index = suspect_malloc(lim->count * sizeof(*lim->index));
        if (lim->index == NULL) {
            return SUSPECT_E_NOMEM;
        }
        for (size_t i = 0; i < lim->count; i++) {
            lim->index[i] = &lim->rules[i];
        }
        qsort(lim->index, lim->count, sizeof(*lim->index), rule_cmp);
    }
    free(lim->hash);
    lim->hash = NULL;
    lim->hash_cap = 0;
    return SUSPECT_OK;
}

/* Returns a reference-counted snapshot: the caller owns one reference. */
suspect_limits_t *suspect_limits_ref(suspect_limits_t *lim)
{
    if (lim != NULL) {
        __atomic_fetch_add(&lim->refs, 1, __ATOMIC_RELAXED);
    }
    return lim;
}

/* Drops one reference; the last frees the snapshot.  NULL is a no-op. */
void suspect_limits_unref(suspect_limits_t *lim)
{
    if (lim != NULL &&
        __atomic_sub_fetch(&lim->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        limits_free(lim);
    }
}

/* Number of rules. */
size_t suspect_limits_count(const suspect_limits_t *lim)
{
    return lim != NULL ? lim->count : 0;
}

/* Rule i in file order, or NULL when i is out of range. */
const suspect_rule_t *suspect_limits_at(const suspect_limits_t *lim, size_t i)
{
    return lim != NULL && i < lim->count ? &lim->rules[i] : NULL;
}

/* Line of rule i, or 0 when i is out of range. */
int suspect_limits_line(const suspect_limits_t *lim, size_t i)
{
    return lim != NULL && i < lim->count ? lim->lines[i] : 0;
}

/* bsearch() order: the key is the action string. */
static int find_cmp(const void *key, const void *elem)
{
    const suspect_rule_t *const *r = elem;
    return strcmp(key, (*r)->action);
}

/* The rule of action (exact match), or NULL; O(log n). */
const suspect_rule_t *suspect_limits_find(const suspect_limits_t *lim,
                                          const char *action)
{
    const suspect_rule_t *const *hit;

    if (lim == NULL || action == NULL || lim->count == 0) {
        return NULL;
    }
    hit =
        bsearch(action, lim->index, lim->count, sizeof(*lim->index), find_cmp);
    return hit != NULL ? *hit : NULL;
}

/* Number of warnings kept. */
size_t suspect_limits_warning_count(const suspect_limits_t *lim)
{
    return lim != NULL ? lim->nwarnings : 0;
}

/* Warning i, "file:line: warning: text", or NULL when out of range. */
const char *suspect_limits_warning(const suspect_limits_t *lim, size_t i)
{
    return lim != NULL && i < lim->nwarnings ? lim->warnings[i] : NULL;
}

/*
 * Repeat offenders.  BlockFactor needs a BlockDuration to multiply, and
 * the other two fields mean nothing without a BlockFactor: each is an
 * error alone rather than a setting silently ignored.  Defaults: a
 * ceiling of one day (or BlockDuration when longer), an offence period
 * equal to the ceiling.  A factor of 1 (100) keeps no offences.
 */
suspect_rc_t limits_escalation_check(const suspect_limits_t *lim,
                                     suspect_rule_t *rule, int factor_line,
                                     int max_line, int offence_line,
                                     bool defaults, suspect_err_t *err)
{
    if (rule->block_factor_pct == 0) {
        if (rule->block_max_s != 0 || rule->offence_s != 0) {
            return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name,
                                   rule->block_max_s != 0 ? max_line
                                                          : offence_line,
                                   "%s: only with a BlockFactor",
                                   rule->block_max_s != 0 ? "MaxBlockDuration"
                                                          : "OffenceDuration");
        }
        return SUSPECT_OK;
    }
    if (rule->block_factor_pct < 100 ||
        rule->block_factor_pct > SUSPECT_FACTOR_MAX_PCT) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, factor_line,
                               "BlockFactor: out of range (1 to 100)");
    }
    if (rule->block_s == 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, factor_line,
                               "BlockFactor: needs a BlockDuration to "
                               "multiply");
    }
    if (!defaults && (rule->block_max_s == 0 || rule->offence_s == 0)) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, factor_line,
                               "BlockFactor: without MaxBlockDuration and "
                               "OffenceDuration");
    }
    if (rule->block_max_s == 0) {
        rule->block_max_s = rule->block_s > SUSPECT_DEFAULT_BLOCK_MAX_S
                                ? rule->block_s
                                : SUSPECT_DEFAULT_BLOCK_MAX_S;
    }
    if (rule->block_max_s < rule->block_s ||
        rule->block_max_s > SUSPECT_DURATION_MAX) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, max_line,
                               "MaxBlockDuration: %u is shorter than "
                               "BlockDuration %u or over a year",
                               (unsigned)rule->block_max_s,
                               (unsigned)rule->block_s);
    }
    if (rule->offence_s == 0) {
        rule->offence_s = rule->block_max_s;
    }
    if (rule->offence_s > SUSPECT_DURATION_MAX) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, offence_line,
                               "OffenceDuration: over a year");
    }
    return SUSPECT_OK;
}

/* Checks one rule given in memory as the XML loader checks an entity. */
static suspect_rc_t rule_check(const suspect_limits_t *lim, suspect_rule_t *r,
                               int line, suspect_err_t *err)
{
    if (r->action == NULL ||
        !suspect_name_valid(r->action, strlen(r->action))) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "Action: not a valid action name");
    }
    if (r->limit_count < 1 || r->limit_count > SUSPECT_LIMIT_COUNT_MAX ||
        r->window_s < 1 || r->window_s > SUSPECT_DURATION_MAX ||
        r->block_s > SUSPECT_DURATION_MAX) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: a count or duration is out of range",
                               r->action);
    }
    return limits_escalation_check(lim, r, line, line, line, false, err);
}

/* Builds a snapshot from rules in memory; see the header. */
suspect_rc_t suspect_limits_from_rules(const suspect_rule_t *rules,
                                       const int *lines, size_t n,
                                       const char *name, suspect_limits_t **out,
                                       suspect_err_t *err)
{
    suspect_limits_t *lim;
    suspect_rc_t rc = SUSPECT_OK;

    if (name == NULL) {
        name = "<memory>";
    }
    if (out == NULL || (rules == NULL && n > 0)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, name, 0,
                               "suspect_limits_from_rules: bad arguments");
    }
    lim = limits_new(name);
    if (lim == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        int line = lines != NULL ? lines[i] : 0;
        suspect_rule_t r = rules[i];

        r.fail_mode = SUSPECT_RULE_FAIL_STORE; /* a per-call setting */
        rc = rule_check(lim, &r, line, err);
        if (rc == SUSPECT_OK) {
            rc =
                limits_add_rule(lim, r.action, strlen(r.action), &r, line, err);
        }
    }
    if (rc == SUSPECT_OK && limits_finish(lim) != SUSPECT_OK) {
        rc = suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    if (rc != SUSPECT_OK) {
        limits_free(lim);
        return rc;
    }
    *out = lim;
    return SUSPECT_OK;
}
