/* tests/strategies/test_hydraulis.c -- Hydraulis step by step: the hand examples H1 (dispatch), H2
 * (packing) and H4 (proposal DP) of docs/hydraulis.md §4, exactly; and the properties:
 * packing never beats the Eq. 2 lower bound, MaxLen tokens fit the simulator's memory
 * timeline and MaxLen + 128 do not, MaxLen never falls as tp or pp grows. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"
#include "rng.h"
#include "sim.h"

/* T(l) = b·l + c, a = 0. */
static hy_scheme lin(int tp, int pp, uint32_t maxlen, double b, double c)
{
    return (hy_scheme){.tp = tp, .pp = pp, .a = 0, .b = b, .c = c, .maxlen = maxlen,
                       .utillen = 1};
}

/* ---- H1: dispatch ---- */

static double dispatch(const hy_scheme *s, size_t np, const uint32_t *len, size_t n,
                       uint32_t trials, uint32_t *owner)
{
    hy_pipe pipes[8];
    uint32_t seq[16];
    hy_work w = {0};
    vl_status st;
    vl_err err;
    double obj;

    for (size_t j = 0; j < np; j++)
        pipes[j] = (hy_pipe){.s = &s[j], .slot = (uint32_t)j};
    for (size_t i = 0; i < n; i++)
        seq[i] = (uint32_t)i;
    obj = vl__hy_dispatch(&w, pipes, np, seq, n, len, trials, 7, 0, false, owner, &st, &err);
    cr_assert_eq(st, VL_OK, "%s", err.msg);
    vl__hy_work_free(&w);
    return obj;
}

Test(hydraulis, h1_dispatch_two_kinds_of_pipeline)
{
    hy_scheme s[2] = {lin(1, 1, 10, 1, 0), lin(1, 2, 4, 1, 0)};
    uint32_t len[5] = {8, 3, 3, 2, 2}, owner[5];
    uint32_t want[5] = {0, 1, 1, 0, 1};   /* A = {8, 2}, B = {3, 3, 2} */

    cr_assert_eq(dispatch(s, 2, len, 5, 0, owner), 11.0);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(owner[i], want[i], "sequence %d went to %u", i, owner[i]);
    /* 11 is the brute-force optimum of Eq. 3: random trials cannot beat it */
    cr_assert_eq(dispatch(s, 2, len, 5, 50, owner), 11.0);
}

Test(hydraulis, h1_empty_pipeline_is_infeasible)
{
    hy_scheme s[3] = {lin(1, 1, 10, 1, 0), lin(1, 1, 10, 1, 0), lin(1, 1, 10, 1, 0)};
    uint32_t len[2] = {5, 4}, owner[2];

    cr_assert_eq(dispatch(s, 3, len, 2, 0, owner), -1.0);
    cr_assert_eq(dispatch(s, 3, len, 2, 50, owner), -1.0);
}

Test(hydraulis, h1_empty_pipeline_wins_a_tie)
{
    hy_scheme s[2] = {lin(1, 1, 10, 1, 0), lin(1, 1, 10, 1, 0)};
    uint32_t len[3] = {5, 4, 3}, owner[3];

    cr_assert_eq(dispatch(s, 2, len, 3, 0, owner), 7.0);
    cr_assert_eq(owner[0], 1);   /* {5} */
    cr_assert_eq(owner[1], 0);   /* {4, 3} */
    cr_assert_eq(owner[2], 0);
}

Test(hydraulis, dispatch_respects_maxlen)
{
    hy_scheme s[2] = {lin(2, 1, 4096, 1, 0), lin(1, 1, 1024, 0.5, 0)};
    uint32_t len[12], owner[12];
    vl_rng r;

    vl_rng_seed(&r, 3, 0);
    for (int i = 0; i < 12; i++)
        len[i] = 1 + (uint32_t)vl_rng_below(&r, i % 3 == 0 ? 4096 : 1024);
    cr_assert_geq(dispatch(s, 2, len, 12, 20, owner), 0.0);
    for (int i = 0; i < 12; i++)
        cr_assert_leq(len[i], s[owner[i]].maxlen);
}

/* ---- H2: packing ---- */

