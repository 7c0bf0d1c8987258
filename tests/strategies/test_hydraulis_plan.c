/* tests/strategies/test_hydraulis_plan.c -- Hydraulis plans end to end: verify passes (memory
 * included), same seed same plan, ranks of one iteration with different <tp, pp> and
 * micro-batch counts, the candidate recorded, the ablation modes, verify's bound on a
 * pack's capacity (the largest MaxLen), the -v listing, and the paper's shape
 * (Fig. 10/12) on the 32B setting against homogeneous packing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"
#include "run.h"
#include "sim.h"
#include "testutil.h"
#include "verify.h"

extern const vl_strategy vl_strategy_hydraulis, vl_strategy_pack;

static void run(vl_plan *p, const vl_strategy *s, vl_manifest *m, const vl_config *cfg,
                int verbose, char **log)
{
    vl_run_opts o = {.seed = 7, .verbose = verbose};
    vl_run_result res;
    vl_err err;
    cr_assert_eq(vl_run_plan(p, s, m, cfg, &o, &res, &err), VL_OK, "%s", err.msg);
    if (log)
        *log = res.log;
    else
        free(res.log);
}

static const char *const small[] = {
    "training.max_seq_len=32768", "training.oversize=truncate", "training.global_tokens=200000",
    NULL};

static bool plans_equal(const vl_plan *a, const vl_plan *b)
{
    if (a->nsegs != b->nsegs || a->nmbs != b->nmbs || a->nranks != b->nranks ||
        a->niters != b->niters || strcmp(a->params_json, b->params_json) != 0 ||
        memcmp(a->segs, b->segs, a->nsegs * sizeof *a->segs) != 0 ||
        memcmp(a->mbs, b->mbs, a->nmbs * sizeof *a->mbs) != 0)
        return false;
    for (size_t r = 0; r < a->nranks; r++)
        if (memcmp(&a->ranks[r].par, &b->ranks[r].par, sizeof a->ranks[r].par) != 0 ||
            a->ranks[r].nmb != b->ranks[r].nmb)
            return false;
    for (size_t i = 0; i < a->niters; i++)
        if (a->iters[i].candidate != b->iters[i].candidate)
            return false;
    return true;
}

Test(hydraulis_plan, verifies_and_is_deterministic)
{
    vl_config cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 3000, 1);
    vl_plan a, b;
    vl_verify_report rep;
    vl_err err;

    tu_config(&cfg, NULL, small);
    run(&a, &vl_strategy_hydraulis, m, &cfg, 0, NULL);
    run(&b, &vl_strategy_hydraulis, m, &cfg, 0, NULL);
    cr_assert(plans_equal(&a, &b), "same seed, different plans");
    vl_cost c;
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_verify(&a, &c, &vl_registry_rules, &rep, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(rep.violations, 0, "%s", rep.nmsgs ? rep.msgs[0] : "");
    cr_assert(strstr(a.params_json, "\"s_step\":128") != NULL, "%s", a.params_json);
    vl_plan_free(&a);
    vl_plan_free(&b);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

/* Ranks of one iteration differ in <tp, pp> and micro-batch counts; packs are padded to
 * 128, ordered by tokens; the candidate and the capabilities are recorded.  Candidate 0
 * is tp 8 (it holds the context, so no homogeneous fallback competes, and mixes win some
 * iterations). */
Test(hydraulis_plan, heterogeneous_ranks)
{
    static const char *const tp8[] = {"training.max_seq_len=32768", "training.oversize=truncate",
                                      "training.global_tokens=200000", "training.tp=8", NULL};
    vl_config cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 3000, 2);
    vl_plan p;
    bool mixed = false, uneven = false;

    tu_config(&cfg, NULL, tp8);
    run(&p, &vl_strategy_hydraulis, m, &cfg, 0, NULL);
    cr_assert_eq(p.caps, VL_CAP_UNEVEN_MBS | VL_CAP_WORLD_OPTIM);
    for (size_t i = 0; i < p.niters; i++) {
        const vl_iter *in = &p.iters[i];
        const vl_rank *r0 = &p.ranks[in->rank0];
        uint32_t gpus = 0;
        cr_assert_geq(in->candidate, 0);
        for (uint32_t r = 0; r < in->nranks; r++) {
            const vl_rank *rk = &p.ranks[in->rank0 + r];
            mixed = mixed || rk->par.tp != r0->par.tp || rk->par.pp != r0->par.pp;
            uneven = uneven || rk->nmb != r0->nmb;
            gpus += vl_plan_rank_size(rk);
            cr_assert_eq(rk->par.sp, 1);
            for (uint32_t j = 0; j < rk->nmb; j++) {
                const vl_mb *mb = &p.mbs[rk->mb0 + j];
                cr_assert_eq(mb->cap % HY_ALIGN, 0);
                cr_assert(mb->cap >= mb->tokens && mb->cap < mb->tokens + HY_ALIGN);
                if (j > 0)
                    cr_assert_leq(mb->tokens, p.mbs[rk->mb0 + j - 1].tokens);
            }
        }
        cr_assert_leq(gpus, (uint32_t)cfg.cluster.gpus);
    }
    cr_assert(mixed, "no iteration mixes pipeline schemes");
    cr_assert(uneven, "no iteration has uneven micro-batch counts");
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

