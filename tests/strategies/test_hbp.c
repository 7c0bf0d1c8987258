/* tests/strategies/test_hbp.c -- the HBP strategy: list parsing, group edges (l_{i-1}, l_i],
 * GreedyFill and the filler pool on hand examples and against a naive scan, Attention
 * Balance Sort and the deal to ranks, leftover packs, curriculum and interleave order,
 * conservation and determinism through vl_plan_verify, parameter errors.  Profile-driven
 * selection and the paper-shaped metrics are in test_hbp_select.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbp_fixture.h"
#include "verify.h"
#include "vlplan_strategy.h"

/* ---- parsing ------------------------------------------------------------------------ */

Test(hbp, parse_lists)
{
    hbp_spec v[HBP_MAX_GROUPS];
    size_t n;
    char why[128];

    cr_assert_eq(vl__hbp_parse_list("8K,16K, 131072", false, v, HBP_MAX_GROUPS, &n, why,
                                    sizeof why), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(v[0].len, 8192);
    cr_assert_eq(v[1].len, 16384);
    cr_assert_eq(v[2].len, 131072);
    cr_assert_eq(v[0].sp, HBP_AUTO);
    cr_assert_eq(vl__hbp_parse_list("16K:1:28,128K:8,1M", true, v, HBP_MAX_GROUPS, &n, why,
                                    sizeof why), 0, "%s", why);
    cr_assert_eq(n, 3);
    cr_assert(v[0].len == 16384 && v[0].sp == 1 && v[0].ckpt == 28);
    cr_assert(v[1].len == 131072 && v[1].sp == 8 && v[1].ckpt == HBP_AUTO);
    cr_assert_eq(v[2].len, 1048576);
    static const char *const bad[] = {"", "0", "8X", ",", "8K,,16K", "-1", "99999999999",
                                      "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int specs = 0; specs < 2; specs++) {
            why[0] = '\0';
            cr_assert_eq(vl__hbp_parse_list(bad[i], specs, v, HBP_MAX_GROUPS, &n, why,
                                            sizeof why), -1, "'%s' accepted", bad[i]);
            cr_assert_neq(why[0], '\0');
        }
    cr_assert_eq(vl__hbp_parse_list("16K:0", true, v, HBP_MAX_GROUPS, &n, why, sizeof why),
                 -1);
    cr_assert_eq(vl__hbp_parse_list("16K:1:2:3", true, v, HBP_MAX_GROUPS, &n, why,
                                    sizeof why), -1);
    cr_assert_eq(vl__hbp_parse_list("16K:1", false, v, HBP_MAX_GROUPS, &n, why, sizeof why),
                 -1);
}

/* ---- GroupData ---------------------------------------------------------------------- */

Test(hbp, group_edges)
{
    hbp_groups gs = {.n = 3};
    gs.g[0].len = 16384;
    gs.g[1].len = 32768;
    gs.g[2].len = 131072;
    cr_assert_eq(vl__hbp_group_of(&gs, 1), 0);
    cr_assert_eq(vl__hbp_group_of(&gs, 16384), 0);   /* l_1 itself is in (0, l_1] */
    cr_assert_eq(vl__hbp_group_of(&gs, 16385), 1);
    cr_assert_eq(vl__hbp_group_of(&gs, 32768), 1);
    cr_assert_eq(vl__hbp_group_of(&gs, 32769), 2);
    cr_assert_eq(vl__hbp_group_of(&gs, 131072), 2);
    cr_assert_eq(vl__hbp_group_of(&gs, 131073), 3);   /* longer than every group */
}

/* ---- GreedyFill --------------------------------------------------------------------- */

Test(hbp, greedy_fill_hand)
{
    /* samples 0..4 form the pool in this stored order, lengths 5 3 8 2 1 */
    static const uint32_t len[] = {5, 3, 8, 2, 1, 6, 4};
    const uint32_t pool_items[] = {0, 1, 2, 3, 4};
    hbp_pool *p;
    vl_err err;
    uint32_t out[8], left[8];
    uint64_t load = 4, attn = 16;

    cr_assert_eq(vl__hbp_pool_new(&p, pool_items, 5, len, &err), VL_OK);
    /* room 6: 5 fits (room 1), 3, 8 and 2 do not, 1 fits */
    cr_assert_eq(vl__hbp_fill(&p, 1, 10, &load, &attn, out), 2);
    cr_assert(out[0] == 0 && out[1] == 4);
    cr_assert_eq(load, 10);
    cr_assert_eq(attn, 16 + 25 + 1);
    /* room 3: the first remaining that fits is 3 */
    load = 7;
    cr_assert_eq(vl__hbp_fill(&p, 1, 10, &load, &attn, out), 1);
    cr_assert_eq(out[0], 1);
    /* room 10: 8 then 2 */
    load = 0;
    cr_assert_eq(vl__hbp_fill(&p, 1, 10, &load, &attn, out), 2);
    cr_assert(out[0] == 2 && out[1] == 3);
    cr_assert_eq(vl__hbp_pool_left(p, left), 0);
    vl__hbp_pool_free(p);
}

Test(hbp, greedy_fill_next_shorter_group_first)
{
    static const uint32_t len[] = {2, 2, 6, 6};
    const uint32_t shortest[] = {0, 1}, next[] = {2, 3};
    hbp_pool *src[2];
    vl_err err;
    uint32_t out[4], left[4];
    uint64_t load = 0, attn = 0;

    cr_assert_eq(vl__hbp_pool_new(&src[0], next, 2, len, &err), VL_OK);
    cr_assert_eq(vl__hbp_pool_new(&src[1], shortest, 2, len, &err), VL_OK);
    cr_assert_eq(vl__hbp_fill(src, 2, 10, &load, &attn, out), 3);
    cr_assert(out[0] == 2 && out[1] == 0 && out[2] == 1, "%u %u %u", out[0], out[1],
              out[2]);
    cr_assert_eq(vl__hbp_pool_left(src[0], left), 1);
    cr_assert_eq(left[0], 3);
    cr_assert_eq(vl__hbp_pool_left(src[1], left), 0);
    vl__hbp_pool_free(src[0]);
    vl__hbp_pool_free(src[1]);
}

/* The 64-ary tree agrees with Algorithm 6's literal scan on a pool deep enough for
 * three levels. */
Test(hbp, fill_matches_naive_scan)
{
    size_t n = 300000;
    uint32_t *len = mixed_lengths(n, 4000, 3), *items = malloc(n * sizeof *items);
    uint32_t *out = malloc(n * sizeof *out);
    char *taken = calloc(n, 1);
    hbp_pool *p;
    vl_err err;
    vl_rng r;

    for (size_t i = 0; i < n; i++)
        items[i] = (uint32_t)((i * 7919) % n);   /* a stored order that is not sorted */
    cr_assert_eq(vl__hbp_pool_new(&p, items, n, len, &err), VL_OK);
    vl_rng_seed(&r, 5, 5);
    for (int pack = 0; pack < 400; pack++) {
        uint32_t cap = 1 + (uint32_t)vl_rng_below(&r, 20000);
        uint64_t load = vl_rng_below(&r, cap), attn = 0, nload = load;
        size_t k = vl__hbp_fill(&p, 1, cap, &load, &attn, out), nk = 0;
        for (size_t i = 0; i < n; i++) {      /* the literal loop */
            uint32_t s = items[i];
            if (!taken[s] && nload + len[s] <= cap) {
                cr_assert_lt(nk, k, "pack %d: naive takes more", pack);
                cr_assert_eq(out[nk], s, "pack %d: filler %zu differs", pack, nk);
                taken[s] = 1;
                nload += len[s];
                nk++;
            }
        }
        cr_assert_eq(nk, k);
        cr_assert_eq(nload, load);
    }
    vl__hbp_pool_free(p);
    free(len);
    free(items);
    free(out);
    free(taken);
}

/* ---- Attention Balance Sort and the deal ---------------------------------------- */

Test(hbp, balance_sort_hand)
{
    hbp_pack pk[] = {
        {.attn = 4, .load = 4, .first = 9}, {.attn = 8, .load = 4, .first = 3},
        {.attn = 8, .load = 6, .first = 7}, {.attn = 4, .load = 4, .first = 2},
        {.attn = 1, .load = 1, .first = 0},
    };
    vl__hbp_sort_packs(pk, 5);
    /* attention descending, then load descending, then smallest sample index */
    cr_assert(pk[0].attn == 8 && pk[0].load == 6);
    cr_assert(pk[1].attn == 8 && pk[1].first == 3);
    cr_assert(pk[2].attn == 4 && pk[2].first == 2);
    cr_assert(pk[3].attn == 4 && pk[3].first == 9);
    cr_assert_eq(pk[4].attn, 1);
}

/* Many packs take the keyed radix path: the same total order as the comparison, with
 * runs of equal attention (a few values only), attention up to 2^40 and, past 64 key
 * bits, the qsort fallback. */
Test(hbp, sort_packs_many)
{
    static const uint64_t top[] = {8, 1ull << 40, 1ull << 62};
    size_t n = 5000;
    hbp_pack *pk = malloc(n * sizeof *pk);
    char *seen = malloc(n);
    vl_rng r;

    vl_rng_seed(&r, 11, 3);
    for (size_t t = 0; t < sizeof top / sizeof top[0]; t++) {
        for (size_t i = 0; i < n; i++)
            pk[i] = (hbp_pack){.attn = 1 + vl_rng_below(&r, top[t]),
                               .load = vl_rng_below(&r, 4),
                               .first = (uint32_t)((i * 7919) % n)};
        vl__hbp_sort_packs(pk, n);
        memset(seen, 0, n);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(seen[pk[i].first]++, 0, "pack %u twice", pk[i].first);
            if (i == 0)
                continue;
            const hbp_pack *a = &pk[i - 1], *b = &pk[i];
            cr_assert(a->attn > b->attn ||
                          (a->attn == b->attn &&
                           (a->load > b->load || (a->load == b->load && a->first < b->first))),
                      "top %zu: packs %zu and %zu out of order", t, i - 1, i);
        }
    }
    free(pk);
    free(seen);
}

