/* lib/run/vlplan_strategy.h -- what every scheduling strategy implements.  A strategy is
 * data: a vl_strategy filled in its own plans/<name>.c and listed once in
 * plans/strategies.def.  The library calls it through this table only. */
#ifndef VLPLAN_STRATEGY_H
#define VLPLAN_STRATEGY_H

#include <stdarg.h>
#include <stdbool.h>
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
#include "verify.h"

/* What a strategy tells the runner besides the plan: its -v log and the knobs it
 * actually used.  Owned by the runner (lib/run/run.c); strategies reach it only
 * through vl_job_log and vl_job_params. */
typedef struct vl_report vl_report;

/* Everything a strategy reads.  The samples to plan are sel (oversize policy already
 * applied; the runner records the dropped ranges in the plan). */
typedef struct vl_job {
    const vl_manifest *m;
    const vl_config *cfg;
    const vl_cost *cost;
    const vl_selection *sel;
    uint64_t seed;
    int verbose;       /* -v count: vl_job_log writes nothing when 0 */
    vl_report *report; /* the runner's; NULL: logs and params are discarded */
} vl_job;

/** Append printf-formatted text to the -v log the CLI prints on stderr; nothing when
 *  job->verbose is 0.  Best effort: without memory the log is cut, never the plan. */
