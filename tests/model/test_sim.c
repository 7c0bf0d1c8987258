/* tests/model/test_sim.c -- the DAG pipeline simulator (docs/decisions.md §6) on a cost linear in tokens
 * (sim_fixture.h); explicit lists on any depth are in test_sim_lists.c.
 *
 * Setup: fitted curve a = 0, b = 1 s per token per layer, c = 0, no communication,
 * 4 layers on pp = 4 stages (one each), a "unit" = 1 token.  So on every stage the
 * forward of an m-unit micro-batch takes m seconds and its backward 2m.
 *
 * 1F1B orders (stage s runs W = pp-1-s warm-up forwards, then one F one B, then the
 * cool-down backwards), 4 micro-batches on 4 stages:
 *   s0: F0 F1 F2 F3 B0 B1 B2 B3        s2: F0 F1 B0 F2 B1 F3 B2 B3
 *   s1: F0 F1 F2 B0 F3 B1 B2 B3        s3: F0 B0 F1 B1 F2 B2 F3 B3
 * Every stage is busy Σ3m; bubble = Σ_s (makespan − busy) / (makespan · pp).
 *
 * (a) 4 equal micro-batches of 1 unit: the first forward reaches s3 at 3, and from
 *     there the critical path is the p − 1 = 3 forward/backward pairs of the fill and
 *     drain plus the m = 4 pairs of the last stage: makespan = (m + p − 1)(1 + 2) = 21,
 *     busy = 4·3 = 12, bubble = 4·9 / (4·21) = 3/7 (Narayanan's (p−1)/(m+p−1)).
 * (b) ChunkFlow figure 2, micro-batches of 4, 1, 2, 1 units in that order, busy 24:
 *     s0 F0 [0,4] F1 [4,5] F2 [5,7] F3 [7,8];  s1 F0 [4,8] F1 [8,9] F2 [9,11];
 *     s2 F0 [8,12] F1 [12,13];  s3 F0 [12,16] B0 [16,24] F1 [24,25] B1 [25,27];
 *     s2 B0 [24,32] F2 [32,34] B1 [34,36];  s1 B0 [32,40] F3 [40,41] B1 [41,43];
 *     s3 F2 [34,36] B2 [36,40];  s2 F3 [41,42];  s3 F3 [42,43] B3 [43,45];
 *     s2 B2 [42,46] B3 [46,48];  s1 B2 [46,50] B3 [50,52];
 *     s0 B0 [40,48] B1 [48,50] B2 [50,54] B3 [54,56]:  makespan 56,
 *     bubble = 4·(56 − 24) / (4·56) = 32/56 = 4/7 = 57.14 %, as the paper reports.
 * (c) two equal chunks of 4 units (ChunkSize = 4 on the same sequences), busy 24:
 *     makespan = (2 + 3)(4 + 8) = 60, bubble = (60 − 24)/60 = 3/5 = 60 %. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"

static void begin_rank(fx *f, int pp)
{
    vl_par par = {.tp = 1, .pp = pp, .sp = 1, .ckpt_layers = 0};
    cr_assert_eq(vl_plan_rank_begin(&f->p, 0, &par, &f->err), VL_OK);
}

/* A micro-batch holding one whole fresh sample of `units` tokens. */
static void whole_mb(fx *f, uint32_t units)
{
    cr_assert_eq(vl_plan_mb_begin(&f->p, units, &f->err), VL_OK);
    f->len[f->next] = units;
    cr_assert_eq(vl_plan_seg(&f->p, f->next++, 0, units, &f->err), VL_OK);
}

/* One iteration, one rank of pp stages, micro-batches of the given sizes. */
static void one_rank(fx *f, int pp, const uint32_t *units, size_t n)
{
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    begin_rank(f, pp);
    for (size_t i = 0; i < n; i++)
        whole_mb(f, units[i]);
}

static vl_sim_iter_result sim(fx *f, vl_sched sched, vl_sim_trace *t)
{
    vl_sim_opts o = {.sched = sched};
    vl_sim_iter_result r;
    cr_assert_eq(vl_sim_iter(&f->p, 0, &f->c, &o, &r, NULL, t, &f->err), VL_OK, "%s",
                 f->err.msg);
    return r;
}

