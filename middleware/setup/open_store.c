/*
 * open_store.c - builds the store of <Store>: memory, or lmdb / redis behind
 * the failover wrapper.
 *
 * LMDB's two files get <Store mode> and <Store group> once open: exactly
 * that mode, whatever the umask (systemd units often run with UMask=0077),
 * and that group, so that an operator in it can run suspectctl.  Only
 * files this process owns are changed; files another user created are
 * left as they are (that user's daemon applies the same settings).
 */
#include "open_store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/log.h"
#include "suspect_failover.h"
#include "suspect_lmdb.h"
#include "suspect_redis.h"
#include "text.h"

static const char *breaker_name(suspect_breaker_t b)
{
    switch (b) {
    case SUSPECT_BREAKER_OPEN:
        return "open";
    case SUSPECT_BREAKER_HALF_OPEN:
        return "half-open";
    default:
        return "closed";
    }
}

static void on_breaker(void *arg, suspect_breaker_t from, suspect_breaker_t to,
                       const suspect_err_t *why)
{
    char msg[600] = "";

    if (why != NULL) {
        suspect_err_format(why, msg, sizeof(msg));
    }
    if (from == to) { /* no transition: the store answered full */
        mw_log(MW_LOG_WARNING,
               "store %s: %s; such requests take the fail mode (said at "
               "most every 10 s)",
               (const char *)arg, msg);
        return;
    }
    mw_log(to == SUSPECT_BREAKER_OPEN ? MW_LOG_ERROR : MW_LOG_NOTICE,
           "store %s: breaker %s -> %s%s%s", (const char *)arg,
           breaker_name(from), breaker_name(to), why != NULL ? ": " : "", msg);
}

/* Wraps primary in the failover store with a memory store as fallback. */
static suspect_rc_t wrap(const suspect_conf_t *c, suspect_store_t *primary,
                         const char *name, suspect_store_t **out,
                         suspect_err_t *err)
{
    suspect_failover_opts_t o;
    suspect_memstore_opts_t mo;
    suspect_store_t *local = NULL;
    suspect_rc_t rc;

    memset(&mo, 0, sizeof(mo));
    mo.max_entries = c->memory_max_entries;
    rc = suspect_memstore_new(&mo, &local, err);
    if (rc != SUSPECT_OK) {
        suspect_store_free(primary);
        return rc;
    }
    memset(&o, 0, sizeof(o));
    o.mode = (suspect_failmode_t)c->fail_mode;
    /* A probe at least every second: decisions are back on the store
     * within about a second of its return, however long it was away, and
     * a dead store costs one request a timeout per second. */
    o.max_open_ms = 1000;
    o.on_breaker = on_breaker;
    o.cb_arg = (void *)name;
    return suspect_failover_new(primary, local, &o, out, err);
}

/* Gives the file at path <Store mode> and <Store group> when this process
 * owns it. */
static suspect_rc_t lmdb_perms(const suspect_conf_t *c, const char *path,
                               suspect_err_t *err)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "lmdb %s: stat", path);
    }
    if (st.st_uid != geteuid()) {
        return SUSPECT_OK;
    }
    if (c->lmdb_group >= 0 && st.st_gid != (gid_t)c->lmdb_group &&
        chown(path, (uid_t)-1, (gid_t)c->lmdb_group) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "lmdb %s: cannot give it to <Store group> %d "
                               "(the daemon's user must be a member)",
                               path, c->lmdb_group);
    }
    if ((st.st_mode & 07777) != c->lmdb_mode &&
        chmod(path, (mode_t)c->lmdb_mode) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "lmdb %s: cannot set <Store mode> %04o", path,
                               c->lmdb_mode);
    }
    return SUSPECT_OK;
}

static suspect_rc_t lmdb_new(const suspect_conf_t *c, suspect_store_t **out,
                             suspect_err_t *err)
{
    suspect_lmdb_opts_t o;
    suspect_store_t *s = NULL;
    char lock[4096];
    suspect_rc_t rc;

    memset(&o, 0, sizeof(o));
    o.path = c->lmdb_path;
    o.map_size = c->lmdb_map_size;
    o.no_sync = c->lmdb_no_sync;
    o.mode = c->lmdb_mode;
    snprintf(lock, sizeof(lock), "%s-lock", c->lmdb_path);
    rc = suspect_lmdb_new(&o, &s, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    rc = lmdb_perms(c, c->lmdb_path, err);
    if (rc == SUSPECT_OK) {
        rc = lmdb_perms(c, lock, err);
    }
    if (rc != SUSPECT_OK) {
        suspect_store_free(s);
        return rc;
    }
    return wrap(c, s, "lmdb", out, err);
}

static suspect_rc_t redis_new(const suspect_conf_t *c, suspect_store_t **out,
                              suspect_err_t *err)
{
    suspect_redis_opts_t o;
    suspect_store_t *s = NULL;
    suspect_err_t perr;
    suspect_rc_t rc;

    memset(&o, 0, sizeof(o));
    o.url = c->redis_url;
    o.connect_timeout_ms = c->redis_timeout_ms;
    o.command_timeout_ms = c->redis_timeout_ms;
    o.clock = c->redis_server_clock ? SUSPECT_REDIS_CLOCK_SERVER
                                    : SUSPECT_REDIS_CLOCK_CALLER;
    o.key_prefix = c->key_prefix;
    rc = suspect_redis_new(&o, &s, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    suspect_err_clear(&perr);
    if (suspect_redis_ping(s, &perr) != SUSPECT_OK) {
        char msg[600];

        suspect_err_format(&perr, msg, sizeof(msg));
        mw_log(MW_LOG_WARNING,
               "redis: %s; deciding by the fail mode until "
               "it answers",
               msg);
    }
    return wrap(c, s, "redis", out, err);
}

const char *mw_store_change(const suspect_conf_t *old, const suspect_conf_t *c)
{
    if (old->store != c->store ||
        old->memory_max_entries != c->memory_max_entries ||
        str_differs(old->lmdb_path, c->lmdb_path) ||
        old->lmdb_map_size != c->lmdb_map_size ||
        old->lmdb_no_sync != c->lmdb_no_sync ||
        old->lmdb_mode != c->lmdb_mode || old->lmdb_group != c->lmdb_group ||
        str_differs(old->redis_url, c->redis_url) ||
        old->redis_timeout_ms != c->redis_timeout_ms ||
        old->redis_server_clock != c->redis_server_clock ||
        old->fail_mode != c->fail_mode) {
        return "Store";
    }
    if (old->key_format != c->key_format ||
        old->key_hash_tag != c->key_hash_tag ||
        str_differs(old->key_prefix, c->key_prefix)) {
        return "Keys";
    }
    return NULL;
}

suspect_rc_t mw_store_new(const suspect_conf_t *c, suspect_store_t **out,
                          suspect_err_t *err)
{
    suspect_memstore_opts_t mo;

    switch (c->store) {
    case SUSPECT_STORE_LMDB:
        return lmdb_new(c, out, err);
    case SUSPECT_STORE_REDIS:
        return redis_new(c, out, err);
    default:
        memset(&mo, 0, sizeof(mo));
        mo.max_entries = c->memory_max_entries;
        return suspect_memstore_new(&mo, out, err);
    }
}
