/* tests/strategies/test_baseline_pack.c -- the pack baseline's epoch scope and dealing: the packs of
 * the epoch are the packer's (no split), fill within 0.5% of whole-dataset packing
 * under pack.deal=packs (pack.deal=samples never slower in modelled time),
 * windows keep to their part of the order, iterations take whole packs in multiples of
 * dp, pack.balance changes what is balanced, and a huge dp plans without splitting. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pack_fixture.h"
#include "sim.h"
#include "testutil.h"

static void run_free(run *r, vl_config *cfg)
{
    run_release(r);
    vl_config_free(cfg);
}

static uint64_t slots(const vl_plan *p)
{
    uint64_t s = 0;
    for (size_t j = 0; j < p->nmbs; j++)
        s += p->mbs[j].cap;
    return s;
}

/* Bins of the same packer over every sample at once. */
static size_t whole_bins(const uint32_t *len, size_t n, uint32_t cap, vl_pack_algo algo)
{
    uint32_t *items = malloc(n * sizeof *items);
    vl_pack_opts o = {.algo = algo, .cap = cap, .isf_iters = 50, .isf_slack = 128};
    vl_bins b;
    for (size_t i = 0; i < n; i++)
        items[i] = (uint32_t)i;
    cr_assert_eq(vl_pack(&b, items, n, len, &o, NULL), VL_OK);
    size_t k = b.n;
    vl_bins_free(&b);
    free(items);
    return k;
}

/* Modelled epoch time of plan p under cfg. */
static double epoch_s(const vl_plan *p, const vl_config *cfg)
{
    vl_err err = {0};
    vl_cost c;
    vl_sim_summary s;
    cr_assert_eq(vl_cost_init(&c, cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_sim_plan(p, &c, NULL, &s, &err), VL_OK, "%s", err.msg);
    return s.epoch_time_s;
}

/* pack.deal=packs: exactly the packs of the same packer over the whole data set (fill is
 * its target).  pack.deal=samples trades fill for time where an iteration balances
 * better by samples (veRL's dealing may add micro-batches): never slower than whole
 * packs in modelled time, and every rank runs the same number of micro-batches. */
Test(baseline_pack, epoch_scope_packs_like_the_whole_dataset)
{
    const vl_pack_algo algos[] = {VL_PACK_FFD, VL_PACK_BFD, VL_PACK_SPFHP, VL_PACK_WFD};
    size_t n = 20000;
    uint32_t cap = 4096, *len = tu_tail_lengths(n, cap, 3);
    uint64_t tokens = 0;
    double packs_s[4];
    for (size_t i = 0; i < n; i++)
        tokens += len[i];
    for (size_t a = 0; a < 8; a++) {
        vl_config cfg;
        run r = {0};
        const char *name = vl_pack_algo_name(algos[a % 4]);
        pack_config(&cfg, 32, 512, cap);
        cfg.pack.algo = algos[a % 4];
        cfg.pack.deal = a < 4 ? VL_DEAL_PACKS : VL_DEAL_SAMPLES;
        pack_plan(&r, &cfg, len, n, 1);
        size_t want = whole_bins(len, n, cap, algos[a % 4]);
        double fill = (double)tokens / (double)slots(&r.p);
        double best = (double)tokens / ((double)want * cap);
        if (a < 4) {   /* the same item set, an order-free packer */
            cr_assert_eq(nonempty_mbs(&r.p), want, "%s", name);
            cr_assert_gt(fill, best - 0.005, "%s: fill %.4f, whole-dataset %.4f", name, fill,
                         best);
            packs_s[a] = epoch_s(&r.p, &cfg);
        } else {
            double t = epoch_s(&r.p, &cfg);
            cr_assert_leq(t, packs_s[a - 4] * (1 + 1e-12), "%s: samples %.6f s, packs %.6f s",
                          name, t, packs_s[a - 4]);
        }
        for (size_t it = 0; it < r.p.niters; it++) {
            const vl_iter *in = &r.p.iters[it];
            for (uint32_t k = 0; k < in->nranks; k++)
                cr_assert_eq(r.p.ranks[in->rank0 + k].nmb, r.p.ranks[in->rank0].nmb);
        }
        run_free(&r, &cfg);
    }
    free(len);
}

Test(baseline_pack, batch_scope_is_worse_than_epoch_scope)
{
    size_t n = 6000;
    uint32_t cap = 8192, *len = tu_tail_lengths(n, cap, 5);
    uint64_t s[2];
    for (int scope = 0; scope < 2; scope++) {
        vl_config cfg;
        run r = {0};
        pack_config(&cfg, 32, 256, cap);
        cfg.pack.scope = scope ? VL_PACK_SCOPE_BATCH : VL_PACK_SCOPE_EPOCH;
        cfg.pack.deal = VL_DEAL_PACKS;   /* fill is its target; samples trade it for time */
        pack_plan(&r, &cfg, len, n, 2);
        s[scope] = slots(&r.p);
        run_free(&r, &cfg);
    }
    cr_assert_lt(s[0], s[1], "epoch %llu slots, batch %llu", (unsigned long long)s[0],
                 (unsigned long long)s[1]);
    free(len);
}

/* Every pack holds samples of one window of the epoch order. */
Test(baseline_pack, windows_keep_to_their_part_of_the_order)
{
    size_t n = 3000, win = 500;
    uint32_t cap = 2048, *len = tu_tail_lengths(n, cap, 9);
    uint32_t *order = malloc(n * sizeof *order), *pos = malloc(n * sizeof *pos);
    vl_config cfg;
    run r = {0};
    vl_selection sel;
    pack_config(&cfg, 4, 256, cap);
    cfg.pack.window = win;
    pack_plan(&r, &cfg, len, n, 11);
    cr_assert_eq(vl_select(&sel, r.m, cap, VL_OVERSIZE_ERROR, NULL), VL_OK);
    vl_epoch_order(&sel, 11, 0, order);
    for (size_t i = 0; i < n; i++)
        pos[order[i]] = (uint32_t)i;
    for (size_t j = 0; j < r.p.nmbs; j++) {
        const vl_mb *mb = &r.p.mbs[j];
        const vl_seg *sg = vl_plan_mb_segs(&r.p, mb);
        for (uint32_t k = 1; k < mb->nseg; k++)
            cr_assert_eq(pos[sg[k].sample] / win, pos[sg[0].sample] / win);
    }
    vl_selection_free(&sel);
    run_free(&r, &cfg);
    free(order);
    free(pos);
    free(len);
}

/* max over ranks / mean of Σ len² (attention) or Σ len (tokens) per iteration, worst. */
static double worst_ratio(const vl_plan *p, int squares)
{
    double worst = 1;
    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        double mx = 0, sum = 0;
        for (uint32_t k = 0; k < in->nranks; k++) {
            const vl_rank *rk = &p->ranks[in->rank0 + k];
            double w = 0;
            for (uint32_t j = 0; j < rk->nmb; j++) {
                const vl_mb *mb = &p->mbs[rk->mb0 + j];
                const vl_seg *sg = vl_plan_mb_segs(p, mb);
                for (uint32_t q = 0; q < mb->nseg; q++)
                    w += squares ? (double)sg[q].len * sg[q].len : (double)sg[q].len;
            }
            mx = w > mx ? w : mx;
            sum += w;
        }
        if (sum > 0 && mx / (sum / in->nranks) > worst)
            worst = mx / (sum / in->nranks);
    }
    return worst;
}

