/* plans/skrull/skrull.c -- the Skrull strategy: options, BucketSize, the runner's hooks (one
 * global batch at a time, lib/run/run_epochs.c), emission, and its vl_strategy entry.
 * DACP: skrull_dacp.c; GDS: skrull_gds.c.
 *
 * Design.  Skrull (the skrull paper, docs/papers.md; docs/skrull.md is the specification) keeps one
 * layout -- DP = training.dp ranks of CP = training.sp GPUs -- and per global
 * batch decides where every sequence runs: GDS splits the batch over the DP ranks (LPT
 * on forward FLOPs) and cuts each rank's share into the fewest strided micro-batches of
 * ≤ C·N tokens; DACP keeps each sequence of a micro-batch local to one CP rank or shards
 * it over all N, so that no GPU holds more than BucketSize C tokens.  A micro-batch is
 * timed by the shared cost model with Skrull's overlap (Eq. 2, lib/model/cost_pack.c).
 * C: skrull.bucket_size, or auto = (usable memory − ZeRO model states) / activation
 * bytes per token on one GPU (App. A.1, from the project's memory model).  Longest
 * sample: C·N (a sequence above C can only be sharded), and at most
 * training.max_seq_len; beyond, training.oversize.
 * Ranks: tp = training.tp, sp = N, pp = training.pp (the paper has none; with stages C
 * is sized for the micro-batches 1F1B keeps in flight on each), ckpt_layers = a stage's
 * layers under recompute: full, else 0 (C is sized to fit without recompute; the
 * paper's selective recompute costs nothing extra with FlashAttention in this model).
 * Deviations and choices (each in the man page):
 *  - the listing's four bugs fixed (skrull_dacp.c, skrull_gds.c);
 *  - DACP's default placement is the paper's Algorithm 1 (shortest first, sharding for
 *    memory only); skrull.placement=balanced, ours, goes longest first and also shards
 *    what would slow the slowest CP rank (skrull_dacp.c);
 *  - micro-batch counts may differ per DP rank (VL_CAP_UNEVEN_MBS), as the paper's GDS
 *    yields, except under skrull.equal_mbs (auto: with micro-step gradient sync),
 *    where GDS searches one count for all ranks, heaviest micro-batch first;
 *  - F is the cost model's forward FLOPs (Eq. 13-16 were lost in extraction).
 * Complexity per batch of n samples: O(n log n) for LPT and the sorts, O(k·N) per DACP
 * call, one per micro-batch and micro-batch count tried. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "skrull_impl.h"

static const char *const rollback_names[] = {"shortest", "longest", NULL};
static const char *const placement_names[] = {"paper", "balanced", NULL};
static const char *const equal_names[] = {"off", "on", "auto", NULL};

static const vl_param skrull_params[] = {
    {.key = "bucket_size",
     .type = VL_P_AUTO_UINT,
     .offset = offsetof(vl_sk_opts, bucket_size),
     .min = 1,
     .max = 2147483647.0,
     .def = "auto",
     .help = "BucketSize C: tokens one GPU holds; auto: from the memory model"},
    {.key = "rollback",
     .type = VL_P_ENUM,
     .offset = offsetof(vl_sk_opts, rollback),
     .choices = rollback_names,
     .def = "shortest",
     .help = "which local sequence a DACP roll-back shards: shortest (paper) or longest"},
    {.key = "placement",
     .type = VL_P_ENUM,
     .offset = offsetof(vl_sk_opts, placement),
     .choices = placement_names,
     .def = "paper",
     .help = "DACP order: balanced (longest first, shard what would slow the slowest CP "
             "rank) or paper (shortest first, shard only for memory)"},
    {.key = "balance_slack",
     .type = VL_P_DOUBLE,
     .offset = offsetof(vl_sk_opts, balance_slack),
     .min = 0,
     .max = 100,
     .def = "0.1",
     .help = "balanced: until a micro-batch has a sharded sequence, shard one that fits "
             "locally only when that lowers the slowest CP rank's FLOPs by more than this "
             "fraction"},
    {.key = "dacp",
     .type = VL_P_BOOL,
     .offset = offsetof(vl_sk_opts, dacp),
     .def = "on",
     .help = "DACP: keep sequences local to one CP rank; off: shard every sequence"},
    {.key = "gds",
     .type = VL_P_BOOL,
     .offset = offsetof(vl_sk_opts, gds),
     .def = "on",
     .help = "GDS: LPT over DP ranks and strided micro-batches; off: contiguous, next-fit"},
    {.key = "equal_mbs",
     .type = VL_P_ENUM,
     .offset = offsetof(vl_sk_opts, equal_mbs),
     .choices = equal_names,
     .def = "auto",
     .help = "one micro-batch count for every DP rank; auto: on when training.dp_sync is "
             "micro_step"},
    {.key = NULL},
};

/* ---- BucketSize ------------------------------------------------------------------- */

