/*
 * debian.c - Debian's web server configurations in a temp root
 * (debian.h).
 *
 * Each layout is `cp -a` of the package's /etc tree, then a short list of
 * exact edits of Debian's stock text (edit(): every "from" must be found,
 * else the layout fails and says which), then the few files the layout
 * adds of its own (nginx: conf.d/ for temp paths; apache: envvars).
 * Programs run through test_proc (no shell): cp, Debian's perl tools with
 * their configuration directory moved into the root, and the servers.
 */
#include "debian.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define RUN_MS   30000 /* cp, a perl tool or a -t check (scaled) */
#define START_MS 10000

/* Runs argv (env: "NAME=value" strings or NULL) with its output appended
 * to root/check.log; its exit status, or -1. */
static int run(const char *root, const char *const argv[],
               const char *const env[])
{
    char log[TEST_PATH_MAX];
    test_proc_t p;

    snprintf(log, sizeof(log), "%s/check.log", root);
    if (test_proc_start(&p, argv, env, log) != 0) {
        return -1;
    }
    if (test_proc_wait(&p, RUN_MS) != 0) {
        fprintf(stderr, "debian: %s still runs: killed\n", argv[0]);
        test_proc_stop(&p, SIGKILL, 1000);
        return -1;
    }
    return WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1;
}

/* run(); whether it exited 0 (else says so on stderr). */
static bool run_ok(const char *root, const char *const argv[],
                   const char *const env[])
{
    int rc = run(root, argv, env);

    if (rc != 0) {
        fprintf(stderr, "debian: %s exited %d (see check.log)\n", argv[0], rc);
    }
    return rc == 0;
}

/* root/rel as a path. */
static const char *at(char path[TEST_PATH_MAX], const char *root,
                      const char *rel)
{
    snprintf(path, TEST_PATH_MAX, "%s/%s", root, rel);
    return path;
}

