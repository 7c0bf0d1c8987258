/* tests/model/test_sim_model.c -- the simulator on the vocabulary the three later strategies
 * need, with hand-computed answers: SlimPack's backward packs (docs/slimpack.md
 * examples A and C, the 3/7 regression), its DP-Merge shared pack (example D), a Skrull
 * micro-batch of local and sharded segments (Eq. 2), two pipelines of different depth in
 * one iteration (rank_gap), micro-step synchronisation (training.dp_sync), measured
 * cost.schemes and optimizer states sharded over every GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "sim_fixture.h"
#include "verify.h"
#include "vlplan_strategy.h"

/* A fitted cost a·pairs + b·tokens per layer (seconds), communication off, on the
 * 32-layer llama3.1-8b shape of the SlimPack examples. */
static void fit(fx *f, double a, double b)
{
    fx_init(f, 32);
    f->cfg.cost.fit_a = a;
    f->cfg.cost.fit_b = b;
    cr_assert_eq(vl_cost_init(&f->c, &f->cfg, &f->err), VL_OK);
}

static vl_sim_iter_result sim1(fx *f, vl_sim_trace *t)
{
    vl_sim_iter_result r;
    cr_assert_eq(vl_sim_iter(&f->p, f->p.niters - 1, &f->c, NULL, &r, NULL, t, &f->err), VL_OK,
                 "%s", f->err.msg);
    return r;
}

/* Verify the plan against a manifest of the samples it uses (the fixture's lengths). */
static void must_verify(fx *f)
{
    vl_verify_report rep;

    fx_manifest_of_plan(f);
    vl_status st = vl_plan_verify(&f->p, NULL, &vl_registry_rules, &rep, &f->err);
    for (size_t i = 0; st != VL_OK && i < rep.nmsgs; i++)
        fprintf(stderr, "  %s\n", rep.msgs[i]);
    cr_assert_eq(st, VL_OK, "%s", f->err.msg);
}

/* ---- SlimPack example A: one 4096-token sample, 4 packs on 4 stages ---- */

static const uint32_t A_cut[5] = {0, 2048, 2896, 3547, 4096};

static void example_a(fx *f, bool explicit_order)
{
    vl_par par = {1, 4, 1, 0};

    fit(f, 1e-9, 0);
    f->len[0] = 4096;
    f->p.caps = VL_CAP_BWD_PACKS | VL_CAP_SCHEDULE;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f->p, 0, &par, &f->err), VL_OK);
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(vl_plan_mb_begin(&f->p, 4096, &f->err), VL_OK);
        fx_seg(f, 0, A_cut[j], A_cut[j + 1] - A_cut[j]);
    }
    for (int j = 3; j >= 0; j--) {   /* backward packs: last tokens first */
        cr_assert_eq(vl_plan_bwd_begin(&f->p, 4096, &f->err), VL_OK);
        fx_seg(f, 0, A_cut[j], A_cut[j + 1] - A_cut[j]);
    }
    if (explicit_order)
        fx_ops(f, "F0 F1 F2 F3 B0 B1 B2 B3");
}

Test(sim_model, slimpack_example_a)
{
    for (int expl = 0; expl < 2; expl++) {
        fx f;
        example_a(&f, expl);
        must_verify(&f);
        vl_sim_iter_result r = sim1(&f, NULL);
        cr_assert_float_eq(r.makespan_ms / 1e3, 0.411194, 5e-7, "%.7f", r.makespan_ms / 1e3);
        cr_assert_float_eq(r.makespan_ms / 1e3, 51399215 * 8e-9, 1e-9);
        cr_assert_float_eq(r.bubble, 0.42864, 5e-6, "%.6f", r.bubble);
        fx_fini(&f);
    }
}

/* ---- SlimPack example C: S1 = 3000 tokens + five 1000-token samples, M = 2, pp = 2 ---- */

