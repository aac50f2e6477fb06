/*
 * reload.c - one limits file, watched: the current snapshot and its swaps.
 *
 * Change detection is stat() of the path against the fstat() of the file
 * the current snapshot was read from: modification and change times to the
 * nanosecond, size, inode and device.  An editor that saves in place changes
 * size or times; one that renames a new file over the old changes the inode.
 *
 * A check that sees a change loads the whole file into a new snapshot and,
 * only when it is complete and valid, swaps it in under `lock` and drops the
 * old reference outside it.  Readers take the pointer and their reference
 * under the same mutex, so a swap can never free a snapshot between a
 * reader's load of the pointer and its ref; a request that started on the
 * old snapshot keeps it alive until it unrefs.  Parsing happens outside
 * `lock` (under `check_lock`, which only serialises checkers), so readers
 * never wait for a parse.
 *
 * A bad, missing or unreadable file is reported once: its stat (or the
 * errno of the failed stat) is remembered in `failed`, and later checks that
 * see the very same state return 0 quietly.  The old snapshot stays.  Out of
 * memory is not remembered, so the next check tries the same file again.
 *
 * poll() is for the request path: one atomic load of next_check_ms decides;
 * when due, the thread that wins a compare-and-swap of next_check_ms does the
 * check and every other one returns 0 at once.  A clock that jumped back by
 * more than an interval is treated as due, so it cannot stall reloads.
 */
#include "limits_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "file_id.h"

#define DEFAULT_INTERVAL_MS 1000

/* What stat() said about the path; errnum != 0 when it failed. */
typedef struct file_state {
    int errnum;
    file_id_t id;
} file_state_t;

struct suspect_reloader {
    char *path;
    suspect_limits_opts_t opts;
    int64_t interval_ms;
    pthread_mutex_t lock;       /* guards current */
    pthread_mutex_t check_lock; /* serialises checks; guards loaded, failed */
    suspect_limits_t *current;  /* one reference owned */
    file_state_t loaded;        /* the file current was read from */
    file_state_t failed;        /* the last bad state reported */
    bool have_failed;
    bool refused;          /* failed is a valid file the caller refused */
    file_state_t pending;  /* the file of the last prepare's snapshot */
    int64_t next_check_ms; /* atomic */
    uint64_t generation;   /* atomic */
};

/* The state of a successful stat. */
static file_state_t id_of(const struct stat *st)
{
    file_state_t id;

    id.errnum = 0;
    id.id = file_id_of(st);
    return id;
}

/* stat() of path as a file_state_t. */
static file_state_t id_of_path(const char *path)
{
    struct stat st;
    file_state_t id;

    if (stat(path, &st) == 0) {
        return id_of(&st);
    }
    memset(&id, 0, sizeof(id));
    id.errnum = errno != 0 ? errno : EIO;
    return id;
}

/* True when a and b describe the same state of the file. */
static bool id_equal(const file_state_t *a, const file_state_t *b)
{
    if (a->errnum != 0 || b->errnum != 0) {
        return a->errnum == b->errnum;
    }
    return file_id_same(&a->id, &b->id);
}

/*
 * Loads path and returns a reloader that owns the snapshot, in *out (free
 * with suspect_reloader_free()).  Fails like suspect_limits_load(), or with
 * SUSPECT_E_INVAL for a negative interval.
 */
suspect_rc_t suspect_reloader_new(const char *path,
                                  const suspect_limits_opts_t *opts,
                                  int64_t interval_ms, suspect_reloader_t **out,
                                  suspect_err_t *err)
{
    suspect_reloader_t *r;
    struct stat st;
    suspect_rc_t rc;

    if (path == NULL || out == NULL || interval_ms < 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, path, 0,
                               "suspect_reloader_new: bad arguments");
    }
    r = suspect_calloc(1, sizeof(*r));
    if (r == NULL || (r->path = suspect_strdup(path)) == NULL) {
        free(r);
        return suspect_err_set(err, SUSPECT_E_NOMEM, path, 0, "out of memory");
    }
    rc = limits_load_stat(path, opts, &r->current, &st, err);
    if (rc != SUSPECT_OK) {
        free(r->path);
        free(r);
        return rc;
    }
    if (opts != NULL) {
        r->opts = *opts;
    }
    r->interval_ms = interval_ms == 0 ? DEFAULT_INTERVAL_MS : interval_ms;
    r->loaded = id_of(&st);
    r->next_check_ms = INT64_MIN;
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->check_lock, NULL);
    *out = r;
    return SUSPECT_OK;
}

/* Frees r and drops its snapshot; readers' references stay valid. */
void suspect_reloader_free(suspect_reloader_t *r)
{
    if (r == NULL) {
        return;
    }
    suspect_limits_unref(r->current);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->check_lock);
    free(r->path);
    free(r);
}

