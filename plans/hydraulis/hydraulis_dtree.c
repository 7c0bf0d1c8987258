/* plans/hydraulis/hydraulis_dtree.c -- the pipeline Alg. 1 sends a sequence to, found
 * without a scan of every pipeline (hydraulis_dispatch.c uses it from HY_TREE_FROM
 * pipelines: 1,024 GPUs are ~1,000 pipelines, and a scan per sequence per trial made
 * the dispatch 93% of the run).
 *
 * The scan's answer: with x_j = max(mx, inner_j), inner_j = (C_j + t) + max(E_j, e) for
 * the pipeline's scheme (its kind), the minimum m* of x over the pipelines holding the
 * sequence; among the pipelines at m*, the last empty one, else the first.  Here each
 * kind keeps a min-tree of C, E and C + E over its pipelines in index order; (min C +
 * t) + max(min E, e) bounds inner below in every subtree (rounding is monotone), and so
 * does (min (C + E) + t)·(1 − 1e-12) when every time is >= 0 (the margin is far above
 * the rounding of either side), so a descent finds the first pipeline at or under mx, or
 * the first minimum above it.  Empty
 * pipelines of a kind share one inner value, and the last of them is tracked per kind.
 * The answer is the scan's to the bit. */
#include <math.h>
#include <stdlib.h>

#include "hydraulis_impl.h"

#define NONE SIZE_MAX

void vl__hy_dtree_free(hy_dtree *d)
{
    free(d->kstart);
    free(d->list);
    free(d->leaf);
    free(d->toff);
    free(d->tsz);
    free(d->c);
    free(d->e);
    free(d->s);
    free(d->last);
    *d = (hy_dtree){0};
}

vl_status vl__hy_dtree_init(hy_dtree *d, const uint32_t *kind, size_t np, size_t nk,
                            vl_err *err)
{
    size_t nodes = 0;

    *d = (hy_dtree){.np = np, .nk = nk};
    d->kstart = calloc(nk + 1, sizeof *d->kstart);
    d->list = malloc(np * sizeof *d->list);
    d->leaf = malloc(np * sizeof *d->leaf);
    d->toff = malloc(nk * sizeof *d->toff);
    d->tsz = malloc(nk * sizeof *d->tsz);
    d->last = malloc(nk * sizeof *d->last);
    if (!d->kstart || !d->list || !d->leaf || !d->toff || !d->tsz || !d->last)
        goto nomem;
    for (size_t j = 0; j < np; j++)
        d->kstart[kind[j] + 1]++;
    for (size_t k = 0; k < nk; k++) {
        size_t cnt = d->kstart[k + 1], sz = 1;
        while (sz < cnt)
            sz *= 2;
        d->kstart[k + 1] += d->kstart[k];
        d->toff[k] = nodes;
        d->tsz[k] = sz;
        nodes += 2 * sz;
    }
    for (size_t k = 0; k < nk; k++)
        d->last[k] = 0; /* for now: pipelines listed so far */
    for (size_t j = 0; j < np; j++) {
        size_t k = kind[j], p = d->last[k]++;
        d->list[d->kstart[k] + p] = j;
        d->leaf[j] = p;
    }
    d->c = malloc(nodes * sizeof *d->c);
    d->e = malloc(nodes * sizeof *d->e);
    d->s = malloc(nodes * sizeof *d->s);
    if (d->c && d->e && d->s)
        return VL_OK;
nomem:
    vl__hy_dtree_free(d);
    return vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory for the dispatch trees");
}

void vl__hy_dtree_reset(hy_dtree *d)
{
    for (size_t k = 0; k < d->nk; k++) {
        size_t cnt = d->kstart[k + 1] - d->kstart[k], sz = d->tsz[k];
        double *c = d->c + d->toff[k], *e = d->e + d->toff[k], *s = d->s + d->toff[k];
        for (size_t p = 0; p < sz; p++) { /* pads never win: +inf */
            c[sz + p] = p < cnt ? 0 : INFINITY;
            e[sz + p] = p < cnt ? 0 : INFINITY;
            s[sz + p] = p < cnt ? 0 : INFINITY;
        }
        for (size_t v = sz; v-- > 1;) {
            c[v] = hy_min(c[2 * v], c[2 * v + 1]);
            e[v] = hy_min(e[2 * v], e[2 * v + 1]);
            s[v] = hy_min(s[2 * v], s[2 * v + 1]);
        }
        d->last[k] = cnt;
    }
}