static const vl_sim_task *find(const vl_sim_trace *t, uint32_t s, int kind, uint32_t mb)
{
    for (size_t i = 0; i < t->ntasks; i++)
        if (t->tasks[i].stage == s && t->tasks[i].kind == kind && t->tasks[i].mb == mb)
            return &t->tasks[i];
    cr_assert_fail("no task %d/%u on stage %u", kind, mb, s);
    return NULL;
}

Test(sim, bubble_equal_microbatches_is_3_over_7)
{
    fx f;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){1, 1, 1, 1}, 4);
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, NULL);
    cr_assert_float_eq(r.bubble, 3.0 / 7.0, EPS, "bubble %g", r.bubble);
    cr_assert_float_eq(r.makespan_ms, 21000.0, 1e-6);
    cr_assert_float_eq(r.iter_time_ms, r.makespan_ms + r.sync_ms + r.optimizer_ms, 1e-6);
    cr_assert_eq(r.tokens, 4);
    cr_assert_eq(r.gpus, 4);
    fx_fini(&f);
}

/* The stage orders of the file comment, read back from the trace. */
Test(sim, orders_1f1b_per_stage)
{
    static const char *const want[] = {"F0F1F2F3B0B1B2B3", "F0F1F2B0F3B1B2B3",
                                       "F0F1B0F2B1F3B2B3", "F0B0F1B1F2B2F3B3"};
    fx f;
    vl_sim_trace t = {0};
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){4, 1, 2, 1}, 4);
    sim(&f, VL_SCHED_1F1B, &t);
    for (uint32_t s = 0; s < 4; s++) {
        char got[64] = "";
        size_t n = 0;
        for (size_t i = 0; i < t.ntasks && n + 3 < sizeof got; i++)
            if (t.tasks[i].stage == s && t.tasks[i].kind <= VL_TASK_B)
                n += (size_t)snprintf(got + n, sizeof got - n, "%c%u",
                                      "FRB"[t.tasks[i].kind], t.tasks[i].mb);
        cr_assert_str_eq(got, want[s], "stage %u", s);
    }
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

Test(sim, bubble_chunkflow_figure2_is_4_over_7)
{
    fx f;
    vl_sim_trace t = {0};
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){4, 1, 2, 1}, 4);
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, &t);
    cr_assert_float_eq(r.bubble, 4.0 / 7.0, EPS, "bubble %g", r.bubble);
    cr_assert_float_eq(r.makespan_ms, 56000.0, 1e-6);
    /* spot checks of the hand schedule in the file comment */
    cr_assert_float_eq(find(&t, 3, VL_TASK_B, 0)->start, 16.0, EPS);
    cr_assert_float_eq(find(&t, 1, VL_TASK_F, 3)->start, 40.0, EPS);
    cr_assert_float_eq(find(&t, 0, VL_TASK_B, 3)->end, 56.0, EPS);
    cr_assert_eq(t.nlanes, 4);
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

Test(sim, bubble_two_equal_chunks_is_3_over_5)
{
    fx f;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){4, 4}, 2);
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, NULL);
    cr_assert_float_eq(r.bubble, 3.0 / 5.0, EPS, "bubble %g", r.bubble);
    cr_assert_float_eq(r.makespan_ms, 60000.0, 1e-6);
    fx_fini(&f);
}

/* Equal micro-batches: GPipe's fill and drain cost the same (m + p − 1)(f + b) as
 * 1F1B, but every stage holds all m activations instead of min(m, pp − s). */
