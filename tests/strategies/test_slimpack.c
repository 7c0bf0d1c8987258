/* tests/strategies/test_slimpack.c -- SlimPack's steps against docs/slimpack.md's hand examples,
 * exact: the closed-form cut and example A's slices and schedule, example C's forward
 * and backward packs (asymmetric loses with two packs, and auto keeps the symmetric
 * plan), example D's DP-Merge (k = 2, shared pack first, copies in step), the negative
 * cases verify must name on SlimPack's own plans, and phase 1's LPT. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"
#include "slimpack_impl.h"
#include "verify.h"
#include "vlplan_strategy.h"

/* ---- fixture: the examples' fitted cost and a batch planned by SlimPack ---- */

typedef struct spx {
    fx f;
    sp_opts o;
    sp_setting s;
    sp_work w;
    vl_job job;
} spx;

/* Fitted cost a = 1e-9, b = beta·1e-9 per layer, communication off, 32 layers, pp
 * stages, dp ranks, M packs, slice_align 1. */
static void spx_init(spx *x, double beta, int pp, int dp, uint32_t M, int asym)
{
    memset(x, 0, sizeof *x);
    fx_init(&x->f, 32);
    x->f.cfg.cost.fit_a = 1e-9;
    x->f.cfg.cost.fit_b = beta * 1e-9;
    x->f.cfg.training.pp = pp;
    x->f.cfg.training.dp = dp;
    x->f.cfg.cluster.gpus = pp * dp;
    x->f.cfg.cluster.mem_gib = 1e6;   /* the examples are about time */
    cr_assert_eq(vl_cost_init(&x->f.c, &x->f.cfg, &x->f.err), VL_OK);
    x->o = (sp_opts){.micropacks = M, .min_pack_tokens = 1, .slim_threshold = 1.0,
                     .slice_align = 1, .min_slice_tokens = 1, .asymmetric = asym,
                     .dp_merge = true, .milp = SP_MILP_OFF, .milp_nodes = 500};
    strcpy(x->o.factors, "1");
    x->s = (sp_setting){.o = &x->o, .dp = dp, .par = {1, pp, 1, 0},
                        .stage_layers = 32 / pp, .ckpt_mode = VL_RECOMPUTE_NONE,
                        .factors_n = 1, .factors = {1}};
    x->s.coef = vl__sp_coef(&x->f.c, &x->s.par, 0);
    x->job = (vl_job){.m = &x->f.m, .cfg = &x->f.cfg, .cost = &x->f.c};
    x->f.p.caps = VL_CAP_BWD_PACKS | VL_CAP_SCHEDULE | VL_CAP_SHARED | VL_CAP_UNEVEN_MBS;
}

static void spx_plan(spx *x, const uint32_t *samples, size_t n)
{
    cr_assert_eq(vl__sp_plan_batch(&x->w, &x->s, &x->job, &x->f.m, samples, n, x->f.len, 0,
                                   &x->f.p, &x->f.err), VL_OK, "%s", x->f.err.msg);
}

static void spx_fini(spx *x)
{
    vl__sp_work_free(&x->w);
    fx_fini(&x->f);
}

static vl_sim_iter_result sim(spx *x, vl_sim_trace *t)
{
    vl_sim_iter_result r;
    cr_assert_eq(vl_sim_iter(&x->f.p, 0, &x->f.c, NULL, &r, NULL, t, &x->f.err), VL_OK, "%s",
                 x->f.err.msg);
    return r;
}

static bool has_msg(const vl_verify_report *rep, const char *needle)
{
    for (size_t i = 0; i < rep->nmsgs; i++)
        if (strstr(rep->msgs[i], needle))
            return true;
    return false;
}

/* verify: clean when needle is NULL, else failing with a message containing it. */
static void verify(spx *x, const char *needle)
{
    vl_verify_report rep;

    fx_manifest_of_plan(&x->f);
    vl_status st = vl_plan_verify(&x->f.p, NULL, &vl_registry_rules, &rep, &x->f.err);
    if ((st == VL_OK) != (needle == NULL) || (needle && !has_msg(&rep, needle)))
        for (size_t i = 0; i < rep.nmsgs; i++)
            fprintf(stderr, "  %s\n", rep.msgs[i]);
    cr_assert_eq(st, needle ? VL_EVERIFY : VL_OK, "%s", x->f.err.msg);
    cr_assert(!needle || has_msg(&rep, needle), "no message contains \"%s\"", needle);
}

