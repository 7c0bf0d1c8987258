/* tests/plan/test_metrics.c -- balance metrics against hand-computed cases: HBP eq. (2)
 * (ABR 0.25, DBR 0), DBR of unequal ranks, ABR of a slice, PR, CR, Ave-T, the
 * nearest-rank aggregates, dropped counts, and the JSON text with its key order. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static const vl_par PAR1 = {1, 1, 1, 0};

/* One rank holding the given whole segments (lengths) in one micro-batch of cap. */
static void rank_of(vl_plan *p, const vl_par *par, uint32_t cap, const uint32_t *len,
                    size_t n)
{
    vl_plan_rank_begin(p, (int)p->iters[p->niters - 1].nranks, par, NULL);
    vl_plan_mb_begin(p, cap, NULL);
    for (size_t i = 0; i < n; i++)
        vl_plan_seg(p, 0, 0, len[i], NULL);
}

Test(metrics, hbp_equation_2)
{
    static const uint32_t a[] = {1024, 1024, 1024, 1024}, b[] = {2048, 2048};
    vl_plan p;
    vl_iter_metrics im;

    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    rank_of(&p, &PAR1, 4096, a, 4);
    rank_of(&p, &PAR1, 4096, b, 2);
    vl_metrics_iter(&p, 0, &im);
    cr_assert_float_eq(im.abr, 0.25, 1e-15);
    cr_assert_float_eq(im.dbr, 0.0, 1e-15);
    cr_assert_float_eq(im.pr, 0.0, 1e-15);
    cr_assert_float_eq(im.cr, 0.0, 1e-15);
    cr_assert_float_eq(im.ave_t, 4096.0, 1e-12);
    vl_plan_free(&p);
}

Test(metrics, dbr_pr_cr_ave_t_by_hand)
{
    static const uint32_t a[] = {60, 40}, b[] = {30}, c[] = {10};
    vl_par sp2 = {1, 1, 2, 0};
    vl_plan p;
    vl_iter_metrics im;

    /* ranks: 100 tokens in a cap-100 mb, 30 in cap 100 (sp 2), 10 in cap 50 */
    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    rank_of(&p, &PAR1, 100, a, 2);
    rank_of(&p, &sp2, 100, b, 1);
    rank_of(&p, &PAR1, 50, c, 1);
    vl_metrics_iter(&p, 0, &im);
    /* ranks of different sizes (the sp 2 rank has 2 GPUs) are compared per GPU:
     * loads 100, 15, 10, so DBR = (0 + 85 + 90) / (100 * 3) */
    cr_assert_float_eq(im.dbr, 175.0 / 300.0, 1e-15);
    /* PR = (0 + 70 + 40) / 250 */
    cr_assert_float_eq(im.pr, 110.0 / 250.0, 1e-15);
    /* CR = 30 / 140 */
    cr_assert_float_eq(im.cr, 30.0 / 140.0, 1e-15);
    /* Ave-T = 140 / 3 micro-batches */
    cr_assert_float_eq(im.ave_t, 140.0 / 3.0, 1e-12);
    /* A = 60² + 40² = 5200, 900 / 2 GPUs, 100: ABR = (0 + 4750 + 5100) / (5200 * 3) */
    cr_assert_float_eq(im.abr, 9850.0 / 15600.0, 1e-15);
    vl_plan_free(&p);
}

/* A slice [a, b) attends to all earlier tokens of its sample: b² − a². */
Test(metrics, abr_of_slices)
{
    vl_plan p;
    vl_iter_metrics im;

    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 0, 0, 500, NULL);     /* 250000 */
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 0, 500, 500, NULL);   /* 1000² − 500² = 750000 */
    vl_metrics_iter(&p, 0, &im);
    cr_assert_float_eq(im.dbr, 0.0, 1e-15);
    cr_assert_float_eq(im.abr, 500000.0 / (750000.0 * 2), 1e-15);
    vl_plan_free(&p);
}

