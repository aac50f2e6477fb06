/*
 * setup.h - what suspect-fcgi --check, suspectctl and suspect-cgi stand
 * on: suspect.xml, its limits file, the guard compiled from them and the
 * store, each held by one reference.
 *
 * mw_setup_load() loads them as the daemon loads them (the same loaders,
 * the same guard compilation; no store: opening one is each program's own
 * choice).  mw_setup_release() drops whatever is held.  They live in two
 * files: suspect-cgi, which reads its compiled configuration and links no
 * XML parser, releases what it never loads this way (setup.c), while
 * loading needs the XML loaders (setup_load.c).
 */
#ifndef MW_SETUP_SETUP_H
#define MW_SETUP_SETUP_H

#include "conf/suspect_conf.h"
#include "guard/guard.h"
#include "limits/suspect_limits.h"
#include "suspect_error.h"
#include "suspect_store.h"

typedef struct mw_setup {
    const suspect_conf_t *conf; /* one reference, or NULL */
    suspect_limits_t *limits;   /* one reference, or NULL */
    mw_guard_t *guard;          /* one reference, or NULL */
    suspect_store_t *store;     /* owned, or NULL */
} mw_setup_t;

/*
 * Loads suspect.xml at conf_path, compiles its guard and loads its limits
 * file into s (all NULL before).  Fails with the first error (file:line);
 * what was loaded stays in s for mw_setup_release().
 */
suspect_rc_t mw_setup_load(mw_setup_t *s, const char *conf_path,
                           suspect_err_t *err);

/* Frees the store and drops the references; s is all NULL after. */
void mw_setup_release(mw_setup_t *s);

#endif
