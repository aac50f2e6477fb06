/*
 * normalize_alias.c - the aliases step: names of one account made one
 * counter through a table the operator keeps.
 *
 * WordPress logs alice in as "alice" and as "alice@example.org";
 * Request Tracker as "alice" and as her numeric id "27".  No reading of
 * the value alone can know that, so the operator writes a file, one line
 * per name:
 *
 *     alias<TAB>canonical
 *
 * (empty lines and lines starting with '#' skipped; a '\r' before the
 * newline dropped), typically from the application's user table by a
 * timer (examples/aliases/).  The step is the last of its identity: the
 * value after the steps before it is looked up, and a value the table
 * has becomes its canonical name, as written; a value it lacks stays as
 * it is.  When the table is loaded, each alias is read by those same
 * steps (so "ALICE@Example.org" in the file matches every spelling the
 * steps merge with it), and so is each canonical name, which then maps to
 * itself: "alice", typed, and every alias of alice are one counter,
 * shown under the name the operator wrote.  The first line that gives a
 * name wins; a name the steps refuse is skipped (a request with it is
 * refused before any lookup).
 *
 * The table is a hash table (open addressing, SipHash under a random key,
 * so names an attacker registers cannot be aimed at one slot): a lookup
 * is one hash and, mostly, one compare.  Reloading: the step stats the
 * file at most once a second (on the call that finds the second over)
 * and reads it again when it changed (file_id.h: a rename over it, an
 * edit in place); a file that cannot be read or has a bad line keeps the
 * table in use and is logged once (an error, with the file and line),
 * until it changes again.  A new configuration (the daemon's reload, each
 * start of suspect-cgi) reads it anew, and there a bad file is an error
 * of the configuration.
 *
 * Invariants: lookups hold the read lock, a reload takes the write lock
 * only to swap the table; the old one is freed after.  The alias object
 * is the one mutable part of a compiled normaliser.
 */
#include "normalize_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "clock.h"
#include "file_id.h"
#include "log/log.h"
#include "random.h"
#include "siphash.h"

/* Longest line of the file, and most lines. */
#define ALIAS_LINE_MAX    1024
#define ALIAS_MAX_ENTRIES (1u << 22)

typedef struct slot {
    uint64_t hash; /* 0: empty */
    uint32_t key_off, key_len, val_off, val_len;
} slot_t;

typedef struct table {
    slot_t *slots;
    size_t mask; /* slots - 1, a power of two less one */
    size_t used;
    char *pool;
    size_t pool_len, pool_cap;
} table_t;

struct mw_alias {
    char *path;
    mw_alias_key_fn key_fn;
    const void *key_ctx;
    suspect_siphash_key_t sip;
    pthread_rwlock_t lock;
    table_t *table;         /* under lock */
    file_id_t id;           /* what was loaded, or last failed */
    _Atomic int64_t check;  /* mono_ms() of the next stat */
    pthread_mutex_t reload; /* one reloader at a time */
};

static void table_free(table_t *t)
{
    if (t != NULL) {
        free(t->slots);
        free(t->pool);
        free(t);
    }
}

static uint64_t hash_of(const mw_alias_t *a, const char *s, size_t n)
{
    uint64_t h[2];

    suspect_siphash128(&a->sip, s, n, h);
    return h[0] | 1; /* never 0, the empty slot */
}

/* The slot of s[0..n) in t, or the empty slot where it would go. */
static slot_t *find(const table_t *t, uint64_t h, const char *s, size_t n)
{
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        slot_t *sl = &t->slots[i];
        if (sl->hash == 0 || (sl->hash == h && sl->key_len == n &&
                              memcmp(t->pool + sl->key_off, s, n) == 0)) {
            return sl;
        }
    }
}

/* Appends s[0..n) to t's pool: its offset, or -1 when out of memory. */
static long pool_add(table_t *t, const char *s, size_t n)
{
    size_t off = t->pool_len;

    if (t->pool_cap - t->pool_len < n) {
        size_t cap = (t->pool_cap + n) * 2;
        char *p = realloc(t->pool, cap);
        if (p == NULL) {
            return -1;
        }
        t->pool = p;
        t->pool_cap = cap;
    }
    memcpy(t->pool + off, s, n);
    t->pool_len += n;
    return (long)off;
}

/* Adds name (read by the steps) -> canonical unless the name is there:
 * SUSPECT_OK, SUSPECT_E_NOMEM. */
