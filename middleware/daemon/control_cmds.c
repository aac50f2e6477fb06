/*
 * control_cmds.c - what suspect-fcgi answers on its control socket: one
 * function per command of the control protocol (docs/control.md), on the
 * running daemon's store, limits, metrics and reloads.
 *
 * Every reply starts with "ok" or "error CODE TEXT" (CODE: usage,
 * notfound, store, internal), then says which daemon answered ("config",
 * "pid", "store", "now_ms"), then the command's fields.  Identities come
 * as keys, built by suspectctl from the same suspect.xml exactly as the
 * guard builds them; the rule of an action is the daemon's own (its
 * current limits snapshot).
 *
 * The store calls are the generic ones of suspect_store.h, so every store
 * answers alike: for lmdb and redis the failover wrapper passes them to
 * the store and also clears its lock cache and journal (an unblock
 * reaches this daemon's next request at once), for memory they reach the
 * only place its counts live.  This file knows no store by name.
 */
#include "control_cmds.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "runtime.h"

/* Locks listed in one reply at most; the reply says how many more. */
#define LOCKED_MAX 10000

typedef struct cmd_ctx {
    mw_runtime_t *rt;
    const mw_ctl_msg_t *req;
    mw_ctl_out_t *reply;
    int64_t now_ms;
} cmd_ctx_t;

/* ---- the reply's head --------------------------------------------------- */

static void who(const cmd_ctx_t *x)
{
    mw_ctl_out_field(x->reply, MW_CTL_REP_CONFIG, mw_runtime_conf_path(x->rt));
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_PID, (int64_t)getpid());
    mw_ctl_out_field(x->reply, MW_CTL_REP_STORE,
                     suspect_conf_store_name(mw_runtime_conf(x->rt)->store));
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_NOW_MS, x->now_ms);
}

static void ok(const cmd_ctx_t *x)
{
    mw_ctl_out_line(x->reply, MW_CTL_REP_OK);
    who(x);
}

static void fail(const cmd_ctx_t *x, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(const cmd_ctx_t *x, const char *code, const char *fmt, ...)
{
    char text[700];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    mw_ctl_out_line(x->reply, MW_CTL_REP_ERROR);
    mw_ctl_out_str(x->reply, code);
    mw_ctl_out_str(x->reply, text);
    who(x);
}

static void fail_err(const cmd_ctx_t *x, const char *what,
                     const suspect_err_t *err)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    fail(x, MW_CTL_ERR_STORE, "%s: %s", what, msg);
}

/* ---- operands ----------------------------------------------------------- */

/* The request's key into k; false (reply written) when missing or not a
 * key. */
static bool get_key(const cmd_ctx_t *x, suspect_key_t *k)
{
    size_t len = 0;
    const char *key = mw_ctl_get_str(x->req, MW_CTL_REQ_KEY, &len);

    if (key == NULL || len + SUSPECT_LOCK_SUFFIX_LEN >= sizeof(k->buf) ||
        memchr(key, '\0', len) != NULL) {
        fail(x, MW_CTL_ERR_USAGE, "a key of 1 to %zu bytes is needed",
             sizeof(k->buf) - SUSPECT_LOCK_SUFFIX_LEN - 1);
        return false;
    }
    memcpy(k->buf, key, len);
    memcpy(k->buf + len, SUSPECT_LOCK_SUFFIX, SUSPECT_LOCK_SUFFIX_LEN + 1);
    k->window_len = len;
    k->lock_len = len + SUSPECT_LOCK_SUFFIX_LEN;
    return true;
}

/* The rule of the request's action in the daemon's limits (*lim gets the
 * snapshot, which the caller unrefs); NULL (reply written) when none. */
static const suspect_rule_t *get_rule(const cmd_ctx_t *x,
                                      suspect_limits_t **lim)
{
    const char *action = mw_ctl_get_str(x->req, MW_CTL_REQ_ACTION, NULL);
    const suspect_rule_t *rule = NULL;
    mw_guard_t *g;

    mw_runtime_acquire(x->rt, &g, lim);
    if (action != NULL) {
        rule = suspect_limits_find(*lim, action);
    }
    if (rule == NULL) {
        fail(x, MW_CTL_ERR_NOTFOUND, "action %s is not in %s",
             action != NULL ? action : "(none)", mw_guard_conf(g)->limits_path);
    }
    mw_guard_unref(g);
    return rule;
}

