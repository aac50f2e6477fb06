/*
 * ctl_env.c - what every suspectctl command stands on: suspect.xml, the
 * limits file and the guard, loaded as the daemon loads them; the store
 * they name; and an identity named by an operator turned into the key the
 * guard would build for it.
 *
 * The store is opened bare, without the failover wrapper the daemon puts
 * around it: an operator asking about a store wants its answer or its
 * error, never a fail-mode guess.  The memory store lives in the daemon's
 * own memory and no admin socket reaches it, so commands that need counts
 * refuse it (CTL_STORE) and say which stores do work.
 *
 * An LMDB database is opened only when it already exists with its lock
 * file: opening creates missing files, and a file created by an operator
 * running as root with mode 0600 would lock the daemon's user out.
 *
 * Naming an identity: ACTION IDENTITY [TYPE].  The type matters for the
 * typed key format, and to know whether an identity is composite (its
 * values joined with '_', split back here); without TYPE it is the single
 * identity of the action's first route.  -k KEY names the key itself (as
 * `suspectctl locked` lists it), for values whose raw form cannot be typed
 * or was capped.
 */
#include "ctl_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "suspect_lmdb.h"
#include "suspect_redis.h"
#include "text.h"

/* Redis answers an operator within this, whatever <Store timeoutMs>
 * (tuned for requests) says. */
#define CTL_REDIS_TIMEOUT_MS 2000

/* Loads both files and compiles the guard, as --check does. */
int ctl_load(ctl_t *c)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (mw_setup_load(&c->setup, c->conf_path, &err) != SUSPECT_OK) {
        return ctl_fail_err(c, CTL_CONFIG, NULL, &err);
    }
    return CTL_OK;
}

/* Loads suspect.xml only. */
int ctl_load_conf(ctl_t *c)
{
    suspect_err_t err;

    suspect_err_clear(&err);
    if (suspect_conf_load(c->conf_path, &c->setup.conf, &err) != SUSPECT_OK) {
        return ctl_fail_err(c, CTL_CONFIG, NULL, &err);
    }
    return CTL_OK;
}

/* Frees the store, the guard and the snapshots. */
void ctl_unload(ctl_t *c)
{
    mw_setup_release(&c->setup);
}

/* The store kind of suspect.xml. */
const char *ctl_store_name(const ctl_t *c)
{
    return c->setup.conf->store == SUSPECT_STORE_LMDB    ? "lmdb"
           : c->setup.conf->store == SUSPECT_STORE_REDIS ? "redis"
                                                         : "memory";
}

static int open_lmdb(ctl_t *c)
{
    suspect_lmdb_opts_t o;
    suspect_err_t err;
    struct stat st;
    char lock[4096];

    snprintf(lock, sizeof(lock), "%s-lock", c->setup.conf->lmdb_path);
    if ((stat(c->setup.conf->lmdb_path, &st) != 0 || stat(lock, &st) != 0) &&
        errno != ENOENT) {
        return ctl_fail(c, CTL_STORE,
                        "cannot reach the LMDB database at %s: %s (the "
                        "user running suspectctl needs <Store group> and a "
                        "directory it may enter; see suspectctl(8))",
                        c->setup.conf->lmdb_path, strerror(errno));
    }
    if (stat(c->setup.conf->lmdb_path, &st) != 0 || stat(lock, &st) != 0) {
        return ctl_fail(c, CTL_STORE,
                        "no LMDB database at %s (or its lock file): "
                        "suspect-fcgi creates both when it starts",
                        c->setup.conf->lmdb_path);
    }
    memset(&o, 0, sizeof(o));
    o.path = c->setup.conf->lmdb_path;
    o.map_size = c->setup.conf->lmdb_map_size;
    o.no_sync = c->setup.conf->lmdb_no_sync;
    suspect_err_clear(&err);
    if (suspect_lmdb_new(&o, &c->setup.store, &err) != SUSPECT_OK) {
        return ctl_fail_err(c, CTL_STORE, "lmdb store", &err);
    }
    return CTL_OK;
}

static int open_redis(ctl_t *c)
{
    suspect_redis_opts_t o;
    suspect_err_t err;
    unsigned ms = c->setup.conf->redis_timeout_ms;

    memset(&o, 0, sizeof(o));
    o.url = c->setup.conf->redis_url;
    o.connect_timeout_ms =
        ms > CTL_REDIS_TIMEOUT_MS ? ms : CTL_REDIS_TIMEOUT_MS;
    o.command_timeout_ms = o.connect_timeout_ms;
    o.clock = c->setup.conf->redis_server_clock ? SUSPECT_REDIS_CLOCK_SERVER
                                                : SUSPECT_REDIS_CLOCK_CALLER;
    o.key_prefix = c->setup.conf->key_prefix;
    suspect_err_clear(&err);
    if (suspect_redis_new(&o, &c->setup.store, &err) != SUSPECT_OK ||
        suspect_redis_ping(c->setup.store, &err) != SUSPECT_OK) {
        return ctl_fail_err(c, CTL_STORE, "redis store", &err);
    }
    return CTL_OK;
}

