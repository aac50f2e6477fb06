/*
 * services.c - suspect-fcgi's control socket and metrics listener, started
 * after the FastCGI server and stopped before it drains (services.h).
 *
 * The control socket's path is suspect_conf_control_path(), the one
 * suspectctl computes from the same file: the daemon's --listen override
 * plays no part in it, so both always meet.  Each service runs on a
 * thread of its own and reaches the daemon only through the runtime (and
 * the server's counters), so neither can hold up a request.
 */
#include "services.h"

#include <stdlib.h>

#include "alloc.h"
#include "control/control_server.h"
#include "control_cmds.h"
#include "log/log.h"
#include "metrics/metrics_http.h"
#include "observe.h"

struct mw_services {
    mw_ctl_server_t *control;
    mw_metrics_http_t *metrics;
    mw_observe_t observe; /* the metrics listener's argument */
};

/* Starts the control socket into s->control (NULL when off). */
static suspect_rc_t control_start(mw_runtime_t *rt, mw_services_t *s,
                                  suspect_err_t *err)
{
    const suspect_conf_t *c = mw_runtime_conf(rt);
    mw_ctl_server_opts_t o;
    suspect_err_t cerr;
    char path[4096];
    char msg[600];

    o.path = suspect_conf_control_path(c, path, sizeof(path));
    if (o.path == NULL) {
        return SUSPECT_OK;
    }
    o.mode = c->control_mode;
    o.group = c->control_group;
    o.io_timeout_ms = 0;
    o.handler = mw_control_serve;
    o.arg = rt;
    suspect_err_clear(&cerr);
    if (mw_ctl_server_start(&o, &s->control, &cerr) == SUSPECT_OK) {
        mw_log(MW_LOG_NOTICE, "control socket %s", o.path);
        return SUSPECT_OK;
    }
    suspect_err_format(&cerr, msg, sizeof(msg));
    if (c->control_path != NULL || c->control_group != NULL) {
        return suspect_err_set(err, cerr.code, c->file, c->control_line,
                               "Control: %s", msg);
    }
    mw_log(MW_LOG_WARNING,
           "control socket off: %s (set <Control socket=\"...\"> to place "
           "it, or enabled=\"no\")",
           msg);
    return SUSPECT_OK;
}

/* Starts the metrics listener into s->metrics (NULL without <Metrics>). */
static suspect_rc_t metrics_start(mw_runtime_t *rt, mw_server_t *srv,
                                  mw_services_t *s, suspect_err_t *err)
{
    const suspect_conf_t *c = mw_runtime_conf(rt);
    suspect_err_t merr;
    char msg[600];

    if (c->metrics_listen == NULL) {
        return SUSPECT_OK;
    }
    s->observe.rt = rt;
    s->observe.srv = srv;
    s->observe.workers = c->workers;
    suspect_err_clear(&merr);
    if (mw_metrics_http_start(c->metrics_listen, mw_observe_render, &s->observe,
                              &s->metrics, &merr) != SUSPECT_OK) {
        suspect_err_format(&merr, msg, sizeof(msg));
        return suspect_err_set(err, merr.code, c->file, c->metrics_line,
                               "Metrics: %s", msg);
    }
    mw_log(MW_LOG_NOTICE, "metrics on http://%s/metrics",
           c->metrics_listen + 4);
    return SUSPECT_OK;
}

suspect_rc_t mw_services_start(mw_runtime_t *rt, mw_server_t *srv,
                               mw_services_t **out, suspect_err_t *err)
{
    mw_services_t *s = suspect_calloc(1, sizeof(*s));
    suspect_rc_t rc;

    *out = NULL;
    if (s == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    rc = control_start(rt, s, err);
    if (rc == SUSPECT_OK) {
        rc = metrics_start(rt, srv, s, err);
    }
    if (rc != SUSPECT_OK) {
        mw_services_stop(s);
        return rc;
    }
    *out = s;
    return SUSPECT_OK;
}

void mw_services_stop(mw_services_t *s)
{
    if (s == NULL) {
        return;
    }
    mw_metrics_http_stop(s->metrics);
    mw_ctl_server_stop(s->control);
    free(s);
}
