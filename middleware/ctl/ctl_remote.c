/*
 * ctl_remote.c - suspectctl through the daemon's control socket, and the
 * choice between it and the store itself.
 *
 * ctl_connect() runs once per command that needs counts.  Unless --direct
 * is given it asks the control socket of suspect.xml (or --socket) who is
 * there ("hello"): when a suspect-fcgi answers and runs this very
 * suspect.xml, every operation goes to it (docs/control.md), for every
 * store, the memory store included, and an unblock reaches its lock cache
 * at once.  When nobody answers, lmdb and redis are opened directly
 * (ctl_open_store(), as without a daemon), and the memory store, which
 * lives inside the daemon, is an error that says so.  A socket the user
 * may not use is said on stderr, then the store is used directly.
 *
 * The operations below take the target the commands built (its key, built
 * exactly as the guard builds it) and answer from the daemon or the store
 * alike, so the commands print the same either way.
 */
#include "ctl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_io.h"

/* An operator's command may take a while on a large Redis (locked). */
#define REMOTE_TIMEOUT_MS 30000

/* ---- one exchange ------------------------------------------------------- */

/* The exit status of a reply's "error CODE". */
static int error_exit(const char *code)
{
    if (strcmp(code, MW_CTL_ERR_USAGE) == 0) {
        return CTL_USAGE;
    }
    return strcmp(code, MW_CTL_ERR_NOTFOUND) == 0 ? CTL_NOTFOUND : CTL_STORE;
}

/* Ends req (begun, with its lines), sends it to path and reads the reply
 * into *r (the caller frees it); a suspect_rc_t, err says why. */
static int exchange(const char *path, mw_ctl_out_t *req, mw_ctl_msg_t *r,
                    suspect_err_t *err)
{
    suspect_rc_t rc = mw_ctl_out_end(req);

    if (rc == SUSPECT_OK) {
        rc = mw_ctl_call(path, req->buf, req->len, REMOTE_TIMEOUT_MS, r, err);
    } else {
        suspect_err_set(err, rc, NULL, 0, "control request: out of memory");
    }
    mw_ctl_out_free(req);
    if (rc == SUSPECT_OK && r->version != MW_CTL_VERSION) {
        rc = suspect_err_set(err, SUSPECT_E_PARSE, NULL, 0,
                             "%s: the daemon speaks control protocol "
                             "version %u, not %u",
                             path, r->version, MW_CTL_VERSION);
    }
    return rc;
}

/* Begins a request for command. */
static void request(mw_ctl_out_t *req, const char *command)
{
    memset(req, 0, sizeof(*req));
    mw_ctl_out_begin(req);
    mw_ctl_out_field(req, MW_CTL_REQ_COMMAND, command);
}

/* Sends req to the daemon; CTL_OK with an "ok" reply in *r, else the
 * failure reported with its exit status (*r freed). */
static int remote(ctl_t *c, mw_ctl_out_t *req, mw_ctl_msg_t *r)
{
    const mw_ctl_line_t *e;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (exchange(c->sock, req, r, &err) != SUSPECT_OK) {
        return ctl_fail_err(c, CTL_STORE, c->sock, &err);
    }
    e = mw_ctl_get(r, MW_CTL_REP_ERROR);
    if (e != NULL && e->nargs >= 2) {
        int code = error_exit(e->arg[0].p);
        int rc = ctl_fail(c, code, "%s", e->arg[1].p);

        mw_ctl_msg_free(r);
        return rc;
    }
    if (mw_ctl_get(r, MW_CTL_REP_OK) == NULL) {
        mw_ctl_msg_free(r);
        return ctl_fail(c, CTL_STORE, "%s: a reply without ok or error",
                        c->sock);
    }
    return CTL_OK;
}

/* The reply's integer field name, 0 when it has none. */
static int64_t field(const mw_ctl_msg_t *r, const char *name)
{
    int64_t v = 0;

    return mw_ctl_get_i64(r, name, &v) ? v : 0;
}

/* Adds the target's key (and action) to req. */
static void target_fields(mw_ctl_out_t *req, const ctl_target_t *t)
{
    if (t->action != NULL) {
        mw_ctl_out_field(req, MW_CTL_REQ_ACTION, t->action);
    }
    mw_ctl_out_line(req, MW_CTL_REQ_KEY);
    mw_ctl_out_arg(req, t->key.buf, t->key.window_len);
}

/* ---- choosing ----------------------------------------------------------- */

/* Whether the daemon's suspect.xml (its reply's "config") is ours. */
static bool same_config(const ctl_t *c, const mw_ctl_msg_t *r)
{
    const char *theirs = mw_ctl_get_str(r, MW_CTL_REP_CONFIG, NULL);
    char *ours = realpath(c->conf_path, NULL);
    bool same = theirs != NULL && ours != NULL && strcmp(theirs, ours) == 0;

    free(ours);
    return same;
}