static void example_c(fx *f, bool asym)
{
    vl_par par = {1, 2, 1, 0};

    fit(f, 1e-9, 1000e-9);
    f->len[0] = 3000;
    f->p.caps = asym ? VL_CAP_BWD_PACKS : 0;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f->p, 0, &par, &f->err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f->p, 8000, &f->err), VL_OK);
    fx_seg(f, 0, 0, 3000);
    cr_assert_eq(vl_plan_mb_begin(&f->p, 8000, &f->err), VL_OK);
    for (uint32_t s = 1; s <= 5; s++)
        fx_seg(f, s, 0, 1000);
    if (!asym)
        return;
    cr_assert_eq(vl_plan_bwd_begin(&f->p, 8000, &f->err), VL_OK);
    fx_seg(f, 0, 219, 2781);
    cr_assert_eq(vl_plan_bwd_begin(&f->p, 8000, &f->err), VL_OK);
    fx_seg(f, 0, 0, 219);
    for (uint32_t s = 1; s <= 5; s++)
        fx_seg(f, s, 0, 1000);
}

Test(sim_model, slimpack_example_c)
{
    fx f, g;
    vl_sim_trace t = {0};

    example_c(&f, false);
    example_c(&g, true);
    must_verify(&f);
    must_verify(&g);
    vl_sim_iter_result s = sim1(&f, NULL), a = sim1(&g, &t);
    cr_assert_float_eq(s.makespan_ms / 1e3, 1.156348, 5e-7, "%.7f", s.makespan_ms / 1e3);
    cr_assert_float_eq(s.bubble, 0.32873, 5e-6, "%.6f", s.bubble);
    cr_assert_float_eq(a.makespan_ms / 1e3, 1.164320, 5e-7, "%.7f", a.makespan_ms / 1e3);
    cr_assert_float_eq(a.bubble, 0.33332, 5e-6, "%.6f", a.bubble);
    /* backward pack 0 = S1[219, 3000): 16 layers x (2.5 a P + 2 b T) */
    double p0 = (3000.0 * 3001 - 219.0 * 220) / 2, want = 16 * (2.5e-9 * p0 + 2e-6 * 2781);
    for (size_t i = 0; i < t.ntasks; i++)
        if (t.tasks[i].kind == VL_TASK_B && t.tasks[i].mb == 0)
            cr_assert_float_eq(t.tasks[i].end - t.tasks[i].start, want, 1e-12);
    vl_sim_trace_free(&t);
    fx_fini(&f);
    fx_fini(&g);
}

/* Backward packs identical to the forward ones, schedule F0 B0 F1 B1 ...: four equal
 * micro-batches on four stages still give bubble 3/7. */
Test(sim_model, identical_backward_packs_keep_the_bubble)
{
    fx f;
    vl_par par = {1, 4, 1, 0};

    fx_init(&f, 4);
    f.p.caps = VL_CAP_BWD_PACKS | VL_CAP_SCHEDULE;
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    for (uint32_t m = 0; m < 4; m++) {
        cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
        fx_seg(&f, m, 0, 1000);
    }
    for (uint32_t m = 0; m < 4; m++) {
        cr_assert_eq(vl_plan_bwd_begin(&f.p, 1000, &f.err), VL_OK);
        fx_seg(&f, m, 0, 1000);
    }
    fx_ops(&f, "F0 B0 F1 B1 F2 B2 F3 B3");
    must_verify(&f);
    cr_assert_float_eq(sim1(&f, NULL).bubble, 3.0 / 7.0, 1e-12);
    fx_fini(&f);
}

/* ---- SlimPack example D: DP-Merge of an 8192-token outlier over two ranks ---- */

static void example_d(fx *f, bool merged)
{
    vl_par par = {1, 1, 1, 0};
    const int32_t both[2] = {0, 1};

    fit(f, 1e-9, 0);
    f->len[0] = 8192;
    for (uint32_t s = 1; s <= 8; s++)
        f->len[s] = 1024;
    f->p.caps = VL_CAP_SHARED;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f->p, r, &par, &f->err), VL_OK);
        if (merged || r == 0) {
            cr_assert_eq(vl_plan_mb_begin(&f->p, 8192, &f->err), VL_OK);
            fx_seg(f, 0, 0, 8192);
            if (merged)
                cr_assert_eq(vl_plan_mb_share(&f->p, both, 2, &f->err), VL_OK);
        }
        cr_assert_eq(vl_plan_mb_begin(&f->p, 8192, &f->err), VL_OK);
        for (uint32_t s = 1; s <= 8; s++)
            if (!merged ? r == 1 : (s - 1) / 4 == (uint32_t)r)
                fx_seg(f, s, 0, 1024);
    }
}

