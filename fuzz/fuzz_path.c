/*
 * fuzz_path.c - libFuzzer target for the path normaliser that routes are
 * matched with (middleware/guard/path.c: mw_path_normalize(),
 * guard_path_build()).
 *
 * Input: one control byte (bit 0: raw request target, percent-decoded and
 * cut at '?' or '#', else an already decoded path; the rest: where to cut
 * the path in two), then the path.  Oracles:
 *   - a path that normalises starts with '/', holds no NUL, no empty, "."
 *     or ".." segment, and normalising it again (as a decoded path:
 *     decoding twice would be wrong) changes nothing;
 *   - the two halves give the same result as the whole path (the whole
 *     path may take the copy-as-is shortcut, the halves never do);
 *   - a buffer of the input's length + 2 is always big enough, one as
 *     long as the result (no room for its NUL) never is (a buffer that
 *     fits the result may still be too small for a segment later dropped);
 *   - mw_path_normalize() is the raw mode of guard_path_build().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard/guard_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_path: check failed: %s\n", #cond);           \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* The normal form: "/" then segments that are not empty, "." or "..". */
static void check_normal(const char *p, size_t n)
{
    size_t seg = 1;

    CHECK(n >= 1 && p[0] == '/' && p[n] == '\0' && strlen(p) == n);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && p[i] != '/') {
            continue;
        }
        /* segment p[seg..i); an empty one only as the trailing '/' */
        CHECK(i > seg || (i == n && seg == n));
        CHECK(!(i - seg == 1 && p[seg] == '.'));
        CHECK(!(i - seg == 2 && p[seg] == '.' && p[seg + 1] == '.'));
        seg = i + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data + 1;
    size_t n, cut, len = 0, len2 = 0, len3 = 0;
    bool decode;
    char *buf, *buf2, *small;
    suspect_rc_t rc, rc2;

    if (size < 1) {
        return 0;
    }
    decode = (data[0] & 1) != 0;
    n = size - 1;
    cut = n == 0 ? 0 : (data[0] >> 1) % (n + 1);
    buf = malloc(n + 2);
    buf2 = malloc(n + 2);
    CHECK(buf != NULL && buf2 != NULL);
    rc = guard_path_build(p, n, NULL, 0, decode, buf, n + 2, &len);
    CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_INVAL);
    rc2 =
        guard_path_build(p, cut, p + cut, n - cut, decode, buf2, n + 2, &len2);
    CHECK(rc2 == rc);
    if (decode) {
        size_t len4 = 0;

        CHECK(mw_path_normalize(p, n, buf2 + 0, n + 2, &len4) == rc);
        CHECK(rc != SUSPECT_OK || len4 == len);
    }
    if (rc == SUSPECT_OK) {
        CHECK(len2 == len && memcmp(buf, buf2, len + 1) == 0);
        check_normal(buf, len);
        CHECK(guard_path_build(buf, len, NULL, 0, false, buf2, n + 2, &len3) ==
              SUSPECT_OK);
        CHECK(len3 == len && memcmp(buf, buf2, len) == 0);
        small = malloc(len + 1);
        CHECK(small != NULL);
        CHECK(guard_path_build(p, n, NULL, 0, decode, small, len, &len3) ==
              SUSPECT_E_FULL);
        free(small);
    }
    free(buf);
    free(buf2);
    return 0;
}
