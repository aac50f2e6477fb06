/*
 * xmlrpc.h - the calls of an XML-RPC request body (a <methodCall>, and
 * the calls a system.multicall carries), read strictly, without I/O.
 *
 * An application checks an account's password from an XML-RPC body
 * (WordPress's xmlrpc.php), and system.multicall carries many such calls
 * in one request.  The reader gives each call's method name and its
 * leading parameters as the application reads them, so the guard counts
 * one attempt per call, for its own account.  What an application could
 * read otherwise is refused, never guessed: see xmlrpc.c.
 *
 * Built on libxml2 (config/xmlsafe.c: no DTD, no entities, no network),
 * so only the programs that link an XML parser take it: the guard's
 * references are weak (guard_internal.h), the loaders (setup/) link it,
 * and suspect-cgi, which links no XML parser, finds mw_xmlrpc_read NULL
 * and refuses routes that read XML-RPC.
 */
#ifndef MW_REQUEST_XMLRPC_H
#define MW_REQUEST_XMLRPC_H

#include <stddef.h>

#include "suspect_error.h"

/* Parameters of a call kept (positions 1 .. MW_XR_MAX_PARAMS). */
#define MW_XR_MAX_PARAMS 8
/* Calls one body may carry when the caller gives no cap. */
#define MW_XR_MAX_CALLS_DEFAULT 100

typedef struct mw_xmlrpc mw_xmlrpc_t;

/*
 * Reads body[0..len) into *out (owned: mw_xmlrpc_free()).  A body that
 * is a plain <methodCall> is one call; a system.multicall is the calls
 * it carries (at most max_calls).  SUSPECT_OK; SUSPECT_E_PARSE (*why,
 * static text: not XML, not a methodCall, a shape parsers read apart, a
 * system.multicall inside one); SUSPECT_E_RANGE (more calls than
 * max_calls); SUSPECT_E_NOMEM.  *out is NULL but on SUSPECT_OK.
 */
suspect_rc_t mw_xmlrpc_read(const char *body, size_t len, size_t max_calls,
                            mw_xmlrpc_t **out, const char **why);

/* Frees x; NULL is a no-op. */
void mw_xmlrpc_free(mw_xmlrpc_t *x);

/* The number of calls of x (0 .. max_calls). */
size_t mw_xmlrpc_ncalls(const mw_xmlrpc_t *x);

/* The method name of call i (surrounding blanks trimmed, as WordPress's
 * IXR reads it), and its length in *len. */
const char *mw_xmlrpc_method(const mw_xmlrpc_t *x, size_t i, size_t *len);

/*
 * The parameter at pos (1-based) of call i as text: a string (<string>
 * or an untyped <value>) as it came, an <int>/<i4> as PHP's (int) cast
 * prints it.  SUSPECT_OK with *v, *len (valid while x lives);
 * SUSPECT_E_NOTFOUND (no such parameter, or <nil/>); SUSPECT_E_INVAL (a
 * type an application reads another way: base64, struct, array, double,
 * boolean, dateTime).
 */
suspect_rc_t mw_xmlrpc_param(const mw_xmlrpc_t *x, size_t i, unsigned pos,
                             const char **v, size_t *len);

#endif
