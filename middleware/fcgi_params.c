/*
 * fcgi_params.c - the PARAMS of one FastCGI request: the raw stream kept
 * in one buffer per connection, then decoded in place into mw_param_t
 * entries whose values are NUL-terminated.
 *
 * The buffer grows by doubling up to params_max + 1 bytes (the extra byte
 * holds the last value's NUL) and is kept for the next request.  Pairs
 * are laid out back to back, so the byte after a value is the first length
 * byte of the next pair: that byte becomes the value's NUL once the next
 * pair has been decoded.  The pair array is capped at pairs_max entries,
 * so hostile one-byte pairs cannot make it much larger than params_max.
 */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "fcgi_conn.h"

#define PBUF_MIN 8192

int mw_fc_add_params(conn_t *c, const uint8_t *p, size_t n)
{
    size_t want = c->plen + n + 1;

    if (c->plen + n > c->srv->params_max) {
        return -EMSGSIZE;
    }
    if (want > c->pcap) {
        size_t cap = c->pcap < PBUF_MIN ? PBUF_MIN : c->pcap;
        uint8_t *nb;

        while (cap < want) {
            cap *= 2;
        }
        if (cap > c->srv->params_max + 1) {
            cap = c->srv->params_max + 1;
        }
        nb = suspect_realloc(c->pbuf, cap);
        if (nb == NULL) {
            return -ENOMEM;
        }
        c->pbuf = nb;
        c->pcap = cap;
    }
    if (n > 0) {
        memcpy(c->pbuf + c->plen, p, n);
        c->plen += n;
    }
    return 0;
}

/* Makes room for one more pair in the params array. */
static int grow_pairs(conn_t *c, size_t n)
{
    size_t cap = c->params_cap < 32 ? 32 : c->params_cap * 2;
    mw_param_t *np;

    if (n < c->params_cap) {
        return 0;
    }
    if (n >= c->srv->pairs_max) {
        return -EMSGSIZE;
    }
    if (cap > c->srv->pairs_max) {
        cap = c->srv->pairs_max;
    }
    np = suspect_realloc(c->params, cap * sizeof(*np));
    if (np == NULL) {
        return -ENOMEM;
    }
    c->params = np;
    c->params_cap = cap;
    return 0;
}

int mw_fc_decode_params(conn_t *c)
{
    size_t off = 0, n = 0;
    uint8_t *nul = NULL;
    fcgi_nv_t nv;
    suspect_rc_t rc;

    if (c->pbuf == NULL && mw_fc_add_params(c, NULL, 0) != 0) {
        return -ENOMEM;
    }
    while ((rc = fcgi_nv_decode(c->pbuf, c->plen, &off, &nv)) == SUSPECT_OK) {
        int r = grow_pairs(c, n);

        if (r < 0) {
            return r;
        }
        if (nul != NULL) {
            *nul = '\0'; /* this pair's lengths are decoded: reuse a byte */
        }
        c->params[n].name = (const char *)nv.name;
        c->params[n].name_len = nv.name_len;
        c->params[n].value = (const char *)nv.value;
        c->params[n].value_len = nv.value_len;
        nul = (uint8_t *)nv.value + nv.value_len;
        n++;
    }
    if (rc != SUSPECT_E_NOTFOUND) {
        return -EPROTO;
    }
    c->pbuf[c->plen] = '\0';
    if (nul != NULL) {
        *nul = '\0';
    }
    c->req.params = c->params;
    c->req.nparams = n;
    return 0;
}
