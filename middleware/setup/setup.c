/*
 * setup.c - releasing what a program stands on (setup.h); loading is
 * setup_load.c's, apart so that suspect-cgi links no XML parser.
 */
#include "setup.h"

void mw_setup_release(mw_setup_t *s)
{
    suspect_store_free(s->store);
    mw_guard_unref(s->guard);
    suspect_limits_unref(s->limits);
    suspect_conf_unref(s->conf);
    s->store = NULL;
    s->guard = NULL;
    s->limits = NULL;
    s->conf = NULL;
}