uint32_t vl__sk_auto_bucket(const vl_cost *c, const vl_par *par, int dp)
{
    int pp = par->pp > 1 ? par->pp : 1;
    double cap = vl_cost_mem_capacity(c), best = 2147483647.0;
    vl_par one = *par;

    one.sp = 1; /* a GPU's tokens: its local ones and 1/N of the sharded ones */
    /* every stage: its model states, and the pp - s micro-batches 1F1B keeps in flight
     * on stage s (one without pipeline), the loss's logits on the last */
    for (int s = 0; s < pp; s++) {
        int layers = vl_cost_stage_layers(c, pp, s);
        double states = vl_cost_state_bytes(c, par, dp, layers, s == 0, s == pp - 1);
        double per_tok = (pp - s) * vl_cost_act_bytes(c, 1, &one, layers, s == pp - 1);
        double room = cap - states;
        if (room <= 0 || per_tok <= 0)
            return 0;
        best = fmin(best, floor(room / per_tok));
    }
    return (uint32_t)best;
}

static vl_par rank_par(const vl_config *cfg)
{
    const vl_training_cfg *t = &cfg->training;
    int pp = t->pp > 1 ? t->pp : 1;
    int stage = (cfg->model.layers + pp - 1) / pp;

    return (vl_par){.tp = t->tp > 1 ? t->tp : 1,
                    .pp = pp,
                    .sp = t->sp > 1 ? t->sp : 1,
                    .ckpt_layers = t->recompute == VL_RECOMPUTE_FULL ? stage : 0};
}

uint32_t vl__sk_auto_bucket_of(const vl_config *cfg)
{
    vl_cost c;
    vl_par par = rank_par(cfg);
    vl_err err;

    if (vl_cost_init(&c, cfg, &err) != VL_OK)
        return 0;
    return vl__sk_auto_bucket(&c, &par, cfg->training.dp);
}

/* C for these options: the explicit value, or auto; 0 when nothing fits. */
static vl_status resolve_bucket(const vl_sk_opts *o, const vl_config *cfg, uint32_t *bucket,
                                uint32_t *fits, vl_err *err)
{
    vl_cost c;
    vl_par par = rank_par(cfg);
    vl_status st = vl_cost_init(&c, cfg, err);

    if (st != VL_OK)
        return st;
    *fits = vl__sk_auto_bucket(&c, &par, cfg->training.dp);
    *bucket = o->bucket_size ? o->bucket_size : *fits;
    return VL_OK;
}

static uint32_t skrull_max_len(const void *opts, const vl_config *cfg)
{
    uint32_t bucket = 0, fits = 0;
    vl_err err;
    uint64_t most;

    if (resolve_bucket(opts, cfg, &bucket, &fits, &err) != VL_OK)
        return 0;
    most = (uint64_t)bucket * (uint64_t)(cfg->training.sp > 1 ? cfg->training.sp : 1);
    return most < cfg->training.max_seq_len ? (uint32_t)most : cfg->training.max_seq_len;
}

static void skrull_describe_max_len(const void *opts, const vl_config *cfg, char *buf,
                                    size_t n)
{
    uint32_t bucket = 0, fits = 0;
    vl_err err;

    if (resolve_bucket(opts, cfg, &bucket, &fits, &err) != VL_OK)
        bucket = 0;
    snprintf(buf, n,
             "skrull's BucketSize C x CP N = %u x %d; C: skrull.bucket_size%s, "
             "N: training.sp",
             bucket, cfg->training.sp > 1 ? cfg->training.sp : 1,
             ((const vl_sk_opts *)opts)->bucket_size ? ""
                                                     : " (auto: what device memory holds)");
}

/* A micro-batch holds at most C·N tokens, and its "cap" says so (emit). */
static uint64_t skrull_max_cap(const void *opts, const vl_config *cfg)
{
    uint32_t bucket = 0, fits = 0;
    vl_err err;

    if (resolve_bucket(opts, cfg, &bucket, &fits, &err) != VL_OK)
        return 0;
    return (uint64_t)bucket * (uint64_t)(cfg->training.sp > 1 ? cfg->training.sp : 1);
}

