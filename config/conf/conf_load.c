/*
 * conf_load.c - suspect.xml from a file or from memory into a snapshot.
 *
 * A load fills the defaults, lets conf_xml.c walk the document into a new
 * snapshot (conf.c), and either hands it out with one reference or frees
 * it whole: a failed load leaves nothing behind.
 *
 * Reading a file (suspect.xml here, the response template in
 * conf_values.c): open without blocking (a FIFO cannot hang us), fstat,
 * refuse anything that is not a regular file or is over its cap before
 * reading a byte, then read at most cap + 1 bytes so a file that grows
 * meanwhile is still caught (config_read_file()).
 *
 * Paths: the snapshot's dir is absolute (the current directory is joined
 * to a relative one), so every path resolved against it is absolute too,
 * whatever the daemon's working directory is later.
 */
#include "conf_internal.h"
#include "readfile.h"
#include "xmlsafe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "suspect_failover.h"

/* Adds "file: warning: N more warnings not shown" when some were dropped
 * (warnings[] has a spare entry for it). */
static suspect_rc_t add_dropped_line(conf_build_t *b)
{
    conf_snap_t *s = b->snap;
    char *w;
    int n;

    if (s->dropped == 0) {
        return SUSPECT_OK;
    }
    n = snprintf(NULL, 0, "%s: warning: %zu more warnings not shown",
                 b->conf->file, s->dropped);
    w = n < 0 ? NULL : conf_alloc(b, (size_t)n + 1);
    if (w == NULL) {
        return conf_nomem(b, 0);
    }
    snprintf(w, (size_t)n + 1, "%s: warning: %zu more warnings not shown",
             b->conf->file, s->dropped);
    s->warnings[s->nwarnings++] = w;
    return SUSPECT_OK;
}

/* The values of a file that says nothing (docs/suspect-xml.md). */
static void set_defaults(suspect_conf_t *c)
{
    c->listen = "unix:/run/suspect/fcgi.sock";
    c->socket_mode = 0660;
    c->workers = 16;
    c->mode = SUSPECT_MODE_FORWARD;
    c->io_timeout_ms = 30000;
    c->request_timeout_ms = 60000;
    c->form_max = 64u << 10;
    c->params_max = 128u << 10;
    c->reload_ms = 1000;
    c->store = SUSPECT_STORE_MEMORY;
    c->lmdb_mode = 0600;
    c->lmdb_group = -1;
    c->fail_mode = SUSPECT_FAIL_LOCAL;
    c->key_format = SUSPECT_KEYS_SEED;
    c->key_hash_tag = -1;
    c->cgi_timeout_ms = 30000;
    c->upstream_timeout_ms = 30000;
    c->upstream_connect_timeout_ms = 1000;
    c->upstream_max_idle = 16;
    c->fwd_header = SUSPECT_FWD_NONE;
    c->ipv4_prefix = 32;
    c->ipv6_prefix = 64;
    c->format = SUSPECT_FORMAT_AUTO;
    c->control_on = true;
    c->control_mode = 0660;
    c->decisions = SUSPECT_DECISIONS_OFF;
}

/* What set_dir() ends with: the directory, or why there is none. */
static suspect_rc_t dir_result(conf_build_t *b, const char *why)
{
    if (b->conf->dir != NULL) {
        return SUSPECT_OK;
    }
    if (why == NULL) {
        return conf_nomem(b, 0);
    }
    return suspect_err_set(b->err, SUSPECT_E_INVAL, b->conf->file, 0,
                           "its directory cannot be used: %s", why);
}

/* The absolute form of the directory (d, n) (NULL or "" = the current
 * one), cleaned of "//" and "/./", in the arena. */
