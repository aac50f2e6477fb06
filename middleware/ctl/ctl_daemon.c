/*
 * ctl_daemon.c - suspectctl stats and reload: questions only a running
 * suspect-fcgi can answer, asked on its control socket (ctl_remote.c).
 *
 * stats: what the daemon decided since it started, per action and
 * outcome (the counters behind suspect_decisions_total), and the locks
 * its decisions created.  reload: both files loaded now, as on SIGHUP,
 * and for each what became of it: applied, unchanged, or rejected with
 * the file:line that kept the running one.  Without a daemon both exit 3.
 * Only suspect.xml is read here (to find the socket): a limits file being
 * edited is the daemon's to judge, and reload says what it found.
 */
#include "ctl_internal.h"

#include <string.h>

#include "metrics/metrics.h"

/* Connects to the daemon; CTL_OK, or CTL_STORE (reported) when none
 * answers. */
static int need_daemon(ctl_t *c)
{
    int rc;

    if (c->direct) {
        return ctl_usage(c, "stats | reload (they ask the daemon: not with "
                            "--direct)");
    }
    rc = ctl_load_conf(c);
    if (rc != CTL_OK) {
        return rc;
    }
    rc = ctl_connect(c, true);
    if (rc == CTL_OK && !c->daemon) {
        return ctl_fail(c, CTL_STORE,
                        "%s needs the running suspect-fcgi, and none answers "
                        "at %s",
                        c->command, c->sock != NULL ? c->sock : "(no socket)");
    }
    return rc;
}

/* The count of outcome o of action a in r, or 0. */
static int64_t count_of(const mw_ctl_msg_t *r, const char *a, const char *o)
{
    int64_t v = 0;

    for (size_t i = 0; i < r->nlines; i++) {
        const mw_ctl_line_t *l = &r->lines[i];

        if (strcmp(l->name, MW_CTL_REP_DECISIONS) == 0 && l->nargs == 3 &&
            strcmp(l->arg[0].p, a) == 0 && strcmp(l->arg[1].p, o) == 0) {
            mw_ctl_arg_i64(&l->arg[2], &v);
        }
    }
    return v;
}

/* The actions of r, each once, in the order they come. */
static size_t actions_of(const mw_ctl_msg_t *r, const char **out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < r->nlines && n < max; i++) {
        const mw_ctl_line_t *l = &r->lines[i];
        bool seen = false;

        if ((strcmp(l->name, MW_CTL_REP_DECISIONS) != 0 &&
             strcmp(l->name, MW_CTL_REP_LOCKS_CREATED) != 0) ||
            l->nargs < 2) {
            continue;
        }
        for (size_t k = 0; k < n && !seen; k++) {
            seen = strcmp(out[k], l->arg[0].p) == 0;
        }
        if (!seen) {
            out[n++] = l->arg[0].p;
        }
    }
    return n;
}

static int64_t locks_of(const mw_ctl_msg_t *r, const char *a)
{
    int64_t v = 0;

    for (size_t i = 0; i < r->nlines; i++) {
        const mw_ctl_line_t *l = &r->lines[i];

        if (strcmp(l->name, MW_CTL_REP_LOCKS_CREATED) == 0 && l->nargs == 2 &&
            strcmp(l->arg[0].p, a) == 0) {
            mw_ctl_arg_i64(&l->arg[1], &v);
        }
    }
    return v;
}

static void stats_human(ctl_t *c, const mw_ctl_msg_t *r, const char **acts,
                        size_t n)
{
    int64_t since = 0, full = 0;
    char buf[48];

    mw_ctl_get_i64(r, MW_CTL_REP_STARTED_MS, &since);
    fprintf(c->out, "suspect-fcgi pid %lld, decisions since %s:\n",
            (long long)c->daemon_pid, ctl_time(since, buf));
    if (n == 0) {
        fprintf(c->out, "  none yet\n");
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(c->out, "  %s:", acts[i]);
        for (int o = 0; o < MW_OUT_COUNT; o++) {
            const char *name =
                mw_decision_outcome_name((mw_decision_outcome_t)o);
            int64_t v = count_of(r, acts[i], name);

            if (v != 0) {
                fprintf(c->out, " %s %lld", name, (long long)v);
            }
        }
        if (locks_of(r, acts[i]) != 0) {
            fprintf(c->out, "; locks created %lld",
                    (long long)locks_of(r, acts[i]));
        }
        fputc('\n', c->out);
    }
    if (mw_ctl_get_i64(r, MW_CTL_REP_STORE_FULL, &full) && full > 0) {
        fprintf(c->out, "  store full (no room for a new identity): %lld\n",
                (long long)full);
    }
}

