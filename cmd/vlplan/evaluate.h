/* cmd/vlplan/evaluate.h -- one plan's figures (balance metrics + simulated step time)
 * and their presentations: JSON (the metrics file), table, CSV, Markdown, and lookup
 * by key for `compare --check`. */
#ifndef VLPLAN_EVALUATE_H
#define VLPLAN_EVALUATE_H

#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "config.h"
#include "cost.h"
#include "jsonw.h"
#include "metrics.h"
#include "plan.h"
#include "plan_file.h"
#include "sim.h"

typedef struct eval_result {
    char strategy[48];
    vl_metrics mt;
    bool has_sim;
    vl_sim_summary sim;
    bool has_timing;      /* planning time and memory known (plan, compare) */
    double plan_time_s;
    double peak_rss_mib;
    double speedup;       /* compare: first strategy's epoch time / this one's */
} eval_result;

/** Metrics of p, and the simulation when cost is non-NULL.  0 or an exit code. */
int eval_plan(const char *cmd, const vl_plan *p, const vl_cost *cost, const vl_sim_opts *so,
              eval_result *out);

/** Append r's figures as members of o (documented keys, means at the top level,
 *  p50/p99/max under "dist").  0, or -1 when out of memory. */
int eval_json_into(vl_jw *o, const eval_result *r);
/** r as a one-line JSON object on f.  0 or an exit code. */
int eval_print_json(FILE *f, const char *cmd, const eval_result *r);
/** Metric-by-row table of one result. */
void eval_print_table(FILE *f, const eval_result *r);
/** CSV: metric,mean,p50,p99,max. */
void eval_print_csv(FILE *f, const eval_result *r);

/** Value of a key ("abr", "epoch_time_s", ...) of r; false when unknown. */
bool eval_get(const eval_result *r, const char *key, double *v);
/** Keys in presentation order, NULL-terminated (compare's columns). */
extern const char *const eval_keys[];

/** After a failed vl_plan_read: every structural error it collected (one line each),
 *  or the error itself; returns the exit code. */
int eval_read_fail(const char *cmd, const vl_plan_file *f, const vl_err *err);

/** Read the one plan file operand argv[first] (usage error unless there is exactly
 *  one) into *p, without a manifest.  Returns 0 (free p with vl_plan_free) or an exit
 *  code after printing the reason. */
int eval_read_plan(const char *cmd, const char *usage, int argc, char **argv, int first,
                   vl_plan *p);

/** Config and cost model for a plan file: the config recorded in the plan header
 *  (JSON is YAML), or -c instead, then --set.  Returns 0 (free cfg with
 *  vl_config_free), or an exit code after printing the reason. */
int eval_plan_cost(const char *cmd, const vl_plan *p, const cli_config_args *a, vl_config *cfg,
                   vl_cost *cost);

#endif
