/*
 * fuzz_xmlrpc.c - libFuzzer target for the XML-RPC reader
 * (middleware/request/xmlrpc.c).
 *
 * Input: one byte, the cap on calls (0: the default), then the body.
 * Checks:
 *   - the reader accepts, or refuses with a reason (SUSPECT_E_PARSE,
 *     SUSPECT_E_RANGE), and then gives nothing;
 *   - accepted: at most the cap of calls, and one unless the body names
 *     system.multicall; each method trimmed of blanks and never
 *     system.multicall itself; each parameter either absent, refused by
 *     type, or text of its length holding no NUL (XML has none);
 *   - a second reading of the same body gives the same calls.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/xmlrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_xmlrpc: check failed: %s\n", #cond);         \
            abort();                                                           \
        }                                                                      \
    } while (0)

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The calls of a and b are the same. */
static void same(const mw_xmlrpc_t *a, const mw_xmlrpc_t *b)
{
    CHECK(mw_xmlrpc_ncalls(a) == mw_xmlrpc_ncalls(b));
    for (size_t i = 0; i < mw_xmlrpc_ncalls(a); i++) {
        size_t la = 0, lb = 0;
        const char *ma = mw_xmlrpc_method(a, i, &la);
        const char *mb = mw_xmlrpc_method(b, i, &lb);

        CHECK(la == lb && memcmp(ma, mb, la) == 0);
        for (unsigned pos = 0; pos <= MW_XR_MAX_PARAMS + 1; pos++) {
            const char *va = NULL, *vb = NULL;
            size_t na = 0, nb = 0;
            suspect_rc_t ra = mw_xmlrpc_param(a, i, pos, &va, &na);
            suspect_rc_t rb = mw_xmlrpc_param(b, i, pos, &vb, &nb);

            CHECK(ra == rb);
            CHECK(ra != SUSPECT_OK || (na == nb && memcmp(va, vb, na) == 0));
        }
    }
}

static void check_calls(const mw_xmlrpc_t *x, const char *body, size_t len,
                        size_t cap)
{
    size_t n = mw_xmlrpc_ncalls(x);

    CHECK(n <= cap);
    if (memmem(body, len, "system.multicall", 16) == NULL) {
        CHECK(n == 1);
    }
    for (size_t i = 0; i < n; i++) {
        size_t ml = 0;
        const char *m = mw_xmlrpc_method(x, i, &ml);

        CHECK(m != NULL && strlen(m) == ml);
        CHECK(ml == 0 || (!blank(m[0]) && !blank(m[ml - 1])));
        CHECK(!(ml == 16 && memcmp(m, "system.multicall", 16) == 0));
        CHECK(mw_xmlrpc_param(x, i, 0, &m, &ml) == SUSPECT_E_NOTFOUND);
        for (unsigned pos = 1; pos <= MW_XR_MAX_PARAMS + 1; pos++) {
            const char *v = NULL;
            size_t vl = 0;
            suspect_rc_t rc = mw_xmlrpc_param(x, i, pos, &v, &vl);

            CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_NOTFOUND ||
                  rc == SUSPECT_E_INVAL);
            CHECK(rc != SUSPECT_OK || (v != NULL && strlen(v) == vl));
            CHECK(pos <= MW_XR_MAX_PARAMS || rc == SUSPECT_E_NOTFOUND);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data + 1;
    size_t len, cap;
    mw_xmlrpc_t *x = NULL, *y = NULL;
    const char *why = NULL;
    suspect_rc_t rc;

    if (size < 1) {
        return 0;
    }
    len = size - 1;
    cap = data[0] != 0 ? data[0] : MW_XR_MAX_CALLS_DEFAULT;
    rc = mw_xmlrpc_read(body, len, data[0], &x, &why);
    CHECK(rc == SUSPECT_OK || rc == SUSPECT_E_PARSE || rc == SUSPECT_E_RANGE ||
          rc == SUSPECT_E_NOMEM);
    if (rc != SUSPECT_OK) {
        CHECK(x == NULL);
        CHECK(rc == SUSPECT_E_NOMEM || why != NULL);
        return 0;
    }
    check_calls(x, body, len, cap);
    CHECK(mw_xmlrpc_read(body, len, data[0], &y, &why) == SUSPECT_OK);
    same(x, y);
    mw_xmlrpc_free(y);
    mw_xmlrpc_free(x);
    return 0;
}
