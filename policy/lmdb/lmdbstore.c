/*
 * lmdbstore.c - the LMDB store: exact across the processes of one host,
 * persistent, bounded.  Its files are the only ones of libsuspect that
 * include lmdb.h.
 *
 * What.  The store of suspect-cgi (a process per request) and of hosts
 * running several suspect-fcgi processes (Apache mod_fcgid, spawn-fcgi -F).
 * Every process opens the same file; LMDB lets one write transaction run at
 * a time across all of them (a robust process-shared mutex in the lock
 * file), so doing the whole decision in one write transaction makes it
 * exact.  Committed state is in the file: it survives restarts.
 *
 * The store is six files (lmdb_internal.h lists what they share): this one
 * (decisions, life cycle, listing), lmdb_admin.c (the operator's status,
 * reset, block, unblock), lmdb_env.c (the file, fork, locking,
 * transactions), lmdb_rec.c (records and stored keys), lmdb_scan.c (the
 * walks over every record: purges, eviction, listing, and when to run
 * them) and lmdb_reserve.c (reservations: expiring and settling them).
 *
 * A decision (one write transaction):
 *   1. read every identity's record (writing back first the reservations in
 *      flight whose end has come as hits, so the hits are the one list),
 *      compute its suspect_window_state_t;
 *   2. suspect_policy_evaluate();
 *   3. for each identity, read the record again (a put may have moved the
 *      others) and write the trimmed hits, the hit when allowed and the new
 *      lock; a record left with no hit and no live lock is deleted, an
 *      unchanged one is not written;
 *   4. the incremental purge: look at PURGE_STEP records after the saved
 *      cursor (wrapping at the end), delete the expired ones, save the
 *      cursor; with every decision doing this, dead records go away at a
 *      steady rate without a sweeper process;
 *   5. commit.
 * Any error aborts the transaction: the file never holds half a decision.
 *
 * Bounds.  The map size is the bound (no entry count: the map is what
 * runs out), and locks are kept in room an identity flood cannot take: a
 * new record without a lock (a new identity's first hit or reservation) is
 * written only while the records use less than COUNTER_SHARE (3/4) of the
 * map's pages, else the attempt meets LM_COUNTERS_FULL.  The last quarter
 * is for what the store holds: locks (a lock on a record there costs no
 * room; an operator's block on a new identity little), the hits of the
 * identities there (at most LimitCount each), and LMDB's copy-on-write
 * pages.  When an attempt meets a full map (MDB_MAP_FULL or
 * LM_COUNTERS_FULL), its transaction is aborted, and:
 *   1. a full purge deletes every expired record (lmdb_scan.c); if it
 *      freed any, the decision runs once more;
 *   2. still full, and the decision wanted a new record without a lock: no
 *      room is made for it from other identities' counts.  If some
 *      identity of the decision has a record, the decision runs once more
 *      without writing the new records (the identities the store holds
 *      stay exact; the new ones are not counted by it); else it fails at 4;
 *   3. still MDB_MAP_FULL without a new record (the hits of the
 *      identities held filled the rest): the least recently hit eighth of
 *      the counters is evicted, never a lock (lmdb_scan.c), and the
 *      decision runs once more;
 *   4. still full: a denial the store's state gives (a live lock, a full
 *      window) is the answer, written or not, so what was locked is
 *      denied; otherwise the call fails with SUSPECT_E_FULL and the
 *      caller's fail mode applies (failover.c does not count it against
 *      the store's health: the next decision asks the store again).
 * A full purge or an eviction that freed fewer than BACKOFF_FREED records
 * is not run again within BACKOFF_MS.  A block or a reset that meets a
 * full map runs once more after 1 or 3 (what freed something).
 *
 * Token buckets and sliding counters keep a meter of fixed size in place
 * of the hits (lmdb_meter.c), decided in the same transaction.
 *
 * Reservations and offences (suspect_store_reserve(), escalating
 * rules) live in the record's extension (lmdb_rec.c): a reservation is a
 * decision that adds a reservation instead of a hit; settling and the
 * reservations whose end has come are lmdb_reserve.c's.
 *
 * Ownership.  The store owns its environment, path copy and scratch; keys
 * and rules are borrowed for the call; values LMDB returns are valid only
 * inside their transaction and are never kept.
 */