static suspect_rc_t add(const mw_alias_t *a, table_t *t, const char *name,
                        size_t n, long val_off, size_t val_len)
{
    char *key = NULL;
    size_t key_len = 0;
    suspect_rc_t rc = a->key_fn(a->key_ctx, name, n, &key, &key_len);
    slot_t *sl;
    uint64_t h;
    long off;

    if (rc == SUSPECT_E_INVAL) {
        return SUSPECT_OK; /* a name the steps refuse is never looked up */
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    h = hash_of(a, key, key_len);
    sl = find(t, h, key, key_len);
    if (sl->hash == 0) {
        off = pool_add(t, key, key_len);
        if (off < 0) {
            free(key);
            return SUSPECT_E_NOMEM;
        }
        sl->hash = h;
        sl->key_off = (uint32_t)off;
        sl->key_len = (uint32_t)key_len;
        sl->val_off = (uint32_t)val_off;
        sl->val_len = (uint32_t)val_len;
        t->used++;
    }
    free(key);
    return SUSPECT_OK;
}

/* One line (without its newline) into t: SUSPECT_OK (added or skipped),
 * else the failure, with why. */
static suspect_rc_t add_line(const mw_alias_t *a, table_t *t, char *line,
                             size_t n, const char **why)
{
    char *tab;
    long val;
    suspect_rc_t rc;

    if (n > 0 && line[n - 1] == '\r') {
        n--;
    }
    if (n == 0 || line[0] == '#') {
        return SUSPECT_OK;
    }
    tab = memchr(line, '\t', n);
    if (tab == NULL || tab == line || tab + 1 == line + n ||
        memchr(tab + 1, '\t', (size_t)(line + n - tab - 1)) != NULL) {
        *why = "is not alias<TAB>canonical";
        return SUSPECT_E_PARSE;
    }
    if (t->used * 2 >= ALIAS_MAX_ENTRIES) {
        *why = "is past the most names a table holds (2 million)";
        return SUSPECT_E_RANGE;
    }
    val = pool_add(t, tab + 1, (size_t)(line + n - tab - 1));
    rc = val < 0 ? SUSPECT_E_NOMEM : SUSPECT_OK;
    if (rc == SUSPECT_OK) {
        rc = add(a, t, line, (size_t)(tab - line), val,
                 (size_t)(line + n - tab - 1));
    }
    if (rc == SUSPECT_OK) {
        rc = add(a, t, tab + 1, (size_t)(line + n - tab - 1), val,
                 (size_t)(line + n - tab - 1));
    }
    *why = "could not be added (out of memory)";
    return rc;
}

/* The number of lines of f, and f rewound. */
static size_t count_lines(FILE *f)
{
    char buf[8192];
    size_t n = 0;
    size_t got;

    while ((got = fread(buf, 1, sizeof(buf), f)) > 0) {
        for (const char *p = buf;
             (p = memchr(p, '\n', (size_t)(buf + got - p))) != NULL; p++) {
            n++;
        }
    }
    rewind(f);
    return n + 1;
}

/* Reads the file into a new table *out; on failure err says why (file
 * and line). */
static suspect_rc_t load(const mw_alias_t *a, FILE *f, table_t **out,
                         suspect_err_t *err)
{
    table_t *t = suspect_calloc(1, sizeof(*t));
    size_t lines = count_lines(f);
    size_t slots = 16;
    char line[ALIAS_LINE_MAX + 2];
    size_t lineno = 0;

    while (slots < 4 * lines && slots < 2 * ALIAS_MAX_ENTRIES) {
        slots *= 2;
    }
    if (t == NULL ||
        (t->slots = suspect_calloc(slots, sizeof(slot_t))) == NULL) {
        table_free(t);
        return suspect_err_set(err, SUSPECT_E_NOMEM, a->path, 0,
                               "out of memory");
    }
    t->mask = slots - 1;
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t n = strlen(line);
        const char *why = NULL;
        suspect_rc_t rc;

        lineno++;
        if (n > ALIAS_LINE_MAX && line[n - 1] != '\n') {
            why = "is longer than 1024 bytes";
            rc = SUSPECT_E_PARSE;
        } else {
            n -= n > 0 && line[n - 1] == '\n';
            rc = add_line(a, t, line, n, &why);
        }
        if (rc != SUSPECT_OK) {
            table_free(t);
            return suspect_err_set(err, rc, a->path, (int)lineno, "line %s",
                                   why);
        }
    }
    if (ferror(f)) {
        table_free(t);
        return suspect_err_set(err, SUSPECT_E_IO, a->path, 0, "read: %s",
                               strerror(errno));
    }
    *out = t;
    return SUSPECT_OK;
}