Test(sim, gpipe_vs_1f1b_equal_microbatches)
{
    fx f;
    vl_sim_trace t1 = {0}, tg = {0};
    static const uint32_t eight[] = {1, 1, 1, 1, 1, 1, 1, 1};
    fx_init(&f, 4);
    one_rank(&f, 4, eight, 8);
    vl_sim_iter_result a = sim(&f, VL_SCHED_1F1B, &t1), b = sim(&f, VL_SCHED_GPIPE, &tg);
    cr_assert_float_eq(a.makespan_ms, 33000.0, 1e-6);
    cr_assert_float_eq(b.makespan_ms, 33000.0, 1e-6);
    cr_assert_float_eq(a.bubble, 3.0 / 11.0, EPS);
    cr_assert_float_eq(b.bubble, 3.0 / 11.0, EPS);
    for (int l = 0; l < 4; l++) {
        vl_par par = {.tp = 1, .pp = 4, .sp = 1};
        double one = vl_cost_act_bytes(&f.c, 1, &par, 1, l == 3);
        cr_assert_float_eq(tg.lanes[l].act_peak / one, 8.0, 1e-9, "lane %d", l);
        cr_assert_float_eq(t1.lanes[l].act_peak / one, 4.0 - l, 1e-9, "lane %d", l);
    }
    cr_assert(b.peak_mem_gib > a.peak_mem_gib);
    vl_sim_trace_free(&t1);
    vl_sim_trace_free(&tg);
    fx_fini(&f);
}

/* In-flight activations on stage s under 1F1B: min(m, pp − s) micro-batches. */
static void check_inflight(uint32_t nmb)
{
    fx f;
    vl_sim_trace t = {0};
    uint32_t units[16];
    for (uint32_t i = 0; i < nmb; i++)
        units[i] = 3;
    fx_init(&f, 4);
    one_rank(&f, 4, units, nmb);
    sim(&f, VL_SCHED_1F1B, &t);
    cr_assert_eq(t.nlanes, 4);
    for (uint32_t s = 0; s < 4; s++) {
        vl_par par = {.tp = 1, .pp = 4, .sp = 1};
        double one = vl_cost_act_bytes(&f.c, 3, &par, 1, s == 3);
        double want = (double)(nmb < 4 - s ? nmb : 4 - s);
        cr_assert_float_eq(t.lanes[s].act_peak / one, want, 1e-9, "m %u stage %u: %g", nmb,
                           s, t.lanes[s].act_peak / one);
        cr_assert(t.lanes[s].states > 0.0);
    }
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

Test(sim, memory_1f1b_inflight_is_min_m_pp_minus_s)
{
    check_inflight(8);
    check_inflight(2);
    check_inflight(4);
}

Test(sim, explicit_all_forwards_then_backwards_equals_gpipe)
{
    fx f, g;
    vl_sim_trace tf = {0}, tg = {0};
    static const uint32_t u[] = {4, 1, 2, 1};
    fx_init(&f, 4);
    one_rank(&f, 4, u, 4);
    fx_ops(&f, "F0 F1 F2 F3 B3 B2 B1 B0");
    fx_init(&g, 4);
    one_rank(&g, 4, u, 4);
    vl_sim_iter_result a = sim(&f, VL_SCHED_1F1B, &tf), b = sim(&g, VL_SCHED_GPIPE, &tg);
    cr_assert_float_eq(a.makespan_ms, b.makespan_ms, 1e-9);
    cr_assert_float_eq(a.bubble, b.bubble, 1e-12);
    cr_assert_eq(tf.ntasks, tg.ntasks);
    for (size_t i = 0; i < tf.ntasks; i++) {
        cr_assert_eq(tf.tasks[i].kind, tg.tasks[i].kind);
        cr_assert_eq(tf.tasks[i].mb, tg.tasks[i].mb);
        cr_assert_float_eq(tf.tasks[i].start, tg.tasks[i].start, 1e-12);
    }
    for (size_t l = 0; l < 4; l++)
        cr_assert_float_eq(tf.lanes[l].act_peak, tg.lanes[l].act_peak, 1e-6);
    /* the plan's order wins over opts.sched unless ignore_ops */
    vl_sim_opts o = {.sched = VL_SCHED_1F1B, .ignore_ops = true};
    vl_sim_iter_result c;
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, &o, &c, NULL, NULL, &f.err), VL_OK);
    cr_assert_float_eq(c.bubble, 4.0 / 7.0, EPS);
    vl_sim_trace_free(&tf);
    vl_sim_trace_free(&tg);
    fx_fini(&f);
    fx_fini(&g);
}

