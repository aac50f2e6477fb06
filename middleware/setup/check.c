/*
 * check.c - the --check report: both files loaded exactly as the daemon
 * loads them (the same loaders and the same guard compilation), then the
 * settings in effect, each route with the limit it applies, and each
 * limit.  Nothing is opened or connected: no socket, no store.
 */
#include "check.h"

#include <grp.h>

#include "setup.h"

static const char *store_name(suspect_conf_store_kind_t k)
{
    return k == SUSPECT_STORE_REDIS  ? "redis"
           : k == SUSPECT_STORE_LMDB ? "lmdb"
                                     : "memory";
}

static const char *missing_name(suspect_missing_t m)
{
    return m == SUSPECT_MISSING_ALLOW    ? "allow"
           : m == SUSPECT_MISSING_REJECT ? "reject"
                                         : "skip";
}

static void print_rule(FILE *out, const suspect_rule_t *r)
{
    fprintf(out, "%u per %u s", r->limit_count, r->window_s);
    if (r->algorithm == SUSPECT_ALGO_BUCKET) {
        fprintf(out, " (token bucket of %u)", suspect_rule_capacity(r));
    } else if (r->algorithm == SUSPECT_ALGO_COUNTER) {
        fputs(" (sliding counter)", out);
    }
    if (r->block_s > 0) {
        fprintf(out, ", then locked %u s", r->block_s);
    }
    if (suspect_rule_escalates(r)) {
        fprintf(out, " x%u.%02u a repeat, at most %u s (offences kept %u s)",
                r->block_factor_pct / 100, r->block_factor_pct % 100,
                r->block_max_s, r->offence_s);
    }
}

/* One allow or deny list: where its entries come from. */
static void print_list(FILE *out, const char *indent, const char *name,
                       const suspect_conf_list_t *l)
{
    if (l == NULL) {
        return;
    }
    fprintf(out, "%s%-9s%s%s%s%s%s", indent, name, l->ip != NULL ? " ip" : "",
            l->identity != NULL ? " identity" : "",
            l->file != NULL ? " file " : "", l->file != NULL ? l->file : "",
            "");
    if (name[0] == 'd') {
        fprintf(out, ", refused %d", l->status != 0 ? l->status : 403);
    }
    fputc('\n', out);
}

/* The control socket, the metrics listener and the decision log. */
static void print_operate(FILE *out, const suspect_conf_t *c)
{
    char path[256];
    const char *ctl = suspect_conf_control_path(c, path, sizeof(path));

    if (ctl != NULL) {
        fprintf(out, "control   %s (mode %04o%s%s)\n", ctl, c->control_mode,
                c->control_group != NULL ? ", group " : "",
                c->control_group != NULL ? c->control_group : "");
    } else {
        fprintf(out, "control   off\n");
    }
    fprintf(out, "metrics   %s\n",
            c->metrics_listen != NULL ? c->metrics_listen : "off");
    fprintf(out, "decisions %s", suspect_conf_decisions_name(c->decisions));
    if (c->decisions != SUSPECT_DECISIONS_OFF) {
        fprintf(out, " to %s, identities hashed with %s",
                c->decision_path != NULL ? c->decision_path : "stderr",
                c->identity_key != NULL ? "the identityKey"
                                        : "a key drawn at start");
    }
    fprintf(out, "; requests logged by %s\n",
            c->full_uri ? "their whole target (query too)" : "their path");
}

static void print_settings(FILE *out, const suspect_conf_t *c)
{
    fprintf(out, "listen    %s (mode %04o), %u workers, %s\n", c->listen,
            c->socket_mode, c->workers,
            c->mode == SUSPECT_MODE_AUTH_REQUEST ? "nginx auth_request mode"
            : c->mode == SUSPECT_MODE_AUTHORIZER ? "authorizer mode"
                                                 : "forward mode");
    fprintf(out, "limits    %s (looked at every %u ms)\n", c->limits_path,
            c->reload_ms);
    print_list(out, "", "allow", c->allow);
    print_list(out, "", "deny", c->deny);
    if (c->store == SUSPECT_STORE_LMDB) {
        fprintf(out, "store     lmdb %s (mode %04o", c->lmdb_path,
                c->lmdb_mode);
        if (c->lmdb_group >= 0) {
            struct group *g = getgrgid((gid_t)c->lmdb_group);

            fprintf(out, ", group %s", g != NULL ? g->gr_name : "?");
        }
        fprintf(out, ")\n");
    } else {
        fprintf(out, "store     %s\n", store_name(c->store));
    }
    if (c->has_cgi) {
        fprintf(out, "forward   CGI %s %s, timeout %u ms\n",
                c->cgi_program != NULL ? "program" : "scripts under",
                c->cgi_program != NULL ? c->cgi_program : c->cgi_root,
                c->cgi_timeout_ms);
    } else if (c->has_upstream) {
        fprintf(out, "forward   FastCGI %s, timeout %u ms\n",
                c->upstream_address, c->upstream_timeout_ms);
    }
    fprintf(out, "client-ip trusted proxies: %s\n",
            c->trusted_proxies != NULL ? c->trusted_proxies : "none");
    print_operate(out, c);
}

static void print_source(FILE *out, const suspect_conf_source_t *s)
{
    fprintf(out, "%s%s%s", suspect_src_kind_name(s->kind),
            s->name != NULL ? ":" : "", s->name != NULL ? s->name : "");
}

/* "User = form:u|query:u (normalize: trim casefold)": parts joined by
 * " + ", a part's alternatives by "|". */
