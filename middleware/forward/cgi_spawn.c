/*
 * cgi_spawn.c - start a CGI program the cheap and safe way.
 *
 * Selection: the script path comes from the configuration (a fixed
 * program) or the request (SCRIPT_FILENAME, or DOCUMENT_ROOT +
 * SCRIPT_NAME); realpath() removes "..", "." and symlinks, so the prefix
 * check against the resolved root on a component boundary cannot be
 * escaped by either.  The resolved path (no symlinks left) is what gets
 * executed.  Directories along it remain the operator's to protect.
 *
 * Spawning: vfork() shares the daemon's memory with the child until
 * execve(), so nothing is copied however large the daemon is; the calling
 * thread waits, the others run on.  Because the child runs on the parent's
 * memory it only makes raw system calls: everything it needs (argv, envp,
 * the directory) is built before, in one allocation, and every signal is
 * blocked across vfork() so no handler of the daemon can run in the child.
 * The child then makes itself a process group leader (so a timeout kills
 * whatever it started), asks for SIGKILL when its parent dies (note: the
 * "parent" of PR_SET_PDEATHSIG is the thread that called vfork; the
 * daemon's worker threads live as long as the daemon, so this means "when
 * the daemon dies"), moves its pipes to 0, 1 and 2, closes every other
 * descriptor (pipes of other threads' spawns are O_CLOEXEC anyway; this
 * also covers descriptors the daemon's libraries left inheritable), enters
 * the script's directory, resets signal dispositions and the mask, and
 * executes.  An execve() failure is written into the parent's record
 * (shared memory) before _exit(127).
 *
 * Registry: running children sit in a mutex-protected list so the daemon
 * can SIGKILL every process group at exit.  A child leaves the list after
 * it exited but before it is reaped (waitid WNOWAIT), so its pid, which is
 * also its group id, cannot be reused while the list may still signal it.
 * A child joins the list only after vfork() returns, and it may run well
 * before that on a loaded machine: a spawn notes how many kill-alls there
 * were before it started, and one that finds more when it joins kills its
 * child at once, so mw_cgi_kill_all() kills every child started before it.
 */
#include "cgi_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"

#define DEFAULT_PATH "PATH=/usr/local/bin:/usr/bin:/bin"
#define GATEWAY      "GATEWAY_INTERFACE=CGI/1.1"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long child_nofile; /* mw_cgi_limit_fds(); 0: unchanged */
static cgi_child_t *reg_head;
static size_t reg_count;        /* children in the list */
static atomic_ulong kill_epoch; /* mw_cgi_kill_all() calls (under reg_lock) */

/* ---- selection ---------------------------------------------------------- */

/* Copies the variable name (a C string without inner NUL) into buf;
 * returns its length, or 0 when missing, empty or unusable. */
static size_t copy_param(const mw_req_t *req, const char *name, char *buf,
                         size_t size)
{
    size_t len;
    const char *v = mw_req_param(req, name, &len);

    if (v == NULL || len == 0 || len >= size || memchr(v, '\0', len)) {
        return 0;
    }
    memcpy(buf, v, len);
    buf[len] = '\0';
    return len;
}

/* The requested path into want (PATH_MAX); false when there is none. */
static bool requested_path(const mw_req_t *req, char *want)
{
    size_t n;

    if (copy_param(req, "SCRIPT_FILENAME", want, PATH_MAX) > 0) {
        return true;
    }
    n = copy_param(req, "DOCUMENT_ROOT", want, PATH_MAX);
    return n > 0 && copy_param(req, "SCRIPT_NAME", want + n, PATH_MAX - n) > 0;
}

