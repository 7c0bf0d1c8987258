/* tests/model/test_cost.c -- lib/model/cost.c against docs/costmodel.md §1, §4 and §9 (the
 * derived test vectors), the fitted-curve contract the simulator relies on, and
 * monotonicity of time and memory. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "config.h"
#include "cost.h"

static vl_config cfg;
static vl_cost cost;
static vl_err err;

static void setup(void)
{
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
}

static void teardown(void)
{
    vl_config_free(&cfg);
}

TestSuite(cost, .init = setup, .fini = teardown);

/* Re-derive the cost model after changing cfg. */
static void reset(const char *const *sets)
{
    for (size_t i = 0; sets[i] != NULL; i++)
        cr_assert_eq(vl_config_set(&cfg, sets[i], &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
}

static double tflop(const vl_seg *s, size_t n)
{
    return vl_cost_fwd_flops(&cost, s, n) / 1e12;
}

Test(cost, llama3_8b_constants)
{
    cr_assert_eq(cost.lin, 436207616.0);
    cr_assert_eq(cost.acoef, 16384.0);
    cr_assert_eq(cost.head, 2.0 * 4096 * 128256);
    cr_assert_eq(cost.act_bytes, 139264.0);
    cr_assert_eq(cost.peak, 989e12);
    /* 8.03 B parameters */
    cr_assert_float_eq((32 * cost.params_layer + cost.params_embed) / 1e9, 8.03, 0.005);
}

Test(cost, pairs_of_slices)
{
    cr_assert_eq(vl_cost_pairs(0, 8192), 8192.0 * 8193 / 2);
    cr_assert_eq(vl_cost_pairs(4096, 8192), (8192.0 * 8193 - 4096.0 * 4097) / 2);
    cr_assert_eq(vl_cost_pairs(5, 5), 0);
    cr_assert_eq(vl_cost_pairs(0, 1), 1);
    /* slicing never changes the total */
    cr_assert_eq(vl_cost_pairs(0, 3000) + vl_cost_pairs(3000, 8192), vl_cost_pairs(0, 8192));
    /* no 64-bit overflow near 2^32 */
    cr_assert_float_eq(vl_cost_pairs(0, 4294967295u) / (4294967295.0 * 4294967296.0 / 2), 1,
                       1e-15);
}

Test(cost, forward_flops_vectors)
{
    vl_seg one[] = {{0, 0, 8192}};
    vl_seg two[] = {{0, 0, 4096}, {1, 0, 4096}};
    vl_seg eight[8];
    vl_seg slice[] = {{0, 4096, 4096}};

    for (uint32_t i = 0; i < 8; i++)
        eight[i] = (vl_seg){i, 0, 1024};
    cr_assert_float_eq(tflop(one, 1), 140.55, 0.01);
    cr_assert_float_eq(tflop(two, 2), 131.75, 0.01);
    cr_assert_float_eq(tflop(eight, 8), 125.16, 0.01);
    cr_assert_float_eq(tflop(slice, 1), 74.67, 0.01);
    cr_assert_float_eq(vl_cost_model_flops(&cost, one, 1) / 1e12, 421.65, 0.01);
    cr_assert_float_eq(vl_cost_model_flops(&cost, one, 1), 3 * vl_cost_fwd_flops(&cost, one, 1),
                       1);
}

Test(cost, activation_bytes)
{
    vl_par p = {1, 1, 1, 0};

    cr_assert_eq(cost.act_bytes, 139264.0);
    /* 34.0 GiB for 8K tokens over 32 layers, before act_mem_factor */
    cr_assert_float_eq(139264.0 * 32 * 8192 / 1073741824.0, 34.0, 1e-9);
    cr_assert_float_eq(vl_cost_act_bytes(&cost, 8192, &p, 32, 0),
                       139264.0 * 32 * 8192 * 1.1, 1);
    /* the last stage adds the loss's peak -- bf16 logits and their fp32 copy (5.87 GiB
     * at 8K, cost.logits_bytes 6) -- and the head input */
    cr_assert_float_eq(vl_cost_act_bytes(&cost, 8192, &p, 32, 1) -
                           vl_cost_act_bytes(&cost, 8192, &p, 32, 0),
                       (6.0 * 128256 + 4.0 * 4096) * 8192, 1);
    cr_assert_float_eq(6.0 * 128256 * 8192 / 1073741824.0, 5.87, 0.005);
}

/* ChunkFlow's state store per token: layers x 2 bytes x (K + V widths per TP rank) +
 * the 2h/tp-byte stage input, split over SP.  llama3-8b: 32 layers, 8 KV heads of 128,
 * h 4096; Qwen2.5-7B: 28 layers, 4 KV heads of 128, h 3584; DeepSeek-V2 (MLA): 60
 * layers, 128 heads, K 128 + 64, V 128, h 5120. */
Test(cost, state_store_bytes)
{
    vl_par one = {1, 1, 1, 0}, tp4 = {4, 1, 1, 0}, tp16 = {16, 1, 1, 0};
    vl_par tp4sp4 = {4, 1, 4, 0}, tp8 = {8, 1, 1, 0};

    cr_assert_eq(vl_cost_state_store_bytes(&cost, 1, &one, 32), 32 * 2 * 8 * 256 + 8192.0);
    cr_assert_eq(vl_cost_state_store_bytes(&cost, 1, &tp4, 32), 32 * 2 * 2 * 256 + 2048.0);
    /* 8 KV heads over TP 16: every rank still holds one */
    cr_assert_eq(vl_cost_state_store_bytes(&cost, 1, &tp16, 32), 32 * 2 * 1 * 256 + 512.0);
    cr_assert_eq(vl_cost_state_store_bytes(&cost, 8192, &tp4sp4, 16),
                 (16 * 2 * 2 * 256 + 2048.0) * 8192 / 4);
    /* far below what the forward would keep with every layer checkpointed */
    vl_par ck = {1, 1, 1, 32};
    cr_assert_lt(vl_cost_state_store_bytes(&cost, 8192, &one, 32),
                 0.2 * vl_cost_act_bytes(&cost, 8192, &ck, 32, 1));

    const char *qwen[] = {"model.preset=qwen2.5-7b", NULL};
    reset(qwen);
    cr_assert_eq(vl_cost_state_store_bytes(&cost, 1, &tp4, 28), 28 * 2 * 1 * 256 + 1792.0);
    const char *dsv2[] = {"model.preset=deepseek-v2", NULL};
    reset(dsv2);
    cr_assert_eq(vl_cost_state_store_bytes(&cost, 1, &tp8, 60),
                 60 * 2 * 16 * (192 + 128) + 1280.0);
}

Test(cost, per_model_constants)
{
    static const struct {
        const char *preset;
        double lin_m, two_hq, act, params_b;
    } t[] = {
        {"llama3.1-70b", 1711.3, 16384, 274432, 70.55},
        {"qwen2.5-7b", 466.1, 7168, 158720, 7.62},
        {"qwen2.5-72b", 1755.3, 16384, 279808, 72.70},
        {"llama2-7b", 404.8, 8192, 131584, 6.74},
        {"deepseek-v2", -1, -1, -1, 235.7},
    };
    char set[64];

    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *sets[] = {set, NULL};
        snprintf(set, sizeof set, "model.preset=%s", t[i].preset);
        reset(sets);
        if (t[i].lin_m > 0) {
            cr_assert_float_eq(cost.lin / 1e6, t[i].lin_m, 0.05, "%s", t[i].preset);
            cr_assert_eq(cost.acoef / 2, t[i].two_hq, "%s", t[i].preset);
            cr_assert_eq(cost.act_bytes, t[i].act, "%s", t[i].preset);
        }
        cr_assert_float_eq((cfg.model.layers * cost.params_layer + cost.params_embed) / 1e9,
                           t[i].params_b, 0.05, "%s", t[i].preset);
    }
}

Test(cost, model_states_per_zero_stage)
{
    static const struct {
        const char *zero;
        double gb;
    } t[] = {{"1", 35.1}, {"2", 19.6}, {"3", 4.0}, {"mdo", 51.2}, {"0", 128.5}};
    vl_par p = {1, 1, 1, 0};
    char set[64];

    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *sets[] = {set, NULL};
        snprintf(set, sizeof set, "training.zero=%s", t[i].zero);
        reset(sets);
        cr_assert_float_eq(vl_cost_state_bytes(&cost, &p, 32, 32, 1, 1) / 1e9, t[i].gb, 0.05,
                           "zero %s", t[i].zero);
    }
    /* d = dp * sp: 4 x Ulysses 8 shards like 32 data-parallel ranks */
    const char *two[] = {"training.zero=2", NULL};
    reset(two);
    p.sp = 8;
    cr_assert_float_eq(vl_cost_state_bytes(&cost, &p, 4, 32, 1, 1) / 1e9, 19.6, 0.05);
    /* TP splits the parameters */
    p.sp = 1;
    p.tp = 8;
    cr_assert_float_eq(vl_cost_state_bytes(&cost, &p, 32, 32, 1, 1) / 1e9, 19.6 / 8, 0.01);
}

