/* plans/hydraulis/hydraulis_pack.c -- stage two of the two-stage assignment (§6.1, Eq. 1,
 * App. C): one pipeline's sequences into v micro-batches of at most MaxLen tokens,
 * minimising (heaviest micro-batch + c) · (pp − 1 + v) over v from ⌈Σ/MaxLen⌉ to
 * ⌊Σ/UtilLen⌋ (at most 20 values, the code's cap).
 *
 * The authors solve each v exactly (PuLP/CBC with 0.5 s limits); here a min-max heuristic
 * stands in (no solver, node-count free, deterministic): LPT on the dispatch times onto
 * the lightest micro-batch with room, then improving moves and swaps off the heaviest
 * micro-batch until none helps.  The ablation `packing: max` packs to MaxLen instead,
 * first fit decreasing by tokens: the fewest micro-batches, fixed-length packing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"

static vl_status reserve(hy_work *w, size_t n, size_t v, vl_err *err)
{
    size_t c = w->item_cap, bc = w->bin_cap;
    vl_status st;

    if ((st = vl_grow(&w->items, &c, n + 1, sizeof *w->items, err)) != VL_OK)
        return st;
    c = w->item_cap;
    if ((st = vl_grow(&w->bin, &c, n + 1, sizeof *w->bin, err)) != VL_OK)
        return st;
    c = w->item_cap;
    if ((st = vl_grow(&w->best_bin, &c, n + 1, sizeof *w->best_bin, err)) != VL_OK)
        return st;
    c = w->item_cap;
    if ((st = vl_grow(&w->t, &c, n + 1, sizeof *w->t, err)) != VL_OK)
        return st;
    w->item_cap = c;
    if ((st = vl_grow(&w->load, &bc, v + 1, sizeof *w->load, err)) != VL_OK)
        return st;
    bc = w->bin_cap;
    if ((st = vl_grow(&w->tok, &bc, v + 1, sizeof *w->tok, err)) != VL_OK)
        return st;
    w->bin_cap = bc;
    return VL_OK;
}

/* Order of items for LPT (by_time) or FFD: heavier first, then index. */
typedef struct {
    const double *t;
    const uint32_t *tok;
    bool by_time;
} order_ctx;

static bool before(const order_ctx *o, uint32_t a, uint32_t b)
{
    if (o->by_time && o->t[a] != o->t[b])
        return o->t[a] > o->t[b];
    if (o->tok[a] != o->tok[b])
        return o->tok[a] > o->tok[b];
    return a < b;
}

/* Insertion sort is enough: a pipeline holds tens of sequences; merge for the rest. */
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

/* Place the ordered items: LPT (lightest with room) or first fit; false when one fits
 * nowhere. */
static bool place(hy_work *w, const double *t, const uint32_t *tok, size_t n, uint32_t v,
                  uint32_t cap, bool lpt, uint32_t *bin)
{
    memset(w->load, 0, v * sizeof *w->load);
    memset(w->tok, 0, v * sizeof *w->tok);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = w->items[k], at = UINT32_MAX;
        for (uint32_t b = 0; b < v; b++) {
            if (w->tok[b] + tok[i] > cap)
                continue;
            if (at == UINT32_MAX || (lpt && w->load[b] < w->load[at]))
                at = b;
            if (!lpt)
                break;
        }
        if (at == UINT32_MAX)
            return false;
        bin[i] = at;
        w->load[at] += t[i];
        w->tok[at] += tok[i];
    }
    return true;
}

static uint32_t heaviest(const hy_work *w, uint32_t v)
{
    uint32_t h = 0;
    for (uint32_t b = 1; b < v; b++)
        if (w->load[b] > w->load[h])
            h = b;
    return h;
}

