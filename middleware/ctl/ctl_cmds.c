/*
 * ctl_cmds.c - suspectctl check, status, unblock, reset and block.
 *
 * check is suspect-fcgi --check (mw_check), its report captured for
 * --json.  The others name one identity of one action (ctl_target: the key
 * the guard builds) and make one call of the store interface, by the
 * daemon or by suspectctl itself: status, unblock (the lock, and the
 * oldest hits of a full window, so the next request is allowed: it says
 * how many), reset (the lock and every hit) or block.  Each prints what it
 * did, or one JSON object.
 *
 * Where: the running suspect-fcgi of suspect.xml, through its control
 * socket, else the store itself (ctl_remote.c).  A daemon on lmdb or redis
 * keeps a small cache of the locks it has denied by (the failover store's
 * lock cache), trusting each entry for one second: through the socket an
 * unblock or reset clears it at once, from the store directly it reaches
 * it within that second.
 */
#include "ctl_internal.h"

#include <stdlib.h>
#include <string.h>

#include "setup/check.h"

/* ---- check -------------------------------------------------------------- */

/* Writes the lines of text as a JSON array named key. */
static void json_lines(ctl_json_t *j, const char *key, const char *text)
{
    cj_arr(j, key);
    while (text != NULL && *text != '\0') {
        const char *nl = strchr(text, '\n');
        size_t len = nl != NULL ? (size_t)(nl - text) : strlen(text);

        cj_strn(j, NULL, text, len);
        text += len + (nl != NULL ? 1 : 0);
    }
    cj_end(j);
}

/* check: the --check report; CTL_CONFIG when it found errors. */
int ctl_cmd_check(ctl_t *c, int argc, char **argv)
{
    char *report = NULL, *msgs = NULL;
    size_t rlen = 0, mlen = 0;
    FILE *rf, *mf;
    ctl_json_t j;
    int rc;

    (void)argv;
    if (argc != 0) {
        return ctl_usage(c, "check");
    }
    if (!c->json) {
        return mw_check(c->conf_path, c->out, c->errs) == 0 ? CTL_OK
                                                            : CTL_CONFIG;
    }
    rf = open_memstream(&report, &rlen);
    mf = open_memstream(&msgs, &mlen);
    rc = rf != NULL && mf != NULL ? mw_check(c->conf_path, rf, mf) : -1;
    if (rf != NULL) {
        fclose(rf);
    }
    if (mf != NULL) {
        fclose(mf);
    }
    if (rc < 0) {
        rc = ctl_fail(c, CTL_CONFIG, "out of memory");
    } else {
        rc = rc == 0 ? CTL_OK : CTL_CONFIG;
        fputs(msgs, c->errs);
        cj_begin(&j, c, rc);
        cj_str(&j, "config", c->conf_path);
        cj_bool(&j, "valid", rc == CTL_OK);
        json_lines(&j, "messages", msgs);
        cj_str(&j, "report", report);
        cj_finish(&j);
    }
    free(report);
    free(msgs);
    return rc;
}

/* ---- printing a target -------------------------------------------------- */

static void json_target(ctl_json_t *j, const ctl_t *c, const ctl_target_t *t)
{
    cj_str(j, "store", ctl_store_name(c));
    cj_int(j, "now_ms", c->now_ms);
    cj_str(j, "action", t->action);
    cj_str(j, "type", t->type);
    cj_str(j, "identity", t->identity);
    cj_strn(j, "key", t->key.buf, t->key.window_len);
}

static void print_target(const ctl_t *c, const ctl_target_t *t)
{
    if (t->identity != NULL) {
        fprintf(c->out, "%s %s", t->action, t->identity);
    } else {
        fprintf(c->out, "%s", t->action);
    }
    fprintf(c->out, " (%s%s%skey %.*s)\n", t->type != NULL ? "type " : "",
            t->type != NULL ? t->type : "", t->type != NULL ? ", " : "",
            (int)t->key.window_len, t->key.buf);
}

/* "until <local time> (epoch ms N, S s left)" for a lock end. */
static void print_until(const ctl_t *c, const char *label, int64_t ms)
{
    char buf[48];
    int64_t left = ms - c->now_ms;

    fprintf(c->out, "  %-13s %s (epoch ms %lld, %lld s left)\n", label,
            ctl_time(ms, buf), (long long)ms, (long long)((left + 999) / 1000));
}

