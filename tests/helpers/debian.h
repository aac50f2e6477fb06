/*
 * debian.h - Debian's own web server configurations, copied into a temp
 * root, for the tests that install the examples/ drop-ins as their
 * headers say.
 *
 * A layout is the package's configuration tree as installed on this
 * machine (/etc/nginx, /etc/lighttpd, /etc/apache2) copied to ROOT/etc/,
 * with only what ties it to the machine pointed elsewhere: the listening
 * port (127.0.0.1 and a free port), the pid file, logs, temp and run
 * directories (ROOT/...), the document root, the user (the test's own).
 * Every such edit names the exact text of Debian's stock file and fails
 * when it is not there, so a test on a changed file says so rather than
 * test something else.  Drop-ins are then installed with Debian's tools
 * (lighty-enable-mod, a2enmod, a2enconf, pointed at ROOT) or, for nginx,
 * as a snippet included from the default site's server block.
 *
 * Ownership: every function writes under root only; nothing of the
 * machine's own configuration or state is touched.
 */
#ifndef SUSPECT_TESTS_DEBIAN_H
#define SUSPECT_TESTS_DEBIAN_H

#include "procs.h"

/* /etc/nginx under root/etc/nginx, its default site on 127.0.0.1:port
 * serving docroot with index (the "index" directive's list).  0 or -1
 * (with the reason on stderr). */
int deb_nginx_layout(const char *root, int port, const char *docroot,
                     const char *index);

/* Writes the snippet file (a path) as root/etc/nginx/snippets/name and
 * includes it from the default site's server block.  0 or -1. */
int deb_nginx_snippet(const char *root, const char *name, const char *file);

/* Writes file (a path) as root/etc/nginx/conf.d/name, which nginx.conf
 * includes at the http level.  0 or -1. */
int deb_nginx_conf_d(const char *root, const char *name, const char *file);

/* /etc/lighttpd under root/etc/lighttpd: lighttpd.conf on 127.0.0.1:port
 * with docroot as server.document-root.  0 or -1. */
int deb_lighttpd_layout(const char *root, int port, const char *docroot);

/* Copies file to root/etc/lighttpd/conf-available/name and enables it
 * with Debian's lighty-enable-mod (dependencies included).  0 or -1. */
int deb_lighttpd_enable(const char *root, const char *name, const char *file);

/* /etc/apache2 under root/etc/apache2 (envvars pointing into root), the
 * default site on 127.0.0.1:port serving docroot.  0 or -1. */
int deb_apache_layout(const char *root, int port, const char *docroot);

/* a2enmod the NULL-terminated modules, then copies file to
 * conf-available/name.conf and a2enconf's it.  0 or -1. */
int deb_apache_enable(const char *root, const char *const mods[],
                      const char *name, const char *file);

/* The servers' own checks: nginx -t, lighttpd -tt, apache2 -t on the
 * layout under root.  The exit status (0: the configuration loads), or
 * -1 when it could not run; what it printed goes to root/check.log. */
int deb_nginx_check(const char *root);
int deb_lighttpd_check(const char *root);
int deb_apache_check(const char *root);

/* Start the server on the layout under root in the foreground and wait
 * until 127.0.0.1:port answers.  0 or -1. */
int deb_nginx_start(test_proc_t *p, const char *root, int port);
int deb_lighttpd_start(test_proc_t *p, const char *root, int port);
int deb_apache_start(test_proc_t *p, const char *root, int port);

#endif
