/* plans/hydraulis/hydraulis_pack.c -- stage two of the two-stage assignment (§6.1, Eq. 1,
 * App. C): one pipeline's sequences into v micro-batches of at most MaxLen tokens,
 * minimising (heaviest micro-batch + c) · (pp − 1 + v) over v from ⌈Σ/MaxLen⌉ to
 * ⌊Σ/UtilLen⌋ (at most 20 values, the code's cap).
 *
 * The authors solve each v exactly (PuLP/CBC with 0.5 s limits); here a min-max heuristic
 * stands in (no solver, node-count free, deterministic): LPT on the dispatch times onto
 * the lightest micro-batch with room, then improving moves and swaps off the heaviest
 * micro-batch until none helps.  The ablation `packing: max` packs to MaxLen instead,
 * first fit decreasing by tokens: the fewest micro-batches, fixed-length packing.
 *
 * Speed (1M samples on 8 GPUs is 400 iterations of ~300 sequences per pipeline, 20
 * counts each, every candidate): the orders are sorted once per pipeline, not per count,
 * and where the times follow the tokens (a scheme's T) all three come from one sort of
 * integer keys (tokens, index); LPT takes the lightest micro-batch from a heap; the
 * search off the heaviest walks that micro-batch's own list and the other sequences by
 * time ascending, stopping where no swap can lower it any more; a count whose lower bound (max(Σt / v, longest t) + c) ·
 * (pp − 1 + v) cannot beat the best so far is skipped.  Each is exact: the same moves,
 * the same ties (lowest index first), the same plans as the plain scans. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"
#include "sort.h"

#define NONE UINT32_MAX

/* Grow the k arrays bufs (elements of elem bytes) to n elements, to one capacity *cap. */
static vl_status grow_all(size_t *cap, size_t n, void *const *bufs, const size_t *elem,
                          size_t k, vl_err *err)
{
    size_t c = *cap;
    vl_status st;

    for (size_t i = 0; i < k; i++) {
        c = *cap;
        if ((st = vl_grow(bufs[i], &c, n, elem[i], err)) != VL_OK)
            return st;
    }
    *cap = c;
    return VL_OK;
}

static vl_status reserve(hy_work *w, size_t n, size_t v, vl_err *err)
{
    void *const items[] = {&w->items, &w->bin, &w->best_bin, &w->t, &w->key, &w->key_tmp};
    const size_t item_sz[] = {sizeof *w->items, sizeof *w->bin, sizeof *w->best_bin,
                              sizeof *w->t,     sizeof *w->key, sizeof *w->key_tmp};
    void *const order[] = {&w->asc, &w->ffd, &w->next, &w->prev, &w->mem, &w->tmp};
    const size_t order_sz[] = {sizeof(uint32_t), sizeof(uint32_t), sizeof(uint32_t),
                               sizeof(uint32_t), sizeof(uint32_t), sizeof(uint32_t)};
    void *const bins[] = {&w->load, &w->tok};
    const size_t bin_sz[] = {sizeof *w->load, sizeof *w->tok};
    void *const heap[] = {&w->head, &w->heap, &w->aside};
    const size_t heap_sz[] = {sizeof(uint32_t), sizeof(uint32_t), sizeof(uint32_t)};
    vl_status st;

    if ((st = grow_all(&w->item_cap, n + 1, items, item_sz, 6, err)) != VL_OK ||
        (st = grow_all(&w->order_cap, n + 1, order, order_sz, 6, err)) != VL_OK ||
        (st = grow_all(&w->bin_cap, v + 1, bins, bin_sz, 2, err)) != VL_OK)
        return st;
    return grow_all(&w->heap_cap, v + 1, heap, heap_sz, 3, err);
}

/* One pipeline's sequences as every micro-batch count sees them. */
typedef struct pk_in {
    const double *t;
    const uint32_t *tok;
    size_t n;
    uint32_t cap;
    bool nonneg;    /* every t >= 0: the bounds of the searches hold */
    bool ffd_ready; /* w->ffd holds the first-fit order */
    double tsum, tmax;
} pk_in;

/* Orders of the items: LPT (time descending), FFD (tokens descending), and time
 * ascending for the swap search; ties by tokens descending, then index. */
typedef enum { BY_TIME, BY_TOKENS, BY_TIME_UP } order_kind;

typedef struct {
    const double *t;
    const uint32_t *tok;
    order_kind kind;
} order_ctx;

