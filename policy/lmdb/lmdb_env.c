/*
 * lmdb_env.c - the LMDB store's environment: the file, the process that
 * owns it, the lock that keeps threads off a moving map, transactions and
 * the errors they turn into.
 *
 * File.  One database file at opts->path (MDB_NOSUBDIR) and its lock file
 * at path "-lock", created with opts->mode (0600: other users can neither
 * read identities nor forge hits).  Two named databases:
 *   "records"  window key -> record (one entry per identity);
 *   "meta"     "format" -> "suspect-lmdb-1" (refuses other files), and
 *              "purge-cursor" -> the last key the incremental purge saw.
 * The environment uses MDB_NOTLS, so read transactions (status, listing)
 * may run on any thread, and mdb_reader_check() clears reader slots of dead
 * processes on open and whenever the reader table is full.  Every
 * descriptor of the environment is close-on-exec: LMDB opens the lock file
 * and the descriptor it writes meta pages through so, and the data file's
 * is made so here, so a program this process executes gets none of them
 * (suspect-cgi executes its program without closing the store first).
 *
 * Processes and threads.  An environment must not be used across fork():
 * each store remembers the pid that opened its environment, and a call from
 * another pid opens the file again (the inherited handle is abandoned, not
 * closed, because closing it would release the parent's reader slots).
 * Threads share a store: a rwlock is held shared by every operation and
 * exclusively only to reopen or to adopt a map another process enlarged
 * (MDB_MAP_RESIZED), the two moments the mapping may move.  The scratch
 * buffer where records are built is only touched inside a write
 * transaction, which LMDB already serialises.
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Environments inherited across fork() and abandoned: never closed, kept
 * here so that they stay reachable (a child that reopens is no leak);
 * volatile, or the compiler drops stores it never sees read. */
#define ABANDONED_MAX 16
static pthread_mutex_t abandoned_mu = PTHREAD_MUTEX_INITIALIZER;
static MDB_env *volatile abandoned[ABANDONED_MAX];
static size_t abandoned_n;

/* The map size in effect (another process may have made it larger). */
static size_t map_size(const lmstore_t *ls)
{
    MDB_envinfo info;
    if (ls->env == NULL || mdb_env_info(ls->env, &info) != 0) {
        return ls->opts.map_size;
    }
    return info.me_mapsize;
}

int lm_map_room(const lmstore_t *ls, MDB_txn *txn, unsigned num, unsigned den,
                bool *room)
{
    MDB_stat st;
    size_t used, pages;
    int rc = mdb_stat(txn, ls->recs, &st);

    if (rc != 0) {
        return rc;
    }
    used = st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
    pages = map_size(ls) / st.ms_psize;
    *room = used * den < pages * num;
    return 0;
}

/* Turns an LMDB, errno or LM_ code into a suspect_rc_t and a message. */
suspect_rc_t lm_fail(const lmstore_t *ls, suspect_err_t *err, int rc,
                     const char *what)
{
    if (rc == MDB_MAP_FULL) {
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "lmdb %s: store full (map size %zu bytes)",
                               ls->path, map_size(ls));
    }
    if (rc == LM_COUNTERS_FULL) {
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "lmdb %s: store full (map size %zu bytes): no "
                               "room for a new identity; locks and the "
                               "identities it holds are still decided",
                               ls->path, map_size(ls));
    }
    if (rc == LM_NOMEM) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "lmdb %s: out of memory", ls->path);
    }
    if (rc == LM_CORRUPT) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: %s: damaged record", ls->path, what);
    }
    if (rc > 0) {
        errno = rc;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "lmdb %s: %s", ls->path,
                               what); /* appends strerror(rc) */
    }
    return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "lmdb %s: %s: %s",
                           ls->path, what, mdb_strerror(rc));
}

/* Checks the format mark; LM_CORRUPT when the file is someone else's. */
static int check_format(MDB_txn *txn, MDB_dbi meta)
{
    MDB_val k = {sizeof(FORMAT_KEY) - 1, (void *)FORMAT_KEY}, v;
    int rc = mdb_get(txn, meta, &k, &v);

    if (rc != 0) {
        return rc;
    }
    if (v.mv_size != sizeof(FORMAT_VALUE) - 1 ||
        memcmp(v.mv_data, FORMAT_VALUE, v.mv_size) != 0) {
        return LM_CORRUPT;
    }
    return 0;
}

/* Opens the two databases in txn (creating them with MDB_CREATE). */
static int open_dbis(MDB_txn *txn, unsigned flags, MDB_dbi *recs, MDB_dbi *meta)
{
    int rc = mdb_dbi_open(txn, "records", flags, recs);
    if (rc == 0) {
        rc = mdb_dbi_open(txn, "meta", flags, meta);
    }
    return rc;
}

/* Creates the databases and the format mark in a write transaction. */
static int create_dbis(MDB_env *env, MDB_dbi *recs, MDB_dbi *meta)
{
    MDB_txn *txn;
    MDB_val k = {sizeof(FORMAT_KEY) - 1, (void *)FORMAT_KEY};
    MDB_val v = {sizeof(FORMAT_VALUE) - 1, (void *)FORMAT_VALUE};
    int rc = mdb_txn_begin(env, NULL, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = open_dbis(txn, MDB_CREATE, recs, meta);
    if (rc == 0) {
        rc = check_format(txn, *meta);
        if (rc == MDB_NOTFOUND) {
            rc = mdb_put(txn, *meta, &k, &v, 0);
        }
    }
    if (rc == 0) {
        return mdb_txn_commit(txn);
    }
    mdb_txn_abort(txn);
    return rc;
}

/* Opens the databases: read-only when they exist (the usual case, so a
 * CGI process does not queue for the writer lock at start), else creates
 * them. */
static int attach_dbis(MDB_env *env, MDB_dbi *recs, MDB_dbi *meta)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = open_dbis(txn, 0, recs, meta);
    if (rc == 0) {
        rc = check_format(txn, *meta);
    }
    if (rc == 0) {
        return mdb_txn_commit(txn);
    }
    mdb_txn_abort(txn);
    return rc == MDB_NOTFOUND ? create_dbis(env, recs, meta) : rc;
}

