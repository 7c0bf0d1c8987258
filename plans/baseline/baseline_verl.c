/* plans/baseline/baseline_verl.c -- `verl`: what veRL users run today (volcengine/verl,
 * verl/utils/seqlen_balancing.py and the trainer's _balance_batch, as
 * docs/peers.md §1.4 reads them), as a baseline.
 *
 * Per global batch (the sampler's, as every baseline):
 *  1. the batch's samples go to the training.dp ranks by Karmarkar-Karp with equal
 *     part sizes (veRL's karmarkar_karp(equal_size=True), lib/pack/partition.c) on the
 *     workload  verl.linear · len + len²  (calculate_workload: 24576 = 12·h² / (2·h)
 *     for h = 4096, a 7B model; the coefficient is a parameter);
 *  2. dynamic batch size (rearrange_micro_batches): each rank needs
 *     ceil(Σ tokens / training.max_seq_len) micro-batches; the count is the maximum over
 *     ranks (veRL's all-reduce MAX), and every rank's samples are split into that many
 *     by KK without the equal-size rule, on the same workload.
 * Deviations, each because veRL's assert would stop a run where a plan must go on:
 *  - a batch whose size is not a multiple of dp (veRL asserts) is padded with
 *    zero-workload placeholders that are dropped after the partition, so ranks differ
 *    by at most one sample;
 *  - a micro-batch over training.max_seq_len tokens (veRL lets KK make one; the
 *    packed-sequence capacity here is a hard limit) raises the count by one and the
 *    split is redone, so every micro-batch fits;
 *  - a rank with fewer samples than the count (veRL asserts no partition is empty)
 *    gets empty micro-batches of capacity 0.
 * A rank runs its micro-batches in KK's part order (veRL's small-at-both-ends order for
 * pipeline bubbles is not modelled).  O(G log G) per batch. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"

typedef struct verl_opts {
    double linear;
} verl_opts;

static const vl_param verl_params[] = {
    {"linear", VL_P_DOUBLE, offsetof(verl_opts, linear), 0, 1e12, NULL, VL__VERL_LINEAR_STR,
     "linear coefficient of the workload linear*len + len^2 (veRL: 24576, h = 4096)"},
    {NULL, VL_P_INT, 0, 0, 0, NULL, NULL, NULL},
};

typedef struct verl_batch {
    double *w; /* [dp-padded G] workload; placeholders 0 */
    int *part;
    uint32_t *rank_items; /* samples grouped by rank */
    size_t *rank_off;     /* [dp + 1] */
    double *rw;           /* one rank's workloads */
    int *mpart;           /* one rank's micro-batch of each sample */
    uint32_t *mb_items;   /* one rank's samples grouped by micro-batch */
    size_t *mb_off;
    uint64_t *mb_tok;
    const uint32_t *order; /* the caller's items by length descending, then index; NULL */
    uint32_t *ord;         /* [dp-padded G] order and then the placeholders: KK's order */
    uint32_t *rank_ord;    /* each rank's samples in that order, as places in its group */
    size_t *fill;          /* [dp] */
} verl_batch;

static double verl_workload(double linear, uint32_t len)
{
    return linear * (double)len + (double)len * (double)len;
}

/* Each rank's samples as places in its group (rank_ord[rank_off[r] ..), in the caller's
 * order: a group keeps the items' order, so ties in length stay by place.  ord (KK's
 * order, used) holds each item's place meanwhile. */
