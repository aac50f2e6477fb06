/*
 * deny.h - the response to a denied request, as CGI/FastCGI output.
 *
 * mw_deny_build() writes a whole CGI response (header lines, a blank line,
 * the body) into a caller buffer: a Status line, Retry-After, RateLimit-Policy
 * and RateLimit (draft-ietf-httpapi-ratelimit-headers-10), Cache-Control:
 * no-store, Content-Type, Content-Length, then a body chosen by the Accept
 * header (accept.h): RFC 9457 problem JSON, a small HTML page, or the
 * operator's template in place of that page.  mw_unavailable_build()
 * writes the 503 answered when the store fails in fail-closed mode.
 *
 * There is deliberately no parameter for the identity: the response cannot
 * echo a member code, a session id or an address back to the client.
 *
 * Both functions are pure (no clock, no I/O, no allocation).  Like
 * snprintf() they compute the whole length even when buf is too small and
 * NUL-terminate what fits: *len is the response's length without the NUL,
 * and SUSPECT_E_FULL means size was not more than *len.  Lines end in CRLF.
 */
#ifndef MW_DENY_H
#define MW_DENY_H

#include <stddef.h>
#include <stdint.h>

#include "accept.h"
#include "suspect_error.h"
#include "suspect_policy.h"

/* The status of a denial when the action sets none. */
#define MW_DENY_STATUS 429

/* Enough for the built-in bodies of any action; a template adds its size. */
#define MW_DENY_BUF 4096

/* What a denial response is made of.  All pointers are borrowed. */
typedef struct mw_deny {
    const suspect_rule_t *rule;         /* the action (NULL: 503 only) */
    const suspect_decision_t *decision; /* the denial (NULL: 503 only) */
    int64_t now_ms;                     /* the time of the decision */
    int status;                         /* 400..599; 0 = MW_DENY_STATUS */
    const char *accept;                 /* HTTP_ACCEPT, NULL when missing */
    size_t accept_len;
    const char *tmpl; /* operator's body template, NULL = built-in */
    size_t tmpl_len;
    const char *tmpl_type; /* its Content-Type, NULL = text/html UTF-8 */
} mw_deny_t;

/* The reason phrase of status ("Too Many Requests"), or a generic one. */
const char *mw_status_reason(int status);

/*
 * Writes the denial response for d into buf.  Retry-After is
 * decision->retry_after_ms in seconds rounded up, at least 1; RateLimit's t
 * is the time to restriction_end_ms, the same way.  For a token bucket,
 * RateLimit-Policy's q and w are its refill (LimitCount tokens per
 * LimitDuration) and a burst parameter its capacity; RateLimit's r is the
 * tokens left.  Template placeholders:
 * {action} {retry_after} (s) {retry_after_ms} {restriction_end} (epoch ms)
 * {limit} {window} {status}, each replaced by its value HTML-escaped;
 * anything else between braces stays as it is.  Returns SUSPECT_OK,
 * SUSPECT_E_FULL (buf too small, *len = size needed) or SUSPECT_E_INVAL
 * (no rule or decision, a status outside 400..599).
 */
suspect_rc_t mw_deny_build(const mw_deny_t *d, char *buf, size_t size,
                           size_t *len);

/*
 * Writes the fail-closed response into buf: status 503 Service
 * Unavailable, Retry-After: 1, no RateLimit headers, and the same body
 * negotiation with the title "Service Unavailable" (d->status, d->decision
 * are ignored; d->rule may be NULL, when it is set, its action is named).
 * Returns as mw_deny_build().
 */
suspect_rc_t mw_unavailable_build(const mw_deny_t *d, char *buf, size_t size,
                                  size_t *len);

#endif