Test(cost, memory_capacity)
{
    cr_assert_eq(vl_cost_mem_capacity(&cost), 74.0 * 1073741824.0);
}

Test(cost, fitted_linear_curve_is_exact)
{
    const char *sets[] = {"cost.fit.a=0", "cost.fit.b=1", "cost.fit.c=0", "cost.comm=off",
                          NULL};
    vl_seg s[] = {{0, 0, 4}, {1, 0, 3}};
    vl_par p = {1, 1, 1, 0};

    reset(sets);
    for (int last = 0; last < 2; last++) {
        vl_mb_time t = vl_cost_mb_time(&cost, s, 2, &p, 8, last);
        cr_assert_eq(t.fwd, 8 * 7.0, "no LM head, no fixed time, no efficiency");
        cr_assert_eq(t.bwd, 2 * t.fwd);
        cr_assert_eq(t.recompute, 0);
        cr_assert(t.comm_fwd == 0 && t.comm_bwd == 0);
    }
    cr_assert_eq(vl_cost_dp_sync_time(&cost, &p, 32, 32), 0);
    cr_assert_eq(vl_cost_comm_time(&cost, VL_COMM_AR, 1e9, 8), 0);
}

Test(cost, fitted_curve_keeps_communication_out)
{
    const char *sets[] = {"cost.fit={a: 1e-13, b: 1e-7, c: 1e-4}", "training.sp=8", NULL};
    vl_seg s[] = {{0, 0, 65536}};
    vl_par p = {1, 1, 8, 0};
    vl_mb_time t;
    double P = vl_cost_pairs(0, 65536);

    reset(sets);
    t = vl_cost_mb_time(&cost, s, 1, &p, 4, 1);
    cr_assert_float_eq(t.fwd, 4 * ((1e-13 * P + 1e-7 * 65536) / 8 + 1e-4), 1e-12);
    cr_assert_float_eq(t.bwd, 4 * ((2.5e-13 * P + 2e-7 * 65536) / 8 + 2e-4), 1e-12);
    cr_assert_eq(t.comm_fwd, 0);
}

