/*
 * runtime.h - what a running suspect-fcgi holds: the current guard
 * (suspect.xml compiled), the limits file's reloader, the store and the
 * forwarder; the request handler (handler.h) uses them.
 *
 * Reload: mw_runtime_reload() looks at both files (stat) and loads what
 * changed (setup/live.h, shared with the in-process guard).  A new
 * suspect.xml is compiled into a new guard and swapped in only when it is
 * valid and changes nothing that needs a restart (listen address,
 * workers, store, keys, upstream); otherwise the running one stays and the
 * reason is logged as "file:line: message".  The two files are a pair: one
 * that would leave a route without its action in the limits file is
 * refused (at start too: mw_runtime_new() fails).  Requests in flight
 * finish on the guard and limits they started with (references).
 */
#ifndef MW_RUNTIME_H
#define MW_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "forward/upstream.h"
#include "guard/guard.h"
#include "request/request.h"
#include "conf/suspect_conf.h"
#include "suspect_error.h"
#include "limits/suspect_limits.h"
#include "log/decision_log.h"
#include "metrics/metrics.h"
#include "suspect_store.h"

typedef struct mw_runtime mw_runtime_t;

/*
 * Loads suspect.xml at conf_path, its limits file, creates the store and
 * the forwarder.  listen_override (NULL = none) replaces <Server listen>.
 * Fails with the first error (file:line for the files), a route whose
 * action the limits file lacks included.
 */
suspect_rc_t mw_runtime_new(const char *conf_path, const char *listen_override,
                            mw_runtime_t **out, suspect_err_t *err);

void mw_runtime_free(mw_runtime_t *rt);

/* The configuration the daemon started with (listen, workers, ...). */
const suspect_conf_t *mw_runtime_conf(const mw_runtime_t *rt);

/* The listen address in effect (the override or the file's). */
const char *mw_runtime_listen(const mw_runtime_t *rt);

/* What a reload did with one file. */
typedef enum mw_reload_result {
    MW_RELOAD_UNCHANGED = 0, /* not looked at again: it did not change */
    MW_RELOAD_APPLIED,       /* loaded and swapped in */
    MW_RELOAD_REJECTED       /* invalid: the running one stays */
} mw_reload_result_t;

typedef struct mw_reload_report {
    mw_reload_result_t conf, limits;
    char conf_why[600]; /* when rejected: "file:line: message" */
    char limits_why[600];
} mw_reload_report_t;

/*
 * Looks at both files and reloads what changed (force: load even when the
 * files look unchanged, as on SIGHUP).  Logs what happened, and says it in
 * *report when report is not NULL.  Returns the number of files swapped in
 * (0, 1 or 2); errors are logged, never fatal.  Thread-safe: the signal
 * thread and the control socket's both reload.
 */
int mw_runtime_reload(mw_runtime_t *rt, bool force, mw_reload_report_t *report);

/* The reload interval of the current configuration, in ms. */
unsigned mw_runtime_reload_ms(mw_runtime_t *rt);

/* The current guard and limits snapshot, each with a reference the caller
 * drops (mw_guard_unref(), suspect_limits_unref()); a reload never frees
 * them under it. */
void mw_runtime_acquire(mw_runtime_t *rt, mw_guard_t **guard,
                        suspect_limits_t **limits);

/* The store, owned by rt, for as long as rt lives. */
suspect_store_t *mw_runtime_store(const mw_runtime_t *rt);

/* The upstream client, owned by rt; NULL unless <Upstream>. */
mw_upstream_t *mw_runtime_upstream(const mw_runtime_t *rt);

/* The metrics registry, owned by rt. */
mw_metrics_t *mw_runtime_metrics(const mw_runtime_t *rt);

/* suspect.xml as the daemon was started with it (-c), made absolute. */
const char *mw_runtime_conf_path(const mw_runtime_t *rt);

/* When rt was made (epoch ms): what the counters count since. */
int64_t mw_runtime_started_ms(const mw_runtime_t *rt);

/* Decisions the store had no room for since start: the memory store's
 * full answers (counted by the request path) and, behind the failover
 * wrapper, the primary's (LMDB's map full). */
uint64_t mw_runtime_store_full(const mw_runtime_t *rt);

/* The decision log (its file, or stderr), owned by rt; and the key that
 * hashes identities when <Log identityKey> is not set (drawn at start). */
mw_dlog_t *mw_runtime_dlog(const mw_runtime_t *rt);
const suspect_siphash_key_t *mw_runtime_hash_key(const mw_runtime_t *rt);

/* Opens the decision log's file again (SIGUSR1, after logrotate). */
void mw_runtime_reopen_logs(mw_runtime_t *rt);

#endif
