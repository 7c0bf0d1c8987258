/* tests/cost_fixture.h -- the cost model tests' fixture (test_cost_shard.c,
 * test_cost_scheme_comm.c, test_cost_memo.c, test_scheme_rows.c): a default cfg per
 * test, and with() to set keys, finalize and derive the cost model.  Each file declares
 * its own TestSuite. */
#ifndef VLPLAN_COST_FIXTURE_H
#define VLPLAN_COST_FIXTURE_H

#include <criterion/criterion.h>

#include "config.h"
#include "cost.h"

static vl_config cfg;
static vl_cost cost;
static vl_err err;

static inline void setup(void)
{
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
}

static inline void teardown(void)
{
    vl_config_free(&cfg);
}

/* Set each of sets (NULL-terminated), finalize and derive the cost model. */
static inline void with(const char *const *sets)
{
    for (size_t i = 0; sets[i] != NULL; i++)
        cr_assert_eq(vl_config_set(&cfg, sets[i], &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
}

#endif
