/* plans/slimpack/slimpack.c -- the SlimPack strategy: options, the runner's hooks (one
 * global batch at a time, lib/run/run_epochs.c) and its vl_strategy entry.  Helpers: slimpack_work.c, _dp.c, _pack.c, _sched.c, _search.c,
 * _milp.c.
 *
 * Design.  SlimPack (the slimpack paper, docs/papers.md; docs/slimpack.md reconstructs what the
 * extraction lost), objective: the simulated step time within device memory, losing
 * nothing (every token once, slice order kept, no sample moved to another iteration).
 * Per global batch: phase 1 balances forward work over DP ranks (LPT, whole samples),
 * DP-Merge first spreading outliers heavier than a rank's capacity over k ranks with
 * context parallelism; phase 2 cuts each rank's samples into M MicroPacks of equal
 * forward work (slices of long samples, whole short ones) and, asymmetrically, into M
 * backward packs of equal backward work; the PackFlow list orders them; candidates over
 * M (and asymmetric on/off) are simulated with checkpointing per M, the fastest that fits
 * kept per rank; an MILP refines a rank's forward packs when the greedy is off by more
 * than 1% (by default only the ranks that can set the iteration time, slimpack_refine.c).
 * Complexity per batch of n samples over dp ranks, C candidates of at most M packs:
 * O(n log n) phase 1, O(n M) phase 2 per candidate (LPT scans), O(M² s) scheduling (s
 * segments per pack), and C simulations linear in tasks and edges (only the M some
 * rank may choose; a candidate that provably cannot win is cut by lower bounds on its
 * makespans, slimpack_search.c); the MILP is capped by slimpack.milp_nodes
 * branch-and-bound nodes and solved once per rank and batch.
 * Reconstructions and deviations (docs/slimpack.md; the man page says so): the work
 * formulas and closed-form cut, DP-Merge's k and capacity, the slim threshold, the
 * backward stream order, the MILP (reduced to cut positions in the slim stream plus
 * atomic placements near the greedy's, see slimpack_milp.c), the candidate factors;
 * DP-Merge's CP communication is charged by the cost model although the paper calls it
 * free; the outlier of a merge group takes whole packs of its own (a shared pack cannot
 * also hold one member's samples). */
#include <stddef.h>
#include <stdlib.h>

#include "slimpack_impl.h"

static const char *const asym_names[] = {"on", "off", "auto", NULL};
static const char *const milp_names[] = {"auto", "on", "off", NULL};
static const char *const mem_names[] = {"baseline", "device", NULL};
static const char *const refine_names[] = {"critical", "all", NULL};

static const vl_param slimpack_params[] = {
    {"micropacks", VL_P_AUTO_UINT, offsetof(sp_opts, micropacks), 1, 65536, NULL, "auto",
     "MicroPacks per rank; auto: candidates M = round(pp x f) over factors"},
    {"factors", VL_P_STRING, offsetof(sp_opts, factors), 0, 0, NULL,
     "1,1.5,2,3,4,6,8,12,16,24,32,48,64", "candidate factors f of M = round(pp x f)"},
    {"min_pack_tokens", VL_P_UINT, offsetof(sp_opts, min_pack_tokens), 1, 1e9, NULL, "1024",
     "a candidate M whose packs average fewer tokens is dropped (the smallest stays)"},
    {"slim_threshold", VL_P_DOUBLE, offsetof(sp_opts, slim_threshold), 0, 1e6, NULL, "1.0",
     "theta: a sample is sliced when its forward work exceeds theta x the pack target"},
    {"slice_align", VL_P_UINT, offsetof(sp_opts, slice_align), 1, 1048576, NULL, "128",
     "cuts at multiples of this many tokens (one FlashAttention block)"},
    {"min_slice_tokens", VL_P_UINT, offsetof(sp_opts, min_slice_tokens), 1, 1048576, NULL,
     "128", "no slice shorter than this"},
    {"asymmetric", VL_P_ENUM, offsetof(sp_opts, asymmetric), 0, 0, asym_names, "on",
     "backward packs of equal backward work; auto: simulate both, keep the faster"},
    {"dp_merge", VL_P_BOOL, offsetof(sp_opts, dp_merge), 0, 0, NULL, "true",
     "spread outliers heavier than a rank's capacity over k DP ranks with CP k"},
    {"milp", VL_P_ENUM, offsetof(sp_opts, milp), 0, 0, milp_names, "auto",
     "MILP refinement of the forward packs: auto = when the greedy is off by > 1%"},
    {"refine", VL_P_ENUM, offsetof(sp_opts, refine), 0, 0, refine_names, "critical",
     "ranks the MILP refines: those that can set the iteration time (critical: the "
     "same simulated time, fewer solves) or every rank (all: the paper)"},
    {"milp_nodes", VL_P_UINT, offsetof(sp_opts, milp_nodes), 1, 1e9, NULL, "500",
     "branch-and-bound node cap of the MILP (a count, never wall time)"},
    {"mem_cap_gib", VL_P_DOUBLE, offsetof(sp_opts, mem_cap_gib), 0, 1e6, NULL, "0",
     "plan within this much memory per GPU (GiB); 0: as mem_budget says"},
    {"mem_budget", VL_P_ENUM, offsetof(sp_opts, mem_budget), 0, 0, mem_names, "device",
     "without mem_cap_gib: plan within the memory best-fit packing to the context takes "
     "(baseline) or the device's usable memory (device)"},
    {NULL, VL_P_INT, 0, 0, 0, NULL, NULL, NULL},
};

