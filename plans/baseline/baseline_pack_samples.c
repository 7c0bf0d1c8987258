/* plans/baseline/baseline_pack_samples.c -- `pack` with pack.deal=samples (epoch scope,
 * the default): where whole packs are too coarse to balance, an iteration's samples are
 * dealt to the ranks one by one, as veRL deals a batch, and each rank packs its share.
 *
 * An iteration has m = np/dp micro-batch slots per rank for its packs.  With few packs
 * per rank every pack is a large step of cost, and where the packs are not a multiple of
 * dp a rank runs an empty slot (Azure conversations at 32K on 32 ranks: two packs per
 * rank, the busiest rank 3% over the mean in tokens).  Here the samples of the
 * iteration's packs are partitioned over the dp ranks by Karmarkar-Karp
 * (lib/pack/partition.c) on a per-sample weight, and each rank packs its share with
 * pack.algo into at most m packs of training.max_seq_len; its other slots are empty
 * (capacity 0).  Weights a*len + b*pairs: the pack.balance weight (time: the cost model
 * linearised at a full pack, the shape of veRL's 24576*len + len^2), tokens, and the
 * balance weight with attention counted MIX_ATTN times; each by KK with free part sizes
 * and by veRL's equal-count KK -- KK balances one number, and a candidate must also fit
 * m packs per rank, which the tokens decide.  A candidate where some rank's share does not
 * fit is out (not packed where a rank's tokens alone exceed its slots), and one repeating
 * an earlier candidate's partition is not packed again.  The iteration keeps whichever
 * candidate, or the whole-pack dealing (vl__pk_deal), has the least loaded busiest rank, a
 * rank's load being the pack.balance weight of its packs (vl__pk_weight) summed; ties go to
 * the lesser modelled time under pack.balance=tokens or attention, and keep whole packs
 * under time.  veRL's own dealing (baseline_verl.c) is one more candidate: its
 * micro-batches are balanced, not full, and may outnumber the slots -- on long samples
 * (Mooncake-like at 32K on 32 ranks) three balanced micro-batches per rank beat two full
 * packs by 1.9% in modelled time, and the epoch's fill pays for it.  The kept dealing is
 * then refined by pack swaps (baseline_pack_refine.c) and sample moves
 * (baseline_pack_shift.c).  So an iteration never balances worse than whole packs under
 * pack.balance; it uses more slots only where veRL's dealing wins.
 * Whole packs only (samples_apply): under pack.deal=packs; with training.oversize=split
 * (their dealing keeps the pieces of a sample on different ranks); with pack.window (a
 * pack keeps to its window); with one round per iteration (m = 1: idle ranks would get
 * packs of their own, trading fill for time without bound); and when an iteration's
 * samples times dp exceed SAMPLES_WORK (KK's work; a million ranks): a count, never a
 * clock. */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"
#include "rng.h"
#include "sort.h"

#define STREAM_RANK 0x504B524B00000000ull /* "PKRK": a rank's packer in samples dealing */
#define SAMPLES_WORK (1ull << 26)
/* veRL's dealing splits each rank's share by KK into its micro-batch count: work of the
 * order samples x micro-batches per rank, tried only up to this (a count, never a clock;
 * one iteration of a million samples on 8 ranks would take minutes) */
#define VERL_WORK (1ull << 22)
#define MIX_ATTN 4.0
#define CANDIDATES 6 /* sample partitions: three weightings, each plain and equal-count */

/* Scratch of one iteration: its samples, their weights and ranks, grouped by rank. */
typedef struct samples {
    uint32_t *items, *grouped;
    uint32_t *order; /* [n + dp] by length descending, then index; then placeholders */
    double *w;
    double *pairs; /* [n] each sample's causal pairs, for every weighting */
    int *part;
    size_t *off;        /* [dp + 1] */
    struct rsum *ranks; /* [dp] scratch of rank_order */
    uint8_t *seen;      /* [CANDIDATES * n] the partitions tried, one after another */
    size_t n, nseen;
} samples;

/* A rank and its share's weight under the candidate's weighting. */
typedef struct rsum {
    double w;
    size_t r;
} rsum;

