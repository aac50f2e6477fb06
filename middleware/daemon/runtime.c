/*
 * runtime.c - the state of a running suspect-fcgi and its reloads.
 *
 * Ownership: the runtime owns the live pair of suspect.xml and its limits
 * file (setup/live.h: the current guard, the limits reloader, and the
 * reloads themselves), the store, the upstream client, the metrics
 * registry and the decision log.  Request threads take their own
 * references to the guard and to the limits snapshot and drop them when
 * the request ends, so a reload never frees anything a request still uses.
 *
 * What is the daemon's own is which settings a reload may not change
 * (the live pair's accept hook): the ones bound to objects created at
 * start, the listening socket, the worker pool, the store, the key format,
 * the upstream connection pool, the control socket, the metrics listener
 * and the decision log's file; and <Server mode>, which decides how every
 * request is answered and whether an upstream client exists at all (one
 * is only made in forward mode).  A reloaded suspect.xml that changes one
 * of them is refused as a whole, so the running policy is always one
 * file's, never a mix.  A new limits file starts a new generation of the
 * failover store's outage journal.
 *
 * Requests are handler.c's: it reaches the guard, limits, store and
 * upstream client through the accessors below, with the metrics registry
 * and the decision log the runtime also owns.  A reload says what became
 * of each file in a report (the control socket's reload answers with it)
 * and counts it in the metrics: the live pair's refused and applied hooks.
 */
#include "runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "log/log.h"
#include "random.h"
#include "setup/live.h"
#include "setup/open_store.h"
#include "suspect_failover.h"
#include "forward/upstream.h"
#include "text.h"

struct mw_runtime {
    char *conf_path;
    char *listen;
    mw_live_t *live;
    suspect_store_t *store;
    mw_upstream_t *upstream;     /* NULL unless <Upstream> */
    pthread_mutex_t report_lock; /* one reload, and its report, at a time */
    mw_reload_report_t *report;  /* the reload in progress's */
    mw_metrics_t *metrics;
    mw_dlog_t *dlog;
    suspect_siphash_key_t hash_key; /* without <Log identityKey> */
    int64_t started_ms;
};

/*
 * The first restart-only setting that differs between the running
 * configuration and c, or NULL.
 */
static const char *restart_change(const suspect_conf_t *old,
                                  const suspect_conf_t *c)
{
    const char *store;

    if (str_differs(old->listen, c->listen) ||
        old->socket_mode != c->socket_mode || old->mode != c->mode ||
        old->workers != c->workers || old->params_max != c->params_max ||
        old->io_timeout_ms != c->io_timeout_ms ||
        old->request_timeout_ms != c->request_timeout_ms ||
        old->max_connections != c->max_connections) {
        return "Server";
    }
    store = mw_store_change(old, c);
    if (store != NULL) {
        return store;
    }
    if (old->has_upstream != c->has_upstream || old->has_cgi != c->has_cgi ||
        str_differs(old->upstream_address, c->upstream_address) ||
        str_differs(old->upstream_script, c->upstream_script) ||
        str_differs(old->upstream_pass_params, c->upstream_pass_params) ||
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

/* The live pair's accept hook: a reload that changes a restart-only
 * setting is refused. */
static suspect_rc_t accept_conf(void *arg, const suspect_conf_t *boot,
                                const suspect_conf_t *c, suspect_err_t *err)
{
    const char *why = restart_change(boot, c);

    (void)arg;
    if (why == NULL) {
        return SUSPECT_OK;
    }
    return suspect_err_set(err, SUSPECT_E_CONFIG, c->file, 0,
                           "<%s> changed: restart suspect-fcgi to apply it",
                           why);
}

/* The live pair's refused hook: says in the reload's report and its
 * metrics that one file (conf: suspect.xml, else the limits file) was
 * refused, and why (the first reason given stays). */
static void report_refused(void *arg, bool conf, const char *why)
{
    mw_runtime_t *rt = arg;
    mw_reload_report_t *r = rt->report;
    char *dst;

    if (r == NULL || (conf ? r->conf : r->limits) == MW_RELOAD_REJECTED) {
        return;
    }
    dst = conf ? r->conf_why : r->limits_why;
    if (conf) {
        r->conf = MW_RELOAD_REJECTED;
    } else {
        r->limits = MW_RELOAD_REJECTED;
    }
    snprintf(dst, sizeof(r->conf_why), "%s", why);
    mw_metrics_reload(rt->metrics, conf, false, 0);
}

/* The live pair's applied hook: reported and counted; a new limits file
 * is a new generation of the outage journal. */
static void report_applied(void *arg, bool conf)
{
    mw_runtime_t *rt = arg;

    if (!conf) {
        suspect_failover_bump_generation(rt->store);
    }
    if (rt->report != NULL) {
        if (conf) {
            rt->report->conf = MW_RELOAD_APPLIED;
        } else {
            rt->report->limits = MW_RELOAD_APPLIED;
        }
    }
    mw_metrics_reload(rt->metrics, conf, true, wall_ms());
}

static suspect_rc_t upstream_new(const suspect_conf_t *c, mw_upstream_t **out,
                                 suspect_err_t *err)
{
    mw_upstream_opts_t o;

    memset(&o, 0, sizeof(o));
    o.address = c->upstream_address;
    o.script_filename = c->upstream_script;
    o.pass_params = c->upstream_pass_params;
    o.connect_timeout_ms = c->upstream_connect_timeout_ms;
    o.timeout_ms = c->upstream_timeout_ms;
    o.max_idle = c->upstream_max_idle;
    return mw_upstream_new(&o, out, err);
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
    if (suspect_random_bytes(&rt->hash_key, sizeof(rt->hash_key), NULL) !=
        SUSPECT_OK) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "no random key for the decision log");
    }
    return mw_dlog_open(c->decision_path, &rt->dlog, err);
}

