/*
 * conf.c - suspect.xml snapshots: memory, warnings, references.
 *
 * A snapshot is one conf_snap_t (the public suspect_conf_t first) plus an
 * arena: a list of chunks from which every string and array of the
 * snapshot is bump-allocated, so freeing the chunk list frees all of it and
 * no field needs its own free (a compiled configuration's lists may lie in
 * the file mapping the snapshot holds instead, unmapped with it).  Reading
 * and parsing a file is conf_load.c's (it fills a new snapshot or frees it
 * whole); this file needs no XML, so
 * a program that builds snapshots another way (suspect-cgi from its
 * compiled snapshot file) links it without libxml2.
 *
 * Invariants: after a successful load nothing in the snapshot changes;
 * refs is touched only atomically.
 */
#include "conf_internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "readfile.h"

#define CHUNK_SIZE 4096
#define ALIGN      (sizeof(max_align_t))

struct conf_chunk {
    conf_chunk_t *next;
    size_t used, cap;
    max_align_t data[]; /* cap bytes */
};

_Static_assert(sizeof(suspect_conf_mode_t) == sizeof(int) &&
                   sizeof(suspect_conf_store_kind_t) == sizeof(int) &&
                   sizeof(suspect_key_format_t) == sizeof(int) &&
                   sizeof(suspect_conf_format_t) == sizeof(int) &&
                   sizeof(suspect_conf_fwd_header_t) == sizeof(int) &&
                   sizeof(suspect_param_in_t) == sizeof(int) &&
                   sizeof(suspect_missing_t) == sizeof(int),
               "conf_set_enum writes enums as int");

