/*
 * fuzz_json.c - libFuzzer target for the JSON reader
 * (middleware/request/jsonbody.c).
 *
 * Input: one byte, the cap on a batch's calls, a JSON pointer line (up
 * to '\n'), then the body.  Checks:
 *   - the reader accepts, or refuses with a reason (SUSPECT_E_PARSE,
 *     SUSPECT_E_RANGE), and then gives nothing;
 *   - accepted: at most the cap of calls (one for a body that is not an
 *     array); at the pointer, each call's value is absent, refused by
 *     type, a string of its length holding no NUL, or an integer whose
 *     text reads back as a 64-bit number printed the same;
 *   - the body written out by jansson and read again gives the same
 *     values.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "request/jsonbody.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_json: check failed: %s\n", #cond);           \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* The value at ptr in call i of j, as "S<text>", "-", "!". */
static char *value_text(const mw_json_t *j, size_t i, const char *ptr,
                        size_t plen)
{
    char buf[MW_JSON_INT_TEXT], *out;
    const char *v = NULL;
    size_t len = 0;
    suspect_rc_t rc = mw_json_value(j, i, ptr, plen, buf, &v, &len);

    CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_NOTFOUND ||
          rc == SUSPECT_E_INVAL);
    if (rc != SUSPECT_OK) {
        return strdup(rc == SUSPECT_E_INVAL ? "!" : "-");
    }
    CHECK(v != NULL && memchr(v, '\0', len) == NULL);
    if (v == buf) {
        char *end = NULL;
        long long n = strtoll(v, &end, 10);
        char again[MW_JSON_INT_TEXT];

        CHECK(end == v + len);
        snprintf(again, sizeof(again), "%lld", n);
        CHECK(strcmp(again, v) == 0);
    }
    out = malloc(len + 2);
    CHECK(out != NULL);
    out[0] = 'S';
    memcpy(out + 1, v, len);
    out[len + 1] = '\0';
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data + 1, *nl, *body;
    size_t len, plen, cap;
    mw_json_t *j = NULL, *k = NULL;
    const char *why = NULL;
    suspect_rc_t rc;
    char *dump;

    if (size < 2) {
        return 0;
    }
    cap = data[0];
    nl = memchr(in, '\n', size - 1);
    if (nl == NULL) {
        return 0;
    }
    plen = (size_t)(nl - in);
    body = nl + 1;
    len = size - 1 - plen - 1;
    rc = mw_json_read(body, len, cap, &j, &why);
    CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_PARSE || rc == SUSPECT_E_RANGE ||
          rc == SUSPECT_E_NOMEM);
    if (rc != SUSPECT_OK) {
        CHECK(j == NULL);
        CHECK(rc == SUSPECT_E_NOMEM || why != NULL);
        return 0;
    }
    CHECK(mw_json_ncalls(j) <= (cap > 0 ? cap : 1) || mw_json_ncalls(j) == 1);
    /* written out and read again: the same values */
    {
        json_error_t e;
        json_t *root = json_loadb(body, len, JSON_DECODE_ANY, &e);

        CHECK(root != NULL);
        dump = json_dumps(root, JSON_ENCODE_ANY);
        json_decref(root);
    }
    CHECK(dump != NULL);
    CHECK(mw_json_read(dump, strlen(dump), cap, &k, &why) == SUSPECT_OK);
    CHECK(mw_json_ncalls(k) == mw_json_ncalls(j));
    for (size_t i = 0; i < mw_json_ncalls(j) && i < 64; i++) {
        char *a = value_text(j, i, in, plen);
        char *b = value_text(k, i, in, plen);

        CHECK(strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    free(dump);
    mw_json_free(k);
    mw_json_free(j);
    return 0;
}
