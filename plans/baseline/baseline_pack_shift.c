/* plans/baseline/baseline_pack_shift.c -- `pack` with pack.deal=samples: the last step of
 * an iteration's dealing moves single samples between packs of different ranks.
 *
 * Whole packs, and swaps of whole packs (baseline_pack_refine.c), move load in steps of
 * a pack.  When an iteration is nearly full (Azure code at 8K on 32 ranks: 99.98%) the
 * packs cannot be re-cut by rank and one empty slot leaves every other rank a pack's
 * tokens over it; and two packs a rank leave the attention work in coarse steps.  Here,
 * with the micro-batch slots fixed (every rank keeps its m slots; a sample may go into
 * an empty slot, which then holds a pack), a step takes the busiest rank under a target
 * measure and the best of: moving one of its samples into a pack of another rank with
 * room (training.max_seq_len tokens, pack.max_samples), or swapping one of its samples
 * for a lighter one of another rank where both packs keep within capacity -- the best
 * being the one that leaves the larger of the two ranks' loads least, and below the
 * busiest rank's.  A step is taken only where no rank ends above the iteration's busiest
 * in the measures held; modelled time is screened on the cost model linearised per
 * sample and then checked exactly on the two packs changed (a step that would raise the
 * busiest rank's modelled time is undone and ends the pass).
 * Passes: under pack.balance=time, the busiest rank's modelled time itself with nothing
 * else held, then a joint pass lowering the larger of a rank's tokens and attention over
 * their means, holding time only.  Passes by tokens, then attention, each holding the
 * other two (what baseline_pack_refine.c does with whole packs), reached time only through
 * them: lognormal(7.5, 1) lengths at 32K on 32 ranks, two full packs a rank, take 5.2% less
 * modelled epoch time with the time pass, lognormal(8, 1) 0.6%, Mooncake-like 1.2%; run
 * after it they changed no figure of bench/RESULTS.md's pack table, so they are not run.
 * Under tokens or attention, that measure with nothing held, then the other of the two
 * holding it and time.
 * Work: a step looks at the busiest rank's samples against the samples and packs of the
 * SHIFT_PEERS ranks with the most room (the least of their loads over the maxima, in the
 * target and the measures held), and only where they offer no step, all ranks':
 * O(n + np + dp * SHIFT_PEERS + |h| * (their samples + packs)), the all-ranks fallback
 * O(dp log dp + |h| * (n + np)).  At most n steps per pass; the iteration stops once it
 * has made SHIFT_WORK candidate checks (a count, never a clock; the step that crosses
 * it completes, but a step that alone would make more is not begun: the iteration's
 * pass ends, so one iteration of a million samples stays linear).  Those checks are
 * counted, not all made: the step found is the first least in the order of the scan of
 * every pair (i; its moves by pack; its swaps by partner), but a sample whose own weight
 * cannot bring the busiest rank below the best step so far is passed over, a move is
 * looked at once a receiving rank (its packs up to the first with room), and a swap only
 * against the partners whose key (tokens, or the time weight, monotone in them) lies in
 * the window where it can beat the best; each peer's samples are in key order, sorted
 * once an iteration. */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack_shift.h"
#include "sort.h"

static void shift_free(shift *s)
{
    free(s->item);
    free(s->at);
    for (int k = 0; k < NMEAS; k++) {
        free(s->w[k]);
        free(s->load[k]);
    }
    free(s->tok);
    free(s->time);
    free(s->cnt);
    free(s->rank);
    free(s->mine);
    free(s->theirs);
    free(s->ord);
    free(s->off);
    free(s->tkey);
    free(s->ttok);
    free(s->slot_of);
    free(s->keyed);
    free(s->packed);
    free(s->slots);
    free(s->qoff);
    free(s->room);
    free(s->tmp);
    free(s->peer);
    free(s->full);
    free(s->all);
}

