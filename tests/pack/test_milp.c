/* tests/pack/test_milp.c -- the GLPK wrapper (lib/pack/milp.h): a small integer program with a
 * known optimum, infeasibility, bad rows, a warm start kept under a node cap of one, and
 * the same problem giving the same answer twice. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "milp.h"

/* max 5a + 4b + 3c  s.t. 2a + 3b + c <= 5, 4a + b + 2c <= 11, 3a + 4b + 2c <= 8, integer:
 * the optimum is 13 at (2, 0, 1). */
static vl_milp *knapsack(void)
{
    static const double rows[3][3] = {{2, 3, 1}, {4, 1, 2}, {3, 4, 2}};
    static const double rhs[3] = {5, 11, 8}, cost[3] = {-5, -4, -3};
    const int idx[3] = {0, 1, 2};
    vl_milp *m = NULL;
    vl_err err;

    cr_assert_eq(vl_milp_new(&m, 3, &err), VL_OK);
    for (int j = 0; j < 3; j++)
        vl_milp_col(m, j, 0, INFINITY, cost[j], true);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(vl_milp_row(m, 3, idx, rows[i], -INFINITY, rhs[i], &err), VL_OK);
    return m;
}

Test(milp, small_integer_program)
{
    vl_milp *m = knapsack();
    vl_milp_result r;
    double x[3];
    vl_err err;

    cr_assert_eq(vl_milp_solve(m, NULL, 1000, x, &r, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(r.outcome, VL_MILP_OPTIMAL);
    cr_assert_float_eq(r.objective, -13, 1e-9);
    cr_assert_float_eq(x[0], 2, 1e-9);
    cr_assert_float_eq(x[1], 0, 1e-9);
    cr_assert_float_eq(x[2], 1, 1e-9);
    vl_milp_free(m);
}

Test(milp, infeasible_and_bad_rows)
{
    vl_milp *m = NULL, *none = NULL;
    vl_milp_result r;
    double x[2], one[2] = {1, 1};
    int idx[2] = {0, 1}, bad[2] = {0, 7};
    vl_err err;

    cr_assert_eq(vl_milp_new(&m, 2, &err), VL_OK);
    vl_milp_col(m, 0, 0, 1, 1, true);
    vl_milp_col(m, 1, 0, 1, 1, true);
    cr_assert_eq(vl_milp_row(m, 2, idx, one, 3, INFINITY, &err), VL_OK);   /* x0 + x1 >= 3 */
    cr_assert_eq(vl_milp_solve(m, NULL, 100, x, &r, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(r.outcome, VL_MILP_NONE);
    cr_assert_eq(vl_milp_row(m, 2, bad, one, 0, 1, &err), VL_EUSAGE);
    cr_assert_eq(vl_milp_row(m, 0, idx, one, 0, 1, &err), VL_EUSAGE);
    cr_assert_eq(vl_milp_row(m, 2, idx, one, 2, 1, &err), VL_EUSAGE);
    cr_assert_eq(vl_milp_new(&none, 0, &err), VL_EUSAGE);
    cr_assert_null(none);
    vl_milp_free(NULL);
    vl_milp_free(m);
}

/* Split eleven weights into two bins minimising the larger minus the mean (z); a node
 * cap of one keeps the search at the root, and the warm start is the answer or beaten. */
static vl_milp *partition(int *ncols)
{
    static const double w[11] = {31, 29, 23, 19, 17, 13, 11, 7, 5, 3, 2};
    double total = 0, val[12];
    int idx[12];
    vl_milp *m = NULL;
    vl_err err;

    *ncols = 12;   /* x_i: weight i in bin 0; z */
    cr_assert_eq(vl_milp_new(&m, 12, &err), VL_OK);
    for (int i = 0; i < 11; i++) {
        vl_milp_col(m, i, 0, 1, 0, true);
        idx[i] = i;
        val[i] = w[i];
        total += w[i];
    }
    vl_milp_col(m, 11, 0, INFINITY, 1, false);
    idx[11] = 11;
    val[11] = -1;   /* bin 0 - z <= total/2 and bin 0 + z >= total/2 */
    cr_assert_eq(vl_milp_row(m, 12, idx, val, -INFINITY, total / 2, &err), VL_OK);
    val[11] = 1;
    cr_assert_eq(vl_milp_row(m, 12, idx, val, total / 2, INFINITY, &err), VL_OK);
    return m;
}

Test(milp, warm_start_under_a_node_cap_and_determinism)
{
    int n;
    vl_milp *m = partition(&n), *m2 = partition(&n);
    /* bin 0 = {31, 29, 17, 2} = 79 of 160: z = 1 */
    double warm[12] = {1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1.0}, x[12], y[12];
    vl_milp_result r, r2;
    vl_err err;

    cr_assert_eq(vl_milp_solve(m, warm, 1, x, &r, &err), VL_OK, "%s", err.msg);
    cr_assert_neq(r.outcome, VL_MILP_NONE);
    cr_assert_leq(r.objective, 1.0 + 1e-9);
    cr_assert_eq(vl_milp_solve(m2, warm, 1, y, &r2, &err), VL_OK);
    cr_assert_eq(r.outcome, r2.outcome);
    cr_assert_eq(memcmp(x, y, sizeof x), 0, "same problem, same answer");
    vl_milp_free(m);
    vl_milp_free(m2);
    /* uncapped: a perfect split (80 / 80) exists */
    m = partition(&n);
    cr_assert_eq(vl_milp_solve(m, warm, 100000, x, &r, &err), VL_OK);
    cr_assert_eq(r.outcome, VL_MILP_OPTIMAL);
    cr_assert_float_eq(r.objective, 0, 1e-9);
    vl_milp_free(m);
}