Test(sim_model, slimpack_example_d_dp_merge)
{
    fx f, g;
    vl_sim_trace t = {0};
    vl_iter_metrics mf, mg;

    example_d(&f, false);
    example_d(&g, true);
    f.p.caps |= VL_CAP_UNEVEN_MBS;  /* rank 0 runs two packs, rank 1 one */
    must_verify(&f);
    must_verify(&g);
    vl_metrics_iter(&f.p, 0, &mf);
    vl_metrics_iter(&g.p, 0, &mg);
    cr_assert_float_eq(mf.abr, 0.4375, 1e-12, "%.6f", mf.abr);
    cr_assert_float_eq(mg.abr, 0.0, 1e-12, "%.6f", mg.abr);
    cr_assert_float_eq(mg.cr, 8192.0 / (8192 + 8 * 1024), 1e-12);
    vl_sim_iter_result a = sim1(&f, NULL), b = sim1(&g, &t);
    /* the hand example's times are the propagation: no sync (one iteration, comm off)
     * and before the optimizer step */
    cr_assert_float_eq(a.makespan_ms / 1e3, 3.758555, 5e-7, "%.7f", a.makespan_ms / 1e3);
    cr_assert_float_eq(b.makespan_ms / 1e3, 2.114388, 5e-7, "%.7f", b.makespan_ms / 1e3);
    cr_assert_eq(b.tokens, 8192 + 8 * 1024, "a shared pack's tokens count once");
    /* the copies start and end together on both lanes */
    const vl_sim_task *c[2][3] = {{0}};
    for (size_t i = 0; i < t.ntasks; i++)
        if (t.tasks[i].mb == 0 && t.tasks[i].kind <= VL_TASK_B)
            c[t.tasks[i].rank][t.tasks[i].kind] = &t.tasks[i];
    for (int k = 0; k <= VL_TASK_B; k += 2) {
        cr_assert(c[0][k] && c[1][k]);
        cr_assert_eq(c[0][k]->start, c[1][k]->start);
        cr_assert_eq(c[0][k]->end, c[1][k]->end);
    }
    vl_sim_trace_free(&t);
    fx_fini(&f);
    fx_fini(&g);
}

/* A shared pack whose members reach it at different times starts when the later one
 * is ready: rank 1 runs a pack first, rank 0 waits for it. */
Test(sim_model, shared_pack_waits_for_every_member)
{
    fx f;
    vl_par par = {1, 1, 1, 0};
    const int32_t both[2] = {0, 1};
    vl_sim_trace t = {0};

    fx_init(&f, 4);
    f.p.caps = VL_CAP_SHARED | VL_CAP_UNEVEN_MBS;
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 0, 0, 1000);
    cr_assert_eq(vl_plan_mb_share(&f.p, both, 2, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 1, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 1, 0, 1000);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 0, 0, 1000);
    cr_assert_eq(vl_plan_mb_share(&f.p, both, 2, &f.err), VL_OK);
    must_verify(&f);
    sim1(&f, &t);
    /* rank 1 forwards its own pack (4 layers x 1000 s) and its backward (8000 s) first
     * under 1F1B, so the shared forward starts at 12000 s on both lanes */
    for (size_t i = 0; i < t.ntasks; i++)
        if (t.tasks[i].kind == VL_TASK_F && (t.tasks[i].rank == 0 || t.tasks[i].mb == 1))
            cr_assert_float_eq(t.tasks[i].start, 12000.0, 1e-9, "rank %u", t.tasks[i].rank);
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

/* ---- Skrull: local and sharded segments in one micro-batch (Eq. 2) ---- */

static void skrull_mb(fx *f)
{
    vl_par par = {1, 1, 2, 0};

    f->p.caps = VL_CAP_SEG_CP;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f->p, 0, &par, &f->err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f->p, 8000, &f->err), VL_OK);
    cr_assert_eq(vl_plan_seg_cp(&f->p, 0, 0, 1000, 0, &f->err), VL_OK);
    cr_assert_eq(vl_plan_seg_cp(&f->p, 1, 0, 600, 1, &f->err), VL_OK);
    cr_assert_eq(vl_plan_seg_cp(&f->p, 2, 0, 1000, VL_CP_SHARDED, &f->err), VL_OK);
}

