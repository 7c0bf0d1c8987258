/* tests/strategies/test_hydraulis_fast.c -- the fast paths of Hydraulis's dispatch and packing give
 * the plain algorithms' answers to the bit: the per-scheme trees against the scan of
 * every pipeline (vl__hy_dispatch with hy_work.tree_from 1 and SIZE_MAX), and min-max
 * packing against a copy of the plain version kept here (sorts per count, LPT scanning
 * every micro-batch, the search scanning every sequence, every count packed), on seeded
 * random inputs full of ties; and the evaluation's candidate bound never passes an
 * estimate, a kept evaluation is the one evaluated again, and the choice of candidate
 * is the same whichever candidate is evaluated first. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"
#include "rng.h"

/* ---- dispatch: trees against the scan ---- */

static double run_dispatch(const hy_pipe *pipes, size_t np, const uint32_t *seq, size_t n,
                           const uint32_t *len, uint32_t trials, bool allow_empty,
                           size_t tree_from, uint32_t *owner)
{
    hy_work w = {.tree_from = tree_from};
    vl_status st;
    vl_err err;
    double obj = vl__hy_dispatch(&w, pipes, np, seq, n, len, trials, 11, 5, allow_empty,
                                 owner, &st, &err);

    cr_assert_eq(st, VL_OK, "%s", err.msg);
    vl__hy_work_free(&w);
    return obj;
}

Test(hydraulis_fast, dispatch_trees_pick_what_the_scan_picks)
{
    enum { NP = 300, N = 700 };
    hy_scheme s[4];
    hy_pipe pipes[NP];
    uint32_t len[N], seq[N], a[N], b[N];
    vl_rng r;

    vl_rng_seed(&r, 42, 0);
    for (int c = 0; c < 120; c++) {
        size_t np = 1 + vl_rng_below(&r, c < 60 ? 12 : NP), n = 1 + vl_rng_below(&r, N);
        bool quad = vl_rng_below(&r, 2);
        for (int k = 0; k < 4; k++) {   /* MaxLen ties between kinds too */
            s[k] = (hy_scheme){.tp = 1, .pp = 1 + (int)vl_rng_below(&r, 4),
                               .a = quad ? 1e-7 * (double)(k + 1) : 0,
                               .b = 0.01 * (double)(1 + vl_rng_below(&r, 3)),
                               .maxlen = 512 * (uint32_t)(1 + vl_rng_below(&r, 3))};
        }
        for (size_t j = 0; j < np; j++) {   /* MaxLen descending, stable */
            hy_pipe p = {.s = &s[vl_rng_below(&r, 4)], .slot = (uint32_t)j};
            size_t q = j;
            while (q > 0 && pipes[q - 1].s->maxlen < p.s->maxlen) {
                pipes[q] = pipes[q - 1];
                q--;
            }
            pipes[q] = p;
        }
        for (size_t i = 0; i < n; i++) {   /* few distinct lengths: ties everywhere */
            seq[i] = (uint32_t)i;
            len[i] = 1 + 64 * (uint32_t)vl_rng_below(&r, pipes[0].s->maxlen / 64);
        }
        for (uint32_t trials = 0; trials <= 4; trials += 4) {
            bool relax = vl_rng_below(&r, 2);
            double x = run_dispatch(pipes, np, seq, n, len, trials, relax, SIZE_MAX, a);
            double y = run_dispatch(pipes, np, seq, n, len, trials, relax, 1, b);
            cr_assert_eq(x, y, "case %d: objective %.17g scan, %.17g trees", c, x, y);
            if (x >= 0)
                cr_assert_arr_eq(a, b, n * sizeof *a, "case %d: owners differ", c);
        }
    }
}

/* A cut just above the best objective keeps its trial; at the objective every trial
 * stops, and the dispatch says so (INFINITY), or that none is feasible (-1). */