/* mkdir root/rel (and its missing parents below root), mode 0755. */
static int mkdir_in(const char *root, const char *rel)
{
    char path[TEST_PATH_MAX];

    at(path, root, rel);
    for (char *p = path + strlen(root) + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    return mkdir(path, 0755) == 0 || access(path, F_OK) == 0 ? 0 : -1;
}

/* cp -a src root/etc/ (the tree keeps its name). */
static int copy_etc(const char *root, const char *src)
{
    char etc[TEST_PATH_MAX];
    const char *argv[] = {"cp", "-a", src, at(etc, root, "etc/"), NULL};

    if (chmod(root, 0755) != 0 || mkdir_in(root, "etc") != 0) {
        return -1;
    }
    return run_ok(root, argv, NULL) ? 0 : -1;
}

/* Replaces, in the file root/rel, every {from, to} of pairs (NULL-
 * terminated); each from must occur, else -1 and which on stderr. */
static int edit(const char *root, const char *rel, const char *const pairs[])
{
    char path[TEST_PATH_MAX];
    char *text = test_read_file(at(path, root, rel), NULL);
    char *out;
    int rc;

    if (text == NULL) {
        fprintf(stderr, "debian: cannot read %s\n", path);
        return -1;
    }
    for (size_t i = 0; pairs[i] != NULL; i += 2) {
        if (strstr(text, pairs[i]) == NULL) {
            fprintf(stderr, "debian: %s is not Debian's: no \"%s\"\n", path,
                    pairs[i]);
            free(text);
            return -1;
        }
    }
    out = test_subst(text, pairs);
    free(text);
    rc = out != NULL ? test_write_file(path, out, strlen(out)) : -1;
    free(out);
    return rc;
}

/* Writes text to root/rel; 0 or -1. */
static int write_in(const char *root, const char *rel, const char *text)
{
    char path[TEST_PATH_MAX];

    return test_write_file(at(path, root, rel), text, strlen(text));
}

/* Copies file into root/rel; 0 or -1. */
static int copy_in(const char *root, const char *rel, const char *file)
{
    char path[TEST_PATH_MAX];

    return test_copy_file(file, at(path, root, rel), 0644);
}

/* The name of the user the tests run as. */
static const char *user_name(void)
{
    struct passwd *pw = getpwuid(geteuid());

    return pw != NULL ? pw->pw_name : "root";
}

/* ---- nginx -------------------------------------------------------------- */

int deb_nginx_layout(const char *root, int port, const char *docroot,
                     const char *index)
{
    char etc[TEST_PATH_MAX], pid[TEST_PATH_MAX + 32], log[TEST_PATH_MAX];
    char access[TEST_PATH_MAX + 32], user[128], listen[64];
    char site_root[TEST_PATH_MAX + 16], site_index[256];
    char temp[6 * TEST_PATH_MAX], site[TEST_PATH_MAX];
    const char *main_edits[] = {"user www-data;",
                                user,
                                "pid /run/nginx.pid;",
                                pid,
                                "error_log /var/log/nginx/error.log;",
                                log,
                                "access_log /var/log/nginx/access.log;",
                                access,
                                "include /etc/nginx/",
                                etc,
                                NULL};
    const char *site_edits[] = {
        "listen 80 default_server;",
        listen,
        "listen [::]:80 default_server;",
        "",
        "root /var/www/html;",
        site_root,
        "index index.html index.htm index.nginx-debian.html;",
        site_index,
        NULL};

    snprintf(user, sizeof(user), "user %s;", user_name());
    snprintf(pid, sizeof(pid), "pid %s/nginx.pid;", root);
    snprintf(log, sizeof(log), "error_log %s/log/error.log;", root);
    snprintf(access, sizeof(access), "access_log %s/log/access.log;", root);
    snprintf(etc, sizeof(etc), "include %s/etc/nginx/", root);
    snprintf(listen, sizeof(listen), "listen 127.0.0.1:%d default_server;",
             port);
    snprintf(site_root, sizeof(site_root), "root %s;", docroot);
    snprintf(site_index, sizeof(site_index), "index %s;", index);
    snprintf(temp, sizeof(temp),
             "# the layout's temp paths, not /var/lib/nginx\n"
             "client_body_temp_path %s/tmp/body;\n"
             "fastcgi_temp_path %s/tmp/fastcgi;\n"
             "proxy_temp_path %s/tmp/proxy;\n"
             "uwsgi_temp_path %s/tmp/uwsgi;\n"
             "scgi_temp_path %s/tmp/scgi;\n",
             root, root, root, root, root);
    if (copy_etc(root, "/etc/nginx") != 0 || mkdir_in(root, "log") != 0 ||
        mkdir_in(root, "tmp") != 0 ||
        edit(root, "etc/nginx/nginx.conf", main_edits) != 0 ||
        edit(root, "etc/nginx/sites-available/default", site_edits) != 0 ||
        write_in(root, "etc/nginx/conf.d/temp-paths.conf", temp) != 0) {
        return -1;
    }
    /* Debian's link is absolute: point it at the copy. */
    at(site, root, "etc/nginx/sites-available/default");
    at(etc, root, "etc/nginx/sites-enabled/default");
    if (unlink(etc) != 0 || symlink(site, etc) != 0) {
        fprintf(stderr, "debian: cannot link %s\n", etc);
        return -1;
    }
    return 0;
}

int deb_nginx_snippet(const char *root, const char *name, const char *file)
{
    char rel[256], line[512];
    const char *edits[] = {"server_name _;", line, NULL};

    snprintf(rel, sizeof(rel), "etc/nginx/snippets/%s", name);
    snprintf(line, sizeof(line), "server_name _;\n\n\tinclude snippets/%s;",
             name);
    if (copy_in(root, rel, file) != 0) {
        return -1;
    }
    return edit(root, "etc/nginx/sites-available/default", edits);
}

int deb_nginx_conf_d(const char *root, const char *name, const char *file)
{
    char rel[256];

    snprintf(rel, sizeof(rel), "etc/nginx/conf.d/%s", name);
    return copy_in(root, rel, file);
}

int deb_nginx_check(const char *root)
{
    char conf[TEST_PATH_MAX];
    const char *argv[] = {"nginx", "-t",
                          "-e",    "stderr",
                          "-c",    at(conf, root, "etc/nginx/nginx.conf"),
                          NULL};
    return run(root, argv, NULL);
}

int deb_nginx_start(test_proc_t *p, const char *root, int port)
{
    char conf[TEST_PATH_MAX], log[TEST_PATH_MAX];
    const char *argv[] = {"nginx",
                          "-e",
                          "stderr",
                          "-c",
                          at(conf, root, "etc/nginx/nginx.conf"),
                          "-g",
                          "daemon off;",
                          NULL};

    if (test_proc_start(p, argv, NULL, at(log, root, "nginx.log")) != 0) {
        return -1;
    }
    return test_wait_listen(port, NULL, p, START_MS);
}

/* ---- lighttpd ----------------------------------------------------------- */

int deb_lighttpd_layout(const char *root, int port, const char *docroot)
{
    char etc[TEST_PATH_MAX], docroot_line[TEST_PATH_MAX + 64];
    char uploads[TEST_PATH_MAX + 64], errorlog[TEST_PATH_MAX + 64];
    char pid[TEST_PATH_MAX + 64], port_line[128];
    const char *edits[] = {
        "\"/etc/lighttpd/", etc,
        "server.document-root        = \"/var/www/html\"", docroot_line,
        "server.upload-dirs          = ( \"/var/cache/lighttpd/uploads\" )",
        uploads,
        "server.errorlog             = \"/var/log/lighttpd/error.log\"",
        errorlog, "server.pid-file             = \"/run/lighttpd.pid\"", pid,
        "server.username             = \"www-data\"", "",
        "server.groupname            = \"www-data\"", "",
        "server.port                 = 80", port_line,
        /* IPv6 too would listen on every address */
        "include_shell \"/usr/share/lighttpd/use-ipv6.pl \" + server.port", "",
        NULL};

    snprintf(etc, sizeof(etc), "\"%s/etc/lighttpd/", root);
    snprintf(docroot_line, sizeof(docroot_line),
             "server.document-root = \"%s\"", docroot);
    snprintf(uploads, sizeof(uploads), "server.upload-dirs = ( \"%s/tmp\" )",
             root);
    snprintf(errorlog, sizeof(errorlog),
             "server.errorlog = \"%s/log/error.log\"", root);
    snprintf(pid, sizeof(pid), "server.pid-file = \"%s/lighttpd.pid\"", root);
    snprintf(port_line, sizeof(port_line),
             "server.port = %d\nserver.bind = \"127.0.0.1\"", port);
    if (copy_etc(root, "/etc/lighttpd") != 0 || mkdir_in(root, "log") != 0 ||
        mkdir_in(root, "tmp") != 0) {
        return -1;
    }
    return edit(root, "etc/lighttpd/lighttpd.conf", edits);
}

int deb_lighttpd_enable(const char *root, const char *name, const char *file)
{
    char rel[256], module[128], tool[TEST_PATH_MAX], confdir[TEST_PATH_MAX];
    const char *const edits[] = {"my $confdir = \"/etc/lighttpd/\";", confdir,
                                 NULL};
    const char *argv[] = {"perl", tool, module, NULL};
    const char *dash = strchr(name, '-');
    const char *dot = strrchr(name, '.');

    if (dash == NULL || dot == NULL || dot < dash) {
        fprintf(stderr, "debian: %s is not NN-module.conf\n", name);
        return -1;
    }
    snprintf(module, sizeof(module), "%.*s", (int)(dot - dash - 1), dash + 1);
    snprintf(rel, sizeof(rel), "etc/lighttpd/conf-available/%s", name);
    snprintf(confdir, sizeof(confdir), "my $confdir = \"%s/etc/lighttpd/\";",
             root);
    at(tool, root, "lighty-enable-mod");
    if (copy_in(root, rel, file) != 0 ||
        test_copy_file("/usr/sbin/lighty-enable-mod", tool, 0755) != 0 ||
        edit(root, "lighty-enable-mod", edits) != 0) {
        return -1;
    }
    return run_ok(root, argv, NULL) ? 0 : -1;
}

int deb_lighttpd_check(const char *root)
{
    char conf[TEST_PATH_MAX];
    const char *argv[] = {"lighttpd", "-tt", "-f",
                          at(conf, root, "etc/lighttpd/lighttpd.conf"), NULL};
    return run(root, argv, NULL);
}

int deb_lighttpd_start(test_proc_t *p, const char *root, int port)
{
    char conf[TEST_PATH_MAX], log[TEST_PATH_MAX];
    const char *argv[] = {"lighttpd", "-D", "-f",
                          at(conf, root, "etc/lighttpd/lighttpd.conf"), NULL};

    if (test_proc_start(p, argv, NULL, at(log, root, "lighttpd.log")) != 0) {
        return -1;
    }
    return test_wait_listen(port, NULL, p, START_MS);
}

/* ---- apache ------------------------------------------------------------- */

/* The environment Debian's apache2ctl would read from envvars. */
typedef struct apache_env {
    char confdir[TEST_PATH_MAX + 32], state[TEST_PATH_MAX + 32];
    char user[128], group[128], pid[TEST_PATH_MAX + 32];
    char run[TEST_PATH_MAX + 32], lock[TEST_PATH_MAX + 32];
    char log[TEST_PATH_MAX + 32];
    const char *vars[11];
} apache_env_t;

static const char *const *apache_env(apache_env_t *e, const char *root)
{
    /* Apache will not run its children as root: www-data then. */
    const char *user = geteuid() == 0 ? "www-data" : user_name();

    snprintf(e->confdir, sizeof(e->confdir), "APACHE_CONFDIR=%s/etc/apache2",
             root);
    snprintf(e->state, sizeof(e->state), "APACHE_STATE_DIRECTORY=%s/state",
             root);
    snprintf(e->user, sizeof(e->user), "APACHE_RUN_USER=%s", user);
    snprintf(e->group, sizeof(e->group), "APACHE_RUN_GROUP=%s",
             geteuid() == 0 ? "www-data" : user);
    snprintf(e->pid, sizeof(e->pid), "APACHE_PID_FILE=%s/run/apache2.pid",
             root);
    snprintf(e->run, sizeof(e->run), "APACHE_RUN_DIR=%s/run", root);
    snprintf(e->lock, sizeof(e->lock), "APACHE_LOCK_DIR=%s/lock", root);
    snprintf(e->log, sizeof(e->log), "APACHE_LOG_DIR=%s/log", root);
    e->vars[0] = e->confdir;
    e->vars[1] = e->state;
    e->vars[2] = e->user;
    e->vars[3] = e->group;
    e->vars[4] = e->pid;
    e->vars[5] = e->run;
    e->vars[6] = e->lock;
    e->vars[7] = e->log;
    e->vars[8] = "LANG=C";
    e->vars[9] = NULL;
    return e->vars;
}

int deb_apache_layout(const char *root, int port, const char *docroot)
{
    char listen[64], vhost[64], docroot_line[TEST_PATH_MAX + 32];
    char envvars[12 * TEST_PATH_MAX];
    const char *ports[] = {"\nListen 80\n", listen, NULL};
    const char *site[] = {"<VirtualHost *:80>", vhost,
                          "DocumentRoot /var/www/html", docroot_line, NULL};
    apache_env_t e;
    size_t used = 0;

    snprintf(listen, sizeof(listen), "\nListen 127.0.0.1:%d\n", port);
    snprintf(vhost, sizeof(vhost), "<VirtualHost *:%d>", port);
    snprintf(docroot_line, sizeof(docroot_line), "DocumentRoot %s", docroot);
    /* envvars, as apache2ctl and a2enmod read it: the layout's own. */
    apache_env(&e, root);
    for (size_t i = 0; e.vars[i] != NULL; i++) {
        used += (size_t)snprintf(envvars + used, sizeof(envvars) - used,
                                 "export %s\n", e.vars[i]);
    }
    if (copy_etc(root, "/etc/apache2") != 0 || mkdir_in(root, "run") != 0 ||
        mkdir_in(root, "lock") != 0 || mkdir_in(root, "log") != 0 ||
        mkdir_in(root, "state") != 0 ||
        edit(root, "etc/apache2/ports.conf", ports) != 0 ||
        edit(root, "etc/apache2/sites-available/000-default.conf", site) != 0) {
        return -1;
    }
    return write_in(root, "etc/apache2/envvars", envvars);
}

int deb_apache_enable(const char *root, const char *const mods[],
                      const char *name, const char *file)
{
    char rel[256];
    const char *argv[16] = {"a2enmod", "-q"};
    const char *conf[] = {"a2enconf", "-q", name, NULL};
    apache_env_t e;
    size_t n = 2;

    for (size_t i = 0; mods[i] != NULL && n < 15; i++) {
        argv[n++] = mods[i];
    }
    argv[n] = NULL;
    snprintf(rel, sizeof(rel), "etc/apache2/conf-available/%s.conf", name);
    if (!run_ok(root, argv, apache_env(&e, root)) ||
        copy_in(root, rel, file) != 0) {
        return -1;
    }
    return run_ok(root, conf, apache_env(&e, root)) ? 0 : -1;
}

int deb_apache_check(const char *root)
{
    char dir[TEST_PATH_MAX];
    const char *argv[] = {"apache2", "-d", at(dir, root, "etc/apache2"), "-t",
                          NULL};
    apache_env_t e;

    return run(root, argv, apache_env(&e, root));
}

int deb_apache_start(test_proc_t *p, const char *root, int port)
{
    char dir[TEST_PATH_MAX], log[TEST_PATH_MAX];
    const char *argv[] = {"apache2", "-d", at(dir, root, "etc/apache2"),
                          "-DFOREGROUND", NULL};
    apache_env_t e;

    if (test_proc_start(p, argv, apache_env(&e, root),
                        at(log, root, "apache.log")) != 0) {
        return -1;
    }
    return test_wait_listen(port, NULL, p, START_MS);
}