static double pack(const hy_scheme *s, const uint32_t *len, size_t n, uint32_t *v)
{
    uint32_t seq[64], bin[64];
    hy_work w = {0};
    vl_status st;
    vl_err err;
    double e;

    for (size_t i = 0; i < n; i++)
        seq[i] = (uint32_t)i;
    e = vl__hy_pack(&w, s, seq, n, len, HY_BALANCED, bin, v, &st, &err);
    cr_assert_eq(st, VL_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert_lt(bin[i], *v);
    vl__hy_work_free(&w);
    return e;
}

Test(hydraulis, h2_minmax_per_count)
{
    uint32_t tok[5] = {6, 4, 3, 2, 1}, bin[5];
    double t[5] = {6, 4, 3, 2, 1}, want[4] = {8, 6, 6, 6};
    hy_work w = {0};
    vl_status st;
    vl_err err;

    for (uint32_t v = 2; v <= 5; v++)
        cr_assert_eq(vl__hy_minmax(&w, t, tok, 5, v, 8, bin, &st, &err), want[v - 2],
                     "v = %u", v);
    cr_assert_eq(vl__hy_minmax(&w, t, tok, 5, 1, 8, bin, &st, &err), -1.0, "16 tokens in 8");
    vl__hy_work_free(&w);
}

Test(hydraulis, h2_micro_batch_count)
{
    uint32_t len[5] = {6, 4, 3, 2, 1}, v;
    hy_scheme deep = lin(1, 4, 8, 1, 0), flat = lin(1, 1, 8, 1, 1);

    cr_assert_eq(pack(&deep, len, 5, &v), 36.0);   /* e = 40, 36, 42, 48 */
    cr_assert_eq(v, 3);
    cr_assert_eq(pack(&flat, len, 5, &v), 18.0);   /* e = 18, 21, 28, 35 */
    cr_assert_eq(v, 2);
}

Test(hydraulis, packing_max_takes_the_fewest_micro_batches)
{
    uint32_t len[5] = {6, 4, 3, 2, 1}, seq[5] = {0, 1, 2, 3, 4}, bin[5], v;
    hy_scheme deep = lin(1, 4, 8, 1, 0);
    hy_work w = {0};
    vl_status st;
    vl_err err;

    /* FFD into 8 tokens: {6, 2}, {4, 3, 1}: v = 2, heaviest 8, e = 8 · 5 */
    cr_assert_eq(vl__hy_pack(&w, &deep, seq, 5, len, HY_MAXPACK, bin, &v, &st, &err), 40.0);
    cr_assert_eq(v, 2);
    vl__hy_work_free(&w);
}

Test(hydraulis, packing_cost_at_least_the_eq2_bound)
{
    vl_rng r;

    vl_rng_seed(&r, 11, 0);
    for (int round = 0; round < 200; round++) {
        hy_scheme s = {.tp = 1, .pp = 1 + (int)vl_rng_below(&r, 8),
                       .a = vl_rng_unit(&r) * 1e-5, .b = vl_rng_unit(&r), .c = vl_rng_unit(&r) * 20,
                       .maxlen = 4096, .utillen = 128 + 128 * (uint32_t)vl_rng_below(&r, 8)};
        uint32_t len[40], v;
        size_t n = 1 + vl_rng_below(&r, 40);
        double sum = 0, top = 0, e;
        for (size_t i = 0; i < n; i++) {
            len[i] = 1 + (uint32_t)vl_rng_below(&r, 4096);
            sum += hy_t(&s, len[i]);
            top = fmax(top, hy_t(&s, len[i]));
        }
        e = pack(&s, len, n, &v);
        cr_assert_geq(e, (sum + (s.pp - 1) * top) * (1 - 1e-12), "round %d: %g < bound %g",
                      round, e, sum + (s.pp - 1) * top);
    }
}

/* ---- H4: proposal DP ---- */

Test(hydraulis, h4_proposal_dp)
{
    hy_scheme s[2] = {lin(1, 1, 4, 1, 0), lin(2, 1, 8, 0.6, 0)};
    hy_schemes sch = {.s = s, .n = 2};
    uint32_t len[5] = {2, 2, 2, 2, 8}, idx[5] = {0, 1, 2, 3, 4}, pipes[4];
    struct { int N; uint32_t s; double t; size_t np; uint32_t p[2]; } want[] = {
        {2, 2, 4, 2, {0, 0}}, {2, 4, 4, 2, {0, 0}}, {2, 6, 4.8, 1, {1}}, {2, 8, 9.6, 1, {1}},
        {3, 8, 8, 2, {1, 0}}, {3, 6, 4.8, 1, {1}},
    };
    hy_hist h;
    vl_err err;

    cr_assert_eq(vl__hy_hist(&h, idx, 5, len, 2, 1.0, &err), VL_OK);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        size_t np;
        double t;
        cr_assert_eq(vl__hy_dp_at(&h, &sch, want[k].N, 1, want[k].s, pipes, &np, &t, &err),
                     VL_OK);
        cr_assert(fabs(t - want[k].t) < 1e-12, "N %d s %u: t %g", want[k].N, want[k].s, t);
        cr_assert_eq(np, want[k].np, "N %d s %u: %zu pipelines", want[k].N, want[k].s, np);
        for (size_t i = 0; i < np; i++)
            cr_assert_eq(pipes[i], want[k].p[i]);
    }
    vl__hy_hist_free(&h);
}

