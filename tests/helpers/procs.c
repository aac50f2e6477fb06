/*
 * procs.c - start, watch and stop real processes for end-to-end tests.
 *
 * Every process is spawned with posix_spawn (no shell, no fork of the
 * test runner's memory) into its own process group, with a clean signal
 * mask and default dispositions, stdin from /dev/null, its output
 * appended to a log file and no other descriptor.  Its pid goes into a small
 * registry guarded by a mutex (curl jobs run from several threads);
 * test_procs_stop_all() SIGKILLs each registered process group and reaps the
 * process, so a failed assertion (CUnit's FATAL asserts jump out of the test)
 * cannot leave a server running.  Waiting is always bounded: poll with a short
 * sleep until a deadline, never a fixed sleep.  The servers' configurations
 * are generated here around the caller's part; curl is in procs_http.c.
 */
#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "clock.h"
#include "util.h"
#include "vgwrap.h"

extern char **environ;

#define MAX_PROCS 256
#define POLL_MS   5

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t registry[MAX_PROCS];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void reg_add(pid_t pid)
{
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < MAX_PROCS; i++) {
        if (registry[i] == 0) {
            registry[i] = pid;
            break;
        }
    }
    pthread_mutex_unlock(&reg_lock);
}

static void reg_remove(pid_t pid)
{
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < MAX_PROCS; i++) {
        if (registry[i] == pid) {
            registry[i] = 0;
        }
    }
    pthread_mutex_unlock(&reg_lock);
}

/* The environment: environ without the names env sets, then env. */
static char **merge_env(const char *const env[])
{
    size_t n = 0, m = 0, k = 0;
    char **out;

    while (environ[n] != NULL) {
        n++;
    }
    while (env != NULL && env[m] != NULL) {
        m++;
    }
    out = calloc(n + m + 1, sizeof(*out));
    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < m && !replaced; j++) {
            size_t len = strcspn(env[j], "=");
            replaced =
                strncmp(environ[i], env[j], len) == 0 && environ[i][len] == '=';
        }
        if (!replaced) {
            out[k++] = environ[i];
        }
    }
    for (size_t j = 0; j < m; j++) {
        out[k++] = (char *)env[j];
    }
    return out;
}

/* Spawn attributes: own process group, empty mask, default signals. */
static int spawn_attrs(posix_spawnattr_t *attr)
{
    sigset_t none, defaults;

    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig = 1; sig < 32; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            sigaddset(&defaults, sig);
        }
    }
    if (posix_spawnattr_init(attr) != 0) {
        return -1;
    }
    posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP |
                                       POSIX_SPAWN_SETSIGMASK |
                                       POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(attr, 0);
    posix_spawnattr_setsigmask(attr, &none);
    posix_spawnattr_setsigdefault(attr, &defaults);
    return 0;
}