Test(hbp, deal_balances_ranks)
{
    hbp_pack pk[8];
    uint32_t slot[8];
    vl_err err;

    for (int i = 0; i < 8; i++)
        pk[i] = (hbp_pack){.attn = 0, .load = (uint64_t)(10 - i)};   /* 10 .. 3 */
    cr_assert_eq(vl__hbp_deal(slot, pk, 8, 100, 4, 2, 0.0, &err), VL_OK);
    char seen[8] = {0};
    for (int r = 0; r < 4; r++) {
        uint64_t sum = 0;
        for (int j = 0; j < 2; j++) {
            uint32_t k = slot[r * 2 + j];
            cr_assert(k >= 100 && k < 108);
            cr_assert_eq(seen[k - 100]++, 0);
            sum += pk[k - 100].load;
        }
        cr_assert_eq(sum, 13, "rank %d holds %llu", r, (unsigned long long)sum);
    }
    /* one micro-batch per rank: the sorted order as it is; missing packs are empty */
    cr_assert_eq(vl__hbp_deal(slot, pk, 3, 0, 4, 1, 0.0, &err), VL_OK);
    cr_assert(slot[0] == 0 && slot[1] == 1 && slot[2] == 2 && slot[3] == HBP_EMPTY);
    cr_assert_eq(vl__hbp_deal(slot, pk, 5, 0, 3, 2, 0.0, &err), VL_OK);
    int empty = 0;
    for (int i = 0; i < 6; i++)
        empty += slot[i] == HBP_EMPTY;
    cr_assert_eq(empty, 1);
}

