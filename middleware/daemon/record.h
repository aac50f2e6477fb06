/*
 * record.h - the outcome of each decision, counted and logged (record.c).
 */
#ifndef MW_RECORD_H
#define MW_RECORD_H

#include <stdint.h>

#include "guard/guard.h"
#include "log/decision_log.h"
#include "metrics/metrics.h"
#include "request/request.h"

/* One decided request, all borrowed for the call. */
typedef struct mw_record {
    const suspect_conf_t *conf;  /* the guard's */
    const mw_guard_t *guard;     /* for the client's address */
    const mw_req_t *req;         /* method, path, REMOTE_ADDR */
    const mw_resolution_t *res;  /* the keys and their types */
    const mw_verdict_t *verdict; /* the final verdict */
    const char *store_name;      /* "memory", "lmdb", "redis" */
    int64_t latency_ns;          /* of the decision */
} mw_record_t;

/* Counts r's outcome in m and, as r->conf->decisions asks, writes its line
 * to dlog (NULL: none) with identities hashed under hkey (unless the
 * configuration has its own key).  Nothing for a request without route. */
void mw_record(mw_metrics_t *m, mw_dlog_t *dlog,
               const suspect_siphash_key_t *hkey, const mw_record_t *r);

#endif
