/*
 * test_fcgi_server.c - placeholder suite "fcgi-server".
 */
#include <CUnit/CUnit.h>

#include "suites.h"

int register_fcgi_server_suite(void)
{
    return CU_add_suite("fcgi-server", NULL, NULL) == NULL ? -1 : 0;
}
