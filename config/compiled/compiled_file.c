/*
 * compiled_file.c - compiled configurations as files (compiled.h): where
 * one lives, reading it without trusting it, checking that its sources
 * are unchanged, and replacing it atomically.
 *
 * Trust: the file decides what is counted, so it is only read when it is
 * a regular file owned by the effective user (or root) and writable by
 * no one else; it is opened with O_NOFOLLOW and O_NONBLOCK (a planted
 * link or FIFO is refused, not followed or waited on) and checked with
 * fstat() of the opened descriptor (config_map_file(), readfile.h, with
 * CONFIG_READ_NOFOLLOW and CONFIG_READ_TRUSTED).  Its content is then decoded,
 * which checks everything again (compiled_dec.c).  It is mapped, not read,
 * and its packed lists stay where they lie, the snapshot holding the
 * mapping: a file of large lists is megabytes that a copy would double,
 * and a writer replaces the file (below), never rewrites it in place.
 *
 * Freshness: one stat() per source (suspect.xml, the limits file, the
 * template, each list file), compared with the identity recorded when it
 * was read.  An in-place edit changes mtime and ctime (and size,
 * often), a replacement by rename changes the inode, a restored mtime
 * (touch -d, cp -p) still changes ctime.  What no stat() can see is a
 * second edit within the same tick of the file system's clock, of the
 * same size; compiled_racy() lets the writer refuse to save from sources
 * that recent, as git does with its index.
 *
 * Writing: a unique temporary file beside the target (mkostemp: mode
 * 0600, O_EXCL), the whole content, then rename() over the target: many
 * processes may write at once, each rename is atomic, and a reader sees
 * one complete file or another.  No fsync(): a file damaged by a crash
 * fails its checksum and is simply compiled again.
 */
#include "compiled.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "readfile.h"
#include "sha256.h"

#define RACY_FINE_NS   100000000LL  /* 100 ms: many clock ticks */
#define RACY_SECOND_NS 2000000000LL /* whole-second file times */