suspect_rc_t mw_runtime_new(const char *conf_path, const char *listen_override,
                            mw_runtime_t **out, suspect_err_t *err)
{
    mw_runtime_t *rt = suspect_calloc(1, sizeof(*rt));
    mw_live_hooks_t hooks = {accept_conf, report_refused, report_applied, rt};
    const suspect_conf_t *c;
    suspect_rc_t rc;

    if (rt == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    pthread_mutex_init(&rt->report_lock, NULL);
    rt->started_ms = wall_ms();
    rt->conf_path = realpath(conf_path, NULL);
    if (rt->conf_path == NULL) {
        rt->conf_path = suspect_strdup(conf_path);
    }
    if (rt->conf_path == NULL) {
        mw_runtime_free(rt);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    rc = mw_live_new(rt->conf_path, &hooks, &rt->live, err);
    if (rc != SUSPECT_OK) {
        mw_runtime_free(rt);
        return rc;
    }
    c = mw_live_boot(rt->live);
    rt->listen =
        suspect_strdup(listen_override != NULL ? listen_override : c->listen);
    rc = rt->listen == NULL
             ? suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory")
             : mw_store_new(c, &rt->store, err);
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
    mw_live_free(rt->live);
    pthread_mutex_destroy(&rt->report_lock);
    free(rt->listen);
    free(rt->conf_path);
    free(rt);
}

const suspect_conf_t *mw_runtime_conf(const mw_runtime_t *rt)
{
    return mw_live_boot(rt->live);
}

const char *mw_runtime_listen(const mw_runtime_t *rt)
{
    return rt->listen;
}

void mw_runtime_acquire(mw_runtime_t *rt, mw_guard_t **guard,
                        suspect_limits_t **limits)
{
    mw_live_acquire(rt->live, guard, limits);
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

uint64_t mw_runtime_store_full(const mw_runtime_t *rt)
{
    suspect_failover_stats_t f;

    suspect_failover_stats(rt->store, &f);
    return f.primary_full + mw_metrics_store_full_count(rt->metrics);
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
    return mw_live_reload_ms(rt->live);
}

/*
 * Both files are checked as a pair: a new suspect.xml whose route names an
 * action the limits file lacks, or a limits file that drops an action a
 * route names, is refused, and the running pair stays (setup/live.c).
 */
int mw_runtime_reload(mw_runtime_t *rt, bool force, mw_reload_report_t *report)
{
    mw_reload_report_t local;
    int n;

    if (report == NULL) {
        report = &local;
    }
    memset(report, 0, sizeof(*report));
    pthread_mutex_lock(&rt->report_lock);
    rt->report = report;
    n = mw_live_reload(rt->live, force);
    rt->report = NULL;
    pthread_mutex_unlock(&rt->report_lock);
    return n;
}
