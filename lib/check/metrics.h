/* lib/check/metrics.h -- balance metrics computed the same way for every strategy, from the
 * plan alone (docs/decisions.md §4): ABR, DBR, PR, CR, Ave-T per iteration, and their mean, p50,
 * p99 and max over iterations. */
#ifndef VLPLAN_METRICS_H
#define VLPLAN_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "dist.h"
#include "plan.h"

typedef struct vl_iter_metrics {
    double abr, dbr, pr, cr, ave_t;
} vl_iter_metrics;

typedef struct vl_metrics {
    size_t iterations;
    uint64_t samples; /* samples started, all epochs */
    uint64_t tokens;  /* tokens planned, all epochs */
    uint64_t dropped_tokens;
    size_t dropped_samples;    /* samples with a dropped range (oversize drop or truncate) */
    uint64_t truncated_tokens; /* of dropped_*: the tails cut by truncation */
    size_t truncated_samples;
    vl_dist abr, dbr, pr, cr, ave_t;
} vl_metrics;

/** Metrics of iteration it. */
void vl_metrics_iter(const vl_plan *p, size_t it, vl_iter_metrics *out);

/** All iterations and aggregates.  VL_ENOMEM only. */
vl_status vl_metrics_compute(const vl_plan *p, vl_metrics *out, vl_err *err);

/* The same an iteration at a time (vl_plan_read_each): _iter after every iteration,
 * _finish with the plan's dropped ranges.  Memory: five doubles per iteration. */
typedef struct vl_metrics_acc vl_metrics_acc;
vl_status vl_metrics_acc_new(vl_metrics_acc **out, vl_err *err);
vl_status vl_metrics_acc_iter(vl_metrics_acc *a, const vl_plan *p, size_t it, vl_err *err);
vl_status vl_metrics_acc_finish(vl_metrics_acc *a, const vl_plan *p, vl_metrics *out,
                                vl_err *err);
void vl_metrics_acc_free(vl_metrics_acc *a); /* NULL: no-op */

#endif
