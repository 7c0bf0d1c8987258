/* plans/baseline/baseline_pack_refine.c -- `pack` with pack.deal=samples: after a dealing,
 * swap packs between ranks to even out pack.balance's own measure, then the other one of
 * tokens and attention, where that costs nothing in the rest.
 *
 * KK on the packs' weights balances one number; many dealings are about as good there
 * and they differ in how attention work (Σ len²) and tokens fall.  Under
 * pack.balance=time the cost model's attention term is the part least sure to carry
 * over to a real GPU (its efficiency depends on the lengths), and tokens set activation
 * memory, so among dealings no slower we prefer the one with the fewest tokens and the
 * least attention on its busiest rank: targets tokens, then attention (that order did a
 * little better on both on the Azure traces), each taken only where no rank ends above
 * the iteration's busiest in the other two measures.  Under pack.balance=tokens or
 * attention the user asked for that measure: it is lowered first with nothing else
 * held (primary), then the other of the two, holding the primary and time.  A pass:
 * repeatedly the rank with the most of the target swaps one of its packs for a pack of
 * another rank -- the swap that lowers the larger of the two ranks' target the most.
 * Swaps keep every rank's pack count.  At most n swaps per target, and a swap costs
 * (packs of the rank) x n pair checks; the search stops after REFINE_WORK of them (a
 * count, never a clock), and before a step that alone would make more. */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"

#define REFINE_WORK (1ull << 24)
#define NMEAS 3 /* time, tokens, attention */

typedef struct refine {
    const double *w[NMEAS]; /* [n] per pack */
    double *load[NMEAS];    /* [dp] per rank */
    double max[NMEAS];      /* the busiest rank's, before the swaps */
    int *part;
    size_t *other; /* [n] this step's packs of ranks other than h */
    size_t *byw;   /* [n] each rank's packs by (target weight, index), rank by rank */
    size_t *seg;   /* [dp + 1] rank r's packs are byw[seg[r] .. seg[r + 1]) */
    size_t n, dp;
    unsigned hold; /* measures a swap may not raise above max (bit k) */
    uint64_t work;
} refine;

typedef struct swap {
    size_t p, q;
    double after; /* the larger of the two ranks' target after it */
} swap;

static size_t argmax(const double *x, size_t n)
{
    size_t at = 0;
    for (size_t i = 1; i < n; i++)
        at = x[i] > x[at] ? i : at;
    return at;
}

/* Would swapping p (rank h) and q (rank r) keep both ranks within the maxima of the
 * measures held (bit k of hold: measure k)? */
static bool keeps_others(const refine *f, int t, size_t p, size_t q, size_t h, size_t r)
{
    for (int k = 0; k < NMEAS; k++) {
        double d = f->w[k][p] - f->w[k][q];
        if (k != t && (f->hold >> k & 1) &&
            (f->load[k][r] + d > f->max[k] || f->load[k][h] - d > f->max[k]))
            return false;
    }
    return true;
}

/* The best swap of a pack of rank h for a pack of another rank (p = SIZE_MAX: none).
 * The packs of other ranks are listed once a step, so a pair check costs nothing for a
 * pack of h itself: one rank with every pack (one GPU) was |h| x n for no candidate.
 * The work count stays n per pack of h, so the search stops where it always did. */
static swap best_swap(refine *f, int t, size_t h)
{
    const double *w = f->w[t], *ld = f->load[t];
    swap best = {SIZE_MAX, SIZE_MAX, ld[h]};
    size_t no = 0, mine = 0;

    for (size_t q = 0; q < f->n; q++) {
        if (f->part[q] != (int)h)
            f->other[no++] = q;
        else
            mine++;
    }
    /* a step dearer than the whole budget (a whole data set in one iteration on a few
     * ranks) is not begun: the search ends, and one huge iteration stays linear */
    if ((uint64_t)mine * f->n > REFINE_WORK) {
        f->work = REFINE_WORK;
        return best;
    }
    for (size_t p = 0; p < f->n; p++) {
        if (f->part[p] != (int)h)
            continue;
        f->work += f->n;
        for (size_t b = 0; b < no; b++) {
            size_t q = f->other[b], r = (size_t)f->part[q];
            double d = w[p] - w[q];
            if (d <= 0)
                continue;
            /* the held measures are checked only for a swap that would be taken: the
             * same swap wins, for far fewer checks */
            double after = ld[h] - d > ld[r] + d ? ld[h] - d : ld[r] + d;
            if (after < best.after && keeps_others(f, t, p, q, h, r))
                best = (swap){p, q, after};
        }
    }
    return best;
}

/* ---- the same search by key windows ---------------------------------------------
 * For a pack p of h and a rank r, after(q) = max(ld[h] - d, ld[r] + d), d = w[p] - w[q]:
 * ld[r] + d rises as w[q] falls and ld[h] - d as it grows (rounding is monotone), so over
 * r's packs in weight order after() falls to where the larger term changes and rises
 * from there.  Scanning outward from that point while after() can still win visits
 * every pack the full scan would take, in a few steps instead of |r|.  The full scan's
 * winner is the least (after, p, q): ties go to the pack met first. */

