/* plans/slimpack/slimpack_pack.c -- phase 2 (paper §4.1.1-4.1.2, docs/slimpack.md
 * §2.4-2.5), per rank and candidate M.
 *  Forward: target tau = W_rank / M.  Samples heavier than theta·tau ("slimmable"),
 *  heaviest first, are laid out consecutively from pack 0 and cut where the running
 *  work reaches a multiple of tau (Slim packs, and a Mix pack where one ends); the
 *  others go whole by LPT to the least-loaded pack (Mix and Pack packs).
 *  Backward (asymmetric): target sigma = Σ W_B / M.  Samples in forward-completion
 *  order (the pack holding the last slice, then position in it), each traversed last
 *  token first, cut at multiples of sigma, any sample may be cut: FIFO across packs,
 *  LIFO inside a sample.
 * Forward cuts are rounded to slice_align tokens (sample ends are always boundaries) and
 * never leave a slice shorter than min_slice_tokens; backward cuts only where that keeps
 * the pack within 0.8% of sigma, else they are token-exact (bwd_cut). */
#include <math.h>
#include <stdlib.h>

#include "slimpack_impl.h"

/* ---- placement scratch: segments tagged with their pack ---- */

static inline vl_status place(sp_work *w, size_t *np, uint32_t sample, uint32_t off,
                              uint32_t len, uint32_t pack, vl_err *err)
{
    vl_status st;

    if (len == 0)
        return VL_OK;
    if ((st = vl_grow(&w->tmp, &w->tmp_cap, *np + 1, sizeof *w->tmp, err)) != VL_OK ||
        (st = vl_grow(&w->tag, &w->tag_cap, *np + 1, sizeof *w->tag, err)) != VL_OK)
        return st;
    w->tmp[*np] = (vl_seg){sample, off, len};
    w->tag[(*np)++] = pack;
    return VL_OK;
}

/* Append the placed segments to pk pack by pack (placement order within a pack), leaving
 * out packs that received nothing.  A stable counting sort on the tags, then the packs
 * written in place: what vl__sp_packing_add and _close give, room made once (the tags
 * are below M, so at most M packs close). */
static vl_status flush_placed(sp_work *w, size_t np, uint32_t M, sp_packing *pk, vl_err *err)
{
    vl_status st;

    if (np == 0)
        return VL_OK;
    if ((st = vl_grow(&w->cnt, &w->cnt_cap, (size_t)M + 1, sizeof *w->cnt, err)) != VL_OK ||
        (st = vl_grow(&w->order, &w->order_cap, np, sizeof *w->order, err)) != VL_OK ||
        (st = vl_grow(&pk->segs, &pk->segs_cap, pk->nsegs + np, sizeof *pk->segs, err)) ||
        (st = vl_grow(&pk->start, &pk->start_cap, pk->npacks + M + 1, sizeof *pk->start, err)))
        return st;
    for (uint32_t p = 0; p <= M; p++)
        w->cnt[p] = 0;
    for (size_t i = 0; i < np; i++)
        w->cnt[w->tag[i] + 1]++;
    for (uint32_t p = 0; p < M; p++)
        w->cnt[p + 1] += w->cnt[p];
    for (size_t i = 0; i < np; i++)
        w->order[w->cnt[w->tag[i]]++] = (uint32_t)i;
    if (pk->npacks == 0)
        pk->start[0] = 0;
    for (size_t i = 0; i < np; i++) {
        pk->segs[pk->nsegs++] = w->tmp[w->order[i]];
        if (i + 1 == np || w->tag[w->order[i + 1]] != w->tag[w->order[i]])
            pk->start[++pk->npacks] = (uint32_t)pk->nsegs;
    }
    return VL_OK;
}

/* ---- forward ---- */

/* The forward cut of [off, n) where its work reaches r, kept off tiny slices: none at
 * all (off) when the slice would be shorter than min_slice, the whole rest (n) when
 * what is left would be. */
static uint32_t fwd_cut(const sp_setting *s, uint32_t off, uint32_t n, double r)
{
    uint32_t x = vl__sp_cut_fwd(s->coef.af, s->coef.bf, off, n, r, s->o->slice_align);
    uint32_t ms = s->o->min_slice_tokens;

    if (x - off < ms)
        return off;
    if (n - x < ms)
        return n;
    return x;
}

