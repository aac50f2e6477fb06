/*
 * test_fcgi_proto.c - placeholder suite "fcgi-proto".
 */
#include <CUnit/CUnit.h>

#include "suites.h"

int register_fcgi_proto_suite(void)
{
    return CU_add_suite("fcgi-proto", NULL, NULL) == NULL ? -1 : 0;
}
