/*
 * open_store.h - the store suspect.xml's <Store> describes.
 *
 * memory: the in-process store.  lmdb and redis: that store wrapped in the
 * failover store (policy/suspect_failover.h) with an in-process memory store
 * as the local fallback and <Store failMode> as the fail mode, so a broken
 * disk or a dead Redis never hangs or crashes a request.  Breaker
 * transitions are logged.
 */
#ifndef MW_SETUP_OPEN_STORE_H
#define MW_SETUP_OPEN_STORE_H

#include "conf/suspect_conf.h"
#include "suspect_error.h"
#include "suspect_store.h"

/* Creates the store of c; *out is owned by the caller.  A Redis server
 * that does not answer at start is a warning, not an error (fail mode). */
suspect_rc_t mw_store_new(const suspect_conf_t *c, suspect_store_t **out,
                          suspect_err_t *err);

/* The element of a setting the store made from old was built on that c
 * changes ("Store", "Keys"), or NULL: a reload that changes one is
 * refused, since the store lives on. */
const char *mw_store_change(const suspect_conf_t *old, const suspect_conf_t *c);

#endif
