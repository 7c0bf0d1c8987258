/* tests/model/test_cost_shard.c -- no free shards (lib/model/cost.c): below a curve's first point
 * efficiency follows the launch-bound model (a fixed cost plus work-proportional time),
 * so halving a short shard never halves its time; a ring pays its per-step latency on
 * every step, Ulysses its four all-to-alls at their own message sizes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "cost_fixture.h"

TestSuite(cost_shard, .init = setup, .fini = teardown);

Test(cost_shard, below_the_first_point_by_hand)
{
    with((const char *const[]){NULL});
    const vl_curve *g = &cfg.cluster.gemm_eff, *a = &cfg.cluster.attn_fwd_eff;

    /* h100_gemm: 0.35 at 128, 0.50 at 256: alpha = 2 (1 - 0.7) / 1 = 0.6; at 64 tokens
     * u = 1/2, 0.35 * 0.5 / (0.6 + 0.4 * 0.5) = 0.21875 */
    cr_assert_float_eq(vl_curve_eval(g, 64, VL_WORK_LINEAR), 0.21875, 1e-12);
    /* h100_fa3_causal forward: 0.295 at 512, 0.428 at 1K, r = 4: alpha = 4 (1 -
     * 0.295/0.428) / 3; at 256 u = 1/4 */
    double al = 4 * (1 - 0.295 / 0.428) / 3;
    cr_assert_float_eq(vl_curve_eval(a, 256, VL_WORK_QUADRATIC),
                       0.295 * 0.25 / (al + (1 - al) * 0.25), 1e-12);
    /* continuous at the first point, falling to 0 toward no work */
    cr_assert_float_eq(vl_curve_eval(g, 128 * (1 - 1e-12), VL_WORK_LINEAR), 0.35, 1e-9);
    cr_assert_float_eq(vl_curve_eval(g, 1, VL_WORK_LINEAR),
                       0.35 / 128 / (0.6 + 0.4 / 128), 1e-12);
    /* time = work / efficiency tends to alpha times the time at 128 tokens */
    double t128 = 128 / 0.35, t1 = 1 / vl_curve_eval(g, 1, VL_WORK_LINEAR);
    cr_assert_float_eq(t1 / t128, 0.6 + 0.4 / 128, 1e-9);
}

Test(cost_shard, a_curve_without_a_rising_first_piece_is_held)
{
    vl_curve one = {.n = 1, .x = {128}, .y = {0.4}};
    vl_curve flat = {.n = 2, .x = {128, 256}, .y = {0.4, 0.4}};
    vl_curve falls = {.n = 2, .x = {128, 256}, .y = {0.5, 0.4}};

    cr_assert_eq(vl_curve_eval(&one, 16, VL_WORK_LINEAR), 0.4);
    cr_assert_float_eq(vl_curve_eval(&flat, 16, VL_WORK_LINEAR), 0.4, 1e-12);
    cr_assert_float_eq(vl_curve_eval(&falls, 16, VL_WORK_QUADRATIC), 0.5, 1e-12);
}

/* Halve the work of one GPU and the curves say it takes more than half the time, all
 * the way down from the last point, for every built-in curve (the clamp made these
 * exact halves below the first point). */
Test(cost_shard, halving_work_never_halves_time_on_any_builtin_curve)
{
    static const char *const gpus[] = {"h100-80gb", "a100-80gb"};
    static const char *const attn[] = {"h100_fa3_causal", "h100_fa2_causal",
                                       "h100_cudnn_causal", "a100_fa2_causal"};
    char set[64];

    for (int i = 0; i < 2; i++) {
        snprintf(set, sizeof set, "cluster.gpu=%s", gpus[i]);
        with((const char *const[]){set, NULL});
        const vl_curve *g = &cfg.cluster.gemm_eff;
        for (double x = 2; x <= g->x[g->n - 1]; x *= 2) {
            double full = x / vl_curve_eval(g, x, VL_WORK_LINEAR);
            double half = x / 2 / vl_curve_eval(g, x / 2, VL_WORK_LINEAR);
            cr_assert_gt(half, 0.5 * full * (1 + 1e-6), "%s gemm at %g", gpus[i], x);
        }
    }
    for (int i = 0; i < 4; i++) {
        snprintf(set, sizeof set, "cluster.attn_fwd_eff=%s", attn[i]);
        with((const char *const[]){set, NULL});
        /* a ring shard: half the length, half the pairs per GPU */
        for (double x = 4; x <= 16384; x *= 2) {
            const vl_curve *a = &cfg.cluster.attn_fwd_eff;
            double full = x * x / vl_curve_eval(a, x, VL_WORK_QUADRATIC);
            double half = x * x / 2 / vl_curve_eval(a, x / 2, VL_WORK_QUADRATIC);
            cr_assert_gt(half, 0.5 * full * (1 + 1e-6), "%s at %g", attn[i], x);
        }
    }
}