Test(cost, analytic_time_is_plausible)
{
    vl_seg s[] = {{0, 0, 8192}};
    vl_par p = {1, 1, 1, 0};
    vl_mb_time t = vl_cost_mb_time(&cost, s, 1, &p, 32, 1);
    double mfu = vl_cost_model_flops(&cost, s, 1) / ((t.fwd + t.bwd) * cost.peak);

    /* costmodel §3: ~0.2 s forward; calibration target 40-50 % MFU before DP sync */
    cr_assert(t.fwd > 0.15 && t.fwd < 0.35, "fwd %g", t.fwd);
    cr_assert(t.bwd > 2 * t.fwd && t.bwd < 3 * t.fwd, "bwd %g fwd %g", t.bwd, t.fwd);
    cr_assert(mfu > 0.4 && mfu < 0.5, "mfu %g", mfu);
    cr_assert(t.comm_fwd == 0 && t.recompute == 0);
}

Test(cost, longer_is_slower)
{
    vl_par p = {1, 1, 1, 0};
    double prev_f = 0, prev_b = 0;

    for (uint32_t len = 64; len <= 131072; len *= 2) {
        vl_seg s[] = {{0, 0, len}};
        vl_mb_time t = vl_cost_mb_time(&cost, s, 1, &p, 32, 0);
        cr_assert(t.fwd > prev_f && t.bwd > prev_b, "len %u", len);
        prev_f = t.fwd;
        prev_b = t.bwd;
    }
    /* one long sequence costs more than the same tokens as short ones */
    vl_seg one[] = {{0, 0, 8192}}, two[] = {{0, 0, 4096}, {1, 0, 4096}};
    cr_assert_gt(vl_cost_mb_time(&cost, one, 1, &p, 32, 0).fwd,
                 vl_cost_mb_time(&cost, two, 2, &p, 32, 0).fwd);
}

