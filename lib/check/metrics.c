/* lib/check/metrics.c -- balance metrics from the plan alone (metrics.h, docs/decisions.md §4): per
 * iteration ABR, DBR, PR, CR and Ave-T over its ranks, then mean, p50, p99 and max over
 * iterations.  Percentiles are nearest-rank: the ceil(q·n/100)-th smallest value.
 *  - Ranks of different sizes (Hydraulis pipelines, GPUs = tp·sp·pp) are compared by
 *    the load per GPU: T_i and A_i are divided by rank i's GPU count before the DBR and
 *    ABR formulas; with equal sizes that changes nothing.
 *  - CR counts the tokens actually processed under a sequence split: segments sharded
 *    over an sp group of 2 or more (all of an sp > 1 rank's tokens unless a segment is
 *    local to one CP coordinate) and shared packs. */
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

#include "sort.h"

enum { M_ABR, M_DBR, M_PR, M_CR, M_AVE_T, M_COUNT };

/* One rank's load: tokens and causal attention pairs Σ (b² − a²) (in doubles: exact while
 * b < 2^26.5 per segment and the sum < 2^53), its micro-batches' slots, and the tokens
 * it processes under a sequence split.  A pack shared by k ranks counts 1/k on each
 * member (it runs with context parallelism across them) and is split. */
typedef struct load {
    double tokens, attn, cap, split;
} load;

static void rank_load(const vl_plan *p, const vl_rank *rk, load *ld)
{
    memset(ld, 0, sizeof *ld);
    for (uint64_t b = rk->mb0; b < rk->mb0 + rk->nmb; b++) {
        const vl_mb *mb = &p->mbs[b];
        const vl_seg *s = vl_plan_mb_segs(p, mb);
        uint32_t k;
        double t = 0, a = 0, split = 0, share;
        vl_plan_mb_members(p, mb, &k);
        share = k > 1 ? 1.0 / k : 1.0;
        for (uint32_t j = 0; j < mb->nseg; j++) {
            double lo = s[j].off, hi = (double)s[j].off + s[j].len;
            a += (hi - lo) * (hi + lo);
            t += s[j].len;
            /* split: sharded over an sp group of 2 or more, or across shared ranks */
            if (k > 1 || (rk->par.sp > 1 && vl_plan_seg_cpi(p, mb->seg0 + j) == VL_CP_SHARDED))
                split += s[j].len;
        }
        ld->tokens += t * share;
        ld->attn += a * share;
        ld->split += split * share;
        ld->cap += mb->cap * share;
    }
}

/* Σ_i (max − x_i) / (max · N), written as 1 − Σx / (N · max). */
static double balance(double sum, double max, uint32_t n)
{
    return max > 0 ? 1.0 - sum / ((double)n * max) : 0.0;
}

/* Whether the ranks of `in` differ in size (tp·sp·pp GPUs). */
static bool mixed_sizes(const vl_plan *p, const vl_iter *in)
{
    for (uint32_t r = 1; r < in->nranks; r++)
        if (vl_plan_rank_size(&p->ranks[in->rank0 + r]) !=
            vl_plan_rank_size(&p->ranks[in->rank0]))
            return true;
    return false;
}

void vl_metrics_iter(const vl_plan *p, size_t it, vl_iter_metrics *out)
{
    const vl_iter *in = &p->iters[it];
    bool per_gpu = mixed_sizes(p, in);
    double tsum = 0, tmax = 0, asum = 0, amax = 0, split = 0, pad = 0, slots = 0, all = 0;
    uint64_t nmb = 0;

    for (uint32_t r = 0; r < in->nranks; r++) {
        const vl_rank *rk = &p->ranks[in->rank0 + r];
        /* ranks of different sizes are compared per GPU: the load a GPU of each carries */
        double g = per_gpu && vl_plan_rank_size(rk) > 0 ? vl_plan_rank_size(rk) : 1.0, t, a;
        load ld;
        rank_load(p, rk, &ld);
        t = ld.tokens / g;
        a = ld.attn / g;
        tsum += t;
        asum += a;
        tmax = t > tmax ? t : tmax;
        amax = a > amax ? a : amax;
        all += ld.tokens;
        split += ld.split;
        slots += ld.cap;
        /* an over-full micro-batch (a verify error) pads nothing */
        pad += ld.cap > ld.tokens ? ld.cap - ld.tokens : 0;
        nmb += rk->nmb;
    }
    out->dbr = balance(tsum, tmax, in->nranks);
    out->abr = balance(asum, amax, in->nranks);
    out->pr = slots > 0 ? pad / slots : 0.0;
    out->cr = all > 0 ? split / all : 0.0;
    out->ave_t = nmb > 0 ? all / (double)nmb : 0.0;
}

