/*
 * live.c - suspect.xml and its limits file kept current (live.h).
 *
 * Ownership: the live pair owns one reference to the current guard (which
 * holds the suspect.xml snapshot), the limits reloader and the snapshot it
 * started with.  Request threads take their own references to the guard
 * and to the limits snapshot under `lock` and drop them when the request
 * ends, so a reload never frees anything a request still uses.
 *
 * suspect.xml change detection is the limits reloader's: stat() against
 * the file the running snapshot was read from (and the <Allow file>,
 * <Deny file> lists it read); a bad file is logged once per state of the
 * file, not on every poll.
 *
 * A reload is one step: each changed file loaded and checked on its own
 * (a new suspect.xml compiled and accepted by the owner), then the pair
 * the step would make checked (every route's action in the limits file),
 * then swapped in under `lock` as a whole, or refused as a whole.  A file
 * refused for the other one's sake comes back whenever the other one
 * changes: renaming an action takes an edit of each, in either order.
 */
#include "live.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "clock.h"
#include "file_id.h"
#include "log/log.h"
#include "request/normalize.h"
#include "request/xmlrpc.h"

/* Links the normaliser's html-entities step (libxml2) and collate step
 * (ICU) wherever suspect.xml is loaded: see request/normalize.h. */
__attribute__((used)) static suspect_rc_t (*const html_step)(
    const char *, size_t, char *, size_t *) = mw_norm_html_decode;
__attribute__((used)) static suspect_rc_t (*const collate_step)(
    const char *, size_t, void **) = mw_norm_collate_open;

/* Links the XML-RPC reader (libxml2) wherever suspect.xml is loaded: see
 * request/xmlrpc.h. */
__attribute__((used)) static suspect_rc_t (*const xmlrpc_reader)(
    const char *, size_t, size_t, mw_xmlrpc_t **,
    const char **) = mw_xmlrpc_read;

struct mw_live {
    char *conf_path;
    const suspect_conf_t *boot; /* the snapshot loaded at start */
    mw_live_hooks_t hooks;
    pthread_mutex_t lock; /* guards guard and limits */
    mw_guard_t *guard;
    suspect_reloader_t *limits;
    struct stat conf_st;   /* the suspect.xml the guard came from */
    struct stat failed_st; /* the last bad suspect.xml reported */
    uint64_t failed_lists; /* ...and its list files then */
    bool have_failed;
    bool conf_refused;            /* failed_st is valid, refused for the
                                     limits file's sake */
    pthread_mutex_t reload_lock;  /* one reload at a time */
    atomic_int_least64_t next_ms; /* mono_ms() of mw_live_poll()'s next look */
};

/* Loads suspect.xml and compiles it; *st gets the file's stat. */
static suspect_rc_t load_guard(const char *path, mw_guard_t **out,
                               struct stat *st, suspect_err_t *err)
{
    const suspect_conf_t *c = NULL;
    suspect_rc_t rc;

    if (stat(path, st) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, path, "cannot stat");
    }
    rc = suspect_conf_load(path, &c, err);
    if (rc == SUSPECT_OK) {
        rc = mw_guard_new(c, out, err);
        suspect_conf_unref(c);
    }
    return rc;
}

static void log_warnings(const suspect_conf_t *c, const suspect_limits_t *l)
{
    for (size_t i = 0; c != NULL && i < suspect_conf_warning_count(c); i++) {
        mw_log(MW_LOG_WARNING, "%s", suspect_conf_warning(c, i));
    }
    for (size_t i = 0; l != NULL && i < suspect_limits_warning_count(l); i++) {
        mw_log(MW_LOG_WARNING, "%s", suspect_limits_warning(l, i));
    }
}

/* The owner's verdict on c (SUSPECT_OK without an accept hook). */
static suspect_rc_t accepted(const mw_live_t *lv, const suspect_conf_t *c,
                             suspect_err_t *err)
{
    if (lv->hooks.accept == NULL) {
        return SUSPECT_OK;
    }
    return lv->hooks.accept(lv->hooks.arg, lv->boot, c, err);
}

