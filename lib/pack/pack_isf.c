/* lib/pack/pack_isf.c -- OmniBal's iterative sampling and filtering (ISF), the baseline
 * packer of HBP, as docs/strategies.md §2 reads it from ModelTC/OmniBal:
 *
 *   pass 0      shuffle all items, next-fit them into packs of at most cap tokens;
 *   pass 1..C-1 keep every pack with load >= cap - slack, dissolve the rest into
 *               leftovers (in pack order), shuffle those with a new seed, next-fit again;
 *   after C passes the last pass's packs are all kept, whatever their load.
 *
 * Next fit: append to the open pack; when an item would push it past cap, close it and
 * open a new pack with that item.  Exactly C next-fit passes run at most (OmniBal's loop
 * never exits early); we stop once nothing is left, which changes no pack.  O(C*n).
 * Deviations, both deliberate: the tail pack of every pass is always emitted (OmniBal
 * loses it when the last shuffled item was an oversize one), and oversize items are an
 * error in vl_pack (OmniBal drops them silently; here the sampler's oversize policy has
 * already dealt with them).  Pass p shuffles with stream VL_PK_STREAM_ISF + p of the pack
 * seed, where OmniBal reseeds NumPy with seed, seed, seed+1, ...: same role, and the
 * permutations could not match NumPy's anyway. */
#include "pack_impl.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"

typedef struct isf {
    uint32_t cap;
    uint32_t max_items; /* items per pack at most, 0: no limit */
    uint64_t thresh;    /* a pack with at least this load is accepted */
    vl_bins *out;       /* accepted packs so far; items filled to start[n] */
    size_t bins_cap;
    uint64_t *left; /* dissolved (length, item) pairs of this pass */
    size_t nleft;
} isf;

static vl_status grow_bins(isf *s, vl_err *err)
{
    size_t nc = s->bins_cap ? 2 * s->bins_cap : 64;
    size_t *st =
        vl_big_realloc(s->out->start, (s->bins_cap + 1) * sizeof *st, (nc + 1) * sizeof *st);

    if (st == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", nc);
    s->out->start = st;
    uint64_t *ld = vl_big_realloc(s->out->load, s->bins_cap * sizeof *ld, nc * sizeof *ld);
    if (ld == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", nc);
    s->out->load = ld;
    s->bins_cap = nc;
    return VL_OK;
}

/* A pack closed by next fit: keep it (final pass, or full enough) or dissolve it. */
static vl_status close_pack(isf *s, const uint64_t *pk, size_t k, uint64_t load, bool final,
                            vl_err *err)
{
    vl_bins *o = s->out;
    vl_status st;

    if (!final && load < s->thresh) {
        memcpy(s->left + s->nleft, pk, k * sizeof *pk);
        s->nleft += k;
        return VL_OK;
    }
    if (o->n == s->bins_cap && (st = grow_bins(s, err)) != VL_OK)
        return st;
    for (size_t j = 0; j < k; j++)
        o->items[o->start[o->n] + j] = VL_PK_ITEM(pk[j]);
    o->load[o->n] = load;
    o->start[o->n + 1] = o->start[o->n] + k;
    o->n++;
    return VL_OK;
}

static vl_status next_fit_pass(isf *s, const uint64_t *cur, size_t n, bool final, vl_err *err)
{
    size_t first = 0;
    uint64_t load = 0;
    vl_status st;

    for (size_t i = 0; i < n; i++) {
        uint32_t l = VL_PK_LEN(cur[i]);
        if (i > first && (load + l > s->cap || (s->max_items && i - first == s->max_items))) {
            if ((st = close_pack(s, cur + first, i - first, load, final, err)) != VL_OK)
                return st;
            first = i;
            load = 0;
        }
        load += l;
    }
    if (n > first) /* the tail pack, emitted unconditionally (OmniBal may lose it) */
        return close_pack(s, cur + first, n - first, load, final, err);
    return VL_OK;
}

vl_status vl__pk_isf(vl_bins *out, uint64_t *work, size_t n, const vl_pack_opts *o,
                     vl_err *err)
{
    int passes = o->isf_iters < 1 ? 1 : o->isf_iters;
    isf s = {.cap = o->cap, .max_items = o->max_items, .out = out};
    uint64_t *cur = work;
    vl_status st = VL_OK;

    s.thresh = o->cap > o->isf_slack ? (uint64_t)o->cap - o->isf_slack : 0;
    out->items = vl_big_malloc((n ? n : 1) * sizeof *out->items);
    s.left = vl_big_malloc((n ? n : 1) * sizeof *s.left);
    if (out->items == NULL || s.left == NULL || (st = grow_bins(&s, err)) != VL_OK) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
        goto done;
    }
    out->start[0] = 0;
    for (int p = 0; p < passes && n > 0; p++) {
        vl__pk_shuffle(cur, n, o->seed, VL_PK_STREAM_ISF + (uint64_t)p);
        s.nleft = 0;
        if ((st = next_fit_pass(&s, cur, n, p == passes - 1, err)) != VL_OK)
            goto done;
        uint64_t *t = cur; /* the leftovers become the next pass's input */
        cur = s.left;
        s.left = t;
        n = s.nleft;
    }
done:
    /* s.left is either the caller's work buffer or ours; free only ours. */
    free(cur == work ? s.left : cur);
    if (st != VL_OK)
        vl_bins_free(out);
    return st;
}
