/*
 * inproc_req.c - one request decided in-process (suspect_guard.h): the
 * application's variables and body reader as an mw_req_t, the guard's
 * decision on it, and the settlement of a held attempt.
 *
 * The request is what suspect-fcgi's handler makes of a FastCGI request,
 * minus the forwarding: the same mw_guard_resolve() and
 * mw_guard_finish() on the running pair and the handle's store; a
 * request that cannot be decided gets the error page suspect-fcgi gives
 * (400, or 503 when out of memory).  The response is only built when the
 * application asks for it (inproc_resp.c).
 *
 * Variables: envp's "NAME=value" strings are borrowed, not copied; each
 * becomes an mw_param_t.  A name that comes more than once is not merged
 * (the application reads envp itself, and may read either copy): when the
 * copies differ, the first is marked repeated and the request
 * copies_apart, so an identity read from it is refused (identity.c).
 * Finding repeats: a table of the names on the stack for up to 127
 * variables (a request's usual 20 to 60; probing stays bounded by the
 * table's size whatever the names hash to), else a sorted index of them,
 * O(n log n) whatever a client sends.
 *
 * Body: reads go to the application's callback (blocking, as libfcgi's
 * do); what the guard prefetched for a form: identity stays in the
 * request's buffer (request.c) and comes first to suspect_guard_req_read().
 *
 * A held attempt (a route that counts by the response): the watcher of
 * response/outcome.h is fed what the application observes, and the reservation
 * is settled by suspect_guard_req_settle(), or counted at free.
 *
 * Ownership: the request owns its variables' array, the watcher, the
 * response buffer and a reference to the guard and limits it was decided
 * on, all released by suspect_guard_req_free().
 */
#include "inproc_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "log/log.h"
#include "response/error_page.h"

/* ---- the request as an mw_req_t ------------------------------------------ */

static ssize_t ip_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    suspect_guard_req_t *r = (suspect_guard_req_t *)req;
    ssize_t got;

    (void)wait; /* the application's reads wait */
    if (r->read == NULL) {
        return 0;
    }
    got = r->read(r->read_arg, buf, n);
    return got >= 0 ? got : -EIO;
}

static int ip_read_fd(mw_req_t *req)
{
    (void)req;
    return -1;
}

/* Output is the response being built: kept in r->out. */
static int ip_write(mw_req_t *req, const void *buf, size_t n)
{
    suspect_guard_req_t *r = (suspect_guard_req_t *)req;

    if (n > r->out_cap - r->out_len) {
        size_t cap = r->out_cap > 0 ? r->out_cap : 4096; /* a 429 page fits */
        char *p;

        while (cap - r->out_len < n) {
            cap *= 2;
        }
        p = suspect_realloc(r->out, cap);
        if (p == NULL) {
            return -ENOMEM;
        }
        r->out = p;
        r->out_cap = cap;
    }
    memcpy(r->out + r->out_len, buf, n);
    r->out_len += n;
    return 0;
}

static int ip_flush(mw_req_t *req)
{
    (void)req;
    return 0;
}

static const mw_req_ops_t ip_ops = {ip_read, ip_read_fd, ip_write, ip_flush};

/* Up to this many variables, repeats are found with a table on the stack
 * of SMALL_CELLS cells (at most half full); beyond, by sorting an index. */
#define SMALL_VARS  127
#define SMALL_CELLS 256

/* One entry of the name index. */
typedef struct name_ix {
    const char *name;
    size_t len;
    size_t at;
} name_ix_t;

static int name_cmp(const void *a, const void *b)
{
    const name_ix_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);

    if (c != 0) {
        return c;
    }
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return x->at < y->at ? -1 : x->at > y->at ? 1 : 0;
}

/* Marks p[first] repeated when p[i], the same name, has another value;
 * whether it did. */
static int mark_pair(mw_param_t *p, size_t first, size_t i)
{
    if (p[first].value_len == p[i].value_len &&
        memcmp(p[first].value, p[i].value, p[i].value_len) == 0) {
        return 0;
    }
    p[first].repeated = true;
    return 1;
}

/* mark_repeats() for n <= SMALL_VARS: an open-addressing table of the
 * names on the stack (FNV-1a; a cell holds the first copy's index + 1).
 * At most SMALL_VARS names probe at most SMALL_VARS cells each, whatever
 * they hash to. */
static int mark_repeats_small(mw_param_t *p, size_t n)
{
    uint8_t cell[SMALL_CELLS] = {0};
    int any = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t h = 2166136261u;
        size_t k;

        for (size_t j = 0; j < p[i].name_len; j++) {
            h = (h ^ (unsigned char)p[i].name[j]) * 16777619u;
        }
        for (k = h % SMALL_CELLS; cell[k] != 0; k = (k + 1) % SMALL_CELLS) {
            const mw_param_t *q = &p[cell[k] - 1];

            if (q->name_len == p[i].name_len &&
                memcmp(q->name, p[i].name, q->name_len) == 0) {
                any |= mark_pair(p, cell[k] - 1u, i);
                break;
            }
        }
        if (cell[k] == 0) {
            cell[k] = (uint8_t)(i + 1);
        }
    }
    return any;
}

