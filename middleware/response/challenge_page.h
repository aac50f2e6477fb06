/*
 * challenge_page.h - the page a browser gets when a shared address is
 * over its limit (challenge_page.c): a proof of work in the browser, then
 * a pass (middleware/guard/challenge.c makes and checks the tokens).
 */
#ifndef MW_CHALLENGE_PAGE_H
#define MW_CHALLENGE_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

/* What one page says. */
typedef struct mw_challenge_page {
    int status;          /* the refusal's (429, or the route's) */
    int64_t retry_s;     /* Retry-After, and the text without JavaScript */
    const char *token;   /* base64url */
    const char *action;  /* a valid action name */
    unsigned difficulty; /* leading zero bits, 1 to 30 */
    const char *path;    /* <Challenge path>, normalised */
    bool get;            /* the refused request was a GET: reload it */
    const char *csp;     /* mw_challenge_csp()'s line */
} mw_challenge_page_t;

/*
 * The Content-Security-Policy header line (CRLF-ended) the page needs,
 * with the hashes of its script and style, into buf (size bytes); its
 * length, or 0 when buf is too small (320 bytes are enough).  libsodium
 * must be initialised.
 */
size_t mw_challenge_csp(char *buf, size_t size);

/*
 * The whole response (CGI header lines, blank line, body) for p into
 * *out (malloc'ed, the caller's to free) and *len.  SUSPECT_E_NOMEM, or
 * SUSPECT_E_INVAL when a value would need escaping (never for values of
 * the kinds above).
 */
suspect_rc_t mw_challenge_page_build(const mw_challenge_page_t *p, char **out,
                                     size_t *len);

#endif
