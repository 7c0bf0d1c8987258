/* cmd/vlplan/advise.h -- `vlplan advise`: which strategy, settings and parallel layout
 * for a data set and cluster.  The search space (advise_space.c), the judging of one
 * candidate (advise_eval.c) and the command (cmd_advise.c). */
#ifndef VLPLAN_ADVISE_H
#define VLPLAN_ADVISE_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "evaluate.h"
#include "report.h"
#include "vlplan.h"

/* How far a reference's sampled time may trail the best and still be planned whole: the
 * sample's error against the whole data, with room. */
#define ADV_REF_MARGIN 0.05
#define ADV_MAX_SETS 12 /* --set lines one candidate adds to the user's */
#define ADV_SET_LEN 64

/* The layout keys the search may vary; a key the user gave (-c or --set) is pinned
 * unless --free names it. */
typedef enum { ADV_TP, ADV_PP, ADV_SP, ADV_ZERO, ADV_RECOMPUTE, ADV_NKEYS } adv_key;
extern const char *const adv_key_paths[ADV_NKEYS];

typedef struct adv_layout {
    int tp, pp, sp, dp;
    int zero;      /* vl_zero */
    int recompute; /* vl_recompute */
} adv_layout;

typedef enum {
    ADV_INVALID,       /* the configuration refuses the layout (heads, layers, GPUs) */
    ADV_PRUNED_MEMORY, /* model states alone exceed device memory */
    ADV_PRUNED_BOUND,  /* its lower bound cannot beat the candidates kept */
    ADV_REFUSED,       /* the strategy refused (why says it) */
    ADV_SKIPPED,       /* --budget ran out before it was judged */
    ADV_SCREENED,      /* judged on one global batch, not among the best */
    ADV_SAMPLED,       /* judged on the sample of global batches */
    ADV_PLANNED        /* planned on the whole data and simulated */
} adv_stage;

typedef struct adv_cand {
    adv_layout lay;
    const char *strategy;
    const char *tune; /* the strategy's own settings, "" for its defaults */
    char sets[ADV_MAX_SETS][ADV_SET_LEN];
    int nsets;
    adv_stage stage;
    double bound_s;  /* lower bound of the screen's time (no imbalance, best
                           * efficiency), scaled to the data */
    uint32_t limit;  /* the strategy's length limit under the candidate's config */
    double screen_s; /* one global batch's simulated time, scaled to the data */
    bool screen_fits;
    uint64_t screen_tok; /* tokens that plan processed */
    double sample_s;     /* the sample's simulated time, scaled to the data's tokens */
    bool sample_fits;
    uint64_t sample_tok;
    bool less_work;   /* planned fewer tokens than the most any candidate did */
    bool reference;   /* the strategy at its defaults on the configuration's own
                           * layout: a row of `compare`, which advise must not lose to */
    eval_result full; /* ADV_PLANNED: the whole data's figures */
    bool pareto;
    char why[VL_ERRMSG_MAX];
} adv_cand;

typedef struct adv_space {
    adv_cand *c;
    size_t n, cap;
    size_t layouts, invalid_layouts;
    size_t references; /* candidates marked reference */
} adv_space;

/** Every candidate of the search: the layouts the cluster's GPU count and the model
 *  permit with pinned keys kept (base's values), times strategies[0..ns) and each
 *  strategy's tuning grid.  The configuration's own layout is always among them (added
 *  when the grid misses it, e.g. zero 0 or a smaller dp), and each strategy's defaults
 *  there are marked reference.  0 or an exit code (printed). */
int adv_space_build(adv_space *sp, const vl_config *base, const bool pinned[ADV_NKEYS],
                    const char *const *strategies, size_t ns);
void adv_space_free(adv_space *sp);

/** The --set lines that make the candidate's configuration from the user's. */
int adv_cand_config(const char *cmd, const cli_config_args *user, const adv_cand *c,
                    vl_config *cfg, bool quiet_errors, char *why, size_t whylen);

/** The configuration's names of a layout's ZeRO stage and recompute. */
const char *adv_zero_name(int zero);
const char *adv_recompute_name(int recompute);