static const vl_rank *rank(const spx *x, uint32_t r)
{
    return &x->f.p.ranks[x->f.p.iters[0].rank0 + r];
}

static void expect_seg(const vl_plan *p, const vl_mb *mb, uint32_t k, uint32_t sample,
                       uint32_t off, uint32_t end)
{
    cr_assert_lt(k, mb->nseg);
    const vl_seg *s = vl_plan_mb_segs(p, mb) + k;
    cr_assert(s->sample == sample && s->off == off && s->off + s->len == end,
              "segment %u: sample %u [%u, %u), want sample %u [%u, %u)", k, s->sample, s->off,
              s->off + s->len, sample, off, end);
}

static void expect_ops(const spx *x, uint32_t r, const char *want)
{
    const vl_rank *rk = rank(x, r);
    char got[256] = "";
    size_t n = 0;

    for (uint32_t i = 0; i < rk->nop && n + 8 < sizeof got; i++) {
        const vl_op *op = &x->f.p.ops[rk->op0 + i];
        n += (size_t)snprintf(got + n, sizeof got - n, "%s%c%u", i ? " " : "", "FRB"[op->kind],
                              op->mb);
    }
    cr_assert_str_eq(got, want);
}

/* ---- the closed-form cut ---- */

Test(slimpack, cut_inverts_the_work_quadratic)
{
    double tau = vl_cost_pairs(0, 4096) / 4;

    /* example A's forward cuts: cumulative multiples of tau, to the nearest token */
    cr_assert_eq(vl__sp_cut_fwd(1, 0, 0, 4096, tau, 1), 2048);
    cr_assert_eq(vl__sp_cut_fwd(1, 0, 2048, 4096, 2 * tau - vl_cost_pairs(0, 2048), 1), 2896);
    cr_assert_eq(vl__sp_cut_fwd(1, 0, 0, 4096, 3 * tau, 1), 3547);
    /* backward from the last token: the same cuts */
    cr_assert_eq(vl__sp_cut_bwd(2.5, 0, 0, 4096, 2.5 * tau, 1), 3547);
    /* example C's backward cut with beta = 1000: S1[219, 3000) = 16,755,525 */
    cr_assert_eq(vl__sp_cut_bwd(2.5, 2000, 0, 3000, 16755000, 1), 219);
    cr_assert_float_eq(vl__sp_work(2.5, 2000, 219, 3000), 16755525, 1e-6);
    /* linear work: x = a + target / beta exactly; alignment rounds to 128 */
    cr_assert_eq(vl__sp_cut_fwd(0, 2, 100, 9000, 1000, 1), 600);
    cr_assert_eq(vl__sp_cut_fwd(0, 1, 0, 9000, 1000, 128), 1024);
    cr_assert_eq(vl__sp_cut_fwd(0, 1, 0, 9000, 1100, 128), 1152);
    /* a target beyond the sample ends at the sample */
    cr_assert_eq(vl__sp_cut_fwd(1, 1, 0, 100, 1e12, 128), 100);
}

/* ---- example A ---- */

Test(slimpack, example_a_one_sample_four_packs)
{
    static const uint32_t cut[5] = {0, 2048, 2896, 3547, 4096};
    static const double fw[4] = {2098176, 2096680, 2097522, 2098278};
    spx x;
    uint32_t s0 = 0;

    spx_init(&x, 0, 4, 1, 4, SP_ASYM_ON);
    x.f.len[0] = 4096;
    spx_plan(&x, &s0, 1);
    verify(&x, NULL);
    const vl_rank *rk = rank(&x, 0);
    cr_assert_eq(rk->nmb, 4);
    cr_assert_eq(rk->nbwd, 4);
    for (uint32_t j = 0; j < 4; j++) {
        const vl_mb *mb = &x.f.p.mbs[rk->mb0 + j];
        expect_seg(&x.f.p, mb, 0, 0, cut[j], cut[j + 1]);
        cr_assert_float_eq(vl_cost_pairs(cut[j], cut[j + 1]), fw[j], 1e-6);
        expect_seg(&x.f.p, vl_plan_bwd(&x.f.p, rk, j), 0, 0, cut[3 - j], cut[4 - j]);
    }
    expect_ops(&x, 0, "F0 F1 F2 F3 B0 B1 B2 B3");
    vl_sim_iter_result r = sim(&x, NULL);
    cr_assert_float_eq(r.makespan_ms / 1e3, 51399215 * 8e-9, 1e-9, "%.7f", r.makespan_ms / 1e3);
    cr_assert_float_eq(r.bubble, 0.42864, 5e-6, "%.6f", r.bubble);
    spx_fini(&x);
}

