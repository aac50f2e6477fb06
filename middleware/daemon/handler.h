/*
 * handler.h - suspect-fcgi's request handler: decide, then deny, answer
 * or forward (see handler.c).
 */
#ifndef MW_HANDLER_H
#define MW_HANDLER_H

#include <stdbool.h>

#include "request/request.h"

/* The request handler (mw_handler_fn) for the FastCGI server; arg is the
 * daemon's mw_runtime_t. */
void mw_handler_request(mw_req_t *req, void *arg);

/* Whether mw_handler_request() answers every request of role (MW_ROLE_*)
 * without blocking and without reading its body (mw_front_fn; arg is the
 * daemon's mw_runtime_t): the memory store, and nothing forwarded (see
 * handler.c). */
bool mw_handler_answers_in_front(int role, void *arg);

#endif
