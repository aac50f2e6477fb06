/*
 * ctl_test.c - helpers of the suspectctl suite (ctl_test.h): the binary
 * run with posix_spawn (stdin, stdout and stderr are files in the suite's
 * directory, read back after it exits), reaped by a deadline; a JSON
 * validator for RFC 8259's grammar (no semantics: enough to tell that
 * --json printed one well-formed object); the suite's suspect.xml; one
 * FastCGI request to a running suspect-fcgi.
 */
#include "ctl_test.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/fcgiclient.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

extern char **environ;

#define RUN_MS 10000

char *ctl_dir;

/* suspect.xml around a <Store> element (%s). */
static const char conf_fmt[] =
    "<Suspect>\n"
    "  <Limits path=\"limits.xml\"/>\n"
    "  %s\n"
    "  <Control socket=\"control.sock\"/>\n"
    "  <Cgi root=\"/tmp\"/>\n"
    "  <Route action=\"BankAccountUpdate\" method=\"POST\" path=\"/app.cgi\" "
    "param=\"op=bank\">\n"
    "    <Identity type=\"MemberCode\" from=\"cookie:member\"/>\n"
    "    <Identity type=\"ClientIp\" from=\"client-ip\"/>\n"
    "  </Route>\n"
    "  <Route action=\"Login\" method=\"POST\" path=\"/login.cgi\">\n"
    "    <Identity type=\"MemberCode\" from=\"form:member\"/>\n"
    "  </Route>\n"
    "</Suspect>\n";

/* ---- running the tool --------------------------------------------------- */

