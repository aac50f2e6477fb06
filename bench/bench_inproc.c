/*
 * bench_inproc.c - what deciding through libsuspect-guard's API costs
 * against the guard alone (`make bench-inproc`).
 *
 * What: one thread, memory store, the same files (a temp dir:
 * suspect.xml in forward mode with a login route whose identity is a
 * query parameter u, the limits file), the same requests (a realistic set
 * of 24 CGI variables, as nginx's fastcgi_params pass them).  Rows, each
 * against its peer measured in the same run:
 *   guard, allowed    mw_guard_decide() on a request built once: what
 *                     suspect-fcgi does per request, less its I/O (the
 *                     peer);
 *   API, allowed      suspect_guard_decide() on the same variables as an
 *                     envp, then suspect_guard_req_free(): the request
 *                     made from envp (one allocation, its names
 *                     checked for repeats), references taken and
 *                     dropped, the reload poll (a clock read);
 *   guard, denied + 429   mw_guard_decide() and mw_guard_respond() into
 *                     a buffer, one identity over its limit (the peer);
 *   API, denied + 429 suspect_guard_decide() and
 *                     suspect_guard_req_response(): the bytes built and
 *                     split into their parts.
 * Printed: decisions per second and the API's extra time per decision,
 * in nanoseconds and as a share of its peer.
 *
 * How: 4096 user names "userNNNN" for the allowed rows (LimitCount far
 * above the hits), one for the denied rows; each row runs RUN_MS of wall
 * time, best of ROUNDS, the rounds of all rows interleaved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "clock.h"
#include "guard/guard.h"
#include "inproc/suspect_guard.h"
#include "setup/setup.h"
#include "setup/open_store.h"

#define NAMES  4096
#define NVARS  24
#define RUN_MS 100
#define ROUNDS 15

static const char conf_xml[] =
    "<Suspect>\n"
    "  <Server mode='forward'/>\n"
    "  <Limits path='limits.xml'/>\n"
    "  <Store type='memory' maxEntries='100000'/>\n"
    "  <Upstream address='unix:/nonexistent/app.sock'/>\n"
    "  <Route action='Login' path='/login.php'>\n"
    "    <Identity type='LoginId' from='query:u'/>\n"
    "  </Route>\n"
    "  <Route action='Once' path='/once.php'>\n"
    "    <Identity type='LoginId' from='query:u'/>\n"
    "  </Route>\n"
    "</Suspect>\n";

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "<SuspectUsageSettingEntity Action='Login' LimitCount='1000000' "
    "LimitDuration='60'/>\n"
    "<SuspectUsageSettingEntity Action='Once' LimitCount='1' "
    "LimitDuration='3600'/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* One request: its variables as envp, and as the guard's parameters. */
typedef struct breq {
    char vars[NVARS][160];
    const char *envp[NVARS + 1];
    mw_param_t params[NVARS];
} breq_t;