Test(sim_model, skrull_local_and_sharded_segments)
{
    fx f;
    vl_sim_trace t = {0};
    vl_iter_metrics m;

    fx_init(&f, 4);    /* 1 s per token per layer, 4 layers */
    f.len[1] = 600;
    skrull_mb(&f);
    must_verify(&f);
    sim1(&f, &t);
    /* CP rank 0: local 1000 tokens, plus half of the 1000 sharded: 1500 tokens of work;
     * CP rank 1: 600 + 500.  No communication: Time = local + sharded / 2. */
    for (size_t i = 0; i < t.ntasks; i++)
        if (t.tasks[i].kind == VL_TASK_F)
            cr_assert_float_eq(t.tasks[i].end - t.tasks[i].start, 4 * 1500.0, 1e-9);
    cr_assert_float_eq(t.lanes[0].act_peak,
                       vl_cost_act_bytes(&f.c, 1500, &(vl_par){1, 1, 1, 0}, 4, 1), 1e-3);
    vl_metrics_iter(&f.p, 0, &m);
    cr_assert_float_eq(m.cr, 1000.0 / 2600.0, 1e-12);
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

/* With the analytic model the sharded part's exposed communication overlaps the local
 * compute: the pack costs max over CP ranks of max(comm, local) + sharded compute. */
Test(sim_model, skrull_communication_overlaps_local_compute)
{
    vl_config cfg;
    vl_cost c;
    vl_err err = {0};
    vl_seg tmp[4], all[3] = {{0, 0, 1000}, {1, 0, 600}, {2, 0, 30000}};
    int16_t cps[3] = {0, 1, VL_CP_SHARDED};
    vl_par par = {1, 1, 8, 0}, one = {1, 1, 1, 0};

    /* Ulysses: its all-to-all is never hidden under its own attention */
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    vl_pack_view v = {all, cps, 3, 1};
    vl_mb_time got = vl_cost_pack_time(&c, &v, &par, 32, 1, tmp);
    vl_mb_time d = vl_cost_mb_time(&c, all + 2, 1, &par, 32, 1);
    vl_mb_time l0 = vl_cost_mb_time(&c, all, 1, &one, 32, 1);
    double want = fmax(d.comm_fwd, l0.fwd) + d.fwd - d.comm_fwd;
    cr_assert_gt(d.comm_fwd, 0);
    cr_assert_float_eq(got.fwd, want, 1e-12 * want, "%g vs %g", got.fwd, want);
    cr_assert_lt(got.fwd, d.fwd + l0.fwd, "the overlap hides something");
    vl_config_free(&cfg);
}

/* ---- two pipelines of different depth in one iteration ---- */

Test(sim_model, pipelines_of_different_depth)
{
    fx f;
    vl_par p2 = {1, 2, 1, 0}, p4 = {1, 4, 1, 0};
    vl_sim_trace t = {0};

    fx_init(&f, 32);
    f.p.caps = 0;
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f.p, r, r ? &p4 : &p2, &f.err), VL_OK);
        for (uint32_t m = 0; m < 4; m++) {
            cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
            fx_seg(&f, 4 * (uint32_t)r + m, 0, 1000);
        }
    }
    must_verify(&f);
    vl_sim_iter_result r = sim1(&f, &t);
    /* 1F1B with equal packs: (M + pp - 1) (f + b); f = layers per stage x 1000 s */
    double m0 = (4 + 2 - 1) * 3 * 16 * 1000.0, m1 = (4 + 4 - 1) * 3 * 8 * 1000.0;
    cr_assert_float_eq(r.makespan_ms / 1e3, m0, 1e-6);
    cr_assert_float_eq(r.rank_gap, (m0 - m1) / m0, 1e-12);
    cr_assert_eq(t.nlanes, 6);
    cr_assert_eq(r.gpus, 6);
    /* blocks: rank 0 on GPUs 0-1, rank 1 on 2-5 */
    cr_assert_eq(vl_plan_rank_gpu(&f.p, 0, 1, 3), 5);
    vl_sim_trace_free(&t);
    fx_fini(&f);
}

