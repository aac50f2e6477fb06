#include <CUnit/CUnit.h>

#include "suites.h"

int register_reload_suite(void)
{
    return CU_add_suite("reload", NULL, NULL) == NULL ? -1 : 0;
}
