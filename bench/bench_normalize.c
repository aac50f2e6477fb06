/*
 * bench_normalize.c - what the collate and aliases steps cost per value
 * (`make bench-normalize`), against casefold in the same run.
 *
 * What: mw_norm_apply() on one thread over 4096 user names, each row a
 * normalize text; the cost per value in nanoseconds and as a ratio to
 * the casefold row of the same names (ASCII: "UserNNNN"; non-ASCII:
 * "ÄlïceNNNN", where casefold leaves its ASCII fast path too).  Rows:
 *   casefold                        the reference;
 *   collate:mysql-unicode-520-ci    ICU's primary sort key, in hex;
 *   casefold aliases:FILE           a lookup in a table of 100,000 names
 *                                   (half the values are in it, so half
 *                                   the lookups copy a canonical name);
 *   wordpress-user                  sanitize_user(), twice;
 *   wordpress-user collate aliases  the identity of examples/wordpress.
 * Also printed: the time to read the table (each of its names through
 * the steps before aliases), what the request that finds the file
 * changed waits.
 * How: each row runs RUN_MS of wall time, best of ROUNDS, the rounds of
 * all rows interleaved (a machine that changes speed moves them alike).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "request/normalize.h"

/* The collate step, linked as the loaders of suspect.xml link it. */
__attribute__((used)) static suspect_rc_t (*const collate_step)(
    const char *, size_t, void **) = mw_norm_collate_open;

#define NAMES   4096
#define TABLE   100000
#define RUN_MS  200
#define ROUNDS  7
#define NROWS   5
#define NSPELLS 2

static const char *const specs[NROWS] = {
    "casefold",
    "collate:mysql-unicode-520-ci",
    "casefold aliases:@",
    "wordpress-user",
    "wordpress-user collate:mysql-unicode-520-ci aliases:@",
};

static const char *const prefixes[NSPELLS] = {"User", "\xc3\x84l\xc3\xaf"
                                                      "ce"};

static char names[NSPELLS][NAMES][32];

/* Writes the alias table (TABLE names "userN@example.org" -> "userN")
 * to path; 0 or -1. */
static int write_table(const char *path)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        return -1;
    }
    for (int i = 0; i < TABLE; i++) {
        fprintf(f, "user%d@example.org\tuser%d\n", i, i);
    }
    return fclose(f);
}

/* Seconds per value of one RUN_MS run of n over the names of spelling s. */
static double run(const mw_norm_t *n, int s)
{
    double start = now_s(), end = start + RUN_MS / 1000.0, t;
    long values = 0;

    do {
        for (int i = 0; i < NAMES; i++) {
            char buf[256];
            const char *out;
            size_t len;
            char *heap = NULL;

            if (mw_norm_apply(n, names[s][i], strlen(names[s][i]), buf,
                              sizeof(buf), &out, &len, &heap) != SUSPECT_OK) {
                fprintf(stderr, "bench-normalize: a value was refused\n");
                exit(1);
            }
            free(heap);
        }
        values += NAMES;
    } while ((t = now_s()) < end);
    return (t - start) / (double)values;
}

int main(void)
{
    char dir[] = "/tmp/bench-normalize-XXXXXX", path[64], spec[256];
    mw_norm_t *norm[NROWS];
    double best[NROWS][NSPELLS];

    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/aliases.tsv", dir);
    if (write_table(path) != 0) {
        perror(path);
        return 1;
    }
    for (int s = 0; s < NSPELLS; s++) {
        for (int i = 0; i < NAMES; i++) {
            /* half the values are in the table */
            snprintf(names[s][i], sizeof(names[s][i]), "%s%d%s", prefixes[s], i,
                     i % 2 == 0 ? "@example.org" : "");
        }
    }
    for (int r = 0; r < NROWS; r++) {
        const char *at = strchr(specs[r], '@');
        suspect_err_t err;

        snprintf(spec, sizeof(spec), "%.*s%s", (int)(at ? at - specs[r] : 255),
                 specs[r], at ? path : "");
        double t0 = now_s();

        suspect_err_clear(&err);
        if (mw_norm_compile(spec, strlen(spec), &norm[r], &err) != SUSPECT_OK) {
            fprintf(stderr, "bench-normalize: %s: %s\n", spec, err.text);
            return 1;
        }
        if (at != NULL) {
            printf("%s: the table of %d lines read in %.0f ms\n", specs[r],
                   TABLE, (now_s() - t0) * 1e3);
        }
        for (int s = 0; s < NSPELLS; s++) {
            best[r][s] = 1e9;
        }
    }
    for (int k = 0; k < ROUNDS; k++) {
        for (int r = 0; r < NROWS; r++) {
            for (int s = 0; s < NSPELLS; s++) {
                double t = run(norm[r], s);
                best[r][s] = t < best[r][s] ? t : best[r][s];
            }
        }
    }
    printf("%-50s %12s %8s %12s %8s\n", "normalize (per value)", "ASCII ns",
           "ratio", "non-ASCII ns", "ratio");
    for (int r = 0; r < NROWS; r++) {
        printf("%-50s %12.0f %7.1fx %12.0f %7.1fx\n", specs[r],
               best[r][0] * 1e9, best[r][0] / best[0][0], best[r][1] * 1e9,
               best[r][1] / best[0][1]);
        mw_norm_free(norm[r]);
    }
    unlink(path);
    rmdir(dir);
    return 0;
}
