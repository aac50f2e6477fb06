/*
 * metrics_http.c - GET /metrics over libmicrohttpd (metrics_http.h).
 *
 * The listening socket is opened by mw_listen_open() (fcgi/listen.c), as
 * every socket of the daemon, for its errors and its IPv6; libmicrohttpd
 * then serves it from one internal thread with poll(), at most
 * CONN_LIMIT connections, each dropped after CONN_TIMEOUT_S idle seconds.
 * Each GET renders the text anew into a buffer the library frees after
 * sending it.  Only GET and HEAD of /metrics are answered; the listener
 * serves nothing else, so a scrape cannot reach the request path.
 */
#include "metrics_http.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "fcgi/listen.h"

#define BACKLOG        16
#define CONN_LIMIT     16
#define CONN_TIMEOUT_S 10
#define CONTENT_TYPE   "text/plain; version=0.0.4; charset=utf-8"

struct mw_metrics_http {
    struct MHD_Daemon *mhd;
    mw_metrics_render_fn render;
    void *arg;
};

/* A fixed answer (404, 405, 500). */
static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned status,
                                   const char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret;

    if (r == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    }
    ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
    mw_metrics_http_t *h = cls;
    struct MHD_Response *r;
    mw_prom_t p;
    enum MHD_Result ret;

    (void)version;
    (void)upload;
    (void)upload_size;
    (void)state;
    if (strcmp(url, "/metrics") != 0) {
        return answer_text(conn, MHD_HTTP_NOT_FOUND,
                           "not found: the metrics are at /metrics\n");
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                           "only GET and HEAD\n");
    }
    memset(&p, 0, sizeof(p));
    h->render(h->arg, &p);
    if (mw_prom_done(&p) != SUSPECT_OK) {
        mw_prom_free(&p);
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                           "out of memory\n");
    }
    r = MHD_create_response_from_buffer(p.len, p.buf, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        mw_prom_free(&p);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", CONTENT_TYPE);
    ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

suspect_rc_t mw_metrics_http_start(const char *listen, mw_metrics_render_fn fn,
                                   void *arg, mw_metrics_http_t **out,
                                   suspect_err_t *err)
{
    mw_metrics_http_t *h = suspect_calloc(1, sizeof(*h));
    int fd = -1;
    suspect_rc_t rc;

    *out = NULL;
    if (h == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "metrics: out of memory");
    }
    h->render = fn;
    h->arg = arg;
    rc = mw_listen_open(listen, BACKLOG, 0, &fd, err);
    if (rc != SUSPECT_OK) {
        free(h);
        return rc;
    }
    h->mhd = MHD_start_daemon(
        MHD_USE_POLL_INTERNAL_THREAD, 0, NULL, NULL, on_request, h,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONN_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CONN_TIMEOUT_S, MHD_OPTION_END);
    if (h->mhd == NULL) {
        close(fd);
        free(h);
        return suspect_err_set(err, SUSPECT_E_IO, NULL, 0,
                               "metrics %s: libmicrohttpd would not start",
                               listen);
    }
    *out = h;
    return SUSPECT_OK;
}

void mw_metrics_http_stop(mw_metrics_http_t *h)
{
    if (h == NULL) {
        return;
    }
    MHD_stop_daemon(h->mhd); /* closes the listening socket */
    free(h);
}
