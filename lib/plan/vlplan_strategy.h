/* lib/plan/vlplan_strategy.h -- what every scheduling strategy implements.  A strategy is
 * data: a vl_strategy filled in its own plans/<name>.c and listed once in
 * plans/strategies.def.  The library calls it through this table only. */
#ifndef VLPLAN_STRATEGY_H
#define VLPLAN_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cost.h"
#include "err.h"
#include "grow.h"
#include "manifest.h"
#include "pack.h"
#include "plan.h"
#include "rng.h"
#include "sampler.h"
#include "sort.h"
#include "strbuf.h"

/* Everything a strategy reads.  The samples to plan are sel (oversize policy already
 * applied, dropped ranges already recorded in the plan). */
typedef struct vl_job {
    const vl_manifest *m;
    const vl_config *cfg;
    const vl_cost *cost;
    const vl_selection *sel;
    uint64_t seed;
    int verbose;          /* -v count; a strategy may fill `log` when > 0 */
    char *log;            /* malloc'd text the CLI prints to stderr with -v (may be NULL) */
    char *params_json;    /* malloc'd JSON object of the knobs actually used, when they
                           * differ from the bound opts (what "auto" resolved to); NULL:
                           * the header's "params" are the bound opts */
} vl_job;

typedef struct vl_strategy {
    const char *name;     /* CLI name and config section */
    const char *summary;  /* one line for `vlplan strategies` */
    const char *section;  /* config section holding its params (NULL = none) */
    const vl_param *params; /* {NULL}-terminated, or NULL */
    size_t opts_size;     /* size of its options struct (bound by vl_config_bind) */
    /** Longest sample (tokens) it can place under cfg; the runner applies
     *  training.oversize to longer ones before plan() sees them. */
    uint32_t (*max_len)(const void *opts, const vl_config *cfg);
    /** Optional cross-field checks of the bound opts (VL_ECONFIG with a message). */
    vl_status (*validate)(const void *opts, const vl_config *cfg, vl_err *err);
    /** Plan every epoch of job->sel into out (iterations in order). */
    vl_status (*plan)(const void *opts, vl_job *job, vl_plan *out, vl_err *err);
} vl_strategy;

/* plans/registry.c */
size_t vl_strategy_count(void);
const vl_strategy *vl_strategy_at(size_t i);
/** The strategy called name, or NULL. */
const vl_strategy *vl_strategy_find(const char *name);

#endif
