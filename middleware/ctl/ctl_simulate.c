/*
 * ctl_simulate.c - suspectctl simulate [VAR=value ...]: what the daemon
 * would do with a request, without counting it.
 *
 * The request is built in memory from CGI variables (the ones a web server
 * sends: REQUEST_METHOD, REQUEST_URI, HTTP_COOKIE, REMOTE_ADDR, ...) and a
 * body (--body, --body-stdin), with what a web server would add: the
 * method (POST with a body, else GET), QUERY_STRING from REQUEST_URI, and
 * for a body CONTENT_LENGTH and an urlencoded CONTENT_TYPE.  The guard
 * resolves it exactly as for a real request (mw_guard_resolve: path,
 * route, identities, keys) and never calls the store; each key's state is
 * then read with suspect_store_status() and the decision computed with
 * suspect_policy_evaluate(), the definition every store decides by.
 * Nothing is written: the hit is not counted and no lock is created.
 *
 * The states come from the running suspect-fcgi (ctl_remote.c) or the
 * store itself; with the memory store and no daemon answering, the route,
 * identities and keys are shown, the decision is "unknown".
 */
#include "ctl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "response/deny.h"

#define SIM_MAX_VARS 64
#define SIM_BODY_MAX (16u << 20) /* formMax's largest value */

typedef struct sim_req {
    mw_req_t req; /* first: a sim_req_t * is an mw_req_t * */
    mw_param_t params[SIM_MAX_VARS + 4];
    const char *body;
    size_t body_len, off;
    char *owned_body; /* read from stdin */
    char *query;      /* QUERY_STRING derived from REQUEST_URI */
    char clen[24];
} sim_req_t;

static ssize_t sim_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    sim_req_t *r = (sim_req_t *)req;
    size_t left = r->body_len - r->off;

    (void)wait;
    n = n < left ? n : left;
    if (n == 0) {
        return 0; /* no body at all: r->body may be NULL */
    }
    memcpy(buf, r->body + r->off, n);
    r->off += n;
    return (ssize_t)n;
}

static int sim_read_fd(mw_req_t *req)
{
    (void)req;
    return -1;
}

static int sim_write(mw_req_t *req, const void *buf, size_t n)
{
    (void)req;
    (void)buf;
    (void)n;
    return 0;
}

static int sim_flush(mw_req_t *req)
{
    (void)req;
    return 0;
}

static const mw_req_ops_t sim_ops = {sim_read, sim_read_fd, sim_write,
                                     sim_flush};

static void sim_free(sim_req_t *r)
{
    mw_req_release(&r->req);
    free(r->owned_body);
    free(r->query);
}

static void add_var(sim_req_t *r, const char *name, const char *value)
{
    mw_param_t *p = &r->params[r->req.nparams++];

    p->name = name;
    p->name_len = strlen(name);
    p->value = value;
    p->value_len = strlen(value);
    p->repeated = false;
}

/* Reads all of stdin (at most SIM_BODY_MAX bytes) into r. */
static int read_stdin(ctl_t *c, sim_req_t *r)
{
    size_t cap = 0;

    for (;;) {
        ssize_t n;

        if (r->body_len == cap) {
            char *p =
                cap < SIM_BODY_MAX ? realloc(r->owned_body, cap + 65536) : NULL;
            if (p == NULL) {
                return ctl_fail(c, CTL_USAGE,
                                "simulate: the body is over %u bytes",
                                SIM_BODY_MAX);
            }
            r->owned_body = p;
            cap += 65536;
        }
        n = read(STDIN_FILENO, r->owned_body + r->body_len, cap - r->body_len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return ctl_fail(c, CTL_USAGE, "simulate: reading stdin: %s",
                            strerror(errno));
        }
        if (n == 0) {
            r->body = r->owned_body;
            return CTL_OK;
        }
        r->body_len += (size_t)n;
    }
}

static bool var_name_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        bool ok = ch == '_' || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= 'a' && ch <= 'z') || (i > 0 && ch >= '0' && ch <= '9');
        if (!ok) {
            return false;
        }
    }
    return len > 0;
}

