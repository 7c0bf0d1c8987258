/* plans/baseline/baseline_pack.c -- the `pack` baseline: plain packing with pack.algo
 * (lib/pack/pack.c) into micro-batches of training.max_seq_len tokens, dealt to the
 * training.dp ranks.
 *
 * pack.scope: epoch (default).  The epoch's seeded order (vl_epoch_order) is cut into
 *   windows of pack.window samples (0: one window, the whole epoch); each window is
 *   packed on its own and its packs are shuffled with the seed, so a window keeps the
 *   randomness of its place in the order.  The epoch's T packs then go to I iterations
 *   as whole packs, dp x m_i of them per iteration: I is the number of global batches
 *   the sampler cuts the epoch into (training.global_batch or global_tokens), at most
 *   R = ceil(T / dp) rounds of dp packs; the R rounds are spread over the I iterations
 *   as evenly as they go (the first R mod I get one more).  With windows the packs fill
 *   the iterations in order; packing the whole epoch leaves no order to keep, so there
 *   they are stratified by cost (heaviest first, each iteration the same share of every
 *   stratum: layout()).  No pack is split: the R*dp - T missing packs are empty
 *   micro-batches of capacity 0 (no token slots; the rank idles, which the balance
 *   figures show), spread over the iterations.  So iterations hold about equal tokens,
 *   not exactly training.global_batch samples.  O(n log n) per epoch plus the packer.
 * pack.scope: batch (the behaviour before epoch packing).  Each global batch is packed
 *   on its own.  Equal micro-batch counts: while the pack count is not a multiple of dp,
 *   the fullest pack holding two or more samples (lowest index on ties; a max-heap, so
 *   O(P log P) however many splits) is split in two (its samples, longest first, onto
 *   the lighter half) -- whole samples only, never slices.  Only when every pack holds
 *   a single sample and the count is still short (a batch smaller than dp) are empty
 *   micro-batches added (0 tokens, their cap of max_seq_len counts as padding).
 * Dealing (both scopes): the packs of an iteration go to ranks by equal-count
 *   Karmarkar-Karp (lib/pack/partition.c, veRL's equal_size) on each pack's cost under
 *   pack.balance: time (default: the cost model's forward + backward time of the pack
 *   on the first pipeline stage, attention included; tokens when no cost model),
 *   tokens (Σ len), or attention (causal query-key pairs Σ len(len+1)/2).  A rank runs
 *   its packs in pack order.
 * Seeds: every random step draws from (seed, tag ^ epoch<<32 ^ batch-or-window). */
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"
#include "baseline_pieces.h"
#include "iheap.h"

#define STREAM_PACK 0x5041434B00000000ull     /* "PACK": the packer's seed */
#define STREAM_ORDER 0x504B4F5200000000ull    /* "PKOR": the packs' order in a window */

/* What every pack function reads besides bl: item lengths and, under
 * training.oversize=split, the pieces (items >= pieces.base).  Passed as bl.opts. */
typedef struct pack_ctx {
    const uint32_t *len;
    vl__bl_pieces pieces;
} pack_ctx;

static const pack_ctx *ctx_of(const bl *c)
{
    return c->opts;
}

/* Packs as ranges of one item array, so a split only reorders inside a range. */
typedef struct packs {
    uint32_t *items;      /* the packer's output, reordered by splits */
    size_t *off, *cnt;
    double *load;         /* tokens */
    size_t n;
} packs;

/* Dealing scratch: what one iteration's packs cost, and who runs them. */
typedef struct dealer {
    size_t *ids;          /* the packs of the iteration, in order */
    double *w;
    int *part;
    size_t *by, *cur;
    vl_seg *segs;
    size_t nsegs_cap;
} dealer;

static void dealer_free(dealer *d)
{
    free(d->ids);
    free(d->w);
    free(d->part);
    free(d->by);
    free(d->cur);
    free(d->segs);
    memset(d, 0, sizeof *d);
}

