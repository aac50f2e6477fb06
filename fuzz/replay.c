/*
 * replay.c - runs a fuzz target over files, without libFuzzer.
 *
 * `make check` links each fuzz/fuzz_NAME.c with this main() (gcc, the
 * project's warnings, the sanitizers when configured) and feeds it every
 * file of fuzz/corpus/NAME (tests/check-fuzz-corpus).  So the harnesses
 * keep compiling against the code they exercise, and every input a long
 * fuzzing run kept (docs/FUZZING.md) is a regression test of the suite.
 *
 *   replay-NAME FILE|DIR...    exit 0 when every input ran; a target's
 *                              own check aborts on a violated invariant
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target once over the file at path; -1 when it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long size;
    int rc = -1;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0) {
        /* One byte more, so that an empty file is still a valid pointer. */
        buf = malloc((size_t)size + 1);
        if (buf != NULL && fread(buf, 1, (size_t)size, f) == (size_t)size) {
            LLVMFuzzerTestOneInput(buf, (size_t)size);
            rc = 0;
        }
        free(buf);
    }
    if (rc != 0) {
        fprintf(stderr, "%s: cannot read\n", path);
    }
    fclose(f);
    return rc;
}

/* Every regular file of dir, in readdir order; returns how many ran, or
 * -1 when one could not be read. */
static long replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    struct stat st;
    long n = 0;

    if (d == NULL) {
        perror(dir);
        return -1;
    }
    while (n >= 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            n = replay_file(path) == 0 ? n + 1 : -1;
        }
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    struct stat st;
    long total = 0;

    for (int i = 1; i < argc; i++) {
        long n;

        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            n = replay_dir(argv[i]);
        } else {
            n = replay_file(argv[i]) == 0 ? 1 : -1;
        }
        if (n < 0) {
            return 1;
        }
        total += n;
    }
    printf("%s: %ld inputs\n", argv[0], total);
    return 0;
}
