/* plans/skrull/skrull_gds.c -- GDS, Skrull's Algorithm 2 with the listing's off-by-one
 * fixed (docs/skrull.md §2): the global batch is split over the DP ranks by LPT on
 * forward FLOPs; each rank sorts its share ascending and tries m = ceil(Σ / C·N), m + 1,
 * ... micro-batches, micro-batch j taking the sequences j, j + m, j + 2m, ... (so long
 * and short ones mix), until every micro-batch holds ≤ C·N tokens (Eq. 7: equality
 * allowed) and DACP accepts it.  m = the rank's sequence count always succeeds: one
 * sequence of ≤ C·N tokens is local when ≤ C, else sharded.
 * Equal counts (skrull.equal_mbs; by default under micro-step gradient sync, where
 * ranks wait for each other after every micro-step): one m for every rank, the smallest
 * all accept, each rank's micro-batches then run heaviest first (by DACP's slowest CP
 * rank) so that the ranks' heavy micro-batches meet in the same step.
 * Ablations: gds off splits the batch into contiguous equal-count pieces in sampler
 * order and cuts each next-fit into micro-batches of ≤ C·N tokens; dacp off shards every
 * sequence (which fits exactly when the micro-batch holds ≤ C·N tokens).
 * Order: items sort by (length, sample index), a total order; micro-batches of equal
 * estimate keep their build order.  Cost per rank of k items: O(k log k) plus O(k·N)
 * per micro-batch count tried (with equal counts, every rank per count tried) and
 * O(m²) to order m micro-batches. */
#include <stdlib.h>
#include <string.h>

#include "skrull_impl.h"

#define KEY_LEN(k) ((uint32_t)((k) >> 32))
#define KEY_SAMPLE(k) ((uint32_t)(k))

void vl__sk_work_free(vl_sk_work *w)
{
    free(w->key);
    free(w->w);
    free(w->part);
    free(w->byrank);
    free(w->rstart);
    free(w->seq);
    free(w->slen);
    free(w->sf);
    free(w->ret);
    free(w->mstart);
    free(w->mload);
    free(w->mlold);
    free(w->mord);
    free(w->mold);
    free(w->rmb);
    free(w->rb);
    free(w->load);
    memset(w, 0, sizeof *w);
}

/* Per-micro-batch arrays for cap - 1 micro-batches. */
static vl_status grow_mbs(vl_sk_work *w, size_t cap, vl_err *err)
{
    vl_status st;

    if ((st = vl_grow(&w->mstart, &w->mstart_cap, cap, sizeof *w->mstart, err)) != VL_OK ||
        (st = vl_grow(&w->mload, &w->mload_cap, cap, sizeof *w->mload, err)) != VL_OK ||
        (st = vl_grow(&w->mlold, &w->mlold_cap, cap, sizeof *w->mlold, err)) != VL_OK ||
        (st = vl_grow(&w->mord, &w->mord_cap, cap, sizeof *w->mord, err)) != VL_OK)
        return st;
    return vl_grow(&w->mold, &w->mold_cap, cap, sizeof *w->mold, err);
}

static vl_status grow_items(vl_sk_work *w, size_t n, int dp, int cp, vl_err *err)
{
    size_t k = n ? n : 1;
    vl_status st;

    if ((st = vl_grow(&w->key, &w->key_cap, k, sizeof *w->key, err)) != VL_OK ||
        (st = vl_grow(&w->w, &w->w_cap, k, sizeof *w->w, err)) != VL_OK ||
        (st = vl_grow(&w->part, &w->part_cap, k, sizeof *w->part, err)) != VL_OK ||
        (st = vl_grow(&w->byrank, &w->byrank_cap, k, sizeof *w->byrank, err)) != VL_OK ||
        (st = vl_grow(&w->rstart, &w->rstart_cap, (size_t)dp + 1, sizeof *w->rstart, err)) !=
            VL_OK ||
        (st = vl_grow(&w->rmb, &w->rmb_cap, (size_t)dp + 1, sizeof *w->rmb, err)) != VL_OK ||
        (st = vl_grow(&w->rb, &w->rb_cap, (size_t)cp, sizeof *w->rb, err)) != VL_OK ||
        (st = vl_grow(&w->load, &w->load_cap, (size_t)cp, sizeof *w->load, err)) != VL_OK ||
        (st = vl_grow(&w->seq, &w->seq_cap, k, sizeof *w->seq, err)) != VL_OK ||
        (st = vl_grow(&w->slen, &w->slen_cap, k, sizeof *w->slen, err)) != VL_OK ||
        (st = vl_grow(&w->sf, &w->sf_cap, k, sizeof *w->sf, err)) != VL_OK ||
        (st = vl_grow(&w->ret, &w->ret_cap, k, sizeof *w->ret, err)) != VL_OK)
        return st;
    return grow_mbs(w, k + 1, err);
}

