/* plans/baseline/baseline_pack_deal.c -- `pack`: what a pack costs under pack.balance,
 * and dealing one iteration's packs to the ranks by equal-count Karmarkar-Karp, and handing
 * them through the sample shift (baseline_pack_shift.c) to the plan (the
 * strategy is described in baseline_pack.c). */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"

void vl__pk_dealer_free(dealer *d)
{
    free(d->ids);
    free(d->w);
    free(d->part);
    free(d->by);
    free(d->cur);
    free(d->segs);
    memset(d, 0, sizeof *d);
}

vl_status vl__pk_dealer_init(dealer *d, size_t packs_max, size_t dp, vl_err *err)
{
    memset(d, 0, sizeof *d);
    d->cur = malloc(dp * sizeof *d->cur);
    if (d->cur == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu ranks", dp);
    return vl__pk_dealer_reserve(d, packs_max, err);
}

vl_status vl__pk_dealer_reserve(dealer *d, size_t want, vl_err *err)
{
    size_t n = want ? want : 1;
    size_t *ids, *by;
    double *w;
    int *part;

    if (n <= d->cap)
        return VL_OK;
    if ((ids = realloc(d->ids, n * sizeof *ids)) != NULL)
        d->ids = ids;
    if ((w = realloc(d->w, n * sizeof *w)) != NULL)
        d->w = w;
    if ((part = realloc(d->part, n * sizeof *part)) != NULL)
        d->part = part;
    if ((by = realloc(d->by, n * sizeof *by)) != NULL)
        d->by = by;
    if (ids == NULL || w == NULL || part == NULL || by == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", want);
    d->cap = n;
    return VL_OK;
}

/* ---- what a pack costs ------------------------------------------------------------ */

static vl_status pack_time(bl *c, dealer *d, const uint32_t *it, size_t k, double *out,
                           vl_err *err)
{
    const vl_par *par = &c->par;
    int pp = par->pp < 1 ? 1 : par->pp;

    if (k > d->nsegs_cap) {
        vl_seg *s = realloc(d->segs, k * sizeof *s);
        if (s == NULL)
            return vl_seterr(err, VL_ENOMEM, "out of memory costing a pack of %zu", k);
        d->segs = s;
        d->nsegs_cap = k;
    }
    for (size_t i = 0; i < k; i++) { /* a piece is independent: priced without prefix */
        vl_seg g = vl__bl_item_seg(&pk_ctx(c)->pieces, pk_ctx(c)->len, it[i]);
        d->segs[i] = (vl_seg){g.sample, 0, g.len};
    }
    vl_mb_time t = vl_cost_mb_time(c->job->cost, d->segs, k, par,
                                   vl_cost_stage_layers(c->job->cost, pp, 0), pp == 1);
    *out = t.fwd + t.bwd;
    return VL_OK;
}

vl_status vl__pk_time(bl *c, dealer *d, const uint32_t *it, size_t k, double *out, vl_err *err)
{
    const uint32_t *len = pk_ctx(c)->len;

    if (k > 0 && c->job->cost != NULL)
        return pack_time(c, d, it, k, out, err);
    *out = 0;
    for (size_t i = 0; i < k; i++)
        *out += len[it[i]];
    return VL_OK;
}

int vl__pk_primary(const bl *c)
{
    vl_pack_balance b = c->job->cfg->pack.balance;

    return b == VL_BALANCE_TOKENS      ? VL__PK_TOK
           : b == VL_BALANCE_ATTENTION ? VL__PK_ATT
                                       : VL__PK_TIME;
}

/* The weight pack.balance deals by; an empty pack weighs nothing. */
vl_status vl__pk_weight(bl *c, dealer *d, const uint32_t *it, size_t k, double *out,
                        vl_err *err)
{
    const uint32_t *len = pk_ctx(c)->len;
    double sum = 0;

    if (k == 0) {
        *out = 0;
        return VL_OK;
    }
    if (c->job->cfg->pack.balance == VL_BALANCE_TIME && c->job->cost != NULL)
        return pack_time(c, d, it, k, out, err);
    for (size_t i = 0; i < k; i++) /* tokens, also time without a cost model */
        sum += c->job->cfg->pack.balance == VL_BALANCE_ATTENTION ? vl_cost_pairs(0, len[it[i]])
                                                                 : (double)len[it[i]];
    *out = sum;
    return VL_OK;
}

/* ---- dealing one iteration's packs ------------------------------------------------ */

vl_status vl__pk_emit(bl *c, uint32_t cap, const uint32_t *items, size_t k, vl_err *err)
{
    const pack_ctx *x = pk_ctx(c);
    vl_status st = vl_plan_mb_begin(c->out, cap, err);

    for (size_t i = 0; i < k && st == VL_OK; i++) {
        vl_seg g = vl__bl_item_seg(&x->pieces, x->len, items[i]);
        st = vl_plan_seg(c->out, g.sample, g.off, g.len, err);
        c->tokens += g.len;
    }
    c->mbs++;
    c->slots += cap;
    c->empty += k == 0;
    return st;
}

/* The latest piece offset in a pack (0: none).  A split sample's full pieces fill a
 * pack each and only its last piece shares one, so running a rank's packs in this
 * order runs the pieces of every sample in token order, as a plan must. */
static uint32_t last_piece_off(const bl *c, const packs *pk, size_t q)
{
    const vl__bl_pieces *pc = &pk_ctx(c)->pieces;
    uint32_t m = 0;

    for (size_t i = 0; i < pk->cnt[q]; i++) {
        uint32_t it = pk->items[pk->off[q] + i];
        if (it >= pc->base && pc->off[it - pc->base] > m)
            m = pc->off[it - pc->base];
    }
    return m;
}

/* Do packs a and b hold pieces of one sample? */
static bool share_sample(const bl *c, const packs *pk, size_t a, size_t b)
{
    const vl__bl_pieces *pc = &pk_ctx(c)->pieces;

    for (size_t i = 0; i < pk->cnt[a]; i++) {
        uint32_t x = pk->items[pk->off[a] + i];
        if (x < pc->base)
            continue;
        for (size_t j = 0; j < pk->cnt[b]; j++) {
            uint32_t y = pk->items[pk->off[b] + j];
            if (y >= pc->base && pc->sample[y - pc->base] == pc->sample[x - pc->base])
                return true;
        }
    }
    return false;
}

/* Would pack ids[x] clash with a pack of rank r other than ids[skip]? */
static bool clashes(const bl *c, const dealer *d, const packs *pk, const size_t *ids,
                    size_t np, size_t x, int r, size_t skip)
{
    for (size_t y = 0; y < np; y++)
        if (y != x && y != skip && d->part[y] == r && share_sample(c, pk, ids[x], ids[y]))
            return true;
    return false;
}

/* Two pieces of one sample on one rank would read, in a plan, as slices of one sequence
 * (its state kept between them): move one away by swapping it with a pack of equal
 * weight on another rank where neither clashes.  Balance is unchanged; a clash with no
 * such partner stays (the model then prices the pieces as one sequence). */
static void spread_pieces(const bl *c, dealer *d, const packs *pk, const size_t *ids,
                          size_t np)
{
    for (size_t q = 0; q < np; q++) {
        if (!clashes(c, d, pk, ids, np, q, d->part[q], q))
            continue;
        for (size_t t = 0; t < np; t++) {
            int rq = d->part[q], rt = d->part[t];
            if (rt == rq || d->w[t] != d->w[q] || clashes(c, d, pk, ids, np, q, rt, t) ||
                clashes(c, d, pk, ids, np, t, rq, q))
                continue;
            d->part[q] = rt;
            d->part[t] = rq;
            break;
        }
    }
}

/* Stable insertion sort of one rank's packs by last_piece_off. */
static void order_pieces(const bl *c, const packs *pk, size_t *by, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = by[i], j = i;
        uint32_t kv = last_piece_off(c, pk, v);
        for (; j > 0 && last_piece_off(c, pk, by[j - 1]) > kv; j--)
            by[j] = by[j - 1];
        by[j] = v;
    }
}

/* Packs pk[ids[0 .. np)] (np = dp*m) are this iteration's (empty ones have cnt 0 and get
 * empty_cap slots): dealt by equal-count KK on their weights, rank r running the packs
 * it got in the order of ids. */
vl_status vl__pk_partition(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                           vl_err *err)
{
    vl_status st = VL_OK;

    for (size_t p = 0; p < np && st == VL_OK; p++) {
        if (pk->weight != NULL)
            d->w[p] = pk->weight[ids[p]];
        else
            st = vl__pk_weight(c, d, pk->items + pk->off[ids[p]], pk->cnt[ids[p]], &d->w[p],
                               err);
    }
    if (st != VL_OK ||
        (st = vl_partition_kk_equal(d->part, d->w, np, (int)c->dp, err)) != VL_OK)
        return st;
    if (pk_ctx(c)->pieces.n > 0)
        spread_pieces(c, d, pk, ids, np);
    return VL_OK;
}

vl_status vl__pk_emit_dealt(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                            uint32_t empty_cap, vl_err *err)
{
    size_t per = np / c->dp;
    vl_status st = VL_OK;

    for (size_t r = 0; r < c->dp; r++)
        d->cur[r] = r * per;
    for (size_t p = 0; p < np; p++)
        d->by[d->cur[d->part[p]]++] = ids[p];
    for (size_t r = 0; r < c->dp && st == VL_OK; r++) {
        if (pk_ctx(c)->pieces.n > 0)
            order_pieces(c, pk, d->by + r * per, per);
        st = vl_plan_rank_begin(c->out, (int)r, &c->par, err);
        for (size_t j = r * per; j < (r + 1) * per && st == VL_OK; j++) {
            size_t q = d->by[j];
            uint32_t cap = pk->cnt[q] ? c->t->max_seq_len : empty_cap;
            st = vl__pk_emit(c, cap, pk->items + pk->off[q], pk->cnt[q], err);
        }
    }
    return st;
}

vl_status vl__pk_deal(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                      uint32_t empty_cap, vl_err *err)
{
    vl_status st = vl__pk_partition(c, d, pk, ids, np, err);

    return st != VL_OK ? st : vl__pk_emit_dealt(c, d, pk, ids, np, empty_cap, err);
}

vl_pack_opts vl__pk_opts(const bl *c, uint64_t stream)
{
    const vl_pack_cfg *pc = &c->job->cfg->pack;
    vl_pack_opts po = {.algo = pc->algo,
                       .cap = c->t->max_seq_len,
                       .isf_iters = pc->isf_iters,
                       .isf_slack = pc->isf_slack,
                       .max_items = pc->max_samples};
    vl_rng r;

    vl_rng_seed(&r, c->job->seed, stream);
    po.seed = vl_rng_next(&r);
    return po;
}

/* ---- the dealt packs through the sample shift (baseline_pack_shift.c), then out ---- */

typedef struct timer_ctx {
    bl *c;
    dealer *d;
} timer_ctx;

static vl_status time_of(void *ctx, const uint32_t *items, size_t k, double *out, vl_err *err)
{
    timer_ctx *t = ctx;
    return vl__pk_time(t->c, t->d, items, k, out, err);
}

/* A copy of the iteration's packs in the order of ids (pack p on rank d->part[p]). */
static vl_status copy_packs(const packs *pk, const size_t *ids, size_t np, packs *out,
                            vl_err *err)
{
    size_t total = 0;

    for (size_t p = 0; p < np; p++)
        total += pk->cnt[ids[p]];
    out->n = np;
    out->items = malloc((total ? total : 1) * sizeof *out->items);
    out->off = malloc(np * sizeof *out->off);
    out->cnt = malloc(np * sizeof *out->cnt);
    out->load = NULL;
    if (out->items == NULL || out->off == NULL || out->cnt == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", np);
    for (size_t p = 0, pos = 0; p < np; p++) {
        memcpy(out->items + pos, pk->items + pk->off[ids[p]],
               pk->cnt[ids[p]] * sizeof(uint32_t));
        out->off[p] = pos;
        out->cnt[p] = pk->cnt[ids[p]];
        pos += out->cnt[p];
    }
    return VL_OK;
}

vl_status vl__pk_shift_emit(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                            vl_err *err)
{
    timer_ctx tc = {c, d};
    vl__pk_shift_in in = {.len = pk_ctx(c)->len,
                          .cap = c->t->max_seq_len,
                          .max_items = c->job->cfg->pack.max_samples,
                          .dp = c->dp,
                          .primary = vl__pk_primary(c),
                          .time = time_of,
                          .ctx = &tc,
                          .times = vl__pk_primary(c) == VL__PK_TIME ? d->w : NULL};
    packs local = {0};
    vl_status st = copy_packs(pk, ids, np, &local, err);

    vl__pk_linear_time(c, &in.a, &in.b);
    if (st == VL_OK)
        st = vl__pk_shift(&in, &local, d->part, err);
    for (size_t p = 0; p < np; p++)
        d->ids[p] = p;
    if (st == VL_OK)
        st = vl__pk_emit_dealt(c, d, &local, d->ids, np, 0, err);
    free(local.items);
    free(local.off);
    free(local.cnt);
    return st;
}