static vl_status shift_alloc(shift *s, vl_err *err)
{
    size_t n = s->n ? s->n : 1;
    bool ok = true;

    s->item = malloc(n * sizeof *s->item);
    s->at = malloc(n * sizeof *s->at);
    for (int k = 0; k < NMEAS; k++) {
        s->w[k] = malloc(n * sizeof(double));
        s->load[k] = calloc(s->dp, sizeof(double));
        ok = ok && s->w[k] && s->load[k];
    }
    s->tok = calloc(s->np, sizeof *s->tok);
    s->time = calloc(s->np, sizeof *s->time);
    s->cnt = calloc(s->np, sizeof *s->cnt);
    s->rank = malloc(s->np * sizeof *s->rank);
    s->mine = malloc(n * sizeof *s->mine);
    s->theirs = malloc(n * sizeof *s->theirs);
    s->ord = malloc(n * sizeof *s->ord);
    s->off = malloc((s->dp + 1) * sizeof *s->off);
    s->tkey = malloc(n * sizeof *s->tkey);
    s->ttok = malloc(n * sizeof *s->ttok);
    s->slot_of = malloc(s->dp * sizeof *s->slot_of);
    s->keyed = malloc(n * sizeof *s->keyed);
    s->packed = malloc(n * sizeof *s->packed);
    s->qoff = malloc((s->dp + 1) * sizeof *s->qoff);
    s->room = malloc(s->dp * sizeof *s->room);
    s->slots = malloc(s->np * sizeof *s->slots);
    s->tmp = malloc(n * sizeof *s->tmp);
    s->peer = malloc(s->dp * sizeof *s->peer);
    s->full = malloc(s->dp * sizeof *s->full);
    s->all = malloc(s->dp * sizeof *s->all);
    ok = ok && s->item && s->at && s->tok && s->time && s->cnt && s->rank && s->mine &&
         s->theirs && s->ord && s->off && s->tkey && s->ttok && s->slot_of && s->keyed &&
         s->packed && s->slots && s->qoff && s->room && s->tmp && s->peer && s->full && s->all;
    for (size_t r = 0; ok && r < s->dp; r++)
        s->slot_of[r] = SIZE_MAX;
    return ok ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory for %zu samples", s->n);
}

/* Pack q's exact modelled time from its members (in sample order). */
static vl_status pack_time(shift *s, size_t q, vl_err *err)
{
    size_t k = 0;

    for (size_t i = 0; i < s->n; i++)
        if (s->at[i] == q)
            s->tmp[k++] = s->item[i];
    s->work += s->n;
    return s->in->time(s->in->ctx, s->tmp, k, &s->time[q], err);
}

static vl_status shift_init(shift *s, const packs *pk, const int *part, vl_err *err)
{
    const vl__pk_shift_in *in = s->in;
    vl_status st;

    for (size_t p = 0; p < s->np; p++)
        s->n += pk->cnt[p];
    s->nonneg = true;
    if ((st = shift_alloc(s, err)) != VL_OK)
        return st;
    for (size_t p = 0, i = 0; p < s->np; p++) {
        s->rank[p] = part[p];
        for (size_t k = 0; k < pk->cnt[p]; k++, i++) {
            uint32_t it = pk->items[pk->off[p] + k], l = in->len[it];
            s->item[i] = it;
            s->at[i] = p;
            s->w[1][i] = l;
            s->w[2][i] = vl_cost_pairs(0, l);
            s->w[0][i] = in->a * l + in->b * s->w[2][i];
            s->nonneg = s->nonneg && s->w[0][i] >= 0;
            s->tok[p] += l;
            s->cnt[p]++;
            s->load[1][s->rank[p]] += s->w[1][i];
            s->load[2][s->rank[p]] += s->w[2][i];
        }
    }
    for (int k = 1; k < NMEAS; k++) {
        for (size_t r = 0; r < s->dp; r++)
            s->mean[k] += s->load[k][r] / (double)s->dp;
        s->mean[k] = s->mean[k] > 0 ? s->mean[k] : 1;
    }
    for (size_t p = 0; p < s->np && st == VL_OK; p++) {
        if (in->times != NULL)
            s->time[p] = in->times[p];
        else
            st = in->time(in->ctx, pk->items + pk->off[p], pk->cnt[p], &s->time[p], err);
        s->load[0][s->rank[p]] += s->time[p];
    }
    return st;
}

static size_t argmax(const double *x, size_t n)
{
    size_t at = 0;
    for (size_t i = 1; i < n; i++)
        at = x[i] > x[at] ? i : at;
    return at;
}
/* Move sample i to pack q (its tokens, count and rank loads follow). */
static void move(shift *s, size_t i, size_t q)
{
    size_t p = s->at[i];

    s->tok[p] -= s->w[1][i];
    s->tok[q] += s->w[1][i];
    s->cnt[p]--;
    s->cnt[q]++;
    for (int k = 1; k < NMEAS; k++) {
        s->load[k][s->rank[p]] -= s->w[k][i];
        s->load[k][s->rank[q]] += s->w[k][i];
    }
    s->at[i] = q;
}

/* Re-time packs p and q exactly after a step. */
static vl_status retime(shift *s, size_t p, size_t q, vl_err *err)
{
    vl_status st;

    s->load[0][s->rank[p]] -= s->time[p];
    s->load[0][s->rank[q]] -= s->time[q];
    if ((st = pack_time(s, p, err)) == VL_OK)
        st = pack_time(s, q, err);
    s->load[0][s->rank[p]] += s->time[p];
    s->load[0][s->rank[q]] += s->time[q];
    return st;
}

