/*
 * fuzz_location.c - libFuzzer target for the Location reader of
 * <Success>/<Failure> (middleware/response/location.c).
 *
 * Input: a pattern and a Location value, separated by the first '\n'
 * (none: the pattern "/account").  Oracles:
 *   - mw_location_match() answers -1, 0 or 1, for a <Success> and for a
 *     <Failure> reading alike, and a <Failure>'s answer is never below a
 *     <Success>'s (it reads more as a match: what matches counts);
 *   - a value with a backslash, a space or a control byte is never a
 *     match (-1);
 *   - a fragment never takes part: the value with "#x" added is judged as
 *     the value, when the value has no '#' and is read;
 *   - a value that matches the pattern for a <Success> names its path or
 *     one under it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/location.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_location: check failed: %s\n", #cond);       \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char pattern[MAX + 1] = "/account", value[MAX + 3];
    const uint8_t *nl = memchr(data, '\n', size);
    const uint8_t *v = data;
    size_t n = size;
    mw_location_ctx_t strict = {"shop.example", NULL, "/auth/login.php?x=1",
                                false};
    mw_location_ctx_t lenient = strict;
    int s, f;

    lenient.any_authority = true;
    if (nl != NULL) {
        size_t plen = (size_t)(nl - data);

        if (plen == 0 || plen > MAX || data[0] != '/' ||
            memchr(data, '\0', plen) != NULL) {
            return 0;
        }
        memcpy(pattern, data, plen);
        pattern[plen] = '\0';
        v = nl + 1;
        n = size - plen - 1;
    }
    if (n > MAX) {
        return 0;
    }
    memcpy(value, v, n);
    s = mw_location_match(value, n, pattern, &strict);
    f = mw_location_match(value, n, pattern, &lenient);
    CHECK(s >= -1 && s <= 1 && f >= -1 && f <= 1);
    CHECK(s != 1 || f == 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)value[i];

        if (c <= 0x20 || c == 0x7f || c == '\\') {
            CHECK(s == -1 && f == -1);
            return 0;
        }
    }
    if (s >= 0 && memchr(value, '#', n) == NULL) {
        memcpy(value + n, "#x", 2);
        CHECK(mw_location_match(value, n + 2, pattern, &strict) == s);
    }
    return 0;
}