static bool before(const order_ctx *o, uint32_t a, uint32_t b)
{
    if (o->kind == BY_TIME_UP)
        return o->t[a] != o->t[b] ? o->t[a] < o->t[b] : a < b;
    if (o->kind == BY_TIME && o->t[a] != o->t[b])
        return o->t[a] > o->t[b];
    if (o->tok[a] != o->tok[b])
        return o->tok[a] > o->tok[b];
    return a < b;
}

/* Insertion sort for short runs, merge above. */
static void sort_items(uint32_t *it, size_t n, const order_ctx *o, uint32_t *tmp)
{
    if (n < 32) {
        for (size_t i = 1; i < n; i++) {
            uint32_t x = it[i];
            size_t j = i;
            while (j > 0 && before(o, x, it[j - 1])) {
                it[j] = it[j - 1];
                j--;
            }
            it[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    sort_items(it, h, o, tmp);
    sort_items(it + h, n - h, o, tmp);
    for (size_t i = 0, j = h, k = 0; k < n; k++)
        tmp[k] = (j >= n || (i < h && !before(o, it[j], it[i]))) ? it[i++] : it[j++];
    memcpy(it, tmp, n * sizeof *it);
}

static void sort_order(hy_work *w, const pk_in *in, uint32_t *it, order_kind kind)
{
    order_ctx o = {.t = in->t, .tok = in->tok, .kind = kind};

    for (size_t i = 0; i < in->n; i++)
        it[i] = (uint32_t)i;
    sort_items(it, in->n, &o, w->tmp);
}

/* The three orders from one sort of integer keys, where the times follow the tokens (t
 * never falls as tokens grow, equal tokens have equal times: T of a scheme with a, b >=
 * 0): tokens descending, ties by index, is then both LPT's order (time descending, then
 * tokens descending, then index) and FFD's; tokens ascending, ties by index, with each
 * run of equal times put in index order, is the ascending one (time, then index).
 * false, the orders unset, where the times do not follow the tokens. */
static bool orders_by_tokens(hy_work *w, pk_in *in)
{
    const double *t = in->t;
    const uint32_t *tok = in->tok;
    uint32_t *up = w->asc;
    size_t n = in->n, q = 0;

    for (size_t i = 0; i < n; i++)
        w->key[i] = (uint64_t)tok[i] << 32 | i;
    vl_sort_u64_with(w->key, w->key_tmp, n);
    for (size_t k = 0; k < n; k++) {
        up[k] = (uint32_t)w->key[k];
        if (k > 0 && !(tok[up[k]] == tok[up[k - 1]] ? t[up[k]] == t[up[k - 1]]
                                                    : t[up[k]] >= t[up[k - 1]]))
            return false;
    }
    for (size_t hi = n; hi > 0;) { /* the groups of equal tokens from the longest */
        size_t lo = hi - 1;
        while (lo > 0 && tok[up[lo - 1]] == tok[up[hi - 1]])
            lo--;
        for (size_t k = lo; k < hi; k++)
            w->items[q++] = up[k];
        hi = lo;
    }
    memcpy(w->ffd, w->items, n * sizeof *w->ffd);
    in->ffd_ready = true;
    for (size_t k = 1; k < n; k++) { /* equal times of unequal tokens: by index */
        uint32_t x = up[k];
        size_t j = k;
        for (; j > 0 && t[up[j - 1]] == t[x] && up[j - 1] > x; j--)
            up[j] = up[j - 1];
        up[j] = x;
    }
    return true;
}

/* The orders every count shares (w->items: LPT; w->asc) and the sums of the bound. */
static void prepare(hy_work *w, pk_in *in)
{
    if (!orders_by_tokens(w, in)) {
        sort_order(w, in, w->items, BY_TIME);
        sort_order(w, in, w->asc, BY_TIME_UP);
    }
    in->nonneg = true;
    in->tsum = in->tmax = 0;
    for (size_t i = 0; i < in->n; i++) {
        in->nonneg = in->nonneg && in->t[i] >= 0;
        in->tsum += in->t[i];
        in->tmax = hy_max(in->tmax, in->t[i]);
    }
}

/* ---- the lightest micro-batch: a heap by (load, index) ---- */

static bool lighter(const hy_work *w, uint32_t a, uint32_t b)
{
    return w->load[a] != w->load[b] ? w->load[a] < w->load[b] : a < b;
}

static void heap_push(hy_work *w, size_t *hn, uint32_t b)
{
    size_t k = (*hn)++;

    while (k > 0 && lighter(w, b, w->heap[(k - 1) / 2])) {
        w->heap[k] = w->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    w->heap[k] = b;
}

static uint32_t heap_pop(hy_work *w, size_t *hn)
{
    uint32_t top = w->heap[0], last = w->heap[--*hn];
    size_t k = 0;

    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= *hn)
            break;
        if (c + 1 < *hn && lighter(w, w->heap[c + 1], w->heap[c]))
            c++;
        if (!lighter(w, w->heap[c], last))
            break;
        w->heap[k] = w->heap[c];
        k = c;
    }
    w->heap[k] = last;
    return top;
}

static void put(hy_work *w, const pk_in *in, uint32_t i, uint32_t b, uint32_t *bin)
{
    bin[i] = b;
    w->load[b] += in->t[i];
    w->tok[b] += in->tok[i];
}

/* LPT: each item, time descending, onto the lightest micro-batch with room (ties: lowest
 * index); false when one fits nowhere.  Micro-batches without room wait aside. */
static bool place_lpt(hy_work *w, const pk_in *in, uint32_t v, uint32_t *bin)
{
    size_t hn = v;

    memset(w->load, 0, v * sizeof *w->load);
    memset(w->tok, 0, v * sizeof *w->tok);
    for (uint32_t b = 0; b < v; b++)
        w->heap[b] = b; /* equal loads: index order is a heap */
    for (size_t k = 0; k < in->n; k++) {
        uint32_t i = w->items[k], at = NONE;
        size_t aside = 0;
        while (hn > 0 && at == NONE) {
            uint32_t b = heap_pop(w, &hn);
            if (w->tok[b] + in->tok[i] <= in->cap)
                at = b;
            else
                w->aside[aside++] = b;
        }
        if (at == NONE)
            return false;
        put(w, in, i, at, bin);
        heap_push(w, &hn, at);
        while (aside > 0)
            heap_push(w, &hn, w->aside[--aside]);
    }
    return true;
}

/* First fit in the order `it`; false when one fits nowhere. */
static bool place_ff(hy_work *w, const pk_in *in, const uint32_t *it, uint32_t v,
                     uint32_t *bin)
{
    memset(w->load, 0, v * sizeof *w->load);
    memset(w->tok, 0, v * sizeof *w->tok);
    for (size_t k = 0; k < in->n; k++) {
        uint32_t i = it[k], b = 0;
        while (b < v && w->tok[b] + in->tok[i] > in->cap)
            b++;
        if (b == v)
            return false;
        put(w, in, i, b, bin);
    }
    return true;
}

/* ---- the search off the heaviest micro-batch ---- */

/* Each micro-batch's items as a doubly linked list (head, next, prev). */
static void link_bins(hy_work *w, size_t n, uint32_t v, const uint32_t *bin)
{
    for (uint32_t b = 0; b < v; b++)
        w->head[b] = NONE;
    for (size_t i = n; i-- > 0;) {
        uint32_t b = bin[i];
        w->prev[i] = NONE;
        w->next[i] = w->head[b];
        if (w->head[b] != NONE)
            w->prev[w->head[b]] = (uint32_t)i;
        w->head[b] = (uint32_t)i;
    }
}

static void relink(hy_work *w, uint32_t i, uint32_t from, uint32_t to)
{
    if (w->prev[i] != NONE)
        w->next[w->prev[i]] = w->next[i];
    else
        w->head[from] = w->next[i];
    if (w->next[i] != NONE)
        w->prev[w->next[i]] = w->prev[i];
    w->prev[i] = NONE;
    w->next[i] = w->head[to];
    if (w->head[to] != NONE)
        w->prev[w->head[to]] = i;
    w->head[to] = i;
}

/* Micro-batch h's items into w->mem by index ascending (the scan order of the search);
 * returns their count. */
static size_t members(hy_work *w, uint32_t h)
{
    size_t m = 0;

    for (uint32_t i = w->head[h]; i != NONE; i = w->next[i]) {
        size_t j = m++;
        while (j > 0 && w->mem[j - 1] > i) {
            w->mem[j] = w->mem[j - 1];
            j--;
        }
        w->mem[j] = i;
    }
    return m;
}

static uint32_t heaviest(const hy_work *w, uint32_t v)
{
    uint32_t h = 0;
    for (uint32_t b = 1; b < v; b++)
        if (w->load[b] > w->load[h])
            h = b;
    return h;
}

static double lightest_load(const hy_work *w, uint32_t v)
{
    double m = w->load[0];
    for (uint32_t b = 1; b < v; b++)
        m = w->load[b] < m ? w->load[b] : m;
    return m;
}

/* A chosen move (j = NONE) or swap of i off the heaviest micro-batch. */
typedef struct {
    double best;
    uint32_t i, j, b;
} step;

/* The first position of w->asc from which j can give a swap below bx: before it the
 * receiving side load[b] + t[i] − t[j] >= lightest + t[i] − t[j] >= bx already (both
 * sides are monotone in t[j] as rounded, so the positions to skip are a prefix). */
static size_t swap_start(const hy_work *w, const pk_in *in, double lightest, uint32_t i,
                         double bx)
{
    double k = lightest + in->t[i];
    size_t lo = 0, hi = in->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k - in->t[w->asc[mid]] >= bx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The best swap of i (in h, load top) with a lighter item of another micro-batch that
 * beats s->best.  Items by time ascending: the heavy side top − t[i] + t[j] only grows,
 * so the walk stops where it reaches the best (equal: only a lower index could tie);
 * it starts where the receiving side, bounded by the lightest micro-batch, falls below
 * the best. */
static void best_swap(const hy_work *w, const pk_in *in, const uint32_t *bin, uint32_t h,
                      double top, double lightest, uint32_t i, step *s)
{
    const double *t = in->t;
    const uint32_t *tok = in->tok;
    double rest = top - t[i], bx = s->best;
    uint32_t sj = NONE, sb = 0;

    for (size_t q = swap_start(w, in, lightest, i, bx); q < in->n; q++) {
        uint32_t j = w->asc[q], b = bin[j];
        double first = rest + t[j], x;
        if (!(t[j] < t[i]) || first > bx || (first == bx && sj == NONE))
            break;
        if (b == h || w->tok[b] - tok[j] + tok[i] > in->cap ||
            w->tok[h] - tok[i] + tok[j] > in->cap)
            continue;
        x = hy_max(first, w->load[b] + t[i] - t[j]);
        if (x < bx || (x == bx && sj != NONE && j < sj)) {
            bx = x;
            sj = j;
            sb = b;
        }
    }
    if (sj != NONE)
        *s = (step){.best = bx, .i = i, .j = sj, .b = sb};
}

static void apply(hy_work *w, const pk_in *in, uint32_t *bin, uint32_t h, const step *s)
{
    w->load[h] -= in->t[s->i];
    w->tok[h] -= in->tok[s->i];
    w->load[s->b] += in->t[s->i];
    w->tok[s->b] += in->tok[s->i];
    bin[s->i] = s->b;
    relink(w, s->i, h, s->b);
    if (s->j == NONE)
        return;
    w->load[s->b] -= in->t[s->j];
    w->tok[s->b] -= in->tok[s->j];
    w->load[h] += in->t[s->j];
    w->tok[h] += in->tok[s->j];
    bin[s->j] = h;
    relink(w, s->j, s->b, h);
}

/* The best move or swap off the heaviest micro-batch h, items of h by index, moves
 * before swaps, the first of equals kept; false when none lowers it. */
static bool improve(hy_work *w, const pk_in *in, uint32_t v, uint32_t *bin)
{
    uint32_t h = heaviest(w, v);
    size_t m = members(w, h);
    double top = w->load[h], light = lightest_load(w, v);
    step s = {.best = top, .i = NONE, .j = NONE};

    for (size_t k = 0; k < m; k++) {
        uint32_t i = w->mem[k];
        double rest = top - in->t[i];
        if (in->nonneg && !(rest < s.best))
            continue; /* whatever i does, h keeps at least rest */
        for (uint32_t b = 0; b < v && light + in->t[i] < s.best; b++) { /* move i to b */
            double x = hy_max(rest, w->load[b] + in->t[i]);
            if (b != h && w->tok[b] + in->tok[i] <= in->cap && x < s.best)
                s = (step){.best = x, .i = i, .j = NONE, .b = b};
        }
        best_swap(w, in, bin, h, top, light, i, &s);
    }
    if (s.i == NONE)
        return false;
    apply(w, in, bin, h, &s);
    return true;
}

/* MINMAX for one count on prepared items. */
static double minmax_run(hy_work *w, pk_in *in, uint32_t v, uint32_t *bin)
{
    if (!place_lpt(w, in, v, bin)) {
        if (!in->ffd_ready) {
            sort_order(w, in, w->ffd, BY_TOKENS);
            in->ffd_ready = true;
        }
        if (!place_ff(w, in, w->ffd, v, bin))
            return -1;
    }
    link_bins(w, in->n, v, bin);
    for (size_t k = 0; k < 4 * in->n + v && improve(w, in, v, bin); k++)
        ;
    return w->load[heaviest(w, v)];
}

double vl__hy_minmax(hy_work *w, const double *t, const uint32_t *tok, size_t n, uint32_t v,
                     uint32_t cap, uint32_t *bin, vl_status *st, vl_err *err)
{
    pk_in in = {.t = t, .tok = tok, .n = n, .cap = cap};

    if (v == 0 || (*st = reserve(w, n, v, err)) != VL_OK)
        return -1;
    prepare(w, &in);
    return minmax_run(w, &in, v, bin);
}

/* No packing into v micro-batches beats `best`: its heaviest holds at least the mean and
 * the longest item (less a margin far above the rounding of the loads' sums). */
static bool cannot_beat(const pk_in *in, const hy_scheme *s, uint32_t v, double best)
{
    double lb = hy_max(in->tsum / v, in->tmax) * (1 - 1e-7);

    return best >= 0 && in->nonneg && (lb + s->c) * (s->pp - 1 + v) >= best;
}

/* packing: max -- first fit decreasing by tokens into as many MaxLen bins as it needs. */
static double pack_max(hy_work *w, pk_in *in, uint32_t *bin, uint32_t *v)
{
    uint32_t n = (uint32_t)in->n;

    sort_order(w, in, w->ffd, BY_TOKENS);
    place_ff(w, in, w->ffd, n, bin); /* n bins always suffice */
    *v = 0;
    for (size_t i = 0; i < n; i++)
        *v = bin[i] + 1 > *v ? bin[i] + 1 : *v;
    return w->load[heaviest(w, *v)];
}

double vl__hy_pack(hy_work *w, const hy_scheme *s, const uint32_t *seq, size_t n,
                   const uint32_t *len, hy_packing packing, uint32_t *bin, uint32_t *v,
                   vl_status *st, vl_err *err)
{
    uint64_t sum = 0;
    uint32_t *tok, vmin, vmax;
    double *t, best = -1;
    pk_in in;

    *v = 0;
    *st = VL_OK;
    if (n == 0)
        return 0;
    /* room for every count tried up front: minmax then never moves w->best_bin */
    if ((*st = reserve(w, n, n > HY_MAX_V ? n : HY_MAX_V, err)) != VL_OK)
        return -1;
    t = malloc(n * sizeof *t);
    tok = malloc(n * sizeof *tok);
    if (t == NULL || tok == NULL) {
        free(t);
        free(tok);
        *st = vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory packing");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        tok[i] = len[seq[i]];
        t[i] = hy_t(s, tok[i]);
        sum += tok[i];
    }
    in = (pk_in){.t = t, .tok = tok, .n = n, .cap = s->maxlen};
    if (packing == HY_MAXPACK) {
        double m = pack_max(w, &in, bin, v);
        best = m < 0 ? -1 : (m + s->c) * (s->pp - 1 + *v);
        goto done;
    }
    prepare(w, &in);
    vmin = (uint32_t)((sum + s->maxlen - 1) / s->maxlen);
    vmin = vmin > 1 ? vmin : 1;
    vmax = (uint32_t)(sum / (s->utillen ? s->utillen : 1));
    vmax = vmax < n ? vmax : (uint32_t)n;
    vmax = vmax > vmin ? vmax : vmin;
    for (uint32_t k = vmin; k <= vmax && k < vmin + HY_MAX_V; k++) {
        double m, e;
        if (cannot_beat(&in, s, k, best))
            continue;
        if ((m = minmax_run(w, &in, k, w->best_bin)) < 0)
            continue;
        e = (m + s->c) * (s->pp - 1 + k);
        if (best < 0 || e < best) {
            best = e;
            *v = k;
            memcpy(bin, w->best_bin, n * sizeof *bin);
        }
    }
    if (best < 0 && *st == VL_OK) { /* nothing fitted: every sequence alone */
        double m = 0;
        for (size_t i = 0; i < n; i++) {
            bin[i] = (uint32_t)i;
            m = fmax(m, t[i]);
        }
        *v = (uint32_t)n;
        best = (m + s->c) * (s->pp - 1 + *v);
    }
done:
    free(t);
    free(tok);
    return *st == VL_OK ? best : -1;
}
