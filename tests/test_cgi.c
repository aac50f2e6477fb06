/*
 * test_cgi.c - placeholder suite "cgi".
 */
#include <CUnit/CUnit.h>

#include "suites.h"

int register_cgi_suite(void)
{
    return CU_add_suite("cgi", NULL, NULL) == NULL ? -1 : 0;
}
