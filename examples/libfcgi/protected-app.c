/*
 * protected-app.c - a legacy libfcgi application that protects itself
 * in-process: the decision suspect-fcgi makes, made inside its own
 * FCGX_Accept_r loop, with the same suspect.xml and limits file and the
 * same 429s, and no daemon in between.
 *
 *   protected-app /etc/suspect/suspect.xml /run/app/fcgi.sock
 *
 * At start it loads suspect.xml (its routes, identities and response
 * settings), the limits file it names and the store of its <Store>
 * (mw_setup_load, mw_store_new: what suspect-fcgi itself runs on).  Then,
 * per request, the CGI variables libfcgi received become an mw_req_t
 * whose body reads go through FCGX_GetStr and whose output goes through
 * FCGX_PutStr, and mw_guard_decide() says whether the request may run:
 * a denial is answered with mw_guard_respond() (the 429 with Retry-After,
 * RateLimit and the body Accept asks for) and the application's own code
 * never runs; anything else goes to handle(), the application.
 *
 * Two rules for an application that adopts this:
 *  - read the body through mw_req_read(), never FCGX_GetStr() directly: a
 *    form: identity has the guard read the first part of the body, and
 *    mw_req_read() returns those bytes first;
 *  - decide before anything with a side effect, on every entry point:
 *    what is not decided is not counted.
 * Unlike suspect-fcgi it does not reload the files on change (restart
 * it), and it serves one request at a time (libfcgi's classic loop; give
 * nginx no fastcgi_keep_conn, or a kept idle connection holds the loop).
 * FCGX_OpenSocket is libfcgi's: IPv4 or unix only, and it exit()s when it
 * cannot bind, which is fine for an application but not for the daemon.
 */
#include <errno.h>
#include <fastcgi.h>
#include <fcgiapp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "guard/guard.h"
#include "request/request.h"
#include "setup/setup.h"
#include "setup/store.h"

/* A request of libfcgi seen as an mw_req_t. */
typedef struct fcgx_req {
    mw_req_t req; /* first: an fcgx_req_t * is an mw_req_t * */
    FCGX_Request *fr;
    mw_param_t *params;
} fcgx_req_t;

static ssize_t fx_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    FCGX_Stream *in = ((fcgx_req_t *)req)->fr->in;
    int got;

    (void)wait; /* libfcgi's reads always wait */
    got = FCGX_GetStr(buf, n > 65536 ? 65536 : (int)n, in);
    if (got > 0) {
        return got;
    }
    return FCGX_GetError(in) != 0 ? -EIO : 0;
}

static int fx_read_fd(mw_req_t *req)
{
    (void)req;
    return -1;
}

static int fx_write(mw_req_t *req, const void *buf, size_t n)
{
    FCGX_Stream *out = ((fcgx_req_t *)req)->fr->out;

    return FCGX_PutStr(buf, (int)n, out) == (int)n ? 0 : -EPIPE;
}

static int fx_flush(mw_req_t *req)
{
    return FCGX_FFlush(((fcgx_req_t *)req)->fr->out) == 0 ? 0 : -EPIPE;
}

static const mw_req_ops_t fx_ops = {fx_read, fx_read_fd, fx_write, fx_flush};

/* Sets x up over fr: its "NAME=value" variables as parameters.  0, or -1
 * when out of memory. */
static int fx_init(fcgx_req_t *x, FCGX_Request *fr)
{
    size_t n = 0;

    memset(x, 0, sizeof(*x));
    while (fr->envp[n] != NULL) {
        n++;
    }
    x->params = calloc(n + 1, sizeof(*x->params));
    if (x->params == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *v = fr->envp[i], *eq = strchr(v, '=');
        mw_param_t *p = &x->params[i];

        p->name = v;
        p->name_len = eq != NULL ? (size_t)(eq - v) : strlen(v);
        p->value = eq != NULL ? eq + 1 : "";
        p->value_len = strlen(p->value);
    }
    x->fr = fr;
    x->req.ops = &fx_ops;
    x->req.role =
        fr->role == FCGI_AUTHORIZER ? MW_ROLE_AUTHORIZER : MW_ROLE_RESPONDER;
    x->req.params = x->params;
    x->req.nparams = n;
    return 0;
}