Test(sim, explicit_1f1b_list_equals_default)
{
    fx f;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){4, 1, 2, 1}, 4);
    fx_ops(&f, "F0 B0 F1 B1 F2 B2 F3 B3");
    vl_sim_iter_result r = sim(&f, VL_SCHED_GPIPE, NULL);   /* sched ignored */
    cr_assert_float_eq(r.bubble, 4.0 / 7.0, EPS);
    fx_fini(&f);
}

/* A sample in three slices (micro-batches 0, 1, 2) plus a whole sample (3): forwards
 * in slice order, backwards in reverse slice order on every stage. */
static void sliced_rank(fx *f)
{
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    begin_rank(f, 4);
    f->len[0] = 6;
    for (uint32_t k = 0; k < 3; k++) {
        cr_assert_eq(vl_plan_mb_begin(&f->p, 2, &f->err), VL_OK);
        cr_assert_eq(vl_plan_seg(&f->p, 0, 2 * k, 2, &f->err), VL_OK);
    }
    f->next = 1;
    whole_mb(f, 2);
}

Test(sim, slices_keep_causal_order)
{
    fx f;
    vl_sim_trace t = {0};
    fx_init(&f, 4);
    sliced_rank(&f);
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, &t);
    for (uint32_t s = 0; s < 4; s++) {
        cr_assert_leq(find(&t, s, VL_TASK_F, 0)->end, find(&t, s, VL_TASK_F, 1)->start);
        cr_assert_leq(find(&t, s, VL_TASK_F, 1)->end, find(&t, s, VL_TASK_F, 2)->start);
        cr_assert_leq(find(&t, s, VL_TASK_B, 2)->end, find(&t, s, VL_TASK_B, 1)->start);
        cr_assert_leq(find(&t, s, VL_TASK_B, 1)->end, find(&t, s, VL_TASK_B, 0)->start);
    }
    cr_assert(r.bubble > 0.0 && r.bubble < 1.0);
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

Test(sim, explicit_order_against_slices_deadlocks)
{
    fx f;
    vl_sim_iter_result r;
    fx_init(&f, 4);
    sliced_rank(&f);
    fx_ops(&f, "F0 B0 F1 B1 F2 B2 F3 B3");    /* B0 before B1 breaks the slice order */
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &r, NULL, NULL, &f.err), VL_EDATA);
    cr_assert(strstr(f.err.msg, "deadlock") != NULL, "%s", f.err.msg);
    fx_fini(&f);
}

Test(sim, explicit_recompute_adds_a_forward)
{
    fx f;
    vl_sim_trace t = {0};
    fx_init(&f, 4);
    sliced_rank(&f);
    fx_ops(&f, "F0 F1 F2 B2 B1 R0 B0 F3 B3");
    sim(&f, VL_SCHED_1F1B, &t);
    for (uint32_t s = 0; s < 4; s++) {
        const vl_sim_task *rc = find(&t, s, VL_TASK_R, 0), *b = find(&t, s, VL_TASK_B, 0);
        cr_assert_float_eq(rc->end - rc->start, 2.0, EPS);
        cr_assert_leq(rc->end, b->start);
        cr_assert_geq(rc->start, find(&t, s, VL_TASK_B, 1)->end);
    }
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

/* ChunkFlow's state-aware schedule on one stage (pp = 1, 4 layers): sample 0 cut into
 * slices of 3, 2 and 1 tokens (micro-batches 0, 1, 2), K = 1, so F0 and F1 drop their
 * activations and keep only the state store.  Per token, with h 4096, 8 KV heads of
 * 128 and act_mem_factor 1:
 *   S = 4 layers x 2 B x 8 x (128 + 128) + 2h = 16384 + 8192 = 24576 (state store)
 *   A = 4 x 139264 + fp32 logits 4V + 4h = 557056 + 529408 = 1086464 (activations)
 * Live bytes after each task:  F0 3S | F1 5S | F2 5S+1A | B2 5S | R1 5S+2A | B1 3S |
 * R0 3S+3A | B0 0.  Peak 3S + 3A, at R0, against 6A when every forward keeps its
 * activations (no R).  The old accounting (every layer checkpointed: 4 x 2h + one layer
 * + logits = 701440 B per token instead of S) would peak at 3 x 701440 + 3A. */
static void state_aware_rank(fx *f, const char *schedule)
{
    static const uint32_t cut[][2] = {{0, 3}, {3, 2}, {5, 1}};

    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    begin_rank(f, 1);
    f->len[0] = 6;
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(vl_plan_mb_begin(&f->p, 3, &f->err), VL_OK);
        cr_assert_eq(vl_plan_seg(&f->p, 0, cut[k][0], cut[k][1], &f->err), VL_OK);
    }
    fx_ops(f, schedule);
}