/* ---- example C ---- */

static void example_c(spx *x, int asym)
{
    uint32_t samples[6] = {0, 1, 2, 3, 4, 5};

    spx_init(x, 1000, 2, 1, 2, asym);
    x->f.len[0] = 3000;   /* S1; S2..S6 keep the fixture's 1000 tokens */
    spx_plan(x, samples, 6);
    verify(x, NULL);
}

Test(slimpack, example_c_asymmetric_partition)
{
    spx x;

    example_c(&x, SP_ASYM_ON);
    const vl_rank *rk = rank(&x, 0);
    const vl_plan *p = &x.f.p;
    cr_assert_eq(rk->nmb, 2);
    cr_assert_eq(rk->nbwd, 2);
    /* forward {S1} = 7,501,500 and {S2..S6} = 7,502,500: S1 is not slimmable (W_F <
     * tau = 7,502,000), so every sample goes whole by LPT */
    expect_seg(p, &p->mbs[rk->mb0], 0, 0, 0, 3000);
    cr_assert_eq(p->mbs[rk->mb0 + 1].nseg, 5);
    for (uint32_t k = 0; k < 5; k++)
        expect_seg(p, &p->mbs[rk->mb0 + 1], k, k + 1, 0, 1000);
    /* backward B0 = S1[219, 3000), B1 = S1[0, 219) + S2..S6 */
    expect_seg(p, vl_plan_bwd(p, rk, 0), 0, 0, 219, 3000);
    expect_seg(p, vl_plan_bwd(p, rk, 1), 0, 0, 0, 219);
    for (uint32_t k = 0; k < 5; k++)
        expect_seg(p, vl_plan_bwd(p, rk, 1), k + 1, k + 1, 0, 1000);
    cr_assert_float_eq(vl__sp_work(2.5, 2000, 219, 3000), 16755525, 1e-6);
    cr_assert_float_eq(vl__sp_work(2.5, 2000, 0, 219) + 5 * vl__sp_work(2.5, 2000, 0, 1000),
                       16754475, 1e-6);
    expect_ops(&x, 0, "F0 B0 F1 B1");
    vl_sim_iter_result r = sim(&x, NULL);
    cr_assert_float_eq(r.makespan_ms / 1e3, 1.164320, 5e-7, "%.7f", r.makespan_ms / 1e3);
    cr_assert_float_eq(r.bubble, 0.33332, 5e-6, "%.6f", r.bubble);
    spx_fini(&x);
}

Test(slimpack, example_c_symmetric_wins_with_two_packs)
{
    spx x, y;

    example_c(&x, SP_ASYM_OFF);
    cr_assert_eq(rank(&x, 0)->nbwd, 0, "symmetric: B names the forward packs");
    vl_sim_iter_result r = sim(&x, NULL);
    cr_assert_float_eq(r.makespan_ms / 1e3, 1.156348, 5e-7, "%.7f", r.makespan_ms / 1e3);
    cr_assert_float_eq(r.bubble, 0.32873, 5e-6, "%.6f", r.bubble);
    /* auto simulates both and keeps the faster: the symmetric plan */
    example_c(&y, SP_ASYM_AUTO);
    cr_assert_eq(rank(&y, 0)->nbwd, 0);
    cr_assert_float_eq(sim(&y, NULL).makespan_ms, r.makespan_ms, 1e-9);
    spx_fini(&x);
    spx_fini(&y);
}

/* ---- example D ---- */

static void example_d(spx *x, bool merge)
{
    uint32_t samples[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};

    spx_init(x, 0, 1, 2, 2, SP_ASYM_ON);
    x->o.dp_merge = merge;
    x->f.len[0] = 8192;
    for (int s = 1; s <= 8; s++)
        x->f.len[s] = 1024;
    spx_plan(x, samples, 9);
    verify(x, NULL);
}