suspect_rc_t mw_live_new(const char *conf_path, const mw_live_hooks_t *hooks,
                         mw_live_t **out, suspect_err_t *err)
{
    mw_live_t *lv = suspect_calloc(1, sizeof(*lv));
    const suspect_conf_t *c = NULL;
    suspect_limits_t *l;
    suspect_rc_t rc;

    if (lv == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    pthread_mutex_init(&lv->lock, NULL);
    pthread_mutex_init(&lv->reload_lock, NULL);
    if (hooks != NULL) {
        lv->hooks = *hooks;
    }
    lv->conf_path = suspect_strdup(conf_path);
    if (lv->conf_path == NULL) {
        mw_live_free(lv);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    rc = load_guard(conf_path, &lv->guard, &lv->conf_st, err);
    if (rc == SUSPECT_OK) {
        c = mw_guard_conf(lv->guard);
        lv->boot = suspect_conf_ref(c);
        rc = accepted(lv, c, err);
    }
    if (rc == SUSPECT_OK) {
        rc = suspect_reloader_new(c->limits_path, NULL, c->reload_ms,
                                  &lv->limits, err);
    }
    if (rc == SUSPECT_OK) {
        l = suspect_reloader_acquire(lv->limits);
        rc = suspect_conf_check_actions(c, l, err);
        suspect_limits_unref(l);
    }
    if (rc != SUSPECT_OK) {
        mw_live_free(lv);
        return rc;
    }
    atomic_store(&lv->next_ms, mono_ms() + c->reload_ms);
    *out = lv;
    return SUSPECT_OK;
}

void mw_live_free(mw_live_t *lv)
{
    if (lv == NULL) {
        return;
    }
    suspect_reloader_free(lv->limits);
    mw_guard_unref(lv->guard);
    suspect_conf_unref(lv->boot);
    pthread_mutex_destroy(&lv->lock);
    pthread_mutex_destroy(&lv->reload_lock);
    free(lv->conf_path);
    free(lv);
}

const suspect_conf_t *mw_live_boot(const mw_live_t *lv)
{
    return lv->boot;
}

const char *mw_live_path(const mw_live_t *lv)
{
    return lv->conf_path;
}

void mw_live_acquire(mw_live_t *lv, mw_guard_t **guard,
                     suspect_limits_t **limits)
{
    pthread_mutex_lock(&lv->lock);
    *guard = mw_guard_ref(lv->guard);
    *limits = suspect_reloader_acquire(lv->limits);
    pthread_mutex_unlock(&lv->lock);
}

unsigned mw_live_reload_ms(mw_live_t *lv)
{
    unsigned ms;

    pthread_mutex_lock(&lv->lock);
    ms = mw_guard_conf(lv->guard)->reload_ms;
    pthread_mutex_unlock(&lv->lock);
    return ms;
}

/* What one reload would swap in: each part NULL when it stays. */
typedef struct reload_step {
    mw_guard_t *guard;            /* a new suspect.xml, compiled */
    struct stat conf_st;          /* its file */
    suspect_reloader_t *reloader; /* a new limits path or interval */
    suspect_limits_t *limits;     /* a new limits file (prepared) */
} reload_step_t;

/* Logs err with what is kept, and tells the owner. */
static void log_kept(mw_live_t *lv, const suspect_err_t *err, bool conf)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    mw_log(MW_LOG_ERROR, "%s; keeping the running %s", msg,
           conf ? "configuration" : "limits");
    if (lv->hooks.refused != NULL) {
        lv->hooks.refused(lv->hooks.arg, conf, msg);
    }
}

/* Remembers the suspect.xml at st as bad (refused: only because of the
 * limits file), so the same file is not reported again. */
static void conf_failed(mw_live_t *lv, const struct stat *st, bool refused)
{
    (void)suspect_conf_lists_changed(mw_guard_conf(lv->guard),
                                     &lv->failed_lists);
    lv->failed_st = *st;
    lv->have_failed = true;
    lv->conf_refused = refused;
}

/* The suspect.xml half of a step: a new guard (and reloader) in *step
 * when the file changed, is valid on its own and accepted.  retry: look
 * again at a file refused for the limits file's sake. */
static void step_conf(mw_live_t *lv, bool force, bool retry,
                      reload_step_t *step)
{
    struct stat st;
    suspect_err_t err;
    mw_guard_t *g = NULL;
    const suspect_conf_t *c, *cur;
    uint64_t lists_now;
    bool lists;

    suspect_err_clear(&err);
    if (stat(lv->conf_path, &st) != 0) {
        memset(&st, 0, sizeof(st));
    }
    /* An <Allow file> or <Deny file> edited is suspect.xml reloaded. */
    lists = suspect_conf_lists_changed(mw_guard_conf(lv->guard), &lists_now);
    if (!force && !lists && file_id_same_stat(&st, &lv->conf_st)) {
        return;
    }
    if (!force && lv->have_failed && file_id_same_stat(&st, &lv->failed_st) &&
        lists_now == lv->failed_lists && !(retry && lv->conf_refused)) {
        return;
    }
    if (load_guard(lv->conf_path, &g, &st, &err) != SUSPECT_OK) {
        log_kept(lv, &err, true);
        conf_failed(lv, &st, false);
        return;
    }
    c = mw_guard_conf(g);
    cur = mw_guard_conf(lv->guard);
    if (accepted(lv, c, &err) != SUSPECT_OK ||
        ((strcmp(cur->limits_path, c->limits_path) != 0 ||
          cur->reload_ms != c->reload_ms) &&
         suspect_reloader_new(c->limits_path, NULL, c->reload_ms,
                              &step->reloader, &err) != SUSPECT_OK)) {
        log_kept(lv, &err, true);
        mw_guard_unref(g);
        conf_failed(lv, &st, false);
        return;
    }
    step->guard = g;
    step->conf_st = st;
}

/* The limits half of a step: a new snapshot in *step when the running
 * reloader's file changed and is valid on its own. */
static void step_limits(mw_live_t *lv, bool retry, reload_step_t *step)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (step->reloader != NULL) {
        return; /* a new file altogether, loaded with the reloader */
    }
    if (suspect_reloader_prepare(lv->limits, retry, &step->limits, &err) < 0) {
        log_kept(lv, &err, false);
    }
}

