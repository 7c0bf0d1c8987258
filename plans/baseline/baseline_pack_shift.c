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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"
#include "sort.h"

#define SHIFT_WORK (1ull << 21)
#define SHIFT_PEERS 8
#define NMEAS 3
#define JOINT 3    /* a target: the larger of a rank's tokens and attention over their means */
#define WIDEN 1e-9 /* a swap's window of keys, widened by this of its magnitudes (rounding) */

typedef struct shift {
    const vl__pk_shift_in *in;
    size_t n, np, dp;
    uint32_t *item;      /* [n] */
    size_t *at;          /* [n] the pack of sample i */
    double *w[NMEAS];    /* [n] linearised time, tokens, attention of sample i */
    double *tok, *time;  /* [np] a pack's tokens and exact modelled time */
    size_t *cnt;         /* [np] */
    int *rank;           /* [np] */
    double *load[NMEAS]; /* [dp] exact time, tokens, attention */
    double max[NMEAS];
    double mean[NMEAS];    /* the ranks' mean load (steps move load, never change it) */
    size_t *mine, *theirs; /* [n] this step's samples of the busiest rank, of peers */
    size_t *ord;           /* [n] the samples by this pass's key, then index */
    size_t *off;           /* [dp + 1] theirs grouped by peer, each group by key */
    double *tkey, *ttok;   /* [n] theirs' keys and tokens, side by side for bisection */
    size_t *slot_of;       /* [dp] a rank's place among the peers, SIZE_MAX if none */
    struct keyed {
        double k;
        size_t i;
    } * keyed;        /* [n] sorting ord by a key */
    uint64_t *packed; /* [n] sorting ord by tokens: len << 32 | index */
    bool by_len;      /* ord is by tokens */
    bool nonneg;      /* every weight >= 0: a sample's own weight bounds a step */
    size_t *slots;    /* [np] this step's packs of peers, grouped by peer (qoff) */
    size_t *qoff;     /* [dp + 1] */
    double *room;     /* [dp] the most room in a pack of the g-th peer (tokens) */
    uint32_t *tmp;    /* [n] a pack's items */
    size_t *peer;     /* [dp] this step's receiving ranks */
    double *full;     /* [dp] their fullness */
    struct roomy {
        double f;
        size_t r;
    } * all; /* [dp] every rank by fullness */
    unsigned hold;
    uint32_t cap, max_items;
    uint64_t work;
} shift;

/* A step: sample i into pack q (j = SIZE_MAX), or i and j swap packs. */
typedef struct step {
    size_t i, j, q;
    double after;
} step;

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
static double target(const shift *s, int t, size_t r)
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

/* The measure a pass's swaps are searched by: the target, or tokens for the joint one
 * (attention is monotone in a sample's tokens, so both terms are monotone in it). */
static int key_of(int t)
{
    return t == JOINT ? 1 : t;
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

/* The best swap of sample i (rank h) with a peer's sample ending below bound: the least
 * after, then the least index j -- the one the scan of every pair in index order kept.
 * Only each peer's window of keys is looked at. */
static step best_swap(const shift *s, int t, size_t i, size_t h, size_t k, double bound)
{
    const double *tok = s->w[1];
    size_t p = s->at[i];
    double top = tok[i] + (s->cap - s->tok[p]);
    step best = {SIZE_MAX, SIZE_MAX, SIZE_MAX, bound};

    for (size_t g = 0; g < k; g++) {
        size_t r = s->peer[g], end = s->off[g + 1], b;
        double lo, hi;
        /* best.after only falls; the widening keeps a tie with it (a lower j) inside */
        window(s, t, i, h, r, best.after, &lo, &hi);
        b = first_from(s->tkey, s->off[g], end, lo);
        /* in token order too, the partners both packs have room for: j's pack takes
         * i only if tok[j] >= tok[i] - its room, i's takes j only if tok[j] <= top
         * (whole tokens: exact in doubles, as fits() compares them) */
        if (s->by_len) {
            size_t b1 = first_from(s->ttok, s->off[g], end, tok[i] - s->room[g]);
            b = b1 > b ? b1 : b;
        }
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
 * are looked at only where it can win, and only up to the first with room. */
static step best_move(const shift *s, int t, size_t i, size_t h, size_t k, double bound)
{
    step best = {SIZE_MAX, SIZE_MAX, SIZE_MAX, bound};

    if (t != JOINT && delta(s, t, i, SIZE_MAX) <= 0)
        return best;
    for (size_t g = 0; g < k; g++) {
        size_t r = s->peer[g];
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

static step best_among(shift *s, int t, size_t h, size_t want)
{
    size_t k = pick_peers(s, t, h, want, s->peer), nm, nt, nq;
    step best = {SIZE_MAX, SIZE_MAX, SIZE_MAX, target(s, t, h)};

    gather(s, h, s->peer, k, &nm, &nt, &nq);
    /* a step dearer than the whole pass's budget (one iteration of a whole data set:
     * 25K samples against 175K took 4e9 checks) is not begun: the pass ends there */
    if ((uint64_t)nm * (nt + nq) > SHIFT_WORK) {
        s->work = SHIFT_WORK;
        return best;
    }
    for (size_t b = 0; b < nt; b++) { /* bisected nm times a peer: read once here */
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

/* The best step among the SHIFT_PEERS roomiest ranks, else among all. */
static step best_step(shift *s, int t, size_t h)
{
    step b = best_among(s, t, h, SHIFT_PEERS);

    if (b.i == SIZE_MAX && s->dp - 1 > SHIFT_PEERS && s->work < SHIFT_WORK)
        b = best_among(s, t, h, s->dp - 1);
    return b;
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
        for (size_t i = 0; i < s->n; i++)
            s->packed[i] = (uint64_t)s->w[1][i] << 32 | i;
        vl_sort_u64(s->packed, s->n);
        for (size_t o = 0; o < s->n; o++)
            s->ord[o] = (uint32_t)s->packed[o];
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
            h = target(s, t, r) > target(s, t, h) ? r : h;
        step b = best_step(s, t, h);
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
