/*
 * observe.h - the metrics text of a running suspect-fcgi (observe.c).
 */
#ifndef MW_OBSERVE_H
#define MW_OBSERVE_H

#include "fcgi/fcgi_server.h"
#include "metrics/metrics.h"
#include "runtime.h"

/* What the rendering reads, all borrowed. */
typedef struct mw_observe {
    mw_runtime_t *rt;
    mw_server_t *srv;
    unsigned workers;
} mw_observe_t;

/* Renders every metric (mw_metrics_render_fn; arg is an mw_observe_t). */
void mw_observe_render(void *arg, mw_prom_t *p);

#endif
