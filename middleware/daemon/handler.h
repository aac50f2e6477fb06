/*
 * handler.h - suspect-fcgi's request handler: decide, then deny, answer
 * or forward (see handler.c).
 */
#ifndef MW_HANDLER_H
#define MW_HANDLER_H

#include "request/request.h"

/* The request handler (mw_handler_fn) for the FastCGI server; arg is the
 * daemon's mw_runtime_t. */
void mw_handler_request(mw_req_t *req, void *arg);

#endif