/* Lay out slimmable sample `slot` from the running work *pos, pack *k on. */
static vl_status slim_one(sp_work *w, const sp_setting *s, size_t *np, uint32_t slot,
                          uint32_t n, double tau, uint32_t M, double *pos, uint32_t *k,
                          vl_err *err)
{
    uint32_t sample = w->samples[slot], off = 0;
    vl_status st = VL_OK;

    while (off < n && st == VL_OK) {
        double rest = vl__sp_work(s->coef.af, s->coef.bf, off, n);
        double r = (*k + 1) * tau - *pos;
        if (*k + 1 >= M || rest <= r) {
            st = place(w, np, sample, off, n - off, *k, err);
            w->load[*k] += rest;
            *pos += rest;
            break;
        }
        uint32_t x = fwd_cut(s, off, n, r);
        if (x > off) {
            double part = vl__sp_work(s->coef.af, s->coef.bf, off, x);
            st = place(w, np, sample, off, x - off, *k, err);
            w->load[*k] += part;
            *pos += part;
            off = x;
        }
        if (off < n)
            (*k)++;
    }
    return st;
}

static uint32_t least_loaded(const double *load, uint32_t M)
{
    uint32_t best = 0;

    for (uint32_t p = 1; p < M; p++)
        if (load[p] < load[best])
            best = p;
    return best;
}

/* The LPT placement of least_loaded's pick from a heap of the packs ordered by (load,
 * index), the same pack (the first of the lightest), for many packs. */
static bool lighter(const double *load, uint32_t a, uint32_t b)
{
    return load[a] < load[b] || (load[a] == load[b] && a < b);
}

static void sift_down(uint32_t *h, uint32_t M, const double *load, uint32_t at)
{
    uint32_t x = h[at];

    for (;;) {
        uint32_t c = 2 * at + 1;
        if (c >= M)
            break;
        if (c + 1 < M && lighter(load, h[c + 1], h[c]))
            c++;
        if (!lighter(load, h[c], x))
            break;
        h[at] = h[c];
        at = c;
    }
    h[at] = x;
}

/* Above this many packs the whole samples go through the heap. */
#define SP_HEAP_FROM 16

static vl_status place_whole(sp_work *w, const uint32_t *items, size_t i, size_t n, uint32_t M,
                             size_t *np, vl_err *err)
{
    vl_status st = VL_OK;

    if (M <= SP_HEAP_FROM) {
        for (; i < n && st == VL_OK; i++) {
            uint32_t p = least_loaded(w->load, M), slot = items[i];
            st = place(w, np, w->samples[slot], 0, w->slen[slot], p, err);
            w->load[p] += w->wf[slot];
        }
        return st;
    }
    if ((st = vl_grow(&w->heap, &w->heap_cap, M, sizeof *w->heap, err)) != VL_OK)
        return st;
    for (uint32_t p = 0; p < M; p++)
        w->heap[p] = p;
    for (uint32_t p = M / 2; p-- > 0;)
        sift_down(w->heap, M, w->load, p);
    for (; i < n && st == VL_OK; i++) {
        uint32_t p = w->heap[0], slot = items[i];
        st = place(w, np, w->samples[slot], 0, w->slen[slot], p, err);
        w->load[p] += w->wf[slot];
        sift_down(w->heap, M, w->load, 0);
    }
    return st;
}

vl_status vl__sp_forward(sp_work *w, const sp_setting *s, const uint32_t *len,
                         const uint32_t *items, size_t n, uint32_t M, sp_packing *pk,
                         vl_err *err)
{
    (void)len; /* w->slen holds the lengths of the batch's slots */
    double total = 0, tau, pos = 0;
    size_t np = 0, i = 0;
    uint32_t k = 0;
    vl_status st;

    if (n == 0)
        return VL_OK;
    if ((st = vl_grow(&w->load, &w->load_cap, M, sizeof *w->load, err)) != VL_OK)
        return st;
    for (uint32_t p = 0; p < M; p++)
        w->load[p] = 0;
    for (size_t j = 0; j < n; j++)
        total += w->wf[items[j]];
    tau = total / M;
    /* items come heaviest first (phase 1's order): the slimmable ones are a prefix */
    for (; i < n && w->wf[items[i]] > s->o->slim_threshold * tau && st == VL_OK; i++)
        st = slim_one(w, s, &np, items[i], w->slen[items[i]], tau, M, &pos, &k, err);
    if (st == VL_OK)
        st = place_whole(w, items, i, n, M, &np, err);
    return st == VL_OK ? flush_placed(w, np, M, pk, err) : st;
}

/* ---- backward ---- */