Test(hydraulis_fast, dispatch_cut_keeps_the_trial_below_it)
{
    enum { NP = 40, N = 500 };
    hy_scheme s[3];
    hy_pipe pipes[NP];
    uint32_t len[N], seq[N], a[N], b[N];
    vl_status st;
    vl_err err;
    vl_rng r;
    int cut = 0;

    vl_rng_seed(&r, 43, 0);
    for (int c = 0; c < 60; c++) {
        size_t np = 1 + vl_rng_below(&r, NP), n = 1 + vl_rng_below(&r, N);
        bool relax = vl_rng_below(&r, 2);
        for (int k = 0; k < 3; k++)
            s[k] = (hy_scheme){.tp = 1, .pp = 1 + (int)vl_rng_below(&r, 3), .a = 1e-7,
                               .b = 0.01 * (double)(1 + vl_rng_below(&r, 3)), .c = 1,
                               .maxlen = 4096};
        for (size_t j = 0; j < np; j++)
            pipes[j] = (hy_pipe){.s = &s[vl_rng_below(&r, 3)], .slot = (uint32_t)j};
        for (size_t i = 0; i < n; i++) {
            seq[i] = (uint32_t)i;
            len[i] = 1 + 64 * (uint32_t)vl_rng_below(&r, 64);
        }
        for (int pass = 0; pass < 2; pass++) { /* trees, then scans */
            hy_work w = {.tree_from = pass == 0 ? 1 : SIZE_MAX};
            double x = vl__hy_dispatch(&w, pipes, np, seq, n, len, 6, 11, 5, relax, a, &st,
                                       &err);
            double y = vl__hy_dispatch_cut(&w, pipes, np, seq, n, len, 6, 11, 5, relax,
                                           nextafter(x, INFINITY), b, &st, &err);
            cr_assert_eq(st, VL_OK, "%s", err.msg);
            if (x >= 0) {
                cr_assert_eq(x, y, "case %d: %.17g in full, %.17g under the cut", c, x, y);
                cr_assert_arr_eq(a, b, n * sizeof *a, "case %d: owners differ", c);
                y = vl__hy_dispatch_cut(&w, pipes, np, seq, n, len, 6, 11, 5, relax, x, b, &st,
                                        &err);
                cr_assert(y == INFINITY || (y == -1 && !relax), "case %d: %.17g", c, y);
                cut += y == INFINITY;
            }
            vl__hy_work_free(&w);
        }
    }
    cr_assert_gt(cut, 60);
}

/* ---- packing: the plain min-max kept as the reference ---- */

typedef struct {
    uint32_t *items;
    double *load;
    uint64_t *tok;
} ref_work;

static const double *ref_t;
static const uint32_t *ref_tok;
static bool ref_by_time;