/* ---- micro-step synchronisation ---- */

Test(sim_model, micro_step_barriers)
{
    fx f;
    vl_par par = {1, 1, 1, 0};
    static const uint32_t tok[2][2] = {{1000, 3000}, {3000, 1000}};

    fx_init(&f, 1);
    for (uint32_t s = 0; s < 4; s++)
        f.len[s] = tok[s / 2][s % 2];
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f.p, r, &par, &f.err), VL_OK);
        for (int m = 0; m < 2; m++) {
            cr_assert_eq(vl_plan_mb_begin(&f.p, 3000, &f.err), VL_OK);
            fx_seg(&f, (uint32_t)(2 * r + m), 0, tok[r][m]);
        }
    }
    /* once per iteration: each rank 3 x 4000 s (then the optimizer step) */
    vl_sim_iter_result r = sim1(&f, NULL);
    cr_assert_float_eq((r.iter_time_ms - r.optimizer_ms) / 1e3, 12000.0, 1e-6);
    /* after every micro-step: max(3000, 9000) + max(9000, 3000) */
    f.cfg.training.dp_sync = VL_DP_SYNC_MICRO_STEP;
    r = sim1(&f, NULL);
    cr_assert_float_eq((r.iter_time_ms - r.optimizer_ms) / 1e3, 18000.0, 1e-6);
    fx_fini(&f);
}

/* The fixture's shape on one layer, analytic with communication: two ranks of two
 * 100-token micro-batches.  A 100-token backward is far shorter than the reduce-scatter
 * of the gradients, so each reduction hides behind it only as long as it lasts, not
 * overlap.dp (0.8) of it. */
Test(sim_model, a_reduction_hides_behind_its_backward_only)
{
    fx f;
    vl_par par = {1, 1, 1, 0};

    fx_init(&f, 1);
    f.cfg.cost.fit_set = false;
    f.cfg.cost.comm = true;
    f.cfg.training.pp = 1;
    f.cfg.training.dp = 2;
    f.cfg.training.overlap_dp = 0.8;
    cr_assert_eq(vl_cost_init(&f.c, &f.cfg, &f.err), VL_OK, "%s", f.err.msg);
    for (uint32_t s = 0; s < 4; s++)
        f.len[s] = 100;
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f.p, r, &par, &f.err), VL_OK);
        for (int m = 0; m < 2; m++) {
            cr_assert_eq(vl_plan_mb_begin(&f.p, 100, &f.err), VL_OK);
            fx_seg(&f, (uint32_t)(2 * r + m), 0, 100);
        }
    }
    vl_seg seg = {0, 0, 100};
    vl_mb_time t = vl_cost_mb_time(&f.c, &seg, 1, &par, 1, 1);
    double g = vl_cost_dp_grad_time(&f.c, &par, 2, 1);     /* 15 us + 1/2 · 4 B · psi / 370 GB/s */
    double ag = vl_cost_dp_param_time(&f.c, &par, 2, 1);
    double psi = f.c.params_layer + f.c.params_embed;
    cr_assert_float_eq(g, 15e-6 + 0.5 * 4 * psi / 370e9, 1e-12);
    double exposed = g - t.bwd;                             /* the backward hides t.bwd */
    cr_assert_gt(exposed, 0.2 * g, "the bound must bind here: %g vs %g", exposed, 0.2 * g);
    cr_assert_float_eq(vl_cost_dp_grad_exposed(&f.c, g, t.bwd), exposed, 1e-12);
    /* once per iteration: the one reduction hides behind the last backward */
    vl_sim_iter_result r = sim1(&f, NULL);
    cr_assert_float_eq((r.iter_time_ms - r.optimizer_ms) / 1e3,
                       2 * (t.fwd + t.bwd) + exposed + 0.2 * ag, 1e-9);
    /* every micro-step: the first reduction too, before the second micro-step */
    f.cfg.training.dp_sync = VL_DP_SYNC_MICRO_STEP;
    r = sim1(&f, NULL);
    cr_assert_float_eq((r.iter_time_ms - r.optimizer_ms) / 1e3,
                       2 * (t.fwd + t.bwd) + 2 * exposed + 0.2 * ag, 1e-9);
    fx_fini(&f);
}