#include "lmdb_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"

static const suspect_store_ops_t lmdb_ops;

/* ---- decisions -------------------------------------------------------------
 */

typedef struct decision_ctx {
    lmstore_t *ls;
    const suspect_rule_t *rule;
    size_t n;
    int64_t now_ms;
    const suspect_ticket_t *ticket; /* a reservation's, NULL = a decision */
    bool skip_new;                  /* write no new record without a lock */
    bool found_any;                 /* some identity has a record */
    bool new_any;   /* the last attempt wrote a new record without a lock */
    bool evaluated; /* the last attempt filled the decision */
    skey_t sk[SUSPECT_MAX_IDENTITIES];
} decision_ctx_t;

/* Step 1: every identity's state. */
static int ctx_read(decision_ctx_t *ctx, MDB_txn *txn,
                    suspect_window_state_t *st)
{
    for (size_t i = 0; i < ctx->n; i++) {
        rec_view_t r;
        uint32_t first;
        int rc = lm_rec_get(ctx->ls, txn, &ctx->sk[i], &r);

        if (rc == 0) {
            rc = lm_resv_expire(ctx->ls, txn, &ctx->sk[i], ctx->now_ms, &r);
        }
        if (rc != 0) {
            return rc;
        }
        ctx->found_any = ctx->found_any || r.found;
        if (suspect_rule_metered(ctx->rule)) {
            lm_meter_state(&r, ctx->rule, ctx->now_ms, &st[i]);
            continue;
        }
        lm_rec_state(&r, ctx->rule, ctx->now_ms, &st[i], &first);
        lm_rec_ext_state(&r, ctx->rule, ctx->now_ms, &st[i]);
    }
    return 0;
}

/* Whether the new record nr (r not found) may be written (see "Bounds"):
 * 0, LM_COUNTERS_FULL for one without a lock once the counters' share of
 * the map is used, or an LMDB code.  *skip when the attempt writes no new
 * record without a lock (ctx->skip_new). */
static int new_record_room(decision_ctx_t *ctx, MDB_txn *txn,
                           const rec_new_t *nr, bool *skip)
{
    bool room = true;
    int rc;

    *skip = false;
    if (nr->lock_until_ms > ctx->now_ms ||
        (!nr->add && nr->nresv == 0 && nr->offences == 0)) {
        return 0; /* a lock, or nothing to write */
    }
    if (ctx->skip_new) {
        *skip = true;
        return 0;
    }
    ctx->new_any = true;
    rc = lm_map_room(ctx->ls, txn, COUNTER_SHARE_NUM, COUNTER_SHARE_DEN, &room);
    return rc != 0 ? rc : room ? 0 : LM_COUNTERS_FULL;
}

/* The plan's marks on identity i in nr (read as r): offences forgotten
 * once their time is over, the plan's new count, and its new lock, else
 * the live one kept. */
static void plan_marks(const decision_ctx_t *ctx, const suspect_plan_t *plan,
                       size_t i, const rec_view_t *r, rec_new_t *nr)
{
    if (nr->offence_until_ms <= ctx->now_ms) {
        nr->offences = 0; /* forgotten */
        nr->offence_until_ms = 0;
    }
    if (plan->offences[i] != 0) {
        nr->offences = plan->offences[i];
        nr->offence_until_ms = plan->offence_until_ms[i];
    }
    nr->lock_until_ms = plan->lock_until_ms[i];
    if (nr->lock_until_ms == 0 && r->lock_until_ms > ctx->now_ms) {
        nr->lock_until_ms = r->lock_until_ms;
    }
}

/* Step 3 for identity i of a metered rule: the meter takes the cost
 * when the plan records (a reservation too: lmdb_meter.c). */
