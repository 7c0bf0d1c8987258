/* plans/baseline/baseline.c -- the three baseline strategies every paper compares against:
 * random batching, LongAlign-style sorted batching, and plain packing.
 *
 * Common: per epoch, the runner cuts the sampler's seeded order (vl_epoch_order) into
 * global batches (training.global_batch samples, or training.global_tokens;
 * lib/run/run_epochs.c) and hands them over one by one (vl__bl_plan_batch); one global
 * batch is one iteration over training.dp ranks, and every rank gets the same number of
 * micro-batches.  Parallel layout from training (tp, pp, sp); ckpt_layers = layers/pp
 * under recompute: full; under recompute: auto the fewest that fit a full micro-batch
 * (max_seq_len tokens, or micro_batch x max_seq_len padded) on every device with pp
 * micro-batches in flight (vl_cost_fewest_ckpt; every layer when nothing fits, which
 * the simulator then reports as out of memory); else 0.  Longest plannable sample:
 * training.max_seq_len.
 * No strategy section: `pack` reads the top-level `pack` section, which the config code
 * has already parsed into cfg->pack (so .section = NULL, no params of its own).
 *
 * random  (HBP's "Random"): the batch in shuffled order is cut into dp x M micro-batches
 *   of training.micro_batch samples (M = ceil(G / (dp*B))); a short last batch spreads
 *   evenly, sizes differing by at most one.  Each micro-batch is padded to its longest
 *   sample: cap = samples x longest.  O(n) per epoch.
 * sorted  (LongAlign sort_and_group.py; HBP's "Sorted Batching"): the batch sorted by
 *   length (ties by index), cut the same way into consecutive micro-batches, padded.
 *   Consecutive groups of dp micro-batches form a step, one micro-batch per rank, so
 *   ranks run similar lengths side by side (LongAlign's groups of #GPUs).  The steps'
 *   order and, within a step, which rank gets which micro-batch are shuffled with the
 *   seed, so no rank always gets the longest (LongAlign shuffles the group order only;
 *   it also drops the remainder, which we keep).  O(G log G) per batch.
 * pack    plain packing: plans/baseline/baseline_pack*.c.
 * Seeds: every random step draws from (seed, tag ^ epoch<<32 ^ batch), so epochs and
 * batches are independent and reproducible. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"

#define STREAM_SORTED 0x534F525400000000ull /* "SORT" */

uint32_t vl__bl_max_len(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return cfg->training.max_seq_len;
}

/* A padded micro-batch holds up to training.micro_batch samples of up to max_seq_len. */
static uint64_t padded_max_cap(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return (uint64_t)cfg->training.max_seq_len * cfg->training.micro_batch;
}

vl_status vl__bl_check_dp(const vl_config *cfg, const char *who, vl_err *err)
{
    if (cfg->training.dp < 1)
        return vl_seterr(err, VL_ECONFIG, "%s: training.dp must be at least 1, got %d", who,
                         cfg->training.dp);
    if (cfg->training.max_seq_len < 1)
        return vl_seterr(err, VL_ECONFIG,
                         "%s: training.max_seq_len must be at least 1, got %u", who,
                         cfg->training.max_seq_len);
    return VL_OK;
}

static vl_status padded_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    (void)opts;
    if (cfg->training.micro_batch < 1)
        return vl_seterr(err, VL_ECONFIG,
                         "random/sorted: training.micro_batch must be at least 1");
    return vl__bl_check_dp(cfg, "random/sorted", err);
}

uint64_t vl__bl_stream(const bl *c, uint64_t tag)
{
    return tag ^ ((uint64_t)c->epoch << 32) ^ (uint64_t)c->batch;
}

/* ---- shared: the runner's hooks, the emitter --------------------------------------- */

vl_status vl__bl_emit_mb(bl *c, uint32_t cap, const uint32_t *items, size_t n, vl_err *err)
{
    const uint32_t *len = c->job->sel->len;
    vl_status st = vl_plan_mb_begin(c->out, cap, err);

    for (size_t i = 0; i < n && st == VL_OK; i++) {
        st = vl_plan_seg(c->out, items[i], 0, len[items[i]], err);
        c->tokens += len[items[i]];
    }
    c->mbs++;
    c->slots += cap;
    return st;
}

static uint32_t longest_of(const uint32_t *len, const uint32_t *items, size_t n)
{
    uint32_t longest = 0;

    for (size_t i = 0; i < n; i++)
        if (len[items[i]] > longest)
            longest = len[items[i]];
    return longest;
}

/* A padded micro-batch: every sample takes as many slots as the longest. */
static vl_status emit_padded(bl *c, const uint32_t *items, size_t n, uint32_t longest,
                             vl_err *err)
{
    if (n == 0)
        c->empty++;
    if ((uint64_t)n * longest > UINT32_MAX)
        return vl_seterr(err, VL_ECONFIG,
                         "%zu samples of %u tokens overflow a micro-batch's slot count", n,
                         longest);
    return vl__bl_emit_mb(c, (uint32_t)(n * longest), items, n, err);
}

