/*
 * control_cmds.h - suspect-fcgi's answers on its control socket (see
 * control_cmds.c and docs/control.md).
 */
#ifndef MW_CONTROL_CMDS_H
#define MW_CONTROL_CMDS_H

#include "control/control_proto.h"

/* The control socket's handler (mw_ctl_handler_fn); arg is the daemon's
 * mw_runtime_t. */
void mw_control_serve(void *arg, const mw_ctl_msg_t *req, mw_ctl_out_t *reply);

#endif
