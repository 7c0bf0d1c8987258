/* plans/baseline/baseline_pack_shift_search.c -- the sample shift's search for the best
 * step off the busiest rank (baseline_pack_shift.c describes the method and its work):
 * the peers with the most room, their samples and packs, and the best move or swap. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_pack_shift.h"

/* How near rank r is to the iteration's busiest in the target and the measures held:
 * the largest of its loads over those maxima. */
static double fullness(const shift *s, int t, size_t r)
{
    double f = 0;

    for (int k = 0; k < NMEAS; k++) {
        bool counts = k == t || (t == JOINT && k > 0) || (s->hold >> k & 1);
        if (counts && s->max[k] > 0 && s->load[k][r] / s->max[k] > f)
            f = s->load[k][r] / s->max[k];
    }
    return f;
}

static int by_room(const void *a, const void *b)
{
    const struct roomy *x = a, *y = b;

    if (x->f != y->f)
        return x->f < y->f ? -1 : 1;
    return (x->r > y->r) - (x->r < y->r);
}

/* Every rank but h, least full first (lowest index on ties), as pick_peers orders them:
 * by a sort, since an insertion into dp - 1 places is quadratic at many ranks. */
static size_t all_peers(shift *s, int t, size_t h, size_t *peer)
{
    size_t k = 0;

    for (size_t r = 0; r < s->dp; r++)
        if (r != h)
            s->all[k++] = (struct roomy){fullness(s, t, r), r};
    qsort(s->all, k, sizeof *s->all, by_room);
    for (size_t j = 0; j < k; j++) {
        peer[j] = s->all[j].r;
        s->full[j] = s->all[j].f;
    }
    s->work += (uint64_t)s->dp * k; /* counted as the insertion was: same stopping point */
    return k;
}

/* The want ranks other than h with the most room (least fullness, lowest index on
 * ties) into peer: the ones a step can load without reaching a held maximum. */
static size_t pick_peers(shift *s, int t, size_t h, size_t want, size_t *peer)
{
    double *full = s->full;
    size_t k = 0;

    if (want + 1 >= s->dp)
        return all_peers(s, t, h, peer);
    for (size_t r = 0; r < s->dp; r++) {
        double f = fullness(s, t, r);
        if (r == h || (k == want && f >= full[k - 1]))
            continue;
        size_t j = k < want ? k++ : want - 1;
        for (; j > 0 && full[j - 1] > f; j--) {
            peer[j] = peer[j - 1];
            full[j] = full[j - 1];
        }
        peer[j] = r;
        full[j] = f;
    }
    s->work += (uint64_t)s->dp * want;
    return k;
}

/* This step's candidates: the busiest rank's samples (in index order); the peers'
 * samples grouped by peer (theirs[off[g] .. off[g + 1]) the g-th peer's), each group in
 * the pass's key order (ord); the peers' packs grouped by peer (qoff), each in index
 * order. */
static void gather(shift *s, size_t h, const size_t *peer, size_t k, size_t *nm, size_t *nt,
                   size_t *nq)
{
    *nm = 0;
    memset(s->off, 0, (k + 1) * sizeof *s->off);
    memset(s->qoff, 0, (k + 1) * sizeof *s->qoff);
    for (size_t g = 0; g < k; g++)
        s->slot_of[peer[g]] = g;
    for (size_t i = 0; i < s->n; i++) {
        size_t r = (size_t)s->rank[s->at[i]];
        if (r == h)
            s->mine[(*nm)++] = i;
        else if (s->slot_of[r] != SIZE_MAX)
            s->off[s->slot_of[r] + 1]++;
    }
    for (size_t q = 0; q < s->np; q++)
        if (s->slot_of[s->rank[q]] != SIZE_MAX)
            s->qoff[s->slot_of[s->rank[q]] + 1]++;
    for (size_t g = 0; g < k; g++) {
        s->off[g + 1] += s->off[g];
        s->qoff[g + 1] += s->qoff[g];
    }
    *nt = s->off[k];
    *nq = s->qoff[k];
    for (size_t o = 0; o < s->n; o++) {
        size_t i = s->ord[o], g = s->slot_of[s->rank[s->at[i]]];
        if (g != SIZE_MAX)
            s->theirs[s->off[g]++] = i;
    }
    for (size_t q = 0; q < s->np; q++) {
        size_t g = s->slot_of[s->rank[q]];
        if (g != SIZE_MAX)
            s->slots[s->qoff[g]++] = q;
    }
    memmove(s->off + 1, s->off, k * sizeof *s->off);
    memmove(s->qoff + 1, s->qoff, k * sizeof *s->qoff);
    s->off[0] = s->qoff[0] = 0;
    for (size_t g = 0; g < k; g++) {
        s->room[g] = 0;
        for (size_t b = s->qoff[g]; b < s->qoff[g + 1]; b++)
            if (s->cap - s->tok[s->slots[b]] > s->room[g])
                s->room[g] = s->cap - s->tok[s->slots[b]];
    }
    for (size_t g = 0; g < k; g++)
        s->slot_of[peer[g]] = SIZE_MAX;
    s->work += s->n + s->np;
}

