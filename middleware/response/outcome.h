/*
 * outcome.h - reads an application's response as it is relayed, to tell
 * whether the attempt it answers failed (a route's <Failure> or
 * <Success> patterns, docs/suspect-xml.md).
 *
 * A watcher sees every byte of CGI output the forwarder writes, in order
 * (mw_req_t.watch), and keeps what the patterns need: the status (the
 * "Status:" header; without one 302 when there is a Location, else 200),
 * the Location header (read as a URI reference: location.h), and the
 * first bytes of the body, up to the largest
 * `within` of the route's patterns.  It never changes the output.
 *
 * A body text is searched only in a body that can be read as the text the
 * application wrote: not the missing body of a HEAD request or of a 204
 * or 304, not a body under a Content-Encoding other than identity (gzip
 * from PHP's ob_gzhandler).  A pattern with a text meets such a response
 * undecided, so the attempt counts (docs/suspect-xml.md).
 */
#ifndef MW_OUTCOME_H
#define MW_OUTCOME_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/suspect_conf.h"

/* The header block kept at most; a longer one is never decided. */
#define MW_OUTCOME_HEAD_MAX 8192

typedef enum mw_outcome {
    MW_OUTCOME_UNKNOWN = 0, /* the response did not say: it counts */
    MW_OUTCOME_FAILED,      /* it counts */
    MW_OUTCOME_SUCCEEDED    /* it does not */
} mw_outcome_t;

typedef struct mw_watch {
    const suspect_conf_route_t *route; /* borrowed */
    const char *blind; /* why the body cannot be searched, NULL: it can */
    size_t head_len;
    bool head_done;     /* the blank line after the headers was seen */
    bool head_overflow; /* headers longer than MW_OUTCOME_HEAD_MAX */
    int state;          /* of the header scan: 0 line start, 1 CR, 2 in */
    int status;
    const char *location; /* into head, NULL = none */
    size_t location_len;
    const char *host; /* the request's Host (borrowed), NULL = none */
    const char *base; /* the request's REQUEST_URI (borrowed), or NULL */
    size_t want;      /* body bytes the patterns search */
    size_t body_len;  /* kept of them */
    char *body;       /* want bytes (heap), NULL when want is 0 */
    char head[MW_OUTCOME_HEAD_MAX];
} mw_watch_t;

/* Whether one of route's patterns searches the body for a text. */
bool mw_outcome_reads_body(const suspect_conf_route_t *route);

/* Starts watching a response to route (its patterns, borrowed), asked
 * for with method (REQUEST_METHOD; NULL when unknown), with host (the
 * request's HTTP_HOST) and base (its REQUEST_URI) to read a Location by
 * (location.h; both borrowed until the outcome is asked, NULL when
 * unknown).  false when out of memory for the body buffer. */
bool mw_watch_init(mw_watch_t *w, const suspect_conf_route_t *route,
                   const char *method, const char *host, const char *base);

/* Feeds n bytes of output (the signature of mw_req_t.watch). */
void mw_watch_feed(void *w, const void *buf, size_t n);

/* What the response said, given that it ended (complete: the application
 * answered it all, not cut short).  A pattern whose criteria cannot all
 * be judged (headers never ended, a body text not found in what came of a
 * cut response, a body that cannot be searched) judges nothing: then
 * UNKNOWN, and *why (when why is not NULL) says why in a static string;
 * otherwise *why is NULL. */
mw_outcome_t mw_watch_outcome(const mw_watch_t *w, bool complete,
                              const char **why);

/* Frees the body buffer. */
void mw_watch_free(mw_watch_t *w);

/* The keyword of an outcome ("failed", "succeeded", "unknown"). */
const char *mw_outcome_name(mw_outcome_t o);

#endif
