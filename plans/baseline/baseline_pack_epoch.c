/* plans/baseline/baseline_pack_epoch.c -- `pack` with pack.scope=epoch: the epoch (or
 * windows of it) packed at once, whole packs laid out into iterations (see
 * baseline_pack.c). */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"

/* Room for `need` packs in pk->off and pk->cnt (*cap_packs so far). */
static vl_status packs_reserve(packs *pk, size_t need, size_t *cap_packs, vl_err *err)
{
    size_t nc = 2 * need, *o, *q;

    if (need <= *cap_packs)
        return VL_OK;
    if ((o = realloc(pk->off, nc * sizeof *o)) != NULL)
        pk->off = o;
    if ((q = realloc(pk->cnt, nc * sizeof *q)) != NULL)
        pk->cnt = q;
    if (o == NULL || q == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", nc);
    *cap_packs = nc;
    return VL_OK;
}

/* Append window b (items order[pos..pos+m) packed) to pk, its packs in seeded order. */
static vl_status append_window(bl *c, packs *pk, const vl_bins *b, size_t pos, size_t m,
                               uint64_t tag, vl_err *err)
{
    uint32_t *perm = malloc((b->n ? b->n : 1) * sizeof *perm);
    vl_rng r;

    if (perm == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", b->n);
    vl_rng_seed(&r, c->job->seed, STREAM_ORDER ^ tag);
    for (size_t p = 0; p < b->n; p++)
        perm[p] = (uint32_t)p;
    vl_rng_shuffle_u32(&r, perm, b->n);
    memcpy(pk->items + pos, b->items, m * sizeof *b->items);
    for (size_t p = 0; p < b->n; p++) {
        pk->off[pk->n + p] = pos + b->start[perm[p]];
        pk->cnt[pk->n + p] = b->start[perm[p] + 1] - b->start[perm[p]];
    }
    pk->n += b->n;
    free(perm);
    return VL_OK;
}

/* Pack order[0..n) window by window into pk (items in all, off/cnt per pack, the packs
 * of each window shuffled), leaving room for dp padding packs; pk->n packs. */
static vl_status pack_windows(bl *c, const uint32_t *order, size_t n, packs *pk,
                              size_t *cap_packs, vl_err *err)
{
    uint64_t w = c->job->cfg->pack.window;
    size_t win = (w == 0 || w > n) ? n : (size_t)w, pos = 0;
    vl_status st = VL_OK;

    pk->n = 0;
    for (size_t k = 0; pos < n && st == VL_OK; k++) {
        size_t m = n - pos < win ? n - pos : win;
        uint64_t tag = ((uint64_t)c->epoch << 32) ^ (uint64_t)k;
        vl_pack_opts po = vl__pk_opts(c, STREAM_PACK ^ tag);
        vl_bins b;
        if ((st = vl_pack(&b, order + pos, m, pk_ctx(c)->len, &po, err)) != VL_OK)
            break;
        if ((st = packs_reserve(pk, pk->n + b.n + c->dp, cap_packs, err)) == VL_OK)
            st = append_window(c, pk, &b, pos, m, tag, err);
        vl_bins_free(&b);
        pos += m;
    }
    return st;
}

/* A slot of the stratified layout: its place in its iteration, as a fraction. */
typedef struct slot {
    double at;
    uint32_t iter;
    uint32_t k;
} slot;

static int cmp_slot(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return (x->iter > y->iter) - (x->iter < y->iter);
}

/* A pack in the stratified order: by cost, then by its first piece (sample, offset)
 * so that the equal-cost pieces of one sample sit side by side -- consecutive slots,
 * which lie in different iterations, or one KK group, whose members go to different
 * ranks: pieces of a sample share no rank, where a plan would read them as one
 * sequence's slices -- then by pack. */
typedef struct wpack {
    double w;
    uint64_t piece; /* sample << 32 | offset of its first piece; UINT64_MAX: none */
    size_t p;
} wpack;

static int cmp_wpack(const void *a, const void *b)
{
    const wpack *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    if (x->piece != y->piece)
        return x->piece < y->piece ? -1 : 1;
    return (x->p > y->p) - (x->p < y->p);
}

static uint64_t first_piece(const bl *c, const packs *pk, size_t q)
{
    const vl__bl_pieces *pc = &pk_ctx(c)->pieces;

    for (size_t i = 0; i < pk->cnt[q]; i++) {
        uint32_t it = pk->items[pk->off[q] + i];
        if (it >= pc->base)
            return (uint64_t)pc->sample[it - pc->base] << 32 | pc->off[it - pc->base];
    }
    return UINT64_MAX;
}

/* Is the epoch packed in windows (pack.window below its samples)? */
static bool windowed(const bl *c)
{
    return c->job->cfg->pack.window != 0 && c->job->cfg->pack.window < c->job->sel->n;
}

/* The epoch's layout: iteration i takes real[i] packs, written to ids from start[i].
 * Stratified (whole-epoch packing, where the sampler's order is gone anyway): packs
 * by cost, heaviest first, go to the iterations' slots in order of their fractional
 * position, so every iteration gets the same mix of heavy and light packs and each
 * rank one pack of every stratum; their weights kept in pk->weight (room for pk->n;
 * the empty packs after t weigh 0), where the dealing reads them.  Otherwise
 * (windows): consecutive, keeping order. */
static vl_status layout(bl *c, dealer *d, packs *pk, size_t t, size_t iters,
                        const size_t *real, const size_t *start, size_t *ids, vl_err *err)
{
    wpack *wp;
    slot *sl;
    vl_status st = VL_OK;

    if (windowed(c)) {
        for (size_t i = 0, p = 0; i < iters; i++)
            for (size_t k = 0; k < real[i]; k++)
                ids[start[i] + k] = p++;
        return VL_OK;
    }
    wp = malloc((t ? t : 1) * sizeof *wp);
    sl = malloc((t ? t : 1) * sizeof *sl);
    if (wp == NULL || sl == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory laying out %zu packs", t);
        goto done;
    }
    for (size_t p = 0; p < t && st == VL_OK; p++) {
        wp[p].p = p;
        wp[p].piece = first_piece(c, pk, p);
        st = vl__pk_weight(c, d, pk->items + pk->off[p], pk->cnt[p], &wp[p].w, err);
        pk->weight[p] = wp[p].w;
    }
    for (size_t p = t; p < pk->n; p++)
        pk->weight[p] = 0; /* empty: as vl__pk_weight weighs it */
    if (st != VL_OK)
        goto done;
    qsort(wp, t, sizeof *wp, cmp_wpack);
    for (size_t i = 0, j = 0; i < iters; i++)
        for (size_t k = 0; k < real[i]; k++, j++)
            sl[j] = (slot){((double)k + 0.5) / (double)real[i], (uint32_t)i, (uint32_t)k};
    qsort(sl, t, sizeof *sl, cmp_slot);
    for (size_t j = 0; j < t; j++)
        ids[start[sl[j].iter] + sl[j].k] = wp[j].p;
done:
    free(wp);
    free(sl);
    return st;
}

/* The epoch's packs into iterations: I = the sampler's batch count, at most R rounds of
 * dp packs, rounds spread evenly; the R*dp - T empty packs spread evenly too, so no
 * iteration carries all of them. */
static vl_status epoch_iterations(bl *c, packs *pk, size_t iters, size_t nitems, vl_err *err)
{
    size_t t = pk->n, rounds = (t + c->dp - 1) / c->dp, base, extra, empties;
    size_t *real = NULL, *start = NULL, *ids = NULL;
    dealer d = {0};
    vl_status st;

    if (t == 0)
        return VL_OK; /* no samples: no iterations, as in batch scope */
    iters = iters < 1 ? 1 : iters > rounds ? rounds : iters;
    base = rounds / iters;
    extra = rounds % iters;
    empties = rounds * c->dp - t;
    for (; pk->n < rounds * c->dp; pk->n++) { /* pack_windows left room for these */
        pk->off[pk->n] = nitems;
        pk->cnt[pk->n] = 0;
    }
    real = malloc(iters * sizeof *real);
    start = malloc((iters + 1) * sizeof *start);
    ids = malloc(pk->n * sizeof *ids);
    pk->weight = windowed(c) ? NULL : malloc(pk->n * sizeof *pk->weight);
    if (real == NULL || start == NULL || ids == NULL || (!windowed(c) && pk->weight == NULL)) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu iterations", iters);
        goto done;
    }
    start[0] = 0;
    for (size_t i = 0; i < iters; i++) {
        size_t slots = (base + (i < extra)) * c->dp;
        size_t e = empties / iters + (i < empties % iters); /* < dp <= slots */
        real[i] = slots - e;
        start[i + 1] = start[i] + slots;
        for (size_t k = 0; k < e; k++)
            ids[start[i] + real[i] + k] =
                t + empties / iters * i + (i < empties % iters ? i : empties % iters) + k;
    }
    if ((st = vl__pk_dealer_init(&d, (base + 1) * c->dp, c->dp, err)) != VL_OK ||
        (st = layout(c, &d, pk, t, iters, real, start, ids, err)) != VL_OK)
        goto done;
    for (size_t i = 0; i < iters && st == VL_OK; i++) {
        c->batch = i;
        c->iters++;
        if ((st = vl_plan_iter_begin(c->out, c->epoch, err)) == VL_OK)
            st = vl__pk_deal_iter(c, &d, pk, ids + start[i], start[i + 1] - start[i], err);
    }
done:
    vl__pk_dealer_free(&d);
    free(pk->weight);
    pk->weight = NULL;
    free(real);
    free(start);
    free(ids);
    return st;
}

vl_status vl__pk_epochs(bl *c, vl_err *err)
{
    const vl_selection *sel = c->job->sel;
    size_t room = sel->n + pk_ctx(c)->pieces.n + 1, cap_packs = 0, n;
    uint32_t *order = malloc((sel->n ? sel->n : 1) * sizeof *order);
    uint32_t *items = malloc(room * sizeof *items);
    packs pk = {.items = malloc(room * sizeof *pk.items)};
    vl_batches bt = {0};
    vl_status st = VL_OK;

    if (order == NULL || items == NULL || pk.items == NULL)
        st = vl_seterr(err, VL_ENOMEM, "out of memory ordering %zu samples", sel->n);
    for (int e = 0; e < c->t->epochs && st == VL_OK; e++) {
        c->epoch = (uint32_t)e;
        vl_epoch_order(sel, c->job->seed, c->epoch, order);
        if ((st = vl_make_batches(&bt, order, sel->n, sel->len, c->t, err)) != VL_OK)
            break;
        vl__bl_pieces_expand(&pk_ctx(c)->pieces, order, sel->n, items, &n);
        if ((st = pack_windows(c, items, n, &pk, &cap_packs, err)) == VL_OK)
            st = epoch_iterations(c, &pk, bt.n, n, err);
        vl_batches_free(&bt);
    }
    free(order);
    free(items);
    free(pk.items);
    free(pk.off);
    free(pk.cnt);
    return st;
}