Test(baseline_pack, balance_chooses_what_is_balanced)
{
    size_t n = 8000;
    uint32_t cap = 8192, *len = tu_tail_lengths(n, cap, 21);
    double att[3], tok[3];
    for (int b = 0; b < 3; b++) {
        vl_config cfg;
        run r = {0};
        pack_config(&cfg, 16, 1024, cap);
        cfg.pack.balance = (vl_pack_balance)b;
        cfg.pack.deal = VL_DEAL_PACKS;   /* whole packs: KK on the pack weights alone */
        pack_plan(&r, &cfg, len, n, 4);
        att[b] = worst_ratio(&r.p, 1);
        tok[b] = worst_ratio(&r.p, 0);
        run_free(&r, &cfg);
    }
    cr_assert_lt(att[VL_BALANCE_ATTENTION], att[VL_BALANCE_TOKENS], "%.4f vs %.4f",
                 att[VL_BALANCE_ATTENTION], att[VL_BALANCE_TOKENS]);
    cr_assert_lt(tok[VL_BALANCE_TOKENS], tok[VL_BALANCE_ATTENTION], "%.4f vs %.4f",
                 tok[VL_BALANCE_TOKENS], tok[VL_BALANCE_ATTENTION]);
    /* time weighs tokens and attention: between the two on attention */
    cr_assert_lt(att[VL_BALANCE_TIME], att[VL_BALANCE_TOKENS]);
    free(len);
}

