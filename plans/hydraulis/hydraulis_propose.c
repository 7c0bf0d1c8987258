/* plans/hydraulis/hydraulis_propose.c -- data distribution-aware strategy proposal (§7):
 * the integer DP of the authors' strategy_proposal.py over the length histogram, the
 * candidate list (unique multisets of pipelines), explicit candidates from the config,
 * and trimming to hydraulis.max_candidates.
 *
 * DP (docs/hydraulis.md §2 PROPOSE): t[n][s] is the best latency with n GPUs for
 * every sequence of length <= s, each length interval (s - l, s] given to d pipelines of
 * one scheme k: v = max(t[n - d·g_k][s - l], share), share = A / d + c·m + B with A the
 * interval's Σ hist·(a l² + b l), c paid per micro-batch (m of at most MaxLen tokens),
 * and B = (pp_k − 1)·T_k(its longest), the bubble each of the d pipelines pays (the
 * authors' code charges (Σ hist·T_k + B) / d; docs/hydraulis.md §2).  Ties keep the first
 * found (k in table order, l then d ascending); GPUs may stay idle.  Three exact
 * prunings: d values whose share is at least the best so far are skipped; d stops
 * growing once t[n - d·g][s - l] reaches the best (it only grows with d); and l stops
 * growing once the share over the most pipelines reaches the best (A, m and B only
 * grow with l: the histogram's weights and the coefficients of T are non-negative, and
 * IEEE rounding is monotone). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"

/* ---- histogram ---- */

void vl__hy_hist_free(hy_hist *h)
{
    free(h->cnt);
    free(h->s1);
    free(h->s2);
    free(h->longest);
    *h = (hy_hist){0};
}

vl_status vl__hy_hist(hy_hist *h, const uint32_t *idx, size_t n, const uint32_t *len,
                      uint32_t step, double w, vl_err *err)
{
    uint32_t top = 0;

    *h = (hy_hist){.step = step};
    for (size_t i = 0; i < n; i++)
        top = len[idx[i]] > top ? len[idx[i]] : top;
    h->nb = (top + step - 1) / step;
    h->cnt = calloc(h->nb + 1, sizeof *h->cnt);
    h->s1 = calloc(h->nb + 1, sizeof *h->s1);
    h->s2 = calloc(h->nb + 1, sizeof *h->s2);
    h->longest = calloc(h->nb + 1, sizeof *h->longest);
    if (!h->cnt || !h->s1 || !h->s2 || !h->longest) {
        vl__hy_hist_free(h);
        return vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory for the histogram");
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len[idx[i]], b = (l + step - 1) / step;
        if (l == 0)
            continue;
        h->cnt[b] += w;
        h->s1[b] += w * l;
        h->s2[b] += w * (double)l * l;
        h->longest[b] = l > h->longest[b] ? l : h->longest[b];
    }
    return VL_OK;
}

/* ---- candidates ---- */

void vl__hy_cands_free(hy_cands *c)
{
    free(c->c);
    free(c->pipes);
    *c = (hy_cands){0};
}