static vl_status skrull_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    const vl_sk_opts *o = opts;
    const vl_training_cfg *t = &cfg->training;
    uint32_t bucket, fits;
    vl_status st;

    if (t->dp < 1)
        return vl_seterr(err, VL_ECONFIG, "skrull: training.dp must be at least 1, got %d",
                         t->dp);
    if (t->sp > INT16_MAX)
        return vl_seterr(err, VL_ECONFIG, "skrull: training.sp must be at most %d, got %d",
                         INT16_MAX, t->sp);
    if ((st = resolve_bucket(o, cfg, &bucket, &fits, err)) != VL_OK)
        return st;
    if (fits == 0)
        return vl_seterr(err, VL_ECONFIG,
                         "skrull: the model states alone exceed the usable "
                         "device memory: no room for a token");
    if (bucket > fits)
        return vl_seterr(err, VL_ECONFIG,
                         "skrull.bucket_size: %u tokens do not fit device "
                         "memory; at most %u tokens per GPU fit",
                         bucket, fits);
    if ((uint64_t)bucket * (uint64_t)(t->sp > 1 ? t->sp : 1) > UINT32_MAX)
        return vl_seterr(err, VL_ECONFIG,
                         "skrull.bucket_size: %u tokens times training.sp "
                         "= %d overflow a micro-batch's capacity",
                         bucket, t->sp);
    return VL_OK;
}

/* ---- planning --------------------------------------------------------------------- */

static double cost_flops(const void *ud, uint32_t len)
{
    vl_seg s = {.sample = 0, .off = 0, .len = len};

    return vl_cost_fwd_flops(ud, &s, 1);
}

/* One iteration from the scheduled batch in w. */
static vl_status emit(const vl_sk_work *w, const vl_sk_setting *s, uint32_t epoch,
                      vl_plan *out, vl_err *err)
{
    uint32_t cap = s->bucket * (uint32_t)s->cp;
    vl_status st = vl_plan_iter_begin(out, epoch, err);
    /* a CP coordinate names one GPU of a group of several: with CP 1 every sequence is
     * on the rank's only GPU, written as the default (verify refuses a coordinate on a
     * rank with sp 1) */
    bool one = s->cp == 1;

    for (int d = 0; d < s->dp && st == VL_OK; d++) {
        st = vl_plan_rank_begin(out, d, &s->par, err);
        for (size_t j = w->rmb[d]; j < w->rmb[d + 1] && st == VL_OK; j++) {
            st = vl_plan_mb_begin(out, cap, err);
            for (size_t i = w->mstart[j]; i < w->mstart[j + 1] && st == VL_OK; i++)
                st = vl_plan_seg_cp(out, w->seq[i], 0, w->slen[i],
                                    one ? VL_CP_SHARDED : w->ret[i], err);
        }
    }
    return st;
}

static void count_batch(vl_sk_work *w)
{
    w->stat_mbs += w->nmb;
    for (size_t i = 0; i < w->nseq; i++) {
        bool local = w->ret[i] != VL_CP_SHARDED;
        w->stat_local += local;
        w->stat_dist += !local;
        *(local ? &w->stat_local_tok : &w->stat_dist_tok) += w->slen[i];
    }
}

/* GDS's strided dealing adds a micro-batch wherever one overflows C·N, so with a long
 * tail its micro-batches can hold well under the bucket: more of them than packing to
 * C·N would make (man page, skrull, "Short contexts"). */
static void log_fill(const vl_job *job, const vl_sk_setting *s, const vl_sk_work *w,
                     uint64_t tok)
{
    uint64_t full = w->stat_mbs - w->stat_empty;
    double cap = (double)s->bucket * (double)s->cp;
    double avg = full ? (double)tok / (double)full : 0.0;

    if (full == 0 || cap <= 0 || avg >= 0.5 * cap)
        return;
    vl_job_log(job,
               "skrull: micro-batches hold %.0f tokens on average, %.0f%% of C x N = %.0f: "
               "the paper's GDS deals strided and adds a micro-batch wherever one "
               "overflows, so packing to C x N (pack) makes fewer, fuller ones and can be "
               "faster here\n",
               avg, 100.0 * avg / cap, cap);
}