static void rule_fields(const cmd_ctx_t *x, const suspect_rule_t *r)
{
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_LIMIT, r->limit_count);
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_WINDOW_S, r->window_s);
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_BLOCK_S, r->block_s);
    if (r->algorithm != SUSPECT_ALGO_LOG) {
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_ALGORITHM, r->algorithm);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_BURST,
                             suspect_rule_capacity(r));
    }
}

/* ---- the commands ------------------------------------------------------- */

static void cmd_status(cmd_ctx_t *x)
{
    suspect_limits_t *lim = NULL;
    const suspect_rule_t *rule;
    suspect_status_t st;
    suspect_key_t k;
    suspect_err_t err;

    if (!get_key(x, &k) || (rule = get_rule(x, &lim)) == NULL) {
        suspect_limits_unref(lim);
        return;
    }
    suspect_err_clear(&err);
    if (suspect_store_status(mw_runtime_store(x->rt), rule, &k, x->now_ms, &st,
                             &err) != SUSPECT_OK) {
        fail_err(x, "status", &err);
    } else {
        ok(x);
        rule_fields(x, rule);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_IN_WINDOW, st.in_window);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_REMAINING, st.remaining);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_LOCKED_UNTIL_MS,
                             st.locked_until_ms);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_FREE_AT_MS, st.free_at_ms);
        if (rule->algorithm != SUSPECT_ALGO_LOG) {
            mw_ctl_out_field_i64(x->reply, MW_CTL_REP_FULL_AT_MS,
                                 st.full_at_ms);
        }
    }
    suspect_limits_unref(lim);
}

static void cmd_unblock(cmd_ctx_t *x)
{
    suspect_limits_t *lim = NULL;
    const suspect_rule_t *rule;
    suspect_unblock_t u;
    suspect_key_t k;
    suspect_err_t err;

    if (!get_key(x, &k) || (rule = get_rule(x, &lim)) == NULL) {
        suspect_limits_unref(lim);
        return;
    }
    suspect_err_clear(&err);
    if (suspect_store_unblock(mw_runtime_store(x->rt), rule, &k, x->now_ms, &u,
                              &err) != SUSPECT_OK) {
        fail_err(x, "unblock", &err);
    } else {
        ok(x);
        rule_fields(x, rule);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_LOCK_UNTIL_MS,
                             u.lock_until_ms);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_DROPPED, u.dropped);
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_KEPT, u.kept);
    }
    suspect_limits_unref(lim);
}

static void cmd_reset(cmd_ctx_t *x)
{
    suspect_key_t k;
    suspect_err_t err;

    if (!get_key(x, &k)) {
        return;
    }
    suspect_err_clear(&err);
    if (suspect_store_reset(mw_runtime_store(x->rt), &k, SUSPECT_RESET_ALL,
                            &err) != SUSPECT_OK) {
        fail_err(x, "reset", &err);
        return;
    }
    ok(x);
}

static void cmd_block(cmd_ctx_t *x)
{
    int64_t secs = 0, until;
    suspect_key_t k;
    suspect_err_t err;

    if (!get_key(x, &k)) {
        return;
    }
    if (!mw_ctl_get_i64(x->req, MW_CTL_REQ_SECONDS, &secs) || secs < 1 ||
        secs > SUSPECT_DURATION_MAX) {
        fail(x, MW_CTL_ERR_USAGE, "seconds must be 1 to %u",
             SUSPECT_DURATION_MAX);
        return;
    }
    until = x->now_ms + secs * 1000;
    suspect_err_clear(&err);
    if (suspect_store_block(mw_runtime_store(x->rt), &k, x->now_ms, until,
                            &err) != SUSPECT_OK) {
        fail_err(x, "block", &err);
        return;
    }
    ok(x);
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_UNTIL_MS, until);
}

typedef struct lock_list {
    mw_ctl_out_t *reply;
    size_t count;
} lock_list_t;

static int one_lock(void *arg, const char *key, size_t len, int64_t until_ms)
{
    lock_list_t *l = arg;

    if (l->count++ < LOCKED_MAX) {
        mw_ctl_out_line(l->reply, MW_CTL_REP_LOCK);
        mw_ctl_out_arg(l->reply, key, len);
        mw_ctl_out_i64(l->reply, until_ms);
    }
    return 0;
}

