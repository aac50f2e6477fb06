/*
 * fuzz_compiled.c - libFuzzer target for suspect-cgi's compiled
 * configuration (config/compiled/compiled_dec.c) and the guard compiler
 * that takes its result (middleware/guard/guard.c, lists.c: the allow and
 * deny lists' entries are checked there, as when the XML loads).
 *
 * Input: the payload of a compiled file (what follows its 40-byte
 * header).  The harness writes the header itself, version, length and
 * checksum right, so mutations reach the structure instead of dying at
 * the checksum; the corpus inputs (fuzz/corpus/compiled) are payloads of files
 * suspect-cgi-compile wrote, lists and list files included, packed as the
 * guard compiled them (then a request's guard searches them in place).  A
 * payload that decodes must keep the loader's promises (counts within their
 * caps, paths absolute, lists with entries and a status in range, a packed list
 * sound and without its text), must encode
 * back to exactly the same bytes (nothing lost or made up), and its guard
 * either compiles or fails with a message.  A refusal leaves nothing
 * behind and carries a message.  Any broken promise aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiled/compiled_internal.h"
#include "guard/guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_compiled: check failed: %s\n", #cond);       \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void put_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* The payload behind a header that holds: magic, version, length, sum. */
static unsigned char *wrap(const uint8_t *data, size_t size, size_t *len)
{
    unsigned char *buf = malloc(COMPILED_HEADER + size + 1);
    uint64_t sum[2];

    CHECK(buf != NULL);
    memcpy(buf + COMPILED_HEADER, data, size);
    compiled_sum(buf + COMPILED_HEADER, size, sum);
    memcpy(buf, COMPILED_MAGIC, 8);
    put_le(buf + 8, COMPILED_VERSION, 4);
    put_le(buf + 12, 0, 4);
    put_le(buf + 16, size, 8);
    put_le(buf + 24, sum[0], 8);
    put_le(buf + 32, sum[1], 8);
    *len = COMPILED_HEADER + size;
    return buf;
}

static void check_list(const suspect_conf_list_t *l)
{
    compiled_pack_view_t v;

    if (l == NULL) {
        return;
    }
    CHECK(l->ip != NULL || l->identity != NULL || l->file != NULL);
    if (l->packed != NULL) {
        CHECK(l->file_text == NULL);
        CHECK(compiled_pack_check(l->packed, l->packed_len, &v));
    } else {
        CHECK((l->file == NULL) == (l->file_text == NULL));
    }
    CHECK(l->file == NULL || l->file[0] == '/');
    CHECK(l->file_len <= SUSPECT_CONF_MAX_LIST_BYTES);
    CHECK(l->file_text == NULL || l->file_text[l->file_len] == '\0');
    CHECK(l->status == 0 || (l->status >= 400 && l->status <= 599));
}

static void check_conf(const suspect_conf_t *c)
{
    CHECK(c->nroutes <= SUSPECT_CONF_MAX_ROUTES);
    for (size_t i = 0; i < c->nroutes; i++) {
        const suspect_conf_route_t *r = &c->routes[i];

        CHECK(r->action != NULL && r->path != NULL && r->path[0] == '/');
        CHECK(r->nmethods <= SUSPECT_CONF_MAX_METHODS);
        CHECK(r->nidentities <= SUSPECT_MAX_IDENTITIES);
        for (size_t k = 0; k < r->nidentities; k++) {
            CHECK(r->identities[k].nparts >= 1 &&
                  r->identities[k].nsources >= r->identities[k].nparts);
        }
        check_list(r->allow);
        check_list(r->deny);
    }
    check_list(c->allow);
    check_list(c->deny);
}

/* Decoded: encodes back to the same payload; the guard compiles or
 * says why not. */
static void check_decoded(const compiled_t *s, const unsigned char *buf,
                          size_t len)
{
    unsigned char *again = NULL;
    size_t len2 = 0;
    mw_guard_t *g = NULL;
    suspect_err_t err;
    suspect_rc_t rc;

    CHECK(s->conf != NULL && s->limits != NULL && s->conf_path != NULL &&
          s->conf_path[0] == '/');
    check_conf(s->conf);
    rc = compiled_encode(s, &again, &len2, NULL);
    CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_NOMEM);
    if (rc == SUSPECT_OK) {
        CHECK(len2 == len &&
              memcmp(again + COMPILED_HEADER, buf + COMPILED_HEADER,
                     len - COMPILED_HEADER) == 0);
    }
    free(again);
    memset(&err, 0, sizeof(err));
    if (mw_guard_new(s->conf, &g, &err) == SUSPECT_OK) {
        CHECK(mw_guard_conf(g) == s->conf);
        mw_guard_unref(g);
    } else {
        CHECK(g == NULL && err.text[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t len = 0;
    unsigned char *buf;
    suspect_err_t err;
    compiled_t s;

    if (size > COMPILED_MAX_LEN) {
        return 0;
    }
    buf = wrap(data, size, &len);
    memset(&err, 0, sizeof(err));
    if (compiled_decode(buf, len, "fuzz.snap", &s, &err) == SUSPECT_OK) {
        check_decoded(&s, buf, len);
        compiled_clear(&s);
    } else {
        CHECK(s.conf == NULL && s.limits == NULL && s.conf_path == NULL);
        CHECK(err.text[0] != '\0');
    }
    free(buf);
    return 0;
}
