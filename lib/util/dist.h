/* lib/util/dist.h -- distributions over iterations: mean, p50, p99 and max of a column
 * of per-iteration values.  Every distribution vlplan reports (the metrics of
 * lib/check/metrics.c and the simulator's) comes from here, so both read alike. */
#ifndef VLPLAN_DIST_H
#define VLPLAN_DIST_H

#include <stddef.h>

#include "err.h"

typedef struct vl_dist {
    double mean, p50, p99, max;
} vl_dist;

/** Mean, p50, p99 (nearest rank: the ceil(q·n/100)-th smallest) and max of v[0..n-1],
 *  which it sorts in place; all zero when n = 0.  Every distribution vlplan reports
 *  (metrics and simulator) comes from here. */
void vl_dist_of(double *v, size_t n, vl_dist *d);

/* Columns of per-iteration values, grown as iterations come (a plan read an iteration at a
 * time has no count up front), then their distributions.  Zeroed struct = empty. */
#define VL_SERIES_MAX 8
typedef struct vl_series {
    double *col[VL_SERIES_MAX];
    size_t ncol, n, cap;
} vl_series;
/** Append one row of s->ncol values.  VL_ENOMEM. */
vl_status vl_series_push(vl_series *s, const double *row, vl_err *err);
/** Distribution of column k (sorts it in place). */
void vl_series_dist(vl_series *s, size_t k, vl_dist *d);
void vl_series_free(vl_series *s);

#endif
