/* tests/strategies/test_baseline.c -- the random, sorted and pack strategies on small manifests:
 * every sample once per epoch, equal micro-batch counts per rank, capacities, the
 * padded-batch caps, pack splitting and empty micro-batches, determinism, and the
 * library's own verifier through vl_run_plan. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "testutil.h"
#include "verify.h"
#include "vlplan_strategy.h"

typedef struct fixture {
    vl_config cfg;
    vl_manifest *m;
    vl_selection sel;
    vl_plan plan;
} fixture;

static void config(vl_config *cfg, int dp, uint32_t gb, uint32_t mb, uint32_t cap)
{
    vl_err err = {0};
    cr_assert_eq(vl_config_init_default(cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(cfg, &err), VL_OK, "%s", err.msg);
    cfg->training.dp = dp;
    cfg->cluster.gpus = dp;   /* dp x tp x pp x sp = gpus: every GPU joins every step */
    cfg->training.tp = cfg->training.pp = cfg->training.sp = 1;
    cfg->training.global_batch = gb;
    cfg->training.global_tokens = 0;
    cfg->training.micro_batch = mb;
    cfg->training.max_seq_len = cap;
    cfg->training.epochs = 1;
    cfg->training.recompute = VL_RECOMPUTE_NONE;
    cfg->pack.algo = VL_PACK_FFD;
}