/* Canonical order: tp, then pp, descending (scheme pairs are unique). */
static void sort_pipes(const hy_schemes *sch, uint32_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t x = p[i];
        size_t j = i;
        while (j > 0) {
            const hy_scheme *a = &sch->s[p[j - 1]], *b = &sch->s[x];
            if (a->tp > b->tp || (a->tp == b->tp && a->pp >= b->pp))
                break;
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

vl_status vl__hy_cand_add(hy_cands *out, const hy_schemes *sch, const uint32_t *pipes,
                          size_t np, double est, uint32_t s, bool *added, vl_err *err)
{
    hy_cand c = {.p0 = (uint32_t)out->npipes, .np = (uint32_t)np, .est = est, .s = s};
    vl_status st;

    *added = false;
    if ((st = vl_grow(&out->pipes, &out->pipes_cap, out->npipes + np + 1, sizeof *out->pipes,
                      err)) != VL_OK)
        return st;
    uint32_t *mine = out->pipes + out->npipes;
    memcpy(mine, pipes, np * sizeof *pipes);
    sort_pipes(sch, mine, np);
    for (size_t i = 0; i < out->n; i++)
        if (out->c[i].np == np &&
            memcmp(out->pipes + out->c[i].p0, mine, np * sizeof *mine) == 0)
            return VL_OK;
    for (size_t i = 0; i < np; i++) {
        const hy_scheme *k = &sch->s[mine[i]];
        c.maxlen = k->maxlen > c.maxlen ? k->maxlen : c.maxlen;
        c.gpus += (uint32_t)(k->tp * k->pp);
    }
    if ((st = vl_grow(&out->c, &out->cap, out->n + 1, sizeof *out->c, err)) != VL_OK)
        return st;
    out->npipes += np;
    out->c[out->n++] = c;
    *added = true;
    return VL_OK;
}

void vl__hy_cands_trim(hy_cands *c, size_t max)
{
    size_t rest = c->n - 1, keep;

    if (max < 1)
        max = 1;
    if (c->n <= max)
        return;
    keep = max - 1;
    for (size_t j = 1; j <= keep; j++) /* ceil(j·rest/keep): evenly, the last included */
        c->c[j] = c->c[(j * rest + keep - 1) / keep];
    c->n = max;
}

/* ---- the DP ---- */

typedef struct dp {
    const hy_hist *h;
    const hy_schemes *sch;
    int nstep, ni;        /* GPUs per grid step, grid steps */
    size_t w;             /* row width: nb + 1 */
    double *t;            /* [(ni + 1) · w] */
    int16_t *k;           /* choice: -1 idle, -2 none, else scheme */
    uint32_t *d, *l;      /* pipelines, interval length in bins */
    uint32_t *last;       /* [nb + 1]: highest non-empty bin <= b, 0 if none */
    double *c0, *c1, *c2; /* prefix sums of cnt, s1, s2 */
} dp;

/* The interval (lo, hi] on scheme s: its length-dependent work A = Σ hist·(a l² + b l),
 * its tokens, and the bubble each pipeline running its longest pays, (pp - 1)·T(longest).
 * The constant c is paid per micro-batch (sequences are packed), see share(). */
static double work(const dp *D, const hy_scheme *s, uint32_t lo, uint32_t hi, double *tokens,
                   double *bubble)
{
    double s1 = D->c1[hi] - D->c1[lo], s2 = D->c2[hi] - D->c2[lo];
    uint32_t top = D->last[hi];

    *tokens = s1;
    *bubble = top > lo && s->pp > 1 ? (s->pp - 1) * hy_T(s, D->h->longest[top]) : 0;
    return s->a * s2 + s->b * s1;
}

/* One of d pipelines' time for its share: A/d, c per micro-batch of at most MaxLen
 * tokens (at least one), and the bubble. */
static double share(const hy_scheme *s, double A, double tokens, double B, int d)
{
    double mbs = ceil(tokens / ((double)d * s->maxlen));

    return A / d + s->c * (mbs > 1 ? mbs : 1) + B;
}

static vl_status dp_alloc(dp *D, vl_err *err)
{
    size_t cells = (size_t)(D->ni + 1) * D->w, nb1 = D->w;

    D->t = malloc(cells * sizeof *D->t);
    D->k = malloc(cells * sizeof *D->k);
    D->d = malloc(cells * sizeof *D->d);
    D->l = malloc(cells * sizeof *D->l);
    D->last = calloc(nb1, sizeof *D->last);
    D->c0 = calloc(nb1, sizeof(double));
    D->c1 = calloc(nb1, sizeof(double));
    D->c2 = calloc(nb1, sizeof(double));
    if (!D->t || !D->k || !D->d || !D->l || !D->last || !D->c0 || !D->c1 || !D->c2)
        return vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory for the proposal DP");
    for (size_t b = 1; b < nb1; b++) {
        D->c0[b] = D->c0[b - 1] + D->h->cnt[b];
        D->c1[b] = D->c1[b - 1] + D->h->s1[b];
        D->c2[b] = D->c2[b - 1] + D->h->s2[b];
        D->last[b] = D->h->cnt[b] > 0 ? (uint32_t)b : D->last[b - 1];
    }
    return VL_OK;
}

static void dp_free(dp *D)
{
    free(D->t);
    free(D->k);
    free(D->d);
    free(D->l);
    free(D->last);
    free(D->c0);
    free(D->c1);
    free(D->c2);
}

/* Best way to give interval (b - lb, b] to pipelines of scheme k with n GPUs. */
static void try_scheme(dp *D, size_t cell, int n, uint32_t b, int16_t k)
{
    const hy_scheme *s = &D->sch->s[k];
    int g = s->tp * s->pp;

    const int dmax = n / g;

    for (uint32_t lb = 1; lb <= b; lb++) {
        double B, tok, A = work(D, s, b - lb, b, &tok, &B), *best = &D->t[cell];
        double room;
        int d0 = 1;
        if (share(s, A, tok, B, dmax) >= *best)
            break; /* no d beats the best, nor does any longer interval (all grow) */
        room = *best - B - s->c; /* > 0 here; below A / room a share exceeds the best */
        if (isfinite(room) && A / room > 1)
            d0 = A / room < dmax ? (int)(A / room) : dmax;
        for (int d = d0; d <= dmax; d++) {
            int prev = (n - d * g) / D->nstep;
            double tp = D->t[(size_t)prev * D->w + (b - lb)], sh = share(s, A, tok, B, d);
            double v = tp > sh ? tp : sh; /* no NaN here: fmax without the call */
            if (tp >= *best)
                break;
            if (v < *best) {
                *best = v;
                D->k[cell] = k;
                D->d[cell] = (uint32_t)d;
                D->l[cell] = lb;
            }
        }
    }
}

static void dp_run(dp *D)
{
    for (size_t b = 0; b < D->w; b++) {
        D->t[b] = b == 0 ? 0 : INFINITY;
        D->k[b] = -2;
    }
    for (int ni = 1; ni <= D->ni; ni++) {
        int n = ni * D->nstep;
        size_t row = (size_t)ni * D->w;
        D->t[row] = 0;
        D->k[row] = -2;
        for (uint32_t b = 1; b < D->w; b++) {
            size_t cell = row + b;
            D->t[cell] = D->t[cell - D->w]; /* GPUs may stay idle */
            D->k[cell] = isfinite(D->t[cell]) ? -1 : -2;
            for (size_t k = 0; k < D->sch->n; k++) {
                const hy_scheme *s = &D->sch->s[k];
                if (s->maxlen >= b * D->h->step && s->tp * s->pp <= n)
                    try_scheme(D, cell, n, b, (int16_t)k);
            }
        }
    }
}

/* Expand S[N][b] into pipes (room for N); returns the count. */
static size_t expand(const dp *D, uint32_t b, uint32_t *pipes)
{
    int ni = D->ni;
    size_t np = 0;

    while (b > 0) {
        size_t cell = (size_t)ni * D->w + b;
        int16_t k = D->k[cell];
        if (k == -1) {
            ni--;
            continue;
        }
        if (k < 0)
            return 0;
        const hy_scheme *s = &D->sch->s[k];
        for (uint32_t i = 0; i < D->d[cell]; i++)
            pipes[np++] = (uint32_t)k;
        ni = (ni * D->nstep - (int)D->d[cell] * s->tp * s->pp) / D->nstep;
        b -= D->l[cell];
    }
    return np;
}

vl_status vl__hy_propose(hy_cands *out, const hy_hist *h, const hy_schemes *sch, int N,
                         int nstep, vl_err *err)
{
    dp D = {.h = h, .sch = sch, .nstep = nstep > 0 ? nstep : 1, .w = (size_t)h->nb + 1};
    uint32_t *pipes = malloc((size_t)(N > 0 ? N : 1) * sizeof *pipes);
    vl_status st;

    D.ni = N / D.nstep;
    if (pipes == NULL)
        return vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory for the proposal DP");
    st = dp_alloc(&D, err);
    if (st == VL_OK)
        dp_run(&D);
    for (uint32_t b = 1; b <= h->nb && st == VL_OK; b++) {
        size_t cell = (size_t)D.ni * D.w + b, np;
        bool added;
        if (!isfinite(D.t[cell]) || (np = expand(&D, b, pipes)) == 0)
            continue;
        st = vl__hy_cand_add(out, sch, pipes, np, D.t[cell], b * h->step, &added, err);
    }
    dp_free(&D);
    free(pipes);
    return st;
}

vl_status vl__hy_dp_at(const hy_hist *h, const hy_schemes *sch, int N, int nstep, uint32_t s,
                       uint32_t *pipes, size_t *np, double *t, vl_err *err)
{
    dp D = {.h = h, .sch = sch, .nstep = nstep > 0 ? nstep : 1, .w = (size_t)h->nb + 1};
    uint32_t b = s / h->step;
    vl_status st;

    D.ni = N / D.nstep;
    *np = 0;
    *t = INFINITY;
    st = dp_alloc(&D, err);
    if (st == VL_OK && b <= h->nb) {
        dp_run(&D);
        *t = D.t[(size_t)D.ni * D.w + b];
        if (isfinite(*t) && b > 0)
            *np = expand(&D, b, pipes);
        sort_pipes(sch, pipes, *np);
    }
    dp_free(&D);
    return st;
}

/* ---- explicit candidates ---- */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* One term "DxTP/PP" or "TP/PP" at *pp: appends d copies of the scheme to pipes. */
static vl_status parse_term(const char **pp, const hy_schemes *sch, uint32_t *pipes,
                            size_t *np, size_t room, vl_err *err)
{
    const char *p = skip_ws(*pp), *start = p;
    char *end;
    long d = 1, tp, pl;
    int k;

    tp = strtol(p, &end, 10);
    if (end != p && (*end == 'x' || *end == 'X')) {
        d = tp;
        p = end + 1;
        tp = strtol(p, &end, 10);
    }
    if (end == p || *end != '/')
        return vl_seterr(err, VL_ECONFIG,
                         "hydraulis.candidates: expected [Dx]TP/PP at \"%.20s\"", start);
    p = end + 1;
    pl = strtol(p, &end, 10);
    if (end == p || d < 1 || tp < 1 || pl < 1 || tp > 1024 || pl > 1024)
        return vl_seterr(err, VL_ECONFIG,
                         "hydraulis.candidates: expected [Dx]TP/PP at \"%.20s\"", start);
    if ((k = vl__hy_scheme_find(sch, (int)tp, (int)pl)) < 0)
        return vl_seterr(
            err, VL_ECONFIG,
            "hydraulis.candidates: scheme %ld/%ld is not usable "
            "(tp a power of two <= 16 dividing the heads, pp dividing the layers, "
            "a cost.schemes row when rows are given, and at least 128 tokens "
            "fitting memory)",
            tp, pl);
    if ((size_t)d > room - *np)
        return vl_seterr(err, VL_ECONFIG, "hydraulis.candidates: more pipelines than GPUs");
    for (long i = 0; i < d; i++)
        pipes[(*np)++] = (uint32_t)k;
    *pp = skip_ws(end);
    return VL_OK;
}

vl_status vl__hy_parse_cands(hy_cands *out, const char *text, const hy_schemes *sch, int gpus,
                             vl_err *err)
{
    size_t room = (size_t)(gpus > 0 ? gpus : 1);
    uint32_t *pipes = malloc(room * sizeof *pipes);
    const char *p = text;
    vl_status st = pipes ? VL_OK : vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory");

    while (st == VL_OK && *skip_ws(p)) {
        size_t np = 0;
        bool added;
        do {
            st = parse_term(&p, sch, pipes, &np, room, err);
        } while (st == VL_OK && *p == '+' && (p++, true));
        if (st == VL_OK && *p != ';' && *p != '\0')
            st = vl_seterr(err, VL_ECONFIG,
                           "hydraulis.candidates: expected '+' or ';' at "
                           "\"%.20s\"",
                           p);
        if (st == VL_OK)
            st = vl__hy_cand_add(out, sch, pipes, np, -1, 0, &added, err);
        if (st == VL_OK && out->c[out->n - 1].gpus > (uint32_t)gpus)
            st = vl_seterr(err, VL_ECONFIG,
                           "hydraulis.candidates: candidate %zu needs %u GPUs, "
                           "the cluster has %d",
                           out->n, out->c[out->n - 1].gpus, gpus);
        if (*p == ';')
            p++;
    }
    if (st == VL_OK && out->n == 0)
        st = vl_seterr(err, VL_ECONFIG, "hydraulis.candidates: no candidate given");
    free(pipes);
    return st;
}
