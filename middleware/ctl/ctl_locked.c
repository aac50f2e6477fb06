/*
 * ctl_locked.c - suspectctl locked [ACTION]: the identities locked now.
 *
 * Through the daemon (ctl_remote.c): its store's listing, for every store
 * (the memory store's too), one reply.  Else from the store itself:
 * LMDB: suspect_lmdb_foreach_locked(), one read transaction, in key order.
 * Redis: suspect_redis_foreach_locked(), SCAN MATCH "<prefix><action>:*
 * :locked" ("<prefix>{<action>:*" with the hash tag) with COUNT, on every
 * master of a Cluster, so a large Redis is never blocked; it is not a
 * snapshot and may name a key twice, so the keys are sorted and deduped
 * here.  Both report window keys; each is printed with its lock end and,
 * for --json, cut into action, type and the identity's raw value (null
 * when the key holds only a digest of it: use the key with -k).
 */
#include "ctl_internal.h"

#include <stdlib.h>
#include <string.h>

#include "suspect_lmdb.h"
#include "suspect_redis.h"

typedef struct lock_ent {
    char *key;
    size_t len;
    int64_t until_ms;
} lock_ent_t;

typedef struct lock_list {
    const ctl_t *c;
    const char *action; /* NULL = every action */
    lock_ent_t *v;
    size_t n, cap;
    bool oom;
} lock_list_t;

/* Keeps one lock (the callback of both stores' listings). */
static int collect(void *ud, const char *key, size_t len, int64_t until_ms)
{
    lock_list_t *l = ud;
    ctl_keyparts_t p;
    char *copy;

    if (l->action != NULL && (!ctl_key_split(l->c, key, len, &p) ||
                              p.action_len != strlen(l->action) ||
                              memcmp(p.action, l->action, p.action_len) != 0)) {
        return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap != 0 ? 2 * l->cap : 64;
        lock_ent_t *v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL) {
            l->oom = true;
            return 1;
        }
        l->v = v;
        l->cap = cap;
    }
    copy = malloc(len + 1);
    if (copy == NULL) {
        l->oom = true;
        return 1;
    }
    memcpy(copy, key, len);
    copy[len] = '\0';
    l->v[l->n].key = copy;
    l->v[l->n].len = len;
    l->v[l->n].until_ms = until_ms;
    l->n++;
    return 0;
}

static int ent_cmp(const void *a, const void *b)
{
    const lock_ent_t *x = a, *y = b;
    int d = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

    return d != 0 ? d : (x->len > y->len) - (x->len < y->len);
}

/* Sorts the list and drops repeated keys (Redis SCAN may repeat one). */
static void sort_dedupe(lock_list_t *l)
{
    size_t k = 0;

    if (l->n > 1) {
        qsort(l->v, l->n, sizeof(*l->v), ent_cmp);
    }
    for (size_t i = 0; i < l->n; i++) {
        if (k > 0 && ent_cmp(&l->v[k - 1], &l->v[i]) == 0) {
            free(l->v[i].key);
            continue;
        }
        l->v[k++] = l->v[i];
    }
    l->n = k;
}

static void list_free(lock_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
    }
    free(l->v);
}

/* Fills l from the store. */
static suspect_rc_t list_locks(ctl_t *c, lock_list_t *l, suspect_err_t *err)
{
    char match[SUSPECT_KEY_MAX];

    if (c->daemon) {
        snprintf(
            match, sizeof(match), "%s%s%s",
            c->setup.conf->key_prefix != NULL ? c->setup.conf->key_prefix : "",
            l->action != NULL ? l->action : "", l->action != NULL ? ":" : "");
        return ctl_op_locked(c, match, collect, l) == CTL_OK ? SUSPECT_OK
                                                             : SUSPECT_E_STORE;
    }

    if (c->setup.conf->store == SUSPECT_STORE_LMDB) {
        return suspect_lmdb_foreach_locked(c->setup.store, c->now_ms, collect,
                                           l, err);
    }
    snprintf(match, sizeof(match), "%s%s%s%s",
             c->setup.conf->key_prefix != NULL ? c->setup.conf->key_prefix : "",
             l->action != NULL && c->setup.conf->key_hash_tag ? "{" : "",
             l->action != NULL ? l->action : "", l->action != NULL ? ":" : "");
    return suspect_redis_foreach_locked(c->setup.store, match, c->now_ms,
                                        collect, l, err);
}