/* Without a daemon: the store itself, or a failure for the memory store. */
static int no_daemon(ctl_t *c, bool memory_ok, const char *why)
{
    if (c->setup.conf->store != SUSPECT_STORE_MEMORY) {
        return ctl_open_store(c, memory_ok);
    }
    if (memory_ok) {
        return CTL_OK;
    }
    return ctl_fail(c, CTL_STORE,
                    "%s; the memory store lives inside suspect-fcgi: start it "
                    "(or name its socket with --socket)",
                    why);
}

int ctl_connect(ctl_t *c, bool memory_ok)
{
    mw_ctl_out_t req;
    mw_ctl_msg_t r;
    suspect_err_t err;
    char why[700];
    const mw_ctl_line_t *e;

    c->via = "store";
    c->sock = c->socket != NULL
                  ? c->socket
                  : suspect_conf_control_path(c->setup.conf, c->sock_buf,
                                              sizeof(c->sock_buf));
    if (c->direct || c->sock == NULL) {
        return no_daemon(c, memory_ok,
                         c->direct ? "--direct" : "<Control enabled=\"no\">");
    }
    request(&req, MW_CTL_CMD_HELLO);
    suspect_err_clear(&err);
    if (exchange(c->sock, &req, &r, &err) != SUSPECT_OK) {
        suspect_err_format(&err, why, sizeof(why));
        if (err.code == SUSPECT_E_NOTFOUND) {
            return no_daemon(c, memory_ok, why);
        }
        if (err.code == SUSPECT_E_IO && err.sys_errno == EACCES &&
            c->setup.conf->store != SUSPECT_STORE_MEMORY) {
            fprintf(c->errs, "suspectctl: %s; using the store directly\n", why);
            return ctl_open_store(c, memory_ok);
        }
        return ctl_fail(c, CTL_STORE, "%s", why);
    }
    e = mw_ctl_get(&r, MW_CTL_REP_ERROR);
    if (e != NULL && e->nargs >= 2) {
        snprintf(why, sizeof(why), "%s: %s", c->sock, e->arg[1].p);
        mw_ctl_msg_free(&r);
        if (c->setup.conf->store != SUSPECT_STORE_MEMORY) {
            fprintf(c->errs, "suspectctl: %s; using the store directly\n", why);
            return ctl_open_store(c, memory_ok);
        }
        return ctl_fail(c, CTL_STORE, "%s", why);
    }
    if (!same_config(c, &r)) {
        const char *theirs = mw_ctl_get_str(&r, MW_CTL_REP_CONFIG, NULL);

        snprintf(why, sizeof(why),
                 "the suspect-fcgi at %s runs %s, not %s: name its own "
                 "socket with --socket, or use --direct",
                 c->sock, theirs != NULL ? theirs : "?", c->conf_path);
        mw_ctl_msg_free(&r);
        return ctl_fail(c, CTL_STORE, "%s", why);
    }
    c->daemon_pid = field(&r, MW_CTL_REP_PID);
    mw_ctl_msg_free(&r);
    c->daemon = true;
    c->via = "daemon";
    return CTL_OK;
}

/* ---- the operations ----------------------------------------------------- */

int ctl_op_status(ctl_t *c, const ctl_target_t *t, suspect_rule_t *rule,
                  suspect_status_t *st)
{
    mw_ctl_out_t req;
    mw_ctl_msg_t r;
    suspect_err_t err;
    int rc;

    memset(st, 0, sizeof(*st));
    if (!c->daemon) {
        *rule = *t->rule;
        suspect_err_clear(&err);
        return suspect_store_status(c->setup.store, t->rule, &t->key, c->now_ms,
                                    st, &err) == SUSPECT_OK
                   ? CTL_OK
                   : ctl_fail_err(c, CTL_STORE, "status", &err);
    }
    request(&req, MW_CTL_CMD_STATUS);
    target_fields(&req, t);
    rc = remote(c, &req, &r);
    if (rc != CTL_OK) {
        return rc;
    }
    rule->action = t->action;
    rule->limit_count = (uint32_t)field(&r, MW_CTL_REP_LIMIT);
    rule->window_s = (uint32_t)field(&r, MW_CTL_REP_WINDOW_S);
    rule->block_s = (uint32_t)field(&r, MW_CTL_REP_BLOCK_S);
    st->in_window = (uint32_t)field(&r, MW_CTL_REP_IN_WINDOW);
    st->remaining = (uint32_t)field(&r, MW_CTL_REP_REMAINING);
    st->locked_until_ms = field(&r, MW_CTL_REP_LOCKED_UNTIL_MS);
    st->free_at_ms = field(&r, MW_CTL_REP_FREE_AT_MS);
    c->now_ms = field(&r, MW_CTL_REP_NOW_MS);
    mw_ctl_msg_free(&r);
    return CTL_OK;
}

