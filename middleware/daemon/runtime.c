/*
 * runtime.c - the state of a running suspect-fcgi and its reloads.
 *
 * Ownership: the runtime owns one reference to the current guard (which
 * holds the suspect.xml snapshot), the limits reloader, the store and the
 * upstream client.  Request threads take their own references to the guard
 * and to the limits snapshot under `lock` and drop them when the request
 * ends, so a reload never frees anything a request still uses.
 *
 * Restart-only settings are the ones bound to objects created at start:
 * the listening socket, the worker pool, the store, the key format and the
 * upstream connection pool; and <Server mode>, which decides how every
 * request is answered and whether an upstream client exists at all (one
 * is only made in forward mode).  A reloaded suspect.xml that changes one
 * of them is refused as a whole, so the running policy is always one
 * file's, never a mix.
 *
 * suspect.xml change detection is the limits reloader's: stat() against
 * the file the running snapshot was read from; a bad file is logged once
 * per state of the file, not on every poll.
 *
 * Requests are handler.c's: it reaches the guard, limits, store and
 * upstream client through the accessors below, with the metrics registry
 * and the decision log the runtime also owns.  A reload says what became
 * of each file in a report (the control socket's reload answers with it)
 * and counts it in the metrics.
 */
#include "runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "alloc.h"
#include "clock.h"
#include "file_id.h"
#include "log/log.h"
#include "setup/store.h"
#include "suspect_failover.h"
#include "forward/upstream.h"

struct mw_runtime {
    char *conf_path;
    char *listen;
    const suspect_conf_t *boot; /* the snapshot the daemon started with */
    pthread_mutex_t lock;       /* guards guard and limits */
    mw_guard_t *guard;
    suspect_reloader_t *limits;
    suspect_store_t *store;
    mw_upstream_t *upstream; /* NULL unless <Upstream> */
    struct stat conf_st;     /* the suspect.xml the guard came from */
    struct stat failed_st;   /* the last bad suspect.xml reported */
    uint64_t failed_lists;   /* ...and its list files then */
    bool have_failed;
    bool conf_refused;           /* failed_st is valid, refused for the
                                    limits file's sake */
    pthread_mutex_t reload_lock; /* one reload at a time */
    mw_reload_report_t *report;  /* the reload in progress's */
    mw_metrics_t *metrics;
    mw_dlog_t *dlog;
    suspect_siphash_key_t hash_key; /* without <Log identityKey> */
    int64_t started_ms;
};

static bool str_differs(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a != b;
    }
    return strcmp(a, b) != 0;
}

/*
 * The first restart-only setting that differs between the running
 * configuration and c, or NULL.
 */
static const char *restart_change(const suspect_conf_t *old,
                                  const suspect_conf_t *c)
{
    if (str_differs(old->listen, c->listen) ||
        old->socket_mode != c->socket_mode || old->mode != c->mode ||
        old->workers != c->workers || old->params_max != c->params_max ||
        old->io_timeout_ms != c->io_timeout_ms ||
        old->request_timeout_ms != c->request_timeout_ms ||
        old->max_connections != c->max_connections) {
        return "Server";
    }
    if (old->store != c->store ||
        old->memory_max_entries != c->memory_max_entries ||
        str_differs(old->lmdb_path, c->lmdb_path) ||
        old->lmdb_map_size != c->lmdb_map_size ||
        old->lmdb_no_sync != c->lmdb_no_sync ||
        old->lmdb_mode != c->lmdb_mode || old->lmdb_group != c->lmdb_group ||
        str_differs(old->redis_url, c->redis_url) ||
        old->redis_timeout_ms != c->redis_timeout_ms ||
        old->redis_server_clock != c->redis_server_clock ||
        old->fail_mode != c->fail_mode) {
        return "Store";
    }
    if (old->key_format != c->key_format ||
        old->key_hash_tag != c->key_hash_tag ||
        str_differs(old->key_prefix, c->key_prefix)) {
        return "Keys";
    }
    if (old->has_upstream != c->has_upstream || old->has_cgi != c->has_cgi ||
        str_differs(old->upstream_address, c->upstream_address) ||
        str_differs(old->upstream_script, c->upstream_script) ||
        old->upstream_timeout_ms != c->upstream_timeout_ms ||
        old->upstream_connect_timeout_ms != c->upstream_connect_timeout_ms ||
        old->upstream_max_idle != c->upstream_max_idle) {
        return "Upstream";
    }
    if (old->control_on != c->control_on ||
        str_differs(old->control_path, c->control_path) ||
        old->control_mode != c->control_mode ||
        str_differs(old->control_group, c->control_group)) {
        return "Control";
    }
    if (str_differs(old->metrics_listen, c->metrics_listen)) {
        return "Metrics";
    }
    if (str_differs(old->decision_path, c->decision_path)) {
        return "Log path";
    }
    return NULL;
}

