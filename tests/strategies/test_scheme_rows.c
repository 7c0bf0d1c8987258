/* tests/strategies/test_scheme_rows.c -- the strategies that read cost.schemes rows as
 * coefficients (Hydraulis' T(l), slimpack's work per token) add the analytic
 * communication a comm-analytic row leaves out, and take a whole-time row as it is. */
#include <criterion/criterion.h>
#include <math.h>

#include "hydraulis_impl.h"
#include "slimpack_impl.h"
/* after the headers whose inline functions name a parameter err, as the fixture a global */
#include "cost_fixture.h"

TestSuite(scheme_rows, .init = setup, .fini = teardown);

/* The default configuration with one cost.schemes row. */
static void with_row(const char *row)
{
    with((const char *const[]){row, NULL});
}

/* TP 2 in a node, overlap.tp 0: per layer and direction two all-gathers and two
 * reduce-scatters of T·4096·2 bytes, each 15 us plus half the bytes at 370 GB/s. */
static const double TP2_PER_TOKEN = 32 * 2 * 4096 * 2 / 370e9 * 1e3;   /* ms, one way */
static const double TP2_PER_MB = 32 * 4 * 15e-6 * 1e3;

Test(scheme_rows, hydraulis_adds_the_tp_communication_of_a_comm_analytic_row)
{
    hy_schemes sch;

    with_row("cost.schemes=[{tp: 2, pp: 1, a: 1e-8, b: 2e-3, c: 0.5, comm: analytic}]");
    cr_assert_eq(vl__hy_schemes(&sch, &cost, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(sch.n, 1);
    cr_assert(sch.s[0].measured);
    cr_assert_eq(sch.s[0].a, 1e-8);
    cr_assert_float_eq(sch.s[0].b, 2e-3 + 2 * TP2_PER_TOKEN, 1e-15, "%.15g", sch.s[0].b);
    cr_assert_float_eq(sch.s[0].c, 0.5 + 2 * TP2_PER_MB, 1e-9, "%.15g", sch.s[0].c);
    vl__hy_schemes_free(&sch);
}

Test(scheme_rows, hydraulis_takes_a_whole_time_row_as_it_is)
{
    hy_schemes sch;

    with_row("cost.schemes=[{tp: 2, pp: 1, a: 1e-8, b: 2e-3, c: 0.5}]");
    cr_assert_eq(vl__hy_schemes(&sch, &cost, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(sch.n, 1);
    cr_assert_eq(sch.s[0].b, 2e-3);
    cr_assert_eq(sch.s[0].c, 0.5);
    vl__hy_schemes_free(&sch);
}

/* slimpack's per-token work: the row's b split 1/3 forward, 2/3 backward, less the
 * a·T of e² − o² = 2P − T, plus the TP communication per token of each direction. */
Test(scheme_rows, slimpack_work_per_token_includes_the_communication)
{
    vl_par p = {2, 1, 1, 0};
    double fa = 1 / 3.5;

    with_row("cost.schemes=[{tp: 2, pp: 1, a: 1e-8, b: 2e-3, c: 0.5, comm: analytic}]");
    sp_coef w = vl__sp_coef(&cost, &p, 8192);
    cr_assert_float_eq(w.af, 2 * 1e-8 * fa, 1e-20);
    cr_assert_float_eq(w.bf, 2e-3 / 3 - 1e-8 * fa + TP2_PER_TOKEN, 1e-15, "%.15g", w.bf);
    cr_assert_float_eq(w.bb, 2e-3 * 2 / 3 - 1e-8 * (1 - fa) + TP2_PER_TOKEN, 1e-15);
}
