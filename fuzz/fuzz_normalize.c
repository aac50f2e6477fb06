/*
 * fuzz_normalize.c - libFuzzer target for the normaliser that reads an
 * identity as its application does (middleware/request/normalize*.c).
 *
 * Input: one control byte (which step list of specs[] below), then the
 * value.  Oracles:
 *   - applying answers SUSPECT_OK or SUSPECT_E_INVAL (a step refused the
 *     value), never anything else;
 *   - a caller buffer too small for the result (the heap path) gives the
 *     same answer and the same bytes as a big one;
 *   - a list that ends in only:a-z0-9 gives only bytes of a-z0-9;
 *   - html-entities never makes a value longer, and leaves one without
 *     '&' as it came;
 *   - the Roundcube recipe's list (strip-tags utf8-clean trim casefold)
 *     leaves no '<' that opens a tag;
 *   - the MediaWiki recipe's list reads its own result as that result
 *     (nothing of it left to decode, fold, drop or strip);
 *   - collate gives lowercase hex of even length, the same for the value
 *     with its ASCII letters lowered and (PAD SPACE, collate alone) with
 *     a space after it; wordpress-user followed by collate too, but for
 *     the space (strip-tags keeps a '<' before white space, drops one at
 *     the end);
 *   - number leaves no leading zero on an all-digit value but "0";
 *   - strip-octets, strip-entities and strip-scripts never lengthen.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/normalize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_normalize: check failed: %s\n", #cond);      \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MW_SPEC                                                                \
    "html-entities casefold unaccent alnum:: strip-prefix:user: only:a-z0-9"

static const char *const specs[] = {
    MW_SPEC,
    "strip-controls casefold unaccent alnum map:ae=a,oe=o,ue=u,dh=d,th=t,"
    "\xce\xbc=u only:a-z0-9",
    "html-entities",
    "unaccent",
    "alnum:._",
    "only:a-z0-9._@-\xd0\xb0-\xd1\x8f",
    "strip-prefix:user: trim casefold",
    "strip-octets strip-entities strip-scripts",
    "trim number",
    "collate:mysql-unicode-ci",
    "wordpress-user collate:mysql-unicode-520-ci",
    "strip-tags utf8-clean trim casefold",
};

/* Links the collate step (the normaliser refers to it weakly). */
__attribute__((used)) static suspect_rc_t (*const collate_step)(
    const char *, size_t, void **) = mw_norm_collate_open;

/* spec applied to in[0..n) with a caller buffer of size bytes: the rc,
 * the result in a new block *out (the caller frees it) of *len bytes. */
static suspect_rc_t apply(const mw_norm_t *norm, const char *in, size_t n,
                          size_t size, char **out, size_t *len)
{
    char *buf = malloc(size + 1);
    const char *res = NULL;
    char *heap = NULL;
    suspect_rc_t rc;

    CHECK(buf != NULL);
    rc = mw_norm_apply(norm, in, n, buf, size, &res, len, &heap);
    *out = NULL;
    if (rc == SUSPECT_OK) {
        *out = malloc(*len + 1);
        CHECK(*out != NULL);
        memcpy(*out, res, *len);
        (*out)[*len] = '\0';
    }
    free(heap);
    free(buf);
    return rc;
}

/* The collate oracles: see the top of the file. */
static void check_collate(const mw_norm_t *norm, const char *in, size_t n,
                          const char *key, size_t key_len, bool space)
{
    char *v = malloc(n + 1);
    char *other = NULL;
    size_t other_len = 0;

    CHECK(v != NULL);
    CHECK(key_len % 2 == 0 && strspn(key, "0123456789abcdef") >= key_len);
    for (size_t i = 0; i < n; i++) {
        v[i] = in[i] >= 'A' && in[i] <= 'Z' ? (char)(in[i] + 32) : in[i];
    }
    v[n] = ' ';
    for (size_t len = n; len <= n + (space ? 1 : 0); len++) {
        CHECK(apply(norm, v, len, len * 4 + 64, &other, &other_len) ==
              SUSPECT_OK);
        CHECK(other_len == key_len && memcmp(other, key, key_len) == 0);
        free(other);
    }
    free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t which;
    const char *spec;
    const char *in = (const char *)data + 1;
    size_t n;
    mw_norm_t *norm = NULL;
    char *big = NULL, *small = NULL;
    size_t big_len = 0, small_len = 0;
    suspect_rc_t rc;

    if (size < 1) {
        return 0;
    }
    which = data[0] % (sizeof(specs) / sizeof(specs[0]));
    spec = specs[which];
    n = size - 1;
    CHECK(mw_norm_compile(spec, strlen(spec), &norm, NULL) == SUSPECT_OK);
    rc = apply(norm, in, n, n * 4 + 64, &big, &big_len);
    CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_INVAL);
    CHECK(apply(norm, in, n, 1, &small, &small_len) == rc);
    if (rc == SUSPECT_OK) {
        CHECK(small_len == big_len && memcmp(small, big, big_len) == 0);
        if (strlen(spec) >= 12 &&
            strcmp(spec + strlen(spec) - 12, " only:a-z0-9") == 0) {
            for (size_t i = 0; i < big_len; i++) {
                CHECK((big[i] >= 'a' && big[i] <= 'z') ||
                      (big[i] >= '0' && big[i] <= '9'));
            }
        }
        if (which == sizeof(specs) / sizeof(specs[0]) - 1) {
            for (size_t i = 0; i + 1 < big_len; i++) {
                CHECK(big[i] != '<' || big[i + 1] == ' ' ||
                      (big[i + 1] >= '\t' && big[i + 1] <= '\r'));
            }
        }
        if (which == 2) {
            char *direct = malloc(n + 1);
            size_t direct_len = 0;

            /* The step alone is the function (which also links it here:
             * the normaliser refers to it weakly). */
            CHECK(direct != NULL);
            CHECK(mw_norm_html_decode(in, n, direct, &direct_len) ==
                  SUSPECT_OK);
            CHECK(direct_len == big_len && memcmp(direct, big, big_len) == 0);
            free(direct);
            CHECK(big_len <= n);
            CHECK(memchr(in, '&', n) != NULL ||
                  (big_len == n && memcmp(big, in, n) == 0));
        }
    }
    if (rc == SUSPECT_OK && strstr(spec, "collate:") != NULL) {
        check_collate(norm, in, n, big, big_len, which == 9);
    }
    if (rc == SUSPECT_OK && which == 8) {
        CHECK(big_len <= 1 || big[0] != '0' ||
              strspn(big, "0123456789") < big_len);
    }
    if (rc == SUSPECT_OK && which == 7) {
        CHECK(big_len <= n);
    }
    if (rc == SUSPECT_OK && which == 0) {
        char *again = NULL;
        size_t again_len = 0;

        CHECK(apply(norm, big, big_len, big_len + 16, &again, &again_len) ==
              SUSPECT_OK);
        CHECK(again_len == big_len && memcmp(again, big, big_len) == 0);
        free(again);
    }
    free(big);
    free(small);
    mw_norm_free(norm);
    return 0;
}
