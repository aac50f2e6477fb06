/*
 * services.h - what a running suspect-fcgi serves besides requests: its
 * control socket (suspectctl) and its metrics listener (Prometheus).
 */
#ifndef MW_SERVICES_H
#define MW_SERVICES_H

#include "fcgi/fcgi_server.h"
#include "runtime.h"
#include "suspect_error.h"

typedef struct mw_services mw_services_t;

/*
 * Starts the control socket (unless <Control enabled="no">) and, with
 * <Metrics listen>, the metrics listener, for rt and its FastCGI server
 * srv (read for the workers' gauges).  Fails, with the reason in err,
 * when one that was configured explicitly cannot start; the control
 * socket's default place is only tried: when it cannot be made there
 * (no such directory, another daemon's socket), the log says so and the
 * daemon runs without it.  The caller must block every signal first.
 */
suspect_rc_t mw_services_start(mw_runtime_t *rt, mw_server_t *srv,
                               mw_services_t **out, suspect_err_t *err);

/* Stops and frees them (a request to them in progress ends first).  NULL
 * is a no-op. */
void mw_services_stop(mw_services_t *s);

#endif