void vl_job_log(const vl_job *job, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void vl_job_vlog(const vl_job *job, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;

/** A warning the CLI prints on stderr whatever -v says (not under -q): something the
 *  plan does that the user did not ask for and should know (a newline is added). */
void vl_job_warn(const vl_job *job, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Record the knobs actually used -- opts bound with params, after "auto" resolved --
 *  as the plan header's "params" (without this call the header has the bound opts).
 *  VL_ENOMEM. */
vl_status vl_job_params(const vl_job *job, const vl_param *params, const void *opts,
                        vl_err *err);

/** How many iterations the plan will have, announced before the first vl_plan_iter_begin
 *  so that a streamed plan's header can say it (without, the header leaves the count out
 *  and the footer has it).  The runner's epoch loop announces it for a strategy planned
 *  batch by batch; a streaming whole-epoch strategy may. */
void vl_job_iterations(const vl_job *job, uint64_t n);

/* One global batch as the runner hands it to plan_batch. */
typedef struct vl_batch {
    const uint32_t *samples; /* [n] manifest indices, in the epoch's order */
    size_t n;
    uint32_t epoch;
    size_t index; /* its number within the epoch: what the (seed, tag ^ epoch<<32
                           * ^ batch) streams take */
} vl_batch;

/* An epoch's seeded order (vl_epoch_order) cut into global batches (vl_make_batches):
 * what resolve sees of the first epoch. */
typedef struct vl_epoch_cut {
    uint32_t epoch;
    const uint32_t *order; /* [job->sel->n] */
    const vl_batches *batches;
} vl_epoch_cut;

/* What every full global batch must give the ranks (vl_batches_cover_ranks' arguments:
 * ranks, piece, share, and who prefixes the message); ranks 0: no check. */
typedef struct vl_cover {
    size_t ranks;
    uint32_t piece;
    size_t share;
    const char *who;
} vl_cover;

typedef struct vl_strategy {
    const char *name;       /* CLI name and config section */
    const char *summary;    /* one line for `vlplan strategies` */
    const char *section;    /* config section holding its params (NULL = none) */
    const char *builtin;    /* a built-in config section it reads instead (pack: "pack"), or
                           * NULL: listed with its parameters by `vlplan strategies -v` */
    const vl_param *params; /* {NULL}-terminated, or NULL */
    size_t opts_size;       /* size of its options struct (bound by vl_config_bind) */
    uint32_t caps;          /* VL_CAP_* it may use (plan.h); the runner records them in the
                           * plan header, verify holds the plan to them */
    vl_slices slices;       /* where it may slice a sample (default: never) */
    vl_shares shares;       /* which ranks may share a pack */
    bool idles;             /* may leave a pipeline with no work out of an iteration, its
                           * GPUs out of that optimizer step (Hydraulis, when an
                           * iteration has fewer sequences than pipelines); false:
                           * verify holds every iteration to every GPU of the cluster */
    bool streams;           /* true: plan() appends iterations in order and never reads or
                           * changes an iteration once the next vl_plan_iter_begin has
                           * been called, so the runner may write and free each finished
                           * iteration as it goes (memory flat in the epoch length) */
    /** Longest sample (tokens) it can place under cfg; the runner applies
     *  training.oversize to longer ones before plan() sees them. */
    uint32_t (*max_len)(const void *opts, const vl_config *cfg);
    /** Optional: where max_len's limit comes from when it is shorter than
     *  training.max_seq_len, in words with its numbers ("skrull's BucketSize 10527 x CP
     *  8"), written into buf (n bytes); NULL: the limit is training.max_seq_len. */
    void (*describe_max_len)(const void *opts, const vl_config *cfg, char *buf, size_t n);
    /** Optional: the largest micro-batch capacity (token slots) it writes under cfg, which
     *  verify holds every pack to; NULL: the strategy states none (verify then checks
     *  only that a pack's tokens fit its capacity). */
    uint64_t (*max_cap)(const void *opts, const vl_config *cfg);
    /** Optional: where it slices under cfg, when that depends on the config (pack
     *  under training.oversize=split); NULL: `slices`. */
    vl_slices (*slicing)(const void *opts, const vl_config *cfg);
    /** Optional: true when, under cfg, it regroups samples across the epoch's iterations
     *  (epoch scope) rather than keeping each sampled global batch (batch scope, the
     *  default when NULL): what `compare` holds rows to. */
    bool (*epoch_scope)(const vl_config *cfg);
    /** Optional cross-field checks of the bound opts (VL_ECONFIG with a message). */
    vl_status (*validate)(const void *opts, const vl_config *cfg, vl_err *err);
    /** Plan every epoch of job->sel into out (iterations in order): a strategy that
     *  regroups the epoch (hbp; pack under pack.scope=epoch).  Used when plan_batch is
     *  NULL or epoch_scope says so under the config. */
    vl_status (*plan)(const void *opts, const vl_job *job, vl_plan *out, vl_err *err);

    /* Batch by batch: the runner owns the epoch loop (lib/run/run_epochs.c).  Each
     * epoch it shuffles (vl_epoch_order) and cuts (vl_make_batches) once, checks `cover`,
     * calls resolve once with the first epoch, then plan_batch on every global batch in
     * order; the iteration count the header announces comes from the same cuts. */
    size_t state_size; /* the per-run state the runner zeroes and hands every hook */
    /** Optional: set the state up (opts bound, job and out as the run has them). */
    vl_status (*open)(void *state, const void *opts, const vl_job *job, vl_plan *out,
                      vl_err *err);
    /** Optional: what every full global batch must cover, asked before each epoch. */
    vl_cover (*cover)(const void *state);
    /** Optional: settings chosen once, from the cost model or the first epoch's batches
     *  (after its cover check, before its first batch); parameters recorded here
     *  (vl_job_params) reach the header. */
    vl_status (*resolve)(void *state, const vl_epoch_cut *first, vl_err *err);
    /** Plan one global batch, appending its iteration(s) to out. */
    vl_status (*plan_batch)(void *state, const vl_batch *b, vl_plan *out, vl_err *err);
    /** Optional: release the state; planned: every batch was planned (the -v summary
     *  and warnings belong here). */
    void (*close)(void *state, bool planned);
} vl_strategy;

/* lib/run/run_epochs.c */
/** Plan every epoch of job->sel with s into out: s->plan, or the runner's epoch loop over
 *  s->plan_batch (see above).  What vl_run_plan calls; no checks of its own. */
vl_status vl_strategy_plan(const vl_strategy *s, const void *opts, const vl_job *job,
                           vl_plan *out, vl_err *err);

/* lib/run/run_rules.c: a strategy's rules for the verifier (verify.h) */
/** s's rules under cfg, its parameters bound as `plan` binds them (out->refused says
 *  why when it refuses cfg); without a config (NULL) the rules that need none, a
 *  slicing that depends on the config taken as the loosest.  VL_OK or VL_ENOMEM. */
vl_status vl_strategy_rules(const vl_strategy *s, const vl_config *cfg, vl_verify_rules *out,
                            vl_err *err);
/** The same with its opts already bound from cfg (non-NULL), as the runner holds them. */
void vl_strategy_rules_bound(const vl_strategy *s, const void *opts, const vl_config *cfg,
                             vl_verify_rules *out);
/** The rules of a strategy none of all[0..n) is, so that a new name cannot switch a
 *  check off: only the capabilities the plan declares, and under cfg the strictest they
 *  agree on -- no slice, the longest sample any places, the largest pack any writes (0
 *  when one states none); without a config the format's own rules.  VL_OK or
 *  VL_ENOMEM. */
vl_status vl_strategy_rules_strictest(const vl_strategy *const *all, size_t n,
                                      const vl_config *cfg, vl_verify_rules *out, vl_err *err);

/* plans/registry.c */
size_t vl_strategy_count(void);
const vl_strategy *vl_strategy_at(size_t i);
/** The strategy called name, or NULL. */
const vl_strategy *vl_strategy_find(const char *name);
/** The verifier's rules source over the registry: a registered strategy's own rules, the
 *  strictest for a name it does not have (what `verify` checks a plan file against;
 *  the runner passes the strategy's own, lib/run/run.c). */
extern const vl_rules_source vl_registry_rules;

#endif