/* ---- one epoch by hand ------------------------------------------------------------ */

static hbp_groups two_groups(uint32_t l0, int r0, uint32_t l1, int r1)
{
    hbp_groups gs = {.n = 2};
    gs.g[0] = (hbp_group){.len = l0, .par = {1, 1, 1, 0}, .ranks = r0, .mbs = 1};
    gs.g[1] = (hbp_group){.len = l1, .par = {1, 1, 2, 0}, .ranks = r1, .mbs = 1};
    return gs;
}

/* The epoch in manifest order; vl__hbp_pack_epoch takes the order array over (as the
 * epoch's items), so each call needs a fresh one: order_of. */
static uint32_t *order_of(size_t n)
{
    uint32_t *order = malloc(n * sizeof *order);

    cr_assert_not_null(order);
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    return order;
}

static hbp_pack_in epoch_in(const hbp_groups *gs, const uint32_t *len, size_t n)
{
    return (hbp_pack_in){.gs = gs, .len = len, .order = order_of(n), .n = n,
                         .algo = VL_PACK_FFD, .isf_iters = 50, .isf_slack = 0,
                         .balance = true, .greedy_fill = true, .seed = 1};
}

Test(hbp, group_packs_spread_over_iterations)
{
    /* group 1 (cap 100, 4 ranks x 1): four 100s and five lone 60s make 9 packs; the
     * fewest iterations of at most 4 packs are 3, of 3 packs each, one empty slot each
     * (a single-sample pack cannot be split); none holds more than 4 packs, so none
     * more than the budget (the ninth pack used to ride on the second iteration) */
    static const uint32_t len[] = {100, 100, 100, 100, 60, 60, 60, 60, 60};
    hbp_groups gs = two_groups(50, 4, 100, 4);
    hbp_pack_in in = epoch_in(&gs, len, 9);
    hbp_epoch ep;
    vl_err err;

    cr_assert_eq(vl__hbp_pack_epoch(&ep, &in, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(ep.niters, 3);
    for (size_t i = 0; i < 3; i++) {
        uint64_t tokens = 0;
        cr_assert_eq(ep.iters[i].mbs, 1);
        for (size_t k = 0; k < 4; k++) {
            uint32_t sl = ep.slots[ep.iters[i].s0 + k];
            tokens += sl == HBP_EMPTY ? 0 : ep.packs[sl].load;
        }
        cr_assert_leq(tokens, 400, "iteration %zu holds %llu tokens", i,
                      (unsigned long long)tokens);
    }
    cr_assert_eq(ep.empty[1], 3);
    cr_assert_eq(ep.splits[1], 0);
    vl__hbp_epoch_free(&ep);

    /* four 100s and one pack of four 25s: 5 packs for 8 slots, so the 25s are split
     * three times (heaviest splittable first) and no slot stays empty */
    static const uint32_t len2[] = {100, 100, 100, 100, 25, 25, 25, 25};
    in = epoch_in(&gs, len2, 8);
    in.greedy_fill = false;
    gs.g[0].len = 10;
    gs.g[1].mbs = 2;
    cr_assert_eq(vl__hbp_pack_epoch(&ep, &in, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(ep.niters, 1);
    cr_assert_eq(ep.iters[0].mbs, 2);
    cr_assert_eq(ep.splits[1], 3);
    cr_assert_eq(ep.empty[1], 0);
    for (size_t i = 0; i < 8; i++)
        cr_assert_neq(ep.slots[ep.iters[0].s0 + i], HBP_EMPTY);
    vl__hbp_epoch_free(&ep);
}

Test(hbp, curriculum_then_even_mix)
{
    size_t n = 4000;
    uint32_t *len = malloc(n * sizeof *len);
    hbp_groups gs = two_groups(100, 2, 1000, 2);
    hbp_epoch ep;
    vl_err err;

    for (size_t i = 0; i < n; i++)   /* 3600 short samples, 400 long ones */
        len[i] = i % 10 == 0 ? 900 : 50;
    hbp_pack_in in = epoch_in(&gs, len, n);
    in.greedy_fill = false;
    in.curriculum = 100;
    cr_assert_eq(vl__hbp_pack_epoch(&ep, &in, &err), VL_OK, "%s", err.msg);
    size_t n0 = ep.giters[0], n1 = ep.giters[1];
    cr_assert_eq(n0, 900);   /* 1800 packs of two 50s, 2 ranks */
    cr_assert_eq(n1, 200);   /* 400 lone 900s */
    for (size_t i = 0; i < 100; i++)
        cr_assert_eq(ep.iters[i].group, 0, "iteration %zu is not from the short group", i);
    /* after the curriculum, the long group is spread evenly over the rest */
    double step = (double)(ep.niters - 100) / (double)n1;
    size_t last = 99, seen = 0;
    for (size_t i = 100; i < ep.niters; i++) {
        if (ep.iters[i].group != 1)
            continue;
        cr_assert_leq((double)(i - last), 2 * step + 1, "gap of %zu at %zu", i - last, i);
        last = i;
        seen++;
    }
    cr_assert_eq(seen, n1);
    vl__hbp_epoch_free(&ep);

    /* more than the short group has: capped at half of its 900 iterations, so the
     * long group is not left the last 200 iterations of the epoch to itself */
    in.curriculum = 5000;
    in.order = order_of(n);
    cr_assert_eq(vl__hbp_pack_epoch(&ep, &in, &err), VL_OK);
    cr_assert_eq(ep.curriculum, n0 / 2);
    cr_assert_eq(ep.short_iters, n0);
    for (size_t i = 0; i < n0 / 2; i++)
        cr_assert_eq(ep.iters[i].group, 0);
    size_t tail_long = 0;   /* long iterations among the last 200 */
    for (size_t i = ep.niters - 200; i < ep.niters; i++)
        tail_long += ep.iters[i].group == 1;
    cr_assert_lt(tail_long, 100, "%zu of the last 200 iterations are long", tail_long);
    cr_assert_gt(tail_long, 0);
    vl__hbp_epoch_free(&ep);
    free(len);
}

/* ---- through the runner and the verifier ------------------------------------------ */

static void check_structure(const fx *f, bool exact_groups)
{
    const vl_plan *p = &f->p;
    int gpus = f->cfg.cluster.gpus;

    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        const vl_rank *r0 = &p->ranks[in->rank0];
        cr_assert_eq((int)in->nranks * r0->par.sp * r0->par.tp * r0->par.pp, gpus,
                     "iteration %zu: %u ranks at sp %d", it, in->nranks, r0->par.sp);
        cr_assert_geq(r0->group, 0);
        for (uint32_t r = 0; r < in->nranks; r++) {
            const vl_rank *rk = &p->ranks[in->rank0 + r];
            cr_assert_eq(rk->dp, (int)r);
            cr_assert_eq(rk->group, r0->group);
            cr_assert_eq(rk->par.sp, r0->par.sp);
            cr_assert_eq(rk->par.ckpt_layers, r0->par.ckpt_layers);
            cr_assert_eq(rk->nmb, r0->nmb, "iteration %zu: ranks not in lockstep", it);
            for (uint32_t j = 0; j < rk->nmb; j++) {
                const vl_mb *mb = &p->mbs[rk->mb0 + j];
                cr_assert_eq(mb->cap, p->mbs[r0->mb0].cap);
                cr_assert_leq(mb->tokens, mb->cap);
                for (uint32_t s = 0; exact_groups && s < mb->nseg; s++) {
                    uint32_t l = p->segs[mb->seg0 + s].len;
                    /* without GreedyFill a sample sits in its own (l_{i-1}, l_i] group */
                    cr_assert_leq(l, mb->cap);
                }
            }
        }
    }
}

Test(hbp, plan_conserves_and_verifies)
{
    size_t n = 20000;
    uint32_t *len = mixed_lengths(n, 32768, 11);
    fx f;
    vl_verify_report rep;

    cr_assert_eq(run_hbp(&f, len, n, SMALL_CFG "hbp: {curriculum_iters: 20}\n", 3), VL_OK,
                 "%s", f.err.msg);
    cr_assert_gt(f.p.niters, 0);
    cr_assert_eq(vl_plan_verify(&f.p, &f.cost, &vl_registry_rules, &rep, &f.err), VL_OK, "%s",
                 rep.nmsgs ? rep.msgs[0] : f.err.msg);
    check_structure(&f, false);
    /* Ave-Token loss: the iterations' normalisers add up to every loss token once */
    uint64_t loss = 0, tokens = 0;
    for (size_t it = 0; it < f.p.niters; it++) {
        uint64_t t, l, smp;
        vl_plan_iter_totals(&f.p, it, &t, &l, &smp);
        loss += l;
        tokens += t;
    }
    cr_assert_eq(loss, f.m->loss_tokens);
    cr_assert_eq(tokens, f.m->tokens);
    fx_free(&f);
    free(len);
}

Test(hbp, full_recompute_checkpoints_every_layer)
{
    size_t n = 4000;
    uint32_t *len = mixed_lengths(n, 32768, 22);
    fx f;

    cr_assert_eq(run_hbp(&f, len, n, "cluster: {gpus: 8}\n" SMALL_TRAINING
                         ", recompute: full}\n", 2), VL_OK, "%s", f.err.msg);
    for (size_t k = 0; k < f.p.nranks; k++)
        cr_assert_eq(f.p.ranks[k].par.ckpt_layers, 32);
    fx_free(&f);
    free(len);
}

Test(hbp, tensor_pipeline_and_ring_layouts)
{
    static const char *const cfgs[] = {
        "cluster: {gpus: 16}\n" SMALL_TRAINING ", tp: 2, pp: 2}\n",
        "cluster: {gpus: 32}\n" SMALL_TRAINING
        ", sp_kind: ring}\nhbp: {sp_degrees: '1,16'}\n",
    };
    size_t n = 8000;
    uint32_t *len = mixed_lengths(n, 32768, 21);
    vl_verify_report rep;
    fx f;

    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        cr_assert_eq(run_hbp(&f, len, n, cfgs[i], 2), VL_OK, "config %zu: %s", i,
                     f.err.msg);
        cr_assert_eq(vl_plan_verify(&f.p, &f.cost, &vl_registry_rules,
                                    &rep, &f.err), VL_OK, "config %zu: %s",
                     i, rep.nmsgs ? rep.msgs[0] : f.err.msg);
        check_structure(&f, false);
        for (size_t k = 0; k < f.p.nranks; k++) {
            const vl_par *q = &f.p.ranks[k].par;
            cr_assert(i == 0 ? (q->tp == 2 && q->pp == 2) : (q->sp == 1 || q->sp == 16));
        }
        fx_free(&f);
    }
    free(len);
}

Test(hbp, group_assignment_in_plan)
{
    /* exact edges: 4096 goes to the 4K group, 4097 to the 32K group */
    uint32_t len[2000];
    fx f;

    for (size_t i = 0; i < 2000; i++)
        len[i] = i % 2 ? 4096 : 4097;
    cr_assert_eq(run_hbp(&f, len, 2000, SMALL_CFG
                         "hbp: {groups: '4K:1,32K:2', greedy_fill: false}\n", 1),
                 VL_OK, "%s", f.err.msg);
    for (size_t k = 0; k < f.p.nranks; k++) {
        const vl_rank *rk = &f.p.ranks[k];
        cr_assert_eq(rk->par.sp, rk->group == 0 ? 1 : 2);
        for (uint32_t j = 0; j < rk->nmb; j++) {
            const vl_mb *mb = &f.p.mbs[rk->mb0 + j];
            cr_assert_eq(mb->cap, rk->group == 0 ? 4096u : 32768u);
            for (uint32_t s = 0; s < mb->nseg; s++)
                cr_assert_eq(f.p.segs[mb->seg0 + s].len, rk->group == 0 ? 4096u : 4097u);
        }
    }
    check_structure(&f, true);
    fx_free(&f);
}

/* Field by field: struct padding is not part of a plan. */
static bool plans_equal(const vl_plan *a, const vl_plan *b)
{
    if (a->niters != b->niters || a->nranks != b->nranks || a->nmbs != b->nmbs ||
        a->nsegs != b->nsegs)
        return false;
    for (size_t i = 0; i < a->nsegs; i++)
        if (a->segs[i].sample != b->segs[i].sample || a->segs[i].off != b->segs[i].off ||
            a->segs[i].len != b->segs[i].len)
            return false;
    for (size_t i = 0; i < a->nmbs; i++)
        if (a->mbs[i].seg0 != b->mbs[i].seg0 || a->mbs[i].nseg != b->mbs[i].nseg ||
            a->mbs[i].cap != b->mbs[i].cap)
            return false;
    for (size_t i = 0; i < a->nranks; i++) {
        const vl_rank *x = &a->ranks[i], *y = &b->ranks[i];
        if (x->mb0 != y->mb0 || x->nmb != y->nmb || x->dp != y->dp ||
            x->group != y->group || x->par.sp != y->par.sp ||
            x->par.ckpt_layers != y->par.ckpt_layers)
            return false;
    }
    for (size_t i = 0; i < a->niters; i++)
        if (a->iters[i].rank0 != b->iters[i].rank0 ||
            a->iters[i].epoch != b->iters[i].epoch)
            return false;
    return true;
}

Test(hbp, deterministic_and_seeded)
{
    size_t n = 10000;
    uint32_t *len = mixed_lengths(n, 32768, 12);
    fx a, b, c;

    cr_assert_eq(run_hbp(&a, len, n, SMALL_2EPOCHS, 7), VL_OK, "%s",
                 a.err.msg);
    cr_assert_eq(run_hbp(&b, len, n, SMALL_2EPOCHS, 7), VL_OK);
    cr_assert_eq(run_hbp(&c, len, n, SMALL_2EPOCHS, 8), VL_OK);
    cr_assert(plans_equal(&a.p, &b.p), "same seed, different plans");
    cr_assert(!plans_equal(&a.p, &c.p), "the seed changes nothing");
    cr_assert_eq(a.p.iters[a.p.niters - 1].epoch, 1);
    fx_free(&a);
    fx_free(&b);
    fx_free(&c);
    free(len);
}

/* The header records the chosen groups as an hbp.groups value that replays the plan. */
Test(hbp, chosen_groups_replay)
{
    size_t n = 6000;
    uint32_t *len = mixed_lengths(n, 32768, 14);
    char yaml[256], groups[64];
    fx a, b;

    cr_assert_eq(run_hbp(&a, len, n, SMALL_CFG, 5), VL_OK, "%s", a.err.msg);
    const char *g = strstr(a.p.params_json, "\"groups\":\"");
    cr_assert_not_null(g, "%s", a.p.params_json);
    g += strlen("\"groups\":\"");
    size_t k = strcspn(g, "\"");
    cr_assert_lt(k, sizeof groups);
    memcpy(groups, g, k);
    groups[k] = '\0';
    cr_assert_neq(strcmp(groups, "auto"), 0);
    snprintf(yaml, sizeof yaml, SMALL_CFG "hbp: {groups: '%s'}\n", groups);
    cr_assert_eq(run_hbp(&b, len, n, yaml, 5), VL_OK, "%s: %s", groups, b.err.msg);
    cr_assert(plans_equal(&a.p, &b.p), "groups '%s' do not replay the plan", groups);
    fx_free(&a);
    fx_free(&b);
    free(len);
}

Test(hbp, verbose_log_has_the_table)
{
    size_t n = 3000;
    uint32_t *len = mixed_lengths(n, 32768, 13);
    fx f;

    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, SMALL_CFG, 1, 1), VL_OK, "%s",
                 f.err.msg);
    cr_assert_not_null(f.log);
    cr_assert_not_null(strstr(f.log, "stage 1"), "%s", f.log);
    cr_assert_not_null(strstr(f.log, "s/Mtok"));
    cr_assert_not_null(strstr(f.log, "stage 2"));
    cr_assert_not_null(strstr(f.log, "group 0"));
    fx_free(&f);
    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, SMALL_CFG, 1, 0), VL_OK);
    cr_assert_null(f.log);
    fx_free(&f);
    free(len);
}