/* Checks the operands, loads the files and names the target; CTL_OK or a
 * failure (reported). */
static int target_args(ctl_t *c, int argc, char **argv, const char *synopsis,
                       bool need_rule, ctl_target_t *t)
{
    bool ok = c->key != NULL ? argc == 0 : argc == 2 || argc == 3;

    if (!ok) {
        return ctl_usage(c, synopsis);
    }
    if (ctl_load(c) != CTL_OK) {
        return CTL_CONFIG;
    }
    return ctl_target(c, argc > 0 ? argv[0] : NULL, argc > 1 ? argv[1] : NULL,
                      argc > 2 ? argv[2] : NULL, need_rule, t);
}

/* ---- status ------------------------------------------------------------- */

static void status_human(const ctl_t *c, const ctl_target_t *t,
                         const suspect_rule_t *r, const suspect_status_t *st)
{

    print_target(c, t);
    fprintf(c->out, "  %-13s %u per %u s", "limit", r->limit_count,
            r->window_s);
    if (r->block_s > 0) {
        fprintf(c->out, ", then locked %u s", r->block_s);
    }
    if (suspect_rule_escalates(r)) {
        fprintf(c->out, ", x%u.%02u for each repeat up to %u s",
                r->block_factor_pct / 100, r->block_factor_pct % 100,
                r->block_max_s);
    }
    fprintf(c->out, "\n  %-13s %u in the window, %u remaining\n", "hits",
            st->in_window, st->remaining);
    if (st->pending != 0) {
        fprintf(c->out, "  %-13s %u (their responses will tell)\n", "in flight",
                st->pending);
    }
    if (st->offences != 0) {
        fprintf(c->out, "  %-13s %u\n", "offences", st->offences);
        print_until(c, "forgotten at", st->offence_until_ms);
    }
    if (st->locked_until_ms != 0) {
        print_until(c, "locked until", st->locked_until_ms);
    } else {
        fprintf(c->out, "  %-13s no\n", "locked");
    }
    if (st->free_at_ms != 0) {
        print_until(c, "window full", st->free_at_ms);
    }
}

/* status ACTION IDENTITY [TYPE] | status -k KEY */
int ctl_cmd_status(ctl_t *c, int argc, char **argv)
{
    ctl_target_t t;
    suspect_rule_t rule;
    suspect_status_t st;
    ctl_json_t j;
    int rc =
        target_args(c, argc, argv,
                    "status ACTION IDENTITY [TYPE] | status -k KEY", true, &t);

    if (rc == CTL_OK) {
        rc = ctl_connect(c, false);
    }
    if (rc == CTL_OK) {
        rc = ctl_op_status(c, &t, &rule, &st);
    }
    if (rc != CTL_OK) {
        return rc;
    }
    if (!c->json) {
        status_human(c, &t, &rule, &st);
        return CTL_OK;
    }
    cj_begin(&j, c, CTL_OK);
    json_target(&j, c, &t);
    cj_int(&j, "limit", rule.limit_count);
    cj_int(&j, "window_s", rule.window_s);
    cj_int(&j, "block_s", rule.block_s);
    cj_int(&j, "in_window", st.in_window);
    cj_int(&j, "remaining", st.remaining);
    cj_bool(&j, "locked", st.locked_until_ms != 0);
    cj_time(&j, "locked_until", st.locked_until_ms);
    cj_time(&j, "free_at", st.free_at_ms);
    cj_int(&j, "in_flight", st.pending);
    cj_int(&j, "offences", st.offences);
    cj_time(&j, "offences_until", st.offence_until_ms);
    cj_finish(&j);
    return CTL_OK;
}

/* ---- unblock, reset, block ---------------------------------------------- */

/* Prints what a changing command did. */
static void done(ctl_t *c, const ctl_target_t *t, const char *verb,
                 int64_t until_ms)
{
    ctl_json_t j;

    if (c->json) {
        cj_begin(&j, c, CTL_OK);
        json_target(&j, c, t);
        if (until_ms != 0) {
            cj_time(&j, "locked_until", until_ms);
        }
        cj_finish(&j);
        return;
    }
    fprintf(c->out, "%s ", verb);
    print_target(c, t);
    if (until_ms != 0) {
        print_until(c, "locked until", until_ms);
    }
}

