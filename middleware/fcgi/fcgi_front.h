/*
 * fcgi_front.h - private to the FastCGI server: the front thread, which
 * holds every connection no worker serves and queues a request for the
 * workers once it has arrived (fcgi_front.c).
 */
#ifndef MW_FCGI_FRONT_H
#define MW_FCGI_FRONT_H

#include "fcgi_conn.h"

typedef struct fc_front fc_front_t;

/* A front on the listening socket listen_fd (made non-blocking; still
 * the caller's); NULL when out of memory or descriptors. */
fc_front_t *mw_fc_front_new(fc_shared_t *sh, int listen_fd);

/* Starts the thread: 0 or an error number. */
int mw_fc_front_start(fc_front_t *f);

/* The next request for a worker, waiting for one; NULL once the front
 * has ended (the server stopped and no connection is left). */
conn_t *mw_fc_front_take(fc_front_t *f);

/* A worker gives c back after its request, to do next (FC_NEXT_*). */
void mw_fc_front_give_back(fc_front_t *f, conn_t *c, int next);

/* No new connection from now on (the caller shuts the listening socket
 * down); the front thread ends once no connection is left. */
void mw_fc_front_refuse(fc_front_t *f);

/* Waits for the thread to end (call mw_fc_front_refuse() first); then
 * mw_fc_front_take() returns NULL. */
void mw_fc_front_join(fc_front_t *f);

/* Frees the front and every connection it still holds.  NULL: no-op. */
void mw_fc_front_free(fc_front_t *f);

#endif