Test(hbp, params_binding_errors)
{
    static const struct {
        const char *yaml, *needle;
        vl_status st;
    } cases[] = {
        {"hbp: {grups: auto}\n", "did you mean 'groups'", VL_ECONFIG},
        {"hbp: {curriculum_iters: -1}\n", "curriculum_iters", VL_ECONFIG},
        {"hbp: {packer: xyz}\n", "packer", VL_ECONFIG},
        {"hbp: {balance: maybe}\n", "balance", VL_ECONFIG},
        {"hbp: {stage2_sp: two}\n", "stage2_sp", VL_ECONFIG},
        {"hbp: {groups: '16K,8K'}\n", "must ascend", VL_ECONFIG},
        {"hbp: {groups: '16K,64K'}\n", "exceeds training.max_seq_len", VL_ECONFIG},
        {"hbp: {groups: '16K:3'}\n", "sp 3", VL_ECONFIG},
        {"hbp: {groups: '16K:1:99'}\n", "ckpt_layers 99", VL_ECONFIG},
        {"hbp: {groups: 'sixteen'}\n", "hbp.groups", VL_ECONFIG},
        {"hbp: {candidates: '8K;16K'}\n", "hbp.candidates", VL_ECONFIG},
        {"hbp: {sp_degrees: '3,5'}\n", "hbp.sp_degrees", VL_ECONFIG},
        {"hbp: [1, 2]\n", "expected a mapping", VL_ECONFIG},
    };
    uint32_t len[16];
    fx f;

    for (size_t i = 0; i < 16; i++)
        len[i] = 100 + (uint32_t)i;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml, SMALL_CFG "%s", cases[i].yaml);
        vl_status st = run_hbp(&f, len, 16, yaml, 1);
        cr_assert_eq(st, cases[i].st, "case %zu: status %d (%s)", i, st, f.err.msg);
        cr_assert_not_null(strstr(f.err.msg, cases[i].needle), "case %zu: '%s'", i,
                           f.err.msg);
        fx_free(&f);
    }
}