void vl__hy_dtree_set(hy_dtree *d, size_t j, size_t k, double C, double E, const uint32_t *cnt)
{
    size_t sz = d->tsz[k], v = sz + d->leaf[j];
    double *c = d->c + d->toff[k], *e = d->e + d->toff[k], *s = d->s + d->toff[k];

    c[v] = C;
    e[v] = E;
    s[v] = C + E;
    for (v /= 2; v >= 1; v /= 2) { /* up to the first node whose minima stay */
        double mc = hy_min(c[2 * v], c[2 * v + 1]), me = hy_min(e[2 * v], e[2 * v + 1]);
        double ms = hy_min(s[2 * v], s[2 * v + 1]);
        if (mc == c[v] && me == e[v] && ms == s[v])
            break;
        c[v] = mc;
        e[v] = me;
        s[v] = ms;
    }
    while (d->last[k] > 0 && cnt[d->list[d->kstart[k] + d->last[k] - 1]] > 0)
        d->last[k]--;
}

/* One kind's tree searched for sequence times t, e. */
typedef struct {
    const hy_dtree *d;
    const double *c, *e, *s;
    const size_t *list;
    size_t sz;
    double t, te;
} ksearch;

static double bound(const ksearch *s, size_t v)
{
    double b = s->c[v] + s->t + hy_max(s->e[v], s->te);

    if (v >= s->sz || !s->d->nonneg)
        return b; /* a leaf: inner itself */
    /* (C + t) + max(E, e) >= C + E + t for every pipeline below; with everything >= 0
     * the rounding of either side is far below the margin */
    return hy_max(b, (s->s[v] + s->t) * (1 - 1e-12));
}

/* The first pipeline of the subtree v with inner <= mx, or NONE. */
static size_t first_le(const ksearch *s, size_t v, double mx)
{
    size_t at;

    if (bound(s, v) > mx)
        return NONE;
    if (v >= s->sz)
        return s->list[v - s->sz];
    at = first_le(s, 2 * v, mx);
    return at != NONE ? at : first_le(s, 2 * v + 1, mx);
}

/* The first minimum of inner in the subtree v below *best: *best and *at updated. */
static void first_min(const ksearch *s, size_t v, double *best, size_t *at)
{
    double b = bound(s, v);

    if (b >= *best)
        return;
    if (v >= s->sz) {
        *best = b;
        *at = s->list[v - s->sz];
        return;
    }
    first_min(s, 2 * v, best, at);
    first_min(s, 2 * v + 1, best, at);
}

static ksearch kind_search(const hy_dtree *d, size_t k, const double *row)
{
    return (ksearch){.d = d,
                     .c = d->c + d->toff[k],
                     .e = d->e + d->toff[k],
                     .s = d->s + d->toff[k],
                     .list = d->list + d->kstart[k],
                     .sz = d->tsz[k],
                     .t = row[2 * k],
                     .te = row[2 * k + 1]};
}

/* The last empty pipeline among kinds whose empty inner is at most (le) or exactly
 * (!le) m, of the kinds holding l; NONE when none. */
static size_t last_empty(const hy_dtree *d, const double *row, const hy_scheme *const *kinds,
                         uint32_t l, double m, bool le)
{
    size_t at = NONE;

    for (size_t k = 0; k < d->nk; k++) {
        double in0 = 0.0 + row[2 * k] + hy_max(0.0, row[2 * k + 1]);
        size_t j;
        if (kinds[k]->maxlen < l || d->last[k] == 0 || (le ? in0 > m : in0 != m))
            continue;
        j = d->list[d->kstart[k] + d->last[k] - 1];
        at = at == NONE || j > at ? j : at;
    }
    return at;
}

size_t vl__hy_dtree_pick(const hy_dtree *d, const double *row, const hy_scheme *const *kinds,
                         uint32_t l, double mx)
{
    size_t at = last_empty(d, row, kinds, l, mx, true), first = NONE;
    double best = INFINITY;

    if (at != NONE)
        return at; /* m* = mx, reached by an empty pipeline */
    for (size_t k = 0; k < d->nk; k++) {
        ksearch s = kind_search(d, k, row);
        size_t j;
        if (kinds[k]->maxlen >= l && (j = first_le(&s, 1, mx)) != NONE)
            first = first == NONE || j < first ? j : first;
    }
    if (first != NONE)
        return first;                    /* m* = mx, no empty pipeline there */
    for (size_t k = 0; k < d->nk; k++) { /* every inner above mx: m* = their minimum */
        ksearch s = kind_search(d, k, row);
        double b = INFINITY;
        size_t j = NONE;
        if (kinds[k]->maxlen < l)
            continue;
        first_min(&s, 1, &b, &j);
        if (j != NONE && (b < best || (b == best && j < first))) {
            best = b;
            first = j;
        }
    }
    at = last_empty(d, row, kinds, l, best, false);
    return at != NONE ? at : first;
}