/* Whether path lies strictly below dir (both resolved). */
static bool inside(const char *dir, const char *path)
{
    size_t n = strlen(dir);

    if (n == 1 && dir[0] == '/') {
        return path[0] == '/' && path[1] != '\0';
    }
    return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

int cgi_resolve(const mw_cgi_opts_t *opts, const mw_req_t *req, char *script)
{
    char want[PATH_MAX];
    char root[PATH_MAX];
    const char *path = opts->program;
    struct stat st;

    if (path == NULL) {
        if (opts->root == NULL) {
            return 500;
        }
        if (!requested_path(req, want)) {
            return 404;
        }
        path = want;
    }
    if (realpath(path, script) == NULL) {
        return errno == EACCES ? 403 : errno == ENOMEM ? 500 : 404;
    }
    if (opts->program == NULL) {
        if (realpath(opts->root, root) == NULL) {
            return 500;
        }
        if (!inside(root, script)) {
            return 403;
        }
    }
    if (stat(script, &st) != 0) {
        return 404;
    }
    if (!S_ISREG(st.st_mode) ||
        faccessat(AT_FDCWD, script, X_OK, AT_EACCESS) != 0) {
        return 403;
    }
    return 0;
}

int mw_cgi_which(const mw_cgi_opts_t *opts, const mw_req_t *req, char *script,
                 size_t *root_len)
{
    char root[PATH_MAX];
    int st = cgi_resolve(opts, req, script);

    *root_len = 0;
    if (st == 0 && opts->program == NULL) {
        if (realpath(opts->root, root) == NULL) {
            return 500;
        }
        *root_len = strcmp(root, "/") == 0 ? 0 : strlen(root);
    }
    return st;
}

/* ---- the image: argv, envp, directory ----------------------------------- */

/* Whether the request variable p goes into the environment as it is
 * (plain: not the client's Accept-Encoding, mw_req_t.plain_body). */
static bool env_keep(const mw_param_t *p, bool replace_clen, bool plain,
                     const char *pass)
{
    if (!fwd_param_allowed(p->name, p->name_len, pass) ||
        (plain && fwd_param_encoding(p->name, p->name_len)) ||
        (p->name_len == 15 && memcmp(p->name, "SCRIPT_FILENAME", 15) == 0)) {
        return false;
    }
    return !(replace_clen && p->name_len == 14 &&
             memcmp(p->name, "CONTENT_LENGTH", 14) == 0);
}

/* Appends "NAME=value" (value n bytes) at *pos as the next envp entry. */
static void env_put(cgi_image_t *img, size_t *k, char **pos, const char *name,
                    size_t name_len, const char *value, size_t value_len)
{
    char *s = *pos;

    memcpy(s, name, name_len);
    s[name_len] = '=';
    memcpy(s + name_len + 1, value, value_len);
    s[name_len + 1 + value_len] = '\0';
    img->envp[(*k)++] = s;
    *pos = s + name_len + value_len + 2;
}

/* Appends a ready "NAME=value" string. */
static void env_put_str(cgi_image_t *img, size_t *k, char **pos, const char *s)
{
    size_t n = strlen(s) + 1;

    memcpy(*pos, s, n);
    img->envp[(*k)++] = *pos;
    *pos += n;
}

suspect_rc_t cgi_image_build(const mw_req_t *req, const char *script,
                             const char *clen, const char *pass,
                             cgi_image_t *img)
{
    size_t script_len = strlen(script);
    size_t count = 0, bytes = 0, k = 0;
    bool have_gw = false, have_path = false;
    char *pos, *slash;

    for (size_t i = 0; i < req->nparams; i++) {
        const mw_param_t *p = &req->params[i];

        if (env_keep(p, clen != NULL, req->plain_body, pass)) {
            count++;
            bytes += p->name_len + p->value_len + 2;
            have_gw |= p->name_len == 17 &&
                       memcmp(p->name, "GATEWAY_INTERFACE", 17) == 0;
            have_path |= p->name_len == 4 && memcmp(p->name, "PATH", 4) == 0;
        }
    }
    /* SCRIPT_FILENAME, GATEWAY_INTERFACE, PATH, CONTENT_LENGTH, NULL */
    bytes += sizeof("SCRIPT_FILENAME=") + script_len + sizeof(GATEWAY) +
             sizeof(DEFAULT_PATH) + sizeof("CONTENT_LENGTH=") +
             (clen != NULL ? strlen(clen) : 0) + 2 * (script_len + 1);
    img->block = suspect_malloc((count + 5) * sizeof(char *) + bytes);
    if (img->block == NULL) {
        return SUSPECT_E_NOMEM;
    }
    img->envp = (char **)(void *)img->block;
    pos = img->block + (count + 5) * sizeof(char *);
    for (size_t i = 0; i < req->nparams; i++) {
        const mw_param_t *p = &req->params[i];

        if (env_keep(p, clen != NULL, req->plain_body, pass)) {
            env_put(img, &k, &pos, p->name, p->name_len, p->value,
                    p->value_len);
        }
    }
    env_put(img, &k, &pos, "SCRIPT_FILENAME", 15, script, script_len);
    if (!have_gw) {
        env_put_str(img, &k, &pos, GATEWAY);
    }
    if (!have_path) {
        env_put_str(img, &k, &pos, DEFAULT_PATH);
    }
    if (clen != NULL && clen[0] != '\0') {
        env_put(img, &k, &pos, "CONTENT_LENGTH", 14, clen, strlen(clen));
    }
    img->envp[k] = NULL;
    img->argv[0] = pos;
    memcpy(pos, script, script_len + 1);
    pos += script_len + 1;
    img->argv[1] = NULL;
    memcpy(pos, script, script_len + 1);
    slash = strrchr(pos, '/');
    slash[slash == pos ? 1 : 0] = '\0';
    img->dir = pos;
    return SUSPECT_OK;
}

/* ---- registry ----------------------------------------------------------- */

/* Adds c, started when kill_epoch was epoch; kills it when a kill-all
 * came since. */
static void reg_add(cgi_child_t *c, unsigned long epoch)
{
    pthread_mutex_lock(&reg_lock);
    reg_count++;
    c->prev = NULL;
    c->next = reg_head;
    if (reg_head != NULL) {
        reg_head->prev = c;
    }
    reg_head = c;
    if (atomic_load(&kill_epoch) != epoch) {
        cgi_kill(c);
    }
    pthread_mutex_unlock(&reg_lock);
}

static void reg_remove(cgi_child_t *c)
{
    pthread_mutex_lock(&reg_lock);
    reg_count--;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        reg_head = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    pthread_mutex_unlock(&reg_lock);
}

void cgi_kill(const cgi_child_t *c)
{
    /* ESRCH: the group does not exist (the child died before setpgid). */
    if (kill(-c->pid, SIGKILL) != 0 && errno == ESRCH) {
        kill(c->pid, SIGKILL);
    }
}

size_t mw_cgi_running(void)
{
    size_t n;

    pthread_mutex_lock(&reg_lock);
    n = reg_count;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* Kills every process group started before: for the daemon's exit.  Safe
 * from any thread at any time. */
void mw_cgi_kill_all(void)
{
    pthread_mutex_lock(&reg_lock);
    atomic_fetch_add(&kill_epoch, 1);
    for (cgi_child_t *c = reg_head; c != NULL; c = c->next) {
        cgi_kill(c);
    }
    pthread_mutex_unlock(&reg_lock);
}

/* ---- spawn -------------------------------------------------------------- */

/* What the child reads: all of it prepared before vfork. */
typedef struct child_args {
    const cgi_image_t *img;
    int fds[3]; /* become 0, 1, 2 (all >= 3) */
    pid_t parent;
    int *exec_errno; /* in the parent's memory */
} child_args_t;

/* Sets every signal's disposition to the default (SIG_IGN would survive
 * execve) and unblocks all signals. */
static void child_signals(void)
{
    struct sigaction dfl;
    sigset_t none;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            sigaction(sig, &dfl, NULL); /* EINVAL for libc-reserved ones */
        }
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The vfork child: raw system calls only, never returns. */
__attribute__((noreturn)) static void child_exec(const child_args_t *a)
{
    if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
        getppid() != a->parent) {
        goto fail;
    }
    for (int i = 0; i < 3; i++) {
        if (dup2(a->fds[i], i) < 0) {
            goto fail;
        }
    }
#ifdef SYS_close_range
    syscall(SYS_close_range, 3U, ~0U, 0U);
#endif
    if (chdir(a->img->dir) != 0) {
        goto fail;
    }
    if (child_nofile != 0) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
            rl.rlim_cur = child_nofile;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    child_signals();
    execve(a->img->argv[0], a->img->argv, a->img->envp);
fail:
    *a->exec_errno = errno;
    _exit(127);
}

void mw_cgi_limit_fds(unsigned long soft)
{
    child_nofile = soft;
}

/* vfork + child_exec, with every signal blocked around it. */
static pid_t start(const child_args_t *a)
{
    sigset_t all, old;
    pid_t pid;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = vfork();
    if (pid == 0) {
        child_exec(a);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return pid;
}

/* Moves *fd to a number >= 3 (keeping O_CLOEXEC), so the child's dup2()
 * onto 0..2 never clobbers another pipe or keeps a close-on-exec flag. */
static int lift(int *fd)
{
    int nfd;

    if (*fd > 2) {
        return 0;
    }
    nfd = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
    if (nfd < 0) {
        return -1;
    }
    close(*fd);
    *fd = nfd;
    return 0;
}

void cgi_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Makes the three pipes: theirs[] for the child, c's fds for us. */
static int make_pipes(cgi_child_t *c, int theirs[3])
{
    int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    bool ok = true;

    for (int i = 0; i < 3; i++) {
        ok = ok && pipe2(p[i], O_CLOEXEC) == 0;
    }
    theirs[0] = p[0][0];
    c->in_fd = p[0][1];
    theirs[1] = p[1][1];
    c->out_fd = p[1][0];
    theirs[2] = p[2][1];
    c->err_fd = p[2][0];
    for (int i = 0; i < 3; i++) {
        ok = ok && lift(&theirs[i]) == 0;
    }
    ok = ok && fcntl(c->in_fd, F_SETFL, O_NONBLOCK) == 0 &&
         fcntl(c->out_fd, F_SETFL, O_NONBLOCK) == 0 &&
         fcntl(c->err_fd, F_SETFL, O_NONBLOCK) == 0;
    if (ok) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        cgi_close(&theirs[i]);
    }
    cgi_close(&c->in_fd);
    cgi_close(&c->out_fd);
    cgi_close(&c->err_fd);
    return -1;
}

suspect_rc_t cgi_spawn(const cgi_image_t *img, cgi_child_t *c,
                       suspect_err_t *err)
{
    child_args_t a;
    unsigned long epoch;
    int saved;

    memset(c, 0, sizeof(*c));
    c->in_fd = c->out_fd = c->err_fd = c->pidfd = -1;
    if (make_pipes(c, a.fds) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "cgi: pipe");
    }
    a.img = img;
    a.parent = getpid();
    a.exec_errno = &c->exec_errno;
    epoch = atomic_load(&kill_epoch);
    c->pid = start(&a);
    saved = errno;
    for (int i = 0; i < 3; i++) {
        close(a.fds[i]);
    }
    if (c->pid < 0) {
        cgi_close(&c->in_fd);
        cgi_close(&c->out_fd);
        cgi_close(&c->err_fd);
        errno = saved;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "cgi: vfork");
    }
#ifdef SYS_pidfd_open
    c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0U);
#endif
    reg_add(c, epoch);
    return SUSPECT_OK;
}

/* ---- end of a child ----------------------------------------------------- */

bool cgi_exited(const cgi_child_t *c)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
        return errno == ECHILD;
    }
    return si.si_pid != 0;
}

int cgi_reap(cgi_child_t *c)
{
    siginfo_t si;
    int status = -1;
    int rc;

    /* Exited but not reaped: its pid cannot be reused while we unlist it. */
    while ((rc = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT)) != 0 &&
           errno == EINTR) {
    }
    reg_remove(c);
    if (rc == 0) {
        while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    cgi_close(&c->in_fd);
    cgi_close(&c->out_fd);
    cgi_close(&c->err_fd);
    cgi_close(&c->pidfd);
    return status;
}
