/* lib/data/stats.h -- length statistics of a dataset for `vlplan stats`: count, tokens,
 * mean, extremes, percentiles, and the length table the papers print (Skrull Table 1,
 * ChunkFlow Tables 1-2: fraction of samples under 1K, 4K, 8K, 32K, 128K, and the
 * longest sample).  Formatting is cmd/'s job; this returns numbers.
 *
 * Conventions, fixed here so every command agrees:
 *  - K = 1024 tokens.  The papers do not define K; 1024 matches how context lengths
 *    are written (a "32K" context holds 32,768 tokens).  "< 4K" means len < 4096.
 *  - Percentiles are nearest-rank: pP is the smallest length x such that at least P%
 *    of the samples are <= x, i.e. the ceil(P/100 * n)-th smallest (1-based); it is
 *    always a length that occurs in the data.
 *  - Time O(n) (two or three passes, a radix select for the percentiles), extra memory
 *    1 MiB whatever n; the input is not modified. */
#ifndef VLPLAN_STATS_H
#define VLPLAN_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define VL_STATS_NTHRESH 5

/* The paper table's thresholds: 1K, 4K, 8K, 32K, 128K. */
#define VL_STATS_THRESHOLDS                                                                   \
    {                                                                                         \
        1024u, 4096u, 8192u, 32768u, 131072u                                                  \
    }

typedef struct vl_stats {
    size_t n;                          /* samples */
    uint64_t tokens;                   /* sum of lengths */
    double mean;                       /* tokens / n */
    uint32_t min, max;                 /* max is the table's "longest" */
    uint32_t p50, p90, p99;            /* nearest-rank percentiles */
    uint32_t thresh[VL_STATS_NTHRESH]; /* VL_STATS_THRESHOLDS */
    /* Cumulative, as the papers print them: samples with len < thresh[k]. */
    uint64_t n_below[VL_STATS_NTHRESH];
    uint64_t tokens_below[VL_STATS_NTHRESH]; /* their tokens */
    double frac_below[VL_STATS_NTHRESH];     /* n_below / n */
    /* Share of all tokens held by those samples: on long-tail data 99% of samples
     * can hold well under half the tokens, which is what drives the cost. */
    double token_frac_below[VL_STATS_NTHRESH]; /* tokens_below / tokens */
} vl_stats;

/** Statistics of len[0..n-1] into *out.  n = 0 is valid and gives all zeros.
 *  VL_EUSAGE when len is NULL with n > 0, VL_ENOMEM.  *out is untouched on error. */
vl_status vl_stats_compute(vl_stats *out, const uint32_t *len, size_t n, vl_err *err);

/** Nearest-rank percentiles: out[j] = the pct[j]-th percentile of len[0..n-1], for
 *  j < k, each pct in (0, 100].  VL_EUSAGE for n = 0, NULL arrays or a pct out of
 *  range; VL_ENOMEM.  O(n) per distinct 65536-wide value range the answers fall in
 *  (usually one pass in all). */
vl_status vl_stats_percentiles(uint32_t *out, const double *pct, size_t k, const uint32_t *len,
                               size_t n, vl_err *err);

#endif