/* Marks the first copy of each name repeated with another value; whether
 * any was.  -1 when out of memory. */
static int mark_repeats(mw_param_t *p, size_t n)
{
    name_ix_t *ix;
    int any = 0;

    if (n < 2) {
        return 0;
    }
    if (n <= SMALL_VARS) {
        return mark_repeats_small(p, n);
    }
    ix = suspect_malloc(n * sizeof(*ix));
    if (ix == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        ix[i].name = p[i].name;
        ix[i].len = p[i].name_len;
        ix[i].at = i;
    }
    qsort(ix, n, sizeof(*ix), name_cmp);
    for (size_t i = 1; i < n; i++) {
        size_t first = i - 1;

        while (i < n && ix[i].len == ix[first].len &&
               memcmp(ix[i].name, ix[first].name, ix[i].len) == 0) {
            any |= mark_pair(p, ix[first].at, ix[i].at);
            i++;
        }
    }
    free(ix);
    return any;
}

/* r's variables from envp.  SUSPECT_OK or SUSPECT_E_NOMEM. */
static suspect_rc_t params_from(suspect_guard_req_t *r, const char *const *envp)
{
    size_t n = 0;
    int repeats;

    while (envp[n] != NULL) {
        n++;
    }
    r->params = suspect_calloc(n + 1, sizeof(*r->params));
    if (r->params == NULL) {
        return SUSPECT_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const char *v = envp[i], *eq = strchr(v, '=');
        mw_param_t *p = &r->params[i];

        p->name = v;
        p->name_len = eq != NULL ? (size_t)(eq - v) : strlen(v);
        p->value = eq != NULL ? eq + 1 : "";
        p->value_len = strlen(p->value);
    }
    repeats = mark_repeats(r->params, n);
    if (repeats < 0) {
        return SUSPECT_E_NOMEM;
    }
    r->req.params = r->params;
    r->req.nparams = n;
    r->req.copies_apart = repeats > 0;
    return SUSPECT_OK;
}

/* ---- the decision -------------------------------------------------------- */

/* The request could not be decided (err): refused with suspect-fcgi's
 * error page. */
static void undecided(suspect_guard_req_t *r, const suspect_err_t *err)
{
    suspect_err_format(err, r->why_buf, sizeof(r->why_buf));
    mw_log(MW_LOG_WARNING, "request refused: %s", r->why_buf);
    r->verdict = SUSPECT_GUARD_REFUSE;
    r->error_status = err->code == SUSPECT_E_NOMEM ? 503 : 400;
    r->status = r->error_status;
    r->why = r->why_buf;
}

/* The public verdict of r->v, and the attempt held. */
static suspect_rc_t decided(suspect_guard_req_t *r)
{
    const mw_verdict_t *v = &r->v;

    r->why = v->why != NULL ? v->why : "";
    switch (v->kind) {
    case MW_VERDICT_PASS:
        r->verdict = SUSPECT_GUARD_PASS;
        break;
    case MW_VERDICT_ALLOW:
        r->verdict = SUSPECT_GUARD_ALLOW;
        break;
    case MW_VERDICT_DENY:
        r->verdict = SUSPECT_GUARD_DENY;
        break;
    case MW_VERDICT_REJECT:
    case MW_VERDICT_UNAVAILABLE:
        r->verdict = SUSPECT_GUARD_REFUSE;
        break;
    }
    if (r->verdict >= SUSPECT_GUARD_DENY) {
        r->status = v->status;
        return SUSPECT_OK;
    }
    (void)mw_guard_shadow_line(r->guard, v, r->shadow, sizeof(r->shadow));
    if (v->kind == MW_VERDICT_ALLOW && v->ticket.id != 0) {
        r->held = true;
        r->watch = suspect_malloc(sizeof(*r->watch));
        if (r->watch != NULL &&
            !mw_watch_init(r->watch, v->route,
                           mw_req_param(&r->req, "REQUEST_METHOD", NULL),
                           mw_req_param(&r->req, "HTTP_HOST", NULL),
                           mw_req_param(&r->req, "REQUEST_URI", NULL))) {
            free(r->watch);
            r->watch = NULL;
        }
        /* Without a watcher the attempt counts when settled: the safe
         * side, as in suspect-fcgi. */
    }
    return SUSPECT_OK;
}

/* A new request over in (not yet decided), or NULL when out of memory. */
static suspect_guard_req_t *req_new(suspect_guard_t *g,
                                    const suspect_guard_input_t *in)
{
    suspect_guard_req_t *r = suspect_malloc(sizeof(*r));

    if (r == NULL) {
        return NULL;
    }
    memset(r, 0, offsetof(suspect_guard_req_t, res));
    r->owner = g;
    r->req.ops = &ip_ops;
    r->req.role = MW_ROLE_RESPONDER;
    r->read = in->read;
    r->read_arg = in->read_arg;
    if (params_from(r, in->envp) != SUSPECT_OK) {
        free(r->params);
        free(r);
        return NULL;
    }
    mw_live_acquire(g->live, &r->guard, &r->limits);
    return r;
}