/* ---- the DP split ---------------------------------------------------------------- */

/* Contiguous pieces of the batch, the first n % dp one item longer. */
static void split_contiguous(int *part, size_t n, int dp)
{
    size_t q = n / (size_t)dp, r = n % (size_t)dp, big = (q + 1) * r;

    for (size_t i = 0; i < n; i++)
        part[i] = (int)(i < big ? i / (q + 1) : r + (q ? (i - big) / q : 0));
}

/* Keys grouped by rank (batch order kept inside a rank): byrank[rstart[d] ..). */
static void group_by_rank(vl_sk_work *w, size_t n, int dp)
{
    memset(w->rstart, 0, ((size_t)dp + 1) * sizeof *w->rstart);
    for (size_t i = 0; i < n; i++)
        w->rstart[w->part[i] + 1]++;
    for (int d = 0; d < dp; d++)
        w->rstart[d + 1] += w->rstart[d];
    for (size_t i = 0; i < n; i++)
        w->byrank[w->rstart[w->part[i]]++] = w->key[i];
    for (int d = dp; d > 0; d--)
        w->rstart[d] = w->rstart[d - 1];
    w->rstart[0] = 0;
}

/* ---- one micro-batch ------------------------------------------------------------- */

typedef struct gds_ctx {
    vl_sk_work *w;
    const vl_sk_setting *s;
    vl_sk_flops_fn F;
    const void *ud;
    vl_sk_dacp d;
    uint64_t capacity; /* C·N tokens */
} gds_ctx;

static void mb_open(gds_ctx *g)
{
    g->w->mstart[g->w->nmb] = g->w->nseq;
}

static void mb_add(gds_ctx *g, uint64_t key)
{
    vl_sk_work *w = g->w;

    w->seq[w->nseq] = KEY_SAMPLE(key);
    w->slen[w->nseq] = KEY_LEN(key);
    w->sf[w->nseq] = g->F(g->ud, KEY_LEN(key));
    w->nseq++;
}

/* Place the open micro-batch (its items ascending); false when it does not fit. */
static bool mb_close(gds_ctx *g)
{
    vl_sk_work *w = g->w;
    size_t a = w->mstart[w->nmb], k = w->nseq - a;
    uint64_t sum = 0;

    for (size_t i = a; i < w->nseq; i++)
        sum += w->slen[i];
    if (sum > g->capacity)
        return false;
    if (g->s->dacp) {
        if (!vl__sk_dacp(&g->d, w->slen + a, w->sf + a, k, w->ret + a))
            return false;
        w->mload[w->nmb] = 0;
        for (int r = 0; r < g->d.n; r++)
            w->mload[w->nmb] =
                w->mload[w->nmb] > g->d.load[r] ? w->mload[w->nmb] : g->d.load[r];
    } else {
        w->mload[w->nmb] = 0;
        for (size_t i = a; i < w->nseq; i++) {
            w->ret[i] = VL_CP_SHARDED;
            w->mload[w->nmb] += w->sf[i] / g->d.n;
        }
    }
    w->nmb++;
    w->mstart[w->nmb] = w->nseq;
    return true;
}

/* ---- one rank -------------------------------------------------------------------- */

/* m strided micro-batches of sub[0..k-1]; false (and nothing kept) when one fails. */
static bool try_interleave(gds_ctx *g, const uint64_t *sub, size_t k, size_t m)
{
    vl_sk_work *w = g->w;
    size_t nseq = w->nseq, nmb = w->nmb;
    uint64_t rollbacks = g->d.rollbacks;

    for (size_t j = 0; j < m; j++) {
        mb_open(g);
        for (size_t i = j; i < k; i += m)
            mb_add(g, sub[i]);
        if (!mb_close(g)) {
            w->nseq = nseq;
            w->nmb = nmb;
            g->d.rollbacks = rollbacks;
            return false;
        }
    }
    return true;
}