static vl_plan plan_with(const char *const *extra, vl_manifest *m, const char *file)
{
    const char *sets[16];
    size_t n = 0;
    vl_config cfg;
    vl_plan p;

    for (size_t i = 0; small[i]; i++)
        sets[n++] = small[i];
    for (size_t i = 0; extra && extra[i]; i++)
        sets[n++] = extra[i];
    sets[n] = NULL;
    tu_config(&cfg, file, sets);
    run(&p, &vl_strategy_hydraulis, m, &cfg, 0, NULL);
    vl_config_free(&cfg);
    return p;
}

Test(hydraulis_plan, modes)
{
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 2000, 3);
    const char *homo[] = {"hydraulis.mode=homo", "training.tp=2", NULL};
    const char *stat[] = {"hydraulis.mode=static", NULL};
    const char *maxp[] = {"hydraulis.packing=max", NULL};
    vl_plan h = plan_with(homo, m, NULL), s = plan_with(stat, m, NULL);
    vl_plan x = plan_with(maxp, m, NULL), b = plan_with(NULL, m, NULL);

    for (size_t r = 0; r < h.nranks; r++)
        cr_assert(h.ranks[r].par.tp == 2 && h.ranks[r].par.pp == 1);
    for (size_t i = 0; i < h.niters; i++)
        cr_assert_eq(h.iters[i].candidate, 0);
    for (size_t i = 1; i < s.niters; i++)
        cr_assert_eq(s.iters[i].candidate, s.iters[0].candidate);
    cr_assert_gt(s.iters[0].candidate, 0, "static runs a heterogeneous candidate");
    /* packing to the maximum length is first fit decreasing: no two micro-batches of a
     * rank would fit together in min(MaxLen, context) */
    vl_config cfg;
    vl_cost c;
    vl_err err;
    tu_config(&cfg, NULL, small);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    for (size_t r = 0; r < x.nranks; r++) {
        const vl_rank *rk = &x.ranks[r];
        uint32_t cap = vl__hy_maxlen(&c, rk->par.tp, rk->par.pp, cfg.cluster.gpus);
        cap = cap < cfg.training.max_seq_len ? cap : cfg.training.max_seq_len;
        if (rk->nmb >= 2)   /* sorted by tokens descending: the last two are the smallest */
            cr_assert_gt(x.mbs[rk->mb0 + rk->nmb - 1].tokens +
                         x.mbs[rk->mb0 + rk->nmb - 2].tokens, cap, "rank %zu", r);
    }
    vl_config_free(&cfg);
    vl_plan_free(&h);
    vl_plan_free(&s);
    vl_plan_free(&x);
    vl_plan_free(&b);
    vl_manifest_free(m);
}

/* The bound verify holds each pack to (the strategy's max_cap): the largest MaxLen of
 * the schemes the candidates may use; with packing max, the context length (rounded up
 * to 128) when that is shorter. */