static void json_entry(ctl_json_t *j, const ctl_t *c, const lock_ent_t *e)
{
    ctl_keyparts_t p;
    char raw[SUSPECT_KEY_MAX];
    size_t raw_len = 0;
    bool split = ctl_key_split(c, e->key, e->len, &p);
    bool decoded = split && ctl_key_unescape(p.value, p.value_len, raw,
                                             sizeof(raw), &raw_len);

    cj_obj(j, NULL);
    cj_strn(j, "key", e->key, e->len);
    cj_strn(j, "action", split ? p.action : NULL, p.action_len);
    cj_strn(j, "type", split ? p.type : NULL, p.type_len);
    cj_strn(j, "identity", decoded ? raw : NULL, raw_len);
    cj_time(j, "locked_until", e->until_ms);
    cj_end(j);
}

static void print_list(const ctl_t *c, const lock_list_t *l)
{
    char buf[48];
    ctl_json_t j;

    if (c->json) {
        cj_begin(&j, c, CTL_OK);
        cj_str(&j, "store", ctl_store_name(c));
        cj_str(&j, "action", l->action);
        cj_int(&j, "now_ms", c->now_ms);
        cj_int(&j, "count", (int64_t)l->n);
        cj_arr(&j, "locked");
        for (size_t i = 0; i < l->n; i++) {
            json_entry(&j, c, &l->v[i]);
        }
        cj_finish(&j);
        return;
    }
    if (l->n == 0) {
        fprintf(c->out, "no identity is locked now (%s store)\n",
                ctl_store_name(c));
        return;
    }
    fprintf(c->out, "%zu %s locked now (%s store):\n", l->n,
            l->n == 1 ? "identity" : "identities", ctl_store_name(c));
    for (size_t i = 0; i < l->n; i++) {
        const lock_ent_t *e = &l->v[i];

        fprintf(c->out, "  %-32s until %s (epoch ms %lld, %lld s left)\n",
                e->key, ctl_time(e->until_ms, buf), (long long)e->until_ms,
                (long long)((e->until_ms - c->now_ms + 999) / 1000));
    }
}

/* locked [ACTION] */
int ctl_cmd_locked(ctl_t *c, int argc, char **argv)
{
    lock_list_t l;
    suspect_err_t err;
    suspect_rc_t src;
    int rc;

    if (argc > 1 || c->key != NULL) {
        return ctl_usage(c, "locked [ACTION]");
    }
    memset(&l, 0, sizeof(l));
    l.c = c;
    l.action = argc == 1 ? argv[0] : NULL;
    if (l.action != NULL && !suspect_name_valid(l.action, strlen(l.action))) {
        return ctl_fail(c, CTL_USAGE, "'%s' is not an action name", l.action);
    }
    if (ctl_load(c) != CTL_OK) {
        return CTL_CONFIG;
    }
    if (l.action != NULL &&
        suspect_limits_find(c->setup.limits, l.action) == NULL) {
        return ctl_fail(c, CTL_NOTFOUND, "action %s is not in %s", l.action,
                        c->setup.conf->limits_path);
    }
    rc = ctl_connect(c, false);
    if (rc != CTL_OK) {
        return rc;
    }
    suspect_err_clear(&err);
    src = list_locks(c, &l, &err);
    if (src != SUSPECT_OK || l.oom) {
        list_free(&l);
        if (c->daemon && !l.oom) {
            return CTL_STORE; /* reported by ctl_op_locked() */
        }
        return l.oom ? ctl_fail(c, CTL_STORE, "locked: out of memory")
                     : ctl_fail_err(c, CTL_STORE, "locked", &err);
    }
    sort_dedupe(&l);
    print_list(c, &l);
    list_free(&l);
    return CTL_OK;
}