int ctl_op_unblock(ctl_t *c, const ctl_target_t *t, suspect_unblock_t *u)
{
    mw_ctl_out_t req;
    mw_ctl_msg_t r;
    suspect_err_t err;
    int rc;

    memset(u, 0, sizeof(*u));
    if (!c->daemon) {
        suspect_err_clear(&err);
        return suspect_store_unblock(c->setup.store, t->rule, &t->key,
                                     c->now_ms, u, &err) == SUSPECT_OK
                   ? CTL_OK
                   : ctl_fail_err(c, CTL_STORE, "unblock", &err);
    }
    request(&req, MW_CTL_CMD_UNBLOCK);
    target_fields(&req, t);
    rc = remote(c, &req, &r);
    if (rc != CTL_OK) {
        return rc;
    }
    u->lock_until_ms = field(&r, MW_CTL_REP_LOCK_UNTIL_MS);
    u->dropped = (uint32_t)field(&r, MW_CTL_REP_DROPPED);
    u->kept = (uint32_t)field(&r, MW_CTL_REP_KEPT);
    c->now_ms = field(&r, MW_CTL_REP_NOW_MS);
    mw_ctl_msg_free(&r);
    return CTL_OK;
}

int ctl_op_reset(ctl_t *c, const ctl_target_t *t)
{
    mw_ctl_out_t req;
    mw_ctl_msg_t r;
    suspect_err_t err;
    int rc;

    if (!c->daemon) {
        suspect_err_clear(&err);
        return suspect_store_reset(c->setup.store, &t->key, SUSPECT_RESET_ALL,
                                   &err) == SUSPECT_OK
                   ? CTL_OK
                   : ctl_fail_err(c, CTL_STORE, "reset", &err);
    }
    request(&req, MW_CTL_CMD_RESET);
    target_fields(&req, t);
    rc = remote(c, &req, &r);
    if (rc == CTL_OK) {
        mw_ctl_msg_free(&r);
    }
    return rc;
}

int ctl_op_block(ctl_t *c, const ctl_target_t *t, uint32_t secs,
                 int64_t *until_ms)
{
    mw_ctl_out_t req;
    mw_ctl_msg_t r;
    suspect_err_t err;
    int rc;

    if (!c->daemon) {
        *until_ms = c->now_ms + (int64_t)secs * 1000;
        suspect_err_clear(&err);
        return suspect_store_block(c->setup.store, &t->key, c->now_ms,
                                   *until_ms, &err) == SUSPECT_OK
                   ? CTL_OK
                   : ctl_fail_err(c, CTL_STORE, "block", &err);
    }
    request(&req, MW_CTL_CMD_BLOCK);
    target_fields(&req, t);
    mw_ctl_out_field_i64(&req, MW_CTL_REQ_SECONDS, secs);
    rc = remote(c, &req, &r);
    if (rc != CTL_OK) {
        return rc;
    }
    *until_ms = field(&r, MW_CTL_REP_UNTIL_MS);
    c->now_ms = field(&r, MW_CTL_REP_NOW_MS);
    mw_ctl_msg_free(&r);
    return CTL_OK;
}

int ctl_op_locked(ctl_t *c, const char *prefix, suspect_locked_fn fn, void *arg)
{
    mw_ctl_out_t req;
    mw_ctl_msg_t r;
    int rc;

    request(&req, MW_CTL_CMD_LOCKED);
    if (prefix != NULL && prefix[0] != '\0') {
        mw_ctl_out_field(&req, MW_CTL_REQ_PREFIX, prefix);
    }
    rc = remote(c, &req, &r);
    if (rc != CTL_OK) {
        return rc;
    }
    c->now_ms = field(&r, MW_CTL_REP_NOW_MS);
    if (field(&r, MW_CTL_REP_TRUNCATED) > 0) {
        fprintf(c->errs,
                "suspectctl: the daemon lists %lld locks at most; %lld more "
                "are not shown\n",
                (long long)(field(&r, MW_CTL_REP_COUNT) -
                            field(&r, MW_CTL_REP_TRUNCATED)),
                (long long)field(&r, MW_CTL_REP_TRUNCATED));
    }
    for (size_t i = 0; i < r.nlines; i++) {
        const mw_ctl_line_t *l = &r.lines[i];
        int64_t until;

        if (strcmp(l->name, MW_CTL_REP_LOCK) == 0 && l->nargs == 2 &&
            mw_ctl_arg_i64(&l->arg[1], &until) &&
            fn(arg, l->arg[0].p, l->arg[0].len, until) != 0) {
            break;
        }
    }
    mw_ctl_msg_free(&r);
    return CTL_OK;
}

int ctl_op_call(ctl_t *c, const char *command, mw_ctl_msg_t *r)
{
    mw_ctl_out_t req;

    request(&req, command);
    return remote(c, &req, r);
}
