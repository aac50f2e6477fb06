/*
 * accept.h - which body a client's Accept header asks for: HTML, RFC 9457
 * problem JSON or plain JSON (accept.c).
 */
#ifndef MW_ACCEPT_H
#define MW_ACCEPT_H

#include <stddef.h>

/* The body kinds Accept can choose. */
typedef enum mw_body_kind {
    MW_BODY_HTML = 0,    /* text/html (or the operator's template) */
    MW_BODY_PROBLEM = 1, /* application/problem+json */
    MW_BODY_JSON = 2     /* the same JSON as application/json */
} mw_body_kind_t;

/*
 * The body for an Accept value (NULL or empty: HTML).  Media ranges are
 * weighed by q (0 to 1, three decimals); each kind takes the q of the most
 * specific range that matches it (type/subtype over type/ over * / *).  The
 * JSON kinds are application/problem+json and application/json; the higher
 * q wins, and on a tie the kind whose range comes first in the header;
 * ranges malformed or with a bad q are skipped; nothing acceptable: HTML.
 */
mw_body_kind_t mw_accept_choose(const char *accept, size_t len);

#endif
