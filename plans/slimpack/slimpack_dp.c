/* plans/slimpack/slimpack_dp.c -- phase 1 (paper §4.1.1, docs/slimpack.md §2.2-2.3):
 * every DP rank gets the same forward-work capacity C = Σ W_F / N_dp; outliers first get
 * a DP-Merge group of k contiguous ranks (largest outlier first, disjoint groups) that
 * carry W_F / k each -- a sample heavier than C (k the next power of two ≥ W_F / C), or
 * one whose activations do not fit one rank's memory even sliced, every slice in
 * flight at once with the most checkpointing the rank may use (k the smallest power of
 * two with which 1/k of them fits, slimpack_mem.c), the larger k of the two; then LPT
 * on W_F puts whole samples on the least-loaded rank, ties to the lowest index. */
#include <stdlib.h>

#include "slimpack_impl.h"

typedef struct weighed {
    double w;
    uint32_t sample, slot;
} weighed;

/* Heaviest first; equal work by sample index, then batch slot: a total order. */
static int by_work_desc(const void *a, const void *b)
{
    const weighed *x = a, *y = b;

    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    if (x->sample != y->sample)
        return x->sample < y->sample ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The lowest dp0 with ranks [dp0, dp0 + k) all outside a group, or -1. */
static int free_run(const sp_work *w, int dp, int k)
{
    for (int r = 0; r + k <= dp; r++) {
        int j = 0;
        while (j < k && w->group_of[r + j] < 0)
            j++;
        if (j == k)
            return r;
        r += j; /* skip past the grouped rank */
    }
    return -1;
}

static int next_pow2(double x)
{
    int k = 1;

    while (k < x && k < (1 << 20))
        k *= 2;
    return k;
}

/* The DP-Merge degree sample v needs: by work against C, by memory against the
 * batch's room; 1: none. */
static int merge_degree(const sp_work *w, const sp_setting *s, const weighed *v,
                        const uint32_t *len, double C)
{
    int kw = v->w > C ? next_pow2(v->w / C) : 1;
    int km = vl__sp_mem_ranks(s, len[v->sample], w->room);

    return kw > km ? kw : km;
}

/* DP-Merge of the heaviest samples while they exceed C or a rank's memory: returns how
 * many of the sorted samples were merged (a prefix: longer is heavier, and needs more
 * memory).  A group never passes s->merge_most ranks: under Ulysses its outlier's heads
 * are scattered over all its GPUs, which must split them evenly (verify holds it). */
static size_t merge_outliers(sp_work *w, const sp_setting *s, const weighed *v,
                             const uint32_t *len, size_t n, double C)
{
    size_t i = 0;
    int k;

    w->ngroups = 0;
    if (!s->o->dp_merge || s->dp < 2)
        return 0;
    for (; i < n && (k = merge_degree(w, s, &v[i], len, C)) > 1 &&
           w->ngroups < sizeof w->groups / sizeof w->groups[0];
         i++) {
        int dp0 = -1, most = s->merge_most > 0 ? s->merge_most : s->dp;
        k = k < most ? k : most;
        k = k < s->dp ? k : s->dp;
        while (k >= 2 && (dp0 = free_run(w, s->dp, k)) < 0)
            k /= 2; /* fewer ranks left: the largest power of two that still fits */
        if (k < 2)
            break; /* no ranks left: no merge */
        sp_group *g = &w->groups[w->ngroups];
        *g = (sp_group){.dp0 = dp0, .k = k, .slot = v[i].slot, .wf = v[i].w};
        for (int r = dp0; r < dp0 + k; r++) {
            w->group_of[r] = (int)w->ngroups;
            w->load[r] += v[i].w / k;
        }
        w->rank_of[v[i].slot] = -2 - (int)w->ngroups;
        w->ngroups++;
    }
    return i;
}

static int least_loaded(const double *load, int dp)
{
    int best = 0;

    for (int r = 1; r < dp; r++)
        if (load[r] < load[best])
            best = r;
    return best;
}

/* own[own0[r], own0[r + 1]) = rank r's samples (batch slots) in LPT order. */
static vl_status fill_own(sp_work *w, const sp_setting *s, const weighed *v, size_t n,
                          vl_err *err)
{
    vl_status st;

    if ((st = vl_grow(&w->own, &w->own_cap, n ? n : 1, sizeof *w->own, err)) != VL_OK ||
        (st = vl_grow(&w->own0, &w->own0_cap, (size_t)s->dp + 1, sizeof *w->own0, err)) !=
            VL_OK)
        return st;
    for (int r = 0; r <= s->dp; r++)
        w->own0[r] = 0;
    for (size_t i = 0; i < n; i++)
        if (w->rank_of[v[i].slot] >= 0)
            w->own0[w->rank_of[v[i].slot] + 1]++;
    for (int r = 0; r < s->dp; r++)
        w->own0[r + 1] += w->own0[r];
    for (int r = 0; r < s->dp; r++)
        w->load[r] = w->own0[r]; /* reused as fill cursors */
    for (size_t i = 0; i < n; i++) {
        int r = w->rank_of[v[i].slot];
        if (r >= 0)
            w->own[(size_t)w->load[r]++] = v[i].slot;
    }
    return VL_OK;
}

vl_status vl__sp_phase1(sp_work *w, const sp_setting *s, const uint32_t *len, vl_err *err)
{
    size_t n = w->nsamples;
    double total = 0;
    weighed *v;
    vl_status st;

    if ((st = vl_grow(&w->wf, &w->wf_cap, n ? n : 1, sizeof *w->wf, err)) != VL_OK ||
        (st = vl_grow(&w->rank_of, &w->rank_of_cap, n ? n : 1, sizeof *w->rank_of, err)) !=
            VL_OK ||
        (st = vl_grow(&w->group_of, &w->group_of_cap, (size_t)s->dp, sizeof *w->group_of,
                      err)) != VL_OK ||
        (st = vl_grow(&w->load, &w->load_cap, (size_t)s->dp, sizeof *w->load, err)) != VL_OK ||
        (st = vl_grow(&w->slen, &w->slen_cap, n ? n : 1, sizeof *w->slen, err)) != VL_OK)
        return st;
    if ((v = malloc((n ? n : 1) * sizeof *v)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for %zu samples", n);
    for (size_t i = 0; i < n; i++) {
        w->slen[i] = len[w->samples[i]];
        w->wf[i] = vl__sp_work(s->coef.af, s->coef.bf, 0, w->slen[i]);
        v[i] = (weighed){w->wf[i], w->samples[i], (uint32_t)i};
        total += w->wf[i];
    }
    qsort(v, n, sizeof *v, by_work_desc);
    for (int r = 0; r < s->dp; r++) {
        w->group_of[r] = -1;
        w->load[r] = 0;
    }
    size_t merged = merge_outliers(w, s, v, len, n, total / s->dp);
    for (size_t i = merged; i < n; i++) {
        int r = least_loaded(w->load, s->dp);
        w->rank_of[v[i].slot] = r;
        w->load[r] += v[i].w;
    }
    st = fill_own(w, s, v, n, err);
    free(v);
    return st;
}