static vl_status rank_gds(gds_ctx *g, uint64_t *sub, size_t k, vl_err *err)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < k; i++)
        sum += KEY_LEN(sub[i]);
    for (size_t m = (size_t)((sum + g->capacity - 1) / g->capacity); m <= k; m++) {
        if (m == 0)
            continue;
        if (try_interleave(g, sub, k, m))
            return VL_OK;
        g->w->stat_retries++;
    }
    if (k == 0)
        return VL_OK;
    return vl_seterr(err, VL_EINTERNAL,
                     "skrull: a sequence of this batch does not fit "
                     "C·N = %llu tokens",
                     (unsigned long long)g->capacity);
}

/* Micro-batches [a, b) reordered by estimated time (the DACP's slowest CP rank),
 * heaviest first, ties in build order: ranks that wait for each other after every
 * micro-step then meet their heavy micro-batches together.  The items move through the
 * scratch arrays the DP split no longer needs (key, w, part). */
static void heaviest_first(vl_sk_work *w, size_t a, size_t b)
{
    size_t n = b - a, base = w->mstart[a], at = base;
    size_t *ord = w->mord, *start = w->mold;
    double *load = w->mlold;

    for (size_t j = 0; j <= n; j++)
        start[j] = w->mstart[a + j];
    for (size_t j = 0; j < n; j++) {
        size_t i = j;
        load[j] = w->mload[a + j];
        for (; i > 0 && load[ord[i - 1]] < load[j]; i--)
            ord[i] = ord[i - 1];
        ord[i] = j;
    }
    for (size_t i = base; i < start[n]; i++) {
        w->key[i - base] = (uint64_t)w->slen[i] << 32 | w->seq[i];
        w->w[i - base] = w->sf[i];
        w->part[i - base] = w->ret[i];
    }
    for (size_t j = 0; j < n; j++) {
        size_t from = ord[j];
        w->mstart[a + j] = at;
        w->mload[a + j] = load[from];
        for (size_t i = start[from]; i < start[from + 1]; i++, at++) {
            w->seq[at] = KEY_SAMPLE(w->key[i - base]);
            w->slen[at] = KEY_LEN(w->key[i - base]);
            w->sf[at] = w->w[i - base];
            w->ret[at] = (int16_t)w->part[i - base];
        }
    }
}

/* equal_mbs: one count m for every DP rank, the smallest that every rank's strided
 * split and DACP accept (a rank with fewer than m sequences gets empty micro-batches);
 * m = the largest rank's sequence count always succeeds. */
static vl_status common_gds(gds_ctx *g, int dp, vl_err *err)
{
    vl_sk_work *w = g->w;
    size_t m = 1, most = 0;
    vl_status st;

    for (int d = 0; d < dp; d++) {
        size_t k = w->rstart[d + 1] - w->rstart[d];
        uint64_t sum = 0;
        for (size_t i = w->rstart[d]; i < w->rstart[d + 1]; i++)
            sum += KEY_LEN(w->byrank[i]);
        most = k > most ? k : most;
        if ((sum + g->capacity - 1) / g->capacity > m)
            m = (size_t)((sum + g->capacity - 1) / g->capacity);
    }
    if ((st = grow_mbs(w, most * (size_t)dp + 1, err)) != VL_OK)
        return st;
    for (; m <= most; m++) {
        uint64_t rollbacks = g->d.rollbacks;
        int d = 0;
        w->nseq = w->nmb = 0;
        for (; d < dp; d++) {
            w->rmb[d] = w->nmb;
            if (!try_interleave(g, w->byrank + w->rstart[d], w->rstart[d + 1] - w->rstart[d],
                                m))
                break;
        }
        if (d == dp) {
            w->rmb[dp] = w->nmb;
            for (d = 0; d < dp; d++) {
                w->stat_empty +=
                    m - (w->rstart[d + 1] - w->rstart[d] < m ? w->rstart[d + 1] - w->rstart[d]
                                                             : m);
                heaviest_first(w, w->rmb[d], w->rmb[d + 1]);
            }
            return VL_OK;
        }
        g->d.rollbacks = rollbacks;
        w->stat_retries++;
    }
    if (most == 0) {
        for (int d = 0; d <= dp; d++)
            w->rmb[d] = 0;
        return VL_OK;
    }
    return vl_seterr(err, VL_EINTERNAL,
                     "skrull: a sequence of this batch does not fit "
                     "C·N = %llu tokens",
                     (unsigned long long)g->capacity);
}