Test(slimpack, example_d_dp_merge)
{
    spx x, y;
    vl_sim_trace t = {0};

    example_d(&x, true);
    /* F_o = 33,558,528 > C = 18,878,464: k = 2, CP 2 over DP ranks 0 and 1 */
    cr_assert_float_eq(vl__sp_work(1, 0, 0, 8192), 33558528, 1e-6);
    cr_assert_eq(x.w.ngroups, 1);
    cr_assert_eq(x.w.groups[0].dp0, 0);
    cr_assert_eq(x.w.groups[0].k, 2);
    for (uint32_t r = 0; r < 2; r++) {
        const vl_rank *rk = rank(&x, r);
        const vl_mb *sh = &x.f.p.mbs[rk->mb0];
        uint32_t n;
        cr_assert_eq(rk->nmb, 2, "the outlier's shared pack, then the rank's own");
        expect_seg(&x.f.p, sh, 0, 0, 0, 8192);
        cr_assert_not_null(vl_plan_mb_members(&x.f.p, sh, &n));
        cr_assert_eq(n, 2);
        cr_assert_eq(x.f.p.mbs[rk->mb0 + 1].nseg, 4, "each member carries four short samples");
    }
    vl_sim_iter_result r = sim(&x, &t);
    cr_assert_float_eq(r.makespan_ms / 1e3, 2.114388, 5e-7, "%.7f", r.makespan_ms / 1e3);
    cr_assert_eq(r.tokens, 8192 + 8 * 1024);
    /* the shared copies start and end together */
    double fs[2] = {-1, -1}, fe[2] = {-1, -1};
    for (size_t i = 0; i < t.ntasks; i++)
        if (t.tasks[i].kind == VL_TASK_F && t.tasks[i].mb == 0) {
            fs[t.tasks[i].rank] = t.tasks[i].start;
            fe[t.tasks[i].rank] = t.tasks[i].end;
        }
    cr_assert(fs[0] >= 0 && fs[0] == fs[1] && fe[0] == fe[1]);
    vl_sim_trace_free(&t);
    /* without DP-Merge rank 0 carries the outlier alone: 3.758555 s */
    example_d(&y, false);
    cr_assert_eq(y.w.ngroups, 0);
    cr_assert_float_eq(sim(&y, NULL).makespan_ms / 1e3, 3.758555, 5e-7);
    spx_fini(&x);
    spx_fini(&y);
}

/* ---- negative cases verify must name, on SlimPack's own plans ---- */

static void plan_a(spx *x)
{
    uint32_t s0 = 0;

    spx_init(x, 0, 4, 1, 4, SP_ASYM_ON);
    x->f.len[0] = 4096;
    spx_plan(x, &s0, 1);
}

static void set_op(spx *x, uint32_t i, vl_op_kind kind, uint32_t mb)
{
    vl_op *op = &x->f.p.ops[rank(x, 0)->op0 + i];
    op->kind = (uint8_t)kind;
    op->mb = mb;
}

Test(slimpack, negatives_verify_names)
{
    spx x;

    /* a backward token missing: the last backward pack loses its first token */
    plan_a(&x);
    const vl_rank *rk = rank(&x, 0);
    vl_mb *b3 = &x.f.p.mbs[rk->mb0 + rk->nmb + 3];
    x.f.p.segs[b3->seg0].off += 1;
    x.f.p.segs[b3->seg0].len -= 1;
    b3->tokens -= 1;
    verify(&x, "its backward packs do not hold exactly the tokens");
    spx_fini(&x);
    /* a backward pack before its forward: F0 F1 F2 B0 F3 ... */
    plan_a(&x);
    set_op(&x, 3, VL_OP_B, 0);
    set_op(&x, 4, VL_OP_F, 3);
    verify(&x, "go backward before their forward");
    spx_fini(&x);
    /* slices out of LIFO order: B1 before B0 */
    plan_a(&x);
    set_op(&x, 4, VL_OP_B, 1);
    set_op(&x, 5, VL_OP_B, 0);
    verify(&x, "go backward before tokens from");
    spx_fini(&x);
    /* a recompute on a rank with backward packs */
    plan_a(&x);
    cr_assert_eq(vl_plan_op(&x.f.p, 0, VL_OP_R, &x.f.err), VL_OK);
    verify(&x, "recomputes on a rank with backward packs");
    spx_fini(&x);
    /* mismatched copies of a shared pack: rank 1's copy of the outlier pack */
    example_d(&x, true);
    const vl_mb *sh = &x.f.p.mbs[rank(&x, 1)->mb0];
    x.f.p.segs[sh->seg0].len -= 1;
    x.f.p.mbs[rank(&x, 1)->mb0].tokens -= 1;
    verify(&x, "is different");
    spx_fini(&x);
}

