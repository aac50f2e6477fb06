/*
 * readfile.c - a configuration file read whole, capped: see readfile.h.
 *
 * The buffer starts at the size fstat() gave (capped) plus one byte and
 * doubles while the file keeps coming, up to one byte past the cap: a
 * read that fills that byte shows a file over the cap.  A mapping covers
 * the size fstat() gave, which the cap was checked against.
 */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"

/* Reads fd (hint bytes by fstat) into a new buffer, at most max bytes. */
static suspect_rc_t read_fd(int fd, const char *path, size_t hint, size_t max,
                            char **buf, size_t *len, suspect_err_t *err)
{
    size_t cap = (hint < max ? hint : max) + 1, used = 0;
    char *data = suspect_malloc(cap);

    if (data == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, path, 0, "out of memory");
    }
    for (;;) {
        ssize_t got;

        if (used == cap) {
            char *grown = cap > max ? NULL : suspect_realloc(data, cap * 2);
            if (grown == NULL) {
                break; /* over the cap, or out of memory: see below */
            }
            data = grown;
            cap *= 2;
        }
        got = read(fd, data + used, cap - used);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            free(data);
            return suspect_err_sys(err, SUSPECT_E_IO, path, "cannot read");
        }
        if (got == 0) {
            *buf = data;
            *len = used;
            return SUSPECT_OK;
        }
        used += (size_t)got;
    }
    free(data);
    if (cap <= max) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, path, 0, "out of memory");
    }
    return suspect_err_set(err, SUSPECT_E_CONFIG, path, 0,
                           "file is too large (more than %zu bytes)", max);
}

/* Why a file of st may not be trusted (CONFIG_READ_TRUSTED), or NULL. */
static const char *untrusted(const struct stat *st)
{
    if (!S_ISREG(st->st_mode)) {
        return "not a regular file";
    }
    if (st->st_uid != geteuid() && st->st_uid != 0) {
        return "owned by another user";
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return "writable by others";
    }
    return NULL;
}

/* Opens path as flags say and checks it (see readfile.h): the
 * descriptor into *fd and its fstat() into *fst, or an error and no
 * descriptor. */
static suspect_rc_t open_checked(const char *path, size_t max, unsigned flags,
                                 int *fd, struct stat *fst, suspect_err_t *err)
{
    int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                 ((flags & CONFIG_READ_NOFOLLOW) != 0 ? O_NOFOLLOW : 0);
    const char *why = NULL;
    suspect_rc_t rc = SUSPECT_OK;

    *fd = open(path, oflags);
    if (*fd < 0) {
        return suspect_err_sys(
            err, errno == ENOENT ? SUSPECT_E_NOTFOUND : SUSPECT_E_IO, path,
            "cannot open");
    }
    if (fstat(*fd, fst) != 0) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, path, "cannot stat");
    } else if ((flags & CONFIG_READ_TRUSTED) != 0 &&
               (why = untrusted(fst)) != NULL) {
        rc = suspect_err_set(err, SUSPECT_E_CONFIG, path, 0, "not trusted: %s",
                             why);
    } else if (!S_ISREG(fst->st_mode)) {
        rc = suspect_err_set(err, SUSPECT_E_IO, path, 0, "not a regular file");
    } else if ((uintmax_t)fst->st_size > max) {
        rc = suspect_err_set(err, SUSPECT_E_CONFIG, path, 0,
                             "file is too large (%jd bytes, at most %zu)",
                             (intmax_t)fst->st_size, max);
    }
    if (rc != SUSPECT_OK) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

suspect_rc_t config_read_file(const char *path, size_t max, unsigned flags,
                              struct stat *st, char **buf, size_t *len,
                              suspect_err_t *err)
{
    struct stat fst;
    int fd;
    suspect_rc_t rc = open_checked(path, max, flags, &fd, &fst, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    rc = read_fd(fd, path, (size_t)fst.st_size, max, buf, len, err);
    if (rc == SUSPECT_OK && st != NULL) {
        *st = fst;
    }
    close(fd);
    return rc;
}

suspect_rc_t config_map_file(const char *path, size_t max, unsigned flags,
                             const void **map, size_t *len, suspect_err_t *err)
{
    struct stat fst;
    void *p;
    int fd;
    suspect_rc_t rc = open_checked(path, max, flags, &fd, &fst, err);

    *map = NULL;
    *len = 0;
    if (rc != SUSPECT_OK || fst.st_size == 0) {
        if (fd >= 0) {
            close(fd);
        }
        return rc;
    }
    p = mmap(NULL, (size_t)fst.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, path, "cannot map");
    } else {
        *map = p;
        *len = (size_t)fst.st_size;
    }
    close(fd);
    return rc;
}

void config_unmap_file(const void *map, size_t len)
{
    if (map != NULL) {
        munmap((void *)map, len);
    }
}