int compiled_abs_path(const char *conf, char *out, size_t size)
{
    char cwd[4096];
    int n;

    if (conf[0] == '/') {
        n = snprintf(out, size, "%s", conf);
    } else if (getcwd(cwd, sizeof(cwd)) == NULL) {
        return -1;
    } else {
        n = snprintf(out, size, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "",
                     conf);
    }
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* DIR/cgi-UID-HASH.snap; see the header. */
int compiled_file_name(const char *dir, const char *conf_abs, char *out,
                       size_t size)
{
    uint8_t digest[SUSPECT_SHA256_LEN];
    char hex[17];
    int n;

    suspect_sha256(conf_abs, strlen(conf_abs), digest);
    for (size_t i = 0; i < 8; i++) {
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    }
    n = snprintf(out, size, "%s/cgi-%lu-%s.snap", dir, (unsigned long)geteuid(),
                 hex);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* Maps (trusted only: see the top), decodes. */
suspect_rc_t compiled_read(const char *path, compiled_t *out,
                           suspect_err_t *err)
{
    const void *map = NULL;
    size_t len = 0;
    suspect_rc_t rc;

    memset(out, 0, sizeof(*out));
    rc = config_map_file(path, COMPILED_MAX_BYTES,
                         CONFIG_READ_NOFOLLOW | CONFIG_READ_TRUSTED, &map, &len,
                         err);
    return rc == SUSPECT_OK ? compiled_decode_map(map, len, path, out, err)
                            : rc;
}

/* Whether the file at path has the identity want (all zero: no file). */
static bool same_id(const char *path, const file_id_t *want)
{
    static const file_id_t none;
    struct stat st;
    file_id_t now;

    if (path == NULL) {
        return memcmp(want, &none, sizeof(none)) == 0;
    }
    if (stat(path, &st) != 0) {
        return false;
    }
    now = file_id_of(&st);
    return file_id_same(&now, want);
}

/* The identity list l's file had when it was read. */
static file_id_t list_id(const suspect_conf_list_t *l)
{
    file_id_t id;

    id.dev = l->file_id[0];
    id.ino = l->file_id[1];
    id.size = l->file_id[2];
    id.mtime_ns = (int64_t)l->file_id[3];
    id.ctime_ns = (int64_t)l->file_id[4];
    return id;
}

/* The lists of c that have a file, into out (at most 2 + 2 per route);
 * their number. */
static size_t list_files(const suspect_conf_t *c,
                         const suspect_conf_list_t **out)
{
    const suspect_conf_list_t *all[2] = {c->allow, c->deny};
    size_t n = 0;

    for (size_t i = 0; i < 2; i++) {
        if (all[i] != NULL && all[i]->file != NULL) {
            out[n++] = all[i];
        }
    }
    for (size_t i = 0; i < c->nroutes; i++) {
        const suspect_conf_route_t *r = &c->routes[i];

        if (r->allow != NULL && r->allow->file != NULL) {
            out[n++] = r->allow;
        }
        if (r->deny != NULL && r->deny->file != NULL) {
            out[n++] = r->deny;
        }
    }
    return n;
}

/* Whether every list file of c still has the identity it was read with. */
static bool lists_fresh(const suspect_conf_t *c)
{
    const suspect_conf_list_t *l[2 + 2 * SUSPECT_CONF_MAX_ROUTES];
    size_t n = list_files(c, l);

    for (size_t i = 0; i < n; i++) {
        file_id_t want = list_id(l[i]);

        if (!same_id(l[i]->file, &want)) {
            return false;
        }
    }
    return true;
}

/* The key, then one stat() per source. */
bool compiled_fresh(const compiled_t *s, const char *conf_abs)
{
    return s->conf != NULL && s->limits != NULL && s->conf_path != NULL &&
           strcmp(s->conf_path, conf_abs) == 0 &&
           same_id(s->conf_path, &s->id[COMPILED_SRC_CONF]) &&
           same_id(s->conf->limits_path, &s->id[COMPILED_SRC_LIMITS]) &&
           same_id(s->conf->template_path, &s->id[COMPILED_SRC_TEMPLATE]) &&
           lists_fresh(s->conf);
}

/* Whether time t (ns) is within window of now, on either side. */
static bool near(int64_t t, int64_t now_ns, int64_t window)
{
    int64_t d = now_ns - t;

    return d < window && d > -window;
}

/* Whether the source id changed within its file system's tick of now. */
static bool racy_id(const file_id_t *id, int64_t now_ns)
{
    /* Whole seconds in both times: a file system that keeps no more,
     * whose tick is a second (or two). */
    int64_t w = id->mtime_ns % 1000000000 == 0 && id->ctime_ns % 1000000000 == 0
                    ? RACY_SECOND_NS
                    : RACY_FINE_NS;

    return near(id->mtime_ns, now_ns, w) || near(id->ctime_ns, now_ns, w);
}

/* Whether a source, a list file included, changed within its tick. */
bool compiled_racy(const compiled_t *s, int64_t now_ns)
{
    const suspect_conf_list_t *l[2 + 2 * SUSPECT_CONF_MAX_ROUTES];
    size_t n = s->conf != NULL ? list_files(s->conf, l) : 0;

    for (size_t i = 0; i < COMPILED_NSRC; i++) {
        if (racy_id(&s->id[i], now_ns)) {
            return true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        file_id_t id = list_id(l[i]);

        if (racy_id(&id, now_ns)) {
            return true;
        }
    }
    return false;
}

/* Writes n bytes at p to fd; 0 or -1 (errno). */
static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            if (w == 0) {
                errno = EIO;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* write_all(), then close(fd) in any case; 0 or -1 (errno of the first
 * failure). */
static int write_closed(int fd, const unsigned char *p, size_t n)
{
    int w = write_all(fd, p, n);
    int saved = errno;

    if (close(fd) != 0 && w == 0) {
        return -1;
    }
    errno = saved;
    return w;
}

/* Encodes, writes a temporary file beside path, renames it over path. */
suspect_rc_t compiled_write(const char *path, const compiled_t *s,
                            suspect_err_t *err)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    char *tmp;
    int fd;
    suspect_rc_t rc = compiled_encode(s, &buf, &len, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    tmp = suspect_malloc(strlen(path) + 8);
    if (tmp == NULL) {
        free(buf);
        return suspect_err_set(err, SUSPECT_E_NOMEM, path, 0, "out of memory");
    }
    sprintf(tmp, "%s.XXXXXX", path);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, path, "create");
    } else if (write_closed(fd, buf, len) != 0) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, tmp, "write");
    } else if (rename(tmp, path) != 0) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, path, "rename");
    }
    if (rc != SUSPECT_OK && fd >= 0) {
        unlink(tmp);
    }
    free(tmp);
    free(buf);
    return rc;
}
