/* tests/data/test_stats.c -- lib/stats: the paper table, nearest-rank percentiles checked by
 * hand and against sorting, edge cases. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "stats.h"

static vl_stats stats_of(const uint32_t *len, size_t n)
{
    vl_stats s;
    vl_err err;
    vl_err_clear(&err);
    cr_assert_eq(vl_stats_compute(&s, len, n, &err), VL_OK, "%s", err.msg);
    return s;
}

Test(stats, paper_table_boundaries)
{
    /* Two lengths per bucket, straddling each threshold: "< 4K" excludes 4096. */
    const uint32_t len[] = {1,     1023,   1024,   4095,   4096,   8191,
                            8192,  32767,  32768,  131071, 131072, 200000};
    vl_stats s = stats_of(len, 12);
    const uint32_t thr[] = VL_STATS_THRESHOLDS;
    uint64_t tokens = 0, below = 0;

    for (size_t k = 0; k < VL_STATS_NTHRESH; k++) {
        cr_assert_eq(s.thresh[k], thr[k]);
        cr_assert_eq(s.n_below[k], 2 * (k + 1), "k=%zu", k);
        cr_assert_float_eq(s.frac_below[k], (2.0 * (double)(k + 1)) / 12.0, 1e-12);
        below += len[2 * k] + len[2 * k + 1];
        cr_assert_eq(s.tokens_below[k], below);
    }
    for (size_t i = 0; i < 12; i++)
        tokens += len[i];
    cr_assert_eq(s.n, 12);
    cr_assert_eq(s.tokens, tokens);
    cr_assert_float_eq(s.mean, (double)tokens / 12.0, 1e-9);
    cr_assert_float_eq(s.token_frac_below[4], (double)below / (double)tokens, 1e-12);
    cr_assert_eq(s.min, 1);
    cr_assert_eq(s.max, 200000);
}

Test(stats, nearest_rank_by_hand)
{
    uint32_t len[100];
    for (uint32_t i = 0; i < 100; i++)
        len[i] = 100 - i;   /* 100..1, unsorted on purpose */

    vl_stats s = stats_of(len, 100);
    cr_assert_eq(s.p50, 50);
    cr_assert_eq(s.p90, 90);
    cr_assert_eq(s.p99, 99);

    const uint32_t ten[] = {7, 3, 10, 1, 9, 2, 8, 4, 6, 5};
    s = stats_of(ten, 10);
    cr_assert_eq(s.p50, 5);    /* ceil(0.5 * 10) = 5th smallest */
    cr_assert_eq(s.p90, 9);    /* 9th, not 10th: no floating-point round-up */
    cr_assert_eq(s.p99, 10);   /* ceil(9.9) = 10th */

    const uint32_t one[] = {42};
    s = stats_of(one, 1);
    cr_assert(s.p50 == 42 && s.p90 == 42 && s.p99 == 42 && s.min == 42 && s.max == 42);
}

