/* lib/run/run.h -- one planning run end to end, shared by `plan`, `compare` and tests:
 * bind the strategy's params, apply the oversize policy, plan every epoch, fill the
 * header, and check the result -- structure and modelled device memory, the checker
 * `verify` runs -- before anyone sees it.
 *
 * With a sink, finished iterations are handed over as they are checked and forgotten
 * when the strategy streams (vl_strategy.streams), so memory holds one iteration however
 * long the epoch; otherwise the whole plan is handed over at the end. */
#ifndef VLPLAN_RUN_H
#define VLPLAN_RUN_H

#include "config.h"
#include "cost.h"
#include "manifest.h"
#include "plan.h"
#include "verify.h"
#include "vlplan_strategy.h"

/* Where a run's checked output goes. */
typedef struct vl_run_sink {
    /** The header is final (params, config, epochs, caps); iterations: the count the
     *  strategy announced, or -1 when it streams without one.  Before any iteration. */
    vl_status (*begin)(void *ud, const vl_plan *p, int64_t iterations, vl_err *err);
    /** The iterations p holds (iters[0, niters), numbered from p->iter_base), checked. */
    vl_status (*iters)(void *ud, const vl_plan *p, vl_err *err);
    void *ud;
} vl_run_sink;

typedef struct vl_run_opts {
    uint64_t seed;
    int verbose;
    bool allow_oom;          /* keep a plan over device memory (counted in the result)
                           * instead of refusing it */
    const vl_run_sink *sink; /* NULL: the plan is kept whole in *out */
    /* optional: told the iterations begun so far and the count the strategy announced
     * (-1 when it announced none), at every new iteration */
    void (*progress)(void *ud, uint64_t begun, int64_t announced);
    void *progress_ud;
} vl_run_opts;

typedef struct vl_run_result {
    char *log;           /* the strategy's -v text (malloc'd, may be NULL) */
    char warnings[1024]; /* the strategy's warnings, one per line ("" none; cut at the
                           * size: a warning, not a log) */
    size_t iterations;
    size_t oom_iters; /* iterations over device memory (only with allow_oom) */
    vl_verify_oom first_oom;
    char fit_hint[192];    /* with oom_iters: what would fit, "" when nothing simple */
    uint32_t max_len;      /* the longest sample the strategy places (training.oversize
                           * applies beyond it) */
    char max_len_why[160]; /* where that limit comes from, with its numbers */
} vl_run_result;

/** Plan manifest m with strategy s under cfg into *out (initialised here; free with
 *  vl_plan_free; with a sink it ends holding the header and the dropped ranges, and the
 *  iterations only when the strategy does not stream).  Fails with VL_EINTERNAL if the
 *  strategy broke an invariant, VL_EDATA when an iteration exceeds device memory in the
 *  cost model (unless allow_oom), naming it and what would fit.  *res (may be NULL) gets
 *  the log and the memory findings, also on failure; free res->log. */
vl_status vl_run_plan(vl_plan *out, const vl_strategy *s, vl_manifest *m, const vl_config *cfg,
                      const vl_run_opts *o, vl_run_result *res, vl_err *err);

/** s's parameters bound from cfg and validated, as a run binds them, into *opts (its
 *  options struct; free it whatever this returns).  The statuses of binding. */
vl_status vl_run_bind(void **opts, const vl_strategy *s, const vl_config *cfg, vl_err *err);

/** The longest sample s places under cfg (its parameters bound and validated, as a run
 *  would): training.oversize applies beyond it.  The statuses of binding. */
vl_status vl_run_max_len(const vl_strategy *s, const vl_config *cfg, uint32_t *limit,
                         vl_err *err);
/** The same, and where the limit comes from in words (why may be NULL). */
vl_status vl_run_limit(const vl_strategy *s, const vl_config *cfg, uint32_t *limit, char *why,
                       size_t whylen, vl_err *err);

/** What would make the rank of iteration it (held by p) that holds the first OOM fit:
 *  more checkpointed layers, a larger sp, or smaller micro-batches; "" when none of
 *  these alone does.  Writes into hint (n bytes). */
void vl_run_fit_hint(const vl_plan *p, size_t it, const vl_verify_oom *o, const vl_cost *c,
                     int gpus, char *hint, size_t n);

#endif