/* The change in measure k of moving i away for j (j = SIZE_MAX: for nothing). */
static double delta(const shift *s, int k, size_t i, size_t j)
{
    return s->w[k][i] - (j == SIZE_MAX ? 0 : s->w[k][j]);
}

/* Do ranks h and r stay within the held maxima after the step (time screened on the
 * linearised weights)? */
static bool keeps_held(const shift *s, int t, size_t i, size_t j, size_t h, size_t r)
{
    for (int k = 0; k < NMEAS; k++) {
        double d = delta(s, k, i, j);
        if (k != t && (s->hold >> k & 1) &&
            (s->load[k][r] + d > s->max[k] || s->load[k][h] - d > s->max[k]))
            return false;
    }
    return true;
}

/* Rank r's load in target t. */
double vl__pk_shift_target(const shift *s, int t, size_t r)
{
    if (t != JOINT)
        return s->load[t][r];
    double a = s->load[1][r] / s->mean[1], b = s->load[2][r] / s->mean[2];
    return a > b ? a : b;
}

/* The larger of ranks h's and r's target after the step (d: its change in t). */
static double after_step(const shift *s, int t, size_t i, size_t j, size_t h, size_t r)
{
    double after = 0;

    for (int k = t == JOINT ? 1 : t; k <= (t == JOINT ? 2 : t); k++) {
        double d = delta(s, k, i, j), sc = t == JOINT ? s->mean[k] : 1;
        double x = (s->load[k][h] - d) / sc, y = (s->load[k][r] + d) / sc;
        after = x > after ? x : after;
        after = y > after ? y : after;
    }
    return after;
}

static bool fits(const shift *s, size_t q, double tokens_in, double tokens_out, size_t items)
{
    return s->tok[q] + tokens_in - tokens_out <= s->cap &&
           (s->max_items == 0 || s->cnt[q] - (tokens_out > 0) + items <= s->max_items);
}

/* A bound below every step of sample i off rank h (weights >= 0: a step moves at most
 * w[k][i] off h, and each term of after_step is monotone in what it moves). */
static double own_bound(const shift *s, int t, size_t i, size_t h)
{
    double lb = 0;

    for (int k = key_of(t); k <= (t == JOINT ? 2 : t); k++) {
        double sc = t == JOINT ? s->mean[k] : 1, x = (s->load[k][h] - s->w[k][i]) / sc;
        lb = x > lb ? x : lb;
    }
    return lb;
}

/* The keys of partners j on rank r for which swapping i and j can end below bound: the
 * two terms of the key's measure in after_step, linear in w[key][j], widened by WIDEN of
 * the magnitudes so that rounding leaves no such partner out (each is checked exactly). */
static void window(const shift *s, int t, size_t i, size_t h, size_t r, double bound,
                   double *lo, double *hi)
{
    int k = key_of(t);
    double sc = t == JOINT ? s->mean[k] : 1, wi = s->w[k][i], b = bound * sc;
    double lh = s->load[k][h], lr = s->load[k][r];
    double m = WIDEN * (fabs(lh) + fabs(lr) + fabs(wi) + fabs(b));

    *lo = wi + lr - b - m; /* (lr + wi - wj) / sc < bound */
    *hi = wi - lh + b + m; /* (lh - wi + wj) / sc < bound */
    if (t != JOINT && *hi > wi + m)
        *hi = wi + m; /* a step must lower t: wj < wi */
}

/* The first of a[from .. to) (tkey or ttok: theirs' keys or tokens) not below lo. */
static size_t first_from(const double *a, size_t from, size_t to, double lo)
{
    if (from < to && !(a[from] < lo))
        return from; /* often: a bound below every key (a roomy pack) */
    while (from < to) {
        size_t mid = from + (to - from) / 2;
        if (a[mid] < lo)
            from = mid + 1;
        else
            to = mid;
    }
    return from;
}

/* The first of theirs[from .. to) with key not below lo and tokens not below tlo, where
 * ord is by tokens: keys and tokens ascend together there, so the larger of the two
 * first_from is where both hold, found by one bisection, not two. */
static size_t first_both(const shift *s, size_t from, size_t to, double lo, double tlo)
{
    if (from < to && !(s->tkey[from] < lo) && !(s->ttok[from] < tlo))
        return from;
    while (from < to) {
        size_t mid = from + (to - from) / 2;
        if (s->tkey[mid] < lo || s->ttok[mid] < tlo)
            from = mid + 1;
        else
            to = mid;
    }
    return from;
}

/* The best swap of sample i (rank h) with a peer's sample ending below bound: the least
 * after, then the least index j -- the one the scan of every pair in index order kept.
 * Only each peer's window of keys is looked at. */
