/* bench/bench_util.h -- what the benchmarks share: clocks, a config from "key=value"
 * settings, a manifest of generated lengths, plan() timed alone, and the integer sum of
 * a CSV trace row.  Linked into every bench/bench_*.c program (Makefile). */
#ifndef VLPLAN_BENCH_UTIL_H
#define VLPLAN_BENCH_UTIL_H

#include <stddef.h>

#include "config.h"
#include "manifest.h"
#include "vlplan_strategy.h"

/** Seconds on the monotonic clock. */
double bench_wall_s(void);
/** Seconds of this process's CPU time: plan() is single-threaded, and on a shared machine
 *  wall time measures the neighbours as much as the planner. */
double bench_cpu_s(void);

/** cfg: the defaults, then the YAML file `file` (NULL: none), then every "key=value" of
 *  sets and then of extra (NULL-terminated; either may be NULL), finalized.  The caller
 *  frees cfg, also on failure. */
vl_status bench_config(vl_config *cfg, const char *file, const char *const *sets,
                       const char *const *extra, vl_err *err);

/** A manifest of n lengths drawn from `vlplan gen`'s distribution dist with seed; *m stays
 *  NULL on failure. */
vl_status bench_manifest(vl_manifest **m, const char *dist, size_t n, uint64_t seed,
                         vl_err *err);

typedef struct bench_plan_time {
    double cpu_s, wall_s; /* the best of the runs, each clock on its own */
    size_t iters;         /* iterations a run planned */
} bench_plan_time;

/** plan() of s alone on m under cfg, as vl_run_plan calls it (its params bound from cfg,
 *  the selection and the cost model made outside the clock), the best of reps runs. */
vl_status bench_time_plan(const vl_strategy *s, vl_manifest *m, const vl_config *cfg, int reps,
                          bench_plan_time *t, vl_err *err);

/** Sum of the fields of a CSV line that are plain integers (a timestamp is not); *any:
 *  whether there was one.  Cuts line into fields. */
unsigned long bench_csv_row_sum(char *line, int *any);

#endif