static suspect_rc_t upstream_new(const suspect_conf_t *c, mw_upstream_t **out,
                                 suspect_err_t *err)
{
    mw_upstream_opts_t o;

    memset(&o, 0, sizeof(o));
    o.address = c->upstream_address;
    o.script_filename = c->upstream_script;
    o.connect_timeout_ms = c->upstream_connect_timeout_ms;
    o.timeout_ms = c->upstream_timeout_ms;
    o.max_idle = c->upstream_max_idle;
    return mw_upstream_new(&o, out, err);
}

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

/* The metrics registry, the decision log and the hash key of rt. */
static suspect_rc_t observers_new(mw_runtime_t *rt, const suspect_conf_t *c,
                                  suspect_err_t *err)
{
    mw_target_t target = c->mode != SUSPECT_MODE_FORWARD ? MW_TARGET_COUNT
                         : c->has_upstream               ? MW_TARGET_FASTCGI
                                                         : MW_TARGET_CGI;

    rt->metrics = mw_metrics_new(suspect_conf_store_name(c->store), target);
    if (rt->metrics == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    if (getrandom(&rt->hash_key, sizeof(rt->hash_key), 0) !=
        sizeof(rt->hash_key)) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "no random key for the decision log");
    }
    return mw_dlog_open(c->decision_path, &rt->dlog, err);
}

