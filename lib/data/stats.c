/* lib/data/stats.c -- dataset length statistics (see stats.h).
 *
 * Percentiles use a two-level radix select instead of sorting: one pass counts the
 * high 16 bits of every length, which tells which 65536-wide range holds the wanted
 * rank; a second pass counts the low 16 bits inside that range.  O(n) time, a fixed
 * 1 MiB of counters, no copy of the input (10M samples would need 40 MB to sort). */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

#define RADIX 65536u

static const uint32_t thresholds[VL_STATS_NTHRESH] = VL_STATS_THRESHOLDS;

/* Counters for the radix select: hi[] over len >> 16, lo[] over len & 0xffff. */
typedef struct radix {
    uint64_t *hi, *lo;
} radix;

static vl_status radix_init(radix *rx, vl_err *err)
{
    rx->hi = calloc(RADIX, sizeof *rx->hi);
    rx->lo = malloc(RADIX * sizeof *rx->lo);
    if (rx->hi == NULL || rx->lo == NULL) {
        free(rx->hi);
        free(rx->lo);
        return vl_seterr(err, VL_ENOMEM, "out of memory for length statistics");
    }
    return VL_OK;
}

static void radix_free(radix *rx)
{
    free(rx->hi);
    free(rx->lo);
}

/* The rank-th smallest (1-based, 1 <= rank <= total) index of a counter array:
 * the first bin whose running count reaches rank; *before gets the count below it. */
static uint32_t find_bin(const uint64_t *count, uint64_t rank, uint64_t *before)
{
    uint64_t acc = 0;
    uint32_t b = 0;

    while (acc + count[b] < rank)
        acc += count[b++];
    *before = acc;
    return b;
}

/* out[j] = rank[j]-th smallest length, given rx->hi already filled from len.
 * Consecutive ranks in the same high range share one pass over the data. */
static void select_ranks(uint32_t *out, const uint64_t *rank, size_t k, radix *rx,
                         const uint32_t *len, size_t n)
{
    uint32_t filled = UINT32_MAX; /* high range rx->lo currently counts; none yet */

    for (size_t j = 0; j < k; j++) {
        uint64_t before;
        uint32_t b = find_bin(rx->hi, rank[j], &before);
        if (b != filled) {
            memset(rx->lo, 0, RADIX * sizeof *rx->lo);
            for (size_t i = 0; i < n; i++)
                if (len[i] >> 16 == b)
                    rx->lo[len[i] & 0xffffu]++;
            filled = b;
        }
        uint64_t unused;
        out[j] = b << 16 | find_bin(rx->lo, rank[j] - before, &unused);
    }
}

/* Nearest rank of percentile ppm/10^4 (ppm = pct * 10^4, so 99.9% is 999000):
 * ceil(ppm * n / 10^6), in integers so that 90% of 10 is 9, not 9.000000000000002
 * rounded up to 10; split to avoid overflowing 64 bits for any n. */
static uint64_t nearest_rank(uint64_t ppm, uint64_t n)
{
    const uint64_t m = 1000000u;
    uint64_t r = n / m * ppm + (n % m * ppm + m - 1) / m;

    return r < 1 ? 1 : r;
}

/* Bucket b of a length: the first threshold above it, VL_STATS_NTHRESH if none. */
static size_t bucket_of(uint32_t l)
{
    size_t b = 0;

    while (b < VL_STATS_NTHRESH && l >= thresholds[b])
        b++;
    return b;
}

/* One pass: sums, extremes, per-bucket counts and the high-radix counters. */
static void scan(vl_stats *s, uint64_t *hi, const uint32_t *len, size_t n)
{
    uint64_t cnt[VL_STATS_NTHRESH + 1] = {0}, tok[VL_STATS_NTHRESH + 1] = {0};

    s->min = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len[i];
        size_t b = bucket_of(l);
        cnt[b]++;
        tok[b] += l;
        s->min = l < s->min ? l : s->min;
        s->max = l > s->max ? l : s->max;
        hi[l >> 16]++;
    }
    for (size_t b = 0; b <= VL_STATS_NTHRESH; b++)
        s->tokens += tok[b];
    for (size_t k = 0; k < VL_STATS_NTHRESH; k++) {
        s->n_below[k] = cnt[k] + (k ? s->n_below[k - 1] : 0);
        s->tokens_below[k] = tok[k] + (k ? s->tokens_below[k - 1] : 0);
        s->frac_below[k] = (double)s->n_below[k] / (double)n;
        s->token_frac_below[k] =
            s->tokens ? (double)s->tokens_below[k] / (double)s->tokens : 0.0;
    }
}

vl_status vl_stats_compute(vl_stats *out, const uint32_t *len, size_t n, vl_err *err)
{
    vl_stats s;
    radix rx;

    if (len == NULL && n > 0)
        return vl_seterr(err, VL_EUSAGE, "no lengths given for %zu samples", n);
    memset(&s, 0, sizeof s);
    memcpy(s.thresh, thresholds, sizeof s.thresh);
    s.n = n;
    if (n == 0) {
        *out = s;
        return VL_OK;
    }
    vl_status st = radix_init(&rx, err);
    if (st != VL_OK)
        return st;
    scan(&s, rx.hi, len, n);
    s.mean = (double)s.tokens / (double)n;

    const uint64_t rank[3] = {nearest_rank(500000u, n), nearest_rank(900000u, n),
                              nearest_rank(990000u, n)};
    uint32_t p[3];
    select_ranks(p, rank, 3, &rx, len, n);
    s.p50 = p[0];
    s.p90 = p[1];
    s.p99 = p[2];
    radix_free(&rx);
    *out = s;
    return VL_OK;
}

vl_status vl_stats_percentiles(uint32_t *out, const double *pct, size_t k, const uint32_t *len,
                               size_t n, vl_err *err)
{
    radix rx;
    uint64_t *rank;

    if (n == 0 || len == NULL || (k > 0 && (out == NULL || pct == NULL)))
        return vl_seterr(err, VL_EUSAGE, "percentiles need at least one length");
    for (size_t j = 0; j < k; j++)
        if (!(pct[j] > 0.0 && pct[j] <= 100.0))
            return vl_seterr(err, VL_EUSAGE, "percentile %g is not in (0, 100]", pct[j]);
    rank = malloc((k ? k : 1) * sizeof *rank);
    if (rank == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu percentiles", k);
    vl_status st = radix_init(&rx, err);
    if (st != VL_OK) {
        free(rank);
        return st;
    }
    for (size_t j = 0; j < k; j++) /* pct rounded to 1e-4 %, as nearest_rank wants */
        rank[j] = nearest_rank((uint64_t)(pct[j] * 10000.0 + 0.5), n);
    for (size_t i = 0; i < n; i++)
        rx.hi[len[i] >> 16]++;
    select_ranks(out, rank, k, &rx, len, n);
    radix_free(&rx);
    free(rank);
    return VL_OK;
}
