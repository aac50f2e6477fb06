/*
 * inproc_internal.h - what the files of the in-process guard share: the
 * handle (inproc.c: the files, the store, the reloads, the log) and one
 * request (inproc_req.c: the variables and body as an mw_req_t, the
 * decision, the response bytes, the settlement).
 */
#ifndef MW_INPROC_INTERNAL_H
#define MW_INPROC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "guard/guard.h"
#include "inproc/suspect_guard.h"
#include "response/outcome.h"
#include "setup/live.h"
#include "suspect_store.h"

struct suspect_guard {
    mw_live_t *live;        /* suspect.xml and the limits file */
    suspect_store_t *store; /* owned */
    bool auto_reload;       /* SUSPECT_GUARD_RELOAD_AUTO */
    /* suspect_guard_reload()'s: the first file refused goes to *report
     * (NULL between reloads), one reload at a time */
    pthread_mutex_t report_lock;
    suspect_err_t *report;
};

struct suspect_guard_req {
    mw_req_t req; /* first: a suspect_guard_req_t * is an mw_req_t * */
    suspect_guard_t *owner;
    mw_guard_t *guard;        /* a reference, for the request's life */
    suspect_limits_t *limits; /* a reference, likewise */
    mw_param_t *params;       /* envp's variables (req.params) */
    suspect_guard_read_fn read;
    void *read_arg;
    /* the decision */
    mw_verdict_t v;
    suspect_guard_verdict_t verdict;
    int status;
    const char *why;
    char why_buf[SUSPECT_ERR_TEXT_MAX + SUSPECT_ERR_FILE_MAX + 16];
    int error_status; /* not decided: the error page's (400, 503), else 0 */
    /* the response, once built: the bytes written to req (out) and the
     * parts found in them */
    bool built;
    char *out;
    size_t out_len;
    size_t out_cap;
    suspect_guard_response_t response;
    char reason[64];
    /* the shadow header line, "" when none */
    char shadow[SUSPECT_ACTION_MAX + 128];
    /* a held attempt (a route that counts by the response) */
    mw_watch_t *watch; /* NULL unless held and not settled */
    bool held;
    /* Last, and not cleared when the request is made (8 KiB of keys):
     * mw_guard_resolve() fills it; its keys settle a held reservation. */
    mw_resolution_t res;
};

/* Builds r's response (once): SUSPECT_OK, SUSPECT_E_INVAL for a verdict
 * that has none, SUSPECT_E_NOMEM. */
suspect_rc_t inproc_response_build(suspect_guard_req_t *r);

#endif