Test(cost, more_sp_means_less_memory_and_compute)
{
    vl_seg s[] = {{0, 0, 65536}};
    double prev_mem = INFINITY, prev_t = INFINITY;

    for (int sp = 1; sp <= 8; sp *= 2) {
        vl_par p = {1, 1, sp, 0};
        double mem = vl_cost_act_bytes(&cost, 65536, &p, 32, 1);
        vl_mb_time t = vl_cost_mb_time(&cost, s, 1, &p, 32, 1);
        cr_assert_lt(mem, prev_mem, "sp %d", sp);
        cr_assert_lt(t.fwd - t.comm_fwd, prev_t, "sp %d", sp);
        cr_assert(sp == 1 || t.comm_fwd > 0, "Ulysses all-to-alls at sp %d", sp);
        prev_mem = mem;
        prev_t = t.fwd - t.comm_fwd;
    }
}

Test(cost, recompute_trades_memory_for_time)
{
    vl_seg s[] = {{0, 0, 16384}};
    vl_par none = {1, 1, 1, 0}, half = {1, 1, 1, 16};
    vl_mb_time a = vl_cost_mb_time(&cost, s, 1, &none, 32, 0);
    vl_mb_time b = vl_cost_mb_time(&cost, s, 1, &half, 32, 0);

    cr_assert_eq(b.fwd, a.fwd);
    cr_assert_gt(b.recompute, 0);
    cr_assert_float_eq(b.bwd - a.bwd, b.recompute, 1e-12);
    cr_assert_lt(vl_cost_act_bytes(&cost, 16384, &half, 32, 0),
                 vl_cost_act_bytes(&cost, 16384, &none, 32, 0));
    /* full: every layer keeps its 2h-byte input, plus one layer during the backward */
    vl_par full = {1, 1, 1, 32};
    cr_assert_float_eq(vl_cost_act_bytes(&cost, 1, &full, 32, 0),
                       (32 * 2 * 4096 + 139264) * 1.1, 1e-6);
    cr_assert_float_eq(vl_cost_mb_time(&cost, s, 1, &full, 32, 0).recompute, a.fwd, 1e-12);
    /* the plan's ckpt_layers, not training.recompute, says what a micro-batch recomputes:
     * a plan is costed as it would run whatever config scores it */
    const char *sets[] = {"training.recompute=full", NULL};
    reset(sets);
    cr_assert_float_eq(vl_cost_mb_time(&cost, s, 1, &none, 32, 0).recompute, 0.0, 1e-12);
}

Test(cost, ring_cp_hides_under_attention)
{
    const char *sets[] = {"training.sp=8", "training.sp_kind=ring", NULL};
    vl_seg s[] = {{0, 0, 65536}};
    vl_par p = {1, 1, 8, 0};
    vl_mb_time t;

    reset(sets);
    t = vl_cost_mb_time(&cost, s, 1, &p, 32, 0);
    cr_assert_eq(t.comm_fwd, 0, "overlap.cp = 1 and enough attention to hide behind");
    const char *less[] = {"training.overlap.cp=0", NULL};
    reset(less);
    t = vl_cost_mb_time(&cost, s, 1, &p, 32, 0);
    cr_assert_gt(t.comm_fwd, 0);
    cr_assert_gt(t.comm_bwd, t.comm_fwd);
}

Test(cost, tensor_parallel_communication)
{
    vl_seg s[] = {{0, 0, 8192}};
    vl_par p1 = {1, 1, 1, 0}, p8 = {8, 1, 1, 0};
    vl_mb_time a = vl_cost_mb_time(&cost, s, 1, &p1, 80, 0);
    vl_mb_time b = vl_cost_mb_time(&cost, s, 1, &p8, 80, 0);
    /* 2 AG + 2 RS of 8192*4096*2 bytes per layer, fully exposed (overlap.tp = 0) */
    double S = 8192.0 * 4096 * 2, one = 15e-6 + 7.0 / 8 * S / 370e9;

    cr_assert_float_eq(b.comm_fwd, 80 * 4 * one, 1e-9);
    cr_assert_lt(b.fwd, a.fwd);
}