/** "training.tp=2 training.pp=1 ..." of c (its layout and tuning), into buf. */
void adv_cand_describe(const adv_cand *c, char *buf, size_t n);

/* ---- judging (advise_eval.c) ---- */

/** A deterministic sample of the manifest: whole global batches of the seeded epoch
 *  order, `batches` of them (all samples when fewer).  *out is a new manifest of their
 *  lengths. */
int adv_sample(const char *cmd, const vl_manifest *m, const vl_config *cfg, size_t batches,
               vl_manifest **out);

/* Bounds already computed for the layout being bounded, by length limit: a layout's
 * candidates are contiguous and most share the limit (training.max_seq_len). */
#define ADV_BOUND_CACHE 8
typedef struct adv_bound_cache {
    adv_layout lay;
    size_t n;
    uint32_t limit[ADV_BOUND_CACHE];
    double bound[ADV_BOUND_CACHE];
} adv_bound_cache;

/** The lower bound of c's time on sample: its layout running the tokens it will plan (its
 *  strategy's length limit and training.oversize applied) as one perfectly balanced
 *  micro-batch per data-parallel rank and stage -- the cost model's best efficiency,
 *  no imbalance, no bubble, no gradient sync; 0 (no bound) when the data is refused
 *  outright.  Model states are checked first (ADV_PRUNED_MEMORY); a strategy that
 *  refuses the configuration is ADV_REFUSED.  0 or an exit code. */
int adv_bound(const char *cmd, adv_cand *c, const vl_config *cfg, const vl_manifest *sample,
              adv_bound_cache *cache);

/** Strategies that choose the parallel layout themselves, per group, sample or
 *  pipeline (hbp, hydraulis, mcore_cp, skrull): the layout they are given does not bound
 *  them; adv_bound leaves their bound to adv_bound_self. */
bool adv_self_layout(const char *strategy);

/** The model FLOPs of what a plan under limit processes of sample, over those under
 *  max_seq_len: time shrinks at least as much as work when long samples go (they are the
 *  most efficient), so a bound at max_seq_len times this ratio still bounds. */
double adv_flops_ratio(const vl_config *cfg, const vl_manifest *sample, uint32_t limit);

/** Plan m with c under cfg and evaluate it (simulated, over-memory plans kept and
 *  marked).  A refusal is not an error: *refused is set and why says it.  0 or an exit
 *  code for what is not the candidate's fault. */
int adv_judge(const char *cmd, const adv_cand *c, const vl_config *cfg, vl_manifest *m,
              eval_result *out, bool *refused, char *why, size_t whylen);

/* ---- the command's state (cmd_advise.c) ---- */

typedef struct advise_args {
    cli_config_args cfg;
    cli_manifest_args man;
    cli_log log;
    const char *list;
    const char *free_keys[ADV_NKEYS + 1];
    int nfree;
    bool free_all;
    uint64_t batches, top;
    double budget;
    bool no_prune;
    report_format fmt;
    const char *export_json, *write_plan, *write_metrics;
    char **manifests;
    int nmanifests;
} advise_args;

/* One search: the candidates, the data and its samples, the counts per stage. */
typedef struct adv_search {
    const advise_args *a;
    adv_space sp;
    vl_manifest *m, *screen, *sample;
    double scale_screen, scale; /* data tokens / the screen's, the sample's tokens */
    adv_bound_cache cache;
    uint64_t most_screen; /* the most tokens a screened plan processed */
    size_t counts[ADV_PLANNED + 1];
    int gpus;
    cli_meter meter;
} adv_search;

/** idx[0..n) sorted by key(c[idx]) ascending, ties by index: a total order.  0 or an exit
 *  code (printed). */
int adv_sort_by(size_t *idx, size_t n, const adv_cand *c, double (*key)(const adv_cand *));
/** Same work first: t, or past every time when c planned fewer tokens than the most. */
double adv_work_key(const adv_cand *c, double t);

/* ---- output (advise_out.c) ---- */

/** The planned rows by epoch time with the Pareto front marked: the summary and table
 *  (or JSON), the same-work warnings, --export-json, --write-plan.  0 or an exit code;
 *  EX_DATAERR_ when no candidate was planned. */
int adv_report(adv_search *s, size_t *idx, size_t nplanned);

#endif
