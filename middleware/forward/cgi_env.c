/*
 * cgi_env.c - which request variables a CGI program gets in its
 * environment.
 *
 * The FastCGI parameters of a request are written by whoever reaches the
 * daemon's socket, and a CGI program's environment is read by more than
 * the program: the dynamic loader (LD_PRELOAD, LD_LIBRARY_PATH), the
 * interpreter (PERL5OPT, PERL5DB, PYTHONSTARTUP, RUBYOPT, BASH_ENV, ...)
 * and every library it loads.  Passing every parameter on, as fcgiwrap
 * does, lets anyone who can reach the socket run code as the daemon's
 * user.  So a variable reaches the program only when it is
 *  - a CGI/1.1 meta-variable (RFC 3875, section 4.1), or one of the few
 *    that web servers add and CGI programs read (REQUEST_URI,
 *    DOCUMENT_ROOT, HTTPS, REMOTE_PORT, ...: the list below);
 *  - a request header: HTTP_ followed by upper-case letters, digits and
 *    '_' (what a web server makes of a header name), HTTP_PROXY excepted
 *    (httpoxy: it would become the program's proxy);
 *  - named by the operator (<Cgi passEnv="SSL_CLIENT_S_DN GEOIP_*">): a
 *    name, or a prefix ending in '*'.
 * Anything else is dropped.  PATH and GATEWAY_INTERFACE are the daemon's
 * own (cgi_spawn.c), SCRIPT_FILENAME the resolved program.
 *
 * Cost: one scan of a sorted table of short names and of the operator's
 * list per variable, on the way to a fork; nothing is allocated.
 */
#include "cgi_internal.h"

#include <string.h>

/* RFC 3875 4.1, then the web servers' common additions; sorted. */
static const char *const cgi_names[] = {
    "AUTH_TYPE",
    "CONTENT_LENGTH",
    "CONTENT_TYPE",
    "CONTEXT_DOCUMENT_ROOT",
    "CONTEXT_PREFIX",
    "DOCUMENT_ROOT",
    "DOCUMENT_URI",
    "GATEWAY_INTERFACE",
    "HTTPS",
    "PATH_INFO",
    "PATH_TRANSLATED",
    "QUERY_STRING",
    "REDIRECT_STATUS",
    "REDIRECT_URL",
    "REMOTE_ADDR",
    "REMOTE_HOST",
    "REMOTE_IDENT",
    "REMOTE_PORT",
    "REMOTE_USER",
    "REQUEST_METHOD",
    "REQUEST_SCHEME",
    "REQUEST_URI",
    "SCRIPT_NAME",
    "SCRIPT_URI",
    "SCRIPT_URL",
    "SERVER_ADDR",
    "SERVER_ADMIN",
    "SERVER_NAME",
    "SERVER_PORT",
    "SERVER_PROTOCOL",
    "SERVER_SIGNATURE",
    "SERVER_SOFTWARE",
};

/* Whether name[0..len) is s. */
static bool is(const char *name, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(name, s, len) == 0;
}

/* Whether name[0..len) is in the table. */
static bool cgi_name(const char *name, size_t len)
{
    size_t lo = 0, hi = sizeof(cgi_names) / sizeof(cgi_names[0]);

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t n = strlen(cgi_names[mid]);
        int c = memcmp(name, cgi_names[mid], len < n ? len : n);

        if (c == 0 && len == n) {
            return true;
        }
        if (c < 0 || (c == 0 && len < n)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return false;
}

/* Whether name[0..len) is a header's variable (HTTP_PROXY excepted). */
static bool header_name(const char *name, size_t len)
{
    if (len <= 5 || memcmp(name, "HTTP_", 5) != 0 ||
        is(name, len, "HTTP_PROXY")) {
        return false;
    }
    for (size_t i = 5; i < len; i++) {
        char c = name[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
            return false;
        }
    }
    return true;
}

/* Whether the operator's list (blank-separated names, a trailing '*' a
 * prefix) names name[0..len). */
static bool operator_name(const char *name, size_t len, const char *pass)
{
    while (pass != NULL && *pass != '\0') {
        size_t n;

        pass += strspn(pass, " \t\r\n");
        n = strcspn(pass, " \t\r\n");
        if (n > 0 && pass[n - 1] == '*'
                ? len >= n - 1 && memcmp(name, pass, n - 1) == 0
                : n > 0 && n == len && memcmp(name, pass, n) == 0) {
            return true;
        }
        pass += n;
    }
    return false;
}

bool cgi_env_allowed(const char *name, size_t len, const char *pass)
{
    if (len == 0 || memchr(name, '=', len) != NULL ||
        memchr(name, '\0', len) != NULL) {
        return false;
    }
    return cgi_name(name, len) || header_name(name, len) ||
           operator_name(name, len, pass);
}
