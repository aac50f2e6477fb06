/*
 * suspect_lmdb.h - the LMDB store: one host, many processes, survives
 * restarts.
 *
 * Every process that decides for a host (suspect-cgi runs once per request;
 * Apache mod_fcgid and spawn-fcgi -F run several suspect-fcgi) opens the
 * same database file.  A decision is one LMDB write transaction, and LMDB
 * serialises writers across processes, so the counts are exact however many
 * processes decide at once.  State lives in a memory-mapped file: a lock
 * taken before a restart of the process, of Apache or of the host is still
 * there after it.
 *
 * Each process opens its own store: an LMDB environment must not be used
 * across fork().  A store that notices it is used in a child process opens
 * the database again (the inherited handle is left alone, never closed).
 * Within a process, one store per database file, shared by any number of
 * threads; do not open the same file twice in one process.
 *
 * The store is bounded by its map size: expired entries are purged as
 * decisions go; new identities may fill three quarters of the map, the
 * rest is kept for the locks and counts it holds; when the map is full
 * anyway a full purge runs (then, for what it holds, the least recently
 * hit counters are evicted, never a lock) and the write is tried once
 * more; a denial the store's state gives is then the answer, anything
 * else fails with SUSPECT_E_FULL.  docs/stores.md ("LMDB store")
 * describes the file, the record and the choices.
 */
#ifndef SUSPECT_LMDB_H
#define SUSPECT_LMDB_H

#include <stddef.h>
#include <stdint.h>

#include "suspect_store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SUSPECT_LMDB_MAP_SIZE_DEFAULT ((size_t)64 << 20) /* 64 MiB */
#define SUSPECT_LMDB_MODE_DEFAULT     0600

typedef struct suspect_lmdb_opts {
    const char *path;     /* the database file (its lock file is path
                             "-lock"); the directory must exist */
    size_t map_size;      /* bytes, the store's bound; 0 = 64 MiB; a file
                             already larger keeps its size */
    unsigned mode;        /* permissions of created files, 0 = 0600; the
                             process umask still applies */
    unsigned max_readers; /* concurrent read transactions, 0 = 126 */
    int no_sync;          /* nonzero: do not fsync on commit (much faster;
                             a host crash may lose or damage the file) */
} suspect_lmdb_opts_t;

/*
 * Opens (creating if needed) the database at opts->path and returns an
 * owned store in *out.  Fails with SUSPECT_E_INVAL (no path), SUSPECT_E_IO
 * (the file cannot be opened or created; sys_errno says why),
 * SUSPECT_E_STORE (the file is not an LMDB database, or not Suspect's) or
 * SUSPECT_E_NOMEM; err then names the path.
 */
suspect_rc_t suspect_lmdb_new(const suspect_lmdb_opts_t *opts,
                              suspect_store_t **out, suspect_err_t *err);

/*
 * Called by suspect_lmdb_foreach_locked() for each identity locked at now:
 * key is the stored key (the window key, or for a key too long for LMDB
 * its head, "%#" and a SHA-256 digest), NUL-terminated, borrowed for the
 * call.  Return 0 to go on, nonzero to stop.  It must not call the store.
 */
typedef int (*suspect_lmdb_locked_fn)(void *ud, const char *key, size_t key_len,
                                      int64_t lock_until_ms);

/*
 * Lists the identities whose lock is live at now_ms (lock_until > now), in
 * key order, from one consistent snapshot.  Returns SUSPECT_OK (also when
 * the callback stopped early), SUSPECT_E_INVAL when store is not an LMDB
 * store, or SUSPECT_E_STORE.
 */
suspect_rc_t suspect_lmdb_foreach_locked(suspect_store_t *store, int64_t now_ms,
                                         suspect_lmdb_locked_fn fn, void *ud,
                                         suspect_err_t *err);

/*
 * Deletes every entry expired at now_ms (no hit in its window and no live
 * lock) in one transaction; *purged (may be NULL) gets how many.
 */
suspect_rc_t suspect_lmdb_purge(suspect_store_t *store, int64_t now_ms,
                                size_t *purged, suspect_err_t *err);

/* Entries (identities) in the store now, expired or not, into *out. */
suspect_rc_t suspect_lmdb_entries(suspect_store_t *store, size_t *out,
                                  suspect_err_t *err);

#ifdef __cplusplus
}
#endif

#endif