static int ref_cmp(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

    if (ref_by_time && ref_t[a] != ref_t[b])
        return ref_t[a] > ref_t[b] ? -1 : 1;
    if (ref_tok[a] != ref_tok[b])
        return ref_tok[a] > ref_tok[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static bool ref_place(ref_work *w, size_t n, uint32_t v, uint32_t cap, bool lpt,
                      uint32_t *bin)
{
    memset(w->load, 0, v * sizeof *w->load);
    memset(w->tok, 0, v * sizeof *w->tok);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = w->items[k], at = UINT32_MAX;
        for (uint32_t b = 0; b < v; b++) {
            if (w->tok[b] + ref_tok[i] > cap)
                continue;
            if (at == UINT32_MAX || (lpt && w->load[b] < w->load[at]))
                at = b;
            if (!lpt)
                break;
        }
        if (at == UINT32_MAX)
            return false;
        bin[i] = at;
        w->load[at] += ref_t[i];
        w->tok[at] += ref_tok[i];
    }
    return true;
}

static uint32_t ref_heaviest(const ref_work *w, uint32_t v)
{
    uint32_t h = 0;
    for (uint32_t b = 1; b < v; b++)
        if (w->load[b] > w->load[h])
            h = b;
    return h;
}

static bool ref_improve(ref_work *w, size_t n, uint32_t v, uint32_t cap, uint32_t *bin)
{
    const double *t = ref_t;
    const uint32_t *tok = ref_tok;
    uint32_t h = ref_heaviest(w, v), bi = UINT32_MAX, bj = UINT32_MAX, bb = 0;
    double top = w->load[h], best = top;

    for (size_t i = 0; i < n; i++) {
        if (bin[i] != h)
            continue;
        for (uint32_t b = 0; b < v; b++) {
            double x = fmax(top - t[i], w->load[b] + t[i]);
            if (b != h && w->tok[b] + tok[i] <= cap && x < best) {
                best = x;
                bi = (uint32_t)i;
                bj = UINT32_MAX;
                bb = b;
            }
        }
        for (size_t j = 0; j < n; j++) {
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

static double ref_minmax(const double *t, const uint32_t *tok, size_t n, uint32_t v,
                         uint32_t cap, uint32_t *bin)
{
    ref_work w = {malloc(n * sizeof(uint32_t)), calloc(v, sizeof(double)),
                  calloc(v, sizeof(uint64_t))};
    double m = -1;

    ref_t = t;
    ref_tok = tok;
    cr_assert(w.items && w.load && w.tok);
    for (int pass = 0; pass < 2 && m < 0; pass++) {
        ref_by_time = pass == 0;
        for (size_t i = 0; i < n; i++)
            w.items[i] = (uint32_t)i;
        qsort(w.items, n, sizeof *w.items, ref_cmp);
        if (ref_place(&w, n, v, cap, pass == 0, bin))
            m = 0;
    }
    if (m == 0) {
        for (size_t k = 0; k < 4 * n + v && ref_improve(&w, n, v, cap, bin); k++)
            ;
        m = w.load[ref_heaviest(&w, v)];
    }
    free(w.items);
    free(w.load);
    free(w.tok);
    return m;
}

/* vl__hy_pack's choice of count by the reference: every count packed. */
static double ref_pack(const hy_scheme *s, const uint32_t *len, size_t n, uint32_t *bin,
                       uint32_t *v)
{
    double *t = malloc(n * sizeof *t), best = -1;
    uint32_t *tok = malloc(n * sizeof *tok), *b = malloc(n * sizeof *b), vmin, vmax;
    uint64_t sum = 0;

    cr_assert(t && tok && b);
    for (size_t i = 0; i < n; i++) {
        tok[i] = len[i];
        t[i] = hy_t(s, tok[i]);
        sum += tok[i];
    }
    vmin = (uint32_t)((sum + s->maxlen - 1) / s->maxlen);
    vmin = vmin > 1 ? vmin : 1;
    vmax = (uint32_t)(sum / s->utillen);
    vmax = vmax < n ? vmax : (uint32_t)n;
    vmax = vmax > vmin ? vmax : vmin;
    for (uint32_t k = vmin; k <= vmax && k < vmin + HY_MAX_V; k++) {
        double m = ref_minmax(t, tok, n, k, s->maxlen, b), e;
        if (m < 0)
            continue;
        e = (m + s->c) * (s->pp - 1 + k);
        if (best < 0 || e < best) {
            best = e;
            *v = k;
            memcpy(bin, b, n * sizeof *bin);
        }
    }
    free(t);
    free(tok);
    free(b);
    return best;
}

Test(hydraulis_fast, minmax_moves_as_the_plain_search)
{
    enum { N = 400 };
    double t[N];
    uint32_t tok[N], a[N], b[N];
    hy_work w = {0};
    vl_status st;
    vl_err err;
    vl_rng r;

    vl_rng_seed(&r, 7, 0);
    for (int c = 0; c < 150; c++) {
        size_t n = 1 + vl_rng_below(&r, N);
        uint32_t v = 1 + (uint32_t)vl_rng_below(&r, n < 60 ? n : 60), cap = 4096;
        for (size_t i = 0; i < n; i++) {   /* few lengths: equal times */
            tok[i] = 32 * (1 + (uint32_t)vl_rng_below(&r, c % 2 ? 8 : 100));
            t[i] = c % 3 ? 1e-7 * tok[i] * tok[i] + 0.05 * tok[i] : (double)(tok[i] / 64);
            if (c % 5 == 4)   /* times that do not follow the tokens: the comparison sorts */
                t[i] = (double)vl_rng_below(&r, 40);
        }
        double x = ref_minmax(t, tok, n, v, cap, a);
        double y = vl__hy_minmax(&w, t, tok, n, v, cap, b, &st, &err);
        cr_assert_eq(st, VL_OK, "%s", err.msg);
        cr_assert_eq(x, y, "case %d (n %zu, v %u): %.17g plain, %.17g fast", c, n, v, x, y);
        if (x >= 0)
            cr_assert_arr_eq(a, b, n * sizeof *a, "case %d: micro-batches differ", c);
    }
    vl__hy_work_free(&w);
}

Test(hydraulis_fast, pack_chooses_the_count_the_plain_loop_chooses)
{
    enum { N = 300 };
    uint32_t len[N], seq[N], a[N], b[N], va = 0, vb = 0;
    hy_work w = {0};
    vl_status st;
    vl_err err;
    vl_rng r;

    vl_rng_seed(&r, 9, 0);
    for (int c = 0; c < 60; c++) {
        size_t n = 1 + vl_rng_below(&r, N);
        hy_scheme s = {.tp = 1, .pp = 1 + (int)vl_rng_below(&r, 4),
                       .a = c % 2 ? 1.5e-7 : 0, .b = 0.03 + 0.01 * (c % 5),
                       .c = (double)vl_rng_below(&r, 20), .maxlen = 4096,
                       .utillen = 128 * (uint32_t)(1 + vl_rng_below(&r, 8))};
        for (size_t i = 0; i < n; i++) {
            seq[i] = (uint32_t)i;
            len[i] = 16 * (1 + (uint32_t)vl_rng_below(&r, c % 3 ? 64 : 256));
        }
        double x = ref_pack(&s, len, n, a, &va);
        double y = vl__hy_pack(&w, &s, seq, n, len, HY_BALANCED, b, &vb, &st, &err);
        cr_assert_eq(st, VL_OK, "%s", err.msg);
        cr_assert_eq(x, y, "case %d: estimate %.17g plain, %.17g fast", c, x, y);
        cr_assert_eq(va, vb, "case %d: count %u plain, %u fast", c, va, vb);
        cr_assert_arr_eq(a, b, n * sizeof *a, "case %d: micro-batches differ", c);
    }
    vl__hy_work_free(&w);
}

/* ---- evaluation: the candidate bound and the kept evaluations ---- */

/* Random schemes (quadratic or not, pp 1-4, a micro-batch constant) and candidates of
 * them, homogeneous and mixed, for the evaluation tests below. */
static void random_cands(vl_rng *r, hy_scheme *s, size_t ns, hy_cands *cs)
{
    hy_schemes sch = {.s = s, .n = ns, .cap = ns};
    uint32_t pipes[12];
    vl_err err;
    bool added;

    vl__hy_cands_free(cs);
    for (size_t k = 0; k < ns; k++)
        s[k] = (hy_scheme){.tp = 1 << k, .pp = 1 + (int)vl_rng_below(r, 4),
                           .a = vl_rng_below(r, 2) ? 1e-7 * (double)(k + 1) : 0,
                           .b = 0.01 * (double)(1 + vl_rng_below(r, 3)),
                           .c = 0.5 * (double)vl_rng_below(r, 4),
                           .maxlen = 1024 * (uint32_t)(1 + k), .utillen = 256};
    for (int c = 0; c < 6; c++) {
        size_t np = 1 + vl_rng_below(r, 12);
        for (size_t j = 0; j < np; j++)
            pipes[j] = (uint32_t)(c < (int)ns ? (size_t)c : vl_rng_below(r, ns));
        cr_assert_eq(vl__hy_cand_add(cs, &sch, pipes, np, -1, 0, &added, &err), VL_OK);
    }
}

Test(hydraulis_fast, eval_bounded_just_above_the_estimate_returns_it)
{
    enum { N = 300, NS = 3 };
    hy_scheme s[NS];
    hy_schemes sch = {.s = s, .n = NS, .cap = NS};
    hy_cands cs = {0};
    uint32_t len[N], seq[N];
    vl_status st;
    vl_err err;
    vl_rng r;
    int checked = 0, cut = 0;

    vl_rng_seed(&r, 29, 0);
    for (int c = 0; c < 40; c++) {
        size_t n = 1 + vl_rng_below(&r, N);
        hy_iter it = {.sch = &sch, .cands = &cs, .trials = 4, .context = 2048, .seed = 3,
                      .packing = c % 4 == 3 ? HY_MAXPACK : HY_BALANCED};
        random_cands(&r, s, NS, &cs);
        for (size_t i = 0; i < n; i++) {
            seq[i] = (uint32_t)(n - 1 - i);
            len[i] = 1 + (uint32_t)vl_rng_below(&r, 2048);   /* up to the context */
        }
        for (size_t k = 0; k < cs.n; k++) {
            double e = vl__hy_eval(&it, k, seq, n, len, 7, true, INFINITY, &st, &err), f, g;
            cr_assert_eq(st, VL_OK, "%s", err.msg);
            if (e <= 0)
                continue;
            /* the lower bound never passes the estimate: just above it, nothing is cut */
            f = vl__hy_eval(&it, k, seq, n, len, 7, true, nextafter(e, INFINITY), &st, &err);
            cr_assert_eq(f, e, "case %d cand %zu: %.17g bounded, %.17g in full", c, k, f, e);
            /* nor at it: an estimate at the bound comes back complete */
            f = vl__hy_eval(&it, k, seq, n, len, 7, true, e, &st, &err);
            cr_assert_eq(f, e, "case %d cand %zu: %.17g at the bound, %.17g", c, k, f, e);
            /* below it, what comes back passes the bound (the lower bound, or the
             * estimate of a pipeline packed before the rest were left) */
            g = vl__hy_eval(&it, k, seq, n, len, 7, true, e * 0.99, &st, &err);
            cr_assert(g > e * 0.99 && g <= e, "case %d cand %zu: %.17g of %.17g", c, k, g, e);
            checked++;
        }
        /* a candidate of more pipelines than sequences cannot run them without an idle
         * pipeline, yet under a bound below its lower bound it is cut before dispatch */
        for (size_t k = 0; k < cs.n && n < cs.c[k].np; k++) {
            double e = vl__hy_eval(&it, k, seq, n, len, 7, false, INFINITY, &st, &err);
            double g = vl__hy_eval(&it, k, seq, n, len, 7, false, 1e-12, &st, &err);
            cr_assert_eq(e, -1, "case %d cand %zu", c, k);
            cut += g > 1e-12;
        }
        vl__hy_iter_free(&it);
    }
    cr_assert_gt(checked, 40);
    cr_assert_gt(cut, 0, "no candidate was cut by its lower bound");
    vl__hy_cands_free(&cs);
}

Test(hydraulis_fast, a_kept_evaluation_is_the_one_evaluated_again)
{
    enum { N = 200, NS = 3 };
    hy_scheme s[NS];
    hy_schemes sch = {.s = s, .n = NS, .cap = NS};
    hy_cands cs = {0};
    uint32_t len[N], seq[N], owner[N], mb[N], nmb[12];
    vl_status st;
    vl_err err;
    vl_rng r;
    int kept = 0;

    vl_rng_seed(&r, 30, 0);
    for (int c = 0; c < 20; c++) {
        hy_iter it = {.sch = &sch, .cands = &cs, .trials = 3, .context = 2048, .seed = 5};
        random_cands(&r, s, NS, &cs);
        for (size_t i = 0; i < N; i++) {
            seq[i] = (uint32_t)i;
            len[i] = 1 + (uint32_t)vl_rng_below(&r, 1024);
        }
        vl__hy_memo_clear(&it);
        for (size_t k = 0; k < cs.n; k++)   /* every candidate evaluated and saved */
            if (vl__hy_eval(&it, k, seq, N, len, 9, true, INFINITY, &st, &err) >= 0)
                cr_assert_eq(vl__hy_memo_save(&it, k, N, &err), VL_OK);
        for (size_t k = cs.n; k-- > 0;) {
            size_t np = cs.c[k].np;
            if (vl__hy_eval(&it, k, seq, N, len, 9, true, INFINITY, &st, &err) < 0) {
                cr_assert(!vl__hy_memo_keep(&it, k), "case %d: cand %zu kept", c, k);
                continue;
            }
            vl__hy_keep(&it, k);
            memcpy(owner, it.kept.owner, sizeof owner);
            memcpy(mb, it.kept.mb, sizeof mb);
            memcpy(nmb, it.kept.nmb, np * sizeof *nmb);
            cr_assert(vl__hy_memo_keep(&it, k), "case %d: cand %zu not saved", c, k);
            cr_assert_eq(it.kept_cand, k);
            cr_assert_arr_eq(it.kept.owner, owner, sizeof owner, "case %d cand %zu", c, k);
            cr_assert_arr_eq(it.kept.mb, mb, sizeof mb, "case %d cand %zu", c, k);
            cr_assert_arr_eq(it.kept.nmb, nmb, np * sizeof *nmb, "case %d cand %zu", c, k);
            cr_assert(!vl__hy_memo_keep(&it, k), "case %d: a memo is spent once kept", c);
            kept++;
        }
        vl__hy_memo_clear(&it);
        cr_assert(!vl__hy_memo_keep(&it, 0), "case %d: cleared, yet kept", c);
        vl__hy_iter_free(&it);
    }
    cr_assert_gt(kept, 20);
    vl__hy_cands_free(&cs);
}

/* ---- the choice: the last batch's candidate first against the index order ---- */

/* The choice of it over the batch, under `how`, into est_of; *kept_cand from it. */
static int choose_on(hy_iter *it, const uint32_t *seq, size_t n, const uint32_t *len,
                     const hy_choice *how, double *est_of, double *est)
{
    vl_status st;
    vl_err err;
    int c = vl__hy_choose(it, seq, n, len, 13, how, est_of, est, &st, &err);

    cr_assert_eq(st, VL_OK, "%s", err.msg);
    return c;
}

Test(hydraulis_fast, choice_is_the_same_whichever_candidate_goes_first)
{
    enum { N = 250, NS = 3, NC = 6 };
    static const double margins[] = {0, 0.03, 0.4};
    hy_scheme s[NS];
    hy_schemes sch = {.s = s, .n = NS, .cap = NS};
    hy_cands cs = {0};
    uint32_t len[N], seq[N];
    double plain[NC], fast[NC], ep = 0, ef = 0;
    vl_rng r;
    int compared = 0, cut = 0, ups = 0;

    vl_rng_seed(&r, 31, 0);
    for (int c = 0; c < 24; c++) {
        size_t n = 1 + vl_rng_below(&r, N);
        random_cands(&r, s, NS, &cs);
        for (size_t i = 0; i < n; i++) {
            seq[i] = (uint32_t)(n - 1 - i);
            len[i] = 1 + (uint32_t)vl_rng_below(&r, c % 3 ? 1024 : 3072);
        }
        for (int first = 0; first < (int)cs.n; first++) {
            hy_choice how = {.first = -1, .only = -1, .margin = margins[c % 3],
                             .allow_empty = c % 2, .save = true};
            hy_iter a = {.sch = &sch, .cands = &cs, .trials = 3, .context = 4096, .seed = 5};
            hy_iter b = a;
            int ca = choose_on(&a, seq, n, len, &how, plain, &ep), cb;
            double top;
            how.first = first;
            cb = choose_on(&b, seq, n, len, &how, fast, &ef);
            cr_assert_eq(ca, cb, "case %d first %d: candidate", c, first);
            if (ca < 0) {
                vl__hy_iter_free(&a);
                vl__hy_iter_free(&b);
                continue;
            }
            cr_assert_eq(ep, ef, "case %d first %d: %.17g, %.17g", c, first, ep, ef);
            cr_assert_eq(a.kept_cand, b.kept_cand);
            cr_assert_arr_eq(a.kept.owner, b.kept.owner, n * sizeof *a.kept.owner);
            cr_assert_arr_eq(a.kept.mb, b.kept.mb, n * sizeof *a.kept.mb);
            cr_assert_arr_eq(a.kept.nmb, b.kept.nmb, cs.c[ca].np * sizeof *a.kept.nmb);
            top = ep * (1 + margins[c % 3]);
            for (size_t k = 0; k < cs.n; k++) {
                bool in_a = plain[k] >= 0 && plain[k] <= top;
                bool in_b = fast[k] >= 0 && fast[k] <= top;
                cr_assert_eq(in_a, in_b, "case %d first %d cand %zu: %.17g, %.17g", c, first,
                             k, plain[k], fast[k]);
                if (in_a) {
                    cr_assert_eq(plain[k], fast[k], "case %d first %d cand %zu", c, first, k);
                    /* complete, saved for the runners-up in both */
                    cr_assert(vl__hy_memo_keep(&a, k) && vl__hy_memo_keep(&b, k),
                              "case %d first %d cand %zu not saved", c, first, k);
                    cr_assert_arr_eq(a.kept.mb, b.kept.mb, n * sizeof *a.kept.mb);
                    ups += (int)k != ca;
                }
                cut += plain[k] != fast[k];
            }
            compared++;
            vl__hy_iter_free(&a);
            vl__hy_iter_free(&b);
        }
    }
    cr_assert_gt(compared, 60);
    cr_assert_gt(cut, 10, "the order never changed what the losers returned");
    cr_assert_gt(ups, 5, "no runner-up within the margin");
    vl__hy_cands_free(&cs);
}