/* Frees what ctl_run() collected. */
void ctl_run_free(ctl_run_t *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

/* The binary under test, written into path (the caller's). */
static const char *ctl_path(char path[TEST_PATH_MAX])
{
    const char *build = getenv("SUSPECT_BUILDDIR");

    snprintf(path, TEST_PATH_MAX, "%s/suspectctl",
             build != NULL && build[0] != '\0' ? build : ".");
    return path;
}

/* Waits for pid until a deadline (then kills it); its exit status or -1. */
static int reap(pid_t pid)
{
    struct timespec tick = {0, 1000000};
    int64_t deadline = mono_ms() + test_scale_ms(RUN_MS);
    int st;

    for (;;) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        if (mono_ms() > deadline) {
            break;
        }
        nanosleep(&tick, NULL);
    }
    fprintf(stderr, "\n  suspectctl still runs after %d ms: killed\n", RUN_MS);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* Runs suspectctl args (NULL-terminated) with stdin from input (NULL: an
 * empty stdin); fills r. */
void ctl_run(ctl_run_t *r, const char *input, const char *const args[])
{
    char in[700], out[700], err[700], bin[TEST_PATH_MAX];
    const char *argv[32] = {ctl_path(bin)};
    const char *wrapped[32 + TEST_VG_MAX_WORDS];
    const char *const *run;
    posix_spawn_file_actions_t fa;
    pid_t pid;
    size_t n = 1;

    for (size_t i = 0; args[i] != NULL && n < 31; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    /* Under scripts/valgrind, suspectctl runs under valgrind. */
    run = test_vg_argv(argv, wrapped, sizeof(wrapped) / sizeof(*wrapped));
    snprintf(in, sizeof(in), "%s/stdin", ctl_dir);
    snprintf(out, sizeof(out), "%s/stdout", ctl_dir);
    snprintf(err, sizeof(err), "%s/stderr", ctl_dir);
    test_write_file(in, input != NULL ? input : "",
                    input != NULL ? strlen(input) : 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    r->status =
        posix_spawn(&pid, run[0], &fa, NULL, (char *const *)run, environ) == 0
            ? reap(pid)
            : -1;
    posix_spawn_file_actions_destroy(&fa);
    r->out = test_read_file(out, NULL);
    r->err = test_read_file(err, NULL);
    if (r->out == NULL || r->err == NULL) {
        r->status = -1;
    }
}

/* True when needle is in s; else prints both. */
bool ctl_has(const char *s, const char *needle)
{
    bool found = s != NULL && strstr(s, needle) != NULL;

    if (!found) {
        fprintf(stderr, "\n  expected '%s' in:\n%s\n", needle,
                s != NULL ? s : "(null)");
    }
    return found;
}

/* ---- a minimal JSON validator (RFC 8259 grammar) ------------------------ */

static const char *js_ws(const char *p)
{
    while (p != NULL && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) {
        p++;
    }
    return p;
}

static const char *js_string(const char *p)
{
    if (*p++ != '"') {
        return NULL;
    }
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20) {
            return NULL; /* also the end of the text */
        }
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++) {
                    if (strchr("0123456789abcdefABCDEF", p[i]) == NULL ||
                        p[i] == '\0') {
                        return NULL;
                    }
                }
                p += 4;
            } else if (*p == '\0' || strchr("\"\\/bfnrt", *p) == NULL) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *js_number(const char *p)
{
    const char *start;

    p += *p == '-';
    start = p;
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    if (p == start || (*start == '0' && p - start > 1)) {
        return NULL;
    }
    return p;
}

/* An object or array body after its opening bracket, up to close. */
static const char *js_members(const char *p, char close, bool keys)
{
    p = js_ws(p);
    if (*p == close) {
        return p + 1;
    }
    for (;;) {
        if (keys) {
            p = js_ws(js_string(js_ws(p)));
            if (p == NULL || *p++ != ':') {
                return NULL;
            }
        }
        p = js_ws(ctl_json_value(p));
        if (p == NULL || (*p != ',' && *p != close)) {
            return NULL;
        }
        if (*p++ == close) {
            return p;
        }
    }
}

/* The end of the JSON value at p, or NULL. */
const char *ctl_json_value(const char *p)
{
    p = js_ws(p);
    if (p == NULL) {
        return NULL;
    }
    switch (*p) {
    case '{':
        return js_members(p + 1, '}', true);
    case '[':
        return js_members(p + 1, ']', false);
    case '"':
        return js_string(p);
    case 't':
        return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f':
        return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n':
        return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default:
        return js_number(p);
    }
}

/* True when text is exactly one JSON object (and a newline). */
bool ctl_json_object(const char *text)
{
    const char *end =
        text != NULL && text[0] == '{' ? ctl_json_value(text) : NULL;
    bool ok = end != NULL && *js_ws(end) == '\0';

    if (!ok) {
        fprintf(stderr, "\n  not one JSON object:\n%s\n",
                text != NULL ? text : "(null)");
    }
    return ok;
}

/* ---- fixtures ----------------------------------------------------------- */

/* The suite's suspect.xml around store, at path. */
int ctl_write_conf(const char *path, const char *store)
{
    char buf[4096];

    snprintf(buf, sizeof(buf), conf_fmt, store);
    return test_write_file(path, buf, strlen(buf));
}

/* ---- a running suspect-fcgi -------------------------------------------- */

int ctl_authorize(const char *sock, const char *uri, const char *member)
{
    char cookie[64], target[256];
    const char *vars[] = {
        "REQUEST_METHOD=POST", target, "REMOTE_ADDR=192.0.2.7",
        "CONTENT_LENGTH=0",    cookie, NULL};
    fcbuf_t req = {0};
    fcc_response_t resp;
    int fd = fcc_connect(sock), status = -1;
    const char *st;

    /* An authorizer never reads the body: the identity is a cookie. */
    snprintf(cookie, sizeof(cookie), "HTTP_COOKIE=member=%s", member);
    snprintf(target, sizeof(target), "REQUEST_URI=%s", uri);
    if (fd < 0) {
        return -1;
    }
    memset(&resp, 0, sizeof(resp));
    fcbuf_begin(&req, 1, FCGI_AUTHORIZER, 0);
    fcbuf_params(&req, 1, vars, 4096);
    if (fcc_exchange(fd, &req, 1, &resp, (int)test_scale_ms(5000)) == 0) {
        fcbuf_add(&resp.out, "", 1);
        st = strstr((const char *)resp.out.p, "Status: ");
        status = st != NULL ? atoi(st + 8) : 200;
    }
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    close(fd);
    return status;
}