suspect_rc_t mw_runtime_new(const char *conf_path, const char *listen_override,
                            mw_runtime_t **out, suspect_err_t *err)
{
    mw_runtime_t *rt = suspect_calloc(1, sizeof(*rt));
    const suspect_conf_t *c;
    suspect_rc_t rc;

    if (rt == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    pthread_mutex_init(&rt->lock, NULL);
    pthread_mutex_init(&rt->reload_lock, NULL);
    rt->started_ms = wall_ms();
    rt->conf_path = realpath(conf_path, NULL);
    if (rt->conf_path == NULL) {
        rt->conf_path = suspect_strdup(conf_path);
    }
    if (rt->conf_path == NULL) {
        mw_runtime_free(rt);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    rc = load_guard(rt->conf_path, &rt->guard, &rt->conf_st, err);
    if (rc != SUSPECT_OK) {
        mw_runtime_free(rt);
        return rc;
    }
    c = mw_guard_conf(rt->guard);
    rt->boot = suspect_conf_ref(c);
    rt->listen =
        suspect_strdup(listen_override != NULL ? listen_override : c->listen);
    rc = rt->listen == NULL
             ? suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory")
             : suspect_reloader_new(c->limits_path, NULL, c->reload_ms,
                                    &rt->limits, err);
    if (rc == SUSPECT_OK) {
        suspect_limits_t *l = suspect_reloader_acquire(rt->limits);

        rc = suspect_conf_check_actions(c, l, err);
        suspect_limits_unref(l);
    }
    if (rc == SUSPECT_OK) {
        rc = mw_store_new(c, &rt->store, err);
    }
    if (rc == SUSPECT_OK && c->has_upstream) {
        rc = upstream_new(c, &rt->upstream, err);
    }
    if (rc == SUSPECT_OK) {
        rc = observers_new(rt, c, err);
    }
    if (rc != SUSPECT_OK) {
        mw_runtime_free(rt);
        return rc;
    }
    *out = rt;
    return SUSPECT_OK;
}

void mw_runtime_free(mw_runtime_t *rt)
{
    if (rt == NULL) {
        return;
    }
    mw_upstream_free(rt->upstream);
    mw_metrics_free(rt->metrics);
    mw_dlog_close(rt->dlog);
    suspect_store_free(rt->store);
    suspect_reloader_free(rt->limits);
    mw_guard_unref(rt->guard);
    suspect_conf_unref(rt->boot);
    pthread_mutex_destroy(&rt->lock);
    pthread_mutex_destroy(&rt->reload_lock);
    free(rt->listen);
    free(rt->conf_path);
    free(rt);
}

const suspect_conf_t *mw_runtime_conf(const mw_runtime_t *rt)
{
    return rt->boot;
}

const char *mw_runtime_listen(const mw_runtime_t *rt)
{
    return rt->listen;
}

void mw_runtime_acquire(mw_runtime_t *rt, mw_guard_t **guard,
                        suspect_limits_t **limits)
{
    pthread_mutex_lock(&rt->lock);
    *guard = mw_guard_ref(rt->guard);
    *limits = suspect_reloader_acquire(rt->limits);
    pthread_mutex_unlock(&rt->lock);
}

suspect_store_t *mw_runtime_store(const mw_runtime_t *rt)
{
    return rt->store;
}

mw_upstream_t *mw_runtime_upstream(const mw_runtime_t *rt)
{
    return rt->upstream;
}

mw_metrics_t *mw_runtime_metrics(const mw_runtime_t *rt)
{
    return rt->metrics;
}

const char *mw_runtime_conf_path(const mw_runtime_t *rt)
{
    return rt->conf_path;
}

int64_t mw_runtime_started_ms(const mw_runtime_t *rt)
{
    return rt->started_ms;
}

mw_dlog_t *mw_runtime_dlog(const mw_runtime_t *rt)
{
    return rt->dlog;
}

const suspect_siphash_key_t *mw_runtime_hash_key(const mw_runtime_t *rt)
{
    return &rt->hash_key;
}

void mw_runtime_reopen_logs(mw_runtime_t *rt)
{
    suspect_err_t err;
    char msg[600];

    suspect_err_clear(&err);
    if (mw_dlog_reopen(rt->dlog, &err) != SUSPECT_OK) {
        suspect_err_format(&err, msg, sizeof(msg));
        mw_log(MW_LOG_ERROR, "%s; writing on to the old file", msg);
    } else {
        mw_log(MW_LOG_NOTICE, "decision log reopened");
    }
}

unsigned mw_runtime_reload_ms(mw_runtime_t *rt)
{
    unsigned ms;

    pthread_mutex_lock(&rt->lock);
    ms = mw_guard_conf(rt->guard)->reload_ms;
    pthread_mutex_unlock(&rt->lock);
    return ms;
}

/* What one reload would swap in: each part NULL when it stays. */
typedef struct reload_step {
    mw_guard_t *guard;            /* a new suspect.xml, compiled */
    struct stat conf_st;          /* its file */
    suspect_reloader_t *reloader; /* a new limits path or interval */
    suspect_limits_t *limits;     /* a new limits file (prepared) */
} reload_step_t;

/* Says in the reload's report and its metrics that one file (conf:
 * suspect.xml, else the limits file) was refused, and why (the first
 * reason given stays). */
static void report_refused(mw_runtime_t *rt, bool conf, const char *why)
{
    mw_reload_report_t *r = rt->report;
    char *dst = conf ? r->conf_why : r->limits_why;

    if ((conf ? r->conf : r->limits) != MW_RELOAD_REJECTED) {
        if (conf) {
            r->conf = MW_RELOAD_REJECTED;
        } else {
            r->limits = MW_RELOAD_REJECTED;
        }
        snprintf(dst, sizeof(r->conf_why), "%s", why);
        mw_metrics_reload(rt->metrics, conf, false, 0);
    }
}

/* Logs err with what is kept, and reports the file refused. */
static void log_kept(mw_runtime_t *rt, const suspect_err_t *err, bool conf)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    mw_log(MW_LOG_ERROR, "%s; keeping the running %s", msg,
           conf ? "configuration" : "limits");
    report_refused(rt, conf, msg);
}

/* Remembers the suspect.xml at st as bad (refused: only because of the
 * limits file), so the same file is not reported again. */
static void conf_failed(mw_runtime_t *rt, const struct stat *st, bool refused)
{
    (void)suspect_conf_lists_changed(mw_guard_conf(rt->guard),
                                     &rt->failed_lists);
    rt->failed_st = *st;
    rt->have_failed = true;
    rt->conf_refused = refused;
}

/* The suspect.xml half of a step: a new guard (and reloader) in *step
 * when the file changed and is valid on its own.  retry: look again at
 * a file refused for the limits file's sake. */
static void step_conf(mw_runtime_t *rt, bool force, bool retry,
                      reload_step_t *step)
{
    struct stat st;
    suspect_err_t err;
    mw_guard_t *g = NULL;
    const suspect_conf_t *c, *cur;
    const char *why;
    uint64_t lists_now;
    bool lists;

    suspect_err_clear(&err);
    if (stat(rt->conf_path, &st) != 0) {
        memset(&st, 0, sizeof(st));
    }
    /* An <Allow file> or <Deny file> edited is suspect.xml reloaded. */
    lists = suspect_conf_lists_changed(mw_guard_conf(rt->guard), &lists_now);
    if (!force && !lists && file_id_same_stat(&st, &rt->conf_st)) {
        return;
    }
    if (!force && rt->have_failed && file_id_same_stat(&st, &rt->failed_st) &&
        lists_now == rt->failed_lists && !(retry && rt->conf_refused)) {
        return;
    }
    if (load_guard(rt->conf_path, &g, &st, &err) != SUSPECT_OK) {
        log_kept(rt, &err, true);
        conf_failed(rt, &st, false);
        return;
    }
    c = mw_guard_conf(g);
    why = restart_change(rt->boot, c);
    if (why != NULL) {
        suspect_err_set(&err, SUSPECT_E_CONFIG, rt->conf_path, 0,
                        "<%s> changed: restart suspect-fcgi to apply it", why);
        log_kept(rt, &err, true);
        mw_guard_unref(g);
        conf_failed(rt, &st, false);
        return;
    }
    cur = mw_guard_conf(rt->guard);
    if ((strcmp(cur->limits_path, c->limits_path) != 0 ||
         cur->reload_ms != c->reload_ms) &&
        suspect_reloader_new(c->limits_path, NULL, c->reload_ms,
                             &step->reloader, &err) != SUSPECT_OK) {
        log_kept(rt, &err, true);
        mw_guard_unref(g);
        conf_failed(rt, &st, false);
        return;
    }
    step->guard = g;
    step->conf_st = st;
}

/* The limits half of a step: a new snapshot in *step when the running
 * reloader's file changed and is valid on its own. */
static void step_limits(mw_runtime_t *rt, bool retry, reload_step_t *step)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (step->reloader != NULL) {
        return; /* a new file altogether, loaded with the reloader */
    }
    if (suspect_reloader_prepare(rt->limits, retry, &step->limits, &err) < 0) {
        log_kept(rt, &err, false);
    }
}