/* Opens the store of suspect.xml (see ctl_internal.h). */
int ctl_open_store(ctl_t *c, bool memory_ok)
{
    switch (c->setup.conf->store) {
    case SUSPECT_STORE_LMDB:
        return open_lmdb(c);
    case SUSPECT_STORE_REDIS:
        return open_redis(c);
    default:
        if (memory_ok) {
            return CTL_OK;
        }
        return ctl_fail(c, CTL_STORE,
                        "%s: the memory store lives inside the running "
                        "suspect-fcgi and cannot be reached from outside; "
                        "use <Store type=\"lmdb\"> or <Store type=\"redis\"> "
                        "for operator access",
                        c->conf_path);
    }
}

/* ---- keys --------------------------------------------------------------- */

/* Cuts a window key into prefix, action, type and value (ctl_internal.h). */
bool ctl_key_split(const ctl_t *c, const char *key, size_t len,
                   ctl_keyparts_t *p)
{
    const char *prefix = c->setup.conf->key_prefix;
    size_t plen = prefix != NULL ? strlen(prefix) : 0;
    const char *end = key + len, *colon;

    memset(p, 0, sizeof(*p));
    if (len < plen || memcmp(key, prefix != NULL ? prefix : "", plen) != 0) {
        return false;
    }
    if (c->setup.conf->key_hash_tag) {
        /* prefix{Action:...}: the value ends before the closing brace. */
        if (len < plen + 2 || key[plen] != '{' || end[-1] != '}') {
            return false;
        }
        plen++;
        end--;
    }
    p->action = key + plen;
    colon = memchr(p->action, ':', (size_t)(end - p->action));
    if (colon == NULL) {
        return false;
    }
    p->action_len = (size_t)(colon - p->action);
    p->value = colon + 1;
    if (c->setup.conf->key_format == SUSPECT_KEYS_TYPED) {
        p->type = p->value;
        colon = memchr(p->type, ':', (size_t)(end - p->type));
        if (colon == NULL) {
            return false;
        }
        p->type_len = (size_t)(colon - p->type);
        p->value = colon + 1;
        if (!suspect_name_valid(p->type, p->type_len)) {
            return false;
        }
    }
    p->value_len = (size_t)(end - p->value);
    return p->value_len > 0 && suspect_name_valid(p->action, p->action_len);
}

