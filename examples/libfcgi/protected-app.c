/*
 * protected-app.c - a legacy libfcgi application that protects itself
 * in-process: the decision suspect-fcgi makes, made inside its own
 * FCGX_Accept_r loops with libsuspect-guard, the same suspect.xml and
 * limits file, the same 429s, and no daemon in between.
 *
 *   protected-app /etc/suspect/suspect.xml /run/app/fcgi.sock [THREADS]
 *
 * Built with nothing but the installed libraries:
 *   cc protected-app.c $(pkg-config --cflags --libs libsuspect-guard fcgi)
 *
 * At start it opens the guard on suspect.xml (suspect_guard_open(): the
 * routes, the limits file, the store), listens with libfcgi and runs
 * THREADS (default 1) accept loops.  Per request, the guard decides on the
 * CGI variables libfcgi received (FCGX_Request.envp) with a body reader
 * over FCGX_GetStr; a DENY or REFUSE is answered with the bytes the guard
 * hands back (the 429 with Retry-After, RateLimit and the body Accept
 * asks for) and the application's own code never runs; anything else goes
 * to handle(), the application.
 *
 * Three rules for an application that adopts this:
 *  - read the body through suspect_guard_req_read(), never FCGX_GetStr()
 *    directly: a form: identity has the guard read the start of the
 *    body, and those bytes come first;
 *  - decide before anything with a side effect, on every entry point:
 *    what is not decided is not counted;
 *  - when suspect_guard_req_holds(), hand what you write to
 *    suspect_guard_req_observe() and settle at the end: a route that
 *    counts by the response (here, failed sign-ins) learns from it.
 * The files are reloaded on change from within the decisions (once per
 * <Limits reload> interval).  FCGX_OpenSocket is libfcgi's: IPv4 or unix
 * only, and it exit()s when it cannot bind, which is fine for an
 * application but not for the daemon.
 */
#include <fcgiapp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <suspect/suspect_guard.h>

/* One request: libfcgi's, and the guard's decision on it. */
typedef struct call {
    FCGX_Request *fr;
    suspect_guard_req_t *r;
} call_t;

/* The body reader the guard and the application share. */
static ssize_t fcgx_read(void *arg, void *buf, size_t n)
{
    FCGX_Stream *in = ((FCGX_Request *)arg)->in;
    int got = FCGX_GetStr(buf, n > 65536 ? 65536 : (int)n, in);

    if (got > 0) {
        return got;
    }
    return FCGX_GetError(in) != 0 ? -1 : 0;
}

/* Writes the response's bytes, and shows them to the guard when the
 * attempt is held until the response says how it went. */
static void put(call_t *c, const char *s, size_t n)
{
    FCGX_PutStr(s, (int)n, c->fr->out);
    suspect_guard_req_observe(c->r, s, n);
}

static void log_line(void *arg, int level, const char *msg)
{
    (void)arg;
    (void)level;
    fprintf(stderr, "protected-app: %s\n", msg);
}

/* ---- the application -------------------------------------------------- */

/* The value of name in a query string or urlencoded body (not decoded),
 * into out. */
static void field(const char *s, const char *name, char *out, size_t size)
{
    size_t len = strlen(name);

    out[0] = '\0';
    while (s != NULL && *s != '\0') {
        if (strncmp(s, name, len) == 0 && s[len] == '=') {
            size_t v = strcspn(s + len + 1, "&");

            snprintf(out, size, "%.*s", (int)v, s + len + 1);
            return;
        }
        s = strchr(s, '&');
        s = s != NULL ? s + 1 : NULL;
    }
}

/* Whether pass is user's password (the accounts ann and eve, both
 * "right"; any other name, the empty one too, has none). */
static int password_ok(const char *user, const char *pass)
{
    return (strcmp(user, "ann") == 0 || strcmp(user, "eve") == 0) &&
           strcmp(pass, "right") == 0;
}

/* The legacy application's own code: op=signin checks the user's
 * password (right: 200, else 401; it checks whatever the user field
 * holds, even nothing: suspect.xml's route refuses a sign-in without a
 * user, which would not be counted), anything else answers "ok OP" with
 * the length of the body it read. */
