/* plans/baseline/baseline_pack_batch.c -- `pack` with pack.scope=batch: each global
 * batch packed on its own, packs split until their count is a multiple of dp (see
 * baseline_pack.c). */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"
#include "iheap.h"

/* Split pack p: its samples, longest first (ties by index), each onto the lighter half;
 * the first half stays p, the second becomes pack q. */
static vl_status split_pack(packs *pk, size_t p, size_t q, const uint32_t *len, vl_err *err)
{
    uint32_t *it = pk->items + pk->off[p];
    size_t k = pk->cnt[p], na = 0, nb = 0;
    uint64_t *key = malloc(k * sizeof *key), la = 0, lb = 0;
    uint32_t *tmp = malloc(k * sizeof *tmp);

    if (key == NULL || tmp == NULL) {
        free(key);
        free(tmp);
        return vl_seterr(err, VL_ENOMEM, "out of memory splitting a pack of %zu", k);
    }
    for (size_t i = 0; i < k; i++)
        key[i] = ((uint64_t)(UINT32_MAX - len[it[i]]) << 32) | it[i];
    vl_sort_u64(key, k);
    for (size_t i = 0; i < k; i++) {
        uint32_t s = (uint32_t)key[i];
        if (la <= lb && !(i == k - 1 && nb == 0)) { /* keep both halves non-empty */
            it[na++] = s;
            la += len[s];
        } else {
            tmp[nb++] = s;
            lb += len[s];
        }
    }
    memcpy(it + na, tmp, nb * sizeof *tmp);
    pk->cnt[p] = na;
    pk->load[p] = (double)la;
    pk->off[q] = pk->off[p] + na;
    pk->cnt[q] = nb;
    pk->load[q] = (double)lb;
    free(key);
    free(tmp);
    return VL_OK;
}

/* The packs holding two or more samples are kept in a heap, fullest first, lower index
 * on ties: the pack the split rule names is always on top (what a scan of every pack per
 * split found, in O(log P) instead of O(P): 262,144 ranks took 24 s that way). */
static int split_before(const void *ctx, size_t a, size_t b)
{
    const packs *pk = ctx;
    double la = pk->load[a], lb = pk->load[b];

    return la > lb || (la == lb && a < b);
}

/* Grow the pack count to `target` by splits, then by empty packs. */
static vl_status equalize(bl *c, packs *pk, size_t target, size_t nitems, vl_err *err)
{
    vl_iheap q;
    vl_status st = vl_iheap_init(&q, target, split_before, pk, err);

    if (st != VL_OK)
        return st;
    for (size_t p = 0; p < pk->n; p++)
        if (pk->cnt[p] >= 2)
            vl_iheap_push(&q, p);
    while (pk->n < target && q.n > 0 && st == VL_OK) {
        size_t p = vl_iheap_pop(&q), nq = pk->n++;
        if ((st = split_pack(pk, p, nq, pk_ctx(c)->len, err)) != VL_OK)
            break;
        c->splits++;
        if (pk->cnt[p] >= 2)
            vl_iheap_push(&q, p);
        if (pk->cnt[nq] >= 2)
            vl_iheap_push(&q, nq);
    }
    for (; pk->n < target && st == VL_OK; pk->n++) {
        pk->off[pk->n] = nitems;
        pk->cnt[pk->n] = 0;
        pk->load[pk->n] = 0;
    }
    vl_iheap_free(&q);
    return st;
}

static vl_status packs_alloc(packs *pk, size_t n, vl_err *err)
{
    pk->off = malloc((n ? n : 1) * sizeof *pk->off);
    pk->cnt = malloc((n ? n : 1) * sizeof *pk->cnt);
    pk->load = malloc((n ? n : 1) * sizeof *pk->load);
    if (!pk->off || !pk->cnt || !pk->load)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", n);
    return VL_OK;
}

static void packs_free(packs *pk)
{
    free(pk->off);
    free(pk->cnt);
    free(pk->load);
}

vl_status vl__pk_batch(bl *c, const uint32_t *samples, size_t ns, vl_err *err)
{
    vl_pack_opts po = vl__pk_opts(c, vl__bl_stream(c, STREAM_PACK));
    const vl__bl_pieces *pc = &pk_ctx(c)->pieces;
    uint32_t *items = malloc((ns + pc->n + 1) * sizeof *items);
    vl_bins bins;
    packs pk = {0};
    dealer d = {0};
    size_t target, n;
    vl_status st;

    if (items == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for a batch of %zu", ns);
    vl__bl_pieces_expand(pc, samples, ns, items, &n);
    st = vl_pack(&bins, items, n, pk_ctx(c)->len, &po, err);
    free(items);
    if (st != VL_OK)
        return st;
    target = (bins.n + c->dp - 1) / c->dp * c->dp;
    target = target ? target : c->dp;
    pk.items = bins.items;
    pk.n = bins.n;
    if ((st = packs_alloc(&pk, target, err)) != VL_OK ||
        (st = vl__pk_dealer_init(&d, target, c->dp, err)) != VL_OK)
        goto done;
    for (size_t p = 0; p < bins.n; p++) {
        pk.off[p] = bins.start[p];
        pk.cnt[p] = bins.start[p + 1] - bins.start[p];
        pk.load[p] = (double)bins.load[p];
    }
    if ((st = equalize(c, &pk, target, n, err)) == VL_OK) {
        for (size_t p = 0; p < pk.n; p++)
            d.ids[p] = p;
        st = vl__pk_deal(c, &d, &pk, d.ids, pk.n, c->t->max_seq_len, err);
    }
done:
    packs_free(&pk);
    vl__pk_dealer_free(&d);
    vl_bins_free(&bins);
    return st;
}