static int ctx_apply_meter(decision_ctx_t *ctx, MDB_txn *txn,
                           const suspect_plan_t *plan, size_t i)
{
    rec_view_t r;
    rec_new_t nr;
    int rc = lm_rec_get(ctx->ls, txn, &ctx->sk[i], &r);

    if (rc != 0) {
        return rc;
    }
    lm_rec_new(&nr, &r, NULL);
    lm_meter_adopt(&nr, &r, ctx->rule);
    plan_marks(ctx, plan, i, &r, &nr);
    if (plan->record) {
        suspect_meter_take(ctx->rule, &nr.meter, ctx->now_ms,
                           suspect_rule_cost(ctx->rule));
    }
    if (r.found && r.metered && r.algorithm == nr.algorithm && !plan->record &&
        nr.lock_until_ms == r.lock_until_ms && nr.window_s == r.window_s &&
        nr.offences == r.offences &&
        nr.offence_until_ms == r.offence_until_ms) {
        return 0; /* unchanged: a denial, say */
    }
    if (!r.found) {
        bool skip;

        nr.add = plan->record; /* new_record_room(): something to write */
        rc = new_record_room(ctx, txn, &nr, &skip);
        if (rc != 0 || skip) {
            return rc;
        }
    }
    return lm_rec_store(ctx->ls, txn, &ctx->sk[i], &nr);
}

/* Step 3 for identity i: the record again, then the plan's writes. */
static int ctx_apply_one(decision_ctx_t *ctx, MDB_txn *txn,
                         const suspect_plan_t *plan, size_t i)
{
    suspect_window_state_t st;
    rec_view_t r;
    rec_new_t nr;
    lm_resv_t *resv;
    uint32_t from;
    int rc = lm_rec_get(ctx->ls, txn, &ctx->sk[i], &r);

    if (rc != 0) {
        return rc;
    }
    resv = lm_resv_alloc(&r);
    if (resv == NULL) {
        return LM_NOMEM;
    }
    lm_rec_state(&r, ctx->rule, ctx->now_ms, &st, &from);
    lm_rec_new(&nr, &r, resv);
    nr.from = from;
    plan_marks(ctx, plan, i, &r, &nr);
    if (plan->record && ctx->ticket != NULL) {
        resv[nr.nresv].id = ctx->ticket->id;
        resv[nr.nresv].at_ms = ctx->ticket->at_ms;
        resv[nr.nresv++].end_ms = ctx->ticket->end_ms;
    }
    nr.add = plan->record && ctx->ticket == NULL;
    nr.add_ts = ctx->now_ms;
    if (plan->record && st.in_window > 0) {
        /* A clock stepped back: keep the hits sorted. */
        int64_t newest = lm_rec_hit(&r, r.count - 1);
        nr.add_ts = newest > nr.add_ts ? newest : nr.add_ts;
    }
    nr.window_s = ctx->rule->window_s;
    if (r.found && !nr.add && nr.from == 0 &&
        nr.lock_until_ms == r.lock_until_ms && nr.window_s == r.window_s &&
        nr.nresv == r.nresv && nr.offences == r.offences &&
        nr.offence_until_ms == r.offence_until_ms) {
        free(resv);
        return 0; /* unchanged: a denial under a live lock, say */
    }
    if (!r.found) {
        bool skip;

        rc = new_record_room(ctx, txn, &nr, &skip);
        if (rc != 0 || skip) {
            free(resv);
            return rc;
        }
    }
    rc = lm_rec_store(ctx->ls, txn, &ctx->sk[i], &nr);
    free(resv);
    return rc;
}

/* One attempt at the whole decision, in one write transaction. */
static int decide_once(decision_ctx_t *ctx, suspect_decision_t *out)
{
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    MDB_txn *txn;
    int rc = lm_txn_begin(ctx->ls, 0, &txn);

    ctx->evaluated = false;
    ctx->new_any = false;
    if (rc != 0) {
        return rc;
    }
    rc = ctx_read(ctx, txn, st);
    if (rc == 0) {
        suspect_policy_evaluate(ctx->rule, st, ctx->n, ctx->now_ms, &plan, out);
        ctx->evaluated = true;
        for (size_t i = 0; rc == 0 && i < ctx->n; i++) {
            rc = suspect_rule_metered(ctx->rule)
                     ? ctx_apply_meter(ctx, txn, &plan, i)
                     : ctx_apply_one(ctx, txn, &plan, i);
        }
    }
    if (rc == 0) {
        rc = lm_purge_step(ctx->ls, txn, ctx->now_ms);
    }
    return lm_txn_end(txn, rc);
}

/* The decision in a full map (see "Bounds" at the top): makes room from
 * the dead; then decides without the new identities, or makes room from
 * the counters for what the store holds; then answers the store's
 * denial.  Returns the last attempt's outcome, LM_COUNTERS_FULL when a
 * new identity found no room. */