static uint32_t slimpack_max_len(const void *opts, const vl_config *cfg)
{
    (void)opts; /* slices split any sample: the context length is the only limit */
    return cfg->training.max_seq_len;
}

/* A pack holds at most one rank's samples, at most the global batch (micropacks=1 on
 * one DP rank): global_batch samples of at most max_seq_len tokens, or global_tokens
 * (a token batch takes at least one sample, so a longer one alone). */
static uint64_t slimpack_max_cap(const void *opts, const vl_config *cfg)
{
    const vl_training_cfg *t = &cfg->training;
    uint64_t ctx = t->max_seq_len, cap;

    (void)opts;
    if (t->global_batch > 0)
        cap = (uint64_t)t->global_batch * ctx;
    else
        cap = t->global_tokens > ctx ? t->global_tokens : ctx;
    return cap < UINT32_MAX ? cap : UINT32_MAX;
}

static vl_status slimpack_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    const sp_opts *o = opts;
    double f[SP_MAX_FACTORS];
    uint32_t n;

    if (cfg->training.dp < 1)
        return vl_seterr(err, VL_ECONFIG, "slimpack: training.dp must be at least 1, got %d",
                         cfg->training.dp);
    return vl__sp_parse_factors(o->factors, f, &n, err);
}

static vl_status make_setting(const sp_opts *o, const vl_job *job, sp_setting *s, vl_err *err)
{
    const vl_training_cfg *t = &job->cfg->training;
    int pp = t->pp > 1 ? t->pp : 1;

    *s = (sp_setting){.o = o,
                      .cost = job->cost,
                      .ctx = t->max_seq_len,
                      .dp = t->dp,
                      .ckpt_mode = t->recompute,
                      .common_m = t->zero == VL_ZERO_3};
    s->par = (vl_par){.tp = t->tp, .pp = pp, .sp = t->sp, .ckpt_layers = 0};
    /* a merge group runs its outlier with CP over all its members' GPUs */
    s->merge_most = vl_config_cp_ranks_most(job->cfg, t->sp > 1 ? t->sp : 1);
    s->merge_most = s->merge_most < 1 ? 1 : s->merge_most;
    s->stage_layers = vl_cost_stage_layers(job->cost, pp, 0);
    s->coef = vl__sp_coef(job->cost, &s->par, t->max_seq_len);
    return vl__sp_parse_factors(o->factors, s->factors, &s->factors_n, err);
}

