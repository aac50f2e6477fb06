/*
 * inproc_fixture.c - the "inproc" suite's fixture (inproc_test.h): the
 * files it writes, the requests it makes, the lines it collects.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/util.h"
#include "inproc_test.h"

char *ip_dir;

const char IP_LIMITS[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "<SuspectUsageSettingEntity Action='Bank' LimitCount='2' "
    "LimitDuration='120'/>\n"
    "<SuspectUsageSettingEntity Action='Lock' LimitCount='2' "
    "LimitDuration='600' BlockDuration='600'/>\n"
    "<SuspectUsageSettingEntity Action='Login' LimitCount='3' "
    "LimitDuration='600' BlockDuration='600'/>\n"
    "<SuspectUsageSettingEntity Action='Acct' LimitCount='5' "
    "LimitDuration='60'/>\n"
    "<SuspectUsageSettingEntity Action='Env' LimitCount='5' "
    "LimitDuration='60'/>\n"
    "<SuspectUsageSettingEntity Action='Peek' LimitCount='1' "
    "LimitDuration='60'/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

const char *ip_path(char *path, const char *name)
{
    snprintf(path, TEST_PATH_MAX, "%s/%s", ip_dir, name);
    return path;
}

/* A new file each time (rename), as an editor or a deployment makes it:
 * two writes within a clock tick are still two files. */
int ip_write_file(const char *name, const char *text)
{
    char path[TEST_PATH_MAX], tmp[TEST_PATH_MAX + 8];

    ip_path(path, name);
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    if (test_write_file(tmp, text, strlen(text)) != 0) {
        return -1;
    }
    return rename(tmp, path);
}

int ip_write_conf(const char *server, const char *store, const char *extra)
{
    char text[8192];

    snprintf(
        text, sizeof(text),
        "<Suspect>\n"
        "  %s\n"
        "  <Limits path='limits.xml' reload='0.1'/>\n"
        "  %s\n"
        "  <Upstream address='unix:%s/nobody.sock' timeout='5'/>\n"
        "  <Response shadowHeader='X-Suspect-Shadow'/>\n"
        "  %s\n"
        "  <Route action='Bank' method='POST' path='/app' param='op=bank'\n"
        "         paramIn='query'>\n"
        "    <Identity type='MemberCode' from='cookie:member'/>\n"
        "  </Route>\n"
        "  <Route action='Lock' method='POST' path='/app' param='op=login'\n"
        "         paramIn='query'>\n"
        "    <Identity type='LoginId' from='form:user'/>\n"
        "  </Route>\n"
        "  <Route action='Login' method='POST' path='/app' "
        "param='op=signin'\n"
        "         paramIn='query'>\n"
        "    <Identity type='LoginId' from='form:user'/>\n"
        "    <Failure status='401'/>\n"
        "  </Route>\n"
        "  <Route action='Acct' method='POST' path='/app' param='op=acct'\n"
        "         paramIn='query' missing='reject'>\n"
        "    <Identity type='AccountId' from='header:X-Account-Id'/>\n"
        "  </Route>\n"
        "  <Route action='Env' method='POST' path='/app' param='op=env'\n"
        "         paramIn='query'>\n"
        "    <Identity type='User' from='env:REMOTE_USER'/>\n"
        "  </Route>\n"
        "  <Route action='Peek' method='POST' path='/app' param='op=peek'\n"
        "         paramIn='query' shadow='yes'>\n"
        "    <Identity type='MemberCode' from='cookie:member'/>\n"
        "  </Route>\n"
        "</Suspect>\n",
        server != NULL ? server : "<Server mode='forward'/>",
        store != NULL ? store : "<Store type='memory'/>", ip_dir,
        extra != NULL ? extra : "");
    return ip_write_file("suspect.xml", text);
}

int ip_write_limits(const char *text)
{
    return ip_write_file("limits.xml", text != NULL ? text : IP_LIMITS);
}