Test(sim, memory_recompute_keeps_the_state_store)
{
    /* A: 4 layers, the loss's 6 bytes per vocabulary entry and the head input */
    const double S = 24576.0, A = 1342976.0;
    vl_par par = {.tp = 1, .pp = 1, .sp = 1};
    vl_sim_trace t = {0}, u = {0};
    fx f, g;

    fx_init(&f, 4);
    cr_assert_eq(vl_cost_state_store_bytes(&f.c, 1, &par, 4), S);
    cr_assert_eq(vl_cost_act_bytes(&f.c, 1, &par, 4, 1), A);
    state_aware_rank(&f, "F0 F1 F2 B2 R1 B1 R0 B0");
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, &t);
    cr_assert_eq(t.nlanes, 1);
    cr_assert_float_eq(t.lanes[0].act_peak, 3 * S + 3 * A, 1e-6, "%.0f", t.lanes[0].act_peak);
    cr_assert_float_eq(r.peak_mem_gib * 1073741824.0, t.lanes[0].states + 3 * S + 3 * A,
                       1e-3);
    /* the same micro-batches with every activation kept */
    fx_init(&g, 4);
    state_aware_rank(&g, "F0 F1 F2 B2 B1 B0");
    sim(&g, VL_SCHED_1F1B, &u);
    cr_assert_float_eq(u.lanes[0].act_peak, 6 * A, 1e-6);
    cr_assert_eq(t.lanes[0].states, u.lanes[0].states);
    vl_sim_trace_free(&t);
    vl_sim_trace_free(&u);
    fx_fini(&f);
    fx_fini(&g);
}

Test(sim, explicit_schedule_malformed)
{
    fx f;
    vl_sim_iter_result r;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){1, 1}, 2);
    fx_ops(&f, "F0 B0 F1");
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &r, NULL, NULL, &f.err), VL_EDATA);
    cr_assert(strstr(f.err.msg, "lacks B of pack 1") != NULL, "%s", f.err.msg);
    fx_ops(&f, "B1 F5");
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &r, NULL, NULL, &f.err), VL_EDATA);
    cr_assert(strstr(f.err.msg, "(F 5) is out of order or names no pack") != NULL, "%s",
              f.err.msg);
    fx_fini(&f);
}

Test(sim, layer_split_early_stages_get_the_remainder)
{
    fx f;
    vl_sim_trace t = {0};
    fx_init(&f, 10);
    one_rank(&f, 4, (const uint32_t[]){1, 1}, 2);
    sim(&f, VL_SCHED_1F1B, &t);
    cr_assert_eq(t.lanes[0].layers, 3);
    cr_assert_eq(t.lanes[1].layers, 3);
    cr_assert_eq(t.lanes[2].layers, 2);
    cr_assert_eq(t.lanes[3].layers, 2);
    cr_assert_float_eq(find(&t, 0, VL_TASK_F, 0)->end, 3.0, EPS);
    cr_assert_float_eq(find(&t, 3, VL_TASK_B, 0)->end - find(&t, 3, VL_TASK_B, 0)->start,
                       4.0, EPS);
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

Test(sim, more_stages_than_layers_is_an_error)
{
    fx f;
    vl_sim_iter_result r;
    fx_init(&f, 3);
    one_rank(&f, 4, (const uint32_t[]){1}, 1);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &r, NULL, NULL, &f.err), VL_EDATA);
    cr_assert(strstr(f.err.msg, "pp 4 exceeds") != NULL, "%s", f.err.msg);
    cr_assert_eq(vl_sim_iter(&f.p, 1, &f.c, NULL, &r, NULL, NULL, &f.err), VL_EUSAGE);
    fx_fini(&f);
}