/* What a web server adds that the command line did not give. */
static int add_defaults(sim_req_t *r)
{
    const char *uri = mw_req_param(&r->req, "REQUEST_URI", NULL);
    const char *q = uri != NULL ? strchr(uri, '?') : NULL;

    if (r->body != NULL) {
        snprintf(r->clen, sizeof(r->clen), "%zu", r->body_len);
        if (mw_req_param(&r->req, "CONTENT_LENGTH", NULL) == NULL) {
            add_var(r, "CONTENT_LENGTH", r->clen);
        }
        if (mw_req_param(&r->req, "CONTENT_TYPE", NULL) == NULL) {
            add_var(r, "CONTENT_TYPE", "application/x-www-form-urlencoded");
        }
    }
    if (mw_req_param(&r->req, "REQUEST_METHOD", NULL) == NULL) {
        add_var(r, "REQUEST_METHOD", r->body != NULL ? "POST" : "GET");
    }
    if (q != NULL && mw_req_param(&r->req, "QUERY_STRING", NULL) == NULL) {
        r->query = strndup(q + 1, strcspn(q + 1, "#"));
        if (r->query == NULL) {
            return -1;
        }
        add_var(r, "QUERY_STRING", r->query);
    }
    return 0;
}

/* Builds the request from VAR=value operands and the body options. */
static int sim_build(ctl_t *c, int argc, char **argv, sim_req_t *r)
{
    memset(r, 0, sizeof(*r));
    r->req.ops = &sim_ops;
    r->req.role = MW_ROLE_RESPONDER;
    r->req.params = r->params;
    if (argc > SIM_MAX_VARS || c->key != NULL) {
        return ctl_usage(c, "simulate [--body STRING | --body-stdin] "
                            "[VAR=value ...] (at most 64)");
    }
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        mw_param_t *p = &r->params[r->req.nparams];

        if (eq == NULL || !var_name_ok(argv[i], (size_t)(eq - argv[i]))) {
            return ctl_fail(c, CTL_USAGE,
                            "simulate: '%s' is not VAR=value (a CGI "
                            "variable such as REQUEST_URI=/app.cgi)",
                            argv[i]);
        }
        if (mw_req_param_n(&r->req, argv[i], (size_t)(eq - argv[i]), NULL)) {
            return ctl_fail(c, CTL_USAGE, "simulate: %.*s given twice",
                            (int)(eq - argv[i]), argv[i]);
        }
        p->name = argv[i];
        p->name_len = (size_t)(eq - argv[i]);
        p->value = eq + 1;
        p->value_len = strlen(eq + 1);
        p->repeated = false;
        r->req.nparams++;
    }
    if (c->body_stdin) {
        int rc = read_stdin(c, r);
        if (rc != CTL_OK) {
            return rc;
        }
    } else if (c->body != NULL) {
        r->body = c->body;
        r->body_len = strlen(c->body);
    }
    if (add_defaults(r) != 0) {
        return ctl_fail(c, CTL_USAGE, "simulate: out of memory");
    }
    return CTL_OK;
}

/* ---- the outcome -------------------------------------------------------- */

typedef struct sim_out {
    mw_resolution_t res;
    bool known; /* statuses read (not the memory store) */
    suspect_status_t st[SUSPECT_MAX_IDENTITIES];
    bool deny1[SUSPECT_MAX_IDENTITIES]; /* this identity alone denies */
    suspect_decision_t d;
    const char *verdict; /* "pass", "reject", "allow", "deny", "unknown" */
    int status;
    const char *why;
} sim_out_t;

