/* tests/model/test_cost_scheme_comm.c -- cost.schemes rows with comm: analytic (cost.c,
 * cost_pack.c): such a row is one GPU's compute, and a micro-batch on its scheme costs
 * the row's fitted compute plus exactly the communication the analytic model charges the
 * same scheme without a row; a whole-time row is unchanged; CP placement still applies to
 * such a row; the communication as a row's b, c terms (what slimpack and Hydraulis add). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "cost_fixture.h"

TestSuite(cost_scheme_comm, .init = setup, .fini = teardown);

/* A row's forward and backward ms of one sequence of l tokens on a stage of
 * model.layers / pp layers (llama3.1-8b defaults: bwd_attn 2.5, bwd_linear 2), seconds. */
static void row_by_hand(double a, double b, double c, double l, double *f, double *bw)
{
    double fa = 1 / 3.5, fl = 1 / 3.0;

    *f = (a * l * l * fa + (b * l + c) * fl) * 1e-3;
    *bw = (a * l * l * (1 - fa) + (b * l + c) * (1 - fl)) * 1e-3;
}

/* Ulysses over 8 GPUs of one node, 512 tokens: per layer and direction four all-to-alls
 * (Q and O of 32 heads, K and V of 8, 128 wide, bf16, 64 rows a GPU), each 15 us plus
 * 7/8 of its bytes at 370 GB/s plus 4 passes over them at 3350 GB/s. */
Test(cost_scheme_comm, ulysses_row_is_compute_plus_the_analytic_all_to_alls)
{
    vl_par p = {1, 1, 8, 0};
    vl_seg s = {0, 0, 512};
    double rows = 512.0 / 8, a2a = 0, f, b;

    with((const char *const[]){"training.sp_kind=ulysses", "training.sp=8", NULL});
    vl_mb_time none = vl_cost_mb_time(&cost, &s, 1, &p, 32, 0);
    for (int i = 0; i < 4; i++) {
        double S = rows * (i == 0 || i == 3 ? 4096 : 1024) * 2;
        a2a += 15e-6 + 7.0 / 8 * S / 370e9 + 4 * S / 3350e9;
    }
    with((const char *const[]){"cost.schemes=[{tp: 1, pp: 1, sp: 8, a: 2e-8, b: 3e-4, "
                               "c: 0.5, comm: analytic}]", NULL});
    vl_mb_time t = vl_cost_mb_time(&cost, &s, 1, &p, 32, 0);
    row_by_hand(2e-8, 3e-4, 0.5, 512, &f, &b);
    cr_assert_float_eq(t.comm_fwd, 32 * a2a, 1e-12, "%.12g vs %.12g", t.comm_fwd, 32 * a2a);
    cr_assert_float_eq(t.comm_bwd, 32 * a2a, 1e-12);
    cr_assert_float_eq(t.fwd, f + 32 * a2a, 1e-12, "%.12g vs %.12g", t.fwd, f + 32 * a2a);
    cr_assert_float_eq(t.bwd, b + 32 * a2a, 1e-12, "%.12g vs %.12g", t.bwd, b + 32 * a2a);
    cr_assert_eq(t.recompute, 0.0);
    /* exactly what the scheme is charged without a row */
    cr_assert_eq(t.comm_fwd, none.comm_fwd);
    cr_assert_eq(t.comm_bwd, none.comm_bwd);
}

/* A ring of 4 with no overlap and 8 of 32 layers checkpointed, 8192 tokens: each of the 3
 * steps per layer sends the K and V of 2048 tokens (8 MiB; twice that backward) at 8 us
 * plus 370 GB/s; the recompute repeats the forward's steps. */
Test(cost_scheme_comm, ring_row_pays_every_step_and_its_recompute)
{
    vl_par p = {1, 1, 4, 8};
    vl_seg s = {0, 0, 8192};
    double S = 2048.0 * 2 * 1024 * 2, sf = 8e-6 + S / 370e9, sb = 8e-6 + 2 * S / 370e9;
    double f, b;

    with((const char *const[]){"training.sp_kind=ring", "training.overlap.cp=0",
                               "cost.schemes=[{tp: 1, pp: 1, sp: 4, a: 1e-8, b: 2e-4, c: 0.3, "
                               "comm: analytic}]", NULL});
    vl_mb_time t = vl_cost_mb_time(&cost, &s, 1, &p, 32, 0);
    row_by_hand(1e-8, 2e-4, 0.3, 8192, &f, &b);
    double rec = f * 8 / 32 + 8 * 3 * sf;
    cr_assert_float_eq(t.comm_fwd, 32 * 3 * sf, 1e-12, "%.12g", t.comm_fwd);
    cr_assert_float_eq(t.comm_bwd, 32 * 3 * sb, 1e-12, "%.12g", t.comm_bwd);
    cr_assert_float_eq(t.fwd, f + 32 * 3 * sf, 1e-12);
    cr_assert_float_eq(t.recompute, rec, 1e-12, "%.12g vs %.12g", t.recompute, rec);
    cr_assert_float_eq(t.bwd, b + rec + 32 * 3 * sb, 1e-12);
}