static void build_req(breq_t *b, const char *script, int i)
{
    static const char *const fixed[] = {
        "REQUEST_METHOD=GET",
        "CONTENT_TYPE=",
        "CONTENT_LENGTH=",
        "DOCUMENT_ROOT=/srv/app",
        "SERVER_PROTOCOL=HTTP/1.1",
        "REQUEST_SCHEME=http",
        "GATEWAY_INTERFACE=CGI/1.1",
        "SERVER_SOFTWARE=nginx/1.22.1",
        "REMOTE_ADDR=192.0.2.7",
        "REMOTE_PORT=51234",
        "SERVER_ADDR=127.0.0.1",
        "SERVER_PORT=80",
        "SERVER_NAME=app.example",
        "REDIRECT_STATUS=200",
        "HTTP_HOST=app.example",
        "HTTP_USER_AGENT=Mozilla/5.0 (X11; Linux)",
        "HTTP_ACCEPT=text/html,application/xhtml+xml,*/*;q=0.8",
        "HTTP_ACCEPT_LANGUAGE=en-US,en;q=0.5",
        "HTTP_COOKIE=session=0123456789abcdef; theme=dark"};
    size_t n = 0;

    for (; n < sizeof(fixed) / sizeof(fixed[0]); n++) {
        snprintf(b->vars[n], sizeof(b->vars[n]), "%s", fixed[n]);
    }
    snprintf(b->vars[n++], sizeof(b->vars[0]), "SCRIPT_NAME=%s", script);
    snprintf(b->vars[n++], sizeof(b->vars[0]), "DOCUMENT_URI=%s", script);
    snprintf(b->vars[n++], sizeof(b->vars[0]), "SCRIPT_FILENAME=/srv/app%s",
             script);
    snprintf(b->vars[n++], sizeof(b->vars[0]), "QUERY_STRING=u=user%04d", i);
    snprintf(b->vars[n++], sizeof(b->vars[0]), "REQUEST_URI=%s?u=user%04d",
             script, i);
    for (size_t k = 0; k < NVARS; k++) {
        const char *eq = strchr(b->vars[k], '=');

        b->envp[k] = b->vars[k];
        b->params[k].name = b->vars[k];
        b->params[k].name_len = (size_t)(eq - b->vars[k]);
        b->params[k].value = eq + 1;
        b->params[k].value_len = strlen(eq + 1);
        b->params[k].repeated = false;
    }
    b->envp[NVARS] = NULL;
}

/* The guard's request over b, writing into a buffer. */
typedef struct greq {
    mw_req_t req;
    char out[8192];
    size_t out_len;
} greq_t;

static ssize_t no_read(mw_req_t *r, void *buf, size_t n, bool wait)
{
    (void)r;
    (void)buf;
    (void)n;
    (void)wait;
    return 0;
}

static int no_fd(mw_req_t *r)
{
    (void)r;
    return -1;
}

static int buf_write(mw_req_t *r, const void *buf, size_t n)
{
    greq_t *g = (greq_t *)r;

    if (n > sizeof(g->out) - g->out_len) {
        return -1;
    }
    memcpy(g->out + g->out_len, buf, n);
    g->out_len += n;
    return 0;
}

static int no_flush(mw_req_t *r)
{
    (void)r;
    return 0;
}

static const mw_req_ops_t ops = {no_read, no_fd, buf_write, no_flush};

typedef struct ctx {
    mw_setup_t s;       /* the guard alone, on the files */
    suspect_guard_t *g; /* the API, on the same files */
    breq_t *allowed;    /* NAMES requests */
    breq_t denied;
    unsigned long sink;
} ctx_t;

/* One guard decision (and the 429 when respond); the verdict kind. */
static int guard_once(ctx_t *c, const breq_t *b, bool respond)
{
    greq_t q;
    mw_verdict_t v;

    memset(&q.req, 0, sizeof(q.req));
    q.req.ops = &ops;
    q.req.role = MW_ROLE_RESPONDER;
    q.req.params = b->params;
    q.req.nparams = NVARS;
    q.out_len = 0;
    if (mw_guard_decide(c->s.guard, c->s.limits, c->s.store, &q.req, wall_ms(),
                        &v, NULL) != SUSPECT_OK) {
        return -1;
    }
    if (respond && v.kind == MW_VERDICT_DENY) {
        mw_guard_respond(c->s.guard, &q.req, &v);
        c->sink += q.out_len;
    }
    mw_req_release(&q.req);
    return (int)v.kind;
}

/* One API decision (and the 429's parts when respond). */
static int api_once(ctx_t *c, const breq_t *b, bool respond)
{
    suspect_guard_input_t in = {0};
    suspect_guard_response_t res;
    suspect_guard_req_t *r;
    int kind;

    in.envp = b->envp;
    if (suspect_guard_decide(c->g, &in, &r, NULL) != SUSPECT_OK) {
        return -1;
    }
    kind = (int)suspect_guard_req_verdict(r);
    if (respond && kind == SUSPECT_GUARD_DENY &&
        suspect_guard_req_response(r, &res, NULL) == SUSPECT_OK) {
        c->sink += res.cgi_len;
    }
    suspect_guard_req_free(r);
    return kind;
}

