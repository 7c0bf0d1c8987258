/* plans/mcore_cp/mcore_cp.c -- `mcore_cp`: Megatron-Core's hybrid ("dynamic") context
 * parallelism as a baseline (hybrid_context_parallel=True: BalancedCPScheduler and
 * hybrid_context_parallel_forward_backward; docs/strategies.md §8.1, docs/peers.md §1.8).
 * Options, max_seqlen_per_rank, the runner's hooks (one global batch at a time,
 * lib/run/run_epochs.c), emission, the vl_strategy entry; the scheduler itself:
 * mcore_cp_sched.c.
 *
 * Megatron gathers each global batch over the DP×CP group (training.dp · training.sp
 * GPUs, "hdp" ranks) and cuts it into groups; in a group every GPU runs a list of
 * samples one after another, each sample its own forward and backward with context
 * parallelism over the GPU set it was given (a power of two of contiguous GPUs), and a
 * barrier over all hdp GPUs ends the group.  Gradients are reduced once, after the last
 * group (no_sync around the others).
 *
 * Expression in the plan model (lib/plan/plan.h): every hdp GPU is a rank of its own
 * (dp = its hdp index, tp = training.tp, sp = pp = 1, default placement, so rank r is
 * GPUs r·tp ..); a sample is a pack of its own holding that one sample whole; a sample
 * on a set of k > 1 GPUs is a pack shared by those k contiguous ranks (members in GPU
 * order = CP order), which the cost model and simulator run as CP over k (SlimPack's
 * DP-Merge vocabulary, lib/model/cost_pack.c) with the copies starting together.  A
 * rank's packs are its samples group after group, in Megatron's order, so ranks differ
 * in pack count (VL_CAP_UNEVEN_MBS).  The barrier that ends a group is a collective over
 * all hdp ranks: an empty pack (capacity 0) shared by every rank, which the simulator
 * starts only when every rank has finished its group and which costs nothing itself
 * (the barrier's own latency is not charged).  mcore_cp.barrier=off leaves it out (then
 * only the GPUs of a sample wait for each other).
 * Under training.sp_kind=ulysses a set never grows past the largest power of two the
 * KV heads and a TP shard's heads split over (vlplan's cap: Megatron's fill_empty_gpus
 * would double it into a group Ulysses cannot run): samples longer than
 * max_seqlen_per_rank times that are oversize, and GPUs a group cannot give a capped set
 * sit it out (the barrier still holds them).
 * Refused: training.pp > 1 (Megatron refuses it under hybrid CP); a DP×CP group that is
 * not a power of two (Megatron's fill_empty_gpus then indexes past its GPUs);
 * training.dp_sync=micro_step (not Megatron's runtime, which reduces once per
 * iteration).  Longest sample: max_seqlen_per_rank · DP·CP
 * (beyond, Megatron loops forever), and training.max_seq_len; beyond, training.oversize.
 * max_seqlen_per_rank auto: the tokens one GPU holds beside its ZeRO-sharded states
 * (the memory model's, as Skrull's BucketSize). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "mcore_cp_impl.h"

static const vl_param mcore_cp_params[] = {
    {.key = "max_seqlen_per_rank",
     .type = VL_P_AUTO_UINT,
     .offset = offsetof(vl_mc_opts, per_rank),
     .min = 1,
     .max = 2147483647.0,
     .def = "auto",
     .help = "tokens of a sample per CP rank (--max-seqlen-per-dp-cp-rank); auto: what one "
             "GPU holds"},
    {.key = "delta",
     .type = VL_P_DOUBLE,
     .offset = offsetof(vl_mc_opts, delta),
     .min = 0,
     .max = 1,
     .def = "0.05",
     .help = "balance slack: a group ends once max - min load <= delta * max (Megatron 0.05)"},
    {.key = "bucket_factor",
     .type = VL_P_DOUBLE,
     .offset = offsetof(vl_mc_opts, bucket_factor),
     .min = 1,
     .max = 1e6,
     .def = "1.1",
     .help = "make_buckets_equal closes a bucket above factor * total work / CP sizes "
             "(Megatron 1.1)"},
    {.key = "barrier",
     .type = VL_P_BOOL,
     .offset = offsetof(vl_mc_opts, barrier),
     .def = "on",
     .help = "end every group but the last with Megatron's barrier over the DP x CP GPUs "
             "(an empty pack all ranks share); off: only a sample's GPUs wait for each other"},
    {.key = NULL},
};

/* ---- layout and max_seqlen_per_rank ---------------------------------------------------- */