static void print_identity(FILE *out, const suspect_conf_identity_t *id)
{
    fprintf(out, "%s = ", id->type);
    for (size_t k = 0; k < id->nsources; k++) {
        const suspect_conf_source_t *s = &id->source[k];

        if (k > 0) {
            fputs(s->part != id->source[k - 1].part ? " + " : "|", out);
        }
        print_source(out, s);
    }
    if (id->normalize != NULL) {
        fprintf(out, " (normalize: %s)", id->normalize);
    }
}

static const char *param_in_name(suspect_param_in_t in)
{
    return in == SUSPECT_PARAM_QUERY     ? "query"
           : in == SUSPECT_PARAM_FORM    ? "form"
           : in == SUSPECT_PARAM_REQUEST ? "query|form|cookie, every copy"
                                         : "query|form";
}

/* Every condition of r past its method and path. */
static void print_conditions(FILE *out, const suspect_conf_route_t *r)
{
    if (r->param_name != NULL) {
        fprintf(out, " [%s%s%s in %s]", r->param_name,
                r->param_value != NULL ? "=" : "",
                r->param_value != NULL ? r->param_value : "",
                param_in_name(r->param_in));
    }
    if (r->nwhen > 0) {
        fputs(" when ", out);
        for (size_t k = 0; k < r->nwhen; k++) {
            fputs(k > 0 ? "|" : "", out);
            print_source(out, &r->when[k]);
        }
    }
}

static void print_route(FILE *out, size_t i, const suspect_conf_t *c,
                        const suspect_conf_route_t *r,
                        const suspect_limits_t *lim)
{
    const suspect_rule_t *rule = suspect_limits_find(lim, r->action);

    fprintf(out, "  %zu. %s:%d  ", i + 1, c->file, r->line);
    for (size_t m = 0; m < r->nmethods; m++) {
        fprintf(out, "%s%s", m > 0 ? "," : "", r->methods[m]);
    }
    fprintf(out, "%s%s%s", r->nmethods == 0 ? "ANY" : "", " ", r->path);
    fputs(r->prefix ? "*" : "", out);
    print_conditions(out, r);
    if (r->refuse) {
        fprintf(out, " -> %s: refused (%d), never counted nor passed\n",
                r->action, r->status != 0 ? r->status : 403);
        return;
    }
    fprintf(out, " -> %s: ", r->action);
    if (rule != NULL) {
        print_rule(out, rule);
    } else {
        fputs("NOT IN THE LIMITS FILE", out);
    }
    fprintf(out, "\n       counted by ");
    for (size_t k = 0; k < r->nidentities; k++) {
        fputs(k > 0 ? "; " : "", out);
        print_identity(out, &r->identities[k]);
    }
    fprintf(out, " (missing: %s)\n", missing_name(r->missing));
    if (r->cost > 1) {
        fprintf(out, "       a request takes %u\n", r->cost);
    }
    if (r->count != SUSPECT_COUNT_ALL) {
        fprintf(out, "       counts %s (%zu pattern%s)\n",
                r->count == SUSPECT_COUNT_FAILURES
                    ? "only what a <Failure> matches"
                    : "all but what a <Success> matches",
                r->noutcomes, r->noutcomes == 1 ? "" : "s");
    }
    print_list(out, "       ", "allow", r->allow);
    print_list(out, "       ", "deny", r->deny);
    if (r->shadow == SUSPECT_SHADOW_ON ||
        r->fail_mode != SUSPECT_RULE_FAIL_STORE) {
        static const char *const modes[] = {"the store's", "local", "open",
                                            "closed"};

        fprintf(out, "       %sfail mode %s\n",
                r->shadow == SUSPECT_SHADOW_ON ? "SHADOW (never refused), "
                                               : "",
                r->fail_mode >= 0 && r->fail_mode <= SUSPECT_RULE_FAIL_CLOSED
                    ? modes[r->fail_mode]
                    : "?");
    }
}

static void print_err(FILE *errs, const suspect_err_t *err)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    fprintf(errs, "%s\n", msg);
}

static void to_file(void *arg, const char *msg)
{
    fprintf(arg, "%s\n", msg);
}

int mw_check(const char *conf_path, FILE *out, FILE *errs)
{
    mw_setup_t s = {NULL, NULL, NULL, NULL};
    const suspect_conf_t *c;
    suspect_limits_t *lim;
    suspect_err_t err;
    size_t bad;

    suspect_err_clear(&err);
    if (mw_setup_load(&s, conf_path, &err) != SUSPECT_OK) {
        print_err(errs, &err);
        mw_setup_release(&s);
        return 1;
    }
    c = s.conf;
    lim = s.limits;
    for (size_t i = 0; i < suspect_conf_warning_count(c); i++) {
        fprintf(errs, "%s\n", suspect_conf_warning(c, i));
    }
    for (size_t i = 0; i < suspect_limits_warning_count(lim); i++) {
        fprintf(errs, "%s\n", suspect_limits_warning(lim, i));
    }
    bad = suspect_conf_missing_actions(c, lim, to_file, errs);
    fprintf(out, "%s: %s\n", conf_path, bad == 0 ? "ok" : "errors");
    print_settings(out, c);
    fprintf(out, "routes (first match wins):\n");
    for (size_t i = 0; i < c->nroutes; i++) {
        print_route(out, i, c, &c->routes[i], lim);
    }
    fprintf(out, "limits (%s):\n", c->limits_path);
    for (size_t i = 0; i < suspect_limits_count(lim); i++) {
        const suspect_rule_t *r = suspect_limits_at(lim, i);

        fprintf(out, "  %-28s ", r->action);
        print_rule(out, r);
        fprintf(out, "  (line %d)\n", suspect_limits_line(lim, i));
    }
    mw_setup_release(&s);
    return bad == 0 ? 0 : 1;
}