static void rank_order(const bl *c, verl_batch *v, size_t n)
{
    size_t *fill = v->fill;   /* places taken so far */
    uint32_t *place = v->ord; /* [n] each item's place in its group */

    memset(fill, 0, c->dp * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        place[i] = (uint32_t)fill[v->part[i]]++;
    memset(fill, 0, c->dp * sizeof *fill);
    for (size_t o = 0; o < n; o++) {
        uint32_t i = v->order[o];
        size_t r = (size_t)v->part[i];
        v->rank_ord[v->rank_off[r] + fill[r]++] = place[i];
    }
}

/* Step 1: rank r gets rank_items[rank_off[r] .. rank_off[r + 1]). */
static vl_status deal_ranks(bl *c, verl_batch *v, const uint32_t *items, size_t n,
                            double linear, vl_err *err)
{
    size_t np = (n + c->dp - 1) / c->dp * c->dp;
    vl_status st;

    for (size_t i = 0; i < np; i++)
        v->w[i] = i < n ? verl_workload(linear, c->job->sel->len[items[i]]) : 0.0;
    if (v->order != NULL) {
        memcpy(v->ord, v->order, n * sizeof *v->ord);
        for (size_t i = n; i < np; i++) /* weight 0, after every sample */
            v->ord[i] = (uint32_t)i;
    }
    st = v->order != NULL
             ? vl_partition_kk_equal_ordered(v->part, v->w, v->ord, np, (int)c->dp, err)
             : vl_partition_kk_equal(v->part, v->w, np, (int)c->dp, err);
    if (st != VL_OK)
        return st;
    memset(v->rank_off, 0, (c->dp + 1) * sizeof *v->rank_off);
    for (size_t i = 0; i < n; i++)
        v->rank_off[v->part[i] + 1]++;
    for (size_t r = 0; r < c->dp; r++)
        v->rank_off[r + 1] += v->rank_off[r];
    for (size_t i = 0; i < n; i++) /* placeholders (i >= n) are dropped here */
        v->rank_items[v->rank_off[v->part[i]]++] = items[i];
    memmove(v->rank_off + 1, v->rank_off, c->dp * sizeof *v->rank_off);
    v->rank_off[0] = 0;
    if (v->order != NULL)
        rank_order(c, v, n);
    return VL_OK;
}

/* Step 2 for one rank: its k samples into m micro-batches; *fits is false when one is
 * over capacity. */
static vl_status split_rank(bl *c, verl_batch *v, const uint32_t *it, const uint32_t *ord,
                            size_t k, size_t m, double linear, bool *fits, vl_err *err)
{
    const uint32_t *len = c->job->sel->len;
    vl_status st;

    for (size_t i = 0; i < k; i++)
        v->rw[i] = verl_workload(linear, len[it[i]]);
    /* the workload grows with the length: ord is (nearly always) KK's order, checked */
    if ((st = vl_partition_kk_ordered(v->mpart, v->rw, ord, k, (int)m, err)) != VL_OK)
        return st;
    memset(v->mb_off, 0, (m + 1) * sizeof *v->mb_off);
    memset(v->mb_tok, 0, m * sizeof *v->mb_tok);
    for (size_t i = 0; i < k; i++) {
        v->mb_off[v->mpart[i] + 1]++;
        v->mb_tok[v->mpart[i]] += len[it[i]];
    }
    *fits = true;
    for (size_t j = 0; j < m; j++) {
        v->mb_off[j + 1] += v->mb_off[j];
        *fits = *fits && v->mb_tok[j] <= c->t->max_seq_len;
    }
    for (size_t i = 0; i < k; i++)
        v->mb_items[v->mb_off[v->mpart[i]]++] = it[i];
    memmove(v->mb_off + 1, v->mb_off, m * sizeof *v->mb_off);
    v->mb_off[0] = 0;
    return VL_OK;
}

/* The split of rank r's samples into m micro-batches as bins[r], empty ones included;
 * *fits false (nothing kept) when one is over capacity. */
static vl_status rank_bins(bl *c, verl_batch *v, size_t r, size_t m, double linear, vl_bins *b,
                           bool *fits, vl_err *err)
{
    size_t k = v->rank_off[r + 1] - v->rank_off[r];
    const uint32_t *ord = v->order != NULL ? v->rank_ord + v->rank_off[r] : NULL;
    vl_status st =
        split_rank(c, v, v->rank_items + v->rank_off[r], ord, k, m, linear, fits, err);

    if (st != VL_OK || !*fits)
        return st;
    b->start = malloc((m + 1) * sizeof *b->start);
    b->items = malloc((k ? k : 1) * sizeof *b->items);
    b->load = malloc(m * sizeof *b->load);
    if (b->start == NULL || b->items == NULL || b->load == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu micro-batches", m);
    b->n = m;
    memcpy(b->start, v->mb_off, (m + 1) * sizeof *b->start);
    memcpy(b->items, v->mb_items, k * sizeof *b->items);
    memcpy(b->load, v->mb_tok, m * sizeof *b->load);
    return VL_OK;
}

/* The common micro-batch count *out: max over ranks of ceil(tokens / cap), raised until
 * every rank's KK split fits; bins[r] each rank's split at that count. */
static vl_status mb_split(bl *c, verl_batch *v, double linear, vl_bins *bins, size_t *out,
                          vl_err *err)
{
    const uint32_t *len = c->job->sel->len;
    size_t m = 1;
    vl_status st = VL_OK;

    for (size_t r = 0; r < c->dp; r++) {
        uint64_t tok = 0;
        for (size_t i = v->rank_off[r]; i < v->rank_off[r + 1]; i++)
            tok += len[v->rank_items[i]];
        size_t need = (size_t)((tok + c->t->max_seq_len - 1) / c->t->max_seq_len);
        m = need > m ? need : m;
    }
    for (size_t r = 0; r < c->dp && st == VL_OK;) {
        bool fits;
        if ((st = rank_bins(c, v, r, m, linear, &bins[r], &fits, err)) != VL_OK || fits) {
            r++;
            continue;
        }
        m++;          /* one sample per micro-batch always fits, so this ends */
        while (r > 0) /* a larger count: every rank again */
            vl_bins_free(&bins[--r]);
    }
    *out = m;
    return st;
}

static void verl_batch_free(verl_batch *v)
{
    free(v->w);
    free(v->part);
    free(v->rank_items);
    free(v->rank_off);
    free(v->rw);
    free(v->mpart);
    free(v->mb_items);
    free(v->mb_off);
    free(v->mb_tok);
    free(v->ord);
    free(v->rank_ord);
    free(v->fill);
}

vl_status vl__verl_deal(bl *c, const uint32_t *items, const uint32_t *order, size_t n,
                        double linear, vl_bins *bins, size_t *m, vl_err *err)
{
    size_t a = (n + c->dp - 1) / c->dp * c->dp;
    a = a ? a : 1;
    verl_batch v = {.w = malloc(a * sizeof *v.w),
                    .part = malloc(a * sizeof *v.part),
                    .rank_items = malloc(a * sizeof *v.rank_items),
                    .rank_off = malloc((c->dp + 1) * sizeof *v.rank_off),
                    .rw = malloc(a * sizeof *v.rw),
                    .mpart = malloc(a * sizeof *v.mpart),
                    .mb_items = malloc(a * sizeof *v.mb_items),
                    .mb_off = malloc((a + 1) * sizeof *v.mb_off),
                    .mb_tok = malloc(a * sizeof *v.mb_tok),
                    .order = order};
    vl_status st;

    *m = 0;
    if (order != NULL) {
        v.ord = malloc(a * sizeof *v.ord);
        v.rank_ord = malloc(a * sizeof *v.rank_ord);
        v.fill = malloc(c->dp * sizeof *v.fill);
    }
    if (!v.w || !v.part || !v.rank_items || !v.rank_off || !v.rw || !v.mpart || !v.mb_items ||
        !v.mb_off || !v.mb_tok || (order != NULL && (!v.ord || !v.rank_ord || !v.fill)))
        st = vl_seterr(err, VL_ENOMEM, "out of memory for a batch of %zu", n);
    else if ((st = deal_ranks(c, &v, items, n, linear, err)) == VL_OK)
        st = mb_split(c, &v, linear, bins, m, err);
    verl_batch_free(&v);
    return st;
}

static vl_status verl_batch_fn(bl *c, const uint32_t *items, size_t n, vl_err *err)
{
    const verl_opts *o = c->opts;
    vl_bins *bins = calloc(c->dp, sizeof *bins);
    size_t m = 0;
    vl_status st = bins == NULL
                       ? vl_seterr(err, VL_ENOMEM, "out of memory for %zu ranks", c->dp)
                       : vl__verl_deal(c, items, NULL, n, o->linear, bins, &m, err);

    for (size_t r = 0; r < c->dp && st == VL_OK; r++) {
        const vl_bins *b = &bins[r];
        st = vl_plan_rank_begin(c->out, (int)r, &c->par, err);
        for (size_t j = 0; j < m && st == VL_OK; j++) {
            size_t cnt = b->start[j + 1] - b->start[j];
            c->empty += cnt == 0;
            st = vl__bl_emit_mb(c, cnt ? c->t->max_seq_len : 0, b->items + b->start[j], cnt,
                                err);
        }
    }
    for (size_t r = 0; bins != NULL && r < c->dp; r++)
        vl_bins_free(&bins[r]);
    free(bins);
    return st;
}

static vl_status verl_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    (void)opts;
    return vl__bl_check_dp(cfg, "verl", err);
}

static vl_status verl_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                           vl_err *err)
{
    (void)err;
    vl__bl_open(state, job, out, opts, "verl", false, verl_batch_fn);
    return VL_OK;
}

/* Every micro-batch is a packed sequence of at most training.max_seq_len tokens (step
 * 2's hard limit), the capacity it is written with; verify holds the plan to it. */
static uint64_t verl_max_cap(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return cfg->training.max_seq_len;
}

const vl_strategy vl_strategy_verl = {
    .name = "verl",
    .summary = "veRL's balancing: equal-count KK on 24576*len+len^2 to ranks, dynamic bsz",
    .section = "verl",
    .params = verl_params,
    .opts_size = sizeof(verl_opts),
    .caps = 0,
    .max_len = vl__bl_max_len,
    .max_cap = verl_max_cap,
    .validate = verl_validate,
    VL__BL_BY_BATCH(bl, verl_open),
    .close = vl__bl_close,
    .streams = true,
};