/* More ranks than packs: one iteration, every pack whole, the rest idle (capacity 0). */
Test(baseline_pack, huge_dp_plans_whole_packs)
{
    uint32_t *len = tu_tail_lengths(300, 1024, 2);
    vl_config cfg;
    run r = {0};
    pack_config(&cfg, 4096, 64, 1024);
    pack_plan(&r, &cfg, len, 300, 1);
    cr_assert_eq(r.p.niters, 1);
    cr_assert_eq(r.p.nmbs, 4096);
    cr_assert_eq(nonempty_mbs(&r.p), whole_bins(len, 300, 1024, VL_PACK_FFD));
    for (size_t j = 0; j < r.p.nmbs; j++)
        cr_assert_eq(r.p.mbs[j].cap, r.p.mbs[j].nseg ? 1024u : 0u);
    run_free(&r, &cfg);
    free(len);
}

/* Iterations: the sampler's batch count, when there are packs enough for it. */
Test(baseline_pack, iterations_follow_the_global_batches)
{
    size_t n = 4096;
    uint32_t *len = tu_tail_lengths(n, 4096, 8);
    vl_config cfg;
    run r = {0};
    pack_config(&cfg, 4, 256, 4096);
    cfg.training.epochs = 2;
    pack_plan(&r, &cfg, len, n, 3);
    cr_assert_eq(r.p.niters, 2 * 16);
    for (size_t it = 0; it < r.p.niters; it++)
        cr_assert_eq(r.p.iters[it].epoch, it / 16);
    run_free(&r, &cfg);
    free(len);
}

/* training.oversize=split: a sample of 2.5 capacities becomes pieces [0, C), [C, 2C),
 * [2C, 2.5C), each packed on its own; every token planned once, no piece of one
 * sample on a rank holding another of its pieces. */
Test(baseline_pack, oversize_split_cuts_pieces)
{
    size_t n = 400;
    uint32_t cap = 1000, *len = tu_tail_lengths(n, cap, 17);
    len[7] = 2500;
    len[99] = 4000;
    for (int scope = 0; scope < 2; scope++) {
        vl_config cfg;
        run r = {0};
        pack_config(&cfg, 4, 64, cap);
        cfg.training.oversize = VL_OVERSIZE_SPLIT;
        cfg.pack.scope = scope ? VL_PACK_SCOPE_BATCH : VL_PACK_SCOPE_EPOCH;
        pack_plan(&r, &cfg, len, n, 5);
        uint32_t got7 = 0, got99 = 0, offs7 = 0;
        for (size_t it = 0; it < r.p.niters; it++) {
            const vl_iter *in = &r.p.iters[it];
            for (uint32_t k = 0; k < in->nranks; k++) {
                const vl_rank *rk = &r.p.ranks[in->rank0 + k];
                int seen7 = 0, seen99 = 0;
                for (uint32_t j = 0; j < rk->nmb; j++) {
                    const vl_mb *mb = &r.p.mbs[rk->mb0 + j];
                    const vl_seg *sg = vl_plan_mb_segs(&r.p, mb);
                    cr_assert_leq(mb->tokens, cap);
                    for (uint32_t q = 0; q < mb->nseg; q++) {
                        if (sg[q].sample == 7) {
                            got7 += sg[q].len;
                            offs7 |= 1u << (sg[q].off / cap);
                            cr_assert_eq(sg[q].len, sg[q].off < 2000 ? 1000u : 500u);
                            seen7++;
                        }
                        if (sg[q].sample == 99) {
                            got99 += sg[q].len;
                            seen99++;
                        }
                    }
                }
                cr_assert_leq(seen7, 1, "two pieces of sample 7 on one rank");
                cr_assert_leq(seen99, 1, "two pieces of sample 99 on one rank");
            }
        }
        cr_assert_eq(got7, 2500);
        cr_assert_eq(offs7, 7u);   /* offsets 0, 1000, 2000 */
        cr_assert_eq(got99, 4000);
        cr_assert_eq(r.p.ndrops, 0);
        run_free(&r, &cfg);
    }
    free(len);
}

/* Only pack splits: another strategy refuses, saying so. */
Test(baseline_pack, oversize_split_refused_elsewhere)
{
    uint32_t len[] = {10, 20, 3000};
    vl_manifest *m = NULL;
    vl_config cfg;
    vl_plan p;
    vl_err err = {0};
    vl_run_result res = {0};
    vl_run_opts o = {.seed = 1};
    pack_config(&cfg, 1, 3, 1000);
    cfg.training.oversize = VL_OVERSIZE_SPLIT;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, 3, &err), VL_OK);
    cr_assert_eq(vl_run_plan(&p, vl_strategy_find("random"), m, &cfg, &o, &res, &err),
                 VL_ECONFIG);
    cr_assert(strstr(err.msg, "only pack") != NULL, "%s", err.msg);
    free(res.log);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}