/* Allocates from the head chunk, or from a new one big enough. */
void *conf_alloc(conf_build_t *b, size_t size)
{
    conf_chunk_t *c = b->snap->chunks;
    unsigned char *p;

    size = (size + ALIGN - 1) / ALIGN * ALIGN;
    if (size == 0) {
        size = ALIGN;
    }
    if (c == NULL || c->cap - c->used < size) {
        size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
        if (size > SIZE_MAX / 2) {
            return NULL;
        }
        c = suspect_malloc(sizeof(*c) + cap);
        if (c == NULL) {
            return NULL;
        }
        c->used = 0;
        c->cap = cap;
        c->next = b->snap->chunks;
        b->snap->chunks = c;
    }
    p = (unsigned char *)c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

/* Copies n bytes into the arena, NUL-terminated. */
char *conf_strndup(conf_build_t *b, const char *p, size_t n)
{
    char *s = conf_alloc(b, n + 1);
    if (s != NULL) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Records a config error at line of this file. */
suspect_rc_t conf_fail(conf_build_t *b, int line, const char *fmt, ...)
{
    char text[SUSPECT_ERR_TEXT_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return suspect_err_set(b->err, SUSPECT_E_CONFIG, b->conf->file, line, "%s",
                           text);
}

/* Records that memory ran out. */
suspect_rc_t conf_nomem(conf_build_t *b, int line)
{
    return suspect_err_set(b->err, SUSPECT_E_NOMEM, b->conf->file, line,
                           "out of memory");
}

/* Formats a warning into the arena, or counts it past the cap. */
suspect_rc_t conf_warn(conf_build_t *b, int line, const char *fmt, ...)
{
    conf_snap_t *s = b->snap;
    char text[SUSPECT_ERR_TEXT_MAX];
    va_list ap;
    char *w;
    int n;

    if (s->nwarnings == CONF_MAX_WARNINGS) {
        s->dropped++;
        return SUSPECT_OK;
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    n = snprintf(NULL, 0, "%s:%d: warning: %s", b->conf->file, line, text);
    w = n < 0 ? NULL : conf_alloc(b, (size_t)n + 1);
    if (w == NULL) {
        return conf_nomem(b, line);
    }
    snprintf(w, (size_t)n + 1, "%s:%d: warning: %s", b->conf->file, line, text);
    s->warnings[s->nwarnings++] = w;
    return SUSPECT_OK;
}

/* Joins a relative path to the directory; keeps an absolute one. */
char *conf_resolve(conf_build_t *b, const char *p, size_t n)
{
    const char *dir = b->conf->dir;
    size_t dlen = strlen(dir);
    char *s;

    if (n > 0 && p[0] == '/') {
        return conf_strndup(b, p, n);
    }
    s = conf_alloc(b, dlen + 1 + n + 1);
    if (s != NULL) {
        memcpy(s, dir, dlen);
        /* dir is "/" or has no trailing slash */
        if (dlen > 1) {
            s[dlen++] = '/';
        }
        memcpy(s + dlen, p, n);
        s[dlen + n] = '\0';
    }
    return s;
}

/* A new, empty snapshot with one reference and no arena yet. */
conf_snap_t *conf_snap_new(void)
{
    conf_snap_t *s = suspect_calloc(1, sizeof(*s));

    if (s != NULL) {
        s->refs = 1;
    }
    return s;
}

/* Frees a snapshot, its arena and the mapping it holds, whatever its
 * reference count. */
void conf_snap_free(conf_snap_t *s)
{
    conf_chunk_t *c, *next;

    if (s == NULL) {
        return;
    }
    for (c = s->chunks; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    config_unmap_file(s->map, s->map_len);
    free(s);
}

/* Adds a reference (atomically) and returns conf. */
const suspect_conf_t *suspect_conf_ref(const suspect_conf_t *conf)
{
    if (conf != NULL) {
        conf_snap_t *s = (conf_snap_t *)conf;
        __atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED);
    }
    return conf;
}

/* Drops a reference; the last one frees the snapshot and its arena. */
void suspect_conf_unref(const suspect_conf_t *conf)
{
    conf_snap_t *s = (conf_snap_t *)conf;

    if (s != NULL && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        conf_snap_free(s);
    }
}

/* Number of warnings kept (the closing "more not shown" line included). */
size_t suspect_conf_warning_count(const suspect_conf_t *conf)
{
    return conf != NULL ? ((const conf_snap_t *)conf)->nwarnings : 0;
}

/* Warning i, or NULL when out of range. */
const char *suspect_conf_warning(const suspect_conf_t *conf, size_t i)
{
    const conf_snap_t *s = (const conf_snap_t *)conf;
    return s != NULL && i < s->nwarnings ? s->warnings[i] : NULL;
}

/* "header", "cookie", ... as written before the ':' in the file. */
const char *suspect_src_kind_name(suspect_src_kind_t kind)
{
    switch (kind) {
    case SUSPECT_SRC_HEADER:
        return "header";
    case SUSPECT_SRC_COOKIE:
        return "cookie";
    case SUSPECT_SRC_QUERY:
        return "query";
    case SUSPECT_SRC_FORM:
        return "form";
    case SUSPECT_SRC_ENV:
        return "env";
    case SUSPECT_SRC_CLIENT_IP:
        return "client-ip";
    case SUSPECT_SRC_AUTH_USER:
        return "auth-user";
    case SUSPECT_SRC_XMLRPC:
        return "xmlrpc";
    case SUSPECT_SRC_JSON:
        return "json";
    }
    return "unknown";
}
const char *suspect_conf_control_path(const suspect_conf_t *conf, char *buf,
                                      size_t size)
{
    const char *listen = conf->listen;
    int n;

    if (!conf->control_on) {
        return NULL;
    }
    if (conf->control_path != NULL) {
        n = snprintf(buf, size, "%s", conf->control_path);
    } else if (listen != NULL && strncmp(listen, "unix:", 5) == 0 &&
               strrchr(listen, '/') != NULL) {
        const char *slash = strrchr(listen, '/');

        n = snprintf(buf, size, "%.*s/%s", (int)(slash - listen - 5),
                     listen + 5, SUSPECT_CONF_CONTROL_NAME);
    } else {
        n = snprintf(buf, size, "%s/%s", SUSPECT_CONF_CONTROL_DIR,
                     SUSPECT_CONF_CONTROL_NAME);
    }
    return n > 0 && (size_t)n < size ? buf : NULL;
}

const char *suspect_conf_decisions_name(suspect_conf_decisions_t d)
{
    switch (d) {
    case SUSPECT_DECISIONS_DENIALS:
        return "denials";
    case SUSPECT_DECISIONS_ALL:
        return "all";
    default:
        return "off";
    }
}

const char *suspect_conf_store_name(suspect_conf_store_kind_t k)
{
    return k == SUSPECT_STORE_LMDB    ? "lmdb"
           : k == SUSPECT_STORE_REDIS ? "redis"
                                      : "memory";
}