/* Next-fit in sampler order, each micro-batch then sorted ascending for DACP. */
static vl_status rank_next_fit(gds_ctx *g, uint64_t *sub, size_t k, vl_err *err)
{
    for (size_t i = 0; i < k;) {
        size_t j = i;
        uint64_t sum = 0;
        while (j < k && sum + KEY_LEN(sub[j]) <= g->capacity)
            sum += KEY_LEN(sub[j++]);
        if (j == i)
            return vl_seterr(err, VL_EINTERNAL,
                             "skrull: a sequence of %u tokens does not "
                             "fit C·N = %llu",
                             KEY_LEN(sub[i]), (unsigned long long)g->capacity);
        vl_sort_u64(sub + i, j - i);
        mb_open(g);
        for (size_t t = i; t < j; t++)
            mb_add(g, sub[t]);
        if (!mb_close(g)) /* cannot happen: DACP accepts any micro-batch ≤ C·N */
            return vl_seterr(err, VL_EINTERNAL,
                             "skrull: DACP refused a micro-batch of "
                             "%llu tokens",
                             (unsigned long long)sum);
        i = j;
    }
    return VL_OK;
}

/* equal_mbs without GDS: a rank short of the busiest's count gets empty micro-batches
 * at its end.
 * Rank d's micro-batch j moves to d·most + j, never to a lower index, so mstart is
 * rewritten in place from the back. */
static vl_status pad_ranks(vl_sk_work *w, int dp, vl_err *err)
{
    size_t most = 0;
    vl_status st;

    for (int d = 0; d < dp; d++)
        if (w->rmb[d + 1] - w->rmb[d] > most)
            most = w->rmb[d + 1] - w->rmb[d];
    if ((st = grow_mbs(w, most * (size_t)dp + 1, err)) != VL_OK)
        return st;
    w->mstart[most * (size_t)dp] = w->nseq;
    for (int d = dp; d-- > 0;) {
        size_t count = w->rmb[d + 1] - w->rmb[d];
        for (size_t j = most; j-- > 0;)
            w->mstart[(size_t)d * most + j] = w->mstart[w->rmb[d] + (j < count ? j : count)];
        w->stat_empty += most - count;
    }
    for (int d = 0; d <= dp; d++)
        w->rmb[d] = (size_t)d * most;
    w->nmb = most * (size_t)dp;
    return VL_OK;
}

vl_status vl__sk_gds(vl_sk_work *w, const vl_sk_setting *s, const uint32_t *samples, size_t n,
                     const uint32_t *len, vl_sk_flops_fn F, const void *ud, vl_err *err)
{
    gds_ctx g = {
        .w = w, .s = s, .F = F, .ud = ud, .capacity = (uint64_t)s->bucket * (uint64_t)s->cp};
    vl_status st = grow_items(w, n, s->dp, s->cp, err);

    if (st != VL_OK)
        return st;
    g.d = (vl_sk_dacp){.bucket = s->bucket,
                       .n = s->cp,
                       .mode = s->rollback,
                       .place = s->placement,
                       .slack = s->slack,
                       .rb = w->rb,
                       .load = w->load};
    for (size_t i = 0; i < n; i++) {
        w->key[i] = (uint64_t)len[samples[i]] << 32 | samples[i];
        w->w[i] = s->gds ? F(ud, len[samples[i]]) : 0;
    }
    if (s->gds)
        st = vl_partition_lpt(w->part, w->w, n, s->dp, err);
    else
        split_contiguous(w->part, n, s->dp);
    if (st != VL_OK)
        return st;
    group_by_rank(w, n, s->dp);
    for (int d = 0; d < s->dp; d++)
        if (s->gds)
            vl_sort_u64(w->byrank + w->rstart[d], w->rstart[d + 1] - w->rstart[d]);
    w->nseq = w->nmb = 0;
    w->mstart[0] = 0;
    if (s->gds && s->equal_mbs)
        st = common_gds(&g, s->dp, err);
    for (int d = 0; d < s->dp && st == VL_OK && !(s->gds && s->equal_mbs); d++) {
        uint64_t *sub = w->byrank + w->rstart[d];
        size_t k = w->rstart[d + 1] - w->rstart[d];
        w->rmb[d] = w->nmb;
        st = s->gds ? rank_gds(&g, sub, k, err) : rank_next_fit(&g, sub, k, err);
    }
    if (!(s->gds && s->equal_mbs))
        w->rmb[s->dp] = w->nmb;
    if (st != VL_OK)
        return st;
    w->stat_rollbacks += g.d.rollbacks;
    return s->equal_mbs && !s->gds ? pad_ranks(w, s->dp, err) : VL_OK;
}
