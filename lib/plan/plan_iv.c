/* lib/plan/plan_iv.c -- a rank's packs as token intervals (plan.h), for the two places that
 * reason about slices: the simulator's dependencies (lib/model/sim_rank.c) and verify's
 * slice and backward-pack order (verify_order.c). */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "plan.h"

bool vl_plan_rank_sliced(const vl_plan *p, const vl_rank *rk)
{
    for (uint32_t j = 0; j < rk->nmb; j++) {
        const vl_mb *mb = &p->mbs[rk->mb0 + j];
        const vl_seg *s = vl_plan_mb_segs(p, mb);
        for (uint32_t k = 0; k < mb->nseg; k++)
            if (s[k].off > 0)
                return true;
    }
    return false;
}

/* Total order: sample, direction, offset, pack ("a before b"). */
static bool iv_before(const vl_interval *a, const vl_interval *b)
{
    if (a->sample != b->sample)
        return a->sample < b->sample;
    if (a->bwd != b->bwd)
        return a->bwd < b->bwd;
    if (a->off != b->off)
        return a->off < b->off;
    return a->pack < b->pack;
}

static void insertion_sort(vl_interval *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        vl_interval x = v[i];
        size_t j = i;
        for (; j > 0 && iv_before(&x, &v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static void merge(const vl_interval *a, size_t na, const vl_interval *b, size_t nb,
                  vl_interval *out)
{
    size_t i = 0, j = 0, k = 0;

    while (i < na && j < nb)
        out[k++] = iv_before(&b[j], &a[i]) ? b[j++] : a[i++];
    while (i < na)
        out[k++] = a[i++];
    while (j < nb)
        out[k++] = b[j++];
}

/* A stable merge sort of v[0, n) through tmp[0, n), typed so that comparisons and moves
 * inline: the simulator sorts every rank's intervals each time it runs an iteration,
 * and qsort's calls and byte-wise moves were half of SlimPack's search.  iv_before
 * orders any two intervals that differ in a compared field; exact ties (only in an
 * invalid plan, which verify reports) keep their input order, so the result never
 * depends on a library's sort. */
static void sort_intervals(vl_interval *v, vl_interval *tmp, size_t n)
{
    enum { RUN = 16 };
    vl_interval *src = v, *dst = tmp;

    for (size_t i = 0; i < n; i += RUN)
        insertion_sort(v + i, n - i < RUN ? n - i : RUN);
    for (size_t width = RUN; width < n; width *= 2) {
        for (size_t i = 0; i < n; i += 2 * width) {
            size_t na = n - i < width ? n - i : width;
            size_t nb = n - i - na < width ? n - i - na : width;
            merge(src + i, na, src + i + na, nb, dst + i);
        }
        vl_interval *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Stable LSD radix sort of v[0, n) on the sample through tmp[0, n), then a stable
 * insertion sort of each run of one sample (a sample has few intervals).  Both passes
 * are stable and iv_before is a total order but for exact ties, so the result is the
 * one sort_intervals gives, at O(n) instead of O(n log n) comparisons: the simulator
 * sorts every rank's intervals of every SlimPack candidate. */
static void radix_intervals(vl_interval *v, vl_interval *tmp, size_t n)
{
    enum { BITS = 8, BUCKETS = 1 << BITS };
    uint32_t cnt[BUCKETS], most = 0;
    vl_interval *src = v, *dst = tmp;

    for (size_t i = 0; i < n; i++)
        most |= v[i].sample;
    for (unsigned shift = 0; shift < 32 && (shift == 0 || most >> shift); shift += BITS) {
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < n; i++)
            cnt[(src[i].sample >> shift) & (BUCKETS - 1)]++;
        for (uint32_t b = 0, sum = 0; b < BUCKETS; b++) {
            uint32_t c = cnt[b];
            cnt[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[(src[i].sample >> shift) & (BUCKETS - 1)]++] = src[i];
        vl_interval *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && v[j].sample == v[i].sample; j++)
            ;
        if (j - i > 1)
            insertion_sort(v + i, j - i);
    }
}

static vl_status add_packs(const vl_plan *p, uint64_t first, uint32_t n, uint8_t bwd,
                           vl_interval **iv, size_t *cap, size_t *len, vl_err *err)
{
    vl_status st;

    for (uint32_t j = 0; j < n; j++) {
        const vl_mb *mb = &p->mbs[first + j];
        const vl_seg *s = vl_plan_mb_segs(p, mb);
        if ((st = vl_grow(iv, cap, *len + mb->nseg, sizeof **iv, err)) != VL_OK)
            return st;
        for (uint32_t k = 0; k < mb->nseg; k++)
            if (s[k].sample != VL_SAMPLE_UNKNOWN && s[k].len > 0)
                (*iv)[(*len)++] =
                    (vl_interval){s[k].sample, s[k].off, s[k].off + s[k].len, j, bwd};
    }
    return VL_OK;
}

vl_status vl_plan_rank_intervals(const vl_plan *p, const vl_rank *rk, vl_interval **iv,
                                 size_t *cap, size_t *n, vl_err *err)
{
    vl_status st;

    *n = 0;
    if ((st = add_packs(p, rk->mb0, rk->nmb, 0, iv, cap, n, err)) != VL_OK ||
        (st = add_packs(p, rk->mb0 + rk->nmb, rk->nbwd, 1, iv, cap, n, err)) != VL_OK)
        return st;
    /* the upper half of the buffer is the merge sort's scratch */
    if (*n > 1 && (st = vl_grow(iv, cap, 2 * *n, sizeof **iv, err)) != VL_OK)
        return st;
    /* radix pays for its bucket passes from some 64 intervals on (callgrind, 20K samples) */
    if (*n > 64)
        radix_intervals(*iv, *iv + *n, *n);
    else if (*n > 1)
        sort_intervals(*iv, *iv + *n, *n);
    return VL_OK;
}

/* Group v[0, n) by sample through tmp[0, n): the samples in the order they first appear
 * (an open-addressing table finds a sample's group), each group stable-sorted by
 * iv_before.  Linear in n: a radix sort on the sample takes three bucket passes from
 * 64K samples on, which cost more than the few hundred intervals a rank holds.  tab:
 * the table and counts, kept by the caller across calls. */
static vl_status group_intervals(vl_interval *v, vl_interval *tmp, size_t n, uint32_t **tab,
                                 size_t *tab_cap, vl_err *err)
{
    size_t size = 16;
    vl_status st;

    while (size < 2 * n)
        size *= 2;
    /* key[size] (sample + 1, 0 = free), grp[size], of[n] (group of v[i]), at[n + 1] */
    if ((st = vl_grow(tab, tab_cap, 2 * size + 2 * n + 1, sizeof **tab, err)) != VL_OK)
        return st;
    uint32_t *key = *tab, *grp = key + size, *of = grp + size, *at = of + n, ngrp = 0;

    memset(key, 0, size * sizeof *key);
    at[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = v[i].sample + 1; /* VL_SAMPLE_UNKNOWN is never an interval */
        size_t h = (k * 2654435761u) & (size - 1);
        while (key[h] != 0 && key[h] != k)
            h = (h + 1) & (size - 1);
        if (key[h] == 0) {
            key[h] = k;
            grp[h] = ngrp;
            at[++ngrp] = 0;
        }
        of[i] = grp[h];
        at[grp[h] + 1]++;
    }
    for (uint32_t g = 0; g < ngrp; g++)
        at[g + 1] += at[g];
    for (size_t i = 0; i < n; i++)
        tmp[at[of[i]]++] = v[i];
    for (uint32_t g = 0, start = 0; g < ngrp; start = at[g++])
        insertion_sort(tmp + start, at[g] - start);
    memcpy(v, tmp, n * sizeof *v);
    return VL_OK;
}

vl_status vl_plan_rank_intervals_grouped(const vl_plan *p, const vl_rank *rk, vl_interval **iv,
                                         size_t *cap, size_t *n, uint32_t **tab,
                                         size_t *tab_cap, vl_err *err)
{
    vl_status st;

    *n = 0;
    if ((st = add_packs(p, rk->mb0, rk->nmb, 0, iv, cap, n, err)) != VL_OK ||
        (st = add_packs(p, rk->mb0 + rk->nmb, rk->nbwd, 1, iv, cap, n, err)) != VL_OK)
        return st;
    if (*n < 2)
        return VL_OK;
    if ((st = vl_grow(iv, cap, 2 * *n, sizeof **iv, err)) != VL_OK)
        return st;
    return group_intervals(*iv, *iv + *n, *n, tab, tab_cap, err);
}
