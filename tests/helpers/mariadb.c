/*
 * mariadb.c - a throwaway MariaDB server and its client: see mariadb.h.
 */
#include "mariadb.h"

#include <stdio.h>
#include <sys/wait.h>

#include "redisserver.h"
#include "vgwrap.h"

/* Runs argv to its end within ms, output to log: 0 when it exits 0. */
static int run_to_end(const char *const argv[], const char *log, unsigned ms)
{
    test_proc_t p;

    if (test_proc_start(&p, argv, NULL, log) != 0) {
        return -1;
    }
    if (test_proc_wait(&p, test_scale_ms(ms)) != 0) {
        test_proc_stop(&p, 0, 1000);
        fprintf(stderr, "%s: still running after %u ms\n", argv[0], ms);
        return -1;
    }
    if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0) {
        fprintf(stderr, "%s failed: see %s\n", argv[0], log);
        return -1;
    }
    return 0;
}

/* Starts the server: see mariadb.h. */
int test_mariadb_start(test_proc_t *p, const char *dir, int *port)
{
    char data[TEST_PATH_MAX], datadir[TEST_PATH_MAX + 16],
        sock[TEST_PATH_MAX + 16], pid[TEST_PATH_MAX + 16], log[TEST_PATH_MAX],
        portarg[32];

    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(datadir, sizeof(datadir), "--datadir=%s", data);
    snprintf(sock, sizeof(sock), "--socket=%s/mysql.sock", dir);
    snprintf(pid, sizeof(pid), "--pid-file=%s/mariadb.pid", dir);
    snprintf(log, sizeof(log), "%s/mariadb.log", dir);
    {
        const char *const install[] = {"mariadb-install-db",
                                       "--no-defaults",
                                       datadir,
                                       "--user=root",
                                       "--auth-root-authentication-method="
                                       "normal",
                                       "--skip-test-db",
                                       NULL};
        if (run_to_end(install, log, 120000) != 0) {
            return -1;
        }
    }
    *port = test_free_port();
    snprintf(portarg, sizeof(portarg), "--port=%d", *port);
    {
        const char *const argv[] = {"mariadbd",
                                    "--no-defaults",
                                    datadir,
                                    "--user=root",
                                    "--bind-address=127.0.0.1",
                                    portarg,
                                    sock,
                                    pid,
                                    "--skip-grant-tables",
                                    "--skip-log-bin",
                                    "--innodb-buffer-pool-size=32M",
                                    NULL};
        if (*port < 0 || test_proc_start(p, argv, NULL, log) != 0) {
            return -1;
        }
    }
    if (test_wait_listen(*port, NULL, p, test_scale_ms(60000)) != 0) {
        fprintf(stderr, "mariadbd does not listen: see %s\n", log);
        return -1;
    }
    return 0;
}

/* Runs a SQL file: see mariadb.h. */
int test_mariadb_run(const char *dir, int port, const char *sql,
                     const char *out)
{
    char portarg[32], source[TEST_PATH_MAX + 16];
    const char *const argv[] = {"mariadb",
                                "--no-defaults",
                                "--default-character-set=utf8mb4",
                                "--host=127.0.0.1",
                                portarg,
                                "--user=root",
                                "--batch",
                                "--skip-column-names",
                                source,
                                NULL};

    (void)dir;
    snprintf(portarg, sizeof(portarg), "--port=%d", port);
    snprintf(source, sizeof(source), "--execute=source %s", sql);
    return run_to_end(argv, out, 600000);
}