Test(cost, collectives_alpha_beta)
{
    double S = 1e9;

    cr_assert_eq(vl_cost_comm_time(&cost, VL_COMM_AR, S, 1), 0);
    cr_assert_float_eq(vl_cost_comm_time(&cost, VL_COMM_AR, S, 8), 15e-6 + 2 * 7.0 / 8 * S / 450e9,
                       1e-12);
    cr_assert_float_eq(vl_cost_comm_time(&cost, VL_COMM_AG, S, 8), 15e-6 + 7.0 / 8 * S / 370e9,
                       1e-12);
    cr_assert_float_eq(vl_cost_comm_time(&cost, VL_COMM_P2P, S, 2), 8e-6 + S / 370e9, 1e-12);
    cr_assert_float_eq(vl_cost_comm_time(&cost, VL_COMM_P2P, S, 9), 15e-6 + S / 46e9, 1e-12);
    /* 32 contiguous ranks over 4 nodes: ring at min(370, 8 * 46 * 8 / 8) = 368 GB/s */
    cr_assert_float_eq(vl_cost_comm_time(&cost, VL_COMM_RS, S, 32),
                       30e-6 + 31.0 / 32 * S / 368e9, 1e-12);
    /* all-to-all across nodes: 24/32 of the data over one NIC share, 7/32 over NVLink */
    cr_assert_float_eq(vl_cost_comm_time(&cost, VL_COMM_A2A, S, 32),
                       30e-6 + S * 24 / 32 / 46e9 + S * 7 / 32 / 370e9, 1e-12);
    cr_assert_gt(vl_cost_comm_time(&cost, VL_COMM_AG, S, 16),
                 vl_cost_comm_time(&cost, VL_COMM_AG, S, 8));
    const char *off[] = {"cost.comm=off", NULL};
    reset(off);
    cr_assert_eq(vl_cost_comm_time(&cost, VL_COMM_AR, S, 8), 0);
}

Test(cost, dp_sync)
{
    vl_par p = {1, 1, 1, 0};
    double psi = 32 * cost.params_layer + cost.params_embed, n = 32;
    double rs = 30e-6 + (n - 1) / n * 4 * psi / 368e9;
    double ag = 30e-6 + (n - 1) / n * 2 * psi / 368e9;

    cr_assert_float_eq(vl_cost_dp_sync_time(&cost, &p, 32, 32), 0.2 * (rs + ag), 1e-9);
    cr_assert_eq(vl_cost_dp_sync_time(&cost, &p, 1, 32), 0);
    const char *hidden[] = {"training.overlap.dp=1", NULL};
    reset(hidden);
    cr_assert_eq(vl_cost_dp_sync_time(&cost, &p, 32, 32), 0);
}

/* Per ZeRO stage, 32 ranks over 4 nodes (ring at 368 GB/s, alpha 30 us), the default
 * llama3.1-8b with pp 1 (psi parameters): what is reduced and gathered, how many bytes,
 * and when. */
