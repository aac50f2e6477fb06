/*
 * test_upstream.c - placeholder suite "upstream".
 */
#include <CUnit/CUnit.h>

#include "suites.h"

int register_upstream_suite(void)
{
    return CU_add_suite("upstream", NULL, NULL) == NULL ? -1 : 0;
}