void vl__pk_share_free(share *sh, size_t dp)
{
    for (size_t r = 0; sh->bins != NULL && r < dp; r++)
        vl_bins_free(&sh->bins[r]);
    free(sh->bins);
    sh->bins = NULL;
}

static void samples_free(samples *s)
{
    free(s->items);
    free(s->grouped);
    free(s->order);
    free(s->w);
    free(s->pairs);
    free(s->part);
    free(s->off);
    free(s->ranks);
    free(s->seen);
}

/* The cost model's time of a pack as a*tokens + b*pairs at full capacity: one sequence
 * of cap tokens and two of cap/2 have the same tokens (the same GEMM efficiency) and
 * differ only in attention pairs. */
void vl__pk_linear_time(const bl *c, double *a, double *b)
{
    const vl_par *par = &c->par;
    int pp = par->pp < 1 ? 1 : par->pp;
    uint32_t cap = c->t->max_seq_len, h = cap / 2;

    *a = 1;
    *b = 0;
    if (c->job->cost == NULL)
        return;
    int layers = vl_cost_stage_layers(c->job->cost, pp, 0);
    vl_seg one = {0, 0, cap}, two[2] = {{0, 0, h}, {1, 0, cap - h}};
    vl_mb_time t1 = vl_cost_mb_time(c->job->cost, &one, 1, par, layers, pp == 1);
    vl_mb_time t2 = vl_cost_mb_time(c->job->cost, two, 2, par, layers, pp == 1);
    double p1 = vl_cost_pairs(0, cap), p2 = vl_cost_pairs(0, h) + vl_cost_pairs(0, cap - h);

    *b = p1 > p2 ? ((t1.fwd + t1.bwd) - (t2.fwd + t2.bwd)) / (p1 - p2) : 0;
    *b = *b > 0 ? *b : 0;
    *a = ((t1.fwd + t1.bwd) - *b * p1) / (double)cap;
}

void vl__pk_linear(const bl *c, double *a, double *b)
{
    vl_pack_balance bal = c->job->cfg->pack.balance;

    *a = bal == VL_BALANCE_ATTENTION ? 0 : 1;
    *b = bal == VL_BALANCE_ATTENTION ? 1 : 0;
    if (bal == VL_BALANCE_TIME)
        vl__pk_linear_time(c, a, b);
}

static void sample_weights(const bl *c, samples *s, double a, double b)
{
    const uint32_t *len = pk_ctx(c)->len;

    for (size_t i = 0; i < s->n; i++)
        s->w[i] = a * len[s->items[i]] + b * s->pairs[i];
}

/* Group s->items by s->part (stable): rank r's in grouped[off[r] .. off[r + 1]). */
static void group_by_rank(samples *s, size_t dp)
{
    memset(s->off, 0, (dp + 1) * sizeof *s->off);
    for (size_t i = 0; i < s->n; i++)
        s->off[s->part[i] + 1]++;
    for (size_t r = 0; r < dp; r++)
        s->off[r + 1] += s->off[r];
    for (size_t i = 0; i < s->n; i++)
        s->grouped[s->off[s->part[i]]++] = s->items[i];
    memmove(s->off + 1, s->off, dp * sizeof *s->off);
    s->off[0] = 0;
}

static int heavier_rank(const void *a, const void *b)
{
    const rsum *x = a, *y = b;

    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->r > y->r) - (x->r < y->r);
}

/* s->ranks: the ranks by their share's weight, heaviest first (lower rank on ties). */
static void rank_order(samples *s, size_t dp)
{
    for (size_t r = 0; r < dp; r++)
        s->ranks[r] = (rsum){0, r};
    for (size_t i = 0; i < s->n; i++)
        s->ranks[s->part[i]].w += s->w[i];
    qsort(s->ranks, dp, sizeof *s->ranks, heavier_rank);
}

/* Rank r's packs into sh's maxima: load (Σ vl__pk_weight) and, when timed, modelled
 * time.  A load above limit beats the share: it cannot be kept. */