static vl_par rank_par(const vl_config *cfg)
{
    const vl_training_cfg *t = &cfg->training;

    return (vl_par){.tp = t->tp > 1 ? t->tp : 1,
                    .pp = 1,
                    .sp = 1,
                    .ckpt_layers = t->recompute == VL_RECOMPUTE_FULL ? cfg->model.layers : 0};
}

/* The DP×CP group: GPUs (each of tp devices) that share samples. */
static int pool_of(const vl_config *cfg)
{
    const vl_training_cfg *t = &cfg->training;

    return (t->dp > 1 ? t->dp : 1) * (t->sp > 1 ? t->sp : 1);
}

/* The largest CP group: the pool, or under Ulysses (which scatters the heads over the
 * group) the largest power of two the KV heads and a TP shard's heads split over --
 * Megatron would grow a set past it and fail in attention; vlplan caps the set. */
static int cp_most_of(const vl_config *cfg)
{
    int pool = pool_of(cfg), most = vl_config_cp_ranks_most(cfg, 1);

    return most < pool ? (most > 1 ? most : 1) : pool;
}

uint32_t vl__mc_auto_per_rank(const vl_cost *c, const vl_par *par, int pool)
{
    int layers = vl_cost_stage_layers(c, 1, 0);
    double room = vl_cost_mem_capacity(c) - vl_cost_state_bytes(c, par, pool, layers, 1, 1);
    double per_tok = vl_cost_act_bytes(c, 1, par, layers, 1);

    if (room <= 0 || per_tok <= 0)
        return 0;
    return (uint32_t)fmin(floor(room / per_tok), 2147483647.0);
}

/* max_seqlen_per_rank for these options (*fits: the auto value); VL_OK or cost errors. */
static vl_status resolve(const vl_mc_opts *o, const vl_config *cfg, uint32_t *per_rank,
                         uint32_t *fits, vl_err *err)
{
    vl_cost c;
    vl_par par = rank_par(cfg);
    vl_status st = vl_cost_init(&c, cfg, err);

    if (st != VL_OK)
        return st;
    *fits = vl__mc_auto_per_rank(&c, &par, pool_of(cfg));
    *per_rank = o->per_rank ? o->per_rank : *fits;
    return VL_OK;
}

static uint32_t mcore_cp_max_len(const void *opts, const vl_config *cfg)
{
    uint32_t per_rank = 0, fits = 0;
    uint64_t most;
    vl_err err;

    if (resolve(opts, cfg, &per_rank, &fits, &err) != VL_OK)
        return 0;
    most = (uint64_t)per_rank * (uint64_t)cp_most_of(cfg);
    return most < cfg->training.max_seq_len ? (uint32_t)most : cfg->training.max_seq_len;
}

static void mcore_cp_describe_max_len(const void *opts, const vl_config *cfg, char *buf,
                                      size_t n)
{
    uint32_t per_rank = 0, fits = 0;
    vl_err err;

    if (resolve(opts, cfg, &per_rank, &fits, &err) != VL_OK)
        per_rank = 0;
    if (cp_most_of(cfg) < pool_of(cfg))
        snprintf(buf, n,
                 "mcore_cp's tokens per GPU x largest Ulysses CP group = %u x %d; "
                 "mcore_cp.max_seqlen_per_rank, model.kv_heads",
                 per_rank, cp_most_of(cfg));
    else
        snprintf(buf, n,
                 "mcore_cp's tokens per GPU x GPUs in the CP pool = %u x %d; "
                 "mcore_cp.max_seqlen_per_rank, training.dp x training.sp",
                 per_rank, pool_of(cfg));
}

/* A pack holds one sample unpadded: its capacity is its length. */
static uint64_t mcore_cp_max_cap(const void *opts, const vl_config *cfg)
{
    return mcore_cp_max_len(opts, cfg);
}

