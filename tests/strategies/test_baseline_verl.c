/* tests/strategies/test_baseline_verl.c -- the verl baseline against hand traces of veRL's
 * karmarkar_karp (verl/utils/seqlen_balancing.py): equal-size KK to ranks on
 * 24576*len + len^2, then the dynamic batch size split. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "vlplan_strategy.h"

static void plan_verl(vl_plan *p, vl_manifest **m, const uint32_t *len, size_t n, int dp,
                      uint32_t gb, uint32_t cap)
{
    vl_config cfg;
    vl_err err = {0};
    vl_run_result res;
    vl_run_opts o = {.seed = 1, .allow_oom = true};
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cfg.training.dp = dp;
    cfg.cluster.gpus = dp;   /* dp x tp x pp x sp = gpus: every GPU joins every step */
    cfg.training.tp = cfg.training.pp = cfg.training.sp = 1;
    cfg.training.global_batch = gb;
    cfg.training.global_tokens = 0;
    cfg.training.max_seq_len = cap;
    cfg.training.epochs = 1;
    cfg.training.recompute = VL_RECOMPUTE_NONE;
    cr_assert_eq(vl_manifest_from_lengths(m, len, n, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_run_plan(p, vl_strategy_find("verl"), *m, &cfg, &o, &res, &err), VL_OK,
                 "%s", err.msg);
    free(res.log);
    vl_config_free(&cfg);
}

/* A micro-batch's samples as a bit set (samples < 64). */
static uint64_t mb_set(const vl_plan *p, uint64_t j)
{
    const vl_mb *mb = &p->mbs[j];
    const vl_seg *sg = vl_plan_mb_segs(p, mb);
    uint64_t s = 0;
    for (uint32_t k = 0; k < mb->nseg; k++)
        s |= UINT64_C(1) << sg[k].sample;
    return s;
}

static uint64_t rank_set(const vl_plan *p, uint64_t r)
{
    uint64_t s = 0;
    for (uint32_t j = 0; j < p->ranks[r].nmb; j++)
        s |= mb_set(p, p->ranks[r].mb0 + j);
    return s;
}

#define B(i) (UINT64_C(1) << (i))

/* veRL, by hand: ascending pairs (10,20) (30,40) (50,60) are the states; the largest
 * spread first: (50,60) absorbs (30,40) as {60,30} {50,40}; then (10,20), of larger
 * spread than that, absorbs it: {20,50,40} {10,60,30}. */
Test(verl, ranks_by_equal_size_kk_on_the_workload)
{
    uint32_t len[] = {10, 20, 30, 40, 50, 60};
    vl_manifest *m = NULL;
    vl_plan p;
    plan_verl(&p, &m, len, 6, 2, 6, 1000);
    cr_assert_eq(p.niters, 1);
    uint64_t a = rank_set(&p, 0), b = rank_set(&p, 1);
    uint64_t x = B(1) | B(3) | B(4), y = B(0) | B(2) | B(5);
    cr_assert((a == x && b == y) || (a == y && b == x), "ranks %#llx %#llx",
              (unsigned long long)a, (unsigned long long)b);
    cr_assert_eq(p.ranks[0].nmb, 1);   /* 110 and 100 tokens: one micro-batch each */
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* Capacity 60: both ranks need two micro-batches.  Plain KK of {20,40,50}: 50 and 40
 * merge to {50} {40}; 20 (spread w(20) > w(50) - w(40)) absorbs it: {20,40} {50}.
 * Of {10,30,60}: {60} {30}, spread w(60) - w(30) > w(10), absorbs 10: {60} {30,10}. */
Test(verl, dynamic_batch_size_split)
{
    uint32_t len[] = {10, 20, 30, 40, 50, 60};
    vl_manifest *m = NULL;
    vl_plan p;
    plan_verl(&p, &m, len, 6, 2, 6, 60);
    cr_assert_eq(p.ranks[0].nmb, 2);
    cr_assert_eq(p.ranks[1].nmb, 2);
    uint64_t got[4], want[] = {B(1) | B(3), B(4), B(5), B(0) | B(2)};
    for (int j = 0; j < 4; j++)
        got[j] = mb_set(&p, (uint64_t)j);
    for (int w = 0; w < 4; w++) {
        int found = 0;
        for (int j = 0; j < 4; j++)
            found |= got[j] == want[w];
        cr_assert(found, "micro-batch %#llx missing", (unsigned long long)want[w]);
    }
    for (uint64_t j = 0; j < p.nmbs; j++)
        cr_assert_leq(p.mbs[j].tokens, p.mbs[j].cap);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* A batch not a multiple of dp (veRL asserts): ranks differ by one sample at most, and
 * every micro-batch count is the same. */
Test(verl, uneven_batches_and_capacity)
{
    size_t n = 1001;
    uint32_t *len = malloc(n * sizeof *len);
    vl_rng r;
    vl_rng_seed(&r, 3, 1);
    for (size_t i = 0; i < n; i++)
        len[i] = 1 + (uint32_t)vl_rng_below(&r, 4096);
    vl_manifest *m = NULL;
    vl_plan p;
    plan_verl(&p, &m, len, n, 8, 256, 4096);
    for (size_t it = 0; it < p.niters; it++) {
        const vl_iter *in = &p.iters[it];
        uint32_t lo = UINT32_MAX, hi = 0;
        for (uint32_t k = 0; k < in->nranks; k++) {
            const vl_rank *rk = &p.ranks[in->rank0 + k];
            uint32_t c = 0;
            cr_assert_eq(rk->nmb, p.ranks[in->rank0].nmb);
            for (uint32_t j = 0; j < rk->nmb; j++) {
                cr_assert_leq(p.mbs[rk->mb0 + j].tokens, 4096);
                c += p.mbs[rk->mb0 + j].nseg;
            }
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
        }
        cr_assert_leq(hi - lo, 1);
    }
    vl_plan_free(&p);
    vl_manifest_free(m);
    free(len);
}