static void plan_with(fixture *f, const char *name, const uint32_t *len, size_t n,
                      uint64_t seed)
{
    const vl_strategy *s = vl_strategy_find(name);
    vl_err err = {0};
    cr_assert_not_null(s);
    cr_assert_eq(vl_manifest_from_lengths(&f->m, len, n, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(s->validate(NULL, &f->cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_init(&f->plan, f->m, name, seed, &err), VL_OK);
    cr_assert_eq(vl_select(&f->sel, f->m, s->max_len(NULL, &f->cfg), f->cfg.training.oversize,
                           &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_add_drops(&f->plan, f->sel.drops, f->sel.ndrops, &err), VL_OK);
    vl_job job = {.m = f->m, .cfg = &f->cfg, .sel = &f->sel, .seed = seed};
    cr_assert_eq(vl_strategy_plan(s, NULL, &job, &f->plan, &err), VL_OK, "%s", err.msg);
}

static void fixture_free(fixture *f)
{
    vl_plan_free(&f->plan);
    vl_selection_free(&f->sel);
    vl_manifest_free(f->m);
    vl_config_free(&f->cfg);
}

/* The invariants every baseline keeps; padded: micro-batch caps are samples x longest. */
static void check_plan(const fixture *f, int padded)
{
    const vl_plan *p = &f->plan;
    const vl_training_cfg *t = &f->cfg.training;
    int *seen = calloc(f->m->n, sizeof *seen);
    uint32_t epoch = 0;

    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        if (in->epoch != epoch) {
            for (size_t i = 0; i < f->sel.n; i++)
                cr_assert_eq(seen[f->sel.idx[i]], (int)epoch + 1);
            epoch = in->epoch;
        }
        cr_assert_eq(in->nranks, (uint32_t)t->dp);
        uint32_t nmb0 = p->ranks[in->rank0].nmb;
        cr_assert_gt(nmb0, 0);
        for (uint32_t r = 0; r < in->nranks; r++) {
            const vl_rank *rk = &p->ranks[in->rank0 + r];
            cr_assert_eq(rk->dp, (int32_t)r);
            cr_assert_eq(rk->nmb, nmb0, "iteration %zu rank %u: %u vs %u micro-batches", it,
                         r, rk->nmb, nmb0);
            cr_assert_eq(rk->par.tp, t->tp);
            for (uint32_t j = 0; j < rk->nmb; j++) {
                const vl_mb *mb = &p->mbs[rk->mb0 + j];
                const vl_seg *sg = vl_plan_mb_segs(p, mb);
                uint32_t longest = 0;
                for (uint32_t k = 0; k < mb->nseg; k++) {
                    cr_assert_eq(sg[k].off, 0);
                    cr_assert_eq(sg[k].len, f->sel.len[sg[k].sample]);
                    seen[sg[k].sample]++;
                    longest = sg[k].len > longest ? sg[k].len : longest;
                }
                cr_assert_leq(mb->tokens, mb->cap);
                if (padded) {
                    cr_assert_leq(mb->nseg, t->micro_batch);
                    cr_assert_eq(mb->cap, mb->nseg * longest);
                } else if (mb->nseg > 0 || f->cfg.pack.scope == VL_PACK_SCOPE_BATCH) {
                    cr_assert_eq(mb->cap, t->max_seq_len);
                } else {
                    cr_assert_eq(mb->cap, 0);   /* epoch scope pads with no slots */
                }
            }
        }
    }
    for (size_t i = 0; i < f->sel.n; i++)
        cr_assert_eq(seen[f->sel.idx[i]], (int)epoch + 1, "sample %u seen %d times",
                     f->sel.idx[i], seen[f->sel.idx[i]]);
    free(seen);
}

static const char *const names[] = {"random", "sorted", "pack"};

Test(baseline, invariants_on_long_tailed_data)
{
    for (int s = 0; s < 3; s++) {
        for (int dp = 1; dp <= 8; dp *= 2) {
            fixture f = {0};
            uint32_t *len = tu_tail_lengths(1000, 2048, (uint64_t)dp);
            config(&f.cfg, dp, 100, 3, 2048);
            f.cfg.training.epochs = 2;
            f.cfg.pack.algo = (vl_pack_algo)(dp % 8);
            f.cfg.pack.scope = dp % 4 ? VL_PACK_SCOPE_EPOCH : VL_PACK_SCOPE_BATCH;
            plan_with(&f, names[s], len, 1000, 11);
            cr_assert_eq(f.plan.niters, 20);
            check_plan(&f, s < 2);
            fixture_free(&f);
            free(len);
        }
    }
}

Test(baseline, token_budget_batches)
{
    for (int s = 0; s < 3; s++) {
        fixture f = {0};
        uint32_t *len = tu_tail_lengths(500, 1024, 3);
        config(&f.cfg, 4, 0, 2, 1024);
        f.cfg.training.global_tokens = 20000;
        plan_with(&f, names[s], len, 500, 5);
        check_plan(&f, s < 2);
        fixture_free(&f);
        free(len);
    }
}

Test(baseline, deterministic_and_seeded)
{
    for (int s = 0; s < 3; s++) {
        fixture a = {0}, b = {0}, c = {0};
        uint32_t *len = tu_tail_lengths(300, 512, 9);
        config(&a.cfg, 4, 64, 2, 512);
        config(&b.cfg, 4, 64, 2, 512);
        config(&c.cfg, 4, 64, 2, 512);
        a.cfg.pack.algo = b.cfg.pack.algo = c.cfg.pack.algo = VL_PACK_ISF;
        plan_with(&a, names[s], len, 300, 1);
        plan_with(&b, names[s], len, 300, 1);
        plan_with(&c, names[s], len, 300, 2);
        cr_assert_eq(a.plan.nsegs, b.plan.nsegs);
        cr_assert_eq(memcmp(a.plan.segs, b.plan.segs, a.plan.nsegs * sizeof *a.plan.segs), 0);
        cr_assert_eq(memcmp(a.plan.mbs, b.plan.mbs, a.plan.nmbs * sizeof *a.plan.mbs), 0);
        cr_assert(a.plan.nsegs != c.plan.nsegs ||
                  memcmp(a.plan.segs, c.plan.segs, a.plan.nsegs * sizeof *a.plan.segs) != 0);
        fixture_free(&a);
        fixture_free(&b);
        fixture_free(&c);
        free(len);
    }
}

Test(baseline, random_full_batches_use_micro_batch)
{
    fixture f = {0};
    uint32_t len[48];
    for (int i = 0; i < 48; i++)
        len[i] = (uint32_t)(10 + i);
    config(&f.cfg, 2, 24, 3, 100);
    plan_with(&f, "random", len, 48, 3);
    cr_assert_eq(f.plan.niters, 2);
    for (size_t r = 0; r < f.plan.nranks; r++)
        cr_assert_eq(f.plan.ranks[r].nmb, 4);   /* 24 / (2 ranks x 3) */
    for (size_t j = 0; j < f.plan.nmbs; j++)
        cr_assert_eq(f.plan.mbs[j].nseg, 3);
    check_plan(&f, 1);
    fixture_free(&f);
}

/* Padding ratio of a plan: unused slots over all slots. */
static double padding(const vl_plan *p)
{
    double slots = 0, tokens = 0;
    for (size_t j = 0; j < p->nmbs; j++) {
        slots += p->mbs[j].cap;
        tokens += (double)p->mbs[j].tokens;
    }
    return 1 - tokens / slots;
}

Test(baseline, sorted_pads_less_than_random)
{
    fixture a = {0}, b = {0};
    uint32_t *len = tu_tail_lengths(2000, 4096, 4);
    config(&a.cfg, 4, 256, 4, 4096);
    config(&b.cfg, 4, 256, 4, 4096);
    plan_with(&a, "random", len, 2000, 6);
    plan_with(&b, "sorted", len, 2000, 6);
    double pr = padding(&a.plan), ps = padding(&b.plan);
    cr_assert_lt(ps, pr / 3, "sorted %.3f vs random %.3f", ps, pr);
    /* Sorted: within one step (micro-batch j of every rank) lengths are close, and no
     * rank always holds the longest. */
    int longest_on[4] = {0};
    for (size_t it = 0; it < b.plan.niters; it++) {
        const vl_iter *in = &b.plan.iters[it];
        uint32_t best = 0, who = 0;
        for (uint32_t r = 0; r < in->nranks; r++) {
            const vl_rank *rk = &b.plan.ranks[in->rank0 + r];
            for (uint32_t j = 0; j < rk->nmb; j++)
                if (b.plan.mbs[rk->mb0 + j].cap > best) {
                    best = b.plan.mbs[rk->mb0 + j].cap;
                    who = r;
                }
        }
        longest_on[who]++;
    }
    int ranks_with_longest = 0;
    for (int r = 0; r < 4; r++)
        ranks_with_longest += longest_on[r] > 0;
    cr_assert_geq(ranks_with_longest, 2);
    fixture_free(&a);
    fixture_free(&b);
    free(len);
}

Test(baseline, pack_splits_to_a_multiple_of_dp)
{
    /* 6 samples of 40 into 100: FFD makes 3 packs of 80; dp = 4 needs a fourth, made by
     * splitting one pack into 40 + 40.  No empty micro-batch. */
    fixture f = {0};
    uint32_t len[] = {40, 40, 40, 40, 40, 40};
    config(&f.cfg, 4, 6, 1, 100);
    f.cfg.pack.scope = VL_PACK_SCOPE_BATCH;
    plan_with(&f, "pack", len, 6, 1);
    cr_assert_eq(f.plan.niters, 1);
    cr_assert_eq(f.plan.nmbs, 4);
    uint64_t loads[4];
    for (int j = 0; j < 4; j++) {
        loads[j] = f.plan.mbs[j].tokens;
        cr_assert_gt(loads[j], 0);
        cr_assert_eq(f.plan.ranks[j].nmb, 1);
    }
    check_plan(&f, 0);
    fixture_free(&f);
}

Test(baseline, pack_adds_empty_micro_batches_only_when_needed)
{
    /* 2 samples, 4 ranks: one pack of 2 splits into 2 singletons; 2 ranks get an empty
     * micro-batch (0 tokens, counted as padding). */
    fixture f = {0};
    uint32_t len[] = {30, 50};
    config(&f.cfg, 4, 8, 1, 100);
    f.cfg.pack.scope = VL_PACK_SCOPE_BATCH;
    plan_with(&f, "pack", len, 2, 1);
    cr_assert_eq(f.plan.nmbs, 4);
    int empty = 0;
    for (int j = 0; j < 4; j++) {
        empty += f.plan.mbs[j].nseg == 0;
        cr_assert_eq(f.plan.mbs[j].cap, 100);
    }
    cr_assert_eq(empty, 2);
    check_plan(&f, 0);
    fixture_free(&f);
}

Test(baseline, pack_balances_rank_tokens)
{
    fixture f = {0};
    uint32_t *len = tu_tail_lengths(4000, 4096, 8);
    config(&f.cfg, 8, 512, 1, 4096);
    f.cfg.pack.balance = VL_BALANCE_TOKENS;
    plan_with(&f, "pack", len, 4000, 2);
    for (size_t it = 0; it + 1 < f.plan.niters; it++) {   /* full batches */
        const vl_iter *in = &f.plan.iters[it];
        uint64_t mx = 0, sum = 0;
        for (uint32_t r = 0; r < in->nranks; r++) {
            const vl_rank *rk = &f.plan.ranks[in->rank0 + r];
            uint64_t t = 0;
            for (uint32_t j = 0; j < rk->nmb; j++)
                t += f.plan.mbs[rk->mb0 + j].tokens;
            mx = t > mx ? t : mx;
            sum += t;
        }
        double dbr = 1 - (double)sum / ((double)mx * in->nranks);
        cr_assert_lt(dbr, 0.05, "iteration %zu DBR %.3f", it, dbr);
    }
    fixture_free(&f);
    free(len);
}

Test(baseline, ckpt_layers_under_full_recompute)
{
    fixture f = {0};
    uint32_t len[] = {5, 6, 7, 8};
    config(&f.cfg, 1, 4, 1, 16);
    f.cfg.training.pp = 2;
    f.cfg.training.recompute = VL_RECOMPUTE_FULL;
    plan_with(&f, "pack", len, 4, 1);
    cr_assert_eq(f.plan.ranks[0].par.pp, 2);
    cr_assert_eq(f.plan.ranks[0].par.ckpt_layers, f.cfg.model.layers / 2);
    fixture_free(&f);
}

Test(baseline, truncated_samples_planned_at_limit)
{
    fixture f = {0};
    uint32_t len[] = {50, 500, 60};
    config(&f.cfg, 1, 3, 1, 100);
    f.cfg.training.oversize = VL_OVERSIZE_TRUNCATE;
    plan_with(&f, "pack", len, 3, 1);
    check_plan(&f, 0);
    cr_assert_eq(f.plan.ndrops, 1);
    cr_assert_eq(f.plan.drops[0].off, 100);
    fixture_free(&f);
}

Test(baseline, validate_rejects_bad_training)
{
    vl_config cfg;
    vl_err err = {0};
    config(&cfg, 2, 8, 1, 100);
    cfg.training.micro_batch = 0;
    cr_assert_eq(vl_strategy_find("random")->validate(NULL, &cfg, &err), VL_ECONFIG);
    cr_assert_eq(vl_strategy_find("pack")->validate(NULL, &cfg, &err), VL_OK);
    cfg.training.dp = 0;
    cr_assert_eq(vl_strategy_find("pack")->validate(NULL, &cfg, &err), VL_ECONFIG);
    vl_config_free(&cfg);
}

Test(baseline, run_plan_verifies)
{
    uint32_t *len = tu_tail_lengths(700, 8192, 12);
    vl_manifest *m = NULL;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, 700, NULL), VL_OK);
    for (int s = 0; s < 3; s++) {
        for (int algo = 0; algo < 8; algo++) {
            vl_config cfg;
            vl_plan p;
            vl_err err = {0};
            vl_run_result res;
            config(&cfg, 4, 128, 2, 8192);
            cfg.training.recompute = VL_RECOMPUTE_AUTO;   /* the run refuses what overflows */
            cfg.pack.algo = (vl_pack_algo)algo;
            cfg.pack.scope = algo % 2 ? VL_PACK_SCOPE_BATCH : VL_PACK_SCOPE_EPOCH;
            vl_run_opts o = {.seed = 3, .verbose = 1};
            cr_assert_eq(vl_run_plan(&p, vl_strategy_find(names[s]), m, &cfg, &o, &res, &err),
                         VL_OK, "%s: %s", names[s], err.msg);
            cr_assert_not_null(res.log);
            free(res.log);
            vl_plan_free(&p);
            vl_config_free(&cfg);
            if (s < 2)
                break;   /* pack.algo only matters to pack */
        }
    }
    vl_manifest_free(m);
    free(len);
}