static vl_status dealer_init(dealer *d, size_t packs_max, size_t dp, vl_err *err)
{
    memset(d, 0, sizeof *d);
    d->ids = malloc((packs_max ? packs_max : 1) * sizeof *d->ids);
    d->w = malloc((packs_max ? packs_max : 1) * sizeof *d->w);
    d->part = malloc((packs_max ? packs_max : 1) * sizeof *d->part);
    d->by = malloc((packs_max ? packs_max : 1) * sizeof *d->by);
    d->cur = malloc(dp * sizeof *d->cur);
    if (!d->ids || !d->w || !d->part || !d->by || !d->cur) {
        dealer_free(d);
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", packs_max);
    }
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
    for (size_t i = 0; i < k; i++) {   /* a piece is independent: priced without prefix */
        vl_seg g = vl__bl_item_seg(&ctx_of(c)->pieces, ctx_of(c)->len, it[i]);
        d->segs[i] = (vl_seg){g.sample, 0, g.len};
    }
    vl_mb_time t = vl_cost_mb_time(c->job->cost, d->segs, k, par,
                                   vl_cost_stage_layers(c->job->cost, pp, 0), pp == 1);
    *out = t.fwd + t.bwd;
    return VL_OK;
}

/* The weight pack.balance deals by; an empty pack weighs nothing. */
static vl_status pack_weight(bl *c, dealer *d, const uint32_t *it, size_t k, double *out,
                             vl_err *err)
{
    const uint32_t *len = ctx_of(c)->len;
    double sum = 0;

    if (k == 0) {
        *out = 0;
        return VL_OK;
    }
    if (c->job->cfg->pack.balance == VL_BALANCE_TIME && c->job->cost != NULL)
        return pack_time(c, d, it, k, out, err);
    for (size_t i = 0; i < k; i++)   /* tokens, also time without a cost model */
        sum += c->job->cfg->pack.balance == VL_BALANCE_ATTENTION ? vl_cost_pairs(0, len[it[i]])
                                                                 : (double)len[it[i]];
    *out = sum;
    return VL_OK;
}

/* ---- dealing one iteration's packs ------------------------------------------------ */

