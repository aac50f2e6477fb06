#include <CUnit/CUnit.h>

#include "suites.h"

int register_error_suite(void)
{
    return CU_add_suite("error", NULL, NULL) == NULL ? -1 : 0;
}