static step best_swap(const shift *s, int t, size_t i, size_t h, size_t k, double bound)
{
    const double *tok = s->w[1];
    size_t p = s->at[i];
    double top = tok[i] + (s->cap - s->tok[p]);
    step best = {SIZE_MAX, SIZE_MAX, SIZE_MAX, bound};

    for (size_t g = s->from; g < k; g++) {
        size_t r = s->peer[g], end = s->off[g + 1], b;
        double lo, hi;
        /* best.after only falls; the widening keeps a tie with it (a lower j) inside */
        window(s, t, i, h, r, best.after, &lo, &hi);
        /* in token order too, the partners both packs have room for: j's pack takes
         * i only if tok[j] >= tok[i] - its room, i's takes j only if tok[j] <= top
         * (whole tokens: exact in doubles, as fits() compares them) */
        b = s->by_len ? first_both(s, s->off[g], end, lo, tok[i] - s->room[g])
                      : first_from(s->tkey, s->off[g], end, lo);
        for (; b < end; b++) {
            size_t j = s->theirs[b], q = s->at[j];
            if (s->tkey[b] > hi || (s->by_len && s->ttok[b] > top))
                break;
            if ((t != JOINT && delta(s, t, i, j) <= 0) ||
                !fits(s, q, s->w[1][i], s->w[1][j], 1) ||
                !fits(s, p, s->w[1][j], s->w[1][i], 1))
                continue;
            double after = after_step(s, t, i, j, h, r);
            bool better = after < best.after ||
                          (after == best.after && best.i != SIZE_MAX && j < best.j);
            if (better && keeps_held(s, t, i, j, h, r))
                best = (step){i, j, q, after};
        }
    }
    return best;
}

/* The best move of sample i (rank h) into a peer's pack ending below bound: the least
 * after, then the least pack -- the one the scan of every pack in index order kept.  A
 * move's after and held measures depend on the receiving rank only, so a rank's packs
 * are looked at only where it can win, and only up to the first with room; a rank
 * whose roomiest pack is too small for i, not at all (in nearly full iterations, most). */
static step best_move(const shift *s, int t, size_t i, size_t h, size_t k, double bound)
{
    step best = {SIZE_MAX, SIZE_MAX, SIZE_MAX, bound};

    if (t != JOINT && delta(s, t, i, SIZE_MAX) <= 0)
        return best;
    for (size_t g = s->from; g < k; g++) {
        size_t r = s->peer[g];
        if (s->w[1][i] > s->room[g]) /* fits() fails in every pack of r */
            continue;
        double after = after_step(s, t, i, SIZE_MAX, h, r);
        if (!(after < best.after || (after == best.after && best.i != SIZE_MAX)) ||
            !keeps_held(s, t, i, SIZE_MAX, h, r))
            continue;
        for (size_t b = s->qoff[g]; b < s->qoff[g + 1]; b++) {
            size_t q = s->slots[b];
            if (!fits(s, q, s->w[1][i], 0, 1))
                continue;
            if (after < best.after || q < best.q)
                best = (step){i, SIZE_MAX, q, after};
            break;
        }
    }
    return best;
}

/* The best step off h among the want roomiest peers but the first from of them, which
 * offer none below h's target. */
static step best_among(shift *s, int t, size_t h, size_t want, size_t from)
{
    size_t k = pick_peers(s, t, h, want, s->peer), nm, nt, nq;
    step best = {SIZE_MAX, SIZE_MAX, SIZE_MAX, vl__pk_shift_target(s, t, h)};

    gather(s, h, s->peer, k, &nm, &nt, &nq);
    /* a step dearer than the whole pass's budget (one iteration of a whole data set:
     * 25K samples against 175K took 4e9 checks) is not begun: the pass ends there */
    if ((uint64_t)nm * (nt + nq) > SHIFT_WORK) {
        s->work = SHIFT_WORK;
        return best;
    }
    s->from = from;
    for (size_t b = s->off[from]; b < nt; b++) { /* bisected nm times a peer: read once */
        s->tkey[b] = s->w[key_of(t)][s->theirs[b]];
        s->ttok[b] = s->w[1][s->theirs[b]];
    }
    /* counted as every pair was checked, though best_swap looks at a window of them:
     * the budget, and so where a pass stops, stays what it was */
    s->work += (uint64_t)nm * (nt + nq);
    /* the result is the first least step in the order (i; moves by pack; swaps by j) */
    for (size_t a = 0; a < nm; a++) {
        size_t i = s->mine[a];
        if (s->nonneg && own_bound(s, t, i, h) >= best.after)
            continue;
        step mv = best_move(s, t, i, h, k, best.after), sw;
        if (mv.i != SIZE_MAX)
            best = mv;
        sw = best_swap(s, t, i, h, k, best.after);
        if (sw.i != SIZE_MAX)
            best = sw;
    }
    return best;
}

/* The best step among the SHIFT_PEERS roomiest ranks, else among all: the roomiest come
 * first among all too (the same order of fullness, then index), and having offered no
 * step below h's target they offer none in the second search either, whose bound only
 * falls from there -- so it looks at the others only (1M LMSYS samples at 8K on 32
 * ranks: the shift 1.67e9 -> 1.47e9 instructions), counting its work as before. */
step vl__pk_shift_best(shift *s, int t, size_t h)
{
    step b = best_among(s, t, h, SHIFT_PEERS, 0);

    if (b.i == SIZE_MAX && s->dp - 1 > SHIFT_PEERS && s->work < SHIFT_WORK)
        b = best_among(s, t, h, s->dp - 1, SHIFT_PEERS);
    return b;
}