Test(sim, out_of_memory_flag)
{
    fx f;
    vl_sim_summary sum;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){1, 1}, 2);
    f.cfg.cluster.mem_gib = 1e9;
    f.cfg.cluster.mem_reserve_gib = 0;
    cr_assert_eq(vl_cost_init(&f.c, &f.cfg, &f.err), VL_OK);
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, NULL);
    cr_assert(!r.oom);
    cr_assert(r.peak_mem_gib > 0.0);
    f.cfg.cluster.mem_gib = r.peak_mem_gib * 0.999;
    cr_assert_eq(vl_cost_init(&f.c, &f.cfg, &f.err), VL_OK);
    r = sim(&f, VL_SCHED_1F1B, NULL);
    cr_assert(r.oom);
    cr_assert_eq(vl_sim_plan(&f.p, &f.c, NULL, &sum, &f.err), VL_OK);
    cr_assert(sum.oom);
    cr_assert_eq(sum.oom_iters, 1);
    cr_assert_eq(sum.first_oom_iter, 0);
    fx_fini(&f);
}

/* Rank 0 busy 12 s per device (makespan 21), rank 1 twice that (makespan 42). */
Test(sim, ranks_sync_and_tbr)
{
    fx f;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){1, 1, 1, 1}, 4);
    begin_rank(&f, 4);
    for (int i = 0; i < 4; i++)
        whole_mb(&f, 2);
    vl_sim_iter_result r = sim(&f, VL_SCHED_1F1B, NULL);
    cr_assert_float_eq(r.makespan_ms, 42000.0, 1e-6);
    cr_assert_float_eq(r.iter_time_ms, r.makespan_ms + r.sync_ms + r.optimizer_ms, 1e-6);
    cr_assert_float_eq(r.tbr, (24.0 - 12.0) / (24.0 * 2), EPS);
    cr_assert_float_eq(r.bubble, (4 * 9.0 + 4 * 18.0) / (4 * 21.0 + 4 * 42.0), EPS);
    cr_assert_eq(r.gpus, 8);
    cr_assert_float_eq(r.mfu, r.flops / (r.iter_time_ms / 1e3 * r.gpus * f.c.peak), 1e-12);
    cr_assert_float_eq(r.tokens_per_s, 12.0 / (r.iter_time_ms / 1e3), 1e-9);
    fx_fini(&f);
}

Test(sim, plan_summary_over_epochs)
{
    fx f;
    vl_sim_summary s;
    vl_sim_iter_result r0, r1;
    fx_init(&f, 4);
    one_rank(&f, 4, (const uint32_t[]){1, 1, 1, 1}, 4);
    cr_assert_eq(vl_plan_iter_begin(&f.p, 1, &f.err), VL_OK);
    begin_rank(&f, 4);
    for (int i = 0; i < 4; i++)
        whole_mb(&f, 2);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &r0, NULL, NULL, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 1, &f.c, NULL, &r1, NULL, NULL, &f.err), VL_OK);
    cr_assert_eq(vl_sim_plan(&f.p, &f.c, NULL, &s, &f.err), VL_OK);
    cr_assert_eq(s.iterations, 2);
    cr_assert_eq(s.epochs, 2);
    cr_assert_float_eq(s.total_time_s, (r0.iter_time_ms + r1.iter_time_ms) / 1e3, 1e-9);
    cr_assert_float_eq(s.epoch_time_s, s.total_time_s / 2, 1e-9);
    cr_assert_float_eq(s.iter_time_ms.mean, (r0.iter_time_ms + r1.iter_time_ms) / 2, 1e-6);
    cr_assert_float_eq(s.iter_time_ms.p50, r0.iter_time_ms, 1e-6);
    cr_assert_float_eq(s.iter_time_ms.max, r1.iter_time_ms, 1e-6);
    cr_assert_float_eq(s.bubble.mean, 3.0 / 7.0, EPS);
    cr_assert_float_eq(s.tokens_per_s, 12.0 / s.total_time_s, 1e-9);
    cr_assert(!s.oom);
    fx_fini(&f);
}

