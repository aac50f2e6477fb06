/*
 * vgwrap.c - the valgrind prefix and the deadline scale (vgwrap.h).
 *
 * Both variables are read once, on first use, under a pthread_once (curl
 * jobs and their deadlines run on several threads); the command is split
 * on blanks into a static array that lives as long as the runner.
 */
#include "vgwrap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char command[4096];
static const char *words[TEST_VG_MAX_WORDS];
static size_t nwords;
static unsigned scale = 1;

/* Reads SUSPECT_VALGRIND and SUSPECT_TEST_SCALE. */
static void read_env(void)
{
    const char *vg = getenv("SUSPECT_VALGRIND");
    const char *sc = getenv("SUSPECT_TEST_SCALE");
    char *save = NULL;

    if (sc != NULL && atoi(sc) > 1) {
        scale = (unsigned)atoi(sc);
    }
    if (vg == NULL || strlen(vg) >= sizeof(command)) {
        return;
    }
    strcpy(command, vg);
    for (char *w = strtok_r(command, " \t", &save); w != NULL;
         w = strtok_r(NULL, " \t", &save)) {
        if (nwords == TEST_VG_MAX_WORDS) {
            fprintf(stderr,
                    "SUSPECT_VALGRIND: more than %d words; "
                    "programs run without it\n",
                    TEST_VG_MAX_WORDS);
            nwords = 0;
            return;
        }
        words[nwords++] = w;
    }
}

const char *const *test_vg_argv(const char *const argv[], const char *out[],
                                size_t cap)
{
    size_t n = 0;

    pthread_once(&once, read_env);
    while (argv[n] != NULL) {
        n++;
    }
    if (nwords == 0) {
        return argv;
    }
    if (nwords + n + 1 > cap) {
        fprintf(stderr, "test_vg_argv: %zu words do not fit; not wrapped\n",
                nwords + n);
        return argv;
    }
    memcpy(out, words, nwords * sizeof(*out));
    memcpy(out + nwords, argv, (n + 1) * sizeof(*out));
    return out;
}

bool test_vg_on(void)
{
    pthread_once(&once, read_env);
    return nwords > 0;
}

unsigned test_scale_ms(unsigned ms)
{
    pthread_once(&once, read_env);
    return ms * scale;
}