static void log_summary(const vl_job *job, const vl_sk_setting *s, const vl_sk_work *w,
                        size_t iters, uint32_t fits)
{
    uint64_t seqs = w->stat_local + w->stat_dist;
    uint64_t tok = w->stat_local_tok + w->stat_dist_tok;

    vl_job_log(job,
               "skrull: bucket_size=%u (auto: %u) N=%d dp=%d rollback=%s placement=%s "
               "dacp=%s gds=%s equal_mbs=%s: %zu iterations, %llu micro-batches (%llu empty); "
               "%llu of "
               "%llu sequences local (%.1f%% of tokens), %llu roll-backs, %llu GDS "
               "retries\n",
               s->bucket, fits, s->cp, s->dp, rollback_names[s->rollback],
               placement_names[s->placement], s->dacp ? "on" : "off", s->gds ? "on" : "off",
               s->equal_mbs ? "on" : "off", iters, (unsigned long long)w->stat_mbs,
               (unsigned long long)w->stat_empty, (unsigned long long)w->stat_local,
               (unsigned long long)seqs,
               tok ? 100.0 * (double)w->stat_local_tok / (double)tok : 0.0,
               (unsigned long long)w->stat_rollbacks, (unsigned long long)w->stat_retries);
    log_fill(job, s, w, tok);
}

/* equal_mbs auto: ranks that wait for each other after every micro-step need equal
 * counts (else the busiest step of each index adds up), others do not. */
static bool equal_mbs(const vl_sk_opts *o, const vl_config *cfg)
{
    if (o->equal_mbs == VL_SK_EQUAL_AUTO)
        return cfg->training.dp_sync == VL_DP_SYNC_MICRO_STEP;
    return o->equal_mbs == VL_SK_EQUAL_ON;
}

/* One run, the runner's state (vlplan_strategy.h). */
typedef struct sk_run {
    const vl_job *job;
    vl_sk_setting s;
    vl_sk_work w;
    uint32_t fits; /* BucketSize auto would give */
    size_t iters;
} sk_run;

static vl_status skrull_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                             vl_err *err)
{
    const vl_sk_opts *o = opts;
    const vl_config *cfg = job->cfg;
    sk_run *r = state;
    vl_sk_opts used = *o;

    (void)out;
    r->job = job;
    r->s = (vl_sk_setting){.cp = cfg->training.sp > 1 ? cfg->training.sp : 1,
                           .dp = cfg->training.dp,
                           .rollback = (vl_sk_rollback)o->rollback,
                           .placement = (vl_sk_placement)o->placement,
                           .slack = o->balance_slack,
                           .dacp = o->dacp,
                           .gds = o->gds,
                           .equal_mbs = equal_mbs(o, cfg),
                           .par = rank_par(cfg)};
    r->fits = vl__sk_auto_bucket(job->cost, &r->s.par, r->s.dp);
    r->s.bucket = o->bucket_size ? o->bucket_size : r->fits;
    used.bucket_size = r->s.bucket; /* the header shows what auto resolved to */
    used.equal_mbs = r->s.equal_mbs ? VL_SK_EQUAL_ON : VL_SK_EQUAL_OFF;
    return vl_job_params(job, skrull_params, &used, err);
}

static vl_cover skrull_cover(const void *state)
{
    const sk_run *r = state;

    return (vl_cover){.ranks = (size_t)r->s.dp, .piece = 0, .share = 1, .who = "skrull: "};
}

static vl_status skrull_plan_batch(void *state, const vl_batch *b, vl_plan *out, vl_err *err)
{
    sk_run *r = state;
    vl_status st = vl__sk_gds(&r->w, &r->s, b->samples, b->n, r->job->sel->len, cost_flops,
                              r->job->cost, err);

    r->iters++;
    if (st != VL_OK)
        return st;
    count_batch(&r->w);
    return emit(&r->w, &r->s, b->epoch, out, err);
}

static void skrull_close(void *state, bool planned)
{
    sk_run *r = state;

    if (planned)
        log_summary(r->job, &r->s, &r->w, r->iters, r->fits);
    vl__sk_work_free(&r->w);
}

const vl_strategy vl_strategy_skrull = {
    .name = "skrull",
    .summary = "Skrull: sequences local to one CP rank or sharded (DACP), LPT and strided "
               "micro-batches per global batch (GDS)",
    .section = "skrull",
    .params = skrull_params,
    .opts_size = sizeof(vl_sk_opts),
    .caps = VL_CAP_SEG_CP | VL_CAP_UNEVEN_MBS,
    .max_len = skrull_max_len,
    .describe_max_len = skrull_describe_max_len,
    .max_cap = skrull_max_cap,
    .validate = skrull_validate,
    .state_size = sizeof(sk_run),
    .open = skrull_open,
    .cover = skrull_cover,
    .plan_batch = skrull_plan_batch,
    .close = skrull_close,
    .streams = true,
};