Test(hbp, infeasible_memory_is_reported)
{
    uint32_t len[4] = {100, 200, 300, 400};
    fx f;

    /* 8 GiB devices cannot hold llama3.1-8b's model states */
    vl_status st =
        run_hbp(&f, len, 4, "cluster: {gpus: 8, mem_gib: 8}\n" SMALL_TRAINING "}\n", 1);
    cr_assert_eq(st, VL_EINFEASIBLE, "%d: %s", st, f.err.msg);
    cr_assert_not_null(strstr(f.err.msg, "hbp"));
    /* the figures are those of the least demanding degree tried, sp 8 with every layer
     * checkpointed on 8 GPUs (one rank, 4 micro-batches of 32K), not sp 1's */
    vl_par par = {.tp = 1, .pp = 1, .sp = 8, .ckpt_layers = 32};
    char want[160];
    snprintf(want, sizeof want, "sp 8 with 32 of 32 layers checkpointed (1 ranks x 4 "
             "micro-batches), needs %.1f GiB per GPU, 2.0 GiB usable",
             vl_cost_rank_peak_bytes(&f.cost, 32768, &par, 1, 4) / 1073741824.0);
    cr_assert_not_null(strstr(f.err.msg, want), "'%s' lacks '%s'", f.err.msg, want);
    fx_free(&f);
    /* a given degree is quoted with its own figures */
    st = run_hbp(&f, len, 4, "cluster: {gpus: 8, mem_gib: 8}\n" SMALL_TRAINING "}\n"
                 "hbp: {groups: '32K:2'}\n", 1);
    cr_assert_eq(st, VL_EINFEASIBLE, "%d: %s", st, f.err.msg);
    par.sp = 2;
    snprintf(want, sizeof want, "sp 2 with 32 of 32 layers checkpointed (4 ranks x 1 "
             "micro-batches), needs %.1f GiB per GPU",
             vl_cost_rank_peak_bytes(&f.cost, 32768, &par, 4, 1) / 1073741824.0);
    cr_assert_not_null(strstr(f.err.msg, want), "'%s' lacks '%s'", f.err.msg, want);
    fx_free(&f);
}
