/* plans/hbp/hbp_pack.c -- HBP's balance packing for one epoch (paper Alg. 2, 5, 6, 7 and
 * appendix J): GroupData, packing each group to its length, GreedyFill from shorter
 * groups (the pools are in hbp_fill.c), Attention Balance Sort, the cut into iterations
 * and the deal to ranks, and the training order (curriculum, then a seeded proportional
 * interleave of the groups). */
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "hbp_impl.h"
#include "iheap.h"
#include "prefetch.h"
#include "sort.h"

#define STREAM_PACK 0x4842505041434Bull  /* "HBPPACK" */
#define STREAM_ORDER 0x4842504F524400ull /* "HBPORD" */
#define STREAM_MIX 0x4842504D495800ull   /* "HBPMIX" */

/* ---- GroupData ----------------------------------------------------------------------- */

/* The lengths ascend, so the first group whose length is ≥ l is the count of those
 * shorter: at most 16 comparisons without a branch to mispredict, where a binary search
 * mispredicts about one branch in two for every sample of a random order. */
uint32_t vl__hbp_group_of(const hbp_groups *gs, uint32_t l)
{
    uint32_t g = 0;

    for (size_t i = 0; i < gs->n; i++)
        g += gs->g[i].len < l;
    return g;
}

/* Per-epoch working state. */
typedef struct work {
    const hbp_pack_in *in;
    hbp_epoch *ep;
    uint32_t *dbuf; /* [n] samples by group, epoch order kept; the pools' items, and
                     * a group's samples left after GreedyFill once it is packed */
    size_t doff[HBP_MAX_GROUPS + 1];
    hbp_pool *pool[HBP_MAX_GROUPS];
    size_t gp0[HBP_MAX_GROUPS], gp1[HBP_MAX_GROUPS]; /* each group's packs */
    size_t nitems;                                   /* ep->items used */
} work;

/* Lengths are read this many samples ahead in the epoch's order: it visits them at
 * random, and at millions of samples they lie beyond the caches; 64, as the shuffles in
 * lib/util/rng.c: 16 kept too few misses in flight at 10M samples. */
#define AHEAD 64

/* The epoch's order (in ep->items, taken over) by group into dbuf, order kept within
 * each group; gcache: room for n groups (at most 16: a byte each). */
static vl_status group_data(work *w, uint8_t *gcache, vl_err *err)
{
    const hbp_pack_in *in = w->in;
    const uint32_t *order = w->ep->items;
    size_t cur[HBP_MAX_GROUPS] = {0};

    memset(w->doff, 0, sizeof w->doff);
    for (size_t i = 0; i < in->n; i++) {
        if (i + AHEAD < in->n)
            VL_PREFETCH(in->len + order[i + AHEAD]);
        uint32_t g = vl__hbp_group_of(in->gs, in->len[order[i]]);
        if (g >= in->gs->n)
            return vl_seterr(err, VL_EINTERNAL,
                             "hbp: sample %u (%u tokens) is longer than every group", order[i],
                             in->len[order[i]]);
        gcache[i] = (uint8_t)g;
        w->doff[g + 1]++;
    }
    for (size_t g = 0; g < in->gs->n; g++) {
        w->doff[g + 1] += w->doff[g];
        cur[g] = w->doff[g];
        w->ep->samples[g] = w->doff[g + 1] - w->doff[g];
    }
    for (size_t i = 0; i < in->n; i++)
        w->dbuf[cur[gcache[i]]++] = order[i];
    return VL_OK;
}

/* ---- packing and GreedyFill ------------------------------------------------------- */

static vl_status push_pack(hbp_epoch *ep, const hbp_pack *pk, vl_err *err)
{
    if (ep->npacks == ep->packs_cap &&
        vl_grow(&ep->packs, &ep->packs_cap, ep->npacks + 1, sizeof *ep->packs, NULL))
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", ep->npacks + 1);
    ep->packs[ep->npacks++] = *pk;
    return VL_OK;
}