Test(sim, scratch_reuse_is_deterministic)
{
    fx f;
    vl_sim_scratch *w = NULL;
    vl_sim_iter_result a, b;
    fx_init(&f, 4);
    sliced_rank(&f);
    one_rank(&f, 4, (const uint32_t[]){4, 1, 2, 1, 3, 3}, 6);
    cr_assert_eq(vl_sim_scratch_new(&w, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &a, w, NULL, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 1, &f.c, NULL, &b, w, NULL, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &b, w, NULL, &f.err), VL_OK);
    cr_assert_eq(a.iter_time_ms, b.iter_time_ms);   /* bit-identical, not approximate */
    cr_assert_eq(a.bubble, b.bubble);
    cr_assert_eq(a.peak_mem_gib, b.peak_mem_gib);
    cr_assert_eq(a.tbr, b.tbr);
    vl_sim_scratch_free(w);
    fx_fini(&f);
}

/* The default analytic model with communication: pipeline transfers delay the
 * receiving stage, ranks pay the gradient sync, numbers stay in range. */
Test(sim, analytic_model_with_communication)
{
    vl_config cfg;
    vl_cost c;
    vl_err err;
    vl_plan p;
    uint32_t len[8] = {4096, 4096, 2048, 8192, 1024, 4096, 4096, 4096};
    vl_manifest m = {.n = 8, .len = len};
    vl_sim_trace t = {0};
    vl_sim_iter_result r;
    size_t np2p = 0;

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_set(&cfg, "training.pp=4", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_init(&p, &m, "test", 0, &err), VL_OK);
    cr_assert_eq(vl_plan_iter_begin(&p, 0, &err), VL_OK);
    for (int rk = 0; rk < 2; rk++) {
        vl_par par = {.tp = 1, .pp = 4, .sp = rk + 1};
        cr_assert_eq(vl_plan_rank_begin(&p, rk, &par, &err), VL_OK);
        for (uint32_t i = 0; i < 4; i++) {
            cr_assert_eq(vl_plan_mb_begin(&p, 8192, &err), VL_OK);
            uint32_t id = 4 * (uint32_t)rk + i;
            cr_assert_eq(vl_plan_seg(&p, id, 0, len[id], &err), VL_OK);
        }
    }
    cr_assert_eq(vl_sim_iter(&p, 0, &c, NULL, &r, NULL, &t, &err), VL_OK, "%s", err.msg);
    cr_assert(r.sync_ms > 0.0);
    cr_assert_float_eq(r.iter_time_ms, r.makespan_ms + r.sync_ms + r.optimizer_ms, 1e-9);
    cr_assert(r.bubble > 0.0 && r.bubble < 1.0);
    cr_assert(r.mfu > 0.0 && r.mfu < 1.0, "mfu %g", r.mfu);
    cr_assert(r.tbr >= 0.0 && r.tbr < 1.0);
    cr_assert(r.peak_mem_gib > 0.0);
    cr_assert_eq(r.gpus, 4 + 8);
    for (size_t i = 0; i < t.ntasks; i++) {
        const vl_sim_task *k = &t.tasks[i];
        cr_assert(k->end >= k->start && k->comm >= 0.0);
        cr_assert(k->comm <= k->end - k->start + 1e-15);
        if (k->kind != VL_TASK_P2P)
            continue;
        np2p++;
        /* the trace lists a transfer right after the task it feeds */
        const vl_sim_task *q = &t.tasks[i - 1];
        cr_assert(q->rank == k->rank && q->stage == k->stage && q->mb == k->mb);
        cr_assert(q->kind == VL_TASK_F || q->kind == VL_TASK_B);
        cr_assert_geq(q->start, k->end - 1e-12, "task starts before its transfer ends");
        cr_assert(k->end > k->start);
    }
    cr_assert_eq(np2p, 2 * 4 * 2 * 3);  /* ranks × mbs × (F, B) × boundaries */
    vl_sim_trace_free(&t);
    vl_plan_free(&p);
    vl_config_free(&cfg);
}
