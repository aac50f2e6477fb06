/*
 * test_inproc.c - suite "inproc": the in-process guard's API
 * (middleware/inproc/suspect_guard.h), on real files in a temp dir and the
 * memory store.
 *
 * Checked: which suspect.xml it takes (forward mode without <Cgi>) and
 * that a bad pair does not open; the four verdicts; that the response it
 * hands back is, byte for byte, what suspect-fcgi's handler writes for
 * the same request on the same files (a lock's denial, as JSON and as
 * HTML, and a 400); that the body a form: identity made it read comes back
 * whole and in order; that a variable repeated with another value is
 * refused when an identity reads it; that a route counting by the
 * response counts failures, not successes, and counts an attempt never
 * settled.  Reloads and threads: test_inproc_reload.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "daemon/handler.h"
#include "daemon/runtime.h"
#include "helpers/fakereq.h"
#include "helpers/util.h"
#include "inproc_test.h"
#include "log/log.h"
#include "suites.h"

/* ---- the suite ----------------------------------------------------------- */

static int suite_init(void)
{
    suspect_guard_set_log(ip_log_line, NULL, SUSPECT_GUARD_LOG_DEBUG);
    return 0;
}

static int suite_clean(void)
{
    /* The log is the process's: back to stderr for the suites after. */
    mw_log_sink(NULL, NULL);
    mw_log_init("suspect", MW_LOG_NOTICE);
    free(ip_log_take());
    return 0;
}

static void test_setup(void)
{
    ip_dir = test_mkdtemp();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ip_dir);
}

static void test_teardown(void)
{
    test_rmtree(ip_dir);
    free(ip_dir);
    ip_dir = NULL;
    free(ip_log_take());
}

/* ---- opening ------------------------------------------------------------- */

/* What suspect_guard_open() says of ip_dir/suspect.xml: "" when it
 * opened, else its error (the caller frees). */
static char *open_error(void)
{
    char path[TEST_PATH_MAX], msg[600];
    suspect_guard_t *g = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (suspect_guard_open(ip_path(path, "suspect.xml"), NULL, &g, &err) ==
        SUSPECT_OK) {
        suspect_guard_close(g);
        return strdup("");
    }
    CU_ASSERT_PTR_NULL(g);
    suspect_err_format(&err, msg, sizeof(msg));
    return strdup(msg);
}

static bool holds(const char *text, const char *part)
{
    if (strstr(text, part) != NULL) {
        return true;
    }
    fprintf(stderr, "inproc: \"%s\" not in \"%s\"\n", part, text);
    return false;
}

static void test_open(void)
{
    static const char cgi[] = "<Suspect><Limits path='limits.xml'/>"
                              "<Cgi root='/srv/app'/></Suspect>";
    static const char authorizer[] = IP_AUTHORIZER_XML;
    char path[TEST_PATH_MAX], *e;

    CU_ASSERT_FATAL(ip_write_limits(NULL) == 0);
    CU_ASSERT_FATAL(ip_write_conf(NULL, NULL, NULL) == 0);
    e = open_error();
    CU_ASSERT_STRING_EQUAL(e, "");
    free(e);
    /* the application runs after the decision: forward mode only */
    CU_ASSERT_FATAL(test_write_file(ip_path(path, "suspect.xml"), authorizer,
                                    sizeof(authorizer) - 1) == 0);
    e = open_error();
    CU_ASSERT(holds(e, "suspect.xml:1: Server: deciding in-process"));
    CU_ASSERT(holds(e, "mode must be forward"));
    free(e);
    /* a CGI program would resolve the routes' paths: refused (and one
     * <Cgi> with an <Upstream> is refused by the loader already) */
    CU_ASSERT_FATAL(test_write_file(ip_path(path, "suspect.xml"), cgi,
                                    sizeof(cgi) - 1) == 0);
    e = open_error();
    CU_ASSERT(holds(e, "Cgi: deciding in-process, no CGI program runs"));
    free(e);
    /* a route whose action the limits file lacks: refused, as at start of
     * suspect-fcgi */
    CU_ASSERT_FATAL(ip_write_conf(NULL, NULL, NULL) == 0);
    CU_ASSERT_FATAL(ip_write_limits("<ArrayOfSuspectUsageSettingEntity>"
                                    "<SuspectUsageSettingEntity Action='Bank' "
                                    "LimitCount='2' LimitDuration='120'/>"
                                    "</ArrayOfSuspectUsageSettingEntity>") ==
                    0);
    e = open_error();
    CU_ASSERT(holds(e, "'Lock' is not in limits.xml"));
    free(e);
    CU_ASSERT_FATAL(ip_write_limits("<Array") == 0);
    e = open_error();
    CU_ASSERT(holds(e, "limits.xml:1"));
    free(e);
    CU_ASSERT_EQUAL(suspect_guard_open(NULL, NULL, NULL, NULL),
                    SUSPECT_E_INVAL);
    suspect_guard_close(NULL);
}

