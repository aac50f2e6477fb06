/*
 * jsonbody.c - the calls of a JSON body and values by JSON pointer: see
 * jsonbody.h.
 *
 * Parsed by jansson (Debian's libjansson-dev) rather than json-c or a
 * reader of our own: its decoder refuses an object holding a key twice
 * (JSON_REJECT_DUPLICATES), which json-c cannot, and an attacker's two
 * "username" members are the walk-around that matters here (PHP's
 * json_decode() keeps the last, other parsers the first).  What else is
 * refused, and why:
 *  - a body that is not one JSON text (jansson, strict RFC 8259: no
 *    comments, no trailing commas, UTF-8 only, as json_decode());
 *  - a "\u0000" in a string (left out of JSON_ALLOW_NUL): C code cuts
 *    there, PHP does not;
 *  - a top-level object with a key "0": json_decode($b, true) makes
 *    {"0":{..},"1":{..}} a list, which an application may run as a batch
 *    of calls the guard read as one;
 *  - an integer beyond 64 bits (jansson fails; json_decode() makes it a
 *    float whose string is not the digits);
 *  - at a pointer, a real, a boolean, an object or an array
 *    (SUSPECT_E_INVAL): (string) of 1.0 is "1", of true "1", and an
 *    array is no account name.
 * An integer at a pointer is read as PHP prints it ("27"); null is no
 * value.
 */
#include "request/jsonbody.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"

struct mw_json {
    json_t *root;
    bool batch;
};

void mw_json_free(mw_json_t *j)
{
    if (j != NULL) {
        json_decref(j->root);
        free(j);
    }
}

suspect_rc_t mw_json_read(const char *body, size_t len, size_t max_calls,
                          mw_json_t **out, const char **why)
{
    json_error_t e;
    mw_json_t *j;

    *out = NULL;
    *why = NULL;
    j = suspect_calloc(1, sizeof(*j));
    if (j == NULL) {
        return SUSPECT_E_NOMEM;
    }
    j->root =
        json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
    if (j->root == NULL) {
        free(j);
        *why = json_error_code(&e) == json_error_duplicate_key
                   ? "JSON object with a key given twice"
               : json_error_code(&e) == json_error_out_of_memory
                   ? NULL
                   : "JSON body that does not parse";
        return *why == NULL ? SUSPECT_E_NOMEM : SUSPECT_E_PARSE;
    }
    if (json_is_object(j->root) && json_object_get(j->root, "0") != NULL) {
        /* PHP's json_decode($b, true) makes {"0":..,"1":..} a list, which
         * an application may run as a batch */
        mw_json_free(j);
        *why = "JSON object with a key \"0\" (PHP may read it as a batch)";
        return SUSPECT_E_PARSE;
    }
    j->batch = json_is_array(j->root);
    if (j->batch && json_array_size(j->root) > max_calls) {
        mw_json_free(j);
        *why = "JSON batch with more calls than maxCalls";
        return SUSPECT_E_RANGE;
    }
    *out = j;
    return SUSPECT_OK;
}

size_t mw_json_ncalls(const mw_json_t *j)
{
    return j->batch ? json_array_size(j->root) : 1;
}

/* Token t[0..n) unescaped (~1 '/', ~0 '~') into buf: its length. */
static size_t unescape(const char *t, size_t n, char *buf)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        if (t[i] == '~' && i + 1 < n) {
            buf[o++] = t[i + 1] == '1' ? '/' : '~';
            i++;
        } else {
            buf[o++] = t[i];
        }
    }
    return o;
}

/* The array index token t[0..n): digits without a leading zero. */
static bool array_index(const char *t, size_t n, size_t *idx)
{
    size_t v = 0;

    if (n == 0 || n > 9 || (n > 1 && t[0] == '0')) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') {
            return false;
        }
        v = v * 10 + (size_t)(t[i] - '0');
    }
    *idx = v;
    return true;
}

/* The node at ptr[0..len) under n, or NULL. */
static json_t *resolve(json_t *n, const char *ptr, size_t len)
{
    char tok[256];
    size_t pos = 0;

    while (n != NULL && pos < len) {
        const char *t = ptr + pos + 1; /* past the '/' */
        const char *end = memchr(t, '/', len - pos - 1);
        size_t tlen = end != NULL ? (size_t)(end - t) : len - pos - 1;
        size_t k, idx = 0;

        if (tlen >= sizeof(tok)) {
            return NULL;
        }
        k = unescape(t, tlen, tok);
        if (json_is_object(n)) {
            n = json_object_getn(n, tok, k);
        } else if (json_is_array(n) && array_index(tok, k, &idx)) {
            n = json_array_get(n, idx);
        } else {
            n = NULL;
        }
        pos += 1 + tlen;
    }
    return n;
}

suspect_rc_t mw_json_value(const mw_json_t *j, size_t i, const char *ptr,
                           size_t ptr_len, char buf[MW_JSON_INT_TEXT],
                           const char **v, size_t *len)
{
    json_t *call = j->batch ? json_array_get(j->root, i) : j->root;
    json_t *n = call != NULL ? resolve(call, ptr, ptr_len) : NULL;

    if (n == NULL || json_is_null(n)) {
        return SUSPECT_E_NOTFOUND;
    }
    if (json_is_string(n)) {
        *v = json_string_value(n);
        *len = json_string_length(n);
        return SUSPECT_OK;
    }
    if (json_is_integer(n)) {
        int k = snprintf(buf, MW_JSON_INT_TEXT, "%" JSON_INTEGER_FORMAT,
                         json_integer_value(n));
        *v = buf;
        *len = (size_t)k;
        return SUSPECT_OK;
    }
    return SUSPECT_E_INVAL;
}