vl_cover vl__bl_cover(const void *state)
{
    const bl *c = state;

    return (vl_cover){.ranks = c->dp, .piece = 0, .share = 1, .who = ""};
}

vl_status vl__bl_plan_batch(void *state, const vl_batch *b, vl_plan *out, vl_err *err)
{
    bl *c = state;
    vl_status st;

    c->epoch = b->epoch;
    c->batch = b->index;
    c->iters++;
    st = vl_plan_iter_begin(out, c->epoch, err);
    return st == VL_OK ? c->fn(c, b->samples, b->n, err) : st;
}

/* Micro-batches per rank when G samples go to dp ranks in groups of at most B. */
static size_t mbs_per_rank(size_t g, size_t dp, size_t b)
{
    size_t m = (g + dp * b - 1) / (dp * b);
    return m ? m : 1;
}

static void write_log(bl *c, const char *name)
{
    double fill = c->slots ? 100.0 * (double)c->tokens / (double)c->slots : 0.0;

    vl_job_log(c->job,
               "%s: %llu iterations, %llu micro-batches (%llu split packs, %llu "
               "empty), fill %.2f%% of %llu slots\n",
               name, (unsigned long long)c->iters, (unsigned long long)c->mbs,
               (unsigned long long)c->splits, (unsigned long long)c->empty, fill,
               (unsigned long long)c->slots);
    if (c->dealt_samples > 0) /* pack.deal=samples (baseline_pack_samples.c) */
        vl_job_log(c->job, "%s: %llu iterations dealt by sample, %llu of them as veRL deals\n",
                   name, (unsigned long long)c->dealt_samples,
                   (unsigned long long)c->dealt_verl);
}

/* Checkpointed layers per stage for micro-batches of up to mb_tokens tokens. */
static int ckpt_layers(const vl_job *job, const vl_par *par, uint64_t mb_tokens)
{
    const vl_config *cfg = job->cfg;
    int L = cfg->model.layers, pp = par->pp < 1 ? 1 : par->pp;
    int all = L / pp + (L % pp != 0); /* the first stage's layers */

    if (cfg->training.recompute == VL_RECOMPUTE_FULL)
        return all;
    if (cfg->training.recompute != VL_RECOMPUTE_AUTO || !job->cost)
        return 0;
    int k =
        vl_cost_fewest_ckpt(job->cost, mb_tokens, par, cfg->training.dp, (uint32_t)par->pp);
    return k < 0 ? all : k;
}

void vl__bl_open(bl *c, const vl_job *job, vl_plan *out, const void *opts, const char *name,
                 bool padded, vl__bl_batch_fn fn)
{
    const vl_config *cfg = job->cfg;
    uint64_t mb_tokens =
        (uint64_t)cfg->training.max_seq_len * (padded ? cfg->training.micro_batch : 1);

    *c = (bl){.job = job,
              .name = name,
              .fn = fn,
              .opts = opts,
              .t = &cfg->training,
              .out = out,
              .dp = (size_t)cfg->training.dp};
    c->par = (vl_par){.tp = cfg->training.tp, .pp = cfg->training.pp, .sp = cfg->training.sp};
    c->par.ckpt_layers = ckpt_layers(job, &c->par, mb_tokens);
}

void vl__bl_close(void *state, bool planned)
{
    bl *c = state;

    if (planned)
        write_log(c, c->name);
}

vl_status vl__bl_run(const vl_job *job, vl_plan *out, vl__bl_epochs_fn epochs,
                     const void *opts, const char *name, vl_err *err)
{
    bl c;
    vl_status st;

    vl__bl_open(&c, job, out, opts, name, false, NULL);
    st = epochs(&c, err);
    vl__bl_close(&c, st == VL_OK);
    return st;
}

/* ---- random ----------------------------------------------------------------------- */

/* dp x M micro-batches over items in the given order, rank r taking the r-th run of M;
 * the first n mod (dp*M) micro-batches get one extra sample.  start[j] is where
 * micro-batch j begins (start has dp*M + 1 entries). */
static void even_cuts(size_t *start, size_t n, size_t total)
{
    size_t base = n / total, extra = n % total;

    start[0] = 0;
    for (size_t j = 0; j < total; j++)
        start[j + 1] = start[j] + base + (j < extra);
}