/* Each of the d pipelines an interval goes to pays its own pipeline bubble: four
 * sequences of 8 on <1, 2> (T = l per stage) over 4 GPUs, two pipelines: 32 / 2 + 1 x 8
 * = 24 (the authors' code divides the bubble too: 40 / 2 = 20). */
Test(hydraulis, h4_proposal_dp_bubble_per_pipeline)
{
    hy_scheme s[1] = {lin(1, 2, 8, 1, 0)};
    hy_schemes sch = {.s = s, .n = 1};
    uint32_t len[4] = {8, 8, 8, 8}, idx[4] = {0, 1, 2, 3}, pipes[2];
    size_t np;
    double t;
    hy_hist h;
    vl_err err;

    cr_assert_eq(vl__hy_hist(&h, idx, 4, len, 8, 1.0, &err), VL_OK);
    cr_assert_eq(vl__hy_dp_at(&h, &sch, 4, 1, 8, pipes, &np, &t, &err), VL_OK);
    cr_expect(fabs(t - 24) < 1e-12, "t %g", t);
    cr_expect_eq(np, 2);
    vl__hy_hist_free(&h);
}

/* The per-call constant c is paid per micro-batch (sequences are packed), not per
 * sequence: four sequences of 2 on <1, 1> with MaxLen 8 and T = l + 5 on one GPU fill one
 * micro-batch: 8 + 5 = 13 (per sequence it would be 4 x 7 = 28). */
Test(hydraulis, h4_proposal_dp_constant_per_micro_batch)
{
    hy_scheme s[1] = {lin(1, 1, 8, 1, 5)};
    hy_schemes sch = {.s = s, .n = 1};
    uint32_t len[4] = {2, 2, 2, 2}, idx[4] = {0, 1, 2, 3}, pipes[1];
    size_t np;
    double t;
    hy_hist h;
    vl_err err;

    cr_assert_eq(vl__hy_hist(&h, idx, 4, len, 2, 1.0, &err), VL_OK);
    cr_assert_eq(vl__hy_dp_at(&h, &sch, 1, 1, 2, pipes, &np, &t, &err), VL_OK);
    cr_expect(fabs(t - 13) < 1e-12, "t %g", t);
    cr_expect_eq(np, 1);
    vl__hy_hist_free(&h);
}

Test(hydraulis, proposal_lists_unique_candidates)
{
    hy_scheme s[2] = {lin(1, 1, 4, 1, 0), lin(2, 1, 8, 0.6, 0)};
    hy_schemes sch = {.s = s, .n = 2};
    uint32_t len[5] = {2, 2, 2, 2, 8}, idx[5] = {0, 1, 2, 3, 4};
    hy_cands c = {0};
    hy_hist h;
    vl_err err;

    cr_assert_eq(vl__hy_hist(&h, idx, 5, len, 2, 1.0, &err), VL_OK);
    cr_assert_eq(vl__hy_propose(&c, &h, &sch, 2, 1, &err), VL_OK);
    cr_assert_eq(c.n, 2);   /* 2 x P1 (s = 2, 4), then P2 (s = 6, 8) */
    cr_assert_eq(c.c[0].np, 2);
    cr_assert_eq(c.c[0].maxlen, 4);
    cr_assert_eq(c.c[1].np, 1);
    cr_assert_eq(c.c[1].maxlen, 8);
    cr_assert_eq(c.c[1].s, 6);
    vl__hy_cands_free(&c);
    vl__hy_hist_free(&h);
}

