/*
 * fwd_params.c - which request variables go on to the application: into
 * a CGI program's environment, or as the PARAMS of an upstream FastCGI
 * request (php-cgi, php-fpm).
 *
 * The FastCGI parameters of a request are written by whoever reaches the
 * daemon's socket, and more than the application reads them:
 *  - a CGI program's environment is read by the dynamic loader
 *    (LD_PRELOAD, LD_LIBRARY_PATH), the interpreter (PERL5OPT, PERL5DB,
 *    PYTHONSTARTUP, RUBYOPT, BASH_ENV, ...) and every library it loads;
 *  - php-fpm reads PHP_VALUE and PHP_ADMIN_VALUE as php.ini lines
 *    (auto_prepend_file, allow_url_include, extension=...), and a setting
 *    made so stays with the worker for the requests it serves next;
 *  - applications trust their $_SERVER / environment for more than the
 *    request (APP_ENV, APP_DEBUG, PHP_AUTH_USER, ...).
 * Passing every parameter on, as fcgiwrap does and as a FastCGI proxy
 * usually does, lets anyone who can reach the socket run code as the
 * application's user.  So a variable goes on only when it is
 *  - a CGI/1.1 meta-variable (RFC 3875, section 4.1), or one of the few
 *    that web servers add and applications read (REQUEST_URI,
 *    DOCUMENT_ROOT, HTTPS, REMOTE_PORT, SCRIPT_FILENAME, ...: the list
 *    below; php-cgi and php-fpm read nothing else of the request but
 *    headers and PHP_VALUE / PHP_ADMIN_VALUE);
 *  - a request header: HTTP_ followed by upper-case letters, digits and
 *    '_' (what a web server makes of a header name);
 *  - named by the operator (<Cgi passEnv="SSL_CLIENT_S_DN GEOIP_*">,
 *    <Upstream passParams="...">): a name, or a prefix ending in '*'.
 *    PHP_VALUE and PHP_ADMIN_VALUE are php.ini itself: they pass only
 *    when named in full, never through a prefix such as PHP_*.
 * HTTP_PROXY never goes on, even when named (httpoxy: it would become the
 * application's outgoing proxy).  HTTP_ACCEPT_ENCODING stays behind for a
 * route whose rule searches the response body for a text: a compressed
 * body would hide the text (mw_req_t.plain_body; the forwarders ask).  Anything
 * else is dropped.  What the forwarders set themselves (a CGI program's PATH,
 * GATEWAY_INTERFACE and resolved SCRIPT_FILENAME; the upstream's <Upstream
 * scriptFilename>, REDIRECT_STATUS and CONTENT_LENGTH) is theirs to add.
 *
 * Cost: a header's name is checked first (most variables are headers),
 * then a binary search of a sorted table of short names, then one scan of
 * the operator's list; nothing is allocated.  About 15 ns per variable,
 * 0.5 us for a request nginx sends php (bench/bench_forward.c).
 */
#include "fwd_params.h"

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
    "REDIRECT_URI",
    "REDIRECT_URL",
    "REMOTE_ADDR",
    "REMOTE_HOST",
    "REMOTE_IDENT",
    "REMOTE_PORT",
    "REMOTE_USER",
    "REQUEST_METHOD",
    "REQUEST_SCHEME",
    "REQUEST_URI",
    "SCRIPT_FILENAME",
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

/* Whether name[0..len) is a header's variable. */
static bool header_name(const char *name, size_t len)
{
    if (len <= 5 || memcmp(name, "HTTP_", 5) != 0) {
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

/* Whether name[0..len) passes only when the operator names it in full. */
static bool full_name_only(const char *name, size_t len)
{
    return is(name, len, "PHP_VALUE") || is(name, len, "PHP_ADMIN_VALUE");
}

/* Whether the operator's list (blank-separated names, a trailing '*' a
 * prefix) names name[0..len). */
static bool operator_name(const char *name, size_t len, const char *pass)
{
    bool prefix_ok = !full_name_only(name, len);

    while (pass != NULL && *pass != '\0') {
        size_t n;

        pass += strspn(pass, " \t\r\n");
        n = strcspn(pass, " \t\r\n");
        if (n > 0 && pass[n - 1] == '*'
                ? prefix_ok && len >= n - 1 && memcmp(name, pass, n - 1) == 0
                : n > 0 && n == len && memcmp(name, pass, n) == 0) {
            return true;
        }
        pass += n;
    }
    return false;
}

bool fwd_param_allowed(const char *name, size_t len, const char *pass)
{
    if (len == 0 || memchr(name, '=', len) != NULL ||
        memchr(name, '\0', len) != NULL || is(name, len, "HTTP_PROXY")) {
        return false;
    }
    return header_name(name, len) || cgi_name(name, len) ||
           operator_name(name, len, pass);
}

bool fwd_param_encoding(const char *name, size_t len)
{
    return is(name, len, "HTTP_ACCEPT_ENCODING");
}