/* The same row without comm: analytic is the scheme's whole time, as before. */
Test(cost_scheme_comm, whole_time_row_is_unchanged)
{
    vl_par p = {1, 1, 4, 8};
    vl_seg s = {0, 0, 8192};
    double f, b;

    with((const char *const[]){"training.sp_kind=ring", "training.overlap.cp=0",
                               "cost.schemes=[{tp: 1, pp: 1, sp: 4, a: 1e-8, b: 2e-4, c: 0.3}]",
                               NULL});
    vl_mb_time t = vl_cost_mb_time(&cost, &s, 1, &p, 32, 0);
    row_by_hand(1e-8, 2e-4, 0.3, 8192, &f, &b);
    cr_assert_float_eq(t.fwd, f, 1e-15);
    cr_assert_float_eq(t.recompute, f * 8 / 32, 1e-15);
    cr_assert_float_eq(t.bwd, b + f * 8 / 32, 1e-15);
    cr_assert_eq(t.comm_fwd, 0.0);
    cr_assert_eq(t.comm_bwd, 0.0);
}

/* Skrull's placement: a sharded sequence and one local to coordinate 0 overlap the
 * ring's exposed communication with the local compute (Eq. 2) under a comm-analytic row;
 * a whole-time row is taken as it is. */
Test(cost_scheme_comm, cp_placement_is_kept_for_comm_analytic_rows)
{
    vl_par p = {1, 1, 2, 0}, one = {1, 1, 1, 0};
    vl_seg segs[] = {{0, 0, 8192}, {1, 0, 1024}}, tmp[2];
    int16_t cps[] = {VL_CP_SHARDED, 0};
    vl_pack_view pk = {segs, cps, 2, 1};
    const char *row = "cost.schemes=[{tp: 1, pp: 1, sp: 2, a: 1e-8, b: 2e-4, c: 0.3, "
                      "comm: analytic}]";

    with((const char *const[]){"training.sp_kind=ring", "training.overlap.cp=0", row, NULL});
    vl_mb_time d = vl_cost_mb_time(&cost, segs, 1, &p, 32, 0);
    vl_mb_time l = vl_cost_mb_time(&cost, segs + 1, 1, &one, 32, 0);
    vl_mb_time t = vl_cost_pack_time(&cost, &pk, &p, 32, 0, tmp);
    double want = fmax(d.comm_fwd, l.fwd) + d.fwd - d.comm_fwd;
    cr_assert_gt(d.comm_fwd, 0.0);
    cr_assert_float_eq(t.fwd, want, 1e-15, "%.12g vs %.12g", t.fwd, want);
    cr_assert_float_eq(t.bwd, fmax(d.comm_bwd, l.bwd) + d.bwd - d.comm_bwd, 1e-15);
    cr_assert_neq(t.fwd, vl_cost_mb_time(&cost, segs, 2, &p, 32, 0).fwd);

    with((const char *const[]){"cost.schemes=[{tp: 1, pp: 1, sp: 2, a: 1e-8, b: 2e-4, "
                               "c: 0.3}]", NULL});
    t = vl_cost_pack_time(&cost, &pk, &p, 32, 0, tmp);
    cr_assert_eq(t.fwd, vl_cost_mb_time(&cost, segs, 2, &p, 32, 0).fwd);
}

/* The communication as a row's terms: Ulysses over 8 is affine in the tokens, so the line
 * through 4096 and 2048 tokens is exact anywhere: per token and layer Σ w·2/8 bytes at
 * 7/8 / 370 GB/s plus 4 / 3350 GB/s, per micro-batch four 15 us latencies. */
Test(cost_scheme_comm, communication_as_row_terms)
{
    vl_par p = {1, 1, 8, 0};
    double per_tok = 0;

    with((const char *const[]){"training.sp_kind=ulysses", "training.sp=8",
                               "cost.schemes=[{tp: 1, pp: 1, sp: 8, a: 2e-8, b: 3e-4, c: 0.5, "
                               "comm: analytic}]", NULL});
    for (int i = 0; i < 4; i++)
        per_tok += (i == 0 || i == 3 ? 4096 : 1024) * 2 / 8.0 * (7.0 / 8 / 370e9 + 4 / 3350e9);
    vl_comm_line w = vl_cost_scheme_comm_line(&cost, &p, 4096);
    cr_assert_float_eq(w.bf, 32 * per_tok * 1e3, 1e-15, "%.12g", w.bf);
    cr_assert_float_eq(w.bb, w.bf, 1e-15);
    cr_assert_float_eq(w.cf, 32 * 4 * 15e-6 * 1e3, 1e-9, "%.12g", w.cf);
    cr_assert_float_eq(w.cb, w.cf, 1e-9);
    vl_seg s = {0, 0, 1000};
    vl_mb_time c = vl_cost_scheme_comm(&cost, &s, 1, &p, 32);
    cr_assert_float_eq((w.bf + w.bb) * 1000 + w.cf + w.cb, (c.fwd + c.bwd) * 1e3, 1e-9);

    with((const char *const[]){"cost.schemes=[{tp: 1, pp: 1, sp: 8, a: 2e-8, b: 3e-4, "
                               "c: 0.5}]", NULL});
    w = vl_cost_scheme_comm_line(&cost, &p, 4096);
    cr_assert(w.bf == 0 && w.bb == 0 && w.cf == 0 && w.cb == 0, "a whole row holds its own");
}
