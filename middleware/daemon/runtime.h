/*
 * runtime.h - what a running suspect-fcgi holds: the current guard
 * (suspect.xml compiled), the limits file's reloader, the store and the
 * forwarder; the request handler (handler.h) uses them.
 *
 * Reload: mw_runtime_reload() looks at both files (stat) and loads what
 * changed.  A new suspect.xml is compiled into a new guard and swapped in
 * only when it is valid and changes nothing that needs a restart (listen
 * address, workers, store, keys, upstream); otherwise the running one stays
 * and the reason is logged as "file:line: message".  The two files are a
 * pair: one that would leave a route without its action in the limits
 * file is refused (at start too: mw_runtime_new() fails).  Requests in flight
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

/*
 * Looks at both files and reloads what changed (force: load even when the
 * files look unchanged, as on SIGHUP).  Logs what happened.  Returns the
 * number of files swapped in (0, 1 or 2); errors are logged, never fatal.
 */
int mw_runtime_reload(mw_runtime_t *rt, bool force);

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

#endif
