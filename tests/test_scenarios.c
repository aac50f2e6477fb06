#include <CUnit/CUnit.h>

#include "suites.h"

int register_scenarios_suite(void)
{
    return CU_add_suite("scenarios", NULL, NULL) == NULL ? -1 : 0;
}