/* Take step b (busiest rank h); undo it where it raises the busiest modelled time while
 * time is held (*taken false). */
static vl_status take(shift *s, step b, size_t h, bool *taken, vl_err *err)
{
    size_t p = s->at[b.i], q = b.q, r = (size_t)s->rank[q];
    vl_status st;

    move(s, b.i, q);
    if (b.j != SIZE_MAX)
        move(s, b.j, p);
    if ((st = retime(s, p, q, err)) != VL_OK)
        return st;
    *taken = !(s->hold & 1) || (s->load[0][h] <= s->max[0] && s->load[0][r] <= s->max[0]);
    if (*taken)
        return VL_OK;
    if (b.j != SIZE_MAX)
        move(s, b.j, q);
    move(s, b.i, p);
    return retime(s, p, q, err);
}

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;

    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The samples in the order of pass t's key (weights never change within a pass): by
 * tokens, sorted once, where the key is monotone in them (always, but for a linearised
 * time with a negative coefficient), else by the key itself.  Equal keys may come in any
 * order: best_swap breaks ties by index. */
static void order_by_key(shift *s, int t)
{
    const double *key = s->w[key_of(t)];
    bool sorted = s->by_len;

    if (!s->by_len) {
        unsigned bits = vl__pk_index_bits(s->n);
        uint64_t mask = ((uint64_t)1 << bits) - 1;
        for (size_t i = 0; i < s->n; i++)
            s->packed[i] = (uint64_t)s->w[1][i] << bits | i;
        vl_sort_u64(s->packed, s->n);
        for (size_t o = 0; o < s->n; o++)
            s->ord[o] = (uint32_t)(s->packed[o] & mask);
        s->by_len = sorted = true;
    }
    for (size_t o = 1; o < s->n && sorted; o++)
        sorted = key[s->ord[o - 1]] <= key[s->ord[o]];
    if (sorted)
        return;
    for (size_t i = 0; i < s->n; i++)
        s->keyed[i] = (struct keyed){key[i], i};
    qsort(s->keyed, s->n, sizeof *s->keyed, by_key);
    for (size_t o = 0; o < s->n; o++)
        s->ord[o] = s->keyed[o].i;
    s->by_len = false;
}

/* Lower the busiest rank's measure t, holding the measures in hold. */
static vl_status pass(shift *s, int t, unsigned hold, vl_err *err)
{
    vl_status st = VL_OK;
    bool taken = true;

    s->hold = hold;
    order_by_key(s, t);
    for (int k = 0; k < NMEAS; k++)
        s->max[k] = s->load[k][argmax(s->load[k], s->dp)];
    for (size_t n = 0; n < s->n && s->work < SHIFT_WORK && taken && st == VL_OK; n++) {
        size_t h = 0;
        for (size_t r = 1; r < s->dp; r++)
            h = vl__pk_shift_target(s, t, r) > vl__pk_shift_target(s, t, h) ? r : h;
        step b = vl__pk_shift_best(s, t, h);
        if (b.i == SIZE_MAX)
            break;
        st = take(s, b, h, &taken, err);
    }
    return st;
}

/* The shifted samples back into pk, grouped by pack in sample order. */
static void regroup(const shift *s, packs *pk)
{
    for (size_t q = 0; q < s->np; q++) {
        pk->off[q] = q ? pk->off[q - 1] + s->cnt[q - 1] : 0;
        pk->cnt[q] = 0;
    }
    for (size_t i = 0; i < s->n; i++)
        pk->items[pk->off[s->at[i]] + pk->cnt[s->at[i]]++] = s->item[i];
}

vl_status vl__pk_shift(const vl__pk_shift_in *in, packs *pk, const int *part, vl_err *err)
{
    shift s = {
        .in = in, .np = pk->n, .dp = in->dp, .cap = in->cap, .max_items = in->max_items};
    vl_status st = shift_init(&s, pk, part, err);

    if (st == VL_OK && in->primary == VL__PK_TIME) {
        st = pass(&s, VL__PK_TIME, 0, err);
        if (st == VL_OK)
            st = pass(&s, JOINT, 1u << VL__PK_TIME, err);
    } else if (st == VL_OK) {
        st = pass(&s, in->primary, 0, err);
        if (st == VL_OK)
            st = pass(&s, VL__PK_TOK + VL__PK_ATT - in->primary, VL__PK_ALL, err);
    }
    if (st == VL_OK)
        regroup(&s, pk);
    shift_free(&s);
    return st;
}