static vl_status weigh_rank(bl *c, dealer *d, share *sh, size_t r, double limit, vl_err *err)
{
    bool timed = vl__pk_primary(c) != VL__PK_TIME;
    const vl_bins *b = &sh->bins[r];
    double load = 0, time = 0, w;
    vl_status st = VL_OK;

    for (size_t q = 0; q < b->n && st == VL_OK; q++) {
        const uint32_t *it = b->items + b->start[q];
        size_t k = b->start[q + 1] - b->start[q];
        st = vl__pk_weight(c, d, it, k, &w, err);
        load += w;
        if (st == VL_OK && timed)
            st = vl__pk_time(c, d, it, k, &w, err);
        time += timed ? w : 0;
    }
    sh->worst = load > sh->worst ? load : sh->worst;
    sh->time = time > sh->time ? time : sh->time;
    sh->beaten |= load > limit;
    return st;
}

/* sh->time is the busiest rank's load where pack.balance=time. */
static void untimed(const bl *c, share *sh)
{
    if (vl__pk_primary(c) == VL__PK_TIME)
        sh->time = sh->worst;
}

/* s->part: s's samples partitioned by their weights, plain or with equal counts. */
static vl_status partition(const bl *c, samples *s, bool equal, vl_err *err)
{
    size_t np = (s->n + c->dp - 1) / c->dp * c->dp; /* zero-weight placeholders */

    for (size_t i = s->n; i < np; i++)
        s->w[i] = 0;
    for (size_t i = s->n; i < np; i++)
        s->order[i] = (uint32_t)i;
    return equal ? vl_partition_kk_equal_ordered(s->part, s->w, s->order, np, (int)c->dp, err)
                 : vl_partition_kk_ordered(s->part, s->w, s->order, s->n, (int)c->dp, err);
}

/* Was s->part tried before?  Its share would be that candidate's to the bit (the same
 * samples per rank, each rank packed from the same stream), which best_share kept or
 * let go already: a copy is never strictly lighter than the best, nor passes a limit
 * that only falls.  Otherwise it is remembered, a byte a sample (with more than 256
 * ranks nothing is: that only costs time).  On Mooncake lengths the tokens weighting's
 * plain and equal-count KK give the same partition. */
static bool seen_before(samples *s, size_t dp)
{
    size_t n = s->n;

    if (dp > UINT8_MAX + 1)
        return false;
    for (size_t k = 0; k < s->nseen; k++) {
        const uint8_t *x = s->seen + k * n;
        size_t i = 0;
        while (i < n && x[i] == s->part[i])
            i++;
        if (i == n)
            return true;
    }
    if (s->nseen < CANDIDATES) {
        uint8_t *x = s->seen + s->nseen++ * n;
        for (size_t i = 0; i < n; i++)
            x[i] = (uint8_t)s->part[i];
    }
    return false;
}

/* Can every rank's share fit its m packs?  Not where its tokens (or samples, under
 * pack.max_samples) exceed m packs' worth: whatever pack.algo does, such a share is out
 * (try_share would stop at that rank, or at a busier one beaten first), so it is not
 * packed at all.  Nearly full iterations (1M LMSYS lengths at 8K: 99.8% of the slots)
 * fail here for most sample partitions.  O(n + dp). */
static bool may_fit(const bl *c, const samples *s, size_t m)
{
    const uint32_t *len = pk_ctx(c)->len;
    uint64_t cap = (uint64_t)m * c->t->max_seq_len, items = c->job->cfg->pack.max_samples;

    for (size_t r = 0; r < c->dp; r++) {
        uint64_t tok = 0;
        for (size_t i = s->off[r]; i < s->off[r + 1]; i++)
            tok += len[s->grouped[i]];
        if (tok > cap || (items > 0 && s->off[r + 1] - s->off[r] > m * items))
            return false;
    }
    return true;
}

/* Pack every rank's share of the partition s->part, and weigh the busiest rank.  The
 * ranks go heaviest share first and stop at one whose load passes limit: such a share
 * is never kept (best_share), and the other ranks' packs would be thrown away. */