/* Decodes the %XX escapes of a key value (see ctl_internal.h). */
bool ctl_key_unescape(const char *value, size_t len, char *buf, size_t size,
                      size_t *out_len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        char ch = value[i];

        if (ch == '%') {
            int hi = i + 2 < len ? hex_value(value[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value(value[i + 2]) : -1;

            /* "%~" (capped) and "%#" (LMDB's long keys) are not escapes:
             * the raw value is gone. */
            if (lo < 0) {
                return false;
            }
            ch = (char)(hi * 16 + lo);
            i += 2;
        }
        if (n + 1 >= size) {
            return false;
        }
        buf[n++] = ch;
    }
    buf[n] = '\0';
    *out_len = n;
    return true;
}

/* ---- naming an identity ------------------------------------------------- */

/* The identity of type (NULL: the first route's only one) in the routes
 * of action, or NULL; *routes gets how many routes count action, *first_n
 * how many identities the first of them has. */
static const suspect_conf_identity_t *
find_identity(const suspect_conf_t *conf, const char *action, const char *type,
              size_t *routes, size_t *first_n)
{
    const suspect_conf_identity_t *found = NULL;

    *routes = 0;
    *first_n = 0;
    for (size_t i = 0; i < conf->nroutes; i++) {
        const suspect_conf_route_t *r = &conf->routes[i];

        if (strcmp(r->action, action) != 0) {
            continue;
        }
        if (++*routes == 1) {
            *first_n = r->nidentities;
            if (type == NULL && r->nidentities == 1) {
                found = &r->identities[0];
            }
        }
        for (size_t k = 0; type != NULL && found == NULL && k < r->nidentities;
             k++) {
            found = strcmp(r->identities[k].type, type) == 0 ? &r->identities[k]
                                                             : NULL;
        }
    }
    return found;
}

/* Splits identity into the n parts of a composite identity. */
static int split_parts(ctl_t *c, const char *identity, const char *type,
                       size_t n, suspect_identity_t *id)
{
    const char *p = identity;
    size_t seps = 0;

    for (const char *q = identity; *q != '\0'; q++) {
        seps += *q == '_';
    }
    if (seps != n - 1) {
        return ctl_fail(c, CTL_USAGE,
                        "identity type %s is composite: give its %zu values "
                        "joined by '_' (a value holding '_' needs -k KEY)",
                        type, n);
    }
    id->nparts = n;
    for (size_t i = 0; i < n; i++) {
        const char *us = strchr(p, '_');
        size_t len = us != NULL ? (size_t)(us - p) : strlen(p);

        id->part[i].ptr = p;
        id->part[i].len = len;
        p += len + 1;
    }
    return CTL_OK;
}

/* The identity type to use and the identity's parts; CTL_OK or a failure
 * (reported). */
static int identity_of(ctl_t *c, const char *action, const char *identity,
                       const char *type, ctl_target_t *t,
                       suspect_identity_t *id)
{
    bool typed = c->setup.conf->key_format == SUSPECT_KEYS_TYPED;
    size_t routes, first_n;
    const suspect_conf_identity_t *ci =
        find_identity(c->setup.conf, action, type, &routes, &first_n);

    if (type != NULL && ci == NULL && routes > 0) {
        return ctl_fail(c, CTL_NOTFOUND,
                        "no route of action %s counts identity type %s", action,
                        type);
    }
    /* The seed format's keys do not hold the type: any will do. */
    if (type == NULL && ci == NULL && typed) {
        return ctl_fail(c, CTL_USAGE,
                        "action %s is counted by %s: name the identity "
                        "TYPE",
                        action,
                        first_n == 0 ? "no route" : "several identity types");
    }
    t->type = type != NULL ? type : ci != NULL ? ci->type : NULL;
    id->type = t->type;
    id->nparts = 1;
    id->part[0].ptr = identity;
    id->part[0].len = strlen(identity);
    if (ci != NULL && ci->nparts > 1) {
        return split_parts(c, identity, ci->type, ci->nparts, id);
    }
    return CTL_OK;
}

/* t from -k KEY. */
static int target_from_key(ctl_t *c, bool need_rule, ctl_target_t *t)
{
    size_t len = strlen(c->key);
    ctl_keyparts_t p;

    if (len > SUSPECT_LOCK_SUFFIX_LEN &&
        strcmp(c->key + len - SUSPECT_LOCK_SUFFIX_LEN, SUSPECT_LOCK_SUFFIX) ==
            0) {
        len -= SUSPECT_LOCK_SUFFIX_LEN;
    }
    if (len + SUSPECT_LOCK_SUFFIX_LEN >= sizeof(t->key.buf) ||
        !ctl_key_split(c, c->key, len, &p)) {
        bool tag = c->setup.conf->key_hash_tag != 0;
        return ctl_fail(
            c, CTL_USAGE, "'%s' is not a key of %s (%s%sAction:%svalue%s)",
            c->key, c->conf_path,
            c->setup.conf->key_prefix != NULL ? c->setup.conf->key_prefix : "",
            tag ? "{" : "",
            c->setup.conf->key_format == SUSPECT_KEYS_TYPED ? "Type:" : "",
            tag ? "}" : "");
    }
    memcpy(t->abuf, p.action, p.action_len);
    t->action = t->abuf;
    if (p.type != NULL) {
        memcpy(t->tbuf, p.type, p.type_len);
        t->type = t->tbuf;
    }
    t->rule = suspect_limits_find(c->setup.limits, t->action);
    if (need_rule && t->rule == NULL) {
        return ctl_fail(c, CTL_NOTFOUND, "action %s is not in %s", t->action,
                        c->setup.conf->limits_path);
    }
    memcpy(t->key.buf, c->key, len);
    memcpy(t->key.buf + len, SUSPECT_LOCK_SUFFIX, SUSPECT_LOCK_SUFFIX_LEN + 1);
    t->key.window_len = len;
    t->key.lock_len = len + SUSPECT_LOCK_SUFFIX_LEN;
    return CTL_OK;
}

/* Builds the target of ACTION IDENTITY [TYPE] or -k KEY (ctl_internal.h). */
int ctl_target(ctl_t *c, const char *action, const char *identity,
               const char *type, bool need_rule, ctl_target_t *t)
{
    suspect_keyopts_t ko = {c->setup.conf->key_format,
                            c->setup.conf->key_prefix, 0,
                            c->setup.conf->key_hash_tag != 0};
    suspect_identity_t id;
    suspect_err_t err;
    int rc;

    memset(t, 0, sizeof(*t));
    if (c->key != NULL) {
        return target_from_key(c, need_rule, t);
    }
    if (!suspect_name_valid(action, strlen(action)) ||
        (type != NULL && !suspect_name_valid(type, strlen(type)))) {
        return ctl_fail(c, CTL_USAGE, "'%s' is not an action or type name",
                        suspect_name_valid(action, strlen(action)) ? type
                                                                   : action);
    }
    t->action = action;
    t->identity = identity;
    t->rule = suspect_limits_find(c->setup.limits, action);
    if (t->rule == NULL) {
        return ctl_fail(c, CTL_NOTFOUND, "action %s is not in %s", action,
                        c->setup.conf->limits_path);
    }
    memset(&id, 0, sizeof(id));
    rc = identity_of(c, action, identity, type, t, &id);
    if (rc != CTL_OK) {
        return rc;
    }
    suspect_err_clear(&err);
    if (suspect_key_build(&ko, action, &id, &t->key, &err) != SUSPECT_OK) {
        return ctl_fail_err(c, CTL_USAGE, "identity", &err);
    }
    return CTL_OK;
}
