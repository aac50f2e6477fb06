/*
 * fakereq.c - the in-memory request of fakereq.h.
 */
#include "fakereq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static ssize_t fake_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    fakereq_t *r = (fakereq_t *)req;
    size_t left = r->body_len - r->body_off;

    (void)wait;
    if (r->read_error != 0) {
        return -r->read_error;
    }
    if (n > left) {
        n = left;
    }
    if (r->chunk != 0 && n > r->chunk) {
        n = r->chunk;
    }
    memcpy(buf, r->body + r->body_off, n);
    r->body_off += n;
    r->reads += n > 0;
    return (ssize_t)n;
}

static int fake_read_fd(mw_req_t *req)
{
    (void)req;
    return -1;
}

static int fake_write(mw_req_t *req, const void *buf, size_t n)
{
    fakereq_t *r = (fakereq_t *)req;

    if (r->out_len + n + 1 > r->out_cap) {
        size_t cap = (r->out_len + n + 1) * 2;
        char *p = realloc(r->out, cap);

        if (p == NULL) {
            return -ENOMEM;
        }
        r->out = p;
        r->out_cap = cap;
    }
    memcpy(r->out + r->out_len, buf, n);
    r->out_len += n;
    r->out[r->out_len] = '\0';
    return 0;
}

static int fake_flush(mw_req_t *req)
{
    (void)req;
    return 0;
}

static const mw_req_ops_t fake_ops = {fake_read, fake_read_fd, fake_write,
                                      fake_flush};

void fakereq_init(fakereq_t *r, const char *const *vars, const char *body,
                  size_t body_len)
{
    size_t n = 0;

    memset(r, 0, sizeof(*r));
    for (; vars != NULL && vars[n] != NULL && n < FAKEREQ_MAX_PARAMS; n++) {
        const char *eq = strchr(vars[n], '=');

        r->params[n].name = vars[n];
        r->params[n].name_len = (size_t)(eq - vars[n]);
        r->params[n].value = eq + 1;
        r->params[n].value_len = strlen(eq + 1);
        r->params[n].repeated = false;
    }
    r->req.ops = &fake_ops;
    r->req.role = MW_ROLE_RESPONDER;
    r->req.params = r->params;
    r->req.nparams = n;
    r->body = body != NULL ? body : "";
    r->body_len = body != NULL ? body_len : 0;
}

void fakereq_free(fakereq_t *r)
{
    mw_req_release(&r->req);
    free(r->out);
    r->out = NULL;
}
