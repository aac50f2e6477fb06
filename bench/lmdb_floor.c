/*
 * lmdb_floor.c - the cheapest CGI wrapper that counts in LMDB, for
 * bench-cgi: what any wrapper that opens an LMDB store per request costs
 * at the least, measured beside suspect-cgi in the same run.
 *
 *   lmdb-floor [-s] [-f FILE] PROGRAM [ARG...]
 *
 * Opens the environment at FILE (default $LMDB_FLOOR_FILE) as the lmdb
 * store does (MDB_NOSUBDIR, MDB_NOTLS, two databases, MDB_NOSYNC unless
 * -s or LMDB_FLOOR_SYNC=1), writes one 24-byte record for the member
 * code in HTTP_X_MEMBER in one write transaction, and executes PROGRAM.
 * Nothing else: no configuration, no route, no policy, no lock check.
 * As the #! interpreter of a wrapper ("#!/path/lmdb-floor /path/program")
 * it takes FILE and -s from the environment, the web server's setenv.
 */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count(const char *file, int sync)
{
    const char *member = getenv("HTTP_X_MEMBER");
    char key[64], rec[24] = {0};
    MDB_val k, v = {sizeof(rec), rec};
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc;

    snprintf(key, sizeof(key), "Hello\037%s", member ? member : "");
    k.mv_size = strlen(key);
    k.mv_data = key;
    rc = mdb_env_create(&env);
    if (rc == 0) {
        mdb_env_set_maxdbs(env, 2);
        mdb_env_set_mapsize(env, (size_t)64 << 20);
        rc = mdb_env_open(env, file,
                          MDB_NOSUBDIR | MDB_NOTLS | (sync ? 0 : MDB_NOSYNC),
                          0600);
    }
    if (rc == 0) {
        rc = mdb_txn_begin(env, NULL, 0, &txn);
    }
    if (rc == 0) {
        rc = mdb_dbi_open(txn, "records", MDB_CREATE, &dbi);
        rc = rc != 0 ? rc : mdb_put(txn, dbi, &k, &v, 0);
        rc = rc != 0 ? rc : mdb_txn_commit(txn);
    }
    if (rc != 0) {
        fprintf(stderr, "lmdb-floor: %s: %s\n", file, mdb_strerror(rc));
    }
    return rc; /* the environment stays open: execv() drops it */
}

int main(int argc, char **argv)
{
    const char *file = getenv("LMDB_FLOOR_FILE"),
               *sync = getenv("LMDB_FLOOR_SYNC");
    int opt, synced = sync != NULL && strcmp(sync, "1") == 0;

    while ((opt = getopt(argc, argv, "+sf:")) != -1) {
        if (opt == 's') {
            synced = 1;
        } else if (opt == 'f') {
            file = optarg;
        } else {
            return 2;
        }
    }
    if (optind >= argc || file == NULL) {
        fputs("usage: lmdb-floor [-s] [-f FILE] PROGRAM [ARG...]\n", stderr);
        return 2;
    }
    if (count(file, synced) != 0) {
        return 1;
    }
    execv(argv[optind], argv + optind);
    perror(argv[optind]);
    return 1;
}
