/*
 * test_fcgi_proto.c - suite "fcgi-proto": the FastCGI wire codec of
 * middleware/fcgi/fcgi_proto.c, from byte arrays (no sockets): record headers
 * both ways, a bad version and type 0, BEGIN_REQUEST and END_REQUEST
 * bodies, name-value pairs with 1- and 4-byte lengths, truncated pairs
 * and hostile 0x7fffffff lengths that must be errors, never overflows.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi/fcgi_proto.h"
#include "suites.h"

static void test_header_decode(void)
{
    static const uint8_t p[8] = {1, FCGI_STDIN, 0x12, 0x34, 0xff, 0xfe, 7, 9};
    fcgi_header_t h;

    CU_ASSERT_EQUAL(fcgi_header_decode(p, &h), SUSPECT_OK);
    CU_ASSERT_EQUAL(h.type, FCGI_STDIN);
    CU_ASSERT_EQUAL(h.request_id, 0x1234);
    CU_ASSERT_EQUAL(h.content_len, 0xfffe);
    CU_ASSERT_EQUAL(h.padding_len, 7);
}

static void test_header_encode(void)
{
    static const uint8_t want[8] = {
        1, FCGI_END_REQUEST, 0xab, 0xcd, 0x01, 0x02, 0x05, 0};
    uint8_t p[8];
    fcgi_header_t h;

    memset(p, 0xee, sizeof(p));
    fcgi_header_encode(p, FCGI_END_REQUEST, 0xabcd, 0x0102, 5);
    CU_ASSERT_EQUAL(memcmp(p, want, 8), 0);
    fcgi_header_encode(p, FCGI_STDOUT, 65535, 65535, 255);
    CU_ASSERT_EQUAL(fcgi_header_decode(p, &h), SUSPECT_OK);
    CU_ASSERT_EQUAL(h.type, FCGI_STDOUT);
    CU_ASSERT_EQUAL(h.request_id, 65535);
    CU_ASSERT_EQUAL(h.content_len, 65535);
    CU_ASSERT_EQUAL(h.padding_len, 255);
}

static void test_header_bad(void)
{
    static const uint8_t v0[8] = {0, 1, 0, 1, 0, 8, 0, 0};
    static const uint8_t v2[8] = {2, 1, 0, 1, 0, 8, 0, 0};
    static const uint8_t http[8] = {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T'};
    static const uint8_t type0[8] = {1, 0, 0, 1, 0, 0, 0, 0};
    static const uint8_t unknown[8] = {1, 99, 0, 0, 0, 0, 0, 0};
    fcgi_header_t h;

    CU_ASSERT_EQUAL(fcgi_header_decode(v0, &h), SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(fcgi_header_decode(v2, &h), SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(fcgi_header_decode(http, &h), SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(fcgi_header_decode(type0, &h), SUSPECT_E_PARSE);
    /* an unknown type is well-formed: the server answers UNKNOWN_TYPE */
    CU_ASSERT_EQUAL(fcgi_header_decode(unknown, &h), SUSPECT_OK);
    CU_ASSERT_EQUAL(h.type, 99);
}