Test(metrics, padded_batch_and_empty_iteration)
{
    static const uint32_t a[] = {100, 20, 20, 20};
    vl_plan p;
    vl_iter_metrics im;

    /* padded batch of 4 samples, t_max 100: cap 400, 240 padded slots */
    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    rank_of(&p, &PAR1, 400, a, 4);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_metrics_iter(&p, 0, &im);
    cr_assert_float_eq(im.pr, 0.6, 1e-15);
    vl_metrics_iter(&p, 1, &im);
    cr_assert_eq(im.abr + im.dbr + im.pr + im.cr + im.ave_t, 0.0);
    vl_plan_free(&p);
}

/* Iterations with one rank each whose PR is 0, 0.1, 0.2, 0.5: mean 0.2, nearest-rank
 * p50 = 2nd smallest = 0.1, p99 = 4th = 0.5, max 0.5. */
Test(metrics, aggregates_nearest_rank)
{
    static const uint32_t fill[] = {100, 90, 80, 50};
    static const uint32_t order[] = {2, 0, 3, 1};
    vl_plan p;
    vl_metrics mt;
    vl_err err = {0};

    vl_plan_init(&p, NULL, "t", 0, NULL);
    for (int i = 0; i < 4; i++) {
        vl_plan_iter_begin(&p, 0, NULL);
        rank_of(&p, &PAR1, 100, &fill[order[i]], 1);
    }
    cr_assert_eq(vl_metrics_compute(&p, &mt, &err), VL_OK);
    cr_assert_eq(mt.iterations, 4);
    cr_assert_eq(mt.tokens, 320);
    cr_assert_eq(mt.samples, 4);
    cr_assert_float_eq(mt.pr.mean, 0.2, 1e-15);
    cr_assert_float_eq(mt.pr.p50, 0.1, 1e-15);
    cr_assert_float_eq(mt.pr.p99, 0.5, 1e-15);
    cr_assert_float_eq(mt.pr.max, 0.5, 1e-15);
    cr_assert_float_eq(mt.ave_t.p50, 80.0, 1e-12);
    vl_plan_free(&p);
}

Test(metrics, p99_of_many_iterations)
{
    vl_plan p;
    vl_metrics mt;

    /* 200 iterations, PR = k/200 for k = 0..199: p99 = the 198th smallest = 197/200 */
    vl_plan_init(&p, NULL, "t", 0, NULL);
    for (uint32_t k = 0; k < 200; k++) {
        uint32_t t = 200 - k;
        vl_plan_iter_begin(&p, 0, NULL);
        rank_of(&p, &PAR1, 200, &t, 1);
    }
    cr_assert_eq(vl_metrics_compute(&p, &mt, NULL), VL_OK);
    cr_assert_float_eq(mt.pr.p99, 197.0 / 200.0, 1e-15);
    cr_assert_float_eq(mt.pr.p50, 99.0 / 200.0, 1e-15);
    cr_assert_float_eq(mt.pr.max, 199.0 / 200.0, 1e-15);
    vl_plan_free(&p);
}

Test(metrics, dropped_counts_distinct_samples)
{
    vl_plan p;
    vl_metrics mt;

    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_drop(&p, 7, 0, 100, VL_DROP_OVERSIZE, NULL);
    vl_plan_drop(&p, 3, 50, 10, VL_DROP_TRUNCATED, NULL);
    vl_plan_drop(&p, 7, 100, 5, VL_DROP_TRUNCATED, NULL);
    cr_assert_eq(vl_metrics_compute(&p, &mt, NULL), VL_OK);
    cr_assert_eq(mt.dropped_samples, 2);
    cr_assert_eq(mt.dropped_tokens, 115);
    cr_assert_eq(mt.iterations, 0);
    cr_assert_eq(mt.abr.mean, 0.0);
    vl_plan_free(&p);
}