/* ---- measured schemes and world-sharded optimizer states ---- */

Test(sim_model, cost_schemes_time_a_matching_rank)
{
    vl_config cfg;
    vl_cost c;
    vl_err err = {0};
    vl_seg s[2] = {{0, 0, 1000}, {1, 200, 300}};
    vl_par match = {1, 2, 1, 0}, other = {2, 2, 1, 0};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 1, pp: 2, a: 1e-6, b: 0.003, c: 2}]",
                               &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    /* a (1000^2 + 500^2 - 200^2) + b 1300 + c milliseconds, forward 1/3.5 of the a part
     * and 1/3 of the rest; a stage of 16 of the 32 layers is the measured one */
    vl_mb_time t = vl_cost_mb_time(&c, s, 2, &match, 16, 0);
    double q = 1e-6 * (1e6 + 250000 - 40000), l = 0.003 * 1300 + 2;
    cr_assert_float_eq(t.fwd, (q / 3.5 + l / 3) * 1e-3, 1e-15);
    cr_assert_float_eq(t.fwd + t.bwd, (q + l) * 1e-3, 1e-15);
    cr_assert_float_eq(vl_cost_mb_time(&c, s, 2, &match, 8, 0).fwd, t.fwd / 2, 1e-15);
    cr_assert_null(vl_cost_scheme(&c, &other));
    vl_config_free(&cfg);
}

/* The head (last stage) a rank of the analytic model pays: its last-stage time less the
 * same stage's time elsewhere. */
static vl_mb_time head_of(const char *set, const vl_seg *s, size_t n, const vl_par *par)
{
    vl_config cfg;
    vl_cost c;
    vl_err err = {0};
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    if (set != NULL)
        cr_assert_eq(vl_config_set(&cfg, set, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_set(&cfg, "cost.compute_scale=1.5", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    vl_mb_time last = vl_cost_mb_time(&c, s, n, par, 16, 1);
    vl_mb_time mid = vl_cost_mb_time(&c, s, n, par, 16, 0);
    vl_config_free(&cfg);
    return (vl_mb_time){.fwd = last.fwd - mid.fwd, .bwd = last.bwd - mid.bwd};
}

/* A cost.schemes row that times decoder layers alone (cost.schemes_with_head off, as
 * calibrate writes) pays on the last stage the analytic LM head, with cost.compute_scale,
 * that an analytic rank pays; a row of a whole stage (on, the default) already holds it. */
Test(sim_model, headless_schemes_pay_the_lm_head_on_the_last_stage)
{
    vl_seg s[2] = {{0, 0, 1000}, {1, 200, 300}};
    vl_par par = {1, 2, 1, 0};
    vl_mb_time analytic = head_of(NULL, s, 2, &par);
    vl_mb_time off = head_of("cost={schemes_with_head: false, schemes: [{tp: 1, pp: 2, "
                             "a: 1e-6, b: 0.003, c: 2}]}", s, 2, &par);
    vl_mb_time on = head_of("cost.schemes=[{tp: 1, pp: 2, a: 1e-6, b: 0.003, c: 2}]", s, 2,
                            &par);
    cr_assert_gt(analytic.fwd, 0);
    cr_assert_gt(analytic.bwd, analytic.fwd, "the head's backward is bwd_linear times it");
    cr_assert_float_eq(off.fwd, analytic.fwd, 1e-12 * analytic.fwd);
    cr_assert_float_eq(off.bwd, analytic.bwd, 1e-12 * analytic.bwd);
    cr_assert_eq(on.fwd, 0.0);
    cr_assert_eq(on.bwd, 0.0);
}

Test(sim_model, world_sharded_optimizer_states)
{
    vl_config cfg;
    vl_cost c;
    vl_err err = {0};
    vl_par par = {4, 2, 1, 0};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    double mine = vl_cost_stage_params(&c, &par, 16, 1, 0);
    double all = cfg.model.layers * c.params_layer + c.params_embed;
    cr_assert_float_eq(vl_cost_state_bytes_world(&c, &par, 16, 1, 0, 64),
                       (2.0 + cfg.training.grad_bytes) * mine + 12.0 * all / 64, 1e-3);
    vl_config_free(&cfg);
}
