/*
 * file_id.h - "is it still the same file?": what stat() says of a file,
 * kept so that a later stat() tells whether the file was replaced or
 * changed.  Device, inode, size, and the modification and change times to
 * the nanosecond: a rename over the file changes the inode, an edit in
 * place the times (and ctime catches a touch that sets mtime back).  The
 * limits reloader, suspect-fcgi's suspect.xml reload and suspect-cgi's
 * compiled configuration ask it.  Inline; private to the project.
 */
#ifndef SUSPECT_FILE_ID_H
#define SUSPECT_FILE_ID_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* What stat() says of a file; all zero: no file. */
typedef struct file_id {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns; /* since the epoch */
} file_id_t;

static inline file_id_t file_id_of(const struct stat *st)
{
    file_id_t id;

    id.dev = (uint64_t)st->st_dev;
    id.ino = (uint64_t)st->st_ino;
    id.size = (uint64_t)st->st_size;
    id.mtime_ns =
        (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    id.ctime_ns =
        (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
    return id;
}

/* True when a and b are the same state of the same file. */
static inline bool file_id_same(const file_id_t *a, const file_id_t *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* file_id_same() of two stat() results. */
static inline bool file_id_same_stat(const struct stat *a, const struct stat *b)
{
    file_id_t x = file_id_of(a), y = file_id_of(b);

    return file_id_same(&x, &y);
}

#endif
