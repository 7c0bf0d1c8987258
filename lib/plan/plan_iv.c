/* lib/plan/plan_iv.c -- a rank's packs as token intervals (plan.h), for the two places that
 * reason about slices: the simulator's dependencies (lib/model/sim_rank.c) and verify's
 * slice and backward-pack order (verify_order.c). */
#include <stdlib.h>

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

/* Total order: sample, direction, offset, pack. */
static int cmp_iv(const void *x, const void *y)
{
    const vl_interval *a = x, *b = y;

    if (a->sample != b->sample)
        return a->sample < b->sample ? -1 : 1;
    if (a->bwd != b->bwd)
        return a->bwd < b->bwd ? -1 : 1;
    if (a->off != b->off)
        return a->off < b->off ? -1 : 1;
    return (a->pack > b->pack) - (a->pack < b->pack);
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
                (*iv)[(*len)++] = (vl_interval){s[k].sample, s[k].off, s[k].off + s[k].len,
                                                j, bwd};
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
    if (*n > 1)
        qsort(*iv, *n, sizeof **iv, cmp_iv);
    return VL_OK;
}
