/*
 * test_conf.c - placeholder suite "conf".
 */
#include <CUnit/CUnit.h>

#include "suites.h"

int register_conf_suite(void)
{
    return CU_add_suite("conf", NULL, NULL) == NULL ? -1 : 0;
}
