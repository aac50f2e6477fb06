/*
 * observe.c - the whole metrics text of a running suspect-fcgi: what the
 * registry counts on the request path (metrics.c), then what is read from
 * its owner at scrape time: the store's errors, breaker and lock cache
 * (the failover wrapper's counters), the memory store's size, the
 * workers, the CGI programs running, the requests whose PARAMS or body
 * did not arrive in time, the decision log's lines, the version and the
 * start time.  docs/metrics.md lists every metric.
 *
 * Everything here runs on the metrics listener's thread; the reads are of
 * atomics or take the owners' own locks (the memory store's size takes
 * each shard's mutex in turn), never a request's.
 */
#include "config.h"

#include "observe.h"

#include <string.h>

#include "forward/cgi.h"
#include "suspect_failover.h"

/* The failover wrapper's counters, by store (zeros for the memory store,
 * which has no wrapper, no breaker and no cache); full: the decisions the
 * store had no room for (mw_runtime_store_full). */
static void render_store(mw_prom_t *p, const char *store,
                         const suspect_failover_stats_t *f, uint64_t full)
{
    static const char *const states[] = {"closed", "open", "half_open"};
    const char *labels[] = {"store", store, NULL};

    mw_prom_head(p, "suspect_store_errors_total", "counter",
                 "Store calls that failed (each then decided by the fail "
                 "mode).");
    mw_prom_sample(p, "suspect_store_errors_total", labels,
                   (double)f->primary_errors);
    mw_prom_head(p, "suspect_store_breaker_state", "gauge",
                 "The circuit breaker in front of the store: 1 for the "
                 "state it is in.");
    for (int s = 0; s < 3; s++) {
        const char *sl[] = {"store", store, "state", states[s], NULL};

        mw_prom_sample(p, "suspect_store_breaker_state", sl,
                       (int)f->state == s ? 1 : 0);
    }
    mw_prom_head(p, "suspect_store_full_total", "counter",
                 "Decisions the store had no room for: the memory store "
                 "full of live locks (a 503), the LMDB map full (the fail "
                 "mode decides).");
    mw_prom_sample(p, "suspect_store_full_total", labels, (double)full);
    mw_prom_head(p, "suspect_lock_cache_hits_total", "counter",
                 "Denials served from the lock cache without a store call.");
    mw_prom_sample(p, "suspect_lock_cache_hits_total", labels,
                   (double)f->cache_hits);
}

/* The workers, the CGI programs and the requests that did not arrive. */
static void render_server(mw_prom_t *p, const mw_observe_t *o)
{
    mw_server_stats_t st;

    mw_server_stats(o->srv, &st);
    mw_prom_head(p, "suspect_workers", "gauge",
                 "Worker threads (<Server workers>).");
    mw_prom_sample(p, "suspect_workers", NULL, o->workers);
    mw_prom_head(p, "suspect_workers_busy", "gauge",
                 "Workers serving a request now.");
    mw_prom_sample(p, "suspect_workers_busy", NULL, st.busy);
    mw_prom_head(p, "suspect_cgi_children", "gauge",
                 "CGI programs running now.");
    mw_prom_sample(p, "suspect_cgi_children", NULL, (double)mw_cgi_running());
    mw_prom_head(p, "suspect_request_arrival_timeouts_total", "counter",
                 "Requests that did not arrive from the web server in time "
                 "(<Server requestTimeout>).");
    mw_prom_sample(p, "suspect_request_arrival_timeouts_total", NULL,
                   (double)st.timed_out);
    mw_prom_head(p, "suspect_fastcgi_connections", "gauge",
                 "Web server connections held now.");
    mw_prom_sample(p, "suspect_fastcgi_connections", NULL, st.open);
    mw_prom_head(p, "suspect_fastcgi_connections_evicted_total", "counter",
                 "Connections closed to make room (<Server maxConnections>).");
    mw_prom_sample(p, "suspect_fastcgi_connections_evicted_total", NULL,
                   (double)st.evicted);
    mw_prom_head(p, "suspect_fastcgi_requests_total", "counter",
                 "Requests the web server sent.");
    mw_prom_sample(p, "suspect_fastcgi_requests_total", NULL,
                   (double)st.requests);
    mw_prom_head(p, "suspect_fastcgi_requests_in_front_total", "counter",
                 "Of them, requests answered by the thread that read them, "
                 "no worker woken (the memory store, nothing forwarded).");
    mw_prom_sample(p, "suspect_fastcgi_requests_in_front_total", NULL,
                   (double)st.in_front);
}

/* suspect_action_info: how each action of the running limits file
 * counts (at most MW_METRICS_ACTIONS of them, like the other labels). */
static void render_actions(mw_prom_t *p, mw_runtime_t *rt)
{
    mw_guard_t *g = NULL;
    suspect_limits_t *lim = NULL;

    mw_runtime_acquire(rt, &g, &lim);
    mw_prom_head(p, "suspect_action_info", "gauge",
                 "Always 1: each action of the limits file and how it "
                 "counts (SlidingLog, TokenBucket, SlidingCounter).");
    for (size_t i = 0; i < suspect_limits_count(lim) && i < MW_METRICS_ACTIONS;
         i++) {
        const suspect_rule_t *r = suspect_limits_at(lim, i);
        const char *labels[] = {"action", r->action, "algorithm",
                                suspect_algorithm_name(r->algorithm), NULL};

        mw_prom_sample(p, "suspect_action_info", labels, 1);
    }
    mw_guard_unref(g);
    suspect_limits_unref(lim);
}

void mw_observe_render(void *arg, mw_prom_t *p)
{
    const mw_observe_t *o = arg;
    suspect_store_t *store = mw_runtime_store(o->rt);
    mw_metrics_t *m = mw_runtime_metrics(o->rt);
    const char *name = mw_metrics_store_name(m);
    const char *version[] = {"version", PACKAGE_VERSION, "store", name, NULL};
    const char *written[] = {"result", "written", NULL};
    const char *failed[] = {"result", "failed", NULL};
    suspect_failover_stats_t f;
    uint64_t w, e;

    mw_prom_head(p, "suspect_build_info", "gauge",
                 "Always 1: the version running and its store.");
    mw_prom_sample(p, "suspect_build_info", version, 1);
    mw_prom_head(p, "suspect_process_start_time_seconds", "gauge",
                 "When suspect-fcgi started, in seconds since the epoch.");
    mw_prom_sample(p, "suspect_process_start_time_seconds", NULL,
                   (double)mw_runtime_started_ms(o->rt) / 1000.0);
    mw_metrics_render(m, p);
    render_actions(p, o->rt);
    suspect_failover_stats(store, &f);
    render_store(p, name, &f, mw_runtime_store_full(o->rt));
    if (strcmp(name, "memory") == 0) {
        mw_prom_head(p, "suspect_memory_store_entries", "gauge",
                     "Identities the memory store holds now.");
        mw_prom_sample(p, "suspect_memory_store_entries", NULL,
                       (double)suspect_memstore_size(store));
    }
    render_server(p, o);
    mw_dlog_counts(mw_runtime_dlog(o->rt), &w, &e);
    mw_prom_head(p, "suspect_decision_log_lines_total", "counter",
                 "Decision log lines, by whether the write succeeded.");
    mw_prom_sample(p, "suspect_decision_log_lines_total", written, (double)w);
    mw_prom_sample(p, "suspect_decision_log_lines_total", failed, (double)e);
}
