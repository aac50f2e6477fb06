/*
 * redisurl.c - the Redis store's URL (redisurl.h).
 *
 * Forms:
 *   redis://[[user]:password@]host[:port][/db]
 *   unix:///path/to.sock[?db=N][&password=P][&user=U]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/NAME
 *       [?db=N][&sentinelPassword=P][&sentinelUser=U]
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...]
 * The userinfo is always the data nodes' login (with Sentinel: the
 * master's); the sentinels' own is apart, in the query, since a site may
 * protect them with another password or none.  Redis Cluster has only
 * db 0, so its URL has no path.  user, password, NAME and query values are
 * %XX-decoded (a %00 is refused); a host in brackets is an IPv6 address.
 * Everything is copied into fixed buffers: a field that does not fit is an
 * error, never truncated.
 */
#include "redisurl.h"

#include <stdio.h>
#include <string.h>

#include "text.h"

/* Copies s[0..len) into dst (size REDIS_FIELD_MAX), %XX-decoded when
 * decode; false when it does not fit or an escape is malformed. */
static bool copy_field(char *dst, const char *s, size_t len, bool decode)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (decode && c == '%') {
            int hi, lo;
            if (i + 2 >= len) {
                return false;
            }
            hi = hex_value(s[i + 1]);
            lo = hex_value(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return false;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (o + 1 >= REDIS_FIELD_MAX) {
            return false;
        }
        dst[o++] = c;
    }
    dst[o] = '\0';
    return true;
}

/* Parses the decimal number s[0..len) into *out, within lo..hi. */
static bool parse_int(const char *s, size_t len, int lo, int hi, int *out)
{
    long v = 0;

    if (len == 0 || len > 9) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi) {
        return false;
    }
    *out = (int)v;
    return true;
}

static suspect_rc_t bad_url(suspect_err_t *err, const char *why)
{
    return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0, "redis URL: %s", why);
}

bool redis_endpoint_set(redis_endpoint_t *ep, const char *host, size_t len,
                        int port)
{
    memset(ep, 0, sizeof(*ep));
    if (len == 0 || !copy_field(ep->host, host, len, false)) {
        return false;
    }
    ep->port = port;
    snprintf(ep->name, sizeof(ep->name),
             strchr(ep->host, ':') != NULL ? "[%s]:%d" : "%s:%d", ep->host,
             port);
    return true;
}

bool redis_endpoint_same(const redis_endpoint_t *a, const redis_endpoint_t *b)
{
    return a->is_unix == b->is_unix && a->port == b->port &&
           strcmp(a->host, b->host) == 0;
}

/* Parses "[user]:password" (userinfo). */
static suspect_rc_t parse_userinfo(const char *s, size_t len, redis_addr_t *a,
                                   suspect_err_t *err)
{
    const char *colon = memchr(s, ':', len);

    if (colon == NULL) {
        return bad_url(err, "write the password as :password@");
    }
    if (!copy_field(a->user, s, (size_t)(colon - s), true) ||
        !copy_field(a->password, colon + 1, len - (size_t)(colon - s) - 1,
                    true)) {
        return bad_url(err, "bad or too long user or password");
    }
    return SUSPECT_OK;
}

/* Parses "host[:port]" or "[v6][:port]" into ep (port: the default). */
static suspect_rc_t parse_hostport(const char *s, size_t len, int port,
                                   redis_endpoint_t *ep, suspect_err_t *err)
{
    const char *end = s + len, *host = s, *hend, *pstr = NULL;

    if (len > 0 && s[0] == '[') {
        host = s + 1;
        hend = memchr(host, ']', len - 1);
        if (hend == NULL) {
            return bad_url(err, "unclosed '[' in host");
        }
        if (hend + 1 < end) {
            if (hend[1] != ':') {
                return bad_url(err, "junk after ']'");
            }
            pstr = hend + 2;
        }
    } else {
        hend = memchr(s, ':', len);
        if (hend != NULL) {
            pstr = hend + 1;
        } else {
            hend = end;
        }
    }
    if (pstr != NULL &&
        !parse_int(pstr, (size_t)(end - pstr), 1, 65535, &port)) {
        return bad_url(err, "port must be 1..65535");
    }
    if (!redis_endpoint_set(ep, host, (size_t)(hend - host), port)) {
        return bad_url(err, "missing or too long host");
    }
    return SUSPECT_OK;
}

/* Parses "[userinfo@]host[:port][,host[:port]...]" (s[0..len)) into a;
 * at most max hosts. */
static suspect_rc_t parse_authority(const char *s, size_t len, size_t max,
                                    int port, redis_addr_t *a,
                                    suspect_err_t *err)
{
    const char *at = NULL, *end = s + len;
    suspect_rc_t rc;

    for (const char *p = s; p < end; p++) {
        at = *p == '@' ? p : at;
    }
    if (at != NULL) {
        rc = parse_userinfo(s, (size_t)(at - s), a, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        s = at + 1;
    }
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *hend = comma != NULL ? comma : end;

        if (a->nhosts == max) {
            return bad_url(err, max == 1 ? "one host only in this URL form"
                                         : "too many hosts (16 at most)");
        }
        rc = parse_hostport(s, (size_t)(hend - s), port, &a->hosts[a->nhosts++],
                            err);
        if (rc != SUSPECT_OK || comma == NULL) {
            return rc;
        }
        s = comma + 1;
    }
}

/* Parses the query q ("name=value&..."; q at '?' or at the end) with the
 * names the URL form allows (a NULL-terminated list). */
