/*
 * test_dropins.c - the "dropins" suite: each web server drop-in of
 * examples/ installed into Debian's own configuration, as its header
 * says, then checked by the server and used.
 *
 * For each drop-in: the package's configuration tree is copied into the
 * test's directory (helpers/debian.h: only the port, pid, logs, temp
 * dirs, document root and user are moved there), the drop-in is
 * installed the way its header tells an operator (nginx: a snippet in
 * snippets/ included from the default site's server block, and the
 * upstream that keeps its connections in conf.d/; lighttpd:
 * conf-available/ and lighty-enable-mod; Apache: a2enmod, a2enconf), the
 * server's own check must pass (nginx -t, lighttpd -tt, apache2 -t), and
 * then the server runs on that configuration in front of suspect-fcgi:
 * the application answers, and the third bank update of a member is the
 * 429 that only suspect-fcgi gives.  The configuration a drop-in must
 * coexist with is Debian's, not one written for the test: a drop-in that
 * sets what lighttpd.conf sets, or a server block that collides with the
 * default site, fails here.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/debian.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "suites.h"

/* The application through the web server: its index at index, and the
 * bank scenario at index?op=bank. */
static void serve(const char *index)
{
    char url[E2E_URL], bank[128];
    test_http_t r;

    e2e_http(&r, (const char *[]){e2e_url(url, index), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    snprintf(bank, sizeof(bank), "%s?op=bank", index);
    e2e_bank_scenario(bank, NULL);
}

/* examples/nginx/snippet behind suspect-fcgi on example_conf, in the
 * default site of Debian's nginx. */
static void nginx_dropin(const char *example_conf, const char *snippet,
                         const char *index)
{
    const char *name = strrchr(snippet, '/') + 1;
    bool php = strstr(index, ".php") != NULL;
    char file[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_start_backend(example_conf, NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_example(snippet, name, NULL) == 0);
    CU_ASSERT_FATAL(
        deb_nginx_layout(e2e.dir, e2e.port, e2e.app,
                         php ? "index.php index.html" : "index.html") == 0);
    CU_ASSERT_FATAL(deb_nginx_snippet(e2e.dir, name, e2e_path(file, name)) ==
                    0);
    CU_ASSERT_FATAL(e2e_write_example("nginx/suspect-upstream.conf",
                                      "suspect-upstream.conf", NULL) == 0);
    CU_ASSERT_FATAL(deb_nginx_conf_d(e2e.dir, "suspect-upstream.conf",
                                     e2e_path(file, "suspect-upstream.conf")) ==
                    0);
    CU_ASSERT_EQUAL_FATAL(deb_nginx_check(e2e.dir), 0);
    CU_ASSERT_FATAL(deb_nginx_start(&e2e.web, e2e.dir, e2e.port) == 0);
    serve(index);
}

static void test_nginx_cgi(void)
{
    nginx_dropin("suspect.xml", "nginx/suspect-cgi.conf", "/app.cgi");
}

static void test_nginx_php(void)
{
    nginx_dropin("suspect-php.xml", "nginx/suspect-php.conf", "/index.php");
}

static void test_nginx_auth_request(void)
{
    nginx_dropin("suspect-auth-request.xml", "nginx/auth-request.conf",
                 "/index.php");
}

/* examples/lighttpd/authorizer.conf enabled with lighty-enable-mod in
 * Debian's lighttpd, the example app in the document root. */
static void test_lighttpd_authorizer(void)
{
    char file[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_start_backend("suspect-authorizer.xml", NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_example("lighttpd/authorizer.conf",
                                      "authorizer.conf", NULL) == 0);
    CU_ASSERT_FATAL(deb_lighttpd_layout(e2e.dir, e2e.port, e2e.app) == 0);
    CU_ASSERT_FATAL(deb_lighttpd_enable(e2e.dir, "50-suspect.conf",
                                        e2e_path(file, "authorizer.conf")) ==
                    0);
    CU_ASSERT_EQUAL_FATAL(deb_lighttpd_check(e2e.dir), 0);
    CU_ASSERT_FATAL(deb_lighttpd_start(&e2e.web, e2e.dir, e2e.port) == 0);
    serve("/app.cgi");
}

/* examples/apache/authnz-fcgi.conf with a2enmod and a2enconf in Debian's
 * Apache, suspect-fcgi on a TCP port as mod_authnz_fcgi needs. */
static void test_apache_authnz(void)
{
    static const char *const mods[] = {"authnz_fcgi", "authz_user", "cgi",
                                       NULL};
    char listen[64], fcgi_addr[64], file[TEST_PATH_MAX];
    const char *extra[] = {"--listen", listen, NULL};
    const char *pairs[] = {"127.0.0.1:9010", fcgi_addr, NULL};
    int fcgi_port = test_free_port();
    char app[TEST_PATH_MAX], src[TEST_PATH_MAX];

    /* The CGI program runs as www-data: it must reach DIR/app. */
    CU_ASSERT_FATAL(fcgi_port > 0 && chmod(e2e.dir, 0755) == 0);
    snprintf(listen, sizeof(listen), "tcp:127.0.0.1:%d", fcgi_port);
    snprintf(fcgi_addr, sizeof(fcgi_addr), "127.0.0.1:%d", fcgi_port);
    e2e.port = test_free_port();
    CU_ASSERT_FATAL(e2e.port > 0);
    CU_ASSERT_FATAL(test_copy_file(e2e_src(src, "examples/limits.xml"),
                                   e2e.limits, 0644) == 0);
    CU_ASSERT_FATAL(
        e2e_write_example("suspect-authorizer.xml", "suspect.xml", NULL) == 0);
    snprintf(app, sizeof(app), "%s/app.cgi", e2e.app);
    CU_ASSERT_FATAL(
        test_copy_file(e2e_src(src, "examples/app/app.cgi"), app, 0755) == 0);
    CU_ASSERT_FATAL(test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, NULL,
                                       fcgi_port, extra) == 0);
    CU_ASSERT_FATAL(e2e_write_example("apache/authnz-fcgi.conf",
                                      "authnz-fcgi.conf", pairs) == 0);
    CU_ASSERT_FATAL(deb_apache_layout(e2e.dir, e2e.port, e2e.app) == 0);
    CU_ASSERT_FATAL(deb_apache_enable(e2e.dir, mods, "suspect",
                                      e2e_path(file, "authnz-fcgi.conf")) == 0);
    CU_ASSERT_EQUAL_FATAL(deb_apache_check(e2e.dir), 0);
    CU_ASSERT_FATAL(deb_apache_start(&e2e.web, e2e.dir, e2e.port) == 0);
    serve("/app.cgi");
}

/* ---- systemd ------------------------------------------------------------ */

/* examples/suspect.xml as shipped (listen="unix:/run/suspect/fcgi.sock",
 * moved into DIR) under socket activation: systemd-socket-activate
 * listens on that path, as suspect-fcgi.socket does, and starts the
 * daemon with $LISTEN_FDS on the first connection.  It must serve on the
 * passed socket, not find "another server" there. */
static void test_systemd_socket(void)
{
    char bin[TEST_PATH_MAX];
    const char *argv[] = {"systemd-socket-activate",
                          "-l",
                          e2e.sock,
                          test_suspect_fcgi_path(bin),
                          "-c",
                          e2e.conf,
                          "-v",
                          NULL};
    char *log;

    CU_ASSERT_FATAL(e2e_prepare_backend("suspect.xml", NULL) == 0);
    CU_ASSERT_FATAL(test_proc_start(&e2e.fcgi, argv, NULL, e2e.log) == 0);
    CU_ASSERT_FATAL(test_wait_listen(0, e2e.sock, &e2e.fcgi, 10000) == 0);
    CU_ASSERT_FATAL(e2e_start_nginx("nginx/suspect-cgi.conf") == 0);
    serve("/app.cgi");
    log = test_read_file(e2e.log, NULL);
    CU_ASSERT(log != NULL && strstr(log, "listening on unix:") != NULL);
    free(log);
}

/* Whether any descriptor of pid is open on the file at path. */
static bool holds_file(pid_t pid, const char *path)
{
    char dir[64], fd[64 + 256], link[TEST_PATH_MAX];
    struct dirent *e;
    bool found = false;
    DIR *d;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    while (!found && (e = readdir(d)) != NULL) {
        ssize_t n;

        snprintf(fd, sizeof(fd), "%s/%s", dir, e->d_name);
        n = readlink(fd, link, sizeof(link) - 1);
        found = n > 0 && (link[n] = '\0', strcmp(link, path) == 0);
    }
    closedir(d);
    return found;
}

/* Started by socket activation through a launcher that leaves a
 * descriptor open (fd 9, a file): the daemon keeps the passed socket (fd
 * 3, which it serves on) and closes fd 9, and says so.  A daemon holding
 * a launcher's pipe keeps its reader waiting as long as it lives. */
static void test_systemd_inherited(void)
{
    char bin[TEST_PATH_MAX], extra[TEST_PATH_MAX], fd3[64];
    const char *argv[] = {"systemd-socket-activate",
                          "-l",
                          e2e.sock,
                          "sh",
                          "-c",
                          "exec 9>>\"$0\" && exec \"$@\"",
                          e2e_path(extra, "inherited"),
                          test_suspect_fcgi_path(bin),
                          "-c",
                          e2e.conf,
                          "-v",
                          NULL};
    char link[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_prepare_backend("suspect.xml", NULL) == 0);
    CU_ASSERT_FATAL(test_proc_start(&e2e.fcgi, argv, NULL, e2e.log) == 0);
    CU_ASSERT_FATAL(test_wait_listen(0, e2e.sock, &e2e.fcgi, 10000) == 0);
    CU_ASSERT_FATAL(test_wait_file_text(e2e.log, "listening on unix:", 10000) ==
                    0);
    CU_ASSERT_FATAL(e2e_start_nginx("nginx/suspect-cgi.conf") == 0);
    serve("/app.cgi");
    /* every program exec'd in place: the daemon has the launcher's pid */
    snprintf(fd3, sizeof(fd3), "/proc/%d/fd/3", (int)e2e.fcgi.pid);
    CU_ASSERT(readlink(fd3, link, sizeof(link)) > 0 &&
              strncmp(link, "socket:", 7) == 0);
    /* the number 9 may be taken again by a connection since: what must
     * be gone is the file */
    CU_ASSERT_FALSE(holds_file(e2e.fcgi.pid, extra));
    CU_ASSERT_EQUAL(test_wait_file_text(e2e.log,
                                        "closed 1 descriptor inherited from "
                                        "the parent (9)",
                                        0),
                    0);
}

/* The shipped units with the programs' paths moved to the build tree, in
 * DIR/units; 0 or -1. */
static int write_units(void)
{
    static const char *const units[] = {"suspect-fcgi.service",
                                        "suspect-fcgi.socket"};
    char bin[TEST_PATH_MAX], rel[64], path[TEST_PATH_MAX];
    const char *edits[] = {"/usr/local/sbin/suspect-fcgi",
                           test_suspect_fcgi_path(bin),
                           "/etc/suspect/suspect.xml", e2e.conf, NULL};

    if (mkdir(e2e_path(path, "units"), 0755) != 0) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        snprintf(path, sizeof(path), "systemd/%s", units[i]);
        snprintf(rel, sizeof(rel), "units/%s", units[i]);
        if (e2e_write_example(path, rel, edits) != 0) {
            return -1;
        }
    }
    return 0;
}

/* systemd-analyze verify finds nothing to say about the units: known
 * keys only, programs that exist (--man=no: the pages are not installed
 * while testing). */
static void test_systemd_verify(void)
{
    char socket_unit[TEST_PATH_MAX], service[TEST_PATH_MAX];
    char out[TEST_PATH_MAX];
    const char *argv[] = {"systemd-analyze",
                          "verify",
                          "--man=no",
                          e2e_path(socket_unit, "units/suspect-fcgi.socket"),
                          e2e_path(service, "units/suspect-fcgi.service"),
                          NULL};
    test_proc_t p;
    char *text;

    CU_ASSERT_FATAL(e2e_prepare_backend("suspect.xml", NULL) == 0);
    CU_ASSERT_FATAL(write_units() == 0);
    CU_ASSERT_FATAL(
        test_proc_start(&p, argv, NULL, e2e_path(out, "verify.log")) == 0);
    CU_ASSERT_FATAL(test_proc_wait(&p, 30000) == 0);
    text = test_read_file(out, NULL);
    if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0 ||
        (text != NULL && text[0] != '\0')) {
        fprintf(stderr, "systemd-analyze verify:\n%s", text ? text : "");
        CU_FAIL("systemd-analyze verify complains about the units");
    }
    free(text);
}

/* Runs the ExecReload= lines of DIR/units/suspect-fcgi.service in order,
 * as systemctl reload does, for the daemon's pid; the exit status of the
 * first that fails (its output in DIR/reload.log), or 0. */
static int systemctl_reload(void)
{
    char path[TEST_PATH_MAX], log[TEST_PATH_MAX], pid[16];
    const char *pairs[] = {"$MAINPID", pid, NULL};
    char *unit =
        test_read_file(e2e_path(path, "units/suspect-fcgi.service"), NULL);
    char *save = NULL;
    int rc = unit != NULL ? 0 : -1, lines = 0;

    snprintf(pid, sizeof(pid), "%d", (int)e2e.fcgi.pid);
    e2e_path(log, "reload.log");
    for (char *l = unit != NULL ? strtok_r(unit, "\n", &save) : NULL;
         l != NULL && rc == 0; l = strtok_r(NULL, "\n", &save)) {
        const char *argv[16];
        char *cmd, *w, *wsave = NULL;
        size_t n = 0;
        test_proc_t p;

        if (strncmp(l, "ExecReload=", 11) != 0) {
            continue;
        }
        lines++;
        cmd = test_subst(l + 11, pairs);
        for (w = strtok_r(cmd, " ", &wsave); w != NULL && n < 15;
             w = strtok_r(NULL, " ", &wsave)) {
            argv[n++] = w;
        }
        argv[n] = NULL;
        rc = test_proc_start(&p, argv, NULL, log) != 0 ||
                     test_proc_wait(&p, 30000) != 0 || !WIFEXITED(p.status)
                 ? -1
                 : WEXITSTATUS(p.status);
        free(cmd);
    }
    free(unit);
    return lines > 0 ? rc : -1;
}

/* systemctl reload checks both files before it signals the daemon: a
 * good configuration reloads, a broken one fails the reload with its
 * file:line, and the daemon keeps serving the one it has. */
static void test_systemd_reload(void)
{
    const char *broken[] = {"workers=\"8\"", "workers=\"eight\"", NULL};
    char log[TEST_PATH_MAX];
    char *text;

    CU_ASSERT_FATAL(e2e_start_backend("suspect.xml", NULL) == 0);
    CU_ASSERT_FATAL(write_units() == 0);
    CU_ASSERT_EQUAL(systemctl_reload(), 0);
    CU_ASSERT_FATAL(e2e_write_example("suspect.xml", "suspect.xml", broken) ==
                    0);
    CU_ASSERT_EQUAL(systemctl_reload(), 1);
    text = test_read_file(e2e_path(log, "reload.log"), NULL);
    CU_ASSERT(text != NULL && strstr(text, "suspect.xml:") != NULL &&
              strstr(text, "workers") != NULL);
    free(text);
    CU_ASSERT(test_proc_running(&e2e.fcgi));
}

int register_dropins_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"nginx: suspect-cgi.conf in the default site", test_nginx_cgi},
        {"nginx: suspect-php.conf in the default site", test_nginx_php},
        {"nginx: auth-request.conf in the default site",
         test_nginx_auth_request},
        {"lighttpd: authorizer.conf by lighty-enable-mod",
         test_lighttpd_authorizer},
        {"apache: authnz-fcgi.conf by a2enmod and a2enconf",
         test_apache_authnz},
        {"systemd: the shipped suspect.xml under socket activation",
         test_systemd_socket},
        {"systemd: a passed socket kept, other inherited descriptors closed",
         test_systemd_inherited},
        {"systemd: systemd-analyze verify on the units", test_systemd_verify},
        {"systemd: reload refuses a bad configuration", test_systemd_reload},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("dropins", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
