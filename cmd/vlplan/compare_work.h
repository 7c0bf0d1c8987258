/* cmd/vlplan/compare_work.h -- what `compare` compared and whether its rows did the same
 * work: tokens planned, optimizer steps and batch scope against the baseline row, the
 * speedups that only hold between rows of the same work, and --same-tokens. */
#ifndef VLPLAN_COMPARE_WORK_H
#define VLPLAN_COMPARE_WORK_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "evaluate.h"

/* A row as the work checks need it: its strategy and its own --set values. */
typedef struct compare_row_view {
    const char *label, *strategy;
    const char *const *sets;
    int nsets;
} compare_row_view;

/* What the report shows of a row beyond its figures (only with --html). */
typedef struct compare_detail {
    double *iter_ms; /* simulated time of every iteration */
    size_t niters;
    size_t slowest; /* the iteration the Gantt chart draws */
    char *gantt;    /* its chart (SVG text), NULL when none */
} compare_detail;
void compare_details_free(compare_detail *d, size_t n);

/** Plan m with strategy under cfg in a child process (its peak memory is its own),
 *  evaluate it into *r (labelled), and with detail also *d.  A refusal is a row: r->refused
 *  and r->why.  0 or an exit code (printed). */
int compare_plan_row(const char *label, const char *strategy, vl_manifest *m,
                     const vl_config *cfg, bool detail, eval_result *r, compare_detail *d);

/* What was compared, for the chart and the report to say. */
typedef struct compare_ctx {
    char manifest[256]; /* the manifest names */
    size_t samples;
    uint64_t tokens;
    uint32_t p50, p90, p99, longest;
    char config[256];      /* model, GPUs, tp/pp/sp/dp, context, batch */
    char same_tokens[400]; /* --same-tokens: the limit every row planned under, and why */
    uint32_t *lengths;     /* the manifest's lengths (the report's histogram), borrowed */
    size_t nlengths;
    const compare_detail *details; /* [rows] with --html, else NULL */
} compare_ctx;

/** Fill ctx from the manifest m and the shared configuration. */
void compare_ctx_describe(compare_ctx *ctx, const vl_manifest *m, const vl_config *cfg);

/** A row regroups samples across the epoch's iterations (pack in epoch scope, hbp) rather
 *  than keeping each sampled global batch. */
bool compare_epoch_scope(const char *strategy, const vl_config *cfg);

/** Mark res[0..n): token shares against the row planning the most (less work under
 *  0.999), iteration counts against the baseline (other steps past 1%), speedups against
 *  the baseline (named by label, NULL: the first row) only between rows that fit and did
 *  the same work; warn on stderr (unless quiet) naming every row that is so marked, and
 *  when rows of different scope are compared. */
void compare_annotate(eval_result *res, size_t n, const char *baseline, bool quiet);

/** --same-tokens: every row's length limit (its strategy's, under its settings); the
 *  smallest is applied to the manifest under training.oversize (truncate or drop) before
 *  any row plans, so that all rows plan the same tokens; ctx->same_tokens says which
 *  limit, whose and why.  *m is replaced when something was cut.  0 or an exit code. */
int compare_same_tokens(const compare_row_view *rows, size_t n, const cli_config_args *args,
                        const vl_config *shared, vl_manifest **m, compare_ctx *ctx,
                        bool quiet);

#endif