/* The cost model end to end: one short sequence over a ring of k and of 2k GPUs, compute
 * only (no fixed layer time, no communication): the 2k shard takes more than half. */
Test(cost_shard, halving_a_short_ring_shard_never_halves_its_time)
{
    with((const char *const[]){"training.sp_kind=ring", "cost.comm=off",
                               "cluster.layer_fixed_us.fwd=0", "cluster.layer_fixed_us.bwd=0",
                               NULL});
    for (uint32_t len = 64; len <= 4096; len *= 2) {
        vl_seg s = {0, 0, len};
        for (int sp = 1; sp <= 8; sp *= 2) {
            vl_par k = {1, 1, sp, 0}, k2 = {1, 1, 2 * sp, 0};
            vl_mb_time a = vl_cost_mb_time(&cost, &s, 1, &k, 32, 0);
            vl_mb_time b = vl_cost_mb_time(&cost, &s, 1, &k2, 32, 0);
            cr_assert_gt(b.fwd, 0.5 * a.fwd * (1 + 1e-6), "len %u sp %d", len, sp);
            cr_assert_gt(b.bwd, 0.5 * a.bwd * (1 + 1e-6), "len %u sp %d", len, sp);
        }
    }
}

/* With overlap.cp 0 nothing hides: each of the sp - 1 steps pays its latency and its
 * bytes, per layer and direction (KV forward, KV + dKV backward). */
Test(cost_shard, a_ring_pays_every_step)
{
    with((const char *const[]){"training.sp_kind=ring", "training.overlap.cp=0", NULL});
    vl_seg s = {0, 0, 8192};
    vl_par p = {1, 1, 8, 0};
    vl_mb_time t = vl_cost_mb_time(&cost, &s, 1, &p, 32, 0);
    /* 1024 tokens per GPU, K and V of 8 heads x 128 in bf16: 4 MiB per step, NVLink */
    double S = 1024.0 * 2 * 1024 * 2;

    cr_assert_float_eq(t.comm_fwd, 32 * 7 * (8e-6 + S / 370e9), 1e-12);
    cr_assert_float_eq(t.comm_bwd, 32 * 7 * (8e-6 + 2 * S / 370e9), 1e-12);
}

/* A short sequence on a ring: each step's attention block (launch-bound, about 3 us
 * for a 32-token block of llama3.1-8b) is shorter than the step's 8 us latency, so
 * every one of the 7 steps per layer leaves most of its latency exposed even at
 * overlap.cp 1; a long sequence hides them all. */
Test(cost_shard, a_short_ring_cannot_hide_its_latency)
{
    with((const char *const[]){"training.sp_kind=ring", "training.overlap.cp=1", NULL});
    vl_par p = {1, 1, 8, 0};
    vl_seg shortseq = {0, 0, 256}, longseq = {0, 0, 65536};
    vl_mb_time a = vl_cost_mb_time(&cost, &shortseq, 1, &p, 32, 0);
    vl_mb_time b = vl_cost_mb_time(&cost, &longseq, 1, &p, 32, 0);

    cr_assert_gt(a.comm_fwd, 32 * 7 * 8e-6 * 0.5, "%g", a.comm_fwd);
    cr_assert_leq(a.comm_fwd, 32 * 7 * (8e-6 + 256.0 / 8 * 4096 / 370e9));
    cr_assert_eq(b.comm_fwd, 0.0);
}

/* Ulysses: per layer and direction four all-to-alls (Q, K, V, O), each with its latency
 * at its own size, plus the rearranging passes (4 bytes of HBM traffic per byte). */
Test(cost_shard, ulysses_pays_four_all_to_alls_at_their_sizes)
{
    with((const char *const[]){"training.sp_kind=ulysses", "training.sp=8", NULL});
    vl_par p = {1, 1, 8, 0};
    vl_seg s = {0, 0, 512};
    vl_mb_time t = vl_cost_mb_time(&cost, &s, 1, &p, 32, 0);
    double rows = 512.0 / 8, q = rows * 4096 * 2, kv = rows * 1024 * 2;
    double a2a = 0;

    for (int i = 0; i < 4; i++) {
        double S = i == 0 || i == 3 ? q : kv;
        a2a += 15e-6 + 7.0 / 8 * S / 370e9 + 4 * S / 3350e9;
    }
    cr_assert_float_eq(t.comm_fwd, 32 * a2a, 1e-12);
    cr_assert_float_eq(t.comm_bwd, 32 * a2a, 1e-12);
}