static void handle(call_t *c)
{
    const char *q = FCGX_GetParam("QUERY_STRING", c->fr->envp);
    const char *shadow = suspect_guard_req_header(c->r);
    char body[4096], op[64], user[64], pass[64], out[256];
    size_t len = 0;
    ssize_t got;
    int n;

    while (len < sizeof(body) - 1 &&
           (got = suspect_guard_req_read(c->r, body + len,
                                         sizeof(body) - 1 - len)) > 0) {
        len += (size_t)got;
    }
    body[len] = '\0';
    field(q, "op", op, sizeof(op));
    fprintf(stderr, "protected-app: performed %s %s\n",
            FCGX_GetParam("REQUEST_METHOD", c->fr->envp),
            FCGX_GetParam("REQUEST_URI", c->fr->envp));
    if (shadow != NULL) {
        put(c, shadow, strlen(shadow));
    }
    if (strcmp(op, "signin") == 0) {
        field(body, "user", user, sizeof(user));
        field(body, "password", pass, sizeof(pass));
        n = password_ok(user, pass)
                ? snprintf(out, sizeof(out),
                           "Content-Type: text/plain\r\n\r\nsigned in\n")
                : snprintf(out, sizeof(out),
                           "Status: 401 Unauthorized\r\n"
                           "Content-Type: text/plain\r\n\r\nwrong password\n");
    } else {
        n = snprintf(out, sizeof(out),
                     "Content-Type: text/plain\r\n\r\nok %s (%zu bytes)\n",
                     op[0] != '\0' ? op : "index", len);
    }
    put(c, out, (size_t)n);
}

/* ---- the accept loop ---------------------------------------------------- */

/* Decides fr, then answers the denial or runs the application. */
static void serve(suspect_guard_t *g, FCGX_Request *fr)
{
    suspect_guard_input_t in = {0};
    suspect_guard_response_t res;
    call_t c = {fr, NULL};

    in.envp = (const char *const *)fr->envp;
    in.read = fcgx_read;
    in.read_arg = fr;
    if (suspect_guard_decide(g, &in, &c.r, NULL) != SUSPECT_OK) {
        FCGX_FPrintF(fr->out, "Status: 503 Service Unavailable\r\n\r\n");
        return;
    }
    if (suspect_guard_req_verdict(c.r) >= SUSPECT_GUARD_DENY) {
        const char *action = suspect_guard_req_action(c.r);

        fprintf(stderr, "protected-app: %d %s (%s)\n",
                suspect_guard_req_status(c.r), action != NULL ? action : "-",
                suspect_guard_req_why(c.r));
        if (suspect_guard_req_response(c.r, &res, NULL) == SUSPECT_OK) {
            FCGX_PutStr(res.cgi, (int)res.cgi_len, fr->out);
        } else { /* out of memory: refused all the same */
            FCGX_FPrintF(fr->out, "Status: 503 Service Unavailable\r\n\r\n");
        }
    } else {
        handle(&c);
        FCGX_FFlush(fr->out);
        suspect_guard_req_settle(c.r, FCGX_GetError(fr->out) == 0, NULL);
    }
    suspect_guard_req_free(c.r);
}

typedef struct worker {
    suspect_guard_t *g;
    int fd;
} worker_t;

static void *accept_loop(void *arg)
{
    worker_t *w = arg;
    FCGX_Request fr;

    FCGX_InitRequest(&fr, w->fd, 0);
    while (FCGX_Accept_r(&fr) == 0) {
        serve(w->g, &fr);
        FCGX_Finish_r(&fr);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    suspect_guard_t *g = NULL;
    suspect_err_t err;
    pthread_t tid[64];
    worker_t w;
    char msg[600];
    int threads = argc == 4 ? atoi(argv[3]) : 1;

    if (argc < 3 || argc > 4 || threads < 1 || threads > 64) {
        fprintf(stderr,
                "usage: protected-app SUSPECT_XML SOCKET [THREADS 1-64]\n");
        return 2;
    }
    suspect_guard_set_log(log_line, NULL, SUSPECT_GUARD_LOG_NOTICE);
    suspect_err_clear(&err);
    if (suspect_guard_open(argv[1], NULL, &g, &err) != SUSPECT_OK) {
        suspect_err_format(&err, msg, sizeof(msg));
        fprintf(stderr, "protected-app: %s\n", msg);
        return 1;
    }
    if (FCGX_Init() != 0 || (w.fd = FCGX_OpenSocket(argv[2], 64)) < 0) {
        fprintf(stderr, "protected-app: cannot listen on %s\n", argv[2]);
        suspect_guard_close(g);
        return 1;
    }
    w.g = g;
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&tid[i], NULL, accept_loop, &w) != 0) {
            fprintf(stderr, "protected-app: cannot start thread %d\n", i);
            return 1;
        }
    }
    accept_loop(&w);
    suspect_guard_close(g);
    return 0;
}
