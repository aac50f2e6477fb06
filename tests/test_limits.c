#include <CUnit/CUnit.h>

#include "suites.h"

int register_limits_suite(void)
{
    return CU_add_suite("limits", NULL, NULL) == NULL ? -1 : 0;
}