static vl_status try_share(bl *c, dealer *d, samples *s, size_t m, double limit, share *sh,
                           vl_err *err)
{
    /* batch << 32 | rank is injective for both below 2^32, and adding the mixed tag is a
     * bijection: within an epoch every (batch, rank) gets its own stream. */
    uint64_t stream =
        vl_rng_mix(STREAM_RANK ^ (uint64_t)c->epoch) + ((uint64_t)c->batch << 32);
    vl_status st = VL_OK;

    sh->beaten = false;
    sh->m = m;
    sh->worst = sh->time = 0;
    sh->bins = calloc(c->dp, sizeof *sh->bins);
    if (sh->bins == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory dealing %zu samples", s->n);
    group_by_rank(s, c->dp);
    if (!(sh->fits = may_fit(c, s, m)))
        return VL_OK;
    rank_order(s, c->dp);
    for (size_t j = 0; j < c->dp && st == VL_OK && sh->fits && !sh->beaten; j++) {
        size_t r = s->ranks[j].r;
        vl_pack_opts po = vl__pk_opts(c, stream + (uint64_t)r);
        vl_bins *b = &sh->bins[r];
        st = vl_pack(b, s->grouped + s->off[r], s->off[r + 1] - s->off[r], pk_ctx(c)->len, &po,
                     err);
        sh->fits = st == VL_OK && b->n <= m;
        if (sh->fits)
            st = weigh_rank(c, d, sh, r, limit, err);
    }
    untimed(c, sh);
    return st;
}

vl_status vl__pk_share_weigh(bl *c, dealer *d, share *sh, double limit, vl_err *err)
{
    vl_status st = VL_OK;

    sh->worst = sh->time = 0;
    sh->beaten = false;
    for (size_t r = 0; r < c->dp && st == VL_OK && !sh->beaten; r++)
        st = weigh_rank(c, d, sh, r, limit, err);
    untimed(c, sh);
    return st;
}

/* The share as m slots per rank (rank r: entries r*m ..., its packs then empty ones),
 * dealt to their ranks in d, refined as whole packs are, and emitted. */
static vl_status emit_share(bl *c, dealer *d, const share *sh, vl_err *err)
{
    size_t m = sh->m, np = c->dp * m, total = 0, pos = 0;
    packs pk = {.n = np};
    vl_status st = vl__pk_dealer_reserve(d, np, err);

    for (size_t r = 0; r < c->dp; r++)
        total += sh->bins[r].start[sh->bins[r].n];
    pk.items = malloc((total ? total : 1) * sizeof *pk.items);
    pk.off = malloc(np * sizeof *pk.off);
    pk.cnt = malloc(np * sizeof *pk.cnt);
    if (st == VL_OK && (pk.items == NULL || pk.off == NULL || pk.cnt == NULL))
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", np);
    for (size_t e = 0; e < np && st == VL_OK; e++) {
        const vl_bins *b = &sh->bins[e / m];
        size_t j = e % m, k = j < b->n ? b->start[j + 1] - b->start[j] : 0;
        if (k > 0)
            memcpy(pk.items + pos, b->items + b->start[j], k * sizeof *pk.items);
        pk.off[e] = pos;
        pk.cnt[e] = k;
        pos += k;
        d->ids[e] = e;
        d->part[e] = (int)(e / m);
        st = vl__pk_weight(c, d, pk.items + pk.off[e], k, &d->w[e], err);
    }
    if (st == VL_OK && (st = vl__pk_refine_dealt(c, d, &pk, d->ids, np, err)) == VL_OK)
        st = vl__pk_shift_emit(c, d, &pk, d->ids, np, err);
    free(pk.items);
    free(pk.off);
    free(pk.cnt);
    return st;
}

/* The busiest rank's load (d->w) and modelled time when d deals the packs whole:
 * O(np + dp) plus the packs' times under pack.balance=tokens or attention. */
static vl_status packs_worst(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                             share *whole, vl_err *err)
{
    bool timed = vl__pk_primary(c) != VL__PK_TIME;
    double *load = calloc(2 * c->dp, sizeof *load), t;
    vl_status st = VL_OK;

    if (load == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu ranks", c->dp);
    for (size_t p = 0; p < np && st == VL_OK; p++) {
        load[d->part[p]] += d->w[p];
        t = d->w[p];
        if (timed)
            st = vl__pk_time(c, d, pk->items + pk->off[ids[p]], pk->cnt[ids[p]], &t, err);
        load[c->dp + (size_t)d->part[p]] += t;
    }
    whole->worst = whole->time = 0;
    for (size_t r = 0; r < c->dp; r++) {
        whole->worst = load[r] > whole->worst ? load[r] : whole->worst;
        whole->time = load[c->dp + r] > whole->time ? load[c->dp + r] : whole->time;
    }
    free(load);
    return st;
}

/* veRL's own dealing of the samples (baseline_verl.c): equal-count KK on
 * 24576*len + len^2, then each rank's share split by KK into micro-batches balanced in
 * that workload rather than filled one after another.  It may need more slots than the
 * packs (balanced micro-batches are not full): on long samples its finer steps can
 * balance ranks better than full packs do, and its modelled time judges it like the
 * other candidates. */
static vl_status verl_share(bl *c, dealer *d, const samples *s, size_t m, double limit,
                            share *sh, vl_err *err)
{
    size_t mv = 0;
    vl_status st;

    sh->fits = false;
    sh->bins = calloc(c->dp, sizeof *sh->bins);
    if (sh->bins == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory dealing %zu samples", s->n);
    st = vl__verl_deal(c, s->items, s->order, s->n, VL__VERL_LINEAR, sh->bins, &mv, err);
    sh->fits = st == VL_OK;
    sh->verl = true;
    sh->m = mv > m ? mv : m;
    return st == VL_OK ? vl__pk_share_weigh(c, d, sh, limit, err) : st;
}

/* Is a lighter than b under pack.balance, modelled time breaking ties? */
static bool lighter(const share *a, const share *b)
{
    return a->worst < b->worst || (a->worst == b->worst && a->time < b->time);
}

static vl_status samples_init(samples *s, const uint32_t *len, const packs *pk,
                              const size_t *ids, size_t np, size_t dp, vl_err *err)
{
    uint64_t *key;

    memset(s, 0, sizeof *s);
    for (size_t p = 0; p < np; p++)
        s->n += pk->cnt[ids[p]];
    s->items = malloc((s->n ? s->n : 1) * sizeof *s->items);
    s->grouped = malloc((s->n ? s->n : 1) * sizeof *s->grouped);
    s->w = malloc((s->n + dp) * sizeof *s->w);
    s->pairs = malloc((s->n ? s->n : 1) * sizeof *s->pairs);
    s->part = malloc((s->n + dp) * sizeof *s->part);
    s->off = malloc((dp + 1) * sizeof *s->off);
    s->ranks = malloc(dp * sizeof *s->ranks);
    s->order = malloc((s->n + dp) * sizeof *s->order);
    s->seen = malloc((s->n ? CANDIDATES * s->n : 1) * sizeof *s->seen);
    key = malloc((s->n ? s->n : 1) * sizeof *key);
    if (!s->items || !s->grouped || !s->w || !s->pairs || !s->part || !s->off || !s->ranks ||
        !s->order || !s->seen || !key) {
        free(key);
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu samples", s->n);
    }
    for (size_t p = 0, k = 0; p < np; p++) {
        memcpy(s->items + k, pk->items + pk->off[ids[p]], pk->cnt[ids[p]] * sizeof *s->items);
        k += pk->cnt[ids[p]];
    }
    for (size_t i = 0; i < s->n; i++)
        s->pairs[i] = vl_cost_pairs(0, len[s->items[i]]);
    /* every weighting of best_share grows with a sample's length, so this is (nearly
     * always) the order KK sorts each in: sorted once, not once a weighting */
    unsigned bits = vl__pk_index_bits(s->n);
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    for (size_t i = 0; i < s->n; i++)
        key[i] = (uint64_t)(UINT32_MAX - len[s->items[i]]) << bits | i;
    vl_sort_u64(key, s->n);
    for (size_t o = 0; o < s->n; o++)
        s->order[o] = (uint32_t)(key[o] & mask);
    free(key);
    return VL_OK;
}

/* The best of the sample partitions into *best (NULL bins: none fits).  Partitions on
 * the balance weight, on tokens, and on the balance weight with attention counted
 * MIX_ATTN times: KK balances one number, and the cost of a pack is not exactly the
 * sum of its samples' linearised costs, so a neighbour can balance the real cost
 * better; each with equal and with free part sizes; last, veRL's dealing (about a
 * tenth of the dealing's work: pack on 1M samples took 11% more instructions), where its
 * samples times slots stay within VERL_WORK. */
static vl_status best_share(bl *c, dealer *d, samples *s, size_t m, const share *whole,
                            share *best, vl_err *err)
{
    double a, b;
    vl_status st = VL_OK;

    vl__pk_linear(c, &a, &b);
    double mix[][2] = {{a, b}, {1, 0}, {a, MIX_ATTN * b}};
    int nmix = a > 0 && b > 0 ? 3 : a > 0 ? 1 : 2;
    bool verl = (uint64_t)s->n * m <= VERL_WORK;

    best->bins = NULL;
    for (int k = 0; k < 2 * nmix + verl && st == VL_OK; k++) {
        share sh = {0};
        /* a share busier than the best so far or than whole packs is never kept, nor
         * would it be where whole packs win in the end */
        double limit =
            best->bins != NULL && best->worst < whole->worst ? best->worst : whole->worst;
        if (k < 2 * nmix) {
            sample_weights(c, s, mix[k % nmix][0], mix[k % nmix][1]);
            if ((st = partition(c, s, k >= nmix, err)) == VL_OK && !seen_before(s, c->dp))
                st = try_share(c, d, s, m, limit, &sh, err);
        } else {
            st = verl_share(c, d, s, m, limit, &sh, err);
        }
        if (st == VL_OK && sh.fits && !sh.beaten &&
            (best->bins == NULL || lighter(&sh, best))) {
            vl__pk_share_free(best, c->dp);
            *best = sh;
        } else {
            vl__pk_share_free(&sh, c->dp);
        }
    }
    return st;
}

/* Whole packs only: under pack.deal=packs; with pieces (whole packs keep a sample's
 * pieces on different ranks); with windows (a pack keeps to its window); with one
 * round (m = 1: dealing samples would give idle ranks packs of their own, more packs
 * than ranks can make up in fill); with one rank (nothing to balance: dealing its
 * samples to it and swapping its packs with itself only cost time -- a whole data set
 * packed on one GPU took 6x the packing). */
static bool samples_apply(const bl *c, size_t m)
{
    const vl_pack_cfg *pc = &c->job->cfg->pack;
    bool windows = pc->window != 0 && pc->window < c->job->sel->n;

    return pc->deal == VL_DEAL_SAMPLES && pk_ctx(c)->pieces.n == 0 && !windows && m >= 2 &&
           c->dp >= 2;
}

vl_status vl__pk_deal_iter(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                           vl_err *err)
{
    size_t m = np / c->dp;
    samples s = {0};
    share best = {0}, whole = {0};
    vl_status st;

    if (!samples_apply(c, m))
        return vl__pk_deal(c, d, pk, ids, np, 0, err);
    if ((st = vl__pk_partition(c, d, pk, ids, np, err)) != VL_OK ||
        (st = vl__pk_refine_dealt(c, d, pk, ids, np, err)) != VL_OK ||
        (st = packs_worst(c, d, pk, ids, np, &whole, err)) != VL_OK)
        return st;
    if ((st = samples_init(&s, pk_ctx(c)->len, pk, ids, np, c->dp, err)) == VL_OK &&
        (uint64_t)s.n * c->dp <= SAMPLES_WORK)
        st = best_share(c, d, &s, m, &whole, &best, err);
    if (st == VL_OK && best.bins != NULL && lighter(&best, &whole)) {
        c->dealt_samples++;
        c->dealt_verl += best.verl;
        st = emit_share(c, d, &best, err);
    } else if (st == VL_OK) {
        st = vl__pk_shift_emit(c, d, pk, ids, np, err);
    }
    vl__pk_share_free(&best, c->dp);
    samples_free(&s);
    return st;
}
