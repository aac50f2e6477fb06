/*
 * live.h - suspect.xml and its limits file kept current: the guard
 * compiled from the one and the limits snapshot of the other, reloaded
 * when either changes and never replaced by a bad pair.  What suspect-fcgi
 * and an application deciding in-process (libsuspect-guard) both run on.
 *
 * Reload: mw_live_reload() looks at both files (stat) and loads what
 * changed.  A new suspect.xml is compiled into a new guard and swapped in
 * only when it is valid and its owner accepts it (the hooks' accept: a
 * setting bound to what the owner built at start, a listening socket or
 * a store, cannot change under it); otherwise the running one stays and
 * the reason is logged as "file:line: message".  The two files are a
 * pair: one that would leave a route without its action in the limits
 * file is refused (at start too: mw_live_new() fails).  Requests in
 * flight finish on the guard and limits they started with (references).
 */
#ifndef MW_SETUP_LIVE_H
#define MW_SETUP_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/suspect_conf.h"
#include "guard/guard.h"
#include "limits/suspect_limits.h"
#include "suspect_error.h"

typedef struct mw_live mw_live_t;

/* What the owner says about, and hears of, each reload; every member may
 * be NULL.  Called on the thread that reloads, one reload at a time. */
typedef struct mw_live_hooks {
    /* Whether c, loaded and valid, may replace the running suspect.xml
     * (boot: the one loaded at start; at start, c is boot itself):
     * SUSPECT_OK, or an error saying why not (file:line). */
    suspect_rc_t (*accept)(void *arg, const suspect_conf_t *boot,
                           const suspect_conf_t *c, suspect_err_t *err);
    /* A changed file was refused (conf: suspect.xml, else the limits
     * file); msg is the reason as logged. */
    void (*refused)(void *arg, bool conf, const char *msg);
    /* A changed file was swapped in (conf: suspect.xml, else the limits
     * file). */
    void (*applied)(void *arg, bool conf);
    void *arg;
} mw_live_hooks_t;

/*
 * Loads suspect.xml at conf_path, compiles its guard and loads its limits
 * file; hooks (copied; NULL: none) judge and hear of the reloads.  Fails
 * with the first error (file:line for the files), a route whose action
 * the limits file lacks, or what accept says of the file, included.
 */
suspect_rc_t mw_live_new(const char *conf_path, const mw_live_hooks_t *hooks,
                         mw_live_t **out, suspect_err_t *err);

/* NULL is a no-op. */
void mw_live_free(mw_live_t *lv);

/* The suspect.xml loaded at start (for the settings bound to it). */
const suspect_conf_t *mw_live_boot(const mw_live_t *lv);

/* The path of suspect.xml, as given. */
const char *mw_live_path(const mw_live_t *lv);

/* The current guard and limits snapshot, each with a reference the caller
 * drops (mw_guard_unref(), suspect_limits_unref()); a reload never frees
 * them under it. */
void mw_live_acquire(mw_live_t *lv, mw_guard_t **guard,
                     suspect_limits_t **limits);

/* The reload interval of the current configuration (<Limits reload>), in
 * ms. */
unsigned mw_live_reload_ms(mw_live_t *lv);

/*
 * Looks at both files and reloads what changed (force: load even when the
 * files look unchanged, as on SIGHUP, and judge again a file the periodic
 * look already found bad, so that it is reported).  Logs what happened (mw_log)
 * and tells the hooks.  Returns the number of files swapped in (0, 1 or 2); a
 * refused file keeps the running one, never fatal.  One reload at a time:
 * a second caller waits.
 */
int mw_live_reload(mw_live_t *lv, bool force);

/*
 * mw_live_reload(lv, false) when the reload interval has passed since the
 * last look, on the thread that calls it first; returns at once otherwise,
 * or while another thread reloads.  Cost when not due: a clock read and
 * an atomic load.  The number of files swapped in.
 */
int mw_live_poll(mw_live_t *lv);

#endif