/* Opens and reads the file: a new table, its identity in *id. */
static suspect_rc_t read_file(const mw_alias_t *a, table_t **out, file_id_t *id,
                              suspect_err_t *err)
{
    FILE *f = fopen(a->path, "re");
    struct stat st;
    suspect_rc_t rc;

    if (f == NULL || fstat(fileno(f), &st) != 0) {
        rc = suspect_err_set(err, SUSPECT_E_IO, a->path, 0, "cannot read: %s",
                             strerror(errno));
        if (f != NULL) {
            fclose(f);
        }
        return rc;
    }
    *id = file_id_of(&st);
    rc = load(a, f, out, err);
    fclose(f);
    return rc;
}

/* Opens the step's table: see normalize_internal.h. */
suspect_rc_t mw_alias_open(const char *path, size_t len, mw_alias_key_fn fn,
                           const void *ctx, mw_alias_t **out,
                           suspect_err_t *err)
{
    mw_alias_t *a;
    suspect_rc_t rc;

    if (len == 0 || path[0] != '/' || memchr(path, '\0', len) != NULL) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "aliases: needs an absolute path");
    }
    a = suspect_calloc(1, sizeof(*a));
    if (a == NULL || (a->path = suspect_malloc(len + 1)) == NULL) {
        free(a);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    memcpy(a->path, path, len);
    a->path[len] = '\0';
    a->key_fn = fn;
    a->key_ctx = ctx;
    pthread_rwlock_init(&a->lock, NULL);
    pthread_mutex_init(&a->reload, NULL);
    rc = suspect_random_bytes(&a->sip, sizeof(a->sip), err);
    if (rc == SUSPECT_OK) {
        rc = read_file(a, &a->table, &a->id, err);
    }
    if (rc != SUSPECT_OK) {
        mw_alias_free(a);
        return rc == SUSPECT_E_NOMEM ? rc : SUSPECT_E_CONFIG;
    }
    atomic_store(&a->check, mono_ms() + 1000);
    *out = a;
    return SUSPECT_OK;
}

void mw_alias_free(mw_alias_t *a)
{
    if (a != NULL) {
        table_free(a->table);
        pthread_rwlock_destroy(&a->lock);
        pthread_mutex_destroy(&a->reload);
        free(a->path);
        free(a);
    }
}

/* Reads the file again when it changed: see the file comment. */
static void maybe_reload(mw_alias_t *a)
{
    int64_t now = mono_ms();
    int64_t when = atomic_load(&a->check);
    struct stat st;
    file_id_t id;
    table_t *t = NULL;
    suspect_err_t err;

    if (now < when ||
        !atomic_compare_exchange_strong(&a->check, &when, now + 1000) ||
        pthread_mutex_trylock(&a->reload) != 0) {
        return;
    }
    memset(&id, 0, sizeof(id));
    if (stat(a->path, &st) == 0) {
        id = file_id_of(&st);
    }
    if (!file_id_same(&id, &a->id)) {
        suspect_err_clear(&err);
        if (read_file(a, &t, &id, &err) == SUSPECT_OK) {
            pthread_rwlock_wrlock(&a->lock);
            table_t *old = a->table;
            a->table = t;
            pthread_rwlock_unlock(&a->lock);
            table_free(old);
            mw_log(MW_LOG_NOTICE, "aliases %s: reloaded", a->path);
        } else {
            mw_log(MW_LOG_ERROR,
                   "aliases %s%s%.0d: %s; the table in use is kept", a->path,
                   err.line > 0 ? " line " : "", err.line, err.text);
        }
        a->id = id; /* a failed state is not retried until it changes */
    }
    pthread_mutex_unlock(&a->reload);
}

/* The canonical name of in: see normalize_internal.h. */
suspect_rc_t mw_alias_lookup(mw_alias_t *a, const char *in, size_t n,
                             char **out, size_t *out_len)
{
    const slot_t *sl;
    bool found;

    *out = NULL;
    maybe_reload(a);
    pthread_rwlock_rdlock(&a->lock);
    sl = find(a->table, hash_of(a, in, n), in, n);
    found = sl->hash != 0;
    if (found) {
        *out = suspect_malloc(sl->val_len + 1);
        if (*out != NULL) {
            memcpy(*out, a->table->pool + sl->val_off, sl->val_len);
            *out_len = sl->val_len;
        }
    }
    pthread_rwlock_unlock(&a->lock);
    return found && *out == NULL ? SUSPECT_E_NOMEM : SUSPECT_OK;
}