static void cmd_locked(cmd_ctx_t *x)
{
    const char *prefix = mw_ctl_get_str(x->req, MW_CTL_REQ_PREFIX, NULL);
    lock_list_t l = {x->reply, 0};
    mw_ctl_out_t probe;
    suspect_err_t err;

    /* The store is asked first into a scratch reply: an error then
     * replaces nothing already written. */
    memset(&probe, 0, sizeof(probe));
    mw_ctl_out_begin(&probe);
    l.reply = &probe;
    suspect_err_clear(&err);
    if (suspect_store_foreach_locked(mw_runtime_store(x->rt), prefix, x->now_ms,
                                     one_lock, &l, &err) != SUSPECT_OK) {
        mw_ctl_out_free(&probe);
        fail_err(x, "locked", &err);
        return;
    }
    ok(x);
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_COUNT, (int64_t)l.count);
    if (l.count > LOCKED_MAX) {
        mw_ctl_out_field_i64(x->reply, MW_CTL_REP_TRUNCATED,
                             (int64_t)(l.count - LOCKED_MAX));
    }
    mw_ctl_out_append(x->reply, &probe);
    mw_ctl_out_free(&probe);
}

static int one_row(void *arg, const mw_metrics_row_t *r)
{
    mw_ctl_out_t *reply = arg;

    for (int o = 0; o < MW_OUT_COUNT; o++) {
        if (r->outcome[o] == 0) {
            continue;
        }
        mw_ctl_out_line(reply, MW_CTL_REP_DECISIONS);
        mw_ctl_out_str(reply, r->action);
        mw_ctl_out_str(reply,
                       mw_decision_outcome_name((mw_decision_outcome_t)o));
        mw_ctl_out_i64(reply, (int64_t)r->outcome[o]);
    }
    if (r->locks_created > 0) {
        mw_ctl_out_line(reply, MW_CTL_REP_LOCKS_CREATED);
        mw_ctl_out_str(reply, r->action);
        mw_ctl_out_i64(reply, (int64_t)r->locks_created);
    }
    return 0;
}

static void cmd_stats(cmd_ctx_t *x)
{
    ok(x);
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_STARTED_MS,
                         mw_runtime_started_ms(x->rt));
    mw_ctl_out_field_i64(x->reply, MW_CTL_REP_STORE_FULL,
                         (int64_t)mw_runtime_store_full(x->rt));
    mw_metrics_foreach_row(mw_runtime_metrics(x->rt), one_row, x->reply);
}

static const char *const result_names[] = {
    MW_CTL_RELOAD_UNCHANGED, MW_CTL_RELOAD_APPLIED, MW_CTL_RELOAD_REJECTED};

static void cmd_reload(cmd_ctx_t *x)
{
    mw_reload_report_t rep;

    mw_runtime_reload(x->rt, true, &rep);
    ok(x);
    mw_ctl_out_line(x->reply, MW_CTL_REP_CONF);
    mw_ctl_out_str(x->reply, result_names[rep.conf]);
    if (rep.conf == MW_RELOAD_REJECTED) {
        mw_ctl_out_str(x->reply, rep.conf_why);
    }
    mw_ctl_out_line(x->reply, MW_CTL_REP_LIMITS);
    mw_ctl_out_str(x->reply, result_names[rep.limits]);
    if (rep.limits == MW_RELOAD_REJECTED) {
        mw_ctl_out_str(x->reply, rep.limits_why);
    }
}

static void cmd_hello(cmd_ctx_t *x)
{
    ok(x);
}

static const struct {
    const char *name;
    void (*run)(cmd_ctx_t *x);
} commands[] = {
    {MW_CTL_CMD_HELLO, cmd_hello},     {MW_CTL_CMD_STATUS, cmd_status},
    {MW_CTL_CMD_UNBLOCK, cmd_unblock}, {MW_CTL_CMD_RESET, cmd_reset},
    {MW_CTL_CMD_BLOCK, cmd_block},     {MW_CTL_CMD_LOCKED, cmd_locked},
    {MW_CTL_CMD_STATS, cmd_stats},     {MW_CTL_CMD_RELOAD, cmd_reload}};

void mw_control_serve(void *arg, const mw_ctl_msg_t *req, mw_ctl_out_t *reply)
{
    cmd_ctx_t x = {arg, req, reply, wall_ms()};
    const char *name = mw_ctl_get_str(req, MW_CTL_REQ_COMMAND, NULL);

    for (size_t i = 0; name != NULL && i < sizeof(commands) / sizeof(*commands);
         i++) {
        if (strcmp(commands[i].name, name) == 0) {
            commands[i].run(&x);
            return;
        }
    }
    fail(&x, MW_CTL_ERR_USAGE,
         "unknown command (hello, status, unblock, reset, block, locked, "
         "stats, reload)");
}
