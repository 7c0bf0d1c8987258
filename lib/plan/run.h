/* lib/plan/run.h -- one planning run end to end, shared by `plan`, `compare` and tests:
 * bind the strategy's params, apply the oversize policy, plan every epoch, fill the
 * header, and verify the result before anyone writes it. */
#ifndef VLPLAN_RUN_H
#define VLPLAN_RUN_H

#include "config.h"
#include "cost.h"
#include "manifest.h"
#include "plan.h"
#include "vlplan_strategy.h"

typedef struct vl_run_opts {
    uint64_t seed;
    int verbose;
} vl_run_opts;

/** Plan manifest m with strategy s under cfg into *out (initialised here; free with
 *  vl_plan_free).  The plan is verified (VL_EINTERNAL if the strategy broke an
 *  invariant).  *log receives the strategy's -v text (malloc'd, may stay NULL). */
vl_status vl_run_plan(vl_plan *out, const vl_strategy *s, vl_manifest *m,
                      const vl_config *cfg, const vl_run_opts *o, char **log, vl_err *err);

#endif
