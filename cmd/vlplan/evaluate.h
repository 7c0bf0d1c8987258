/* cmd/vlplan/evaluate.h -- one plan's figures (balance metrics + simulated step time)
 * and their presentations: JSON (the metrics file), table, CSV, Markdown, and lookup
 * by key for `compare --check`. */
#ifndef VLPLAN_EVALUATE_H
#define VLPLAN_EVALUATE_H

#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "jsonw.h"
#include "vlplan.h"

typedef struct eval_result {
    vl_eval ev;      /* the plan's figures (lib/check/eval.h) */
    char label[48];  /* compare: the row's name (the strategy unless labelled) */
    bool has_timing; /* planning time and memory known (plan, compare) */
    double plan_time_s;
    double peak_rss_mib;
    double speedup; /* compare: the baseline row's epoch time / this one's; NaN (n/a)
                           * unless both fit device memory and plan the same tokens */
    /* compare: what work the row did, so that rows of other work are marked */
    bool epoch_scope;   /* samples regrouped across the epoch's iterations (pack, hbp);
                           * false: each sampled global batch kept (batch scope) */
    double token_share; /* tokens / the most any row planned */
    bool less_work;     /* token_share below 0.999 */
    bool other_steps;   /* iterations differ from the baseline's by more than 1% */
    bool refused;       /* the strategy refused the configuration: why says it */
    char why[VL_ERRMSG_MAX];
} eval_result;

/** a's figures (vl_eval_acc_finish) as a result of its own (speedup 1). */
vl_status eval_acc_finish(vl_eval_acc *a, const vl_plan *p, eval_result *out, vl_err *err);

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

/** Value of a key ("abr", "epoch_time_s", ...) of r: the figures of figures.h (the
 *  headline value: the mean over iterations, but peak_mem_gib's worst iteration) and
 *  mfu_overall, peak_mem_gib_mean, fits (1/0), iterations, samples, tokens,
 *  dropped_samples, dropped_tokens, truncated_samples, truncated_tokens, token_share,
 *  scope (0 batch, 1 epoch).  False when unknown or not available (speedup n/a). */
bool eval_get(const eval_result *r, const char *key, double *v);
/** key describes the work a plan did or whether it fits (fits, oom_iters, iterations,
 *  samples, tokens, dropped_*, truncated_*, token_share, scope): a --check may judge it
 *  whatever the row's memory or work. */
bool eval_work_key(const char *key);

/** Simulated, and no iteration over device memory. */
bool eval_fits(const eval_result *r);

/** After a failed vl_plan_read: every structural error it collected (one line each),
 *  or the error itself; returns the exit code. */
int eval_read_fail(const char *cmd, const vl_plan_file *f, const vl_err *err);

/* ---- a plan file read an iteration at a time (eval_stream.c, over vl_eval_file) ---- */

/* The config and cost model of a plan file, made from its header when the first
 * iteration arrives: the header's config, or -c instead, then --set. */
typedef struct eval_cost_src {
    const char *cmd;
    const cli_config_args *args;
    bool optional; /* no config anywhere: have stays false (verify) instead of
                           * the defaults */
    bool loaded, have;
    vl_config cfg;
    vl_cost cost;
} eval_cost_src;
/** Load once (later calls return 0).  0, or an exit code after printing the reason. */
int eval_cost_load(eval_cost_src *s, const vl_plan *p);
void eval_cost_free(eval_cost_src *s);

/* Called after every iteration's figures are taken: p holds the header and that
 * iteration as iters[0] (its number is p->iter_base); r its simulation, NULL when not
 * simulated.  0 to go on, or an exit code (after printing) to stop. */
typedef int (*eval_iter_fn)(void *ud, const vl_plan *p, const vl_cost *cost,
                            const vl_sim_iter_result *r);

typedef struct eval_file_opts {
    const cli_config_args *cfg; /* -c / --set */
    const vl_sim_opts *so;      /* NULL: metrics only */
    eval_iter_fn each;          /* optional */
    void *ud;
    int threads; /* parsing threads (-j) */
} eval_file_opts;

/** Figures of the plan file at path (no manifest), read an iteration at a time, so memory
 *  does not grow with the plan.  0, or an exit code after printing the reason. */
int eval_plan_file(const char *cmd, const char *path, const eval_file_opts *o,
                   eval_result *out);

/** Usage error unless argv holds exactly one operand from first on. */
int eval_one_plan_operand(const char *cmd, const char *usage, int argc, int first);
/** The warning for a plan read without its footer or with a wrong sha256. */
void eval_read_warn(const char *cmd, const char *path, const vl_plan_file *f);

#endif