static int decide_full(decision_ctx_t *ctx, suspect_decision_t *out, int rc)
{
    if (lm_free_dead(ctx->ls, ctx->now_ms)) {
        rc = decide_once(ctx, out);
    }
    if (lm_is_full(rc) && ctx->new_any) {
        /* No room for a new identity: never made from another's counts. */
        rc = LM_COUNTERS_FULL;
        if (ctx->found_any) {
            ctx->skip_new = true;
            rc = decide_once(ctx, out);
        }
    }
    if (rc == MDB_MAP_FULL && lm_free_counters(ctx->ls, ctx->now_ms)) {
        /* What the store holds needs room: counters go, locks stay. */
        rc = decide_once(ctx, out);
    }
    if (lm_is_full(rc) && ctx->evaluated && !out->allowed) {
        rc = 0; /* the store's denial, written or not */
    }
    return rc;
}

/* A decision, or with ticket a reservation. */
static suspect_rc_t lm_run(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           const suspect_ticket_t *ticket,
                           suspect_decision_t *out, suspect_err_t *err)
{
    lmstore_t *ls = (lmstore_t *)store;
    decision_ctx_t ctx;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    ctx.ls = ls;
    ctx.rule = rule;
    ctx.n = n;
    ctx.now_ms = now_ms;
    ctx.ticket = ticket;
    ctx.skip_new = false;
    ctx.found_any = false;
    for (size_t i = 0; i < n; i++) {
        lm_store_key(ls, &keys[i], &ctx.sk[i]);
    }
    rc = decide_once(&ctx, out);
    if (lm_is_full(rc)) {
        rc = decide_full(&ctx, out, rc);
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "decide");
    lm_leave(ls);
    return src;
}

static suspect_rc_t lm_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    return lm_run(store, rule, keys, n, now_ms, NULL, out, err);
}

static suspect_rc_t lm_reserve(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *keys, size_t n,
                               int64_t now_ms, int64_t ttl_ms,
                               suspect_decision_t *out,
                               suspect_ticket_t *ticket, suspect_err_t *err)
{
    ticket->at_ms = now_ms;
    ticket->end_ms = now_ms + ttl_ms;
    return lm_run(store, rule, keys, n, now_ms, ticket, out, err);
}

/* Every feature beyond the seed's. */
static bool lm_supports(const suspect_store_t *store, unsigned what)
{
    (void)store;
    (void)what;
    return true;
}

/* suspect_store_foreach_locked(): suspect_lmdb_foreach_locked() with the
 * keys that do not start with the prefix left out. */
typedef struct prefix_filter {
    const char *prefix;
    size_t len;
    suspect_locked_fn fn;
    void *arg;
} prefix_filter_t;

static int filter_prefix(void *ud, const char *key, size_t len,
                         int64_t until_ms)
{
    prefix_filter_t *f = ud;

    if (len < f->len || memcmp(key, f->prefix, f->len) != 0) {
        return 0;
    }
    return f->fn(f->arg, key, len, until_ms);
}

static suspect_rc_t lm_foreach_locked(suspect_store_t *store,
                                      const char *prefix, int64_t now_ms,
                                      suspect_locked_fn fn, void *arg,
                                      suspect_err_t *err)
{
    prefix_filter_t f = {prefix, strlen(prefix), fn, arg};

    return suspect_lmdb_foreach_locked(store, now_ms, filter_prefix, &f, err);
}

/* ---- life cycle ------------------------------------------------------------
 */

/* Frees ls; closes its environment only in the process that opened it. */
static void lmstore_destroy(lmstore_t *ls)
{
    if (ls->env != NULL && ls->pid == getpid()) {
        mdb_env_close(ls->env);
    } else {
        lm_abandon_env(ls->env);
    }
    pthread_rwlock_destroy(&ls->rw);
    free(ls->scratch);
    free(ls->path);
    free(ls);
}

static void lm_free(suspect_store_t *store)
{
    lmstore_destroy((lmstore_t *)store);
}

static const suspect_store_ops_t lmdb_ops = {
    .name = "lmdb",
    .decide = lm_decide,
    .status = lm_status,
    .reset = lm_reset,
    .block = lm_block,
    .free = lm_free,
    .unblock = lm_unblock,
    .foreach_locked = lm_foreach_locked,
    .reserve = lm_reserve,
    .settle = lm_op_settle,
    .supports = lm_supports,
};