/* Explains why the file at ls->path could not be used. */
static suspect_rc_t open_fail(const lmstore_t *ls, suspect_err_t *err, int rc)
{
    if (rc == MDB_INVALID) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: not an LMDB database", ls->path);
    }
    if (rc == MDB_VERSION_MISMATCH) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: made by an incompatible LMDB version",
                               ls->path);
    }
    if (rc == LM_CORRUPT || rc == MDB_INCOMPATIBLE) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: an LMDB database, but not a Suspect "
                               "store",
                               ls->path);
    }
    return lm_fail(ls, err, rc, "cannot open");
}

/* Gives up env, which belongs to the parent process. */
void lm_abandon_env(MDB_env *env)
{
    pthread_mutex_lock(&abandoned_mu);
    if (env != NULL && abandoned_n < ABANDONED_MAX) {
        abandoned[abandoned_n++] = env;
    }
    pthread_mutex_unlock(&abandoned_mu);
}

/* Makes the data file's descriptor close-on-exec (LMDB opens it without
 * O_CLOEXEC); 0 or an errno. */
static int data_fd_cloexec(MDB_env *env)
{
    mdb_filehandle_t fd;
    int rc = mdb_env_get_fd(env, &fd);

    if (rc == 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        rc = errno;
    }
    return rc;
}

/* Opens a new environment on ls->path into ls->env and the dbis; does not
 * touch the environment ls held before. */
suspect_rc_t lm_env_open(lmstore_t *ls, suspect_err_t *err)
{
    unsigned flags = MDB_NOSUBDIR | MDB_NOTLS;
    MDB_env *env;
    MDB_dbi recs, meta;
    int dead, rc = mdb_env_create(&env);

    if (rc != 0) {
        return lm_fail(ls, err, rc, "cannot create environment");
    }
    flags |= ls->opts.no_sync ? MDB_NOSYNC : 0;
    rc = mdb_env_set_mapsize(env, ls->opts.map_size);
    if (rc == 0) {
        rc = mdb_env_set_maxdbs(env, 2);
    }
    if (rc == 0) {
        rc = mdb_env_set_maxreaders(env, ls->opts.max_readers);
    }
    if (rc == 0) {
        rc = mdb_env_open(env, ls->path, flags, (mdb_mode_t)ls->opts.mode);
    }
    if (rc == 0) {
        rc = data_fd_cloexec(env);
    }
    if (rc == 0) {
        mdb_reader_check(env, &dead);
        rc = attach_dbis(env, &recs, &meta);
    }
    if (rc != 0) {
        mdb_env_close(env);
        return open_fail(ls, err, rc);
    }
    ls->env = env;
    ls->recs = recs;
    ls->meta = meta;
    ls->pid = getpid();
    ls->key_max = (size_t)mdb_env_get_maxkeysize(env);
    ls->key_max = ls->key_max < KEY_LIMIT ? ls->key_max : KEY_LIMIT;
    return SUSPECT_OK;
}

/*
 * Starts an operation: holds the rwlock shared and makes sure the
 * environment belongs to this process, reopening it after a fork.
 */
suspect_rc_t lm_enter(lmstore_t *ls, suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    pthread_rwlock_rdlock(&ls->rw);
    if (ls->pid == getpid()) {
        return SUSPECT_OK;
    }
    pthread_rwlock_unlock(&ls->rw);
    pthread_rwlock_wrlock(&ls->rw);
    if (ls->pid != getpid()) {
        MDB_env *inherited = ls->env;
        rc = lm_env_open(ls, err);
        if (rc == SUSPECT_OK) {
            lm_abandon_env(inherited);
        }
    }
    pthread_rwlock_unlock(&ls->rw);
    return rc != SUSPECT_OK ? rc : lm_enter(ls, err);
}

void lm_leave(lmstore_t *ls)
{
    pthread_rwlock_unlock(&ls->rw);
}

/*
 * Begins a transaction, the caller holding the rwlock shared.  Clears dead
 * readers when the reader table is full, and adopts a map another process
 * enlarged (which needs the rwlock exclusive: it moves the mapping).
 */
int lm_txn_begin(lmstore_t *ls, unsigned flags, MDB_txn **txn)
{
    int dead, rc = mdb_txn_begin(ls->env, NULL, flags, txn);

    if (rc == MDB_READERS_FULL) {
        mdb_reader_check(ls->env, &dead);
        rc = mdb_txn_begin(ls->env, NULL, flags, txn);
    } else if (rc == MDB_MAP_RESIZED) {
        pthread_rwlock_unlock(&ls->rw);
        pthread_rwlock_wrlock(&ls->rw);
        rc = mdb_env_set_mapsize(ls->env, 0);
        pthread_rwlock_unlock(&ls->rw);
        pthread_rwlock_rdlock(&ls->rw);
        if (rc == 0) {
            rc = mdb_txn_begin(ls->env, NULL, flags, txn);
        }
    }
    return rc;
}

/* Commits txn when rc is 0, else aborts it; returns the outcome. */
int lm_txn_end(MDB_txn *txn, int rc)
{
    if (rc == 0) {
        return mdb_txn_commit(txn);
    }
    mdb_txn_abort(txn);
    return rc;
}