/* ---- phase 1 ---- */

/* LPT: heaviest first to the least-loaded rank, ties to the lowest index. */
Test(slimpack, phase1_lpt_ties_to_lowest_rank)
{
    spx x;
    uint32_t samples[5] = {0, 1, 2, 3, 4};

    spx_init(&x, 1, 1, 2, 1, SP_ASYM_ON);
    x.o.dp_merge = false;
    x.f.len[0] = 400;
    x.f.len[1] = 300;
    x.f.len[2] = 300;
    x.f.len[3] = 200;
    x.f.len[4] = 100;
    x.w.samples = malloc(sizeof samples);
    memcpy(x.w.samples, samples, sizeof samples);
    x.w.samples_cap = x.w.nsamples = 5;
    cr_assert_eq(vl__sp_phase1(&x.w, &x.s, x.f.len, &x.f.err), VL_OK);
    /* work P + T: 400 -> 80,600 on r0; 300 (45,450) -> r1; the second 300 -> r1
     * (45,450 < 80,600); 200 (20,300) -> r0 (80,600 < 90,900); 100 -> r1 (90,900 <
     * 100,900) */
    cr_assert_eq(x.w.rank_of[0], 0);
    cr_assert_eq(x.w.rank_of[1], 1);
    cr_assert_eq(x.w.rank_of[2], 1);
    cr_assert_eq(x.w.rank_of[3], 0);
    cr_assert_eq(x.w.rank_of[4], 1);
    cr_assert_eq(x.w.own0[1], 2, "r0 holds two samples, heaviest first");
    cr_assert_eq(x.w.own[0], 0);
    cr_assert_eq(x.w.own[1], 3);
    spx_fini(&x);
}

/* ---- DP-Merge by memory ---- */

/* Example E (ours): example D's shape with short samples enough that the 8192-token
 * sample is lighter than a rank's capacity C, and device memory between what 4096 and
 * 8192 of its tokens need on one rank with every slice in flight: DP-Merge by memory
 * gives it k = 2 ranks; with room to spare, no group. */
static void example_e(spx *x, bool tight)
{
    uint32_t samples[81];
    vl_par par = {1, 1, 1, 0};

    spx_init(x, 1, 1, 2, 2, SP_ASYM_ON);
    x->f.len[0] = 8192;
    samples[0] = 0;
    for (uint32_t s = 1; s <= 80; s++) {
        x->f.len[s] = 1024;
        samples[s] = s;
    }
    double p4 = vl_cost_rank_peak_bytes(&x->f.c, 4096, &par, 2, 1);
    double p8 = vl_cost_rank_peak_bytes(&x->f.c, 8192, &par, 2, 1);
    x->f.cfg.cluster.mem_gib = x->f.cfg.cluster.mem_reserve_gib +
                               (tight ? (p4 + p8) / 2 : 2 * p8) / 1073741824.0;
    cr_assert_eq(vl_cost_init(&x->f.c, &x->f.cfg, &x->f.err), VL_OK);
    x->s.cost = &x->f.c;
    /* C = (W(8192) + 80 W(1024)) / 2 > W(8192): no merge by work */
    double W8 = vl__sp_work(x->s.coef.af, x->s.coef.bf, 0, 8192);
    double W1 = vl__sp_work(x->s.coef.af, x->s.coef.bf, 0, 1024);
    cr_assert_lt(W8, (W8 + 80 * W1) / 2);
    spx_plan(x, samples, 81);
    verify(x, NULL);
}

