/*
 * bench_lmdb.c - decisions per second of the LMDB store (`make bench`).
 *
 * Each run uses a fresh database in a temp dir, a basic rule and 10,000
 * identities picked in turn, the clock advancing 1 ms per decision, so the
 * store sees allows, trims and the incremental purge, and denials once an
 * identity comes back a sixth time within 60 s (past 50,000 decisions in
 * one process; the default 20,000 are all allowed, the cost a legitimate
 * request pays).  Each line says which share was allowed.
 * Measured:
 * one process, then two processes (fork) deciding on the same file at once,
 * each with fsync on commit (the default) and with no_sync.  Figures are
 * wall-clock and depend on the disk; docs/BENCHMARKS.md has some.
 *
 *   bench-lmdb [decisions per process]   (default 20000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "suspect_lmdb.h"

#define IDENTITIES 10000
#define T0         1710000012345LL

static const suspect_rule_t rule = {"Bench", 5, 60, 0, 0, 0, 0, 0, 0, 0, 0};

/* Runs n decisions on the store at path, counting the allowed ones in
 * *allowed; 0 on success. */
static int run(const char *path, int no_sync, long n, unsigned seed,
               long *allowed)
{
    suspect_lmdb_opts_t opts = {path, 0, 0, 0, no_sync};
    suspect_store_t *store = NULL;
    suspect_err_t err;
    int rc = 0;

    suspect_err_clear(&err);
    if (suspect_lmdb_new(&opts, &store, &err) != SUSPECT_OK) {
        fprintf(stderr, "bench-lmdb: %s\n", err.text);
        return 1;
    }
    for (long i = 0; i < n && rc == 0; i++) {
        char value[32];
        suspect_identity_t id = {"Id", 1, {{value, 0}}};
        suspect_key_t key;
        suspect_decision_t d;

        id.part[0].len = (size_t)snprintf(value, sizeof(value), "user%lu",
                                          (i * 7919ul + seed) % IDENTITIES);
        rc = suspect_key_build(NULL, rule.action, &id, &key, &err) ||
             suspect_store_decide(store, &rule, &key, 1, T0 + i, &d, &err);
        *allowed += rc == 0 && d.allowed;
    }
    if (rc != 0) {
        fprintf(stderr, "bench-lmdb: %s\n", err.text);
    }
    suspect_store_free(store);
    return rc;
}

/* Runs procs processes of n decisions each; prints decisions/s. */
static int measure(const char *dir, int procs, int no_sync, long n)
{
    char path[4096], lock[4200];
    pid_t pids[2];
    double t;
    int failed = 0;
    /* each process's allowed count, shared across fork() */
    long *allowed = mmap(NULL, 2 * sizeof(long), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (allowed == MAP_FAILED) {
        return 1;
    }
    allowed[0] = allowed[1] = 0;
    snprintf(path, sizeof(path), "%s/bench-%d-%d.mdb", dir, procs, no_sync);
    snprintf(lock, sizeof(lock), "%s-lock", path);
    t = now_s();
    for (int p = 0; p < procs; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            _exit(run(path, no_sync, n, (unsigned)p * 13u, &allowed[p]));
        }
        failed |= pids[p] < 0;
    }
    for (int p = 0; p < procs; p++) {
        int status = 0;
        if (pids[p] > 0) {
            waitpid(pids[p], &status, 0);
            failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        }
    }
    t = now_s() - t;
    printf("lmdb  %d process%s  %-9s %8.0f decisions/s  (%ld each, %.1f%% "
           "allowed)\n",
           procs, procs > 1 ? "es" : "  ", no_sync ? "no_sync" : "fsync",
           (double)n * procs / t, n,
           100.0 * (double)(allowed[0] + allowed[1]) / ((double)n * procs));
    munmap(allowed, 2 * sizeof(long));
    unlink(path);
    unlink(lock);
    return failed;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    int failed = 0;

    snprintf(dir, sizeof(dir), "%s/suspect-bench-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL || n <= 0) {
        fprintf(stderr, "bench-lmdb: cannot make %s\n", dir);
        return 1;
    }
    for (int no_sync = 1; no_sync >= 0; no_sync--) {
        long count = no_sync ? n : n / 10;
        failed |= measure(dir, 1, no_sync, count);
        failed |= measure(dir, 2, no_sync, count);
    }
    rmdir(dir);
    return failed;
}
