/*
 * fuzz_fcgi_proto.c - libFuzzer target for the FastCGI wire format
 * (middleware/fcgi/fcgi_proto.c): record headers, BEGIN_REQUEST and END_REQUEST
 * bodies, name-value pairs.
 *
 * Input: any bytes.  The first 8 are decoded as a record header and as
 * both request bodies; all of them as a stream of name-value pairs, as a
 * PARAMS or GET_VALUES body would be.  Oracles: every decoded pair lies
 * inside the input and the offset only moves forward; the pairs, encoded
 * again with fcgi_nv_encode() (fcgi_nv_size() bytes each), decode to the
 * same names and values, and a header, BEGIN and END body survive an
 * encode-decode round trip.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi/fcgi_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_fcgi_proto: check failed: %s\n", #cond);     \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_PAIRS 4096

static void check_header(const uint8_t *data)
{
    fcgi_header_t h, h2;
    uint8_t enc[FCGI_HEADER_LEN];
    uint16_t role;
    uint8_t flags, proto;
    uint32_t app;

    if (fcgi_header_decode(data, &h) == SUSPECT_OK) {
        CHECK(data[0] == FCGI_VERSION_1 && h.type != 0);
        fcgi_header_encode(enc, h.type, h.request_id, h.content_len,
                           h.padding_len);
        CHECK(fcgi_header_decode(enc, &h2) == SUSPECT_OK);
        CHECK(h.type == h2.type && h.request_id == h2.request_id &&
              h.content_len == h2.content_len &&
              h.padding_len == h2.padding_len);
        CHECK(memcmp(enc, data, 7) == 0);
    } else {
        CHECK(data[0] != FCGI_VERSION_1 || data[1] == 0);
    }
    CHECK(fcgi_begin_decode(data, 8, &role, &flags) == SUSPECT_OK);
    fcgi_begin_encode(enc, role, flags);
    CHECK(memcmp(enc, data, 3) == 0);
    CHECK(fcgi_end_decode(data, 8, &app, &proto) == SUSPECT_OK);
    fcgi_end_encode(enc, app, proto);
    CHECK(memcmp(enc, data, 5) == 0);
    CHECK(fcgi_begin_decode(data, 7, &role, &flags) == SUSPECT_E_PARSE);
    CHECK(fcgi_end_decode(data, 9, &app, &proto) == SUSPECT_E_PARSE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fcgi_nv_t pairs[MAX_PAIRS];
    size_t off = 0, n = 0, enc_len = 0;
    uint8_t *enc;
    suspect_rc_t rc;
    fcgi_nv_t nv;

    if (size >= FCGI_HEADER_LEN) {
        check_header(data);
    }
    while (n < MAX_PAIRS &&
           (rc = fcgi_nv_decode(data, size, &off, &nv)) == SUSPECT_OK) {
        size_t end = (size_t)(nv.value - data) + nv.value_len;

        CHECK(nv.name >= data && nv.value == nv.name + nv.name_len);
        CHECK(end == off && off <= size);
        pairs[n++] = nv;
        enc_len += fcgi_nv_size(nv.name_len, nv.value_len);
    }
    if (n < MAX_PAIRS) {
        CHECK(rc == (off == size ? SUSPECT_E_NOTFOUND : SUSPECT_E_PARSE));
    }
    enc = malloc(enc_len + 1);
    CHECK(enc != NULL);
    off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = fcgi_nv_encode(enc + off, pairs[i].name, pairs[i].name_len,
                                  pairs[i].value, pairs[i].value_len);

        CHECK(k == fcgi_nv_size(pairs[i].name_len, pairs[i].value_len));
        off += k;
    }
    CHECK(off == enc_len);
    off = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(fcgi_nv_decode(enc, enc_len, &off, &nv) == SUSPECT_OK);
        CHECK(nv.name_len == pairs[i].name_len &&
              nv.value_len == pairs[i].value_len);
        CHECK(memcmp(nv.name, pairs[i].name, nv.name_len) == 0);
        CHECK(nv.value_len == 0 ||
              memcmp(nv.value, pairs[i].value, nv.value_len) == 0);
    }
    CHECK(fcgi_nv_decode(enc, enc_len, &off, &nv) == SUSPECT_E_NOTFOUND);
    free(enc);
    return 0;
}
