/*
 * mariadb.h - a real MariaDB server for the tests that compare a reading
 * with the database's own (collations, a user table).
 *
 * test_mariadb_start() makes a data directory in dir with
 * mariadb-install-db, then runs mariadbd on 127.0.0.1 (a free port), its
 * socket and log in dir, without grant tables (root, no password): a
 * throwaway server for one test, stopped by test_proc_stop() or the
 * suite's test_procs_stop_all().  test_mariadb_run() runs the mariadb
 * client on a SQL file, its rows (tab-separated, no names) into a file.
 */
#ifndef SUSPECT_TESTS_MARIADB_H
#define SUSPECT_TESTS_MARIADB_H

#include "procs.h"

/* Starts the server in dir; *port receives its port.  0, or -1 with a
 * message on stderr (see dir/mariadb.log). */
int test_mariadb_start(test_proc_t *p, const char *dir, int *port);

/* Runs the statements of the file sql against the server on port (in
 * utf8mb4), the rows into the file out.  0, or -1 when the client fails
 * (its message is in out). */
int test_mariadb_run(const char *dir, int port, const char *sql,
                     const char *out);

#endif