static vl_status random_batch(bl *c, const uint32_t *items, size_t n, vl_err *err)
{
    size_t m = mbs_per_rank(n, c->dp, c->t->micro_batch), total = c->dp * m;
    size_t *start = malloc((total + 1) * sizeof *start);
    uint32_t *longest = malloc(total * sizeof *longest);
    vl_status st = VL_OK;

    if (start == NULL || longest == NULL) {
        free(start);
        free(longest);
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu micro-batches", total);
    }
    even_cuts(start, n, total);
    /* The lengths in one tight pass first: the batch's samples lie anywhere in a length
     * array that outgrows the caches at millions of samples, and here the reads overlap,
     * where the emitting loop (a call chain per sample) would wait for each in turn. */
    for (size_t j = 0; j < total; j++)
        longest[j] = longest_of(c->job->sel->len, items + start[j], start[j + 1] - start[j]);
    for (size_t r = 0; r < c->dp && st == VL_OK; r++) {
        st = vl_plan_rank_begin(c->out, (int)r, &c->par, err);
        for (size_t q = 0; q < m && st == VL_OK; q++) {
            size_t j = r * m + q;
            st = emit_padded(c, items + start[j], start[j + 1] - start[j], longest[j], err);
        }
    }
    free(start);
    free(longest);
    return st;
}

static vl_status random_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                             vl_err *err)
{
    (void)opts;
    (void)err;
    vl__bl_open(state, job, out, NULL, "random", true, random_batch);
    return VL_OK;
}

/* ---- sorted ----------------------------------------------------------------------- */

/* items sorted by length ascending, ties by index: one 64-bit key, a total order. */
static vl_status sort_by_len(uint32_t *dst, const uint32_t *items, size_t n,
                             const uint32_t *len, vl_err *err)
{
    uint64_t *k = malloc((n ? n : 1) * sizeof *k);

    if (k == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory sorting %zu samples", n);
    for (size_t i = 0; i < n; i++)
        k[i] = ((uint64_t)len[items[i]] << 32) | items[i];
    vl_sort_u64(k, n);
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint32_t)k[i];
    free(k);
    return VL_OK;
}

/* Step order and, per step, rank -> micro-batch; see the design comment. */
static void sorted_deal(bl *c, uint32_t *steps, uint32_t *who, size_t m)
{
    vl_rng r;

    vl_rng_seed(&r, c->job->seed, vl__bl_stream(c, STREAM_SORTED));
    for (size_t s = 0; s < m; s++)
        steps[s] = (uint32_t)s;
    vl_rng_shuffle_u32(&r, steps, m);
    for (size_t j = 0; j < m * c->dp; j++)
        who[j] = (uint32_t)(j % c->dp);
    for (size_t s = 0; s < m; s++)
        vl_rng_shuffle_u32(&r, who + s * c->dp, c->dp);
}

static vl_status sorted_batch(bl *c, const uint32_t *items, size_t n, vl_err *err)
{
    size_t m = mbs_per_rank(n, c->dp, c->t->micro_batch), total = c->dp * m;
    size_t *start = malloc((total + 1) * sizeof *start);
    uint32_t *buf = malloc((n ? n : 1) * sizeof *buf);
    uint32_t *steps = malloc(m * sizeof *steps), *who = malloc(total * sizeof *who);
    vl_status st = VL_OK;

    if (start == NULL || buf == NULL || steps == NULL || who == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu micro-batches", total);
        goto done;
    }
    if ((st = sort_by_len(buf, items, n, c->job->sel->len, err)) != VL_OK)
        goto done;
    even_cuts(start, n, total);
    sorted_deal(c, steps, who, m);
    for (size_t r = 0; r < c->dp && st == VL_OK; r++) {
        st = vl_plan_rank_begin(c->out, (int)r, &c->par, err);
        for (size_t q = 0; q < m && st == VL_OK; q++) {
            size_t j = (size_t)steps[q] * c->dp + who[(size_t)steps[q] * c->dp + r];
            size_t k = start[j + 1] - start[j];
            st = emit_padded(c, buf + start[j], k,
                             longest_of(c->job->sel->len, buf + start[j], k), err);
        }
    }
done:
    free(start);
    free(buf);
    free(steps);
    free(who);
    return st;
}

static vl_status sorted_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                             vl_err *err)
{
    (void)opts;
    (void)err;
    vl__bl_open(state, job, out, NULL, "sorted", true, sorted_batch);
    return VL_OK;
}

/* ---- the strategies --------------------------------------------------------------- */

const vl_strategy vl_strategy_random = {
    .name = "random",
    .summary = "random batching: shuffled global batches in padded micro-batches",
    .section = NULL,
    .params = NULL,
    .opts_size = 0,
    .max_len = vl__bl_max_len,
    .max_cap = padded_max_cap,
    .validate = padded_validate,
    VL__BL_BY_BATCH(bl, random_open),
    .close = vl__bl_close,
    .streams = true,
};

const vl_strategy vl_strategy_sorted = {
    .name = "sorted",
    .summary = "sorted batching (LongAlign): length-sorted padded micro-batches",
    .section = NULL,
    .params = NULL,
    .opts_size = 0,
    .max_len = vl__bl_max_len,
    .max_cap = padded_max_cap,
    .validate = padded_validate,
    VL__BL_BY_BATCH(bl, sorted_open),
    .close = vl__bl_close,
    .streams = true,
};
