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
 * pass ends, so one iteration of a million samples stays linear). */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"

#define SHIFT_WORK (1ull << 21)
#define SHIFT_PEERS 8
#define NMEAS 3
#define JOINT 3     /* a target: the larger of a rank's tokens and attention over their means */

typedef struct shift {
    const vl__pk_shift_in *in;
    size_t n, np, dp;
    uint32_t *item;         /* [n] */
    size_t *at;             /* [n] the pack of sample i */
    double *w[NMEAS];       /* [n] linearised time, tokens, attention of sample i */
    double *tok, *time;     /* [np] a pack's tokens and exact modelled time */
    size_t *cnt;            /* [np] */
    int *rank;              /* [np] */
    double *load[NMEAS];    /* [dp] exact time, tokens, attention */
    double max[NMEAS];
    double mean[NMEAS];     /* the ranks' mean load (steps move load, never change it) */
    size_t *mine, *theirs;  /* [n] this step's samples of the busiest rank, of peers */
    size_t *slots;          /* [np] this step's packs of peers */
    uint32_t *tmp;          /* [n] a pack's items */
    size_t *peer;           /* [dp] this step's receiving ranks */
    double *full;           /* [dp] their fullness */
    struct roomy { double f; size_t r; } *all;   /* [dp] every rank by fullness */
    unsigned char *mark;    /* [dp] 1: a peer, while gathering */
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
    free(s->slots);
    free(s->tmp);
    free(s->peer);
    free(s->full);
    free(s->all);
    free(s->mark);
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
    s->slots = malloc(s->np * sizeof *s->slots);
    s->tmp = malloc(n * sizeof *s->tmp);
    s->peer = malloc(s->dp * sizeof *s->peer);
    s->full = malloc(s->dp * sizeof *s->full);
    s->all = malloc(s->dp * sizeof *s->all);
    s->mark = calloc(s->dp, 1);
    ok = ok && s->item && s->at && s->tok && s->time && s->cnt && s->rank && s->mine &&
         s->theirs && s->slots && s->tmp && s->peer && s->full && s->all && s->mark;
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
    s->work += (uint64_t)s->dp * k;   /* counted as the insertion was: same stopping point */
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

/* This step's candidates: the busiest rank's samples, the peers' samples and packs. */
static void gather(shift *s, size_t h, const size_t *peer, size_t k, size_t *nm, size_t *nt,
                   size_t *nq)
{
    *nm = *nt = *nq = 0;
    for (size_t j = 0; j < k; j++)
        s->mark[peer[j]] = 1;
    for (size_t i = 0; i < s->n; i++) {
        size_t r = (size_t)s->rank[s->at[i]];
        if (r == h)
            s->mine[(*nm)++] = i;
        else if (s->mark[r])
            s->theirs[(*nt)++] = i;
    }
    for (size_t q = 0; q < s->np; q++)
        if (s->mark[s->rank[q]])
            s->slots[(*nq)++] = q;
    for (size_t j = 0; j < k; j++)
        s->mark[peer[j]] = 0;
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

static void consider(const shift *s, int t, step cand, size_t h, step *best)
{
    size_t r = (size_t)s->rank[cand.q];

    if (t != JOINT && delta(s, t, cand.i, cand.j) <= 0)
        return;
    cand.after = after_step(s, t, cand.i, cand.j, h, r);
    if (cand.after < best->after && keeps_held(s, t, cand.i, cand.j, h, r))
        *best = cand;
}

static bool fits(const shift *s, size_t q, double tokens_in, double tokens_out, size_t items)
{
    return s->tok[q] + tokens_in - tokens_out <= s->cap &&
           (s->max_items == 0 || s->cnt[q] - (tokens_out > 0) + items <= s->max_items);
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
    s->work += (uint64_t)nm * (nt + nq);
    /* consider's own first test (a step must lower t) comes before the capacity checks:
     * both only skip, so the best step is the same, at a fraction of the loads */
    for (size_t a = 0; a < nm; a++) {
        size_t i = s->mine[a], p = s->at[i];
        double wt = t == JOINT ? 0 : s->w[t][i];
        for (size_t b = 0; b < nq && (t == JOINT || wt > 0); b++)
            if (fits(s, s->slots[b], s->w[1][i], 0, 1))
                consider(s, t, (step){i, SIZE_MAX, s->slots[b], 0}, h, &best);
        for (size_t b = 0; b < nt; b++) {
            size_t j = s->theirs[b], q;
            if (t != JOINT && wt - s->w[t][j] <= 0)
                continue;
            q = s->at[j];
            if (fits(s, q, s->w[1][i], s->w[1][j], 1) && fits(s, p, s->w[1][j], s->w[1][i], 1))
                consider(s, t, (step){i, j, q, 0}, h, &best);
        }
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

/* Lower the busiest rank's measure t, holding the measures in hold. */
static vl_status pass(shift *s, int t, unsigned hold, vl_err *err)
{
    vl_status st = VL_OK;
    bool taken = true;

    s->hold = hold;
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
    shift s = {.in = in, .np = pk->n, .dp = in->dp, .cap = in->cap,
               .max_items = in->max_items};
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
        memcpy(out->items + pos, pk->items + pk->off[ids[p]], pk->cnt[ids[p]] * sizeof(uint32_t));
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
    vl__pk_shift_in in = {.len = pk_ctx(c)->len, .cap = c->t->max_seq_len,
                          .max_items = c->job->cfg->pack.max_samples, .dp = c->dp,
                          .primary = vl__pk_primary(c), .time = time_of, .ctx = &tc};
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
