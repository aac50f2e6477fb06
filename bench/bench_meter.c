/*
 * bench_meter.c - what a token bucket costs next to the sliding log, on
 * the memory store (`make bench`).
 *
 * Memory: 1,000,000 identities of an action of 5,000 per hour, each given
 * HITS allowed requests, counted once by a token bucket and once by the
 * sliding log, each store in a child process of its own (so neither
 * reuses what the other freed): the bytes suspect_memstore_bytes() counts
 * and the growth of the child's resident set, per identity.  A bucket's
 * identity costs the same whatever its hits; a sliding log's grows by 8
 * bytes a hit in the window (its ring doubles), up to LimitCount of them.
 *
 * Speed: decisions per second of a bucket and of a sliding log at
 * LimitCount 10 per 10 s, 1 thread, 16 identities picked by a xorshift, a
 * fake clock moving 1 ms every 100 decisions (most decisions are then
 * denials, as in bench-policy's rows of few identities), ROUNDS rounds of
 * RUN_MS each, interleaved, the best of each; printed as a ratio.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "suspect_store.h"

#define MANY        1000000
#define HITS        10
#define FEW         16
#define ROUNDS      3
#define RUN_MS      400
#define CLOCK_EVERY 100
#define T0          1700000000000LL

static uint32_t xorshift(uint32_t *s)
{
    uint32_t x = *s;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* The key of identity i of action. */
static void key_of(const char *action, size_t i, suspect_key_t *key)
{
    char value[16];
    suspect_identity_t id;

    snprintf(value, sizeof(value), "u%07zu", i);
    memset(&id, 0, sizeof(id));
    id.type = "Phone";
    id.nparts = 1;
    id.part[0].ptr = value;
    id.part[0].len = strlen(value);
    if (suspect_key_build(NULL, action, &id, key, NULL) != SUSPECT_OK) {
        fprintf(stderr, "bench-meter: cannot build a key\n");
        exit(1);
    }
}

/* In a child: MANY identities of rule, HITS decisions each; writes the
 * bytes counted and the RSS growth per identity to fd. */
static void memory_child(const suspect_rule_t *rule, int fd)
{
    size_t rss0 = rss_bytes();
    suspect_store_t *store = bench_memstore(2 * MANY, "bench-meter");
    double out[2];
    suspect_key_t key;
    suspect_decision_t d;

    for (size_t i = 0; i < MANY; i++) {
        key_of(rule->action, i, &key);
        for (int h = 0; h < HITS; h++) {
            if (suspect_store_decide(store, rule, &key, 1, T0 + h, &d, NULL) !=
                    SUSPECT_OK ||
                !d.allowed) {
                _exit(2);
            }
        }
    }
    out[0] = (double)suspect_memstore_bytes(store) /
             (double)suspect_memstore_size(store);
    out[1] =
        (double)(rss_bytes() - rss0) / (double)suspect_memstore_size(store);
    _exit(write(fd, out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1);
}

/* Runs memory_child() for rule in a child; false when it failed. */
static bool memory_row(const suspect_rule_t *rule, double out[2])
{
    int fds[2], status = 0;
    pid_t pid;
    bool ok;

    if (pipe(fds) != 0 || (pid = fork()) < 0) {
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        memory_child(rule, fds[1]);
    }
    close(fds[1]);
    ok = read(fds[0], out, 2 * sizeof(double)) == 2 * sizeof(double);
    close(fds[0]);
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0 && ok;
}

/* Decisions per second of rule on FEW identities for RUN_MS. */
static double speed_round(const suspect_rule_t *rule)
{
    suspect_store_t *store = bench_memstore(0, "bench-meter");
    suspect_key_t keys[FEW];
    suspect_decision_t d;
    uint32_t seed = 2463534242u;
    int64_t now = T0;
    uint64_t n = 0;
    double t0 = now_s(), t1;

    for (size_t i = 0; i < FEW; i++) {
        key_of(rule->action, i, &keys[i]);
    }
    do {
        for (int k = 0; k < CLOCK_EVERY; k++) {
            const suspect_key_t *key = &keys[xorshift(&seed) % FEW];

            if (suspect_store_decide(store, rule, key, 1, now, &d, NULL) !=
                SUSPECT_OK) {
                fprintf(stderr, "bench-meter: a decision failed\n");
                exit(1);
            }
        }
        n += CLOCK_EVERY;
        now++;
        t1 = now_s();
    } while (t1 - t0 < RUN_MS / 1000.0);
    suspect_store_free(store);
    return (double)n / (t1 - t0);
}

int main(void)
{
    suspect_rule_t log = {"OtpSend", 5000, 3600, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t bucket = log;
    double mb[2], ml[2], sb = 0, sl = 0;

    bucket.algorithm = SUSPECT_ALGO_BUCKET;
    printf("memory store, %d identities, LimitCount 5000 per 3600 s, %d "
           "allowed requests each:\n",
           MANY, HITS);
    if (!memory_row(&bucket, mb) || !memory_row(&log, ml)) {
        fprintf(stderr, "bench-meter: a memory row failed\n");
        return 1;
    }
    printf("  token bucket: %.1f bytes counted, %.1f bytes of RSS per "
           "identity\n",
           mb[0], mb[1]);
    printf("  sliding log:  %.1f bytes counted, %.1f bytes of RSS per "
           "identity (8 more a hit in the window, up to %u)\n",
           ml[0], ml[1], log.limit_count);

    log.limit_count = bucket.limit_count = 10;
    log.window_s = bucket.window_s = 10;
    for (int r = 0; r < ROUNDS; r++) {
        double b = speed_round(&bucket);
        double l = speed_round(&log);

        sb = b > sb ? b : sb;
        sl = l > sl ? l : sl;
    }
    printf("decisions/s, 1 thread, %d identities, LimitCount 10 per 10 s, "
           "best of %d: token bucket %.0f, sliding log %.0f, ratio %.2f\n",
           FEW, ROUNDS, sb, sl, sb / sl);
    return 0;
}
