/*
 * fcgi_proto.c - FastCGI record headers, request bodies and name-value
 * pairs (FastCGI specification 1.0, sections 3 and 5).
 *
 * Pure functions over byte arrays; the callers own the buffers.  Every
 * length read from the wire is compared with what is left of the buffer
 * before it is used, so no input can make a pointer run past the end.
 */
#include "fcgi_proto.h"

#include <string.h>

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

suspect_rc_t fcgi_header_decode(const uint8_t *p, fcgi_header_t *out)
{
    if (p[0] != FCGI_VERSION_1 || p[1] == 0) {
        return SUSPECT_E_PARSE;
    }
    out->type = p[1];
    out->request_id = get16(p + 2);
    out->content_len = get16(p + 4);
    out->padding_len = p[6];
    return SUSPECT_OK;
}

void fcgi_header_encode(uint8_t *p, uint8_t type, uint16_t request_id,
                        uint16_t content_len, uint8_t padding_len)
{
    p[0] = FCGI_VERSION_1;
    p[1] = type;
    put16(p + 2, request_id);
    put16(p + 4, content_len);
    p[6] = padding_len;
    p[7] = 0;
}

suspect_rc_t fcgi_begin_decode(const uint8_t *p, size_t len, uint16_t *role,
                               uint8_t *flags)
{
    if (len != 8) {
        return SUSPECT_E_PARSE;
    }
    *role = get16(p);
    *flags = p[2];
    return SUSPECT_OK;
}

void fcgi_begin_encode(uint8_t *p, uint16_t role, uint8_t flags)
{
    memset(p, 0, 8);
    put16(p, role);
    p[2] = flags;
}

suspect_rc_t fcgi_end_decode(const uint8_t *p, size_t len, uint32_t *app_status,
                             uint8_t *proto_status)
{
    if (len != 8) {
        return SUSPECT_E_PARSE;
    }
    *app_status = get32(p);
    *proto_status = p[4];
    return SUSPECT_OK;
}

void fcgi_end_encode(uint8_t *p, uint32_t app_status, uint8_t proto_status)
{
    memset(p, 0, 8);
    put32(p, app_status);
    p[4] = proto_status;
}

/* Reads one length (1 or 4 bytes) at p[*off..len). */
static suspect_rc_t nv_len(const uint8_t *p, size_t len, size_t *off,
                           uint32_t *out)
{
    if (*off >= len) {
        return SUSPECT_E_PARSE;
    }
    if (p[*off] < 0x80) {
        *out = p[*off];
        *off += 1;
        return SUSPECT_OK;
    }
    if (len - *off < 4) {
        return SUSPECT_E_PARSE;
    }
    *out = get32(p + *off) & 0x7fffffffu;
    *off += 4;
    return SUSPECT_OK;
}

suspect_rc_t fcgi_nv_decode(const uint8_t *p, size_t len, size_t *off,
                            fcgi_nv_t *out)
{
    size_t at = *off;
    uint32_t nlen, vlen;

    if (at == len) {
        return SUSPECT_E_NOTFOUND;
    }
    if (at > len || nv_len(p, len, &at, &nlen) != SUSPECT_OK ||
        nv_len(p, len, &at, &vlen) != SUSPECT_OK) {
        return SUSPECT_E_PARSE;
    }
    if (nlen > len - at || vlen > len - at - nlen) {
        return SUSPECT_E_PARSE;
    }
    out->name = p + at;
    out->name_len = nlen;
    out->value = p + at + nlen;
    out->value_len = vlen;
    *off = at + nlen + vlen;
    return SUSPECT_OK;
}

size_t fcgi_nv_size(size_t name_len, size_t value_len)
{
    return (name_len < 128 ? 1 : 4) + (value_len < 128 ? 1 : 4) + name_len +
           value_len;
}

static size_t put_len(uint8_t *p, size_t n)
{
    if (n < 128) {
        p[0] = (uint8_t)n;
        return 1;
    }
    put32(p, (uint32_t)n | 0x80000000u);
    return 4;
}

size_t fcgi_nv_encode(uint8_t *p, const void *name, size_t name_len,
                      const void *value, size_t value_len)
{
    size_t at = put_len(p, name_len);

    at += put_len(p + at, value_len);
    memcpy(p + at, name, name_len);
    at += name_len;
    if (value_len > 0) {
        memcpy(p + at, value, value_len);
    }
    return at + value_len;
}