Test(hydraulis, trim_keeps_first_and_last)
{
    hy_cands c = {0};
    hy_cand k[7];

    for (int i = 0; i < 7; i++)
        k[i] = (hy_cand){.s = (uint32_t)i};
    c.c = k;
    c.n = 7;
    vl__hy_cands_trim(&c, 3);   /* 0, then 1 + ceil(j·6/2) - 1 for j = 1, 2: 3 and 6 */
    cr_assert_eq(c.n, 3);
    cr_assert_eq(c.c[0].s, 0);
    cr_assert_eq(c.c[1].s, 3);
    cr_assert_eq(c.c[2].s, 6);
}

Test(hydraulis, explicit_candidates_parse)
{
    hy_scheme s[3] = {lin(16, 1, 40000, 1, 0), lin(8, 1, 20000, 1, 0), lin(4, 2, 12000, 1, 0)};
    hy_schemes sch = {.s = s, .n = 3};
    hy_cands c = {0};
    vl_err err;
    char buf[128];

    cr_assert_eq(vl__hy_parse_cands(&c, "4x16/1; 16/1+6x8/1;8x4/2", &sch, 64, &err), VL_OK,
                 "%s", err.msg);
    cr_assert_eq(c.n, 3);
    cr_assert_eq(c.c[1].np, 7);
    cr_assert_eq(c.c[1].gpus, 64);
    cr_assert_eq(c.c[1].maxlen, 40000);
    vl__hy_cand_text(&c, &sch, 1, buf, sizeof buf);
    cr_assert_str_eq(buf, "16/1+6x8/1");
    vl__hy_cands_free(&c);
    cr_assert_eq(vl__hy_parse_cands(&c, "4x16/1+1x2/2", &sch, 64, &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "scheme 2/2 is not usable") != NULL, "%s", err.msg);
    vl__hy_cands_free(&c);
    cr_assert_eq(vl__hy_parse_cands(&c, "5x16/1", &sch, 64, &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "needs 80 GPUs") != NULL, "%s", err.msg);
    vl__hy_cands_free(&c);
    cr_assert_eq(vl__hy_parse_cands(&c, "16-1", &sch, 64, &err), VL_ECONFIG);
    vl__hy_cands_free(&c);
}

/* ---- MaxLen against the simulator ---- */