static vl_status mcore_cp_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    const vl_training_cfg *t = &cfg->training;
    int pool = pool_of(cfg);
    uint32_t per_rank, fits;
    vl_status st;

    if (t->pp > 1)
        return vl_seterr(err, VL_ECONFIG,
                         "mcore_cp: training.pp = %d: Megatron's hybrid "
                         "context parallelism does not support pipeline parallelism",
                         t->pp);
    if (pool < 1 || (pool & (pool - 1)) != 0)
        return vl_seterr(err, VL_ECONFIG,
                         "mcore_cp: training.dp x training.sp = %d GPUs: "
                         "the hybrid DP x CP group must be a power of two",
                         pool);
    if (pool > MC_MAX_POOL)
        return vl_seterr(err, VL_ECONFIG,
                         "mcore_cp: training.dp x training.sp = %d GPUs is "
                         "past the %d it plans: every GPU writes each shared sample and "
                         "barrier with its member list, which grows with the pool squared; "
                         "split the cluster, or use pack, hbp, chunkflow or skrull",
                         pool, MC_MAX_POOL);
    if (t->dp_sync == VL_DP_SYNC_MICRO_STEP)
        return vl_seterr(err, VL_ECONFIG,
                         "mcore_cp: Megatron reduces gradients once per "
                         "iteration under hybrid CP: set training.dp_sync=iteration");
    if ((st = resolve(opts, cfg, &per_rank, &fits, err)) != VL_OK)
        return st;
    if (fits == 0)
        return vl_seterr(err, VL_ECONFIG,
                         "mcore_cp: the model states alone exceed the "
                         "usable device memory: no room for a token");
    if (per_rank > fits)
        return vl_seterr(err, VL_ECONFIG,
                         "mcore_cp.max_seqlen_per_rank: %u tokens do not "
                         "fit device memory; at most %u tokens per GPU fit",
                         per_rank, fits);
    return VL_OK;
}

/* ---- emission ---------------------------------------------------------------------- */

/* The set of group g holding GPU r. */
static const vl_mc_set *set_of(const vl_mc_sched *s, size_t g, uint32_t r)
{
    for (size_t j = s->gstart[g]; j < s->gstart[g + 1]; j++)
        if (r >= s->sets[j].gpu0 && r < s->sets[j].gpu0 + s->sets[j].size)
            return &s->sets[j];
    return NULL;
}

static vl_status emit_set(const vl_mc_sched *s, const vl_mc_set *set, int32_t *members,
                          vl_plan *out, vl_err *err)
{
    vl_status st = VL_OK;

    for (uint32_t k = 0; k < set->size; k++)
        members[k] = (int32_t)(set->gpu0 + k);
    for (size_t i = set->i0; i < set->i0 + set->n && st == VL_OK; i++) {
        const vl_mc_item *it = &s->out[i];
        if ((st = vl_plan_mb_begin(out, it->len, err)) == VL_OK &&
            (st = vl_plan_seg(out, it->sample, 0, it->len, err)) == VL_OK && set->size > 1)
            st = vl_plan_mb_share(out, members, set->size, err);
    }
    return st;
}

/* Megatron's torch.distributed.barrier over the DP×CP group after a group: a pack of no
 * tokens that every rank shares, so none starts the next group before all are done. */
static vl_status emit_barrier(uint32_t gpus, int32_t *members, vl_plan *out, vl_err *err)
{
    vl_status st = vl_plan_mb_begin(out, 0, err);

    for (uint32_t k = 0; k < gpus; k++)
        members[k] = (int32_t)k;
    return st == VL_OK ? vl_plan_mb_share(out, members, gpus, err) : st;
}

/* One iteration from the scheduled batch: rank r runs its set's samples group by group,
 * a barrier between groups (with o->barrier and more than one GPU). */