/* A micro-batch of cap slots holding items[0..k): whole samples and pieces. */
static vl_status emit_pack(bl *c, uint32_t cap, const uint32_t *items, size_t k, vl_err *err)
{
    const pack_ctx *x = ctx_of(c);
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
    const vl__bl_pieces *pc = &ctx_of(c)->pieces;
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
    const vl__bl_pieces *pc = &ctx_of(c)->pieces;

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
static bool clashes(const bl *c, const dealer *d, const packs *pk, const size_t *ids, size_t np,
                    size_t x, int r, size_t skip)
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
static vl_status deal(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                      uint32_t empty_cap, vl_err *err)
{
    size_t per = np / c->dp;
    vl_status st = VL_OK;

    for (size_t p = 0; p < np && st == VL_OK; p++)
        st = pack_weight(c, d, pk->items + pk->off[ids[p]], pk->cnt[ids[p]], &d->w[p], err);
    if (st != VL_OK || (st = vl_partition_kk_equal(d->part, d->w, np, (int)c->dp, err)) != VL_OK)
        return st;
    if (ctx_of(c)->pieces.n > 0)
        spread_pieces(c, d, pk, ids, np);
    for (size_t r = 0; r < c->dp; r++)
        d->cur[r] = r * per;
    for (size_t p = 0; p < np; p++)
        d->by[d->cur[d->part[p]]++] = ids[p];
    for (size_t r = 0; r < c->dp && st == VL_OK; r++) {
        if (ctx_of(c)->pieces.n > 0)
            order_pieces(c, pk, d->by + r * per, per);
        st = vl_plan_rank_begin(c->out, (int)r, &c->par, err);
        for (size_t j = r * per; j < (r + 1) * per && st == VL_OK; j++) {
            size_t q = d->by[j];
            uint32_t cap = pk->cnt[q] ? c->t->max_seq_len : empty_cap;
            st = emit_pack(c, cap, pk->items + pk->off[q], pk->cnt[q], err);
        }
    }
    return st;
}

/* ---- batch scope: pack each global batch, split packs to a multiple of dp ---------- */

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
        if (la <= lb && !(i == k - 1 && nb == 0)) {   /* keep both halves non-empty */
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
        if ((st = split_pack(pk, p, nq, ctx_of(c)->len, err)) != VL_OK)
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

static vl_pack_opts pack_opts(const bl *c, uint64_t stream)
{
    const vl_pack_cfg *pc = &c->job->cfg->pack;
    vl_pack_opts po = {.algo = pc->algo, .cap = c->t->max_seq_len, .isf_iters = pc->isf_iters,
                       .isf_slack = pc->isf_slack, .max_items = pc->max_samples};
    vl_rng r;

    vl_rng_seed(&r, c->job->seed, stream);
    po.seed = vl_rng_next(&r);
    return po;
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

static vl_status pack_batch(bl *c, const uint32_t *samples, size_t ns, vl_err *err)
{
    vl_pack_opts po = pack_opts(c, vl__bl_stream(c, STREAM_PACK));
    const vl__bl_pieces *pc = &ctx_of(c)->pieces;
    uint32_t *items = malloc((ns + pc->n + 1) * sizeof *items);
    vl_bins bins;
    packs pk = {0};
    dealer d = {0};
    size_t target, n;
    vl_status st;

    if (items == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for a batch of %zu", ns);
    vl__bl_pieces_expand(pc, samples, ns, items, &n);
    st = vl_pack(&bins, items, n, ctx_of(c)->len, &po, err);
    free(items);
    if (st != VL_OK)
        return st;
    target = (bins.n + c->dp - 1) / c->dp * c->dp;
    target = target ? target : c->dp;
    pk.items = bins.items;
    pk.n = bins.n;
    if ((st = packs_alloc(&pk, target, err)) != VL_OK ||
        (st = dealer_init(&d, target, c->dp, err)) != VL_OK)
        goto done;
    for (size_t p = 0; p < bins.n; p++) {
        pk.off[p] = bins.start[p];
        pk.cnt[p] = bins.start[p + 1] - bins.start[p];
        pk.load[p] = (double)bins.load[p];
    }
    if ((st = equalize(c, &pk, target, n, err)) == VL_OK) {
        for (size_t p = 0; p < pk.n; p++)
            d.ids[p] = p;
        st = deal(c, &d, &pk, d.ids, pk.n, c->t->max_seq_len, err);
    }
done:
    packs_free(&pk);
    dealer_free(&d);
    vl_bins_free(&bins);
    return st;
}

/* ---- epoch scope: pack the epoch (or windows of it), whole packs into iterations ---- */

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
        vl_pack_opts po = pack_opts(c, STREAM_PACK ^ tag);
        vl_bins b;
        if ((st = vl_pack(&b, order + pos, m, ctx_of(c)->len, &po, err)) != VL_OK)
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
    uint64_t piece;       /* sample << 32 | offset of its first piece; UINT64_MAX: none */
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
    const vl__bl_pieces *pc = &ctx_of(c)->pieces;

    for (size_t i = 0; i < pk->cnt[q]; i++) {
        uint32_t it = pk->items[pk->off[q] + i];
        if (it >= pc->base)
            return (uint64_t)pc->sample[it - pc->base] << 32 | pc->off[it - pc->base];
    }
    return UINT64_MAX;
}

/* The epoch's layout: iteration i takes real[i] packs, written to ids from start[i].
 * Stratified (whole-epoch packing, where the sampler's order is gone anyway): packs
 * by cost, heaviest first, go to the iterations' slots in order of their fractional
 * position, so every iteration gets the same mix of heavy and light packs and each
 * rank one pack of every stratum.  Otherwise (windows): consecutive, keeping order. */
static vl_status layout(bl *c, dealer *d, const packs *pk, size_t t, size_t iters,
                        const size_t *real, const size_t *start, size_t *ids, vl_err *err)
{
    wpack *wp;
    slot *sl;
    vl_status st = VL_OK;

    if (c->job->cfg->pack.window != 0 && c->job->cfg->pack.window < c->job->sel->n) {
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
        st = pack_weight(c, d, pk->items + pk->off[p], pk->cnt[p], &wp[p].w, err);
    }
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
        return VL_OK;   /* no samples: no iterations, as in batch scope */
    iters = iters < 1 ? 1 : iters > rounds ? rounds : iters;
    base = rounds / iters;
    extra = rounds % iters;
    empties = rounds * c->dp - t;
    for (; pk->n < rounds * c->dp; pk->n++) {   /* pack_windows left room for these */
        pk->off[pk->n] = nitems;
        pk->cnt[pk->n] = 0;
    }
    real = malloc(iters * sizeof *real);
    start = malloc((iters + 1) * sizeof *start);
    ids = malloc(pk->n * sizeof *ids);
    if (real == NULL || start == NULL || ids == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu iterations", iters);
        goto done;
    }
    start[0] = 0;
    for (size_t i = 0; i < iters; i++) {
        size_t slots = (base + (i < extra)) * c->dp;
        size_t e = empties / iters + (i < empties % iters);   /* < dp <= slots */
        real[i] = slots - e;
        start[i + 1] = start[i] + slots;
        for (size_t k = 0; k < e; k++)
            ids[start[i] + real[i] + k] = t + empties / iters * i +
                                          (i < empties % iters ? i : empties % iters) + k;
    }
    if ((st = dealer_init(&d, (base + 1) * c->dp, c->dp, err)) != VL_OK ||
        (st = layout(c, &d, pk, t, iters, real, start, ids, err)) != VL_OK)
        goto done;
    for (size_t i = 0; i < iters && st == VL_OK; i++) {
        c->batch = i;
        c->iters++;
        if ((st = vl_plan_iter_begin(c->out, c->epoch, err)) == VL_OK)
            st = deal(c, &d, pk, ids + start[i], start[i + 1] - start[i], 0, err);
    }
done:
    dealer_free(&d);
    free(real);
    free(start);
    free(ids);
    return st;
}

static vl_status pack_epochs(bl *c, vl_err *err)
{
    const vl_selection *sel = c->job->sel;
    size_t room = sel->n + ctx_of(c)->pieces.n + 1, cap_packs = 0, n;
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
        vl__bl_pieces_expand(&ctx_of(c)->pieces, order, sel->n, items, &n);
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

static bool splits(const vl_config *cfg)
{
    return cfg->training.oversize == VL_OVERSIZE_SPLIT;
}

/* Under training.oversize=split nothing is too long: longer samples become pieces. */
static uint32_t pack_max_len(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return splits(cfg) ? UINT32_MAX : cfg->training.max_seq_len;
}

/* A pack holds up to max_seq_len tokens (a split sample's pieces too). */
static uint64_t pack_max_cap(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return cfg->training.max_seq_len;
}

static vl_status pack_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    (void)opts;
    return vl__bl_check_dp(cfg, "pack", err);
}

static vl_status pack_plan(const void *opts, const vl_job *job, vl_plan *out, vl_err *err)
{
    bool epoch = job->cfg->pack.scope == VL_PACK_SCOPE_EPOCH;
    pack_ctx x = {.len = job->sel->len};
    vl_status st;

    (void)opts;
    if (splits(job->cfg)) {
        st = vl__bl_pieces_build(&x.pieces, job->sel, (uint32_t)job->m->n,
                                 job->cfg->training.max_seq_len, err);
        if (st != VL_OK)
            return st;
        x.len = x.pieces.len;
    } else {
        x.pieces.base = UINT32_MAX;   /* every item a whole sample */
    }
    st = vl__bl_run(job, out, pack_batch, epoch ? pack_epochs : NULL, &x, "pack", false, err);
    vl__bl_pieces_free(&x.pieces);
    return st;
}

const vl_strategy vl_strategy_pack = {
    .name = "pack",
    .summary = "packing with pack.algo into max_seq_len bins, dealt to ranks by cost",
    .section = NULL,
    .builtin = "pack",
    .params = NULL,
    .opts_size = 0,
    .max_len = pack_max_len,
    .max_cap = pack_max_cap,
    .validate = pack_validate,
    .plan = pack_plan,
};