static suspect_rc_t parse_query(const char *q, redis_addr_t *a,
                                const char *const *names, const char *msg,
                                suspect_err_t *err)
{
    while (*q != '\0') {
        size_t len = strcspn(++q, "&");
        const char *eq = memchr(q, '=', len), *v;
        size_t nlen, vlen;
        bool ok = false, known = false;

        if (eq == NULL) {
            return bad_url(err, "query parameters are name=value");
        }
        nlen = (size_t)(eq - q);
        v = eq + 1;
        vlen = len - nlen - 1;
        for (const char *const *n = names; *n != NULL && !known; n++) {
            known = strlen(*n) == nlen && memcmp(q, *n, nlen) == 0;
        }
        if (!known) {
            return bad_url(err, msg);
        }
        if (nlen == 2) {
            ok = parse_int(v, vlen, 0, 1000000, &a->db);
        } else if (nlen == 4) {
            ok = copy_field(a->user, v, vlen, true);
        } else if (nlen == 8) {
            ok = copy_field(a->password, v, vlen, true);
        } else if (nlen == 12) {
            ok = copy_field(a->sentinel_user, v, vlen, true);
        } else {
            ok = copy_field(a->sentinel_password, v, vlen, true);
        }
        if (!ok) {
            return bad_url(err, nlen == 2 ? "db must be a number"
                                          : "bad or too long query value");
        }
        q += len;
    }
    return SUSPECT_OK;
}

static suspect_rc_t parse_tcp(const char *s, redis_addr_t *a,
                              suspect_err_t *err)
{
    size_t alen = strcspn(s, "/?#");
    const char *rest = s + alen;
    suspect_rc_t rc = parse_authority(s, alen, 1, 6379, a, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (*rest == '/' && rest[1] != '\0' &&
        !parse_int(rest + 1, strlen(rest + 1), 0, 1000000, &a->db)) {
        return bad_url(err, "db must be a number");
    }
    if (*rest != '\0' && *rest != '/') {
        return bad_url(err, "no query or fragment in redis:// URLs");
    }
    snprintf(a->name, sizeof(a->name), "%s", a->hosts[0].name);
    return SUSPECT_OK;
}

static suspect_rc_t parse_unix(const char *s, redis_addr_t *a,
                               suspect_err_t *err)
{
    static const char *const names[] = {"db", "password", "user", NULL};
    size_t plen = strcspn(s, "?");
    redis_endpoint_t *ep = &a->hosts[0];

    a->nhosts = 1;
    ep->is_unix = true;
    if (plen < 2 || s[0] != '/' || !copy_field(ep->host, s, plen, false)) {
        return bad_url(err, "unix:// needs an absolute socket path");
    }
    snprintf(ep->name, sizeof(ep->name), "%s", ep->host);
    snprintf(a->name, sizeof(a->name), "%s", ep->host);
    return parse_query(s + plen, a, names,
                       "unknown query parameter (db, password, user)", err);
}

static suspect_rc_t parse_sentinel(const char *s, redis_addr_t *a,
                                   suspect_err_t *err)
{
    static const char *const names[] = {"db", "sentinelPassword",
                                        "sentinelUser", NULL};
    size_t alen = strcspn(s, "/?#"), nlen;
    const char *name = s + alen + (s[alen] == '/');
    suspect_rc_t rc;

    a->kind = REDIS_SENTINEL;
    rc = parse_authority(s, alen, REDIS_MAX_HOSTS, REDIS_SENTINEL_PORT, a, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    nlen = strcspn(name, "/?#");
    if (s[alen] != '/' || nlen == 0 ||
        !copy_field(a->master, name, nlen, true)) {
        return bad_url(err, "redis+sentinel:// needs the master's name: "
                            "redis+sentinel://host:26379/NAME");
    }
    if (name[nlen] == '/' || name[nlen] == '#') {
        return bad_url(err, "write the db as ?db=N after the master's name");
    }
    snprintf(a->name, sizeof(a->name), "sentinel %s", a->master);
    return parse_query(name + nlen, a, names,
                       "unknown query parameter (db, sentinelPassword, "
                       "sentinelUser)",
                       err);
}

static suspect_rc_t parse_cluster(const char *s, redis_addr_t *a,
                                  suspect_err_t *err)
{
    size_t alen = strcspn(s, "/?#");
    suspect_rc_t rc;

    a->kind = REDIS_CLUSTER;
    rc = parse_authority(s, alen, REDIS_MAX_HOSTS, 6379, a, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (s[alen] != '\0') {
        return bad_url(err, "redis+cluster:// takes hosts only (a cluster "
                            "has db 0 alone)");
    }
    snprintf(a->name, sizeof(a->name), "cluster %s", a->hosts[0].name);
    return SUSPECT_OK;
}

suspect_rc_t redis_addr_parse(const char *url, redis_addr_t *out,
                              suspect_err_t *err)
{
    memset(out, 0, sizeof(*out));
    if (url == NULL) {
        return bad_url(err, "none given");
    }
    if (strncmp(url, "redis://", 8) == 0) {
        return parse_tcp(url + 8, out, err);
    }
    if (strncmp(url, "unix://", 7) == 0) {
        return parse_unix(url + 7, out, err);
    }
    if (strncmp(url, "redis+sentinel://", 17) == 0) {
        return parse_sentinel(url + 17, out, err);
    }
    if (strncmp(url, "redis+cluster://", 16) == 0) {
        return parse_cluster(url + 16, out, err);
    }
    return bad_url(err, "must start with redis://, unix://, "
                        "redis+sentinel:// or redis+cluster://");
}