int test_proc_start(test_proc_t *p, const char *const argv[],
                    const char *const env[], const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    char **envp = merge_env(env);
    const char *base = strrchr(argv[0], '/');
    int rc;

    memset(p, 0, sizeof(*p));
    p->status = -1;
    snprintf(p->name, sizeof(p->name), "%s", base ? base + 1 : argv[0]);
    snprintf(p->log, sizeof(p->log), "%s", log ? log : "/dev/null");
    if (envp == NULL || spawn_attrs(&attr) != 0) {
        free(envp);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, p->log,
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    /* nothing else: not the runner's descriptors (make's jobserver pipe)
     * nor a test's sockets, which a server would hold open as long as it
     * lives */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    rc = posix_spawnp(&p->pid, argv[0], &fa, &attr, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(envp);
    if (rc != 0) {
        fprintf(stderr, "test_proc: cannot run %s: %s\n", argv[0],
                strerror(rc));
        p->pid = 0;
        return -1;
    }
    reg_add(p->pid);
    return 0;
}

int test_proc_signal(const test_proc_t *p, int sig)
{
    if (p->pid <= 0) {
        return -1;
    }
    return kill(p->pid, sig);
}

/* Reaps p when it has exited (killing what it left in its process group
 * first, while the zombie still holds the group's id); true when it has. */
static bool reap(test_proc_t *p, bool block)
{
    siginfo_t info;
    int status = -1, rc;

    if (p->pid <= 0) {
        return true;
    }
    memset(&info, 0, sizeof(info));
    do {
        rc = waitid(P_PID, (id_t)p->pid, &info,
                    WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0 && info.si_pid == 0) {
        return false;
    }
    kill(-p->pid, SIGKILL);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
    }
    reg_remove(p->pid);
    p->status = status;
    p->pid = 0;
    return true;
}

int test_proc_wait(test_proc_t *p, unsigned ms)
{
    long long deadline = mono_ms() + test_scale_ms(ms);

    while (!reap(p, false)) {
        if (mono_ms() >= deadline) {
            return -1;
        }
        sleep_ms(POLL_MS);
    }
    return 0;
}

bool test_proc_running(test_proc_t *p)
{
    return !reap(p, false);
}

void test_proc_stop(test_proc_t *p, int sig, unsigned ms)
{
    if (p->pid <= 0) {
        return;
    }
    kill(p->pid, sig != 0 ? sig : SIGTERM);
    if (test_proc_wait(p, ms) != 0) {
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
        reap(p, true);
    }
}

void test_procs_stop_all(void)
{
    pid_t pids[MAX_PROCS];

    pthread_mutex_lock(&reg_lock);
    memcpy(pids, registry, sizeof(pids));
    memset(registry, 0, sizeof(registry));
    pthread_mutex_unlock(&reg_lock);
    for (size_t i = 0; i < MAX_PROCS; i++) {
        if (pids[i] > 0) {
            kill(-pids[i], SIGKILL);
            kill(pids[i], SIGKILL);
            while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {
            }
        }
    }
}

/* One connection attempt; true when something accepted it. */
static bool try_connect(int port, const char *path)
{
    struct sockaddr_in in;
    struct sockaddr_un un;
    struct sockaddr *sa;
    socklen_t len;
    int fd, rc;

    if (port > 0) {
        memset(&in, 0, sizeof(in));
        in.sin_family = AF_INET;
        in.sin_port = htons((unsigned short)port);
        in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa = (struct sockaddr *)&in;
        len = sizeof(in);
    } else {
        memset(&un, 0, sizeof(un));
        un.sun_family = AF_UNIX;
        snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
        sa = (struct sockaddr *)&un;
        len = sizeof(un);
    }
    fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    rc = connect(fd, sa, len);
    close(fd);
    return rc == 0;
}

int test_wait_listen(int port, const char *path, test_proc_t *p, unsigned ms)
{
    long long deadline = mono_ms() + test_scale_ms(ms);

    for (;;) {
        if (try_connect(port, path)) {
            return 0;
        }
        if (p != NULL && !test_proc_running(p)) {
            fprintf(stderr, "test_proc: %s exited at start (see %s)\n", p->name,
                    p->log);
            return -1;
        }
        if (mono_ms() >= deadline) {
            fprintf(stderr, "test_proc: nothing listens on %s%d after %u ms\n",
                    port > 0 ? "port " : path, port > 0 ? port : 0, ms);
            return -1;
        }
        sleep_ms(POLL_MS);
    }
}

int test_wait_file_text(const char *path, const char *text, unsigned ms)
{
    long long deadline = mono_ms() + test_scale_ms(ms);

    for (;;) {
        char *data = test_read_file(path, NULL);
        bool found = data != NULL && strstr(data, text) != NULL;
        free(data);
        if (found) {
            return 0;
        }
        if (mono_ms() >= deadline) {
            return -1;
        }
        sleep_ms(POLL_MS * 2);
    }
}

char *test_subst(const char *text, const char *const pairs[])
{
    char *cur = strdup(text);

    for (size_t i = 0; cur != NULL && pairs[i] != NULL; i += 2) {
        const char *key = pairs[i], *val = pairs[i + 1];
        size_t klen = strlen(key), vlen = strlen(val), count = 0;
        char *out, *o;

        for (const char *s = strstr(cur, key); s; s = strstr(s + klen, key)) {
            count++;
        }
        out = malloc(strlen(cur) + count * vlen + 1);
        if (out == NULL) {
            free(cur);
            return NULL;
        }
        o = out;
        for (const char *s = cur, *hit; *s != '\0'; s = hit + klen) {
            hit = strstr(s, key);
            if (hit == NULL) {
                o = stpcpy(o, s);
                break;
            }
            memcpy(o, s, (size_t)(hit - s));
            o = stpcpy(o + (hit - s), val);
        }
        *o = '\0';
        free(cur);
        cur = out;
    }
    return cur;
}

int test_copy_file(const char *src, const char *dst, unsigned mode)
{
    size_t len;
    char *data = test_read_file(src, &len);
    int rc;

    if (data == NULL) {
        fprintf(stderr, "test_copy_file: cannot read %s\n", src);
        return -1;
    }
    rc = test_write_file(dst, data, len);
    free(data);
    return rc == 0 ? chmod(dst, mode) : -1;
}

/* ---- servers ----------------------------------------------------------- */

#define START_MS 10000

static const char nginx_skeleton[] =
    "# generated by the test suite\n"
    "daemon off;\n"
    "master_process off;\n"
    "worker_processes 1;\n"
    "pid @DIR@/nginx.pid;\n"
    "error_log stderr notice;\n"
    "events { worker_connections 512; }\n"
    "http {\n"
    "    access_log @DIR@/access.log;\n"
    "    client_body_temp_path @DIR@/tmp/body;\n"
    "    fastcgi_temp_path @DIR@/tmp/fastcgi;\n"
    "    proxy_temp_path @DIR@/tmp/proxy;\n"
    "    uwsgi_temp_path @DIR@/tmp/uwsgi;\n"
    "    scgi_temp_path @DIR@/tmp/scgi;\n"
    "    default_type application/octet-stream;\n"
    "@HTTP@\n"
    "}\n";

/* Writes text (after replacing @DIR@) to dir/name; the path goes into
 * path.  0 or -1. */
static int write_conf(const char *dir, const char *name, const char *text,
                      char *path, size_t size)
{
    const char *pairs[] = {"@DIR@", dir, NULL};
    char *conf = test_subst(text, pairs);
    int rc;

    snprintf(path, size, "%s/%s", dir, name);
    if (conf == NULL) {
        return -1;
    }
    rc = test_write_file(path, conf, strlen(conf));
    free(conf);
    return rc;
}

int test_nginx_start(test_proc_t *p, const char *dir, const char *http,
                     int port)
{
    const char *pairs[] = {"@HTTP@", http, NULL};
    char conf[TEST_PATH_MAX], prefix[TEST_PATH_MAX], log[TEST_PATH_MAX];
    char tmp[TEST_PATH_MAX];
    char *text = test_subst(nginx_skeleton, pairs);
    int rc;

    snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
    mkdir(tmp, 0700);
    /* "include fastcgi_params;" reads it next to nginx.conf, as on Debian. */
    snprintf(prefix, sizeof(prefix), "%s/fastcgi_params", dir);
    if (test_copy_file("/etc/nginx/fastcgi_params", prefix, 0644) != 0) {
        free(text);
        return -1;
    }
    rc = text != NULL ? write_conf(dir, "nginx.conf", text, conf, sizeof(conf))
                      : -1;
    free(text);
    if (rc != 0) {
        return -1;
    }
    snprintf(prefix, sizeof(prefix), "%s/", dir);
    snprintf(log, sizeof(log), "%s/nginx.log", dir);
    const char *argv[] = {"nginx", "-p", prefix,   "-c",
                          conf,    "-e", "stderr", NULL};
    if (test_proc_start(p, argv, NULL, log) != 0) {
        return -1;
    }
    return test_wait_listen(port, NULL, p, START_MS);
}

int test_lighttpd_start(test_proc_t *p, const char *dir, const char *conf,
                        int port)
{
    char path[TEST_PATH_MAX], log[TEST_PATH_MAX];

    if (write_conf(dir, "lighttpd.conf", conf, path, sizeof(path)) != 0) {
        return -1;
    }
    snprintf(log, sizeof(log), "%s/lighttpd.log", dir);
    const char *argv[] = {"lighttpd", "-D", "-f", path, NULL};
    if (test_proc_start(p, argv, NULL, log) != 0) {
        return -1;
    }
    return test_wait_listen(port, NULL, p, START_MS);
}

int test_php_start(test_proc_t *p, const char *dir, const char *sock,
                   const char *const env[])
{
    char log[TEST_PATH_MAX];
    const char *argv[] = {"php-cgi", "-b", sock, NULL};

    snprintf(log, sizeof(log), "%s/php.log", dir);
    if (test_proc_start(p, argv, env, log) != 0) {
        return -1;
    }
    return test_wait_listen(0, sock, p, START_MS);
}

/* php-fpm's pool: one per test, as many children as suspect-fcgi has
 * workers (examples/suspect-php.xml), the log on stderr. */
static const char fpm_conf[] = "[global]\n"
                               "error_log = /proc/self/fd/2\n"
                               "daemonize = no\n"
                               "[www]\n"
                               "listen = @SOCK@\n"
                               "pm = static\n"
                               "pm.max_children = 8\n";

/* Debian names php-fpm after its PHP version (/usr/sbin/php-fpm8.2). */
static int fpm_binary(char *path, size_t size)
{
    glob_t g;
    int rc = -1;

    if (glob("/usr/sbin/php-fpm*", 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        snprintf(path, size, "%s", g.gl_pathv[g.gl_pathc - 1]);
        rc = 0;
    }
    globfree(&g);
    if (rc != 0) {
        fprintf(stderr, "php-fpm: no /usr/sbin/php-fpm* (scripts/setup-debian "
                        "installs it)\n");
    }
    return rc;
}

int test_fpm_start(test_proc_t *p, const char *dir, const char *sock)
{
    const char *pairs[] = {"@SOCK@", sock, NULL};
    char bin[TEST_PATH_MAX], conf[TEST_PATH_MAX], log[TEST_PATH_MAX];
    char *text = test_subst(fpm_conf, pairs);
    int rc = text != NULL && fpm_binary(bin, sizeof(bin)) == 0
                 ? write_conf(dir, "php-fpm.conf", text, conf, sizeof(conf))
                 : -1;

    free(text);
    if (rc != 0) {
        return -1;
    }
    /* -n: no php.ini; -R: runs as root when the suite does. */
    const char *argv[] = {bin, "-n", "-R", "-y", conf, NULL};
    snprintf(log, sizeof(log), "%s/php.log", dir);
    if (test_proc_start(p, argv, NULL, log) != 0) {
        return -1;
    }
    return test_wait_listen(0, sock, p, START_MS);
}

const char *test_suspect_fcgi_path(char path[TEST_PATH_MAX])
{
    const char *env = getenv("SUSPECT_FCGI");
    const char *build = getenv("SUSPECT_BUILDDIR");

    if (env != NULL && env[0] != '\0') {
        snprintf(path, TEST_PATH_MAX, "%s", env);
    } else {
        snprintf(path, TEST_PATH_MAX, "%s/suspect-fcgi",
                 build != NULL && build[0] != '\0' ? build : ".");
    }
    return path;
}

/* Whether the file path, from byte from on, holds text. */
static bool file_has_since(const char *path, size_t from, const char *text)
{
    size_t len = 0;
    char *data = test_read_file(path, &len);
    bool found = data != NULL && len > from && strstr(data + from, text);

    free(data);
    return found;
}

/* Waits (up to ms) until p's log, past byte from, says the daemon is
 * listening: it logs that once its workers, control socket and metrics
 * listener are all up, a moment after its socket first accepts.  0 or
 * -1. */
static int wait_daemon_ready(test_proc_t *p, size_t from, unsigned ms)
{
    long long deadline = mono_ms() + test_scale_ms(ms);

    while (!file_has_since(p->log, from, "listening on ")) {
        if (!test_proc_running(p) || mono_ms() >= deadline) {
            fprintf(stderr,
                    "test_proc: suspect-fcgi never said it listens "
                    "(see %s)\n",
                    p->log);
            return -1;
        }
        sleep_ms(POLL_MS);
    }
    return 0;
}

int test_suspect_start(test_proc_t *p, const char *dir, const char *conf,
                       const char *sock, int port, const char *const extra[])
{
    char bin[TEST_PATH_MAX], log[TEST_PATH_MAX];
    struct stat st;
    size_t from;
    const char *argv[16] = {test_suspect_fcgi_path(bin), "-c", conf, "-f",
                            "-v"};
    const char *wrapped[16 + TEST_VG_MAX_WORDS];
    size_t n = 5;

    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 15; i++) {
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    if (access(argv[0], X_OK) != 0) {
        fprintf(stderr, "test_proc: %s is not built (set SUSPECT_FCGI)\n",
                argv[0]);
        return -1;
    }
    snprintf(log, sizeof(log), "%s/suspect.log", dir);
    /* the log is appended to: only what this run writes counts */
    from = stat(log, &st) == 0 ? (size_t)st.st_size : 0;
    /* Under scripts/valgrind, the daemon runs under valgrind. */
    if (test_proc_start(p, test_vg_argv(argv, wrapped, 16 + TEST_VG_MAX_WORDS),
                        NULL, log) != 0) {
        return -1;
    }
    snprintf(p->name, sizeof(p->name), "suspect-fcgi");
    return test_wait_listen(sock != NULL ? 0 : port, sock, p, START_MS) == 0
               ? wait_daemon_ready(p, from, START_MS)
               : -1;
}

static const char apache_skeleton[] =
    "# generated by the test suite\n"
    "ServerRoot @DIR@\n"
    "ServerName localhost\n"
    "Listen 127.0.0.1:@PORT@\n"
    "PidFile @DIR@/httpd.pid\n"
    "ErrorLog @DIR@/apache.log\n"
    "LogLevel warn\n"
    "Mutex file:@DIR@ default\n"
    "@USER@"
    "LoadModule mpm_prefork_module @MODS@/mod_mpm_prefork.so\n"
    "LoadModule authn_core_module @MODS@/mod_authn_core.so\n"
    "LoadModule authz_core_module @MODS@/mod_authz_core.so\n"
    "LoadModule authz_user_module @MODS@/mod_authz_user.so\n"
    "LoadModule authnz_fcgi_module @MODS@/mod_authnz_fcgi.so\n"
    "LoadModule cgi_module @MODS@/mod_cgi.so\n"
    "LoadModule dir_module @MODS@/mod_dir.so\n"
    "LoadModule mime_module @MODS@/mod_mime.so\n"
    "TypesConfig /etc/mime.types\n"
    "@CONF@\n";

int test_apache_start(test_proc_t *p, const char *dir, const char *conf,
                      int port)
{
    char path[TEST_PATH_MAX], portbuf[16];
    /* As root, the children (and the CGI programs) run as www-data. */
    const char *user = geteuid() == 0 ? "User www-data\nGroup www-data\n" : "";
    const char *pairs[] = {"@PORT@", portbuf,  "@USER@",
                           user,     "@MODS@", "/usr/lib/apache2/modules",
                           "@CONF@", conf,     NULL};
    char *text;
    int rc;

    snprintf(portbuf, sizeof(portbuf), "%d", port);
    text = test_subst(apache_skeleton, pairs);
    rc = text != NULL ? write_conf(dir, "httpd.conf", text, path, sizeof(path))
                      : -1;
    free(text);
    if (rc != 0) {
        return -1;
    }
    const char *argv[] = {"apache2", "-X", "-f", path, NULL};
    if (test_proc_start(p, argv, NULL, NULL) != 0) {
        return -1;
    }
    return test_wait_listen(port, NULL, p, START_MS);
}
