/*
 * metrics_http.h - the metrics listener: GET /metrics on an HTTP port of
 * its own, served by libmicrohttpd (docs/metrics.md says why a listener
 * of its own, and why that library).
 */
#ifndef MW_METRICS_HTTP_H
#define MW_METRICS_HTTP_H

#include "metrics.h"
#include "suspect_error.h"

/* Writes the whole exposition into out; runs on the listener's thread. */
typedef void (*mw_metrics_render_fn)(void *arg, mw_prom_t *out);

typedef struct mw_metrics_http mw_metrics_http_t;

/*
 * Listens on listen ("tcp:host:port") and answers GET or HEAD /metrics
 * with what render writes (text/plain; version=0.0.4), anything else with
 * 404 or 405.  At most 16 connections, each idle at most 10 s; one thread.
 * The calling thread must block every signal first.  SUSPECT_E_CONFIG
 * (bad address), SUSPECT_E_IO (cannot listen, or the library would not
 * start).
 */
suspect_rc_t mw_metrics_http_start(const char *listen, mw_metrics_render_fn fn,
                                   void *arg, mw_metrics_http_t **out,
                                   suspect_err_t *err);

/* Stops the listener and frees it.  NULL is a no-op. */
void mw_metrics_http_stop(mw_metrics_http_t *h);

#endif