static suspect_rc_t set_dir(conf_build_t *b, const char *d, size_t n)
{
    char cwd[PATH_MAX], *joined;
    const char *why = NULL;
    size_t clen;

    if (n > 0 && d[0] == '/') {
        b->conf->dir =
            conf_norm_path(b, d, n, CONF_NORM_DIR | CONF_NORM_DOTDOT, &why);
        return dir_result(b, why);
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        return suspect_err_sys(b->err, SUSPECT_E_IO, b->conf->file,
                               "cannot get the current directory");
    }
    clen = strlen(cwd);
    joined = conf_alloc(b, clen + 1 + n + 1);
    if (joined == NULL) {
        return conf_nomem(b, 0);
    }
    memcpy(joined, cwd, clen);
    joined[clen] = '/';
    if (n > 0) {
        memcpy(joined + clen + 1, d, n);
    }
    b->conf->dir = conf_norm_path(b, joined, clen + 1 + n,
                                  CONF_NORM_DIR | CONF_NORM_DOTDOT, &why);
    return dir_result(b, why);
}

/* A new snapshot named name in dir (d, dn); the walk; the closing line. */
static suspect_rc_t build(const char *buf, size_t len, const char *name,
                          const char *d, size_t dn, conf_snap_t **out,
                          suspect_err_t *err)
{
    conf_build_t b;
    suspect_rc_t rc;

    memset(&b, 0, sizeof(b));
    b.err = err;
    b.snap = conf_snap_new();
    if (b.snap == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    b.conf = &b.snap->conf;
    set_defaults(b.conf);
    b.conf->file = conf_strndup(&b, name, strlen(name));
    if (b.conf->file == NULL) {
        conf_snap_free(b.snap);
        return suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    rc = set_dir(&b, d, dn);
    if (rc == SUSPECT_OK) {
        rc = conf_xml_parse(buf, len, &b);
    }
    if (rc == SUSPECT_OK) {
        rc = add_dropped_line(&b);
    }
    if (rc != SUSPECT_OK) {
        conf_snap_free(b.snap);
        return rc;
    }
    *out = b.snap;
    return SUSPECT_OK;
}

/* Parses a document from memory; see the header for ownership. */
suspect_rc_t suspect_conf_parse(const char *buf, size_t len, const char *name,
                                const char *dir, const suspect_conf_t **out,
                                suspect_err_t *err)
{
    conf_snap_t *s = NULL;
    suspect_rc_t rc;

    if (name == NULL) {
        name = "<memory>";
    }
    if (out == NULL || (buf == NULL && len > 0)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, name, 0,
                               "suspect_conf_parse: bad arguments");
    }
    if (len > SUSPECT_CONF_MAX_BYTES) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, name, 0,
                               "file is too large (%zu bytes, at most %u)", len,
                               SUSPECT_CONF_MAX_BYTES);
    }
    if (xmlsafe_blank(buf, len)) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, name, 0, "file is empty");
    }
    rc = build(buf, len, name, dir, dir != NULL ? strlen(dir) : 0, &s, err);
    if (rc == SUSPECT_OK) {
        *out = &s->conf;
    }
    return rc;
}

/* suspect_conf_load(), also giving the fstat() of what was read. */
suspect_rc_t conf_load_stat(const char *path, const suspect_conf_t **out,
                            struct stat *st, suspect_err_t *err)
{
    conf_snap_t *s = NULL;
    const char *slash;
    char *buf = NULL;
    size_t len = 0;
    suspect_rc_t rc;

    if (path == NULL || path[0] == '\0' || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_conf_load: bad arguments");
    }
    rc = config_read_file(path, SUSPECT_CONF_MAX_BYTES, 0, st, &buf, &len, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (xmlsafe_blank(buf, len)) {
        free(buf);
        return suspect_err_set(err, SUSPECT_E_CONFIG, path, 0, "file is empty");
    }
    slash = strrchr(path, '/');
    if (slash == NULL) {
        rc = build(buf, len, path, "", 0, &s, err);
    } else {
        /* "/x.xml" lives in "/", "a/x.xml" in "a" */
        size_t dn = slash == path ? 1 : (size_t)(slash - path);
        rc = build(buf, len, path, path, dn, &s, err);
    }
    free(buf);
    if (rc == SUSPECT_OK) {
        *out = &s->conf;
    }
    return rc;
}

/* Reads path within the size cap and parses it; relative paths in it are
 * resolved against path's directory. */
suspect_rc_t suspect_conf_load(const char *path, const suspect_conf_t **out,
                               suspect_err_t *err)
{
    return conf_load_stat(path, out, NULL, err);
}