struct sp_done_at {
    uint32_t pack, pos, sample;
};
typedef struct sp_done_at done_at;

/* How far a backward cut may put the running work off its target, as a share of sigma:
 * a pack sits between two cuts, so it stays within twice this of sigma. */
#define BWD_TOL 0.004

/* The backward cut of [0, hi) where the work of [x, hi) reaches r.  slice_align and
 * min_slice_tokens are honoured only where the cut they give stays within BWD_TOL·sigma
 * of the target; elsewhere the cut is token-exact (one 128-token block deep in a 256K
 * sample is a few per cent of a small pack's backward work). */
static uint32_t bwd_cut(const sp_setting *s, uint32_t hi, double r, double sigma)
{
    double a = s->coef.ab, b = s->coef.bb, tol = BWD_TOL * sigma;
    uint32_t x = vl__sp_cut_bwd(a, b, 0, hi, r, s->o->slice_align);
    uint32_t ms = s->o->min_slice_tokens;

    if (fabs(vl__sp_work(a, b, x, hi) - r) > tol)
        x = vl__sp_cut_bwd(a, b, 0, hi, r, 1);
    if (hi - x < ms && fabs(vl__sp_work(a, b, hi, hi) - r) <= tol)
        return hi;
    if (x < ms && x > 0 && fabs(vl__sp_work(a, b, 0, hi) - r) <= tol)
        return 0;
    return x;
}

/* One sample, last token first, from the running backward work *pos and pack *k on. */
static vl_status bwd_one(sp_work *w, const sp_setting *s, size_t *np, uint32_t sample,
                         uint32_t n, double sigma, uint32_t M, double *pos, uint32_t *k,
                         vl_err *err)
{
    uint32_t hi = n;
    vl_status st = VL_OK;

    while (hi > 0 && st == VL_OK) {
        double rest = vl__sp_work(s->coef.ab, s->coef.bb, 0, hi);
        double r = (*k + 1) * sigma - *pos;
        if (*k + 1 >= M || rest <= r) {
            st = place(w, np, sample, 0, hi, *k, err);
            *pos += rest;
            break;
        }
        uint32_t x = bwd_cut(s, hi, r, sigma);
        if (x < hi) {
            st = place(w, np, sample, x, hi - x, *k, err);
            *pos += vl__sp_work(s->coef.ab, s->coef.bb, x, hi);
            hi = x;
        }
        if (hi > 0)
            (*k)++;
    }
    return st;
}

/* The samples of packs [p0, npacks) in forward-completion order, into w->done_at. */
static vl_status completion_order(sp_work *w, const sp_packing *fwd, size_t p0,
                                  const uint32_t *len, done_at **out, size_t *n, vl_err *err)
{
    done_at *d;
    vl_status st = vl_grow(&w->done_at, &w->done_at_cap, fwd->nsegs ? fwd->nsegs : 1,
                           sizeof *w->done_at, err);

    *n = 0;
    if (st != VL_OK)
        return st;
    d = w->done_at;
    for (size_t p = p0; p < fwd->npacks; p++)
        for (uint32_t j = fwd->start[p]; j < fwd->start[p + 1]; j++) {
            const vl_seg *sg = &fwd->segs[j];
            if (sg->off + sg->len == len[sg->sample])
                d[(*n)++] = (done_at){(uint32_t)p, j - fwd->start[p], sg->sample};
        }
    *out = d; /* in (pack, position) order as made: forward-completion order */
    return VL_OK;
}

vl_status vl__sp_backward(sp_work *w, const sp_setting *s, const uint32_t *len,
                          const sp_packing *fwd, size_t p0, uint32_t M, sp_packing *bwd,
                          vl_err *err)
{
    done_at *d = NULL;
    size_t n = 0, np = 0;
    double total = 0, pos = 0;
    uint32_t k = 0;
    vl_status st = completion_order(w, fwd, p0, len, &d, &n, err);

    for (size_t i = 0; i < n && st == VL_OK; i++)
        total += vl__sp_work(s->coef.ab, s->coef.bb, 0, len[d[i].sample]);
    for (size_t i = 0; i < n && st == VL_OK; i++)
        st = bwd_one(w, s, &np, d[i].sample, len[d[i].sample], total / M, M, &pos, &k, err);
    return st == VL_OK && n > 0 ? flush_placed(w, np, M, bwd, err) : st;
}

/* ---- one rank ---- */

/* A merge group's outlier cut into `parts` pieces of equal work, one pack each: forward
 * in token order, or backward last token first. */