Test(cost, dp_sync_per_zero_stage)
{
    vl_par p = {1, 1, 1, 0};
    double psi = 32 * cost.params_layer + cost.params_embed, n = 32;
    double ar = 30e-6 + 2 * (n - 1) / n * 4 * psi / 368e9;   /* fp32 gradients all-reduced */
    double rs = 30e-6 + (n - 1) / n * 4 * psi / 368e9;       /* ... reduce-scattered */
    double ag = 30e-6 + (n - 1) / n * 2 * psi / 368e9;       /* bf16 parameters gathered */
    const char *z0[] = {"training.zero=0", NULL}, *z1[] = {"training.zero=1", NULL};
    const char *z3[] = {"training.zero=3", NULL}, *mdo[] = {"training.zero=mdo", NULL};
    const char *g2[] = {"training.grad_bytes=2", NULL};

    /* ZeRO-2 (the default): a reduce-scatter, then one gather after the step */
    cr_assert_float_eq(vl_cost_dp_grad_time(&cost, &p, 32, 32), rs, 1e-12);
    cr_assert_float_eq(vl_cost_dp_param_time(&cost, &p, 32, 32), ag, 1e-12);
    cr_assert_eq(vl_cost_z3_gather_time(&cost, &p, 32), 0);
    cr_assert_float_eq(vl_cost_dp_exposed(&cost, rs, ag), 0.2 * (rs + ag), 1e-12);
    /* the reduction hides behind the backward it overlaps, never more than it lasts */
    cr_assert_float_eq(vl_cost_dp_grad_exposed(&cost, rs, 1.0), 0.2 * rs, 1e-12);
    cr_assert_float_eq(vl_cost_dp_grad_exposed(&cost, rs, 0.8 * rs), 0.2 * rs, 1e-12);
    cr_assert_float_eq(vl_cost_dp_grad_exposed(&cost, rs, 0.010), rs - 0.010, 1e-12);
    cr_assert_float_eq(vl_cost_dp_grad_exposed(&cost, rs, 0.0), rs, 1e-12);
    reset(z0);   /* nothing sharded: an all-reduce, no gather */
    cr_assert_float_eq(vl_cost_dp_grad_time(&cost, &p, 32, 32), ar, 1e-12);
    cr_assert_eq(vl_cost_dp_param_time(&cost, &p, 32, 32), 0);
    reset(z1);
    cr_assert_float_eq(vl_cost_dp_grad_time(&cost, &p, 32, 32), rs, 1e-12);
    cr_assert_float_eq(vl_cost_dp_param_time(&cost, &p, 32, 32), ag, 1e-12);
    reset(mdo);
    cr_assert_float_eq(vl_cost_dp_param_time(&cost, &p, 32, 32), ag, 1e-12);
    /* ZeRO-3: no gather after the step; every micro-batch gathers for its forward and
     * again for its backward (cfg.training.dp 32 with sp 1: the same 32 ranks) */
    reset(z3);
    cr_assert_float_eq(vl_cost_dp_grad_time(&cost, &p, 32, 32), rs, 1e-12);
    cr_assert_eq(vl_cost_dp_param_time(&cost, &p, 32, 32), 0);
    cr_assert_float_eq(vl_cost_z3_gather_time(&cost, &p, 32), 0.2 * ag, 1e-12);
    vl_seg seg = {0, 0, 4096};
    vl_mb_time t3 = vl_cost_mb_time(&cost, &seg, 1, &p, 32, 1);
    const char *z2[] = {"training.zero=2", NULL};
    reset(z2);
    vl_mb_time t2 = vl_cost_mb_time(&cost, &seg, 1, &p, 32, 1);
    cr_assert_float_eq(t3.fwd - t2.fwd, 0.2 * ag, 1e-12);
    cr_assert_float_eq(t3.bwd - t2.bwd, 0.2 * ag, 1e-12);
    /* bf16 gradients halve the reduction's bytes */
    reset(g2);
    cr_assert_float_eq(vl_cost_dp_grad_time(&cost, &p, 32, 32),
                       30e-6 + (n - 1) / n * 2 * psi / 368e9, 1e-12);
}

/* The optimizer step reads and writes every state byte once at HBM bandwidth (3,350 GB/s
 * on an H100), after its fixed cost. */
Test(cost, optimizer_step)
{
    const char *fixed[] = {"cost.optimizer_fixed_ms=5", NULL};

    cr_assert_float_eq(vl_cost_optimizer_time(&cost, 20e9), 1e-3 + 2 * 20e9 / 3350e9, 1e-12);
    reset(fixed);
    cr_assert_float_eq(vl_cost_optimizer_time(&cost, 0), 5e-3, 1e-15);
}