Test(slimpack, example_e_dp_merge_by_memory)
{
    spx x, y;

    example_e(&x, true);
    cr_assert_eq(vl__sp_mem_ranks(&x.s, 8192, x.w.room), 2);
    cr_assert_eq(vl__sp_mem_ranks(&x.s, 4096, x.w.room), 1);
    cr_assert_eq(x.w.ngroups, 1, "the sample that cannot fit one rank is merged");
    cr_assert_eq(x.w.groups[0].dp0, 0);
    cr_assert_eq(x.w.groups[0].k, 2);
    for (uint32_t r = 0; r < 2; r++) {
        const vl_mb *sh = &x.f.p.mbs[rank(&x, r)->mb0];
        uint32_t n;
        cr_assert_not_null(vl_plan_mb_members(&x.f.p, sh, &n), "rank %u's first pack", r);
        cr_assert_eq(n, 2);
        expect_seg(&x.f.p, sh, 0, 0, 0, 8192);
    }
    example_e(&y, false);
    cr_assert_eq(vl__sp_mem_ranks(&y.s, 8192, y.w.room), 1);
    cr_assert_eq(y.w.ngroups, 0, "room to spare: no merge");
    spx_fini(&x);
    spx_fini(&y);
}

/* The memory merge degree assumes the checkpointing the search may use: every layer
 * under full and auto, none under none and selective (the search checkpoints nothing
 * there, so a room that 8192 tokens fit fully checkpointed needs more ranks). */
Test(slimpack, mem_ranks_follow_the_recompute_mode)
{
    spx x;
    vl_par all = {1, 1, 1, 32};

    spx_init(&x, 1, 1, 2, 2, SP_ASYM_ON);
    x.s.cost = &x.f.c;
    double room = vl_cost_rank_peak_bytes(&x.f.c, 8192, &all, 2, 1);
    x.s.ckpt_mode = VL_RECOMPUTE_FULL;
    cr_assert_eq(vl__sp_mem_ranks(&x.s, 8192, room), 1);
    x.s.ckpt_mode = VL_RECOMPUTE_AUTO;
    cr_assert_eq(vl__sp_mem_ranks(&x.s, 8192, room), 1);
    x.s.ckpt_mode = VL_RECOMPUTE_NONE;
    int none = vl__sp_mem_ranks(&x.s, 8192, room);
    cr_assert_geq(none, 2, "no checkpointing: 8192 tokens exceed the fully checkpointed peak");
    x.s.ckpt_mode = VL_RECOMPUTE_SELECTIVE;
    cr_assert_eq(vl__sp_mem_ranks(&x.s, 8192, room), none,
                 "selective checkpoints no layer in SlimPack's search");
    spx_fini(&x);
}

/* ---- the memory budget ---- */

/* The batch's room: the baseline's memory (min(pp, ⌈tokens / (dp · context)⌉) context-
 * length micro-batches at the fewest checkpointed layers with which pp of them fit),
 * the device's with mem_budget=device, mem_cap_gib when set; never above the device. */
Test(slimpack, batch_room_is_the_baselines_memory)
{
    spx x;
    vl_par q = {1, 4, 1, 0};

    spx_init(&x, 1, 4, 2, 4, SP_ASYM_ON);
    x.f.cfg.cluster.mem_gib = 80;
    cr_assert_eq(vl_cost_init(&x.f.c, &x.f.cfg, &x.f.err), VL_OK);
    x.s.cost = &x.f.c;
    x.s.ctx = 8192;
    x.s.ckpt_mode = VL_RECOMPUTE_AUTO;
    double device = vl_cost_mem_capacity(&x.f.c);
    q.ckpt_layers = vl_cost_fewest_ckpt(&x.f.c, 8192, &q, 2, 4);
    cr_assert_geq(q.ckpt_layers, 0);
    /* 3 context-lengths per rank: 3 in flight; 40 of them: pp = 4 */
    cr_assert_float_eq(vl__sp_batch_room(&x.s, 6 * 8192),
                       vl_cost_rank_peak_bytes(&x.f.c, 8192, &q, 2, 3), 1);
    cr_assert_float_eq(vl__sp_batch_room(&x.s, 80 * 8192),
                       vl_cost_rank_peak_bytes(&x.f.c, 8192, &q, 2, 4), 1);
    cr_assert_leq(vl__sp_batch_room(&x.s, 80 * 8192), device);
    x.o.mem_budget = SP_MEM_DEVICE;
    cr_assert_float_eq(vl__sp_batch_room(&x.s, 80 * 8192), device, 1);
    x.o.mem_cap_gib = 10;
    cr_assert_float_eq(vl__sp_batch_room(&x.s, 80 * 8192), 10 * 1073741824.0, 1);
    x.o.mem_cap_gib = 1000;
    cr_assert_float_eq(vl__sp_batch_room(&x.s, 80 * 8192), device, 1);
    spx_fini(&x);
}