/* What log_missing() reports a route without its action to. */
typedef struct missing_ctx {
    mw_live_t *lv;
    const reload_step_t *step;
    const char *kept;
} missing_ctx_t;

static void log_missing(void *arg, const char *msg)
{
    const missing_ctx_t *m = arg;
    const mw_live_hooks_t *h = &m->lv->hooks;

    /* a missing action leaves its routes uncounted; a cost the action
     * cannot take (conf_actions.c) says what is wrong itself */
    mw_log(MW_LOG_ERROR, "%s%s; keeping the running %s", msg,
           strstr(msg, ": route cost ") != NULL
               ? ""
               : "; its requests would not be counted",
           m->kept);
    if (h->refused != NULL && m->step->guard != NULL) {
        h->refused(h->arg, true, msg);
    }
    if (h->refused != NULL &&
        (m->step->limits != NULL || m->step->reloader != NULL)) {
        h->refused(h->arg, false, msg);
    }
}

/* Whether the pair a step would make leaves no route without its action;
 * with say, logs each one that would. */
static bool step_valid(mw_live_t *lv, const reload_step_t *step, bool say)
{
    const suspect_conf_t *c =
        mw_guard_conf(step->guard != NULL ? step->guard : lv->guard);
    suspect_limits_t *l =
        step->limits != NULL     ? suspect_limits_ref(step->limits)
        : step->reloader != NULL ? suspect_reloader_acquire(step->reloader)
                                 : suspect_reloader_acquire(lv->limits);
    missing_ctx_t m = {lv, step,
                       step->guard != NULL && step->limits != NULL
                           ? "configuration and limits"
                       : step->guard != NULL ? "configuration"
                                             : "limits"};
    size_t missing =
        suspect_conf_missing_actions(c, l, say ? log_missing : NULL, &m);

    suspect_limits_unref(l);
    return missing == 0;
}

/* Drops a refused step: each changed file is remembered as refused. */
static void step_refuse(mw_live_t *lv, reload_step_t *step)
{
    if (step->guard != NULL) {
        conf_failed(lv, &step->conf_st, true);
        mw_guard_unref(step->guard);
    }
    suspect_reloader_free(step->reloader);
    if (step->limits != NULL) {
        suspect_reloader_refuse(lv->limits, step->limits);
    }
}