static void config(vl_config *cfg, vl_cost *c)
{
    vl_err err;
    cr_assert_eq(vl_config_init_default(cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_set(cfg, "training.max_seq_len=32768", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(c, cfg, &err), VL_OK, "%s", err.msg);
}

/* Does a rank of <tp, pp> running `mbs` micro-batches of `tokens` fit, per the simulator? */
static bool fits(const vl_cost *c, int tp, int pp, uint32_t tokens, uint32_t mbs)
{
    uint32_t len[16];
    vl_manifest *m = NULL;
    vl_plan p;
    vl_par par = {.tp = tp, .pp = pp, .sp = 1, .ckpt_layers = 0};
    vl_sim_iter_result r;
    vl_err err;

    for (uint32_t i = 0; i < mbs; i++)
        len[i] = tokens;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, mbs, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_init(&p, m, "hydraulis", 1, &err), VL_OK);
    p.caps = VL_CAP_UNEVEN_MBS | VL_CAP_WORLD_OPTIM;
    cr_assert_eq(vl_plan_iter_begin(&p, 0, &err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&p, 0, &par, &err), VL_OK);
    for (uint32_t i = 0; i < mbs; i++) {
        cr_assert_eq(vl_plan_mb_begin(&p, tokens, &err), VL_OK);
        cr_assert_eq(vl_plan_seg(&p, i, 0, tokens, &err), VL_OK);
    }
    cr_assert_eq(vl_sim_iter(&p, 0, c, NULL, &r, NULL, NULL, &err), VL_OK, "%s", err.msg);
    vl_plan_free(&p);
    vl_manifest_free(m);
    return !r.oom;
}

Test(hydraulis, maxlen_fits_and_one_more_block_does_not)
{
    vl_config cfg;
    vl_cost c;
    int checked = 0;

    config(&cfg, &c);
    for (int tp = 1; tp <= 8; tp *= 2)
        for (int pp = 1; pp <= 8; pp *= 2) {
            uint32_t m = vl__hy_maxlen(&c, tp, pp, cfg.cluster.gpus);
            if (m == 0)
                continue;
            cr_assert_eq(m % HY_ALIGN, 0);
            /* 1F1B with more micro-batches than stages: pp in flight on stage 0 */
            cr_assert(fits(&c, tp, pp, m, (uint32_t)pp + 2), "tp %d pp %d: %u", tp, pp, m);
            cr_assert(!fits(&c, tp, pp, m + HY_ALIGN, (uint32_t)pp + 2), "tp %d pp %d: %u + 128",
                      tp, pp, m);
            checked++;
        }
    cr_assert_gt(checked, 8);
    vl_config_free(&cfg);
}

Test(hydraulis, maxlen_monotone_in_tp_and_pp)
{
    vl_config cfg;
    vl_cost c;

    config(&cfg, &c);
    for (int tp = 1; tp <= 16; tp *= 2)
        for (int pp = 1; pp <= 16; pp *= 2) {
            uint32_t m = vl__hy_maxlen(&c, tp, pp, cfg.cluster.gpus);
            if (tp < 16)
                cr_assert_leq(m, vl__hy_maxlen(&c, 2 * tp, pp, cfg.cluster.gpus),
                              "tp %d pp %d", tp, pp);
            if (pp < 16)
                cr_assert_leq(m, vl__hy_maxlen(&c, tp, 2 * pp, cfg.cluster.gpus),
                              "tp %d pp %d", tp, pp);
        }
    vl_config_free(&cfg);
}

Test(hydraulis, fit_tracks_the_cost_model)
{
    vl_config cfg;
    vl_cost c;
    double a, b, k;

    config(&cfg, &c);
    vl__hy_fit(&c, 2, 2, 32768, &a, &b, &k);
    cr_assert_geq(a, 0);
    cr_assert_gt(b, 0);
    cr_assert_geq(k, 0);
    for (uint32_t l = 1024; l <= 32768; l *= 2) {
        vl_par par = {.tp = 2, .pp = 2, .sp = 1};
        vl_seg seg = {0, 0, l};
        vl_mb_time f = vl_cost_mb_time(&c, &seg, 1, &par, 16, 1);
        double ms = (f.fwd + f.bwd) * 1e3, fit = (a * l + b) * l + k;
        cr_assert(fabs(fit - ms) / ms < 0.15, "l %u: fit %g ms, model %g ms", l, fit, ms);
    }
    vl_config_free(&cfg);
}

Test(hydraulis, utillen_table_and_curve)
{
    vl_config cfg;
    vl_cost c;

    config(&cfg, &c);
    cr_assert_eq(vl__hy_utillen(&cfg, 1, true), 384);
    cr_assert_eq(vl__hy_utillen(&cfg, 4, true), 768);
    cr_assert_eq(vl__hy_utillen(&cfg, 16, true), 1280);
    const vl_curve *g = &cfg.cluster.gemm_eff;
    uint32_t u = vl__hy_utillen(&cfg, 1, false);
    cr_assert_eq(u % HY_ALIGN, 0);
    cr_assert_geq(vl_curve_eval(g, u, VL_WORK_LINEAR), 0.85 * vl_curve_eval(g, 1 << 20, VL_WORK_LINEAR) - 1e-9);
    cr_assert_lt(vl_curve_eval(g, u - HY_ALIGN, VL_WORK_LINEAR), 0.85 * vl_curve_eval(g, 1 << 20, VL_WORK_LINEAR));
    vl_config_free(&cfg);
}