/* Distinct samples with a dropped range; drops arrive sorted by sample in practice, so
 * the copy and sort happen only when they do not. */
static vl_status count_dropped(const vl_plan *p, vl_metrics *out, vl_err *err)
{
    uint32_t *ids;
    bool sorted = true;
    size_t distinct = 0;

    for (size_t i = 0; i < p->ndrops; i++) {
        out->dropped_tokens += p->drops[i].len;
        if (p->drops[i].reason == VL_DROP_TRUNCATED) { /* one tail per sample */
            out->truncated_tokens += p->drops[i].len;
            out->truncated_samples++;
        }
        sorted = sorted && (i == 0 || p->drops[i - 1].sample <= p->drops[i].sample);
    }
    if (p->ndrops == 0)
        return VL_OK;
    if (!(ids = malloc(p->ndrops * sizeof *ids)))
        return vl_seterr(err, VL_ENOMEM, "out of memory computing metrics");
    for (size_t i = 0; i < p->ndrops; i++)
        ids[i] = p->drops[i].sample;
    if (!sorted)
        vl_sort_u32(ids, p->ndrops);
    for (size_t i = 0; i < p->ndrops; i++)
        distinct += i == 0 || ids[i] != ids[i - 1];
    free(ids);
    out->dropped_samples = distinct;
    return VL_OK;
}

struct vl_metrics_acc {
    vl_series s;
    uint64_t tokens, samples;
};

vl_status vl_metrics_acc_new(vl_metrics_acc **out, vl_err *err)
{
    if (!(*out = calloc(1, sizeof **out)))
        return vl_seterr(err, VL_ENOMEM, "out of memory computing metrics");
    (*out)->s.ncol = M_COUNT;
    return VL_OK;
}

void vl_metrics_acc_free(vl_metrics_acc *a)
{
    if (!a)
        return;
    vl_series_free(&a->s);
    free(a);
}

vl_status vl_metrics_acc_iter(vl_metrics_acc *a, const vl_plan *p, size_t it, vl_err *err)
{
    vl_iter_metrics im;
    uint64_t tokens, samples;

    vl_metrics_iter(p, it, &im);
    vl_plan_iter_totals(p, it, &tokens, NULL, &samples);
    a->tokens += tokens;
    a->samples += samples;
    double row[M_COUNT] = {[M_ABR] = im.abr,
                           [M_DBR] = im.dbr,
                           [M_PR] = im.pr,
                           [M_CR] = im.cr,
                           [M_AVE_T] = im.ave_t};
    return vl_series_push(&a->s, row, err);
}

vl_status vl_metrics_acc_finish(vl_metrics_acc *a, const vl_plan *p, vl_metrics *out,
                                vl_err *err)
{
    vl_dist *dist[M_COUNT] = {&out->abr, &out->dbr, &out->pr, &out->cr, &out->ave_t};

    memset(out, 0, sizeof *out);
    for (int k = 0; k < M_COUNT; k++)
        vl_series_dist(&a->s, (size_t)k, dist[k]);
    out->iterations = a->s.n;
    out->tokens = a->tokens;
    out->samples = a->samples;
    return count_dropped(p, out, err);
}

vl_status vl_metrics_compute(const vl_plan *p, vl_metrics *out, vl_err *err)
{
    vl_metrics_acc *a = NULL;
    vl_status st = vl_metrics_acc_new(&a, err);

    for (size_t it = 0; st == VL_OK && it < p->niters; it++)
        st = vl_metrics_acc_iter(a, p, it, err);
    if (st == VL_OK)
        st = vl_metrics_acc_finish(a, p, out, err);
    else
        memset(out, 0, sizeof *out);
    vl_metrics_acc_free(a);
    return st;
}