static void test_begin_body(void)
{
    static const uint8_t want[8] = {0, 2, 1, 0, 0, 0, 0, 0};
    static const uint8_t wire[8] = {0x01, 0x03, 0xff, 9, 9, 9, 9, 9};
    uint8_t p[8];
    uint16_t role = 0;
    uint8_t flags = 0;

    memset(p, 0xee, sizeof(p));
    fcgi_begin_encode(p, FCGI_AUTHORIZER, FCGI_KEEP_CONN);
    CU_ASSERT_EQUAL(memcmp(p, want, 8), 0);
    CU_ASSERT_EQUAL(fcgi_begin_decode(p, 8, &role, &flags), SUSPECT_OK);
    CU_ASSERT_EQUAL(role, FCGI_AUTHORIZER);
    CU_ASSERT_EQUAL(flags, FCGI_KEEP_CONN);
    CU_ASSERT_EQUAL(fcgi_begin_decode(wire, 8, &role, &flags), SUSPECT_OK);
    CU_ASSERT_EQUAL(role, 0x0103);
    CU_ASSERT_EQUAL(flags, 0xff);
    CU_ASSERT_EQUAL(fcgi_begin_decode(p, 7, &role, &flags), SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(fcgi_begin_decode(p, 9, &role, &flags), SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(fcgi_begin_decode(p, 0, &role, &flags), SUSPECT_E_PARSE);
}

static void test_end_body(void)
{
    static const uint8_t want[8] = {0x12, 0x34, 0x56, 0x78, 3, 0, 0, 0};
    uint8_t p[8];
    uint32_t app = 0;
    uint8_t proto = 0;

    memset(p, 0xee, sizeof(p));
    fcgi_end_encode(p, 0x12345678, FCGI_UNKNOWN_ROLE);
    CU_ASSERT_EQUAL(memcmp(p, want, 8), 0);
    CU_ASSERT_EQUAL(fcgi_end_decode(p, 8, &app, &proto), SUSPECT_OK);
    CU_ASSERT_EQUAL(app, 0x12345678);
    CU_ASSERT_EQUAL(proto, FCGI_UNKNOWN_ROLE);
    fcgi_end_encode(p, 0xffffffffu, FCGI_REQUEST_COMPLETE);
    CU_ASSERT_EQUAL(fcgi_end_decode(p, 8, &app, &proto), SUSPECT_OK);
    CU_ASSERT_EQUAL(app, 0xffffffffu);
    CU_ASSERT_EQUAL(proto, FCGI_REQUEST_COMPLETE);
    CU_ASSERT_EQUAL(fcgi_end_decode(p, 4, &app, &proto), SUSPECT_E_PARSE);
}

static void test_nv_short(void)
{
    static const uint8_t wire[] = {4,   3,   'N', 'A', 'M', 'E', 'v',
                                   'a', 'l', 1,   0,   'X', 127, 0};
    uint8_t buf[300];
    char name[127];
    size_t off = 0, n;
    fcgi_nv_t nv;

    CU_ASSERT_EQUAL(fcgi_nv_decode(wire, 12, &off, &nv), SUSPECT_OK);
    CU_ASSERT_EQUAL(nv.name_len, 4);
    CU_ASSERT_EQUAL(memcmp(nv.name, "NAME", 4), 0);
    CU_ASSERT_EQUAL(nv.value_len, 3);
    CU_ASSERT_EQUAL(memcmp(nv.value, "val", 3), 0);
    CU_ASSERT_EQUAL(off, 9);
    CU_ASSERT_EQUAL(fcgi_nv_decode(wire, 12, &off, &nv), SUSPECT_OK);
    CU_ASSERT_EQUAL(nv.name_len, 1);
    CU_ASSERT_EQUAL(nv.value_len, 0); /* an empty value */
    CU_ASSERT_EQUAL(off, 12);
    CU_ASSERT_EQUAL(fcgi_nv_decode(wire, 12, &off, &nv), SUSPECT_E_NOTFOUND);
    /* 127 is the longest 1-byte length */
    CU_ASSERT_EQUAL(fcgi_nv_size(127, 0), 129);
    memset(name, 'a', sizeof(name));
    n = fcgi_nv_encode(buf, name, sizeof(name), "", 0);
    CU_ASSERT_EQUAL(n, 129);
    CU_ASSERT_EQUAL(buf[0], 127);
    CU_ASSERT_EQUAL(buf[1], 0);
}

static void test_nv_long(void)
{
    uint8_t *buf = malloc(70000);
    char *name = malloc(128), *value = malloc(65536);
    size_t off = 0, n;
    fcgi_nv_t nv;

    memset(name, 'n', 128);
    memset(value, 'v', 65536);
    CU_ASSERT_EQUAL(fcgi_nv_size(128, 65536), 4 + 4 + 128 + 65536);
    n = fcgi_nv_encode(buf, name, 128, value, 65536);
    CU_ASSERT_EQUAL(n, 4 + 4 + 128 + 65536);
    /* 4-byte lengths, big-endian, high bit set */
    CU_ASSERT_EQUAL(memcmp(buf, "\x80\x00\x00\x80\x80\x01\x00\x00", 8), 0);
    CU_ASSERT_EQUAL(fcgi_nv_decode(buf, n, &off, &nv), SUSPECT_OK);
    CU_ASSERT_EQUAL(nv.name_len, 128);
    CU_ASSERT_EQUAL(nv.value_len, 65536);
    CU_ASSERT_PTR_EQUAL(nv.name, buf + 8);
    CU_ASSERT_PTR_EQUAL(nv.value, buf + 8 + 128);
    CU_ASSERT_EQUAL(off, n);
    /* a 4-byte length may also encode a small number */
    {
        static const uint8_t wire[] = {0x80, 0, 0, 2, 1, 'a', 'b', 'c'};

        off = 0;
        CU_ASSERT_EQUAL(fcgi_nv_decode(wire, sizeof(wire), &off, &nv),
                        SUSPECT_OK);
        CU_ASSERT_EQUAL(nv.name_len, 2);
        CU_ASSERT_EQUAL(nv.value_len, 1);
        CU_ASSERT_EQUAL(off, sizeof(wire));
    }
    free(buf);
    free(name);
    free(value);
}

static void test_nv_truncated(void)
{
    static const uint8_t pair[] = {3, 4, 'a', 'b', 'c', 'w', 'x', 'y', 'z'};
    static const uint8_t long_len[] = {0x80, 0, 0,   3,   0x80, 0,
                                       0,    1, 'a', 'b', 'c',  'd'};
    fcgi_nv_t nv;

    /* every proper prefix of a pair is an error, never a read past it */
    for (size_t len = 1; len < sizeof(pair); len++) {
        uint8_t *copy = malloc(len);
        size_t off = 0;

        memcpy(copy, pair, len);
        CU_ASSERT_EQUAL(fcgi_nv_decode(copy, len, &off, &nv), SUSPECT_E_PARSE);
        CU_ASSERT_EQUAL(off, 0);
        free(copy);
    }
    for (size_t len = 1; len < sizeof(long_len); len++) {
        uint8_t *copy = malloc(len);
        size_t off = 0;

        memcpy(copy, long_len, len);
        CU_ASSERT_EQUAL(fcgi_nv_decode(copy, len, &off, &nv), SUSPECT_E_PARSE);
        free(copy);
    }
    {
        size_t off = 5; /* past the end */

        CU_ASSERT_EQUAL(fcgi_nv_decode(pair, 3, &off, &nv), SUSPECT_E_PARSE);
    }
}

static void test_nv_hostile(void)
{
    static const uint8_t huge_name[] = {0xff, 0xff, 0xff, 0xff, 1, 'a', 'b'};
    static const uint8_t huge_value[] = {1, 0xff, 0xff, 0xff, 0xff, 'a', 'b'};
    static const uint8_t both[] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 'a'};
    /* lengths that overflow a 32-bit sum: 0x7fffffff + 0x7fffffff */
    static const uint8_t sum[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0,    0,    0,    0};
    const uint8_t *cases[] = {huge_name, huge_value, both, sum};
    size_t lens[] = {sizeof(huge_name), sizeof(huge_value), sizeof(both),
                     sizeof(sum)};
    fcgi_nv_t nv;

    for (int i = 0; i < 4; i++) {
        size_t off = 0;

        CU_ASSERT_EQUAL(fcgi_nv_decode(cases[i], lens[i], &off, &nv),
                        SUSPECT_E_PARSE);
        CU_ASSERT_EQUAL(off, 0);
    }
}

static void test_nv_sequence(void)
{
    uint8_t buf[512];
    size_t at = 0, off = 0;
    fcgi_nv_t nv;
    int count = 0;

    at += fcgi_nv_encode(buf + at, "A", 1, "1", 1);
    at += fcgi_nv_encode(buf + at, "EMPTY", 5, NULL, 0);
    at += fcgi_nv_encode(buf + at, "B", 1, "two", 3);
    while (fcgi_nv_decode(buf, at, &off, &nv) == SUSPECT_OK) {
        count++;
    }
    CU_ASSERT_EQUAL(count, 3);
    CU_ASSERT_EQUAL(off, at);
    /* a trailing stray byte after good pairs is an error */
    buf[at] = 5;
    off = 0;
    count = 0;
    while (fcgi_nv_decode(buf, at + 1, &off, &nv) == SUSPECT_OK) {
        count++;
    }
    CU_ASSERT_EQUAL(count, 3);
    CU_ASSERT_EQUAL(fcgi_nv_decode(buf, at + 1, &off, &nv), SUSPECT_E_PARSE);
}

int register_fcgi_proto_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"header decode", test_header_decode},
        {"header encode", test_header_encode},
        {"bad headers", test_header_bad},
        {"BEGIN_REQUEST body", test_begin_body},
        {"END_REQUEST body", test_end_body},
        {"pairs, 1-byte lengths", test_nv_short},
        {"pairs, 4-byte lengths", test_nv_long},
        {"truncated pairs", test_nv_truncated},
        {"hostile lengths", test_nv_hostile},
        {"pair sequences", test_nv_sequence},
    };
    CU_pSuite s = CU_add_suite("fcgi-proto", NULL, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