/* Swaps in what a valid step holds; the number of files swapped in. */
static int step_commit(mw_live_t *lv, reload_step_t *step)
{
    mw_guard_t *old = NULL;
    suspect_reloader_t *old_limits = NULL;
    int n = 0;

    pthread_mutex_lock(&lv->lock);
    if (step->guard != NULL) {
        old = lv->guard;
        lv->guard = step->guard;
    }
    if (step->reloader != NULL) {
        old_limits = lv->limits;
        lv->limits = step->reloader;
    }
    if (step->limits != NULL) {
        suspect_reloader_commit(lv->limits, step->limits);
    }
    pthread_mutex_unlock(&lv->lock);
    /* Requests hold limits snapshots, not the reloader: freeing it is
     * safe once no thread can reach it through lv. */
    mw_guard_unref(old);
    suspect_reloader_free(old_limits);
    if (step->guard != NULL) {
        const suspect_conf_t *c = mw_guard_conf(step->guard);

        log_warnings(c, NULL);
        lv->conf_st = step->conf_st;
        lv->have_failed = false;
        mw_log(MW_LOG_NOTICE, "%s: reloaded (%zu routes)", lv->conf_path,
               c->nroutes);
        if (lv->hooks.applied != NULL) {
            lv->hooks.applied(lv->hooks.arg, true);
        }
        n++;
    }
    if (step->limits != NULL || step->reloader != NULL) {
        suspect_limits_t *l = suspect_reloader_acquire(lv->limits);

        log_warnings(NULL, l);
        mw_log(MW_LOG_NOTICE, "limits reloaded (%zu actions)",
               suspect_limits_count(l));
        suspect_limits_unref(l);
        if (lv->hooks.applied != NULL) {
            lv->hooks.applied(lv->hooks.arg, false);
        }
        n++;
    }
    return n;
}

/* Drops the part of step that only came back for the other file's sake
 * (extra: 1 suspect.xml, 2 the limits file): refused again, quietly. */
static void step_drop_extra(mw_live_t *lv, reload_step_t *step, int extra)
{
    if (extra == 1) {
        mw_guard_unref(step->guard);
        suspect_reloader_free(step->reloader);
        step->guard = NULL;
        step->reloader = NULL;
    } else {
        suspect_reloader_refuse(lv->limits, step->limits);
        step->limits = NULL;
    }
}

/* One look at both files: the number swapped in.  When the two together
 * still do not fit, the new file is tried alone. */
static int reload_once(mw_live_t *lv, bool force)
{
    reload_step_t step;
    int extra = 0;

    memset(&step, 0, sizeof(step));
    if (force) {
        /* asked for: a limits file the periodic look found bad is judged
         * again, so that the answer says what is wrong with it */
        suspect_reloader_forget(lv->limits);
    }
    step_conf(lv, force, false, &step);
    step_limits(lv, false, &step);
    if (step.guard == NULL && step.reloader == NULL && step.limits == NULL) {
        return 0;
    }
    if (step.guard == NULL && lv->have_failed && lv->conf_refused) {
        step_conf(lv, false, true, &step);
        extra = step.guard != NULL ? 1 : 0;
    } else if (step.limits == NULL && step.reloader == NULL) {
        step_limits(lv, true, &step);
        extra = step.limits != NULL ? 2 : 0;
    }
    if (extra != 0 && !step_valid(lv, &step, false)) {
        step_drop_extra(lv, &step, extra);
    }
    if (!step_valid(lv, &step, true)) {
        step_refuse(lv, &step);
        return 0;
    }
    return step_commit(lv, &step);
}

int mw_live_reload(mw_live_t *lv, bool force)
{
    int n;

    pthread_mutex_lock(&lv->reload_lock);
    n = reload_once(lv, force);
    atomic_store(&lv->next_ms, mono_ms() + mw_live_reload_ms(lv));
    pthread_mutex_unlock(&lv->reload_lock);
    return n;
}

int mw_live_poll(mw_live_t *lv)
{
    int n;

    if (mono_ms() < atomic_load(&lv->next_ms) ||
        pthread_mutex_trylock(&lv->reload_lock) != 0) {
        return 0;
    }
    /* Looked at again only once due: another thread may have reloaded
     * between the clock read and the lock. */
    n = mono_ms() < atomic_load(&lv->next_ms) ? 0 : reload_once(lv, false);
    atomic_store(&lv->next_ms, mono_ms() + mw_live_reload_ms(lv));
    pthread_mutex_unlock(&lv->reload_lock);
    return n;
}
