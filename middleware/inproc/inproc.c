/*
 * inproc.c - the in-process guard's handle (suspect_guard.h): the files,
 * the store, the reloads and where the lines go.
 *
 * A handle is what suspect-fcgi's runtime is without a listener or a
 * forwarder: the live pair of suspect.xml and its limits file
 * (setup/live.h: the same loaders, the same reload rule) and the store of
 * <Store> (setup/open_store.h).  Its own part is which suspect.xml it takes,
 * at open and on every reload (accept_conf()): forward mode only, no
 * <Cgi>, and no change to what the store was built on.
 *
 * Reloads come from suspect_guard_reload(), and in the AUTO mode from
 * suspect_guard_decide(), which calls mw_live_poll(): a clock read and an
 * atomic load until the interval has passed, then one thread looks at the
 * files while the others decide on the running pair.
 *
 * The log: the layers below write their lines with mw_log(); here they go
 * to the application's callback, or nowhere (a library writes nothing of
 * its own accord).  The sink is process-wide, as the log is.
 */
#include "inproc_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "alloc.h"
#include "log/log.h"
#include "setup/open_store.h"
#include "suspect_failover.h"

/* ---- the log ------------------------------------------------------------- */

static suspect_guard_log_fn log_fn;
static void *log_arg;
static atomic_bool log_chosen;

static void log_to_app(void *arg, mw_log_level_t level, const char *msg)
{
    (void)arg;
    if (log_fn != NULL) {
        log_fn(log_arg, (int)level, msg);
    }
}

void suspect_guard_set_log(suspect_guard_log_fn fn, void *arg, int max_level)
{
    log_fn = fn;
    log_arg = arg;
    mw_log_init("suspect", max_level < SUSPECT_GUARD_LOG_ERROR ? MW_LOG_ERROR
                           : max_level > SUSPECT_GUARD_LOG_DEBUG
                               ? MW_LOG_DEBUG
                               : (mw_log_level_t)max_level);
    mw_log_sink(log_to_app, NULL);
    atomic_store(&log_chosen, true);
}

/* ---- the files ----------------------------------------------------------- */

/* Which suspect.xml the application may run on: see the file comment. */
static suspect_rc_t accept_conf(void *arg, const suspect_conf_t *boot,
                                const suspect_conf_t *c, suspect_err_t *err)
{
    const char *why = mw_store_change(boot, c);

    (void)arg;
    if (c->mode != SUSPECT_MODE_FORWARD) {
        return suspect_err_set(
            err, SUSPECT_E_CONFIG, c->file, c->server_line,
            "Server: deciding in-process, the application runs after the "
            "decision: mode must be forward");
    }
    if (c->has_cgi) {
        return suspect_err_set(
            err, SUSPECT_E_CONFIG, c->file, c->cgi_line,
            "Cgi: deciding in-process, no CGI program runs: describe the "
            "application with <Upstream> (docs/in-process.md)");
    }
    if (why != NULL) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, c->file, 0,
                               "<%s> changed: restart the application to "
                               "apply it",
                               why);
    }
    return SUSPECT_OK;
}

/* The live pair's refused hook: the first refusal of a reload the
 * application asked for is its error. */
static void refused(void *arg, bool conf, const char *msg)
{
    suspect_guard_t *g = arg;

    (void)conf;
    if (g->report != NULL) {
        suspect_err_set(g->report, SUSPECT_E_CONFIG, NULL, 0, "%s", msg);
    }
}

/* The live pair's applied hook: a new limits file is a new generation of
 * the failover store's outage journal, as in suspect-fcgi. */
static void applied(void *arg, bool conf)
{
    suspect_guard_t *g = arg;

    if (!conf) {
        suspect_failover_bump_generation(g->store);
    }
}

/* What suspect-fcgi serves and an application does not: said once, at
 * open. */
static void say_unserved(const suspect_conf_t *c)
{
    if (c->control_line > 0) {
        mw_log(MW_LOG_WARNING,
               "%s:%d: Control: no control socket in-process (suspectctl "
               "reaches an lmdb or redis store directly)",
               c->file, c->control_line);
    }
    if (c->metrics_line > 0) {
        mw_log(MW_LOG_WARNING, "%s:%d: Metrics: not served in-process", c->file,
               c->metrics_line);
    }
    if (c->log_line > 0) {
        mw_log(MW_LOG_WARNING,
               "%s:%d: Log: no decision log in-process (the application "
               "logs its verdicts)",
               c->file, c->log_line);
    }
}

suspect_rc_t suspect_guard_open(const char *conf_path,
                                const suspect_guard_opts_t *opts,
                                suspect_guard_t **out, suspect_err_t *err)
{
    suspect_guard_t *g;
    mw_live_hooks_t hooks = {accept_conf, refused, applied, NULL};
    suspect_rc_t rc;

    if (conf_path == NULL || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_guard_open: NULL argument");
    }
    if (!atomic_load(&log_chosen)) {
        suspect_guard_set_log(NULL, NULL, SUSPECT_GUARD_LOG_NOTICE);
    }
    g = suspect_calloc(1, sizeof(*g));
    if (g == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    pthread_mutex_init(&g->report_lock, NULL);
    g->auto_reload =
        opts == NULL || opts->reload != SUSPECT_GUARD_RELOAD_MANUAL;
    hooks.arg = g;
    rc = mw_live_new(conf_path, &hooks, &g->live, err);
    if (rc == SUSPECT_OK) {
        rc = mw_store_new(mw_live_boot(g->live), &g->store, err);
    }
    if (rc != SUSPECT_OK) {
        suspect_guard_close(g);
        return rc;
    }
    say_unserved(mw_live_boot(g->live));
    *out = g;
    return SUSPECT_OK;
}

void suspect_guard_close(suspect_guard_t *g)
{
    if (g == NULL) {
        return;
    }
    suspect_store_free(g->store);
    mw_live_free(g->live);
    pthread_mutex_destroy(&g->report_lock);
    free(g);
}

suspect_rc_t suspect_guard_reload(suspect_guard_t *g, bool force, int *swapped,
                                  suspect_err_t *err)
{
    suspect_err_t report;
    int n;

    if (g == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_guard_reload: NULL argument");
    }
    suspect_err_clear(&report);
    pthread_mutex_lock(&g->report_lock);
    g->report = &report;
    n = mw_live_reload(g->live, force);
    g->report = NULL;
    pthread_mutex_unlock(&g->report_lock);
    if (swapped != NULL) {
        *swapped = n;
    }
    if (report.code != SUSPECT_OK) {
        return suspect_err_set(err, report.code, NULL, 0, "%s", report.text);
    }
    return SUSPECT_OK;
}