static void stats_json(ctl_t *c, const mw_ctl_msg_t *r, const char **acts,
                       size_t n)
{
    int64_t since = 0, full = 0;
    ctl_json_t j;

    mw_ctl_get_i64(r, MW_CTL_REP_STARTED_MS, &since);
    cj_begin(&j, c, CTL_OK);
    cj_int(&j, "pid", c->daemon_pid);
    cj_time(&j, "since", since);
    cj_obj(&j, "actions");
    for (size_t i = 0; i < n; i++) {
        cj_obj(&j, acts[i]);
        for (int o = 0; o < MW_OUT_COUNT; o++) {
            const char *name =
                mw_decision_outcome_name((mw_decision_outcome_t)o);

            cj_int(&j, name, count_of(r, acts[i], name));
        }
        cj_int(&j, "locks_created", locks_of(r, acts[i]));
        cj_end(&j);
    }
    cj_end(&j);
    mw_ctl_get_i64(r, MW_CTL_REP_STORE_FULL, &full);
    cj_int(&j, "store_full", full);
    cj_finish(&j);
}

/* stats */
int ctl_cmd_stats(ctl_t *c, int argc, char **argv)
{
    const char *acts[1024];
    mw_ctl_msg_t r;
    size_t n;
    int rc;

    (void)argv;
    if (argc != 0 || c->key != NULL) {
        return ctl_usage(c, "stats");
    }
    rc = need_daemon(c);
    if (rc == CTL_OK) {
        rc = ctl_op_call(c, MW_CTL_CMD_STATS, &r);
    }
    if (rc != CTL_OK) {
        return rc;
    }
    n = actions_of(&r, acts, sizeof(acts) / sizeof(acts[0]));
    if (c->json) {
        stats_json(c, &r, acts, n);
    } else {
        stats_human(c, &r, acts, n);
    }
    mw_ctl_msg_free(&r);
    return CTL_OK;
}

/* One file's outcome: "applied", "unchanged" or "rejected" and why. */
static void outcome(const mw_ctl_msg_t *r, const char *name,
                    const char **result, const char **why)
{
    const mw_ctl_line_t *l = mw_ctl_get(r, name);

    *result = l != NULL && l->nargs > 0 ? l->arg[0].p : "?";
    *why = l != NULL && l->nargs > 1 ? l->arg[1].p : NULL;
}

/* reload: exit 1 when a file was rejected. */
int ctl_cmd_reload(ctl_t *c, int argc, char **argv)
{
    const char *conf, *conf_why, *limits, *limits_why;
    mw_ctl_msg_t r;
    ctl_json_t j;
    int rc;

    (void)argv;
    if (argc != 0 || c->key != NULL) {
        return ctl_usage(c, "reload");
    }
    rc = need_daemon(c);
    if (rc == CTL_OK) {
        rc = ctl_op_call(c, MW_CTL_CMD_RELOAD, &r);
    }
    if (rc != CTL_OK) {
        return rc;
    }
    outcome(&r, MW_CTL_REP_CONF, &conf, &conf_why);
    outcome(&r, MW_CTL_REP_LIMITS, &limits, &limits_why);
    rc = conf_why != NULL || limits_why != NULL ? CTL_CONFIG : CTL_OK;
    if (c->json) {
        cj_begin(&j, c, rc);
        cj_int(&j, "pid", c->daemon_pid);
        cj_obj(&j, "config");
        cj_str(&j, "result", conf);
        cj_str(&j, "error", conf_why);
        cj_end(&j);
        cj_obj(&j, "limits");
        cj_str(&j, "result", limits);
        cj_str(&j, "error", limits_why);
        cj_finish(&j);
    } else {
        fprintf(c->out, "%s: %s%s%s\n", c->conf_path, conf,
                conf_why != NULL ? ": " : "", conf_why != NULL ? conf_why : "");
        fprintf(c->out, "%s: %s%s%s\n", c->setup.conf->limits_path, limits,
                limits_why != NULL ? ": " : "",
                limits_why != NULL ? limits_why : "");
    }
    mw_ctl_msg_free(&r);
    return rc;
}