static vl_status emit(const vl_mc_sched *s, const vl_mc_opts *o, const vl_par *par,
                      uint32_t epoch, int32_t *members, vl_plan *out, vl_err *err)
{
    vl_status st = vl_plan_iter_begin(out, epoch, err);

    for (uint32_t r = 0; r < s->gpus && st == VL_OK; r++) {
        st = vl_plan_rank_begin(out, (int)r, par, err);
        for (size_t g = 0; g < s->ngroups && st == VL_OK; g++) {
            const vl_mc_set *set = set_of(s, g, r);
            if (set)
                st = emit_set(s, set, members, out, err);
            else if (!s->cp_most || s->cp_most >= s->gpus) /* idle only under a cap */
                st = vl_seterr(err, VL_EINTERNAL, "mcore_cp: group %zu leaves GPU %u idle", g,
                               r);
            if (st == VL_OK && o->barrier && s->gpus > 1 && g + 1 < s->ngroups)
                st = emit_barrier(s->gpus, members, out, err);
        }
    }
    return st;
}

/* ---- planning ---------------------------------------------------------------------- */

typedef struct mc_stats {
    uint64_t iters, samples, groups, shared;
    uint64_t by_cp[33]; /* samples by the log2 of the CP size they run with */
    double barrier_s;   /* Σ over iterations of vl__mc_barrier_s */
} mc_stats;

/* Seconds set j of a group computes, its samples one after another; *last_bwd (when
 * asked) the backward of its last sample. */
static double set_busy(const vl_mc_sched *s, const vl_cost *c, const vl_par *par,
                       const vl_mc_set *set, double *last_bwd)
{
    int layers = c->cfg->model.layers;
    double busy = 0.0;

    for (size_t i = set->i0; i < set->i0 + set->n; i++) {
        vl_seg seg = {s->out[i].sample, 0, s->out[i].len}, tmp;
        vl_pack_view v = {&seg, NULL, 1, (int)set->size};
        vl_mb_time t = vl_cost_pack_time(c, &v, par, layers, 1, &tmp);
        busy += t.fwd + t.bwd;
        if (last_bwd)
            *last_bwd = t.bwd;
    }
    return busy;
}

double vl__mc_barrier_s(const vl_mc_sched *s, const vl_cost *c, const vl_par *par)
{
    int layers = c->cfg->model.layers;
    double grad = vl_cost_dp_grad_time(c, par, (int)s->gpus, layers), total = 0.0, sync = 0.0;

    for (size_t g = 0; g < s->ngroups; g++) {
        double slowest = 0.0;
        for (size_t j = s->gstart[g]; j < s->gstart[g + 1]; j++)
            slowest = fmax(slowest, set_busy(s, c, par, &s->sets[j], NULL));
        /* the last group ends the iteration: a set's reduction hides behind what runs
         * from the start of its last backward until the slowest set is done */
        for (size_t j = s->gstart[g]; g + 1 == s->ngroups && j < s->gstart[g + 1]; j++) {
            double last_bwd = 0.0, busy = set_busy(s, c, par, &s->sets[j], &last_bwd);
            sync = fmax(sync, vl_cost_dp_grad_exposed(c, grad, slowest - busy + last_bwd));
        }
        total += slowest;
    }
    return total + sync +
           vl_cost_dp_exposed(c, 0.0, vl_cost_dp_param_time(c, par, (int)s->gpus, layers));
}

static void count(const vl_mc_sched *s, mc_stats *t)
{
    t->iters++;
    t->groups += s->ngroups;
    for (size_t j = 0; j < s->nsets; j++) {
        unsigned k = 0;
        while (k < 32 && (1u << k) < s->sets[j].size)
            k++;
        t->by_cp[k] += s->sets[j].n;
        t->samples += s->sets[j].n;
        t->shared += s->sets[j].size > 1 ? s->sets[j].n : 0;
    }
}

static void log_summary(const vl_job *job, const vl_mc_sched *s, const mc_stats *t,
                        uint32_t fits)
{
    vl_job_log(job,
               "mcore_cp: max_seqlen_per_rank=%u (auto: %u) hdp GPUs=%u (CP groups "
               "up to %u) delta=%g "
               "bucket_factor=%g: %llu iterations, %llu groups (%.2f per iteration), %llu "
               "samples, %llu on more than one GPU, %llu trimmed, %llu expansions; with "
               "Megatron's group barriers %.3f ms per iteration; samples by CP size:",
               s->per_rank, fits, s->gpus, s->cp_most ? s->cp_most : s->gpus, s->delta,
               s->bucket_factor, (unsigned long long)t->iters, (unsigned long long)t->groups,
               t->iters ? (double)t->groups / (double)t->iters : 0.0,
               (unsigned long long)t->samples, (unsigned long long)t->shared,
               (unsigned long long)s->stat_trimmed, (unsigned long long)s->stat_expanded,
               t->iters ? t->barrier_s * 1e3 / (double)t->iters : 0.0);
    for (unsigned k = 0; k < 33; k++)
        if (t->by_cp[k])
            vl_job_log(job, " %llu:%llu", 1ull << k, (unsigned long long)t->by_cp[k]);
    vl_job_log(job, "\n");
}