/* Reads each key's state and evaluates the decision the store would make. */
static int sim_decide(ctl_t *c, sim_out_t *o)
{
    mw_resolution_t *res = &o->res;
    suspect_window_state_t ws[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;

    o->verdict = res->verdict.kind == MW_VERDICT_REJECT ? "reject" : "pass";
    o->status = res->verdict.status;
    o->why = res->verdict.why;
    if (res->nkeys == 0 || (c->setup.store == NULL && !c->daemon)) {
        o->verdict = res->nkeys == 0 ? o->verdict : "unknown";
        o->why = res->nkeys == 0 ? o->why : "counts live in suspect-fcgi";
        return CTL_OK;
    }
    for (size_t i = 0; i < res->nkeys; i++) {
        suspect_decision_t one;
        suspect_rule_t rule;
        ctl_target_t t;
        int rc;

        memset(&t, 0, sizeof(t));
        t.action = res->verdict.rule.action;
        t.rule = &res->verdict.rule;
        t.key = res->keys[i];
        rc = ctl_op_status(c, &t, &rule, &o->st[i]);
        if (rc != CTL_OK) {
            return rc;
        }
        ws[i].lock_until_ms = o->st[i].locked_until_ms;
        ws[i].in_window = o->st[i].in_window;
        ws[i].free_at_ms = o->st[i].free_at_ms;
        ws[i].pending = o->st[i].pending;
        ws[i].pending_end_ms = 0; /* not known: a busy denial ends soon */
        ws[i].offences = o->st[i].offences;
        suspect_policy_evaluate(&res->verdict.rule, &ws[i], 1, c->now_ms, &plan,
                                &one);
        o->deny1[i] = !one.allowed;
    }
    o->known = true;
    suspect_policy_evaluate(&res->verdict.rule, ws, res->nkeys, c->now_ms,
                            &plan, &o->d);
    o->verdict = o->d.allowed ? "allow" : "deny";
    o->status = o->d.allowed                      ? 0
                : res->verdict.route->status != 0 ? res->verdict.route->status
                                                  : MW_DENY_STATUS;
    o->why = o->d.allowed  ? "allowed"
             : o->d.locked ? "locked"
                           : "over the limit";
    return CTL_OK;
}

static void json_identity(ctl_json_t *j, const sim_out_t *o, size_t i)
{
    const suspect_key_t *k = &o->res.keys[i];

    cj_obj(j, NULL);
    cj_str(j, "type", o->res.types[i]);
    cj_strn(j, "key", k->buf, k->window_len);
    if (o->known) {
        cj_int(j, "in_window", o->st[i].in_window);
        cj_int(j, "remaining", o->st[i].remaining);
        cj_bool(j, "locked", o->st[i].locked_until_ms != 0);
        cj_time(j, "locked_until", o->st[i].locked_until_ms);
        cj_time(j, "free_at", o->st[i].free_at_ms);
        cj_bool(j, "would_deny", o->deny1[i]);
    }
    cj_end(j);
}

static void sim_json(ctl_t *c, const sim_req_t *r, const sim_out_t *o)
{
    const mw_verdict_t *v = &o->res.verdict;
    ctl_json_t j;

    cj_begin(&j, c, CTL_OK);
    cj_str(&j, "store", ctl_store_name(c));
    cj_int(&j, "now_ms", c->now_ms);
    cj_bool(&j, "counted", false);
    cj_obj(&j, "request");
    cj_str(&j, "method", mw_req_param(&r->req, "REQUEST_METHOD", NULL));
    cj_str(&j, "uri", mw_req_param(&r->req, "REQUEST_URI", NULL));
    cj_int(&j, "body_bytes", (int64_t)r->body_len);
    cj_end(&j);
    if (v->route != NULL) {
        cj_obj(&j, "route");
        cj_str(&j, "file", c->setup.conf->file);
        cj_int(&j, "line", v->route->line);
        cj_str(&j, "action", v->route->action);
        cj_str(&j, "path", v->route->path);
        cj_bool(&j, "prefix", v->route->prefix);
        cj_end(&j);
    } else {
        cj_str(&j, "route", NULL);
    }
    if (v->rule.action != NULL) {
        cj_obj(&j, "rule");
        cj_int(&j, "limit", v->rule.limit_count);
        cj_int(&j, "window_s", v->rule.window_s);
        cj_int(&j, "block_s", v->rule.block_s);
        cj_end(&j);
    }
    cj_arr(&j, "identities");
    for (size_t i = 0; i < o->res.nkeys; i++) {
        json_identity(&j, o, i);
    }
    cj_end(&j);
    cj_obj(&j, "decision");
    cj_str(&j, "verdict", o->verdict);
    cj_int(&j, "status", o->status);
    cj_str(&j, "why", o->why);
    if (o->known) {
        cj_bool(&j, "locked", o->d.locked);
        cj_int(&j, "remaining", o->d.remaining);
        cj_int(&j, "retry_after_ms", o->d.retry_after_ms);
        cj_time(&j, "restriction_end", o->d.restriction_end_ms);
    }
    cj_finish(&j);
}

static void human_identity(const ctl_t *c, const sim_out_t *o, size_t i)
{
    const suspect_status_t *st = &o->st[i];
    char buf[48];

    fprintf(c->out, "identity  %s, key %.*s\n", o->res.types[i],
            (int)o->res.keys[i].window_len, o->res.keys[i].buf);
    if (!o->known) {
        return;
    }
    fprintf(c->out, "          %u in the window, %u remaining, ", st->in_window,
            st->remaining);
    if (st->locked_until_ms != 0) {
        fprintf(c->out, "locked until %s", ctl_time(st->locked_until_ms, buf));
    } else {
        fputs("not locked", c->out);
    }
    fprintf(c->out, "%s\n", o->deny1[i] ? ": would deny" : "");
}

static void sim_human(ctl_t *c, const sim_req_t *r, const sim_out_t *o)
{
    const mw_verdict_t *v = &o->res.verdict;
    const char *uri = mw_req_param(&r->req, "REQUEST_URI", NULL);

    fprintf(c->out, "request   %s %s (%zu body bytes)\n",
            mw_req_param(&r->req, "REQUEST_METHOD", NULL),
            uri != NULL ? uri : "(no REQUEST_URI)", r->body_len);
    if (v->route == NULL) {
        fputs("route     none\n", c->out);
    } else {
        fprintf(c->out, "route     %s:%d -> %s", c->setup.conf->file,
                v->route->line, v->route->action);
        if (v->rule.action != NULL) {
            fprintf(c->out, " (%u per %u s", v->rule.limit_count,
                    v->rule.window_s);
            if (v->rule.block_s > 0) {
                fprintf(c->out, ", then locked %u s", v->rule.block_s);
            }
            fputc(')', c->out);
        }
        fputc('\n', c->out);
    }
    for (size_t i = 0; i < o->res.nkeys; i++) {
        human_identity(c, o, i);
    }
    fprintf(c->out, "decision  %s", o->verdict);
    if (o->status != 0) {
        fprintf(c->out, " %d", o->status);
    }
    fprintf(c->out, " (%s)", o->why);
    if (o->known && !o->d.allowed) {
        fprintf(c->out, ", retry after %lld s",
                (long long)((o->d.retry_after_ms + 999) / 1000));
    } else if (o->known) {
        fprintf(c->out, ", %u remaining after it", o->d.remaining);
    }
    fputs("; nothing was counted\n", c->out);
}

/* simulate [--body STRING | --body-stdin] [VAR=value ...] */
int ctl_cmd_simulate(ctl_t *c, int argc, char **argv)
{
    sim_req_t r;
    sim_out_t *o = calloc(1, sizeof(*o));
    suspect_err_t err;
    int rc = o != NULL ? sim_build(c, argc, argv, &r)
                       : ctl_fail(c, CTL_USAGE, "out of memory");

    if (o == NULL) {
        return rc;
    }
    if (rc == CTL_OK) {
        rc = ctl_load(c);
    }
    if (rc == CTL_OK) {
        rc = ctl_connect(c, true);
    }
    suspect_err_clear(&err);
    if (rc == CTL_OK &&
        mw_guard_resolve(c->setup.guard, c->setup.limits, &r.req, c->now_ms,
                         &o->res, &err) != SUSPECT_OK) {
        rc = ctl_fail_err(c, CTL_USAGE, "simulate", &err);
    }
    if (rc == CTL_OK) {
        rc = sim_decide(c, o);
    }
    if (rc == CTL_OK && c->json) {
        sim_json(c, &r, o);
    } else if (rc == CTL_OK) {
        sim_human(c, &r, o);
    }
    sim_free(&r);
    free(o);
    return rc;
}