Test(stats, percentiles_across_radix_ranges)
{
    /* Sorted: 5, 65535, 65536, 70000, 200000 -- three different high-16-bit ranges. */
    const uint32_t len[] = {70000, 5, 200000, 65536, 65535};
    vl_stats s = stats_of(len, 5);
    cr_assert_eq(s.p50, 65536);   /* 3rd */
    cr_assert_eq(s.p90, 200000);  /* 5th */
    cr_assert_eq(s.p99, 200000);

    const double pct[] = {20, 40, 100, 0.001, 60};
    const uint32_t want[] = {5, 65535, 200000, 5, 65536};
    uint32_t got[5];
    vl_err err;
    cr_assert_eq(vl_stats_percentiles(got, pct, 5, len, 5, &err), VL_OK);
    for (size_t j = 0; j < 5; j++)
        cr_assert_eq(got[j], want[j], "pct %g: %u, want %u", pct[j], got[j], want[j]);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The radix select must agree with sorting, on data spread over many ranges. */
Test(stats, percentiles_match_sorting)
{
    const size_t n = 100003;
    uint32_t *len = malloc(n * sizeof *len), *sorted = malloc(n * sizeof *len);
    const double pct[] = {0.5, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    uint32_t got[10];
    vl_rng r;
    vl_err err;

    cr_assert(len && sorted);
    vl_rng_seed(&r, 7, 0);
    for (size_t i = 0; i < n; i++)   /* wide, skewed: 1 .. 2^31-1 */
        len[i] = 1 + (uint32_t)(vl_rng_next(&r) >> (33 + vl_rng_below(&r, 31)));
    memcpy(sorted, len, n * sizeof *len);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    cr_assert_eq(vl_stats_percentiles(got, pct, 10, len, n, &err), VL_OK, "%s", err.msg);
    for (size_t j = 0; j < 10; j++) {
        /* nearest rank computed independently, in integers of 1e-4 % */
        uint64_t ppm = (uint64_t)(pct[j] * 10000.0 + 0.5);
        uint64_t rank = (ppm * n + 999999) / 1000000;
        cr_assert_eq(got[j], sorted[rank - 1], "pct %g", pct[j]);
    }
    vl_stats s = stats_of(len, n);
    cr_assert_eq(s.min, sorted[0]);
    cr_assert_eq(s.max, sorted[n - 1]);
    cr_assert_eq(s.p50, sorted[(n + 1) / 2 - 1]);
    free(len);
    free(sorted);
}

Test(stats, empty_and_errors)
{
    vl_stats s;
    vl_err err;
    uint32_t out;
    const uint32_t one = 1;
    double pct = 50;

    memset(&s, 0xff, sizeof s);
    cr_assert_eq(vl_stats_compute(&s, NULL, 0, &err), VL_OK);
    cr_assert(s.n == 0 && s.tokens == 0 && s.mean == 0.0 && s.max == 0 && s.p99 == 0);
    cr_assert(s.frac_below[0] == 0.0 && s.token_frac_below[4] == 0.0);
    cr_assert_eq(s.thresh[0], 1024);

    cr_assert_eq(vl_stats_compute(&s, NULL, 3, &err), VL_EUSAGE);
    cr_assert_eq(vl_stats_percentiles(&out, &pct, 1, &one, 0, &err), VL_EUSAGE);
    pct = 0.0;
    cr_assert_eq(vl_stats_percentiles(&out, &pct, 1, &one, 1, &err), VL_EUSAGE);
    cr_assert(strstr(err.msg, "percentile") != NULL);
    pct = 100.5;
    cr_assert_eq(vl_stats_percentiles(&out, &pct, 1, &one, 1, &err), VL_EUSAGE);
    pct = 100.0;
    cr_assert_eq(vl_stats_percentiles(&out, &pct, 1, &one, 1, &err), VL_OK);
    cr_assert_eq(out, 1);
}

/* Token shares: one long sample can hold most tokens while being 1% of samples. */
Test(stats, token_fraction_long_tail)
{
    uint32_t len[100];
    for (size_t i = 0; i < 99; i++)
        len[i] = 500;
    len[99] = 100000;
    vl_stats s = stats_of(len, 100);
    cr_assert_float_eq(s.frac_below[0], 0.99, 1e-12);
    cr_assert_float_eq(s.token_frac_below[0], 49500.0 / 149500.0, 1e-12);
    cr_assert_float_eq(s.token_frac_below[4], 1.0, 1e-12);
    cr_assert_eq(s.p99, 500);
    cr_assert_eq(s.max, 100000);
}

/* 10M samples: sums do not overflow and the answer matches a direct count. */
Test(stats, ten_million)
{
    const size_t n = 10000000;
    uint32_t *len = malloc(n * sizeof *len);
    uint64_t tokens = 0, below = 0;

    cr_assert(len);
    for (size_t i = 0; i < n; i++) {
        len[i] = (uint32_t)(i % 300000) + 1;
        tokens += len[i];
        below += len[i] < 8192;
    }
    vl_stats s = stats_of(len, n);
    cr_assert_eq(s.tokens, tokens);
    cr_assert_eq(s.n_below[2], below);
    cr_assert_eq(s.max, 300000);
    free(len);
}