/* One run, the runner's state (vlplan_strategy.h). */
typedef struct mc_run {
    const vl_mc_opts *o;
    const vl_job *job;
    vl_par par;
    vl_mc_sched s;
    vl_mc_item *items; /* [samples] a batch as the scheduler takes it */
    int32_t *members;  /* [pool] */
    mc_stats t;
    uint32_t fits; /* max_seqlen_per_rank auto would give */
} mc_run;

static vl_status mcore_cp_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                               vl_err *err)
{
    mc_run *r = state;
    const vl_config *cfg = job->cfg;
    int pool = pool_of(cfg);
    size_t n = job->sel->n ? job->sel->n : 1;
    vl_mc_opts used;

    (void)out;
    r->o = opts;
    r->job = job;
    r->par = rank_par(cfg);
    r->fits = vl__mc_auto_per_rank(job->cost, &r->par, pool);
    r->s = (vl_mc_sched){.per_rank = r->o->per_rank ? r->o->per_rank : r->fits,
                         .gpus = (uint32_t)pool,
                         .cp_most = (uint32_t)cp_most_of(cfg),
                         .delta = r->o->delta,
                         .bucket_factor = r->o->bucket_factor};
    used = *r->o;
    used.per_rank = r->s.per_rank; /* the header shows what auto resolved to */
    r->items = malloc(n * sizeof *r->items);
    r->members = malloc((size_t)pool * sizeof *r->members);
    if (!r->items || !r->members)
        return vl_seterr(err, VL_ENOMEM, "mcore_cp: out of memory for %zu samples", n);
    return vl_job_params(job, mcore_cp_params, &used, err);
}

static vl_status mcore_cp_plan_batch(void *state, const vl_batch *b, vl_plan *out, vl_err *err)
{
    mc_run *r = state;
    const uint32_t *len = r->job->sel->len;
    vl_status st;

    for (size_t k = 0; k < b->n; k++)
        r->items[k] = (vl_mc_item){b->samples[k], len[b->samples[k]]};
    if ((st = vl__mc_schedule(&r->s, r->items, b->n, err)) != VL_OK)
        return st;
    count(&r->s, &r->t);
    r->t.barrier_s += vl__mc_barrier_s(&r->s, r->job->cost, &r->par);
    return emit(&r->s, r->o, &r->par, b->epoch, r->members, out, err);
}

static void mcore_cp_close(void *state, bool planned)
{
    mc_run *r = state;

    if (planned)
        log_summary(r->job, &r->s, &r->t, r->fits);
    vl__mc_sched_free(&r->s);
    free(r->items);
    free(r->members);
}

const vl_strategy vl_strategy_mcore_cp = {
    .name = "mcore_cp",
    .summary = "Megatron-Core hybrid CP (baseline): per-sample power-of-two CP over the "
               "DP x CP GPUs, balanced groups (BalancedCPScheduler)",
    .section = "mcore_cp",
    .params = mcore_cp_params,
    .opts_size = sizeof(vl_mc_opts),
    .caps = VL_CAP_SHARED | VL_CAP_UNEVEN_MBS,
    .shares = VL_SHARES_POW2,
    .max_len = mcore_cp_max_len,
    .describe_max_len = mcore_cp_describe_max_len,
    .max_cap = mcore_cp_max_cap,
    .validate = mcore_cp_validate,
    .state_size = sizeof(mc_run),
    .open = mcore_cp_open,
    .plan_batch = mcore_cp_plan_batch,
    .close = mcore_cp_close,
    .streams = true,
};
