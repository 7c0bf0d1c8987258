/* plans/baseline/baseline_pieces.c -- training.oversize=split for the pack baseline
 * (baseline_pieces.h): the piece table, and items expanded into pieces.  A sample of L
 * tokens over the capacity C gives ceil(L / C) pieces [0, C), [C, 2C), ..., the last
 * one shorter; each is an independent sequence to the packer and the plan (a segment
 * [off, off + len) of the sample), so attention no longer spans the cut. */
#include "baseline_pieces.h"

#include <stdlib.h>
#include <string.h>

void vl__bl_pieces_free(vl__bl_pieces *pc)
{
    free(pc->len);
    free(pc->sample);
    free(pc->off);
    free(pc->first);
    memset(pc, 0, sizeof *pc);
}

vl_status vl__bl_pieces_build(vl__bl_pieces *pc, const vl_selection *sel, uint32_t base,
                              uint32_t cap, vl_err *err)
{
    uint64_t n = 0;

    memset(pc, 0, sizeof *pc);
    pc->base = base;
    for (size_t i = 0; i < sel->n; i++)
        if (sel->len[sel->idx[i]] > cap)
            n += (sel->len[sel->idx[i]] + (uint64_t)cap - 1) / cap;
    if ((uint64_t)base + n >= UINT32_MAX)
        return vl_seterr(err, VL_ECONFIG, "training.oversize=split: %llu pieces are too many",
                         (unsigned long long)n);
    pc->len = malloc(((size_t)base + n + 1) * sizeof *pc->len);
    pc->sample = malloc((n + 1) * sizeof *pc->sample);
    pc->off = malloc((n + 1) * sizeof *pc->off);
    pc->first = malloc(((size_t)base + 1) * sizeof *pc->first);
    if (!pc->len || !pc->sample || !pc->off || !pc->first) {
        vl__bl_pieces_free(pc);
        return vl_seterr(err, VL_ENOMEM, "out of memory splitting %llu pieces",
                         (unsigned long long)n);
    }
    memcpy(pc->len, sel->len, base * sizeof *pc->len);
    for (uint32_t s = 0; s < base; s++)
        pc->first[s] = UINT32_MAX;
    for (size_t i = 0; i < sel->n; i++) {
        uint32_t s = sel->idx[i], l = sel->len[s];
        if (l <= cap)
            continue;
        pc->first[s] = (uint32_t)pc->n;
        for (uint32_t o = 0; o < l; o += cap) {
            pc->sample[pc->n] = s;
            pc->off[pc->n] = o;
            pc->len[base + pc->n] = l - o < cap ? l - o : cap;
            pc->n++;
        }
    }
    return VL_OK;
}

void vl__bl_pieces_expand(const vl__bl_pieces *pc, const uint32_t *items, size_t n,
                          uint32_t *out, size_t *nout)
{
    size_t k = 0;

    if (pc->n == 0) { /* nothing split (pc->first may not exist) */
        memcpy(out, items, n * sizeof *out);
        *nout = n;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t s = items[i], j = pc->first[s];
        if (j == UINT32_MAX) {
            out[k++] = s;
            continue;
        }
        for (; j < pc->n && pc->sample[j] == s; j++)
            out[k++] = pc->base + j;
    }
    *nout = k;
}

vl_seg vl__bl_item_seg(const vl__bl_pieces *pc, const uint32_t *len, uint32_t it)
{
    if (pc == NULL || it < pc->base)
        return (vl_seg){it, 0, len[it]};
    return (vl_seg){pc->sample[it - pc->base], pc->off[it - pc->base], pc->len[it]};
}