static vl_status outlier_packs(const sp_setting *s, uint32_t sample, uint32_t n,
                               uint32_t parts, bool bwd, sp_packing *pk, vl_err *err)
{
    double a = bwd ? s->coef.ab : s->coef.af, b = bwd ? s->coef.bb : s->coef.bf;
    double W = vl__sp_work(a, b, 0, n);
    uint32_t prev = bwd ? n : 0;
    vl_status st = VL_OK;

    for (uint32_t q = 1; q <= parts && st == VL_OK; q++) {
        uint32_t x;
        if (q == parts)
            x = bwd ? 0 : n;
        else if (bwd)
            x = vl__sp_cut_bwd(a, b, 0, n, W * q / parts, s->o->slice_align);
        else
            x = vl__sp_cut_fwd(a, b, 0, n, W * q / parts, s->o->slice_align);
        if (bwd ? x >= prev : x <= prev)
            continue; /* rounding left this piece empty */
        vl_seg sg = bwd ? (vl_seg){sample, x, prev - x} : (vl_seg){sample, prev, x - prev};
        if ((st = vl__sp_packing_add(pk, &sg, err)) == VL_OK)
            st = vl__sp_packing_close(pk, err);
        prev = x;
    }
    return st;
}

/* Packs the outlier of merge group g takes out of M: its share of the group's mean
 * work per pack, at least one, and one left for own samples when a member has any. */
static uint32_t outlier_parts(const sp_work *w, const sp_group *g, uint32_t M)
{
    double own = 0;
    bool any_own = false;

    for (int r = g->dp0; r < g->dp0 + g->k; r++) {
        for (uint32_t j = w->own0[r]; j < w->own0[r + 1]; j++)
            own += w->wf[w->own[j]];
        any_own = any_own || w->own0[r + 1] > w->own0[r];
    }
    double tau = (own + g->wf) / ((double)g->k * M);
    long parts = lround(g->wf / (g->k * tau));
    long most = any_own ? (long)M - 1 : (long)M;

    parts = parts < most ? parts : most;
    return parts < 1 ? 1 : (uint32_t)parts;
}

vl_status vl__sp_rank_packs(sp_work *w, const sp_setting *s, const uint32_t *len, int dp,
                            uint32_t M, bool asym, vl_err *err)
{
    sp_rankplan *rp = &w->rp;
    const uint32_t *items = w->own + w->own0[dp];
    size_t n = w->own0[dp + 1] - w->own0[dp];
    int gi = w->group_of[dp];
    uint32_t Mown = M;
    vl_status st = VL_OK;

    vl__sp_packing_reset(&rp->fwd);
    vl__sp_packing_reset(&rp->bwd);
    rp->nshared_f = rp->nshared_b = 0;
    rp->nops = 0;
    if (gi >= 0) {
        const sp_group *g = &w->groups[gi];
        uint32_t parts = outlier_parts(w, g, M), sample = w->samples[g->slot];
        st = outlier_packs(s, sample, len[sample], parts, false, &rp->fwd, err);
        if (st == VL_OK && asym)
            st = outlier_packs(s, sample, len[sample], parts, true, &rp->bwd, err);
        rp->nshared_f = (uint32_t)rp->fwd.npacks;
        rp->nshared_b = (uint32_t)rp->bwd.npacks;
        Mown = M > parts ? M - parts : 1;
    }
    if (st == VL_OK)
        st = vl__sp_forward(w, s, len, items, n, Mown, &rp->fwd, err);
    if (st == VL_OK && asym)
        st = vl__sp_backward(w, s, len, &rp->fwd, rp->nshared_f, Mown, &rp->bwd, err);
    return st;
}

double vl__sp_deviation(const sp_packing *pk, size_t p0, const sp_setting *s, bool fwd)
{
    double a = fwd ? s->coef.af : s->coef.ab, b = fwd ? s->coef.bf : s->coef.bb;
    double sum = 0, worst = 0;
    size_t n = pk->npacks > p0 ? pk->npacks - p0 : 0;

    if (n == 0)
        return 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t p = p0; p < pk->npacks; p++) {
            double wk = 0;
            for (uint32_t j = pk->start[p]; j < pk->start[p + 1]; j++)
                wk += vl__sp_work(a, b, pk->segs[j].off, pk->segs[j].off + pk->segs[j].len);
            if (pass == 0)
                sum += wk;
            else
                worst = fmax(worst, fabs(wk - sum / n) / (sum / n));
        }
    return worst;
}