Test(cost, curve_eval)
{
    const vl_curve *c = &cfg.cluster.gemm_eff;
    vl_curve empty = {0};

    cr_assert_eq(vl_curve_eval(c, 128, VL_WORK_LINEAR), 0.35);
    cr_assert_eq(vl_curve_eval(c, 1024, VL_WORK_LINEAR), 0.68);
    cr_assert_eq(vl_curve_eval(c, 1e9, VL_WORK_LINEAR), 0.78);
    cr_assert_float_eq(vl_curve_eval(c, sqrt(1024.0 * 2048), VL_WORK_LINEAR),
                       (0.68 + 0.74) / 2, 1e-12);
    cr_assert_eq(vl_curve_eval(&empty, 100, VL_WORK_LINEAR), 1.0);
    /* vl_cost_init keeps log2 of every point for the cost model's own lookups */
    for (int i = 0; i < c->n; i++) {
        cr_assert_eq(cost.lx_gemm[i], log2(c->x[i]));
        cr_assert_eq(cost.lx_attn_fwd[i], log2(cfg.cluster.attn_fwd_eff.x[i]));
    }
}

/* The cached curve lookups inside vl_cost_mb_time give bit-identical times to
 * vl_curve_eval: rebuild the forward of one whole sample (no SP, so the attention sees
 * its own length) from the public curve lookup and compare exactly. */
Test(cost, cached_curves_match_curve_eval)
{
    const vl_cluster_cfg *cl = &cfg.cluster;
    vl_par p = {1, 1, 1, 0};
    const char *nofix[] = {"cluster.layer_fixed_us.fwd=0", "cluster.elementwise_overhead=0",
                           "cost.comm=off", NULL};

    reset(nofix);
    for (uint32_t len = 1; len < 300000; len = len * 3 / 2 + 1) {
        vl_seg s[] = {{0, 0, len}};
        double P = vl_cost_pairs(0, len), x = sqrt(2 * P);
        double att = cost.acoef * P /
                     (cost.peak * vl_curve_eval(&cl->attn_fwd_eff, x, VL_WORK_QUADRATIC));
        double lin = cost.lin * len /
                     (cost.peak * vl_curve_eval(&cl->gemm_eff, len, VL_WORK_LINEAR));
        vl_mb_time t = vl_cost_mb_time(&cost, s, 1, &p, 1, 0);
        cr_assert_eq(t.fwd, lin + att, "len %u", len);
    }
}

/* The same for the backward, with attention curves whose points differ (the forward's
 * piece cannot stand for the backward's) and with the points shared. */
Test(cost, cached_bwd_curves_match_curve_eval)
{
    const vl_cluster_cfg *cl = &cfg.cluster;
    vl_par p = {1, 1, 1, 0};
    const char *own[] = {"cluster.layer_fixed_us.fwd=0", "cluster.layer_fixed_us.bwd=0",
                         "cluster.elementwise_overhead=0", "cost.comm=off",
                         "cluster.attn_bwd_eff=[[300,0.2],[700,0.3],[3000,0.45],[9000,0.5],"
                         "[20000,0.55]]", NULL};
    const char *shared[] = {"cluster.attn_bwd_eff=[[512,0.25],[1024,0.35],[2048,0.45],"
                            "[4096,0.5],[8192,0.52],[16384,0.55]]", NULL};

    for (int k = 0; k < 2; k++) {
        reset(k == 0 ? own : shared);
        cr_assert_eq(cost.attn_same_x, k == 1);
        for (uint32_t len = 1; len < 300000; len = len * 5 / 4 + 1) {
            vl_seg s[] = {{0, 0, len}};
            double P = vl_cost_pairs(0, len), x = sqrt(2 * P);
            double att = cfg.cost.bwd_attn * cost.acoef * P /
                         (cost.peak * vl_curve_eval(&cl->attn_bwd_eff, x, VL_WORK_QUADRATIC));
            double lin = cost.lin * len /
                         (cost.peak * vl_curve_eval(&cl->gemm_eff, len, VL_WORK_LINEAR));
            vl_mb_time t = vl_cost_mb_time(&cost, s, 1, &p, 1, 0);
            cr_assert_eq(t.bwd, cfg.cost.bwd_linear * lin + att, "curves %d, len %u", k, len);
        }
    }
}

Test(cost, empty_micro_batch)
{
    vl_par p = {1, 1, 1, 0};
    vl_mb_time t = vl_cost_mb_time(&cost, NULL, 0, &p, 32, 1);

    cr_assert(t.fwd == 0 && t.bwd == 0);
    cr_assert_eq(vl_cost_fwd_flops(&cost, NULL, 0), 0);
}