/* Prints what an unblock did. */
static void unblocked(ctl_t *c, const ctl_target_t *t,
                      const suspect_unblock_t *u)
{
    ctl_json_t j;

    if (c->json) {
        cj_begin(&j, c, CTL_OK);
        json_target(&j, c, t);
        cj_bool(&j, "lock_dropped", u->lock_until_ms != 0);
        cj_time(&j, "dropped_lock_until", u->lock_until_ms);
        cj_int(&j, "hits_dropped", u->dropped);
        cj_int(&j, "hits_kept", u->kept);
        cj_finish(&j);
        return;
    }
    fprintf(c->out, "unblocked ");
    print_target(c, t);
    if (u->lock_until_ms != 0) {
        print_until(c, "lock dropped", u->lock_until_ms);
    } else {
        fprintf(c->out, "  %-13s none\n", "lock");
    }
    fprintf(c->out,
            "  %-13s %u dropped (the oldest, so one more fits), %u kept: the "
            "next request is allowed\n",
            "hits", u->dropped, u->kept);
}

/* unblock ACTION IDENTITY [TYPE] | unblock -k KEY */
int ctl_cmd_unblock(ctl_t *c, int argc, char **argv)
{
    ctl_target_t t;
    suspect_unblock_t u;
    int rc = target_args(c, argc, argv,
                         "unblock ACTION IDENTITY [TYPE] | unblock -k KEY",
                         true, &t);

    if (rc == CTL_OK) {
        rc = ctl_connect(c, false);
    }
    if (rc == CTL_OK) {
        rc = ctl_op_unblock(c, &t, &u);
    }
    if (rc != CTL_OK) {
        return rc;
    }
    unblocked(c, &t, &u);
    return CTL_OK;
}

/* reset ACTION IDENTITY [TYPE] | reset -k KEY */
int ctl_cmd_reset(ctl_t *c, int argc, char **argv)
{
    ctl_target_t t;
    int rc =
        target_args(c, argc, argv,
                    "reset ACTION IDENTITY [TYPE] | reset -k KEY", false, &t);

    if (rc == CTL_OK) {
        rc = ctl_connect(c, false);
    }
    if (rc == CTL_OK) {
        rc = ctl_op_reset(c, &t);
    }
    if (rc != CTL_OK) {
        return rc;
    }
    done(c, &t, "reset", 0);
    return CTL_OK;
}

/* SECONDS: 1 to a year, digits only; 0 when it is not. */
static uint32_t parse_seconds(const char *s)
{
    uint64_t v = 0;

    if (*s == '\0' || strlen(s) > 9) {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return 0;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    return v <= SUSPECT_DURATION_MAX ? (uint32_t)v : 0;
}

/* block ACTION IDENTITY SECONDS [TYPE] | block -k KEY SECONDS */
int ctl_cmd_block(ctl_t *c, int argc, char **argv)
{
    static const char synopsis[] =
        "block ACTION IDENTITY SECONDS [TYPE] | block -k KEY SECONDS";
    char *args[4] = {NULL, NULL, NULL, NULL};
    int pos = c->key != NULL ? 0 : 2;
    uint32_t secs = argc > pos ? parse_seconds(argv[pos]) : 0;
    ctl_target_t t;
    int64_t until = 0;
    int rc;

    if (argc <= pos || argc > 4) {
        return ctl_usage(c, synopsis);
    }
    if (secs == 0) {
        return ctl_fail(c, CTL_USAGE,
                        "block: SECONDS must be a whole number from 1 to %u "
                        "(got '%s')",
                        SUSPECT_DURATION_MAX, argv[pos]);
    }
    /* The operands without SECONDS, as status takes them. */
    for (int i = 0, k = 0; i < argc; i++) {
        if (i != pos) {
            args[k++] = argv[i];
        }
    }
    rc = target_args(c, argc - 1, args, synopsis, false, &t);
    if (rc == CTL_OK) {
        rc = ctl_connect(c, false);
    }
    if (rc == CTL_OK) {
        rc = ctl_op_block(c, &t, secs, &until);
    }
    if (rc != CTL_OK) {
        return rc;
    }
    done(c, &t, "blocked", until);
    return CTL_OK;
}