static uint32_t largest_maxlen(const vl_config *cfg)
{
    vl_cost c;
    hy_schemes sch;
    vl_err err;
    uint32_t best = 0;

    cr_assert_eq(vl_cost_init(&c, cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl__hy_schemes(&sch, &c, &err), VL_OK, "%s", err.msg);
    for (size_t i = 0; i < sch.n; i++)
        best = sch.s[i].maxlen > best ? sch.s[i].maxlen : best;
    vl__hy_schemes_free(&sch);
    return best;
}

static uint64_t max_cap_of(const vl_config *cfg)
{
    hy_opts o;
    vl_err err;

    cr_assert_eq(vl_config_bind(cfg, "hydraulis", vl_strategy_hydraulis.params, &o, &err),
                 VL_OK, "%s", err.msg);
    return vl_strategy_hydraulis.max_cap(&o, cfg);
}

/* A Hydraulis plan's packs all fit the bound, its largest pack at the bound passes and
 * one block of slots beyond it is an I3 violation. */
Test(hydraulis_plan, verify_bounds_each_pack_by_maxlen)
{
    static const char *const maxpack[] = {"training.max_seq_len=1000",
                                          "hydraulis.packing=max", NULL};
    vl_config cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 3000, 5);
    vl_plan p;
    vl_cost c;
    vl_verify_report rep;
    vl_err err;
    size_t big = 0;

    tu_config(&cfg, NULL, small);
    uint32_t bound = largest_maxlen(&cfg);
    cr_assert_gt(bound, 0);
    cr_assert_eq(max_cap_of(&cfg), bound);
    run(&p, &vl_strategy_hydraulis, m, &cfg, 0, NULL);
    for (size_t i = 0; i < p.nmbs; i++) {
        cr_assert_leq(p.mbs[i].cap, bound, "pack %zu", i);
        big = p.mbs[i].cap > p.mbs[big].cap ? i : big;
    }
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK, "%s", err.msg);
    p.mbs[big].cap = bound;   /* the modelled memory follows tokens, not slots */
    cr_assert_eq(vl_plan_verify(&p, &c, &vl_registry_rules, &rep, &err), VL_OK, "%s", err.msg);
    p.mbs[big].cap = bound + HY_ALIGN;
    cr_assert_eq(vl_plan_verify(&p, &c, &vl_registry_rules, &rep, &err), VL_EVERIFY);
    cr_assert_eq(rep.violations, 1, "%s", rep.nmsgs ? rep.msgs[0] : "");
    cr_assert_eq(rep.by_inv[2], 1);
    cr_assert(strstr(rep.msgs[0], "exceeds the") && strstr(rep.msgs[0], "token slots strategy "
                                                            "hydraulis writes"), "%s",
              rep.msgs[0]);
    vl_plan_free(&p);
    vl_config_free(&cfg);
    /* packing max: micro-batches of at most the 1000-token context, in 1024 slots */
    tu_config(&cfg, NULL, maxpack);
    cr_assert_eq(max_cap_of(&cfg), largest_maxlen(&cfg) < 1024 ? largest_maxlen(&cfg) : 1024);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

Test(hydraulis_plan, verbose_lists_schemes_and_candidates)
{
    vl_config cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 1000, 4);
    vl_plan p;
    char *log = NULL;

    tu_config(&cfg, NULL, small);
    run(&p, &vl_strategy_hydraulis, m, &cfg, 1, &log);
    cr_assert_not_null(log);
    cr_assert(strstr(log, "MaxLen") && strstr(log, "UtilLen"), "%s", log);
    cr_assert(strstr(log, "[0] 32x1/1: MaxLen") && strstr(log, "(homogeneous)"), "%s", log);
    cr_assert(strstr(log, "[1] ") && strstr(log, "GPUs, DP estimate"), "%s", log);
    cr_assert(strstr(log, "chosen:"), "%s", log);
    free(log);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

Test(hydraulis_plan, bad_candidates_are_a_config_error)
{
    vl_config cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 200, 5);
    const char *sets[] = {"training.max_seq_len=32768", "training.oversize=truncate",
                          "hydraulis.candidates=4x3/1", NULL};
    vl_run_opts o = {.seed = 1};
    vl_plan p;
    vl_err err;

    tu_config(&cfg, NULL, sets);
    cr_assert_eq(vl_run_plan(&p, &vl_strategy_hydraulis, m, &cfg, &o, NULL, &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "hydraulis.candidates: scheme 3/1 is not usable"), "%s", err.msg);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

/* ---- the paper's shape: 32B, 64 GPUs, ~200K tokens, 40 iterations ---- */