suspect_rc_t suspect_guard_decide(suspect_guard_t *g,
                                  const suspect_guard_input_t *in,
                                  suspect_guard_req_t **out, suspect_err_t *err)
{
    suspect_guard_req_t *r;
    suspect_err_t why;
    int64_t now;

    if (out != NULL) {
        *out = NULL;
    }
    if (g == NULL || in == NULL || in->envp == NULL || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_guard_decide: NULL argument");
    }
    if (g->auto_reload) {
        (void)mw_live_poll(g->live);
    }
    r = req_new(g, in);
    if (r == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    now = in->now_ms != 0 ? in->now_ms : wall_ms();
    suspect_err_clear(&why);
    if (mw_guard_resolve(r->guard, r->limits, &r->req, now, &r->res, &why) !=
        SUSPECT_OK) {
        undecided(r, &why);
    } else {
        r->v = r->res.verdict;
        if (r->res.nkeys > 0) {
            mw_guard_finish(g->store, &r->res, &r->v);
        }
        (void)decided(r);
    }
    *out = r;
    return SUSPECT_OK;
}

/* ---- what the application asks of a decided request ---------------------- */

suspect_guard_verdict_t suspect_guard_req_verdict(const suspect_guard_req_t *r)
{
    return r != NULL ? r->verdict : SUSPECT_GUARD_REFUSE;
}

int suspect_guard_req_status(const suspect_guard_req_t *r)
{
    return r != NULL && r->verdict >= SUSPECT_GUARD_DENY ? r->status : 0;
}

const char *suspect_guard_req_action(const suspect_guard_req_t *r)
{
    return r != NULL && r->error_status == 0 && r->v.route != NULL
               ? r->v.route->action
               : NULL;
}

const char *suspect_guard_req_why(const suspect_guard_req_t *r)
{
    return r != NULL && r->why != NULL ? r->why : "";
}

const char *suspect_guard_req_header(const suspect_guard_req_t *r)
{
    return r != NULL && r->shadow[0] != '\0' ? r->shadow : NULL;
}

ssize_t suspect_guard_req_read(suspect_guard_req_t *r, void *buf, size_t n)
{
    if (r == NULL || (buf == NULL && n > 0)) {
        return -EINVAL;
    }
    return mw_req_read(&r->req, buf, n, true);
}

void suspect_guard_req_body(const suspect_guard_req_t *r, const char **data,
                            size_t *len)
{
    bool left =
        r != NULL && r->req.pre != NULL && r->req.pre_off < r->req.pre_len;

    *data = left ? r->req.pre + r->req.pre_off : NULL;
    *len = left ? r->req.pre_len - r->req.pre_off : 0;
}

/* ---- a held attempt ------------------------------------------------------ */

bool suspect_guard_req_holds(const suspect_guard_req_t *r)
{
    return r != NULL && r->held;
}

void suspect_guard_req_observe(suspect_guard_req_t *r, const void *buf,
                               size_t n)
{
    if (r != NULL && r->held && r->watch != NULL && n > 0) {
        mw_watch_feed(r->watch, buf, n);
    }
}

suspect_rc_t suspect_guard_req_settle(suspect_guard_req_t *r, bool complete,
                                      suspect_err_t *err)
{
    mw_outcome_t o = MW_OUTCOME_UNKNOWN;
    const char *why = NULL;
    suspect_rc_t rc;

    if (r == NULL || !r->held) {
        return SUSPECT_OK;
    }
    if (r->watch != NULL) {
        o = mw_watch_outcome(r->watch, complete, &why);
        mw_watch_free(r->watch);
        free(r->watch);
        r->watch = NULL;
    }
    r->held = false;
    rc =
        mw_guard_settle(r->owner->store, &r->res, &r->v,
                        !complete || o != MW_OUTCOME_SUCCEEDED, wall_ms(), err);
    if (complete && why != NULL) {
        mw_log(MW_LOG_NOTICE, "settle %s: response not judged (%s): counted",
               r->v.route->action, why);
    } else if (mw_log_enabled(MW_LOG_DEBUG)) {
        mw_log(MW_LOG_DEBUG, "settle %s: response %s%s", r->v.route->action,
               mw_outcome_name(o), complete ? "" : " (cut: counted)");
    }
    return rc;
}

void suspect_guard_req_free(suspect_guard_req_t *r)
{
    if (r == NULL) {
        return;
    }
    if (r->held) {
        suspect_err_t err;

        suspect_err_clear(&err);
        if (suspect_guard_req_settle(r, false, &err) != SUSPECT_OK) {
            char msg[600];

            suspect_err_format(&err, msg, sizeof(msg));
            mw_log(
                MW_LOG_WARNING,
                "settle %s: %s; the attempt counts when its reservation ends",
                r->v.route->action, msg);
        }
    }
    mw_req_release(&r->req);
    suspect_limits_unref(r->limits);
    mw_guard_unref(r->guard);
    free(r->params);
    free(r->out);
    free(r);
}