static void fx_free(fcgx_req_t *x)
{
    mw_req_release(&x->req);
    free(x->params);
}

/* ---- the application -------------------------------------------------- */

/* The legacy application's own code: here it answers "ok OP" (op from the
 * query string) and the length of the body it read. */
static void handle(fcgx_req_t *x)
{
    const char *q = mw_req_param(&x->req, "QUERY_STRING", NULL);
    const char *op = q != NULL ? strstr(q, "op=") : NULL;
    size_t body = 0, oplen = 0;
    char buf[8192];
    ssize_t got;

    while ((got = mw_req_read(&x->req, buf, sizeof(buf), true)) > 0) {
        body += (size_t)got;
    }
    if (op != NULL && (op == q || op[-1] == '&')) {
        op += 3;
        oplen = strcspn(op, "&");
    }
    fprintf(stderr, "protected-app: performed %s %s\n",
            FCGX_GetParam("REQUEST_METHOD", x->fr->envp),
            FCGX_GetParam("REQUEST_URI", x->fr->envp));
    FCGX_FPrintF(x->fr->out,
                 "Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                 "ok %.*s (%lu bytes)\n",
                 oplen > 0 ? (int)oplen : 5, oplen > 0 ? op : "index",
                 (unsigned long)body);
}

/* ---- the accept loop ---------------------------------------------------- */

/* Decides x, then answers the denial or runs the application. */
static void serve(mw_setup_t *s, fcgx_req_t *x)
{
    mw_verdict_t v;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (mw_guard_decide(s->guard, s->limits, s->store, &x->req, wall_ms(), &v,
                        &err) != SUSPECT_OK) {
        /* the body could not be read for a form: identity */
        fprintf(stderr, "protected-app: %s\n", err.text);
        FCGX_FPrintF(x->fr->out, "Status: 400 Bad Request\r\n\r\n");
        return;
    }
    if (v.kind == MW_VERDICT_DENY || v.kind == MW_VERDICT_REJECT ||
        v.kind == MW_VERDICT_UNAVAILABLE) {
        fprintf(stderr, "protected-app: %d %s (%s)\n", v.status,
                v.route != NULL ? v.route->action : "-", v.why);
        mw_guard_respond(s->guard, &x->req, &v);
        return;
    }
    handle(x);
}

int main(int argc, char **argv)
{
    mw_setup_t s = {0};
    suspect_err_t err;
    FCGX_Request fr;
    char msg[600];
    int fd;

    if (argc != 3) {
        fprintf(stderr, "usage: protected-app SUSPECT_XML SOCKET\n");
        return 2;
    }
    suspect_err_clear(&err);
    if (mw_setup_load(&s, argv[1], &err) != SUSPECT_OK ||
        mw_store_new(s.conf, &s.store, &err) != SUSPECT_OK) {
        suspect_err_format(&err, msg, sizeof(msg));
        fprintf(stderr, "protected-app: %s\n", msg);
        mw_setup_release(&s);
        return 1;
    }
    if (FCGX_Init() != 0 || (fd = FCGX_OpenSocket(argv[2], 64)) < 0) {
        fprintf(stderr, "protected-app: cannot listen on %s\n", argv[2]);
        mw_setup_release(&s);
        return 1;
    }
    FCGX_InitRequest(&fr, fd, 0);
    while (FCGX_Accept_r(&fr) == 0) {
        fcgx_req_t x;

        if (fx_init(&x, &fr) == 0) {
            serve(&s, &x);
            fx_free(&x);
        }
        FCGX_Finish_r(&fr);
    }
    mw_setup_release(&s);
    return 0;
}