suspect_guard_t *ip_open(bool write, int reload)
{
    char path[TEST_PATH_MAX], msg[600];
    suspect_guard_opts_t o = {reload};
    suspect_guard_t *g = NULL;
    suspect_err_t err;

    if (write) {
        CU_ASSERT_FATAL(ip_write_limits(NULL) == 0);
        CU_ASSERT_FATAL(ip_write_conf(NULL, NULL, NULL) == 0);
    }
    suspect_err_clear(&err);
    if (suspect_guard_open(ip_path(path, "suspect.xml"), &o, &g, &err) !=
        SUSPECT_OK) {
        suspect_err_format(&err, msg, sizeof(msg));
        fprintf(stderr, "inproc: open: %s\n", msg);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    return g;
}

const char *const *ip_vars(ip_vars_t *v, const char *op, const char *cookie,
                           const char *accept, long body_len,
                           const char *const *extra)
{
    size_t n = 0, k = 0;

    memset(v, 0, sizeof(*v));
    v->list[n++] = "REQUEST_METHOD=POST";
    v->list[n++] = "SCRIPT_NAME=/app";
    v->list[n++] = "DOCUMENT_ROOT=/srv/app";
    v->list[n++] = "REMOTE_ADDR=192.0.2.7";
    snprintf(v->store[k], sizeof(v->store[k]), "REQUEST_URI=/app?op=%s", op);
    v->list[n++] = v->store[k++];
    snprintf(v->store[k], sizeof(v->store[k]), "QUERY_STRING=op=%s", op);
    v->list[n++] = v->store[k++];
    if (cookie != NULL) {
        snprintf(v->store[k], sizeof(v->store[k]), "HTTP_COOKIE=%s", cookie);
        v->list[n++] = v->store[k++];
    }
    if (accept != NULL) {
        snprintf(v->store[k], sizeof(v->store[k]), "HTTP_ACCEPT=%s", accept);
        v->list[n++] = v->store[k++];
    }
    if (body_len >= 0) {
        v->list[n++] = "CONTENT_TYPE=application/x-www-form-urlencoded";
        snprintf(v->store[k], sizeof(v->store[k]), "CONTENT_LENGTH=%ld",
                 body_len);
        v->list[n++] = v->store[k++];
    }
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 31; i++) {
        v->list[n++] = extra[i];
    }
    v->list[n] = NULL;
    return v->list;
}

ssize_t ip_body_read(void *arg, void *buf, size_t n)
{
    ip_body_t *b = arg;
    size_t left = b->len - b->off;

    if (b->chunk > 0 && n > b->chunk) {
        n = b->chunk;
    }
    n = n < left ? n : left;
    memcpy(buf, b->data + b->off, n);
    b->off += n;
    b->reads += n > 0;
    return (ssize_t)n;
}

suspect_guard_req_t *ip_decide(suspect_guard_t *g, const char *const *vars,
                               ip_body_t *body)
{
    suspect_guard_input_t in = {0};
    suspect_guard_req_t *r = NULL;

    in.envp = vars;
    in.read = body != NULL ? ip_body_read : NULL;
    in.read_arg = body;
    CU_ASSERT_EQUAL_FATAL(suspect_guard_decide(g, &in, &r, NULL), SUSPECT_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    return r;
}

suspect_guard_verdict_t ip_verdict(suspect_guard_t *g, const char *op,
                                   const char *cookie)
{
    ip_vars_t v;
    suspect_guard_req_t *r =
        ip_decide(g, ip_vars(&v, op, cookie, NULL, -1, NULL), NULL);
    suspect_guard_verdict_t out = suspect_guard_req_verdict(r);

    suspect_guard_req_free(r);
    return out;
}

/* The lines logged (the suite's log callback, on any thread). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_text;
static size_t log_len;

void ip_log_line(void *arg, int level, const char *msg)
{
    size_t n = strlen(msg);
    char *p;

    (void)arg;
    (void)level;
    pthread_mutex_lock(&log_lock);
    p = realloc(log_text, log_len + n + 2);
    if (p != NULL) {
        memcpy(p + log_len, msg, n);
        p[log_len + n] = '\n';
        p[log_len + n + 1] = '\0';
        log_text = p;
        log_len += n + 1;
    }
    pthread_mutex_unlock(&log_lock);
}

char *ip_log_take(void)
{
    char *t;

    pthread_mutex_lock(&log_lock);
    t = log_text != NULL ? log_text : strdup("");
    log_text = NULL;
    log_len = 0;
    pthread_mutex_unlock(&log_lock);
    return t;
}
