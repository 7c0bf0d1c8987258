/* lib/check/eval.h -- one plan's figures: the balance metrics (metrics.h) and, with a
 * cost model, the simulated step time (sim.h), taken an iteration at a time from a plan
 * being made or read; and a plan file's figures read that way (vl_eval_file), so memory
 * holds one iteration and a few doubles per iteration however long the plan. */
#ifndef VLPLAN_EVAL_H
#define VLPLAN_EVAL_H

#include <stdbool.h>

#include "cost.h"
#include "metrics.h"
#include "plan.h"
#include "plan_file.h"
#include "sim.h"

typedef struct vl_eval {
    char strategy[48]; /* the plan's */
    vl_metrics mt;
    bool has_sim; /* sim is filled (a cost model was given) */
    vl_sim_summary sim;
} vl_eval;

/* The figures an iteration at a time. */
typedef struct vl_eval_acc {
    vl_metrics_acc *mt;
    vl_sim_acc *sim; /* NULL: not simulated */
} vl_eval_acc;
/** cost NULL: metrics only; cost and so must outlive a.  VL_ENOMEM. */
vl_status vl_eval_acc_init(vl_eval_acc *a, const vl_cost *cost, const vl_sim_opts *so,
                           vl_err *err);
/** Take iteration it of p; r (may be NULL) gets its simulation.  Statuses of
 *  vl_sim_iter. */
vl_status vl_eval_acc_iter(vl_eval_acc *a, const vl_plan *p, size_t it, vl_sim_iter_result *r,
                           vl_err *err);
/** The figures, p holding the header and dropped ranges. */
vl_status vl_eval_acc_finish(vl_eval_acc *a, const vl_plan *p, vl_eval *out, vl_err *err);
void vl_eval_acc_free(vl_eval_acc *a);

/** The figures of a plan held whole; simulated when cost is non-NULL. */
vl_status vl_eval_plan(const vl_plan *p, const vl_cost *cost, const vl_sim_opts *so,
                       vl_eval *out, vl_err *err);

typedef struct vl_eval_file_opts {
    /** Once, when the header is read (before the first iteration, or at the end of a
     *  plan without any): the cost model to simulate with -- made from the header's
     *  config (p->config_json) or the caller's own -- or *cost NULL for metrics only.
     *  Any status but VL_OK stops the read and is returned. */
    vl_status (*cost_for)(void *ud, const vl_plan *p, const vl_cost **cost, vl_err *err);
    const vl_sim_opts *so; /* NULL: metrics only, whatever cost_for gives */
    /** Optional, after every iteration's figures are taken: p holds the header and that
     *  iteration as iters[0] (its number is p->iter_base); r its simulation, NULL when
     *  not simulated.  Any status but VL_OK stops the read and is returned. */
    vl_status (*each)(void *ud, const vl_plan *p, const vl_cost *cost,
                      const vl_sim_iter_result *r, vl_err *err);
    void *ud;
    int threads; /* parsing threads (vl_plan_read_each) */
} vl_eval_file_opts;

/** The figures of the plan file at path (read without a manifest), an iteration at a
 *  time.  *f gets what the file claims and, on VL_EDATA, the structural errors found
 *  (vl_plan_read_each).  The statuses of reading, of the hooks and VL_ENOMEM. */
vl_status vl_eval_file(const char *path, const vl_eval_file_opts *o, vl_plan_file *f,
                       vl_eval *out, vl_err *err);

#endif