/* The current snapshot, with a reference the caller must unref. */
suspect_limits_t *suspect_reloader_acquire(suspect_reloader_t *r)
{
    suspect_limits_t *lim;

    pthread_mutex_lock(&r->lock);
    lim = suspect_limits_ref(r->current);
    pthread_mutex_unlock(&r->lock);
    return lim;
}

/* Makes fresh (one reference, taken over) the current snapshot. */
static void swap_in(suspect_reloader_t *r, suspect_limits_t *fresh)
{
    suspect_limits_t *old;

    pthread_mutex_lock(&r->lock);
    old = r->current;
    r->current = fresh;
    pthread_mutex_unlock(&r->lock);
    suspect_limits_unref(old);
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
}

/* The first half of a check, with check_lock held: see
 * suspect_reloader_prepare(). */
static int prepare_locked(suspect_reloader_t *r, bool retry,
                          suspect_limits_t **fresh, suspect_err_t *err)
{
    file_state_t now = id_of_path(r->path);
    struct stat st;
    suspect_rc_t rc;

    *fresh = NULL;
    if (id_equal(&now, &r->loaded)) {
        r->have_failed = false;
        return 0;
    }
    if (r->have_failed && id_equal(&now, &r->failed) &&
        !(retry && r->refused)) {
        return 0;
    }
    r->refused = false;
    if (now.errnum != 0) {
        errno = now.errnum;
        r->failed = now;
        r->have_failed = true;
        return suspect_err_sys(
            err, now.errnum == ENOENT ? SUSPECT_E_NOTFOUND : SUSPECT_E_IO,
            r->path, "cannot open");
    }
    rc = limits_load_stat(r->path, &r->opts, fresh, &st, err);
    if (rc != SUSPECT_OK) {
        /* Remember what we looked at (a file replaced since then is new),
         * unless memory ran out: that says nothing about the file. */
        r->failed = now;
        r->have_failed = rc != SUSPECT_E_NOMEM;
        *fresh = NULL;
        return rc;
    }
    r->pending = id_of(&st);
    return 1;
}

int suspect_reloader_prepare(suspect_reloader_t *r, bool retry,
                             suspect_limits_t **fresh, suspect_err_t *err)
{
    int rc;

    pthread_mutex_lock(&r->check_lock);
    rc = prepare_locked(r, retry, fresh, err);
    pthread_mutex_unlock(&r->check_lock);
    return rc;
}

void suspect_reloader_commit(suspect_reloader_t *r, suspect_limits_t *fresh)
{
    pthread_mutex_lock(&r->check_lock);
    r->loaded = r->pending;
    r->have_failed = false;
    pthread_mutex_unlock(&r->check_lock);
    swap_in(r, fresh);
}

void suspect_reloader_refuse(suspect_reloader_t *r, suspect_limits_t *fresh)
{
    pthread_mutex_lock(&r->check_lock);
    r->failed = r->pending;
    r->have_failed = true;
    r->refused = true;
    pthread_mutex_unlock(&r->check_lock);
    suspect_limits_unref(fresh);
}

void suspect_reloader_forget(suspect_reloader_t *r)
{
    pthread_mutex_lock(&r->check_lock);
    r->have_failed = false;
    r->refused = false;
    pthread_mutex_unlock(&r->check_lock);
}

/*
 * Looks at the file now and swaps in a new snapshot if it changed and is
 * valid: 1 swapped, 0 unchanged (or the same bad file again), < 0 with err
 * set for a newly bad, missing or unreadable file.
 */
int suspect_reloader_check(suspect_reloader_t *r, suspect_err_t *err)
{
    suspect_limits_t *fresh = NULL;
    int rc;

    pthread_mutex_lock(&r->check_lock);
    rc = prepare_locked(r, false, &fresh, err);
    if (rc == 1) {
        r->loaded = r->pending;
        r->have_failed = false;
    }
    pthread_mutex_unlock(&r->check_lock);
    if (rc == 1) {
        swap_in(r, fresh);
    }
    return rc;
}

/* As suspect_reloader_check(), at most once per interval of now_ms. */
int suspect_reloader_poll(suspect_reloader_t *r, int64_t now_ms,
                          suspect_err_t *err)
{
    int64_t next = __atomic_load_n(&r->next_check_ms, __ATOMIC_ACQUIRE);
    int64_t due = now_ms > INT64_MAX - r->interval_ms ? INT64_MAX
                                                      : now_ms + r->interval_ms;

    /* Not yet due, unless the clock went back by more than an interval. */
    if (now_ms < next && next <= due) {
        return 0;
    }
    if (!__atomic_compare_exchange_n(&r->next_check_ms, &next, due, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return 0; /* another thread is checking */
    }
    return suspect_reloader_check(r, err);
}

/* Successful swaps since suspect_reloader_new(). */
uint64_t suspect_reloader_generation(suspect_reloader_t *r)
{
    return __atomic_load_n(&r->generation, __ATOMIC_ACQUIRE);
}
