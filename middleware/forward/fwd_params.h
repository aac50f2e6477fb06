/*
 * fwd_params.h - which request variables go on to the application, for
 * both forwarders: a CGI program's environment (cgi_spawn.c) and the
 * PARAMS of an upstream FastCGI request (upstream_prelude.c).  The policy
 * and its reasons are in fwd_params.c.
 */
#ifndef MW_FWD_PARAMS_H
#define MW_FWD_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether the request variable name[0..len) goes on to the application:
 * a CGI/1.1 variable or one of the few web servers add, a request
 * header's (HTTP_PROXY never), or one the operator's list pass names
 * (<Cgi passEnv>, <Upstream passParams>: blank-separated names, a trailing
 * '*' a prefix; NULL = none).  PHP_VALUE and PHP_ADMIN_VALUE pass only
 * when pass names them in full.  A name that is empty or holds '=' or NUL
 * never passes.
 */
bool fwd_param_allowed(const char *name, size_t len, const char *pass);

/* Whether name[0..len) is HTTP_ACCEPT_ENCODING, which neither forwarder
 * passes on for a request whose response body a rule reads
 * (mw_req_t.plain_body): the application then answers uncompressed. */
bool fwd_param_encoding(const char *name, size_t len);

#endif