/* ---- verdicts ------------------------------------------------------------ */

static void test_verdicts(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    suspect_guard_response_t res;
    suspect_guard_req_t *r;
    ip_vars_t v;
    const char *const get[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/",
                               "SCRIPT_NAME=/", NULL};

    /* no route */
    r = ip_decide(g, get, NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_PASS);
    CU_ASSERT_EQUAL(suspect_guard_req_status(r), 0);
    CU_ASSERT_PTR_NULL(suspect_guard_req_action(r));
    CU_ASSERT_EQUAL(suspect_guard_req_response(r, &res, NULL), SUSPECT_E_INVAL);
    suspect_guard_req_free(r);
    /* two allowed, the third denied */
    for (int i = 0; i < 2; i++) {
        r = ip_decide(g, ip_vars(&v, "bank", "member=m1", NULL, -1, NULL),
                      NULL);
        CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
        CU_ASSERT_STRING_EQUAL(suspect_guard_req_action(r) ?: "", "Bank");
        CU_ASSERT_PTR_NULL(suspect_guard_req_header(r));
        CU_ASSERT(!suspect_guard_req_holds(r));
        suspect_guard_req_free(r);
    }
    r = ip_decide(
        g, ip_vars(&v, "bank", "member=m1", "application/json", -1, NULL),
        NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_DENY);
    CU_ASSERT_EQUAL(suspect_guard_req_status(r), 429);
    CU_ASSERT_STRING_EQUAL(suspect_guard_req_why(r), "over the limit");
    CU_ASSERT_EQUAL_FATAL(suspect_guard_req_response(r, &res, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 429);
    CU_ASSERT_STRING_EQUAL(res.reason, "Too Many Requests");
    CU_ASSERT(strncmp(res.cgi, "Status: 429 Too Many Requests\r\n", 31) == 0);
    CU_ASSERT(res.headers == res.cgi + 31);
    CU_ASSERT(memmem(res.headers, res.headers_len, "Retry-After: ", 13) !=
              NULL);
    CU_ASSERT(memmem(res.headers, res.headers_len,
                     "Content-Type: application/json\r\n", 32) != NULL);
    CU_ASSERT(res.headers_len >= 2 &&
              memcmp(res.headers + res.headers_len - 2, "\r\n", 2) == 0);
    CU_ASSERT(res.body == res.headers + res.headers_len + 2);
    CU_ASSERT(res.body + res.body_len == res.cgi + res.cgi_len);
    CU_ASSERT(res.body_len > 0 && res.body[0] == '{');
    suspect_guard_req_free(r);
    /* another member is counted apart */
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m2"), SUSPECT_GUARD_ALLOW);
    /* a missing identity on a route that rejects it: 400 */
    r = ip_decide(g, ip_vars(&v, "acct", NULL, NULL, -1, NULL), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_REFUSE);
    CU_ASSERT_EQUAL(suspect_guard_req_status(r), 400);
    CU_ASSERT_EQUAL_FATAL(suspect_guard_req_response(r, &res, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 400);
    suspect_guard_req_free(r);
    /* bad arguments */
    CU_ASSERT_EQUAL(suspect_guard_decide(g, NULL, &r, NULL), SUSPECT_E_INVAL);
    CU_ASSERT_PTR_NULL(r);
    suspect_guard_req_free(NULL);
    suspect_guard_close(g);
}

/* A shadow route counts and would refuse, but lets the request run with a
 * header line for its response. */
static void test_shadow(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    suspect_guard_req_t *r;
    ip_vars_t v;

    CU_ASSERT_EQUAL(ip_verdict(g, "peek", "member=m1"), SUSPECT_GUARD_ALLOW);
    r = ip_decide(g, ip_vars(&v, "peek", "member=m1", NULL, -1, NULL), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_STRING_EQUAL(suspect_guard_req_header(r) ?: "",
                           "X-Suspect-Shadow: would-deny; action=Peek; "
                           "status=429\r\n");
    suspect_guard_req_free(r);
    suspect_guard_close(g);
}

/* ---- the same bytes as suspect-fcgi -------------------------------------- */

/* What suspect-fcgi's handler writes for vars (body NULL: none) on the
 * runtime rt (the caller frees). */
static char *daemon_answer(mw_runtime_t *rt, const char *const *vars,
                           const char *body)
{
    fakereq_t f;
    char *out;

    fakereq_init(&f, vars, body, body != NULL ? strlen(body) : 0);
    mw_handler_request(&f.req, rt);
    out = strndup(f.out != NULL ? f.out : "", f.out_len);
    fakereq_free(&f);
    return out;
}

/* What the guard hands back for vars and body, as CGI bytes (""
 * when the request may run; the caller frees). */
static char *guard_answer(suspect_guard_t *g, const char *const *vars,
                          const char *body)
{
    ip_body_t b = {body, body != NULL ? strlen(body) : 0, 0, 0, 0};
    suspect_guard_req_t *r = ip_decide(g, vars, &b);
    suspect_guard_response_t res;
    char *out;

    if (suspect_guard_req_verdict(r) < SUSPECT_GUARD_DENY) {
        out = strdup("");
    } else {
        CU_ASSERT_EQUAL_FATAL(suspect_guard_req_response(r, &res, NULL),
                              SUSPECT_OK);
        out = strndup(res.cgi, res.cgi_len);
    }
    suspect_guard_req_free(r);
    return out;
}

/* Masks every epoch time in milliseconds (a run of exactly 13 digits) in
 * s: the daemon and the guard each lock at their own millisecond, and on
 * a slow machine those differ; the masked bytes (Content-Length included)
 * must not. */
static void mask_epoch_ms(char *s)
{
    for (char *p = s; *p != '\0';) {
        size_t n = strspn(p, "0123456789");

        if (n == 13) {
            memset(p, 'T', n);
        }
        p += n > 0 ? n : 1;
    }
}

static void test_same_bytes(void)
{
    static const char *const accepts[] = {"application/json", "text/html",
                                          NULL};
    char path[TEST_PATH_MAX];
    mw_runtime_t *rt = NULL;
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    ip_vars_t v;

    CU_ASSERT_EQUAL_FATAL(
        mw_runtime_new(ip_path(path, "suspect.xml"), NULL, &rt, NULL),
        SUSPECT_OK);
    /* The lock's denial (Retry-After is the lock's 600 s whenever it is
     * made), by Accept: JSON, HTML, and none. */
    for (size_t a = 0; a < 3; a++) {
        char user[64], cookie[64];
        const char *const *vars;
        char *want, *got;

        snprintf(user, sizeof(user), "user=u%zu&password=x", a);
        for (int i = 0; i < 3; i++) {
            vars = ip_vars(&v, "login", NULL, accepts[a], (long)strlen(user),
                           NULL);
            want = daemon_answer(rt, vars, user);
            got = guard_answer(g, vars, user);
            if (i < 2) {
                CU_ASSERT_STRING_EQUAL(got, "");
                CU_ASSERT(strncmp(want, "Status: 502", 11) == 0);
            } else {
                CU_ASSERT(strncmp(got, "Status: 429", 11) == 0);
                CU_ASSERT(strstr(got, "Retry-After: 600\r\n") != NULL);
                mask_epoch_ms(got);
                mask_epoch_ms(want);
                CU_ASSERT_STRING_EQUAL(got, want);
            }
            free(want);
            free(got);
        }
        /* a 400: the route rejects a request without its identity */
        snprintf(cookie, sizeof(cookie), "member=x%zu", a);
        vars = ip_vars(&v, "acct", cookie, accepts[a], -1, NULL);
        want = daemon_answer(rt, vars, NULL);
        got = guard_answer(g, vars, NULL);
        CU_ASSERT(strncmp(got, "Status: 400", 11) == 0);
        CU_ASSERT_STRING_EQUAL(got, want);
        free(want);
        free(got);
    }
    mw_runtime_free(rt);
    suspect_guard_close(g);
}

/* ---- the body ------------------------------------------------------------ */

/* An XML-RPC multicall decided in-process: each call one attempt for its
 * account (Lock: 2 in 600 s, then locked), the body handed back whole. */
static void test_multicall(void)
{
#define XR_CALL(u)                                                             \
    "<value><struct><member><name>methodName</name><value>"                    \
    "wp.getUsersBlogs</value></member><member><name>params</name><value>"      \
    "<array><data><value>" u "</value><value>pw</value></data></array>"        \
    "</value></member></struct></value>"
    static const char head[] =
        "<methodCall><methodName>system.multicall</methodName><params>"
        "<param><value><array><data>";
    static const char tail[] = "</data></array></value></param></params>"
                               "</methodCall>";
    char body[2048], clen[48], got[2048];
    const char *vars[] = {"REQUEST_METHOD=POST",
                          "SCRIPT_NAME=/xmlrpc.php",
                          "DOCUMENT_ROOT=/srv/app",
                          "REMOTE_ADDR=192.0.2.7",
                          "REQUEST_URI=/xmlrpc.php",
                          "CONTENT_TYPE=text/xml",
                          clen,
                          NULL};
    suspect_guard_t *g;
    suspect_guard_req_t *r;
    ip_body_t b;
    size_t len = 0;
    ssize_t n;

    CU_ASSERT_FATAL(ip_write_limits(NULL) == 0);
    CU_ASSERT_FATAL(
        ip_write_conf(NULL, NULL,
                      "<Route action='Lock' path='/xmlrpc.php'>"
                      "<Identity type='LoginId' "
                      "from='xmlrpc:wp.getUsersBlogs:1'/></Route>") == 0);
    g = ip_open(false, SUSPECT_GUARD_RELOAD_MANUAL);
    snprintf(body, sizeof(body), "%s%s%s%s", head, XR_CALL("alice"),
             XR_CALL("bob"), tail);
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    b = (ip_body_t){body, strlen(body), 0, 100, 0};
    r = ip_decide(g, vars, &b);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    while ((n = suspect_guard_req_read(r, got + len, 100)) > 0) {
        len += (size_t)n;
    }
    CU_ASSERT(len == strlen(body) && memcmp(got, body, len) == 0);
    suspect_guard_req_free(r);
    /* alice twice more: her third attempt in one request denies it */
    snprintf(body, sizeof(body), "%s%s%s%s", head, XR_CALL("alice"),
             XR_CALL("alice"), tail);
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    b = (ip_body_t){body, strlen(body), 0, 0, 0};
    r = ip_decide(g, vars, &b);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_DENY);
    suspect_guard_req_free(r);
    /* bob's second is still his own */
    snprintf(body, sizeof(body), "%s%s%s", head, XR_CALL("bob"), tail);
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    b = (ip_body_t){body, strlen(body), 0, 0, 0};
    r = ip_decide(g, vars, &b);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    suspect_guard_req_free(r);
    suspect_guard_close(g);
#undef XR_CALL
}

/* A form: identity reads the start of the body: the application gets it
 * all, in order, whether it reads through the guard or takes the
 * prefetched bytes itself. */
static void test_body(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    char body[3000], got[4000];
    const char *pre;
    size_t len = 0, pre_len;
    suspect_guard_req_t *r;
    ssize_t n;
    ip_vars_t v;
    ip_body_t b;

    memset(body, 'z', sizeof(body));
    memcpy(body, "user=bob&filler=", 16);
    b = (ip_body_t){body, sizeof(body), 0, 700, 0};
    r = ip_decide(g, ip_vars(&v, "login", NULL, NULL, (long)sizeof(body), NULL),
                  &b);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(b.off, sizeof(body)); /* the whole form was read */
    suspect_guard_req_body(r, &pre, &pre_len);
    CU_ASSERT_EQUAL(pre_len, sizeof(body));
    CU_ASSERT(pre != NULL && memcmp(pre, body, sizeof(body)) == 0);
    while ((n = suspect_guard_req_read(r, got + len, 100)) > 0) {
        len += (size_t)n;
    }
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(len, sizeof(body));
    CU_ASSERT(memcmp(got, body, sizeof(body)) == 0);
    suspect_guard_req_body(r, &pre, &pre_len);
    CU_ASSERT_EQUAL(pre_len, 0);
    suspect_guard_req_free(r);
    /* No form identity: nothing is read ahead; reads go straight through. */
    b = (ip_body_t){body, sizeof(body), 0, 0, 0};
    r = ip_decide(
        g, ip_vars(&v, "bank", "member=m9", NULL, (long)sizeof(body), NULL),
        &b);
    CU_ASSERT_EQUAL(b.off, 0);
    suspect_guard_req_body(r, &pre, &pre_len);
    CU_ASSERT_EQUAL(pre_len, 0);
    CU_ASSERT_EQUAL(suspect_guard_req_read(r, got, sizeof(got)),
                    (ssize_t)sizeof(body));
    suspect_guard_req_free(r);
    /* The same user is counted whatever the body's chunks: the third is
     * the lock. */
    b = (ip_body_t){body, sizeof(body), 0, 1, 0};
    r = ip_decide(g, ip_vars(&v, "login", NULL, NULL, (long)sizeof(body), NULL),
                  &b);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    suspect_guard_req_free(r);
    b = (ip_body_t){body, sizeof(body), 0, 0, 0};
    r = ip_decide(g, ip_vars(&v, "login", NULL, NULL, (long)sizeof(body), NULL),
                  &b);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_DENY);
    suspect_guard_req_free(r);
    suspect_guard_close(g);
}

/* A body that cannot be read is refused with suspect-fcgi's 400. */
static ssize_t broken_read(void *arg, void *buf, size_t n)
{
    (void)arg;
    (void)buf;
    (void)n;
    return -1;
}

static void test_body_error(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    suspect_guard_input_t in = {0};
    suspect_guard_response_t res;
    suspect_guard_req_t *r = NULL;
    ip_vars_t v;

    in.envp = ip_vars(&v, "login", NULL, NULL, 100, NULL);
    in.read = broken_read;
    CU_ASSERT_EQUAL_FATAL(suspect_guard_decide(g, &in, &r, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_REFUSE);
    CU_ASSERT_EQUAL(suspect_guard_req_status(r), 400);
    CU_ASSERT_EQUAL(suspect_guard_req_response(r, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 400);
    suspect_guard_req_free(r);
    suspect_guard_close(g);
}

/* ---- repeated variables -------------------------------------------------- */

/* An acct request with 200 filler headers, X-Account-Id a1 among the
 * first of them and last among them; the strings live in m. */
typedef struct many {
    char fill[200][32];
    const char *list[210];
} many_t;

static const char *const *many_vars(many_t *m, const char *last)
{
    static const char *const head[] = {
        "REQUEST_METHOD=POST", "SCRIPT_NAME=/app", "REQUEST_URI=/app?op=acct",
        "QUERY_STRING=op=acct", "HTTP_X_ACCOUNT_ID=a1"};
    size_t n = 0;

    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
        m->list[n++] = head[i];
    }
    for (int i = 0; i < 200; i++) {
        snprintf(m->fill[i], sizeof(m->fill[i]), "HTTP_X_FILL_%d=%d", i, i);
        m->list[n++] = m->fill[i];
    }
    m->list[n++] = last;
    m->list[n] = NULL;
    return m->list;
}

/* nginx 1.22 passes a header sent twice as two variables; the application
 * may read either, so an identity read from one with two values is
 * refused; the same value twice is harmless. */
static void test_repeats(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    const char *const two[] = {"HTTP_X_ACCOUNT_ID=victim",
                               "HTTP_X_ACCOUNT_ID=other", NULL};
    const char *const same[] = {"HTTP_X_ACCOUNT_ID=a1", "HTTP_X_ACCOUNT_ID=a1",
                                NULL};
    const char *const users[] = {"REMOTE_USER=u1", "REMOTE_USER=u2", NULL};
    const char *const cookies[] = {"HTTP_COOKIE=member=m5", NULL};
    const char *const unrelated[] = {"HTTP_X_OTHER=1", "HTTP_X_OTHER=2", NULL};
    suspect_guard_req_t *r;
    many_t mv;
    ip_vars_t v;

    r = ip_decide(g, ip_vars(&v, "acct", NULL, NULL, -1, two), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_REFUSE);
    CU_ASSERT_EQUAL(suspect_guard_req_status(r), 400);
    suspect_guard_req_free(r);
    r = ip_decide(g, ip_vars(&v, "acct", NULL, NULL, -1, same), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    suspect_guard_req_free(r);
    r = ip_decide(g, ip_vars(&v, "env", NULL, NULL, -1, users), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_REFUSE);
    suspect_guard_req_free(r);
    /* a second Cookie header with another member */
    r = ip_decide(g, ip_vars(&v, "bank", "member=m4", NULL, -1, cookies), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_REFUSE);
    suspect_guard_req_free(r);
    /* many variables (the table gives way to a sorted index): the same */
    r = ip_decide(g, many_vars(&mv, "HTTP_X_ACCOUNT_ID=a2"), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_REFUSE);
    suspect_guard_req_free(r);
    r = ip_decide(g, many_vars(&mv, "HTTP_X_ACCOUNT_ID=a1"), NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    suspect_guard_req_free(r);
    /* a repeat no identity reads changes nothing */
    r = ip_decide(g, ip_vars(&v, "bank", "member=m4", NULL, -1, unrelated),
                  NULL);
    CU_ASSERT_EQUAL(suspect_guard_req_verdict(r), SUSPECT_GUARD_ALLOW);
    suspect_guard_req_free(r);
    suspect_guard_close(g);
}

/* ---- a route that counts by the response --------------------------------- */

/* One sign-in of user with the application's response resp (NULL: never
 * settled, freed as it is); its verdict. */
static suspect_guard_verdict_t sign_in(suspect_guard_t *g, const char *user,
                                       const char *resp, bool complete)
{
    char body[64];
    ip_body_t b;
    ip_vars_t v;
    suspect_guard_req_t *r;
    suspect_guard_verdict_t out;

    snprintf(body, sizeof(body), "user=%s&password=x", user);
    b = (ip_body_t){body, strlen(body), 0, 0, 0};
    r = ip_decide(g, ip_vars(&v, "signin", NULL, NULL, (long)b.len, NULL), &b);
    out = suspect_guard_req_verdict(r);
    if (out == SUSPECT_GUARD_ALLOW) {
        CU_ASSERT(suspect_guard_req_holds(r));
    }
    if (resp != NULL) {
        /* byte by byte: the watcher takes any split */
        for (size_t i = 0; resp[i] != '\0'; i++) {
            suspect_guard_req_observe(r, resp + i, 1);
        }
        CU_ASSERT_EQUAL(suspect_guard_req_settle(r, complete, NULL),
                        SUSPECT_OK);
        CU_ASSERT(!suspect_guard_req_holds(r));
        CU_ASSERT_EQUAL(suspect_guard_req_settle(r, complete, NULL),
                        SUSPECT_OK);
    }
    suspect_guard_req_free(r);
    return out;
}

static void test_settle(void)
{
    static const char ok[] = "Content-Type: text/plain\r\n\r\nsigned in\n";
    static const char bad[] = "Status: 401 Unauthorized\r\n\r\nno\n";
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);

    /* successes never count */
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(sign_in(g, "carol", ok, true), SUSPECT_GUARD_ALLOW);
    }
    /* failures do: three, then the lock */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(sign_in(g, "carol", bad, true), SUSPECT_GUARD_ALLOW);
    }
    CU_ASSERT_EQUAL(sign_in(g, "carol", ok, true), SUSPECT_GUARD_DENY);
    /* a success cut short counts, a request never settled counts, a
     * success does not: the third count is the failure after them */
    CU_ASSERT_EQUAL(sign_in(g, "dave", ok, false), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(sign_in(g, "dave", NULL, true), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(sign_in(g, "dave", ok, true), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(sign_in(g, "dave", bad, true), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(sign_in(g, "dave", ok, true), SUSPECT_GUARD_DENY);
    suspect_guard_close(g);
}

/* ---- out of memory ------------------------------------------------------- */

/* Every allocation of a decision (a denied one, its response built, and a
 * held one) fails in turn: the call fails cleanly (SUSPECT_E_NOMEM, no
 * request) or gives a request that frees cleanly (the sanitizer build
 * watches for leaks); nothing crashes. */
static void test_out_of_memory(void)
{
    static const char body[] = "user=oom&password=x";
    static const char wrong[] = "Status: 401 No\r\n\r\n";
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    int failed = 0, made = 0;

    for (long n = 1; n <= 60; n++) {
        suspect_guard_input_t in = {0};
        suspect_guard_response_t res;
        suspect_guard_req_t *r = NULL;
        ip_body_t b = {body, sizeof(body) - 1, 0, 0, 0};
        ip_vars_t v;
        suspect_rc_t rc;

        in.envp = ip_vars(&v, n % 2 ? "signin" : "bank", "member=oom", NULL,
                          (long)b.len, NULL);
        in.read = ip_body_read;
        in.read_arg = &b;
        suspect_test_fail_alloc_after(n);
        rc = suspect_guard_decide(g, &in, &r, NULL);
        if (rc == SUSPECT_OK) {
            (void)suspect_guard_req_response(r, &res, NULL);
            suspect_guard_req_observe(r, wrong, sizeof(wrong) - 1);
            (void)suspect_guard_req_settle(r, true, NULL);
            made++;
        } else {
            CU_ASSERT_EQUAL(rc, SUSPECT_E_NOMEM);
            CU_ASSERT_PTR_NULL(r);
            failed++;
        }
        suspect_guard_req_free(r);
        suspect_test_fail_alloc_after(-1);
    }
    CU_ASSERT(failed > 0);
    CU_ASSERT(made > 0);
    suspect_guard_close(g);
}

int register_inproc_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"open: forward mode, no <Cgi>, a whole pair", test_open},
        {"verdicts and the response's parts", test_verdicts},
        {"shadow route: the header line", test_shadow},
        {"the same bytes as suspect-fcgi", test_same_bytes},
        {"form identity: the body comes back whole", test_body},
        {"XML-RPC multicall: one attempt per call", test_multicall},
        {"body read error: 400", test_body_error},
        {"repeated variables an identity reads: 400", test_repeats},
        {"counting by the response: observe, settle", test_settle},
        {"out of memory at every allocation", test_out_of_memory},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown(
        "inproc", suite_init, suite_clean, test_setup, test_teardown);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return inproc_register_reload(s);
}