#define WINDOW_FROM 16 /* packs a rank: below, the full scan is as quick */

typedef struct kw {
    double w;
    size_t i;
} kw;

static int by_weight(const void *a, const void *b)
{
    const kw *x = a, *y = b;

    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static bool kw_less(const double *w, size_t a, size_t b)
{
    return w[a] < w[b] || (w[a] == w[b] && a < b);
}

/* byw and seg for target t: every rank's packs by (weight, index).  VL_ENOMEM. */
static vl_status order_ranks(refine *f, int t, vl_err *err)
{
    kw *tmp = malloc((f->n ? f->n : 1) * sizeof *tmp);

    if (tmp == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", f->n);
    memset(f->seg, 0, (f->dp + 1) * sizeof *f->seg);
    for (size_t p = 0; p < f->n; p++)
        f->seg[f->part[p] + 1]++;
    for (size_t r = 0; r < f->dp; r++)
        f->seg[r + 1] += f->seg[r];
    for (size_t p = 0; p < f->n; p++) /* by rank, index order within one */
        tmp[f->seg[f->part[p]]++] = (kw){f->w[t][p], p};
    for (size_t r = f->dp; r > 0; r--)
        f->seg[r] = f->seg[r - 1];
    f->seg[0] = 0;
    for (size_t r = 0; r < f->dp; r++)
        qsort(tmp + f->seg[r], f->seg[r + 1] - f->seg[r], sizeof *tmp, by_weight);
    for (size_t i = 0; i < f->n; i++)
        f->byw[i] = tmp[i].i;
    free(tmp);
    return VL_OK;
}

/* Does swapping p for q (after: the target's larger load then) beat best? */
static bool beats(swap best, size_t p, size_t q, double after)
{
    if (after != best.after)
        return after < best.after;
    return best.p != SIZE_MAX && (p < best.p || (p == best.p && q < best.q));
}

/* The end of rank r's packs lighter than p: from there on a swap has d <= 0. */
static size_t lighter_end(const refine *f, const double *w, size_t p, size_t r)
{
    size_t lo = f->seg[r], hi = f->seg[r + 1];

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[f->byw[mid]] < w[p])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first of r's packs before e where ld[h] - d is the larger term of after(). */
static size_t turn(const refine *f, int t, size_t p, size_t h, size_t r, size_t e)
{
    const double *w = f->w[t], *ld = f->load[t];
    size_t lo = f->seg[r], hi = e;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double d = w[p] - w[f->byw[mid]];
        if (ld[h] - d > ld[r] + d)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Swap p (rank h) for q (rank r) into *best if it wins; false once after() exceeds the
 * best's, past which no pack further out can win. */
static bool try_swap(const refine *f, int t, size_t p, size_t q, size_t h, size_t r,
                     swap *best)
{
    const double *w = f->w[t], *ld = f->load[t];
    double d = w[p] - w[q];
    double after = ld[h] - d > ld[r] + d ? ld[h] - d : ld[r] + d;

    if (after > best->after)
        return false;
    if (beats(*best, p, q, after) && keeps_others(f, t, p, q, h, r))
        *best = (swap){p, q, after};
    return true;
}

/* The best swap of p (rank h) with a pack of rank r into *best. */
static void best_in_rank(const refine *f, int t, size_t p, size_t h, size_t r, swap *best)
{
    size_t e = lighter_end(f, f->w[t], p, r), b = turn(f, t, p, h, r, e);

    for (size_t i = b; i < e && try_swap(f, t, p, f->byw[i], h, r, best); i++)
        ;
    for (size_t i = b; i > f->seg[r] && try_swap(f, t, p, f->byw[i - 1], h, r, best); i--)
        ;
}

static swap best_swap_windowed(refine *f, int t, size_t h)
{
    swap best = {SIZE_MAX, SIZE_MAX, f->load[t][h]};
    size_t mine = f->seg[h + 1] - f->seg[h];

    if ((uint64_t)mine * f->n > REFINE_WORK) { /* as best_swap */
        f->work = REFINE_WORK;
        return best;
    }
    f->work += (uint64_t)mine * f->n;
    for (size_t i = f->seg[h]; i < f->seg[h + 1]; i++)
        for (size_t r = 0; r < f->dp; r++)
            if (r != h)
                best_in_rank(f, t, f->byw[i], h, r, &best);
    return best;
}

/* In rank r's run of byw, pack out gives way to pack in, kept in weight order. */
static void replace_in_rank(refine *f, int t, size_t r, size_t out, size_t in)
{
    const double *w = f->w[t];
    size_t lo = f->seg[r], hi = f->seg[r + 1], i;

    while (lo < hi) { /* out's place */
        size_t mid = lo + (hi - lo) / 2;
        if (kw_less(w, f->byw[mid], out))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (i = lo; i + 1 < f->seg[r + 1] && kw_less(w, f->byw[i + 1], in); i++)
        f->byw[i] = f->byw[i + 1];
    for (; i > f->seg[r] && kw_less(w, in, f->byw[i - 1]); i--)
        f->byw[i] = f->byw[i - 1];
    f->byw[i] = in;
}

static void apply(refine *f, swap s, size_t h)
{
    size_t r = (size_t)f->part[s.q];

    for (int k = 0; k < NMEAS; k++) {
        double d = f->w[k][s.p] - f->w[k][s.q];
        f->load[k][h] -= d;
        f->load[k][r] += d;
    }
    f->part[s.p] = (int)r;
    f->part[s.q] = (int)h;
}

/* Lower target t, the measures in hold kept within their maxima.  VL_ENOMEM. */
static vl_status lower(refine *f, int t, unsigned hold, vl_err *err)
{
    bool windowed = f->n >= WINDOW_FROM * f->dp;
    vl_status st;

    if (windowed && (st = order_ranks(f, t, err)) != VL_OK)
        return st;
    f->hold = hold;
    for (int k = 0; k < NMEAS; k++)
        f->max[k] = f->load[k][argmax(f->load[k], f->dp)];
    for (size_t step = 0; step < f->n && f->work < REFINE_WORK; step++) {
        size_t h = argmax(f->load[t], f->dp);
        swap s = windowed ? best_swap_windowed(f, t, h) : best_swap(f, t, h);
        if (s.p == SIZE_MAX)
            break;
        if (windowed) {
            size_t r = (size_t)f->part[s.q];
            replace_in_rank(f, t, h, s.p, s.q);
            replace_in_rank(f, t, r, s.q, s.p);
        }
        apply(f, s, h);
    }
    return VL_OK;
}

vl_status vl__pk_refine(const vl__pk_weights *w, int *part, size_t dp, int primary,
                        vl_err *err)
{
    refine f = {.w = {w->time, w->tok, w->att}, .part = part, .n = w->n, .dp = dp};
    vl_status st = VL_OK;

    for (int k = 0; k < NMEAS; k++)
        f.load[k] = calloc(dp, sizeof(double));
    f.other = malloc((w->n ? w->n : 1) * sizeof *f.other);
    f.byw = malloc((w->n ? w->n : 1) * sizeof *f.byw);
    f.seg = malloc((dp + 1) * sizeof *f.seg);
    if (f.load[0] == NULL || f.load[1] == NULL || f.load[2] == NULL || f.other == NULL ||
        f.byw == NULL || f.seg == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu ranks", dp);
        goto done;
    }
    for (size_t p = 0; p < w->n; p++)
        for (int k = 0; k < NMEAS; k++)
            f.load[k][part[p]] += f.w[k][p];
    if (primary == VL__PK_TIME) {
        if ((st = lower(&f, VL__PK_TOK, VL__PK_ALL, err)) == VL_OK)
            st = lower(&f, VL__PK_ATT, VL__PK_ALL, err);
    } else { /* the measure asked for, then the other held to it and to time */
        if ((st = lower(&f, primary, 0, err)) == VL_OK)
            st = lower(&f, VL__PK_TOK + VL__PK_ATT - primary, VL__PK_ALL, err);
    }
done:
    for (int k = 0; k < NMEAS; k++)
        free(f.load[k]);
    free(f.other);
    free(f.byw);
    free(f.seg);
    return st;
}

vl_status vl__pk_refine_dealt(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                              vl_err *err)
{
    const uint32_t *len = pk_ctx(c)->len;
    double *t = malloc(np * sizeof(double));
    vl__pk_weights w = {np, t, malloc(np * sizeof(double)), malloc(np * sizeof(double))};
    vl_status st = VL_OK;

    if (t == NULL || w.tok == NULL || w.att == NULL)
        st = vl_seterr(err, VL_ENOMEM, "out of memory for %zu packs", np);
    for (size_t p = 0; p < np && st == VL_OK; p++) {
        const uint32_t *it = pk->items + pk->off[ids[p]];
        w.tok[p] = w.att[p] = 0;
        for (size_t i = 0; i < pk->cnt[ids[p]]; i++) {
            w.tok[p] += len[it[i]];
            w.att[p] += vl_cost_pairs(0, len[it[i]]);
        }
        if (vl__pk_primary(c) == VL__PK_TIME)
            t[p] = d->w[p]; /* vl__pk_weight under time: the same figure */
        else
            st = vl__pk_time(c, d, it, pk->cnt[ids[p]], &t[p], err);
    }
    if (st == VL_OK)
        st = vl__pk_refine(&w, d->part, c->dp, vl__pk_primary(c), err);
    free(t);
    free(w.tok);
    free(w.att);
    return st;
}