/* Room for `more` packs, exactly: the packer has said how many bins a group makes, and
 * doubling would leave up to half the table untouched, reallocated and copied. */
static vl_status reserve_packs(hbp_epoch *ep, size_t more, vl_err *err)
{
    size_t want = ep->npacks + more;
    hbp_pack *np;

    if (want <= ep->packs_cap)
        return VL_OK;
    if (want > SIZE_MAX / sizeof *np ||
        (np = vl_big_realloc(ep->packs, ep->packs_cap * sizeof *np, want * sizeof *np)) ==
            NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", want);
    ep->packs = np;
    ep->packs_cap = want;
    return VL_OK;
}

/* Copy bin b of group g into the epoch's items, fill its residual space from the
 * shorter groups' pools (next-shorter first), and record it. */
static vl_status emit_bin(work *w, const vl_bins *bins, size_t b, uint32_t g, vl_err *err)
{
    const uint32_t *len = w->in->len;
    hbp_pool *src[HBP_MAX_GROUPS];
    uint32_t *dst = w->ep->items + w->nitems;
    size_t k = bins->start[b + 1] - bins->start[b], nsrc = 0;
    hbp_pack pk = {.group = g, .start = (uint32_t)w->nitems, .first = UINT32_MAX};

    memcpy(dst, bins->items + bins->start[b], k * sizeof *dst);
    if (b + 1 < bins->n) /* the next bin's lengths load while this one sums */
        for (size_t i = bins->start[b + 1]; i < bins->start[b + 2]; i++)
            VL_PREFETCH(len + bins->items[i]);
    for (size_t i = 0; i < k; i++) {
        pk.load += len[dst[i]];
        pk.attn += (uint64_t)len[dst[i]] * len[dst[i]];
    }
    for (uint32_t j = g; w->in->greedy_fill && j-- > 0;)
        src[nsrc++] = w->pool[j];
    size_t f = vl__hbp_fill(src, nsrc, w->in->gs->g[g].len, &pk.load, &pk.attn, dst + k);
    w->ep->fillers[g] += f;
    k += f;
    for (size_t i = 0; i < k; i++)
        if (dst[i] < pk.first)
            pk.first = dst[i];
    pk.count = (uint32_t)k;
    w->nitems += k;
    return push_pack(w->ep, &pk, err);
}

/* Packing(D_g, l_g) then GreedyFill(G_g, l_g, [D_{g-1} .. D_1]). */
static vl_status pack_group(work *w, uint32_t g, vl_err *err)
{
    const hbp_pack_in *in = w->in;
    vl_pack_opts po = {.algo = in->algo,
                       .cap = in->gs->g[g].len,
                       .isf_iters = in->isf_iters,
                       .isf_slack = in->isf_slack};
    vl_bins bins;
    vl_rng r;
    uint32_t *d = w->dbuf + w->doff[g];
    size_t n = w->doff[g + 1] - w->doff[g];
    vl_status st = VL_OK;

    /* What longer groups' fills left of D_g, moved to the front of D_g in place: the
     * pool is not drawn from again, only shorter groups' pools fill group g's packs. */
    if (w->pool[g] != NULL)
        n = vl__hbp_pool_left(w->pool[g], d);
    w->gp0[g] = w->ep->npacks;
    if (n > 0) {
        vl_rng_seed(&r, in->seed, STREAM_PACK ^ (in->epoch << 32) ^ g);
        po.seed = vl_rng_next(&r);
        if ((st = vl_pack(&bins, d, n, in->len, &po, err)) != VL_OK)
            return st;
        st = reserve_packs(w->ep, bins.n, err);
        for (size_t b = 0; b < bins.n && st == VL_OK; b++)
            st = emit_bin(w, &bins, b, g, err);
        vl_bins_free(&bins);
    }
    w->gp1[g] = w->ep->npacks;
    return st;
}

/* ---- Attention Balance Sort and the cut into iterations ----------------------------- */

static int cmp_pack(const void *a, const void *b)
{
    const hbp_pack *x = a, *y = b;

    if (x->attn != y->attn)
        return x->attn < y->attn ? 1 : -1;
    if (x->load != y->load)
        return x->load < y->load ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

/* Below this many packs qsort is as quick and needs no key array. */
#define KEYED_MIN 256

/* Gather ahead: the packs are read at random, a 32-byte record each, from a table that
 * outgrows the caches at millions of samples. */
#define GATHER_AHEAD 16

/* Put packs[p] := packs[src(p)] for every p, src(p) the low `bits` of key[p]: gathered
 * into tmp, the reads prefetched, then copied back.  Following the permutation's cycles
 * in place needs no second table but waits on each read in turn: at 10M samples (about
 * 1M packs at 8K) that took 57 times as long as at 1M (perf samples of the sort). */
static void permute_packs(hbp_pack *packs, hbp_pack *tmp, const uint64_t *key, size_t n,
                          int bits)
{
    uint64_t low = ((uint64_t)1 << bits) - 1;

    for (size_t p = 0; p < n; p++) {
        if (p + GATHER_AHEAD < n)
            VL_PREFETCH(packs + (key[p + GATHER_AHEAD] & low));
        tmp[p] = packs[key[p] & low];
    }
    memcpy(packs, tmp, n * sizeof *packs);
}

/* cmp_pack's order through one 8-byte key per pack, (max attn - attn) above the pack's
 * position: a radix sort of the keys, then the packs moved once, instead of qsort's
 * comparisons and moves of 32-byte packs (qsort took 7% of a 1M-sample plan).
 * Runs of equal attention -- rare, but data of one length makes every pack equal --
 * are then put in cmp_pack's order among themselves.  False, nothing sorted, when the
 * key does not fit 64 bits or the buffers cannot be allocated. */
static bool sort_packs_keyed(hbp_pack *packs, size_t n)
{
    uint64_t any = 0, *key;
    hbp_pack *tmp;
    int a = 0, b = 1;

    for (size_t i = 0; i < n; i++)
        any |= packs[i].attn;
    while (a < 64 && any >> a != 0)
        a++;
    while (b < 64 && ((uint64_t)1 << b) < n)
        b++;
    if (a + b > 64)
        return false;
    key = vl_big_malloc(n * sizeof *key);
    tmp = vl_big_malloc(n * sizeof *tmp);
    if (key == NULL || tmp == NULL) {
        free(key);
        free(tmp);
        return false;
    }
    uint64_t amask = ((uint64_t)1 << a) - 1; /* a < 64: b ≥ 1 */
    for (size_t i = 0; i < n; i++)
        key[i] = (~packs[i].attn & amask) << b | i;
    vl_sort_u64(key, n);
    permute_packs(packs, tmp, key, n, b);
    free(key);
    free(tmp);
    for (size_t s = 0, e; s < n; s = e) {
        for (e = s + 1; e < n && packs[e].attn == packs[s].attn;)
            e++;
        if (e - s > 1)
            qsort(packs + s, e - s, sizeof *packs, cmp_pack);
    }
    return true;
}

void vl__hbp_sort_packs(hbp_pack *packs, size_t n)
{
    if (n >= KEYED_MIN && sort_packs_keyed(packs, n))
        return;
    if (n > 1) /* packs may be NULL when there are none: qsort's base must not be */
        qsort(packs, n, sizeof *packs, cmp_pack);
}

vl_status vl__hbp_deal(uint32_t *slot, const hbp_pack *packs, size_t np, uint32_t base,
                       int ranks, uint32_t mbs, double attn_weight, vl_err *err)
{
    size_t total = (size_t)ranks * mbs;
    double *w;
    int *part;
    size_t *fill;

    if (mbs == 1) { /* neighbours in the sorted order already match */
        for (size_t r = 0; r < total; r++)
            slot[r] = r < np ? base + (uint32_t)r : HBP_EMPTY;
        return VL_OK;
    }
    w = calloc(total, sizeof *w);
    part = malloc(total * sizeof *part);
    fill = calloc((size_t)ranks, sizeof *fill);
    if (w == NULL || part == NULL || fill == NULL) {
        free(w);
        free(part);
        free(fill);
        return vl_seterr(err, VL_ENOMEM, "out of memory dealing %zu packs", total);
    }
    for (size_t k = 0; k < total; k++) /* empty slots weigh nothing */
        w[k] = k < np ? (double)packs[k].load + attn_weight * (double)packs[k].attn : 0.0;
    vl_status st = vl_partition_kk_equal(part, w, total, ranks, err);
    for (size_t k = 0; st == VL_OK && k < total; k++) {
        size_t r = (size_t)part[k];
        slot[r * mbs + fill[r]++] = k < np ? base + (uint32_t)k : HBP_EMPTY;
    }
    free(w);
    free(part);
    free(fill);
    return st;
}

static void pack_sums(hbp_pack *pk, const uint32_t *it, const uint32_t *len)
{
    pk->load = pk->attn = 0;
    pk->first = UINT32_MAX;
    for (uint32_t i = 0; i < pk->count; i++) {
        pk->load += len[it[i]];
        pk->attn += (uint64_t)len[it[i]] * len[it[i]];
        if (it[i] < pk->first)
            pk->first = it[i];
    }
}

/* Split pk in two by attention: its samples, longest first (ties by index), each onto
 * the half with less Σ len²; the first half stays in pk, the second goes to *q. */
static vl_status split_pack(work *w, hbp_pack *pk, hbp_pack *q, vl_err *err)
{
    const uint32_t *len = w->in->len;
    uint32_t *it = w->ep->items + pk->start, k = pk->count, na = 0, nb = 0;
    uint64_t *key = malloc(k * sizeof *key), aa = 0, ab = 0;
    uint32_t *tmp = malloc(k * sizeof *tmp);

    if (key == NULL || tmp == NULL) {
        free(key);
        free(tmp);
        return vl_seterr(err, VL_ENOMEM, "out of memory splitting a pack of %u", k);
    }
    for (uint32_t i = 0; i < k; i++)
        key[i] = ((uint64_t)(UINT32_MAX - len[it[i]]) << 32) | it[i];
    vl_sort_u64(key, k);
    for (uint32_t i = 0; i < k; i++) {
        uint32_t s = (uint32_t)key[i];
        uint64_t a = (uint64_t)len[s] * len[s];
        if (aa <= ab && !(i == k - 1 && nb == 0)) { /* both halves non-empty */
            it[na++] = s;
            aa += a;
        } else {
            tmp[nb++] = s;
            ab += a;
        }
    }
    memcpy(it + na, tmp, nb * sizeof *tmp);
    *q = *pk;
    pk->count = na;
    q->start = pk->start + na;
    q->count = nb;
    pack_sums(pk, it, len);
    pack_sums(q, it + na, len);
    free(key);
    free(tmp);
    return VL_OK;
}

/* The heaviest splittable pack first (cmp_pack's order: it ends on the pack's first
 * sample, unique among packs of two or more, so the order is total). */
static int split_before(const void *ctx, size_t a, size_t b)
{
    const hbp_pack *t = ctx;

    return cmp_pack(&t[a], &t[b]) < 0;
}

/* Packs t[0..r-1] must fill `target` slots: the heaviest splittable pack is halved
 * until they do (a heap, not a scan per split: 1M ranks made that quadratic); what
 * still lacks becomes empty micro-batches. */
static vl_status even_out(work *w, hbp_pack *t, size_t r, size_t target, uint32_t g,
                          size_t *outn, vl_err *err)
{
    vl_iheap q;
    vl_status st = vl_iheap_init(&q, target, split_before, t, err);

    for (size_t p = 0; p < r && st == VL_OK; p++)
        if (t[p].count >= 2)
            vl_iheap_push(&q, p);
    while (st == VL_OK && r < target && q.n > 0) {
        size_t best = vl_iheap_pop(&q);
        if ((st = split_pack(w, &t[best], &t[r], err)) != VL_OK)
            break;
        if (t[best].count >= 2)
            vl_iheap_push(&q, best);
        if (t[r].count >= 2)
            vl_iheap_push(&q, r);
        r++;
        w->ep->splits[g]++;
    }
    vl_iheap_free(&q);
    if (st != VL_OK)
        return st;
    w->ep->empty[g] += target - r;
    if (w->in->balance)
        vl__hbp_sort_packs(t, r);
    *outn = r;
    return VL_OK;
}

/* One iteration over fin[p0 .. p0+np) with mbs micro-batches per rank: slots dealt and
 * the record appended. */
static vl_status add_iter(work *w, uint32_t g, const hbp_pack *fin, size_t p0, size_t np,
                          uint32_t mbs, hbp_iter *its, size_t *nit, vl_err *err)
{
    const hbp_group *gr = &w->in->gs->g[g];
    hbp_epoch *ep = w->ep;
    vl_status st = vl__hbp_deal(ep->slots + ep->nslots, fin + p0, np, (uint32_t)p0, gr->ranks,
                                mbs, w->in->attn_weight, err);

    if (st != VL_OK)
        return st;
    its[(*nit)++] = (hbp_iter){g, mbs, ep->nslots};
    ep->nslots += (size_t)gr->ranks * mbs;
    ep->giters[g]++;
    return VL_OK;
}

/* Group g's packs (sorted) into fin[*nf ..], cut into the fewest iterations of at most
 * ranks·mbs packs each (so none holds more than the global token budget), consecutive
 * runs of the sorted order.  The packs are dealt in whole rows of `ranks` packs, the
 * rows spread evenly over the iterations (the first ones take the spare rows), so every
 * iteration but the last holds a multiple of the rank count and every rank as many
 * micro-batches; the last takes the fewest rows plus the cnt mod ranks leftover packs
 * and runs ceil(packs / ranks) micro-batches per rank, splitting packs (even_out) so
 * that every rank has as many.  (Spreading the packs themselves evenly left most
 * iterations one pack short -- 15 on 4 ranks -- and a rank idle for a micro-batch.) */
static vl_status cut_group(work *w, uint32_t g, hbp_pack *fin, size_t *nf, hbp_iter *its,
                           size_t *nit, vl_err *err)
{
    const hbp_group *gr = &w->in->gs->g[g];
    size_t cnt = w->gp1[g] - w->gp0[g], ranks = (size_t)gr->ranks, per = ranks * gr->mbs;
    size_t niter = (cnt + per - 1) / per, rows = cnt / ranks, base = *nf, grown = 0, a = 0;
    hbp_pack *src;
    vl_status st = VL_OK;

    if (cnt == 0) /* a group left empty (every sample dropped) has no pack array */
        return VL_OK;
    src = w->ep->packs + w->gp0[g];
    if (w->in->balance)
        vl__hbp_sort_packs(src, cnt);
    for (size_t k = 0; k < niter && st == VL_OK; k++) {
        size_t have = (rows / niter + (k < rows % niter)) * ranks, np = have;
        if (k + 1 == niter)
            have += cnt % ranks;
        size_t p0 = base + a + grown;
        memcpy(fin + p0, src + a, have * sizeof *src);
        a += have;
        if (have == per) {
            st = add_iter(w, g, fin, p0, per, gr->mbs, its, nit, err);
            continue;
        }
        uint32_t m = (uint32_t)((have + ranks - 1) / ranks);
        if ((st = even_out(w, fin + p0, have, ranks * m, g, &np, err)) == VL_OK)
            st = add_iter(w, g, fin, p0, np, m, its, nit, err);
        grown += np - have;
    }
    *nf += cnt + grown;
    return st;
}

/* ---- training order ------------------------------------------------------------------ */

typedef struct mix {
    double key; /* (j + u) / n_g: stratified position of the group's j-th */
    uint32_t group, j;
    size_t it;
} mix;

static int cmp_mix(const void *a, const void *b)
{
    const mix *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

/* Each group's iterations in a seeded random order (the paper's Shuffle(B)); then the
 * curriculum: the first `curriculum` iterations from the shorter groups only (never the
 * longest one), shortest first, but at most half of those groups' iterations, so that
 * the long group never has the end of the epoch to itself (Table 8's 500 short-only
 * steps are a few per cent of the paper's 3000+, and "then alternates"); then the rest
 * interleaved so that every group is spread evenly over the rest of the epoch: its j-th
 * remaining iteration sits at (j + u)/n_g, u uniform. */
static vl_status order_iters(work *w, hbp_iter *its, size_t nit, vl_err *err)
{
    const hbp_pack_in *in = w->in;
    size_t ng = in->gs->n, off[HBP_MAX_GROUPS + 1] = {0}, head[HBP_MAX_GROUPS] = {0};
    uint32_t *perm = malloc((nit ? nit : 1) * sizeof *perm);
    mix *mx = malloc((nit ? nit : 1) * sizeof *mx);
    size_t out = 0, nm = 0;
    vl_rng r;

    w->ep->iters = malloc((nit ? nit : 1) * sizeof *w->ep->iters);
    if (perm == NULL || mx == NULL || w->ep->iters == NULL) {
        free(perm);
        free(mx);
        return vl_seterr(err, VL_ENOMEM, "out of memory ordering %zu iterations", nit);
    }
    for (size_t i = 0; i < nit; i++) /* its[] is grouped, groups ascending */
        off[its[i].group + 1]++;
    for (size_t g = 0; g < ng; g++) {
        off[g + 1] += off[g];
        for (size_t i = off[g]; i < off[g + 1]; i++)
            perm[i] = (uint32_t)i;
        vl_rng_seed(&r, in->seed, STREAM_ORDER ^ (in->epoch << 32) ^ g);
        vl_rng_shuffle_u32(&r, perm + off[g], off[g + 1] - off[g]);
    }
    /* "the longest" is the longest group that has iterations this epoch: with an empty
     * longest group the next one must not lead the epoch as a "shorter" group */
    size_t last = ng;
    while (last > 0 && off[last] == off[last - 1])
        last--;
    last = last > 0 ? last - 1 : 0;
    size_t first = off[last] / 2; /* half the shorter groups' iterations */
    first = in->curriculum < first ? in->curriculum : first;
    w->ep->short_iters = off[last];
    w->ep->curriculum = first;
    w->ep->busy_groups = 0;
    for (size_t g = 0; g < ng; g++)
        w->ep->busy_groups += off[g + 1] > off[g];
    for (size_t g = 0; g < last && out < first; g++)
        for (; off[g] + head[g] < off[g + 1] && out < first; head[g]++)
            w->ep->iters[out++] = its[perm[off[g] + head[g]]];
    vl_rng_seed(&r, in->seed, STREAM_MIX ^ (in->epoch << 32));
    for (size_t g = 0; g < ng; g++) {
        size_t left = off[g + 1] - off[g] - head[g];
        for (size_t j = 0; j < left; j++)
            mx[nm++] = (mix){((double)j + vl_rng_unit(&r)) / (double)left, (uint32_t)g,
                             (uint32_t)j, perm[off[g] + head[g] + j]};
    }
    qsort(mx, nm, sizeof *mx, cmp_mix);
    for (size_t i = 0; i < nm; i++)
        w->ep->iters[out++] = its[mx[i].it];
    w->ep->niters = out;
    free(perm);
    free(mx);
    return VL_OK;
}

/* ---- the epoch ----------------------------------------------------------------------- */

void vl__hbp_epoch_free(hbp_epoch *ep)
{
    if (ep == NULL)
        return;
    free(ep->items);
    free(ep->packs);
    free(ep->slots);
    free(ep->iters);
    memset(ep, 0, sizeof *ep);
}

static vl_status make_pools(work *w, vl_err *err)
{
    vl_status st;

    /* Only groups shorter than the longest ever give fillers. */
    for (size_t g = 0; w->in->greedy_fill && g + 1 < w->in->gs->n; g++)
        if ((st = vl__hbp_pool_new(&w->pool[g], w->dbuf + w->doff[g],
                                   w->doff[g + 1] - w->doff[g], w->in->len, err)) != VL_OK)
            return st;
    return VL_OK;
}

/* Every group's packs cut into iterations, ascending group order; ep->packs becomes
 * the final pack table (short iterations may have gained split packs). */
static vl_status cut_all(work *w, vl_err *err)
{
    const hbp_groups *gs = w->in->gs;
    size_t extra = 0, nf = 0, nit = 0, maxit = 0;
    hbp_pack *fin;
    hbp_iter *its;
    vl_status st = VL_OK;

    for (size_t g = 0; g < gs->n; g++) {
        size_t per = (size_t)gs->g[g].ranks * gs->g[g].mbs;
        size_t niter = (w->gp1[g] - w->gp0[g] + per - 1) / per;
        /* an iteration short of ranks·mbs packs grows by fewer than `ranks` */
        extra += niter * (size_t)gs->g[g].ranks;
        maxit += niter;
    }
    /* Slots: every pack once plus fewer than `ranks` empties per iteration. */
    w->ep->slots = vl_big_malloc((w->ep->npacks + 2 * extra + 1) * sizeof *w->ep->slots);
    fin = vl_big_malloc((w->ep->npacks + extra + 1) * sizeof *fin);
    its = malloc((maxit + 1) * sizeof *its);
    if (fin == NULL || its == NULL || w->ep->slots == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", w->ep->npacks + extra);
        goto done;
    }
    for (uint32_t g = 0; g < gs->n && st == VL_OK; g++)
        st = cut_group(w, g, fin, &nf, its, &nit, err);
    if (st == VL_OK) {
        free(w->ep->packs);
        w->ep->packs = fin;
        w->ep->npacks = w->ep->packs_cap = nf;
        fin = NULL;
        st = order_iters(w, its, nit, err);
    }
done:
    free(fin);
    free(its);
    return st;
}

vl_status vl__hbp_pack_epoch(hbp_epoch *ep, const hbp_pack_in *in, vl_err *err)
{
    work w = {.in = in, .ep = ep};
    size_t n = in->n ? in->n : 1;
    uint8_t *gcache = vl_big_malloc(n);
    vl_status st;

    memset(ep, 0, sizeof *ep);
    ep->items = in->order; /* read by GroupData, then written pack by pack */
    w.dbuf = vl_big_malloc(n * sizeof *w.dbuf);
    if (ep->items == NULL || w.dbuf == NULL || gcache == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory packing %zu samples", in->n);
        goto done;
    }
    st = group_data(&w, gcache, err);
    free(gcache);
    gcache = NULL;
    if (st != VL_OK || (st = make_pools(&w, err)) != VL_OK)
        goto done;
    for (uint32_t g = (uint32_t)in->gs->n; g-- > 0 && st == VL_OK;) /* longest first */
        st = pack_group(&w, g, err);
    if (st == VL_OK && w.nitems != in->n)
        st = vl_seterr(err, VL_EINTERNAL, "hbp: packed %zu of %zu samples", w.nitems, in->n);
    if (st == VL_OK)
        st = cut_all(&w, err);
done:
    for (size_t g = 0; g < HBP_MAX_GROUPS; g++)
        vl__hbp_pool_free(w.pool[g]);
    free(w.dbuf);
    free(gcache);
    if (st != VL_OK)
        vl__hbp_epoch_free(ep);
    return st;
}