suspect_rc_t suspect_lmdb_new(const suspect_lmdb_opts_t *opts,
                              suspect_store_t **out, suspect_err_t *err)
{
    lmstore_t *ls;
    suspect_rc_t rc;

    *out = NULL;
    if (opts == NULL || opts->path == NULL || opts->path[0] == '\0') {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "lmdb: the store needs a path");
    }
    ls = suspect_calloc(1, sizeof(*ls));
    if (ls == NULL || (ls->path = suspect_strdup(opts->path)) == NULL) {
        free(ls);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "lmdb: out of memory");
    }
    ls->base.ops = &lmdb_ops;
    ls->opts = *opts;
    ls->opts.path = ls->path;
    if (ls->opts.map_size == 0) {
        ls->opts.map_size = SUSPECT_LMDB_MAP_SIZE_DEFAULT;
    }
    if (ls->opts.mode == 0) {
        ls->opts.mode = SUSPECT_LMDB_MODE_DEFAULT;
    }
    if (ls->opts.max_readers == 0) {
        ls->opts.max_readers = 126;
    }
    pthread_rwlock_init(&ls->rw, NULL);
    rc = lm_env_open(ls, err);
    if (rc != SUSPECT_OK) {
        lmstore_destroy(ls);
        return rc;
    }
    *out = &ls->base;
    return SUSPECT_OK;
}

/* The LMDB store behind store, or NULL with an error. */
static lmstore_t *as_lmdb(suspect_store_t *store, suspect_err_t *err)
{
    if (store == NULL || store->ops != &lmdb_ops) {
        suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                        "lmdb: not an LMDB store");
        return NULL;
    }
    return (lmstore_t *)store;
}

/* ---- operator listing and maintenance -------------------------------------
 */

suspect_rc_t suspect_lmdb_foreach_locked(suspect_store_t *store, int64_t now_ms,
                                         suspect_lmdb_locked_fn fn, void *ud,
                                         suspect_err_t *err)
{
    lmstore_t *ls = as_lmdb(store, err);
    MDB_txn *txn;
    suspect_rc_t src;
    int rc;

    if (ls == NULL || fn == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "lmdb: listing needs a store and a callback");
    }
    src = lm_enter(ls, err);
    if (src != SUSPECT_OK) {
        return src;
    }
    rc = lm_txn_begin(ls, MDB_RDONLY, &txn);
    if (rc == 0) {
        rc = lm_scan_locked(ls, txn, now_ms, fn, ud);
        mdb_txn_abort(txn);
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "list locks");
    lm_leave(ls);
    return src;
}

suspect_rc_t suspect_lmdb_purge(suspect_store_t *store, int64_t now_ms,
                                size_t *purged, suspect_err_t *err)
{
    lmstore_t *ls = as_lmdb(store, err);
    size_t count = 0;
    suspect_rc_t src;
    int rc;

    if (ls == NULL) {
        return SUSPECT_E_INVAL;
    }
    src = lm_enter(ls, err);
    if (src != SUSPECT_OK) {
        return src;
    }
    rc = lm_purge_all(ls, now_ms, &count);
    if (purged != NULL) {
        *purged = rc == 0 ? count : 0;
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "purge");
    lm_leave(ls);
    return src;
}

suspect_rc_t suspect_lmdb_entries(suspect_store_t *store, size_t *out,
                                  suspect_err_t *err)
{
    lmstore_t *ls = as_lmdb(store, err);
    MDB_txn *txn;
    MDB_stat st;
    suspect_rc_t src;
    int rc;

    *out = 0;
    if (ls == NULL) {
        return SUSPECT_E_INVAL;
    }
    src = lm_enter(ls, err);
    if (src != SUSPECT_OK) {
        return src;
    }
    rc = lm_txn_begin(ls, MDB_RDONLY, &txn);
    if (rc == 0) {
        rc = mdb_stat(txn, ls->recs, &st);
        mdb_txn_abort(txn);
    }
    if (rc == 0) {
        *out = st.ms_entries;
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "count entries");
    lm_leave(ls);
    return src;
}