/* What log_missing() reports a route without its action to. */
typedef struct missing_ctx {
    mw_runtime_t *rt;
    const reload_step_t *step;
    const char *kept;
} missing_ctx_t;

static void log_missing(void *arg, const char *msg)
{
    const missing_ctx_t *m = arg;

    mw_log(MW_LOG_ERROR,
           "%s; its requests would not be counted; keeping the "
           "running %s",
           msg, m->kept);
    if (m->step->guard != NULL) {
        report_refused(m->rt, true, msg);
    }
    if (m->step->limits != NULL || m->step->reloader != NULL) {
        report_refused(m->rt, false, msg);
    }
}

/* Whether the pair a step would make leaves no route without its action;
 * with say, logs each one that would. */
static bool step_valid(mw_runtime_t *rt, const reload_step_t *step, bool say)
{
    const suspect_conf_t *c =
        mw_guard_conf(step->guard != NULL ? step->guard : rt->guard);
    suspect_limits_t *l =
        step->limits != NULL     ? suspect_limits_ref(step->limits)
        : step->reloader != NULL ? suspect_reloader_acquire(step->reloader)
                                 : suspect_reloader_acquire(rt->limits);
    const char *kept = step->guard != NULL && step->limits != NULL
                           ? "configuration and limits"
                       : step->guard != NULL ? "configuration"
                                             : "limits";
    missing_ctx_t m = {rt, step, kept};
    size_t missing =
        suspect_conf_missing_actions(c, l, say ? log_missing : NULL, &m);

    suspect_limits_unref(l);
    return missing == 0;
}

/* Drops a refused step: each changed file is remembered as refused. */
static void step_refuse(mw_runtime_t *rt, reload_step_t *step)
{
    if (step->guard != NULL) {
        conf_failed(rt, &step->conf_st, true);
        mw_guard_unref(step->guard);
    }
    suspect_reloader_free(step->reloader);
    if (step->limits != NULL) {
        suspect_reloader_refuse(rt->limits, step->limits);
    }
}