Test(cost, init_rejects_unusable_shape)
{
    vl_config bad = cfg;
    vl_cost c;

    bad.raw = NULL;
    bad.model.layers = 0;
    cr_assert_eq(vl_cost_init(&c, &bad, &err), VL_ECONFIG);
}

/* recompute: auto rests on this: more checkpointed layers never need more memory, and
 * the count returned is the first that fits. */
Test(cost, fewest_ckpt_is_the_first_count_that_fits)
{
    vl_par par = {.tp = 1, .pp = 1, .sp = 1, .ckpt_layers = 0};
    double cap = vl_cost_mem_capacity(&cost);

    /* 8K tokens of llama3.1-8b fit without checkpointing; 16K need some; 1M never */
    cr_assert_eq(vl_cost_fewest_ckpt(&cost, 8192, &par, 32, 1), 0);
    int k = vl_cost_fewest_ckpt(&cost, 16384, &par, 32, 1);
    cr_assert_gt(k, 0);
    cr_assert_leq(k, cfg.model.layers);
    vl_par q = par;
    q.ckpt_layers = k;
    cr_assert_leq(vl_cost_rank_peak_bytes(&cost, 16384, &q, 32, 1), cap);
    q.ckpt_layers = k - 1;
    cr_assert_gt(vl_cost_rank_peak_bytes(&cost, 16384, &q, 32, 1), cap);
    cr_assert_eq(vl_cost_fewest_ckpt(&cost, 1u << 20, &par, 32, 1), -1);
    /* the stage split matches the simulator's: 32 layers on 3 stages = 11, 11, 10 */
    cr_assert_eq(vl_cost_stage_layers(&cost, 3, 0), 11);
    cr_assert_eq(vl_cost_stage_layers(&cost, 3, 2), 10);
}

/* Ulysses per layer and way: four all-to-alls (Q, K, V, O) of T/sp tokens' rows, each
 * with a latency, (n-1)/n of its bytes over NVLink and 4 S bytes of rearranging
 * through device memory.  Llama3-8B: 32 heads x 128, 8 KV heads x 128. */
Test(cost, ulysses_all_to_all_and_rearranging)
{
    const char *sets[] = {"training.sp=2", "training.sp_kind=ulysses", NULL};
    vl_seg s[] = {{0, 0, 32768}};
    vl_par p = {1, 1, 2, 0};
    double rows = 16384, want = 0;
    const double w[4] = {4096, 1024, 1024, 4096};

    reset(sets);
    for (int i = 0; i < 4; i++) {
        double S = rows * w[i] * 2;
        want += 15e-6 + 0.5 * S / 370e9 + 4 * S / 3350e9;
    }
    vl_mb_time t = vl_cost_mb_time(&cost, s, 1, &p, 32, 0);
    cr_assert_float_eq(t.comm_fwd, 32 * want, 1e-9, "%g vs %g", t.comm_fwd, 32 * want);
    cr_assert_float_eq(t.comm_bwd, t.comm_fwd, 1e-12);
}

/* A TP shard's GEMMs are as efficient as a full-width GEMM of the same work: 2048 tokens
 * under TP 4 x SP 4 are looked up at 128 tokens, not at 512 (the T/sp of the past).  Two
 * GEMM curves that agree at 512 and differ at 128 tell the lookups apart. */
static double fwd_under(const char *curve, const vl_par *p)
{
    const char *sets[] = {curve, "training.sp_kind=ring", NULL};
    vl_seg s[] = {{0, 0, 2048}};

    reset(sets);
    return vl_cost_mb_time(&cost, s, 1, p, 32, 0).fwd;
}

Test(cost, gemm_efficiency_per_tensor_parallel_shard)
{
    const char *flat = "cluster.gemm_eff=[[128,0.5],[512,0.5]]";
    const char *steep = "cluster.gemm_eff=[[128,0.25],[512,0.5]]";
    vl_par shard = {4, 1, 4, 0}, sp_only = {1, 1, 4, 0};

    cr_assert_float_eq(fwd_under(steep, &sp_only), fwd_under(flat, &sp_only), 1e-15,
                       "no TP: 512 tokens per GPU either way");
    cr_assert_gt(fwd_under(steep, &shard), 1.05 * fwd_under(flat, &shard),
                 "TP 4: 128 tokens' worth of GEMM per GPU, at half the efficiency");
}