/* The best move or swap off micro-batch h; false when none lowers it. */
static bool improve(hy_work *w, const double *t, const uint32_t *tok, size_t n, uint32_t v,
                    uint32_t cap, uint32_t *bin)
{
    uint32_t h = heaviest(w, v), bi = UINT32_MAX, bj = UINT32_MAX, bb = 0;
    double top = w->load[h], best = top;

    for (size_t i = 0; i < n; i++) {
        if (bin[i] != h)
            continue;
        for (uint32_t b = 0; b < v; b++) {   /* move i to b */
            double x = fmax(top - t[i], w->load[b] + t[i]);
            if (b != h && w->tok[b] + tok[i] <= cap && x < best) {
                best = x;
                bi = (uint32_t)i;
                bj = UINT32_MAX;
                bb = b;
            }
        }
        for (size_t j = 0; j < n; j++) {     /* swap i with j of another micro-batch */
            uint32_t b = bin[j];
            double x;
            if (b == h || t[j] >= t[i] || w->tok[b] - tok[j] + tok[i] > cap ||
                w->tok[h] - tok[i] + tok[j] > cap)
                continue;
            x = fmax(top - t[i] + t[j], w->load[b] + t[i] - t[j]);
            if (x < best) {
                best = x;
                bi = (uint32_t)i;
                bj = (uint32_t)j;
                bb = b;
            }
        }
    }
    if (bi == UINT32_MAX)
        return false;
    w->load[h] -= t[bi];
    w->tok[h] -= tok[bi];
    w->load[bb] += t[bi];
    w->tok[bb] += tok[bi];
    bin[bi] = bb;
    if (bj != UINT32_MAX) {
        w->load[bb] -= t[bj];
        w->tok[bb] -= tok[bj];
        w->load[h] += t[bj];
        w->tok[h] += tok[bj];
        bin[bj] = h;
    }
    return true;
}

double vl__hy_minmax(hy_work *w, const double *t, const uint32_t *tok, size_t n, uint32_t v,
                     uint32_t cap, uint32_t *bin, vl_status *st, vl_err *err)
{
    order_ctx o = {.t = t, .tok = tok, .by_time = true};
    uint32_t *tmp;

    if (v == 0 || (*st = reserve(w, n, v, err)) != VL_OK)
        return -1;
    if ((tmp = malloc((n + 1) * sizeof *tmp)) == NULL) {
        *st = vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory packing");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        w->items[i] = (uint32_t)i;
    sort_items(w->items, n, &o, tmp);
    if (!place(w, t, tok, n, v, cap, true, bin)) {
        o.by_time = false;
        for (size_t i = 0; i < n; i++)
            w->items[i] = (uint32_t)i;
        sort_items(w->items, n, &o, tmp);
        if (!place(w, t, tok, n, v, cap, false, bin)) {
            free(tmp);
            return -1;
        }
    }
    free(tmp);
    for (size_t k = 0; k < 4 * n + v && improve(w, t, tok, n, v, cap, bin); k++)
        ;
    return w->load[heaviest(w, v)];
}

/* packing: max -- first fit decreasing by tokens into as many MaxLen bins as it needs. */
static double pack_max(hy_work *w, const double *t, const uint32_t *tok, size_t n,
                       uint32_t cap, uint32_t *bin, uint32_t *v, vl_status *st, vl_err *err)
{
    order_ctx o = {.t = t, .tok = tok, .by_time = false};
    uint32_t *tmp = malloc((n + 1) * sizeof *tmp);

    if (tmp == NULL || (*st = reserve(w, n, n, err)) != VL_OK) {
        if (tmp == NULL)
            *st = vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory packing");
        free(tmp);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        w->items[i] = (uint32_t)i;
    sort_items(w->items, n, &o, tmp);
    free(tmp);
    place(w, t, tok, n, (uint32_t)n, cap, false, bin);   /* n bins always suffice */
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
    if (packing == HY_MAXPACK) {
        double m = pack_max(w, t, tok, n, s->maxlen, bin, v, st, err);
        best = m < 0 ? -1 : (m + s->c) * (s->pp - 1 + *v);
        goto done;
    }
    vmin = (uint32_t)((sum + s->maxlen - 1) / s->maxlen);
    vmin = vmin > 1 ? vmin : 1;
    vmax = (uint32_t)(sum / (s->utillen ? s->utillen : 1));
    vmax = vmax < n ? vmax : (uint32_t)n;
    vmax = vmax > vmin ? vmax : vmin;
    for (uint32_t k = vmin; k <= vmax && k < vmin + HY_MAX_V && *st == VL_OK; k++) {
        double m = vl__hy_minmax(w, t, tok, n, k, s->maxlen, w->best_bin, st, err), e;
        if (m < 0)
            continue;
        e = (m + s->c) * (s->pp - 1 + k);
        if (best < 0 || e < best) {
            best = e;
            *v = k;
            memcpy(bin, w->best_bin, n * sizeof *bin);
        }
    }
    if (best < 0 && *st == VL_OK) {   /* nothing fitted: every sequence alone */
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