/* Swaps in what a valid step holds; the number of files swapped in. */
static int step_commit(mw_runtime_t *rt, reload_step_t *step)
{
    mw_guard_t *old = NULL;
    suspect_reloader_t *old_limits = NULL;
    int n = 0;

    pthread_mutex_lock(&rt->lock);
    if (step->guard != NULL) {
        old = rt->guard;
        rt->guard = step->guard;
    }
    if (step->reloader != NULL) {
        old_limits = rt->limits;
        rt->limits = step->reloader;
    }
    if (step->limits != NULL) {
        suspect_reloader_commit(rt->limits, step->limits);
    }
    pthread_mutex_unlock(&rt->lock);
    /* Requests hold limits snapshots, not the reloader: freeing it is
     * safe once no thread can reach it through rt. */
    mw_guard_unref(old);
    suspect_reloader_free(old_limits);
    if (step->guard != NULL) {
        const suspect_conf_t *c = mw_guard_conf(step->guard);

        log_warnings(c, NULL);
        rt->conf_st = step->conf_st;
        rt->have_failed = false;
        mw_log(MW_LOG_NOTICE, "%s: reloaded (%zu routes)", rt->conf_path,
               c->nroutes);
        rt->report->conf = MW_RELOAD_APPLIED;
        mw_metrics_reload(rt->metrics, true, true, wall_ms());
        n++;
    }
    if (step->limits != NULL || step->reloader != NULL) {
        suspect_limits_t *l = suspect_reloader_acquire(rt->limits);

        log_warnings(NULL, l);
        mw_log(MW_LOG_NOTICE, "limits reloaded (%zu actions)",
               suspect_limits_count(l));
        suspect_limits_unref(l);
        suspect_failover_bump_generation(rt->store);
        rt->report->limits = MW_RELOAD_APPLIED;
        mw_metrics_reload(rt->metrics, false, true, wall_ms());
        n++;
    }
    return n;
}

/* Drops the part of step that only came back for the other file's sake
 * (extra: 1 suspect.xml, 2 the limits file): refused again, quietly. */
static void step_drop_extra(mw_runtime_t *rt, reload_step_t *step, int extra)
{
    if (extra == 1) {
        mw_guard_unref(step->guard);
        suspect_reloader_free(step->reloader);
        step->guard = NULL;
        step->reloader = NULL;
    } else {
        suspect_reloader_refuse(rt->limits, step->limits);
        step->limits = NULL;
    }
}

/* One look at both files: the number swapped in.  A file refused earlier
 * for the other one's sake comes back whenever the other one changes
 * (renaming an action takes an edit of each, in either order); when the
 * two together still do not fit, the new file is tried alone. */
static int reload_once(mw_runtime_t *rt, bool force)
{
    reload_step_t step;
    int extra = 0;

    memset(&step, 0, sizeof(step));
    step_conf(rt, force, false, &step);
    step_limits(rt, false, &step);
    if (step.guard == NULL && step.reloader == NULL && step.limits == NULL) {
        return 0;
    }
    if (step.guard == NULL && rt->have_failed && rt->conf_refused) {
        step_conf(rt, false, true, &step);
        extra = step.guard != NULL ? 1 : 0;
    } else if (step.limits == NULL && step.reloader == NULL) {
        step_limits(rt, true, &step);
        extra = step.limits != NULL ? 2 : 0;
    }
    if (extra != 0 && !step_valid(rt, &step, false)) {
        step_drop_extra(rt, &step, extra);
    }
    if (!step_valid(rt, &step, true)) {
        step_refuse(rt, &step);
        return 0;
    }
    return step_commit(rt, &step);
}

/*
 * Both files are checked as a pair: a new suspect.xml whose route names an
 * action the limits file lacks, or a limits file that drops an action a
 * route names, is refused, and the running pair stays (see
 * reload_once()).
 */
int mw_runtime_reload(mw_runtime_t *rt, bool force, mw_reload_report_t *report)
{
    mw_reload_report_t local;
    int n;

    if (report == NULL) {
        report = &local;
    }
    memset(report, 0, sizeof(*report));
    pthread_mutex_lock(&rt->reload_lock);
    rt->report = report;
    n = reload_once(rt, force);
    rt->report = NULL;
    pthread_mutex_unlock(&rt->reload_lock);
    return n;
}