static void log_summary(const vl_job *job, const sp_work *w)
{
    vl_job_log(job,
               "slimpack: %llu iterations, %llu forward packs, %llu backward packs, %llu "
               "slices continuing a sample, %llu DP-Merge groups, %llu of the rank plans "
               "asymmetric; MILP solved %llu times, %llu left out (no search within the node "
               "cap), improved %llu; "
               "rank plans refined %llu, left greedy (refine critical) %llu\n",
               (unsigned long long)w->stat_iters, (unsigned long long)w->stat_packs,
               (unsigned long long)w->stat_bwd_packs, (unsigned long long)w->stat_slices,
               (unsigned long long)w->stat_merges, (unsigned long long)w->stat_asym_ranks,
               (unsigned long long)w->stat_milp_runs, (unsigned long long)w->stat_milp_skipped,
               (unsigned long long)w->stat_milp_better, (unsigned long long)w->stat_refined,
               (unsigned long long)w->stat_not_refined);
    vl_job_log(job,
               "slimpack: chosen M/pp: <=1 %llu, <=2 %llu, <=4 %llu, <=8 %llu, <=16 %llu, "
               "<=32 %llu, <=64 %llu, more %llu\n",
               (unsigned long long)w->stat_m_hist[0], (unsigned long long)w->stat_m_hist[1],
               (unsigned long long)w->stat_m_hist[2], (unsigned long long)w->stat_m_hist[3],
               (unsigned long long)w->stat_m_hist[4], (unsigned long long)w->stat_m_hist[5],
               (unsigned long long)w->stat_m_hist[6], (unsigned long long)w->stat_m_hist[7]);
}

/* Inherent, not a defect (man page, SlimPack): equal-work packs cut samples at their
 * boundaries, and a cut sample's slices stay in memory until its last is backwarded, so
 * where whole samples packed to the context fit with no recompute (short contexts),
 * SlimPack may checkpoint where `pack` does not, and be slower. */
static void warn_short_context(const sp_setting *s, const vl_job *job, const sp_work *w)
{
    if (w->stat_ckpt_ranks == 0 || s->ckpt_mode != VL_RECOMPUTE_AUTO ||
        vl__sp_baseline_ckpt(s) != 0)
        return;
    vl_job_warn(job,
                "slimpack: %llu of %llu rank plans checkpoint layers (up to %d per "
                "stage) where packs of whole samples of training.max_seq_len %u tokens "
                "need none: its equal-work packs cut samples, whose slices stay in memory "
                "until the last is backwarded, so `pack` may be faster at this context",
                (unsigned long long)w->stat_ckpt_ranks,
                (unsigned long long)(w->stat_iters * (uint64_t)s->dp), w->stat_ckpt_max,
                s->ctx);
}

/* One run, the runner's state (vlplan_strategy.h). */
typedef struct sp_run {
    const vl_job *job;
    sp_setting s;
    sp_work w;
} sp_run;

static vl_status slimpack_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                               vl_err *err)
{
    sp_run *r = state;

    (void)out;
    r->job = job;
    return make_setting(opts, job, &r->s, err);
}

static vl_cover slimpack_cover(const void *state)
{
    const sp_run *r = state;

    return (vl_cover){.ranks = (size_t)r->s.dp, .piece = 0, .share = 1, .who = "slimpack: "};
}

static vl_status slimpack_plan_batch(void *state, const vl_batch *b, vl_plan *out, vl_err *err)
{
    sp_run *r = state;

    return vl__sp_plan_batch(&r->w, &r->s, r->job, out->m, b->samples, b->n, r->job->sel->len,
                             b->epoch, out, err);
}

static void slimpack_close(void *state, bool planned)
{
    sp_run *r = state;

    if (planned) {
        log_summary(r->job, &r->w);
        warn_short_context(&r->s, r->job, &r->w);
    }
    vl__sp_work_free(&r->w);
}

const vl_strategy vl_strategy_slimpack = {
    .name = "slimpack",
    .summary = "SlimPack: work-balanced slices, asymmetric backward packs, DP-Merge",
    .section = "slimpack",
    .params = slimpack_params,
    .opts_size = sizeof(sp_opts),
    .caps = VL_CAP_BWD_PACKS | VL_CAP_SCHEDULE | VL_CAP_SHARED | VL_CAP_UNEVEN_MBS,
    .shares = VL_SHARES_RUN,
    .slices = VL_SLICES_RANK,
    .max_len = slimpack_max_len,
    .max_cap = slimpack_max_cap,
    .validate = slimpack_validate,
    .state_size = sizeof(sp_run),
    .open = slimpack_open,
    .cover = slimpack_cover,
    .plan_batch = slimpack_plan_batch,
    .close = slimpack_close,
    .streams = true,
};