static double median(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Per-iteration simulated time and rank gap of the first n iterations. */
static void simulate(const vl_plan *p, const vl_config *cfg, size_t n, double *ms, double *gap)
{
    vl_cost c;
    vl_err err;
    cr_assert_eq(vl_cost_init(&c, cfg, &err), VL_OK);
    cr_assert_geq(p->niters, n);
    for (size_t i = 0; i < n; i++) {
        vl_sim_iter_result r;
        cr_assert_eq(vl_sim_iter(p, i, &c, NULL, &r, NULL, NULL, &err), VL_OK, "%s", err.msg);
        cr_assert(!r.oom, "iteration %zu out of memory", i);
        ms[i] = r.iter_time_ms;
        gap[i] = r.rank_gap;
    }
}

#define PAPER_ITERS 40

Test(hydraulis_plan, paper_shape_32b_64_gpus)
{
    vl_config cfg, homo_cfg, pack_cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:6.7:1.1", 5600, 7);
    const char *homo_set[] = {"hydraulis.mode=homo", NULL};
    /* the paper's baseline packs each global batch (pack's default packs the epoch) */
    const char *pack_set[] = {"pack.scope=batch", NULL};
    vl_plan pk, hy, ho;
    double t_pk[PAPER_ITERS], g_pk[PAPER_ITERS], t_hy[PAPER_ITERS], g_hy[PAPER_ITERS];
    double t_ho[PAPER_ITERS], g_ho[PAPER_ITERS], sp[PAPER_ITERS], sum_hy = 0, sum_ho = 0;
    bool seen[64] = {false};
    int distinct = 0;

    tu_config(&cfg, "configs/hydraulis-32b_a800x64.yaml", NULL);
    tu_config(&homo_cfg, "configs/hydraulis-32b_a800x64.yaml", homo_set);
    tu_config(&pack_cfg, "configs/hydraulis-32b_a800x64.yaml", pack_set);
    run(&pk, &vl_strategy_pack, m, &pack_cfg, 0, NULL);
    run(&hy, &vl_strategy_hydraulis, m, &cfg, 0, NULL);
    run(&ho, &vl_strategy_hydraulis, m, &homo_cfg, 0, NULL);
    simulate(&pk, &pack_cfg, PAPER_ITERS, t_pk, g_pk);
    simulate(&hy, &cfg, PAPER_ITERS, t_hy, g_hy);
    simulate(&ho, &homo_cfg, PAPER_ITERS, t_ho, g_ho);
    for (size_t i = 0; i < PAPER_ITERS; i++) {
        /* the same global batches: the sampler cuts them, not the strategy */
        cr_assert_eq(pk.iters[i].tokens, hy.iters[i].tokens, "iteration %zu", i);
        sp[i] = t_pk[i] / t_hy[i];
        sum_hy += t_hy[i];
        sum_ho += t_ho[i];
        if (!seen[hy.iters[i].candidate])
            distinct++;
        seen[hy.iters[i].candidate] = true;
    }
    cr_assert_geq(distinct, 3, "candidates chosen: %d", distinct);
    cr_assert_leq(median(g_hy, PAPER_ITERS), 0.15);
    cr_assert_geq(median(g_pk, PAPER_ITERS), 0.3);
    double s = median(sp, PAPER_ITERS);
    cr_assert(s >= 1.3 && s <= 2.7, "median speedup %.3f", s);
    cr_assert_lt(sum_hy, sum_ho, "dynamic heterogeneous %.0f ms vs homogeneous %.0f ms", sum_hy,
                 sum_ho);
    vl_plan_free(&pk);
    vl_plan_free(&hy);
    vl_plan_free(&ho);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    vl_config_free(&homo_cfg);
    vl_config_free(&pack_cfg);
}

/* s_step is at least 32: below, the proposal DP's work (quadratic in context / s_step)
 * ran for over a minute on two samples. */
Test(hydraulis_plan, s_step_has_a_lower_bound)
{
    const char *args[] = {"plan", "-s", "hydraulis", "--set", "hydraulis.s_step=1",
                          "testdata/demo.jsonl", NULL};
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_expect_eq(r.status, 78, "%s", r.err);
    cr_expect(strstr(r.err, "hydraulis.s_step: expected 32..") != NULL, "%s", r.err);
    tu_result_free(&r);
}

/* The choice is verified by simulation (hydraulis.verify, ours): each iteration of the
 * default plan simulates no slower than the best estimate's (verify=0, the paper), the
 * same batches and dispatch, and some iteration is faster. */
Test(hydraulis_plan, choice_verified_by_simulation)
{
    const char *paper[] = {"hydraulis.verify=0", NULL};
    vl_config cfg;
    vl_cost c;
    vl_err err;
    size_t faster = 0;

    tu_config(&cfg, NULL, small);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    for (uint64_t seed = 1; seed <= 2; seed++) {
        vl_manifest *m = tu_gen_manifest("lmsys", 3000, seed);
        vl_plan a = plan_with(paper, m, NULL), b = plan_with(NULL, m, NULL);
        cr_assert_eq(a.niters, b.niters);
        for (size_t i = 0; i < a.niters; i++) {
            vl_sim_iter_result ra, rb;
            cr_assert_eq(vl_sim_iter(&a, i, &c, NULL, &ra, NULL, NULL, &err), VL_OK, "%s",
                         err.msg);
            cr_assert_eq(vl_sim_iter(&b, i, &c, NULL, &rb, NULL, NULL, &err), VL_OK, "%s",
                         err.msg);
            cr_expect_leq(rb.iter_time_ms, ra.iter_time_ms, "seed %llu, iteration %zu",
                          (unsigned long long)seed, i);
            faster += rb.iter_time_ms < ra.iter_time_ms;
        }
        vl_plan_free(&a);
        vl_plan_free(&b);
        vl_manifest_free(m);
    }
    cr_expect_gt(faster, 0, "no iteration chose by simulation");
    vl_config_free(&cfg);
}