typedef struct row {
    const char *name;
    bool api, denied;
    double best; /* decisions per second */
} row_t;

static double round_of(ctx_t *c, const row_t *r)
{
    double t0 = now_s(), end = t0 + RUN_MS / 1000.0, t;
    unsigned long n = 0;

    do {
        for (int k = 0; k < 256; k++, n++) {
            const breq_t *b = r->denied ? &c->denied : &c->allowed[n % NAMES];

            if (r->api) {
                api_once(c, b, r->denied);
            } else {
                guard_once(c, b, r->denied);
            }
        }
        t = now_s();
    } while (t < end);
    return (double)n / (t - t0);
}

static int setup(ctx_t *c, const char *dir)
{
    char conf[512], lim[512];
    suspect_err_t err;
    FILE *f;

    snprintf(conf, sizeof(conf), "%s/suspect.xml", dir);
    snprintf(lim, sizeof(lim), "%s/limits.xml", dir);
    if ((f = fopen(conf, "w")) == NULL || fputs(conf_xml, f) < 0 ||
        fclose(f) != 0 || (f = fopen(lim, "w")) == NULL ||
        fputs(limits_xml, f) < 0 || fclose(f) != 0) {
        return -1;
    }
    suspect_err_clear(&err);
    if (mw_setup_load(&c->s, conf, &err) != SUSPECT_OK ||
        mw_store_new(c->s.conf, &c->s.store, &err) != SUSPECT_OK ||
        suspect_guard_open(conf, NULL, &c->g, &err) != SUSPECT_OK) {
        fprintf(stderr, "bench-inproc: %s\n", err.text);
        return -1;
    }
    c->allowed = calloc(NAMES, sizeof(*c->allowed));
    if (c->allowed == NULL) {
        return -1;
    }
    for (int i = 0; i < NAMES; i++) {
        build_req(&c->allowed[i], "/login.php", i);
    }
    build_req(&c->denied, "/once.php", 0);
    /* the identity of the denied rows: over its limit in both stores */
    guard_once(c, &c->denied, false);
    api_once(c, &c->denied, false);
    return guard_once(c, &c->denied, false) == MW_VERDICT_DENY &&
                   api_once(c, &c->denied, false) == SUSPECT_GUARD_DENY
               ? 0
               : -1;
}

int main(void)
{
    char dir[] = "/tmp/bench-inproc-XXXXXX";
    row_t rows[] = {{"guard, allowed", false, false, 0},
                    {"API, allowed", true, false, 0},
                    {"guard, denied + 429", false, true, 0},
                    {"API, denied + 429", true, true, 0}};
    ctx_t c;
    char path[600];

    memset(&c, 0, sizeof(c));
    if (mkdtemp(dir) == NULL || setup(&c, dir) != 0) {
        fprintf(stderr, "bench-inproc: cannot set up in %s\n", dir);
        return 1;
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
            double rate = round_of(&c, &rows[i]);

            rows[i].best = rate > rows[i].best ? rate : rows[i].best;
        }
    }
    printf("bench-inproc: 1 thread, memory store, %d variables per request, "
           "best of %d x %d ms\n",
           NVARS, ROUNDS, RUN_MS);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const row_t *r = &rows[i];
        double ns = 1e9 / r->best;

        printf("  %-22s %10.0f decisions/s  %7.0f ns", r->name, r->best, ns);
        if (r->api) {
            double peer = 1e9 / rows[i - 1].best;

            printf("  +%.0f ns (+%.0f%%) against %s", ns - peer,
                   100.0 * (ns - peer) / peer, rows[i - 1].name);
        }
        printf("\n");
    }
    suspect_guard_close(c.g);
    mw_setup_release(&c.s);
    free(c.allowed);
    snprintf(path, sizeof(path), "%s/suspect.xml", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/limits.xml", dir);
    unlink(path);
    rmdir(dir);
    return c.sink == 0; /* the 429s were built */
}
