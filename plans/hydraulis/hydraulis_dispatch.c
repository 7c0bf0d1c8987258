/* plans/hydraulis/hydraulis_dispatch.c -- stage one of the two-stage assignment (§6.2,
 * Alg. 1 as the authors' dispatch code runs it, docs/hydraulis.md §2 DISPATCH): a
 * randomised greedy that sends each sequence to the pipeline that least worsens the
 * slowest pipeline's lower bound (Eq. 2), over `trials` shuffles, keeping the best.
 *
 * As the code does: sequences only the first pipeline can hold go there first; each
 * pipeline's accumulated C_j (Σ t) and extra E_j ((pp − 1) · the longest t) give the
 * estimate C_j + E_j; an empty pipeline wins a tie.  Fixed here: a trial that leaves a
 * pipeline empty is infeasible (the code rejected the candidate when the best trial so
 * far did, which depends on the trial order).
 *
 * Speed, measured (one 50-trial dispatch of 2,774 lmsys lengths): a placement costs
 * about the same on 31 pipelines as on 62 (2.9 and 3.05 ms), though the first-fit scan
 * reads ~15 against ~25–31 pipelines: time does not follow the scan's length (its exit
 * is mispredicted about once a placement in callgrind's branch simulation).  Kept out,
 * exact but slower in time: per-kind min-trees below HY_TREE_FROM (2.5× slower at 62
 * pipelines), and 64-bit sets of the pipelines by slack class (one test a placement
 * instead of ~25, 17% fewer instructions, ~20% more time).  A cut on the partial
 * trial's estimate (C + E plus the micro-batch constants of the tokens so far) stops
 * too few trials to pay for itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"

void vl__hy_work_free(hy_work *w)
{
    free(w->perm);
    free(w->owner);
    free(w->best_owner);
    free(w->C);
    free(w->E);
    free(w->cnt);
    free(w->pipes);
    free(w->items);
    free(w->bin);
    free(w->best_bin);
    free(w->t);
    free(w->key);
    free(w->key_tmp);
    free(w->load);
    free(w->tok);
    free(w->st);
    free(w->kind);
    free(w->kinds);
    free(w->runs);
    free(w->fits);
    free(w->rfit);
    free(w->slen);
    free(w->perms);
    free(w->asc);
    free(w->ffd);
    free(w->next);
    free(w->prev);
    free(w->mem);
    free(w->tmp);
    free(w->head);
    free(w->heap);
    free(w->aside);
    *w = (hy_work){0};
}

static vl_status reserve(hy_work *w, size_t n, size_t np, vl_err *err)
{
    size_t c = w->seq_cap, pc = w->pipe_cap;
    vl_status st;

    if ((st = vl_grow(&w->perm, &c, n + 1, sizeof *w->perm, err)) != VL_OK)
        return st;
    c = w->seq_cap;
    if ((st = vl_grow(&w->owner, &c, n + 1, sizeof *w->owner, err)) != VL_OK)
        return st;
    c = w->seq_cap;
    if ((st = vl_grow(&w->best_owner, &c, n + 1, sizeof *w->best_owner, err)) != VL_OK)
        return st;
    w->seq_cap = c;
    if ((st = vl_grow(&w->C, &pc, np + 1, sizeof *w->C, err)) != VL_OK)
        return st;
    pc = w->pipe_cap;
    if ((st = vl_grow(&w->E, &pc, np + 1, sizeof *w->E, err)) != VL_OK)
        return st;
    pc = w->pipe_cap;
    if ((st = vl_grow(&w->cnt, &pc, np + 1, sizeof *w->cnt, err)) != VL_OK)
        return st;
    w->pipe_cap = pc;
    return VL_OK;
}

/* Each sequence's time t and bubble term (pp − 1)·t on each distinct scheme of the
 * pipelines (w->kind[j] for pipeline j), and the pipelines that hold it (w->fits[i]:
 * the first ones, MaxLen descending): every trial reads them instead of recomputing
 * them per pipeline.  Returns the number of distinct schemes, 0 on ENOMEM (*st). */
static size_t tabulate(hy_work *w, const hy_pipe *pipes, size_t np, const uint32_t *seq,
                       size_t n, const uint32_t *len, vl_status *st, vl_err *err)
{
    size_t nk = 0, c = w->st_cap, kc = w->kind_cap;

    if ((*st = vl_grow(&w->kind, &kc, np + 1, sizeof *w->kind, err)) != VL_OK)
        return 0;
    kc = w->kind_cap;
    if ((*st = vl_grow(&w->kinds, &kc, np + 1, sizeof *w->kinds, err)) != VL_OK)
        return 0;
    kc = w->kind_cap;
    if ((*st = vl_grow(&w->runs, &kc, np + 1, sizeof *w->runs, err)) != VL_OK)
        return 0;
    w->kind_cap = kc;
    w->nrun = 0;
    for (size_t j = 0; j < np; j++) {
        size_t k = 0;
        while (k < nk && w->kinds[k] != pipes[j].s)
            k++;
        if (k == nk)
            w->kinds[nk++] = pipes[j].s;
        w->kind[j] = (uint32_t)k;
        if (j == 0 || w->kind[j - 1] != k)
            w->runs[w->nrun++] =
                (hy_prun){.j0 = (uint32_t)j, .k = (uint32_t)k, .flat = pipes[j].s->pp == 1};
        w->runs[w->nrun - 1].j1 = (uint32_t)j + 1;
    }
    if ((*st = vl_grow(&w->st, &c, 2 * n * nk + 1, sizeof *w->st, err)) != VL_OK)
        return 0;
    w->st_cap = c;
    c = w->fits_cap;
    if ((*st = vl_grow(&w->fits, &c, n + 1, sizeof *w->fits, err)) != VL_OK)
        return 0;
    c = w->fits_cap;
    if ((*st = vl_grow(&w->slen, &c, n + 1, sizeof *w->slen, err)) != VL_OK)
        return 0;
    c = w->fits_cap;
    if ((*st = vl_grow(&w->rfit, &c, n + 1, sizeof *w->rfit, err)) != VL_OK)
        return 0;
    w->fits_cap = c;
    w->only0 = 0;
    /* pipelines by MaxLen descending: those holding a sequence are a prefix, its end
     * found by halving */
    for (size_t i = 0; i < n; i++) {
        uint32_t f = 0, hi = (uint32_t)np;
        while (f < hi) {
            uint32_t mid = f + (hi - f) / 2;
            if (pipes[mid].s->maxlen >= len[seq[i]])
                f = mid + 1;
            else
                hi = mid;
        }
        w->fits[i] = f;
        w->slen[i] = len[seq[i]];
        w->only0 += f == 1;
        /* a kind has one MaxLen: the pipelines holding a sequence are whole runs; 0
         * marks the sequences placed before the others (placed_first) */
        w->rfit[i] = 0;
        while (np > 1 && f > 1 && w->rfit[i] < w->nrun && w->runs[w->rfit[i]].j0 < f)
            w->rfit[i]++;
        w->rfit[i] += np == 1;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nk; k++) {
            double t = hy_t(w->kinds[k], len[seq[i]]);
            w->st[(i * nk + k) * 2] = t;
            w->st[(i * nk + k) * 2 + 1] = (w->kinds[k]->pp - 1) * t;
        }
    return nk;
}

/* Sequence i (its row of the table) onto pipeline j; *empty counts pipelines still
 * empty.  Returns the pipeline's estimate C_j + E_j now (from registers: the trial's
 * running maximum waits on it). */
static inline double add(hy_work *w, const double *row, size_t j, size_t *empty)
{
    const double *te = row + 2 * w->kind[j];
    double c = w->C[j] + te[0], e = hy_max(w->E[j], te[1]);

    w->C[j] = c;
    w->E[j] = e;
    *empty -= w->cnt[j]++ == 0;
    return c + e;
}

/* Whether the trials place sequence i before the others: those only pipeline 0 holds,
 * when it has company (tabulate marks them). */
static inline bool placed_first(const hy_work *w, uint32_t i)
{
    return w->rfit[i] == 0;
}

/* A trial's start, shared by both kinds: every pipeline empty, then the sequences only
 * pipeline 0 can hold placed there (placed_first; the trial's loop skips them, so
 * owner[] is complete when the trial is).  Returns the running maximum. */
static double trial_start(hy_work *w, size_t np, size_t nk, size_t n, uint32_t *owner,
                          size_t *empty)
{
    double mx = 0;

    *empty = np;
    for (size_t r = 0; r < w->nrun; r++)
        w->runs[r].open = w->runs[r].j1;
    memset(w->C, 0, np * sizeof *w->C);
    memset(w->E, 0, np * sizeof *w->E);
    memset(w->cnt, 0, np * sizeof *w->cnt);
    /* the sequences longer than pipeline 1's MaxLen: fits 1 (no sequence fits none) */
    for (size_t k = 0; k < n && np > 1 && w->only0 > 0; k++) {
        uint32_t i = w->order[k];
        if (placed_first(w, i)) {
            owner[i] = 0;
            add(w, w->st + (size_t)i * nk * 2, 0, empty);
        }
    }
    for (size_t j = 0; j < np; j++)
        mx = hy_max(mx, w->C[j] + w->E[j]);
    return mx;
}

/* The pipeline the scan of trial() picks once no pipeline is empty: the first of the
 * pipelines holding the sequence (its first nr runs) whose estimate y with it stays
 * within mx (the scan's x = max(mx, y) is mx exactly then), else the first with the
 * smallest estimate.  Pipelines are walked by runs of one kind, so the sequence's t and
 * bubble term are read once a run; the first search carries no minimum from one pipeline to
 * the next, and the second, for the rarer sequence that raises mx, computes the same y
 * again. */
static size_t pick_full(const hy_work *w, const double *row, uint32_t nr, double mx)
{
    const double *C = w->C, *E = w->E;
    double best = INFINITY;
    size_t at = 0;

    for (const hy_prun *r = w->runs; r < w->runs + nr; r++) {
        double t0 = row[2 * r->k], t1 = row[2 * r->k + 1];
        size_t j = r->j0, j1 = r->j1;
        if (r->flat) {
            /* no bubble term: E and (pp - 1)·t are zeros, and adding a zero changes
             * no sum a comparison sees; four pipelines a step (the same comparisons, in
             * order) */
            for (; j + 4 <= j1; j += 4) {
                if (C[j] + t0 <= mx)
                    return j;
                if (C[j + 1] + t0 <= mx)
                    return j + 1;
                if (C[j + 2] + t0 <= mx)
                    return j + 2;
                if (C[j + 3] + t0 <= mx)
                    return j + 3;
            }
            for (; j < j1; j++)
                if (C[j] + t0 <= mx)
                    return j;
            continue;
        }
        for (; j < j1; j++)
            if (C[j] + t0 + hy_max(E[j], t1) <= mx)
                return j;
    }
    for (const hy_prun *r = w->runs; r < w->runs + nr; r++) {
        double t0 = row[2 * r->k], t1 = row[2 * r->k + 1];
        for (size_t j = r->j0; j < r->j1; j++) {
            double y = C[j] + t0 + hy_max(E[j], t1);
            at = y < best ? j : at;
            best = y < best ? y : best;
        }
    }
    return at;
}

/* The pipeline Alg. 1's scan picks while some pipeline is empty: the smallest estimate
 * max(mx, y) over pipelines [0, fit), an empty pipeline winning a tie. */
static size_t pick_open(const hy_work *w, const double *row, uint32_t fit, double mx)
{
    double best = INFINITY;
    size_t at = 0;

    for (size_t j = 0; j < fit; j++) {
        const double *te = row + 2 * w->kind[j];
        double x = hy_max(mx, w->C[j] + te[0] + hy_max(w->E[j], te[1]));
        if (x < best || (x == best && w->cnt[j] == 0)) {
            best = x;
            at = j;
        }
    }
    return at;
}

/* pick_open without the scan where its answer is plain (the runs [0, nr) holding the
 * sequence are the pipelines [0, fit): a kind has one MaxLen).  An empty pipeline's
 * estimate with the sequence is the same across its run (C = E = 0), and where it
 * stays within mx, x = mx is the smallest x there is, and the scan ends on the last
 * empty pipeline at it (an empty pipeline at the minimum replaces the one before it, a
 * non-empty one does not): the last empty pipeline of the last run whose estimate stays
 * within mx.  Else the scan (which was 7% of the instructions of a plan on 64
 * GPUs). */
static size_t pick_open_runs(hy_work *w, const double *row, uint32_t nr, uint32_t fit,
                             double mx)
{
    for (hy_prun *r = w->runs + nr; r > w->runs;) {
        size_t j;
        r--;
        while (r->open > r->j0 && w->cnt[r->open - 1] > 0)
            r->open--; /* pipelines only fill within a trial */
        j = r->open - 1;
        if (r->open > r->j0 &&
            w->C[j] + row[2 * r->k] + hy_max(w->E[j], row[2 * r->k + 1]) <= mx)
            return j;
    }
    return pick_open(w, row, fit, mx);
}

/* Sequence i placed by Alg. 1's scan (pick_full once no pipeline is empty, else
 * pick_open); returns the running maximum. */
static inline double place(hy_work *w, size_t nk, uint32_t i, bool full, double mx,
                           size_t *empty, uint32_t *owner)
{
    const double *row = w->st + (size_t)i * nk * 2;
    size_t at;

    if (placed_first(w, i))
        return mx;
    at = full ? pick_full(w, row, w->rfit[i], mx)
              : pick_open_runs(w, row, w->rfit[i], w->fits[i], mx);
    owner[i] = (uint32_t)at;
    return hy_max(mx, add(w, row, at, empty));
}

/* One trial over the order w->order; owner[i] = pipeline.  Returns its objective, or
 * INFINITY as soon as it reaches `bound` (the objective only grows: such a trial cannot
 * beat the best one).  A pipeline's estimate never falls below the running maximum mx,
 * so once no pipeline is empty (an empty one would win a tie) the first to stay at mx
 * is the answer (pick_full).  Two loops, the phases known to the compiler. */
static double trial(hy_work *w, size_t np, size_t nk, size_t n, double bound, uint32_t *owner)
{
    size_t empty, k = 0;
    double mx = trial_start(w, np, nk, n, owner, &empty);

    for (; k < n && mx < bound && empty > 0; k++)
        mx = place(w, nk, w->order[k], false, mx, &empty, owner);
    for (; k < n && mx < bound; k++)
        mx = place(w, nk, w->order[k], true, mx, &empty, owner);
    return mx < bound ? mx : INFINITY;
}

/* trial() with the pipeline of each sequence from the kinds' trees (many pipelines). */
static double trial_tree(hy_work *w, hy_dtree *d, size_t np, size_t nk, size_t n, double bound,
                         uint32_t *owner)
{
    size_t empty;
    double mx = trial_start(w, np, nk, n, owner, &empty);

    vl__hy_dtree_reset(d);
    if (w->cnt[0] > 0)
        vl__hy_dtree_set(d, 0, w->kind[0], w->C[0], w->E[0], w->cnt);
    for (size_t k = 0; k < n && mx < bound; k++) {
        uint32_t i = w->order[k];
        const double *row = w->st + (size_t)i * nk * 2;
        size_t at;
        if (placed_first(w, i))
            continue;
        at = vl__hy_dtree_pick(d, row, w->kinds, w->slen[i], mx);
        owner[i] = (uint32_t)at;
        mx = hy_max(mx, add(w, row, at, &empty));
        vl__hy_dtree_set(d, at, w->kind[at], w->C[at], w->E[at], w->cnt);
    }
    return mx < bound ? mx : INFINITY;
}

/* The shuffles of trials 0 .. trials-1 (rng seeded (seed, stream + trial)) kept in
 * w->perms, drawn again only when the key changed. */
static vl_status keep_perms(hy_work *w, size_t n, uint32_t trials, uint64_t seed,
                            uint64_t stream, vl_err *err)
{
    vl_status st;

    if (w->perms && w->perms_n == n && w->perms_trials == trials && w->perms_seed == seed &&
        w->perms_stream == stream)
        return VL_OK;
    w->perms_n = 0; /* invalid until drawn */
    if ((st = vl_grow(&w->perms, &w->perms_cap, (size_t)trials * n + 1, sizeof *w->perms,
                      err)) != VL_OK)
        return st;
    for (uint32_t tr = 0; tr < trials; tr++) {
        uint32_t *p = w->perms + (size_t)tr * n;
        vl_rng r;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint32_t)i;
        vl_rng_seed(&r, seed, stream + tr);
        vl_rng_shuffle_u32(&r, p, n);
    }
    w->perms_n = n;
    w->perms_trials = trials;
    w->perms_seed = seed;
    w->perms_stream = stream;
    return VL_OK;
}

double vl__hy_dispatch(hy_work *w, const hy_pipe *pipes, size_t np, const uint32_t *seq,
                       size_t n, const uint32_t *len, uint32_t trials, uint64_t seed,
                       uint64_t stream, bool allow_empty, uint32_t *owner, vl_status *st,
                       vl_err *err)
{
    return vl__hy_dispatch_cut(w, pipes, np, seq, n, len, trials, seed, stream, allow_empty,
                               INFINITY, owner, st, err);
}

/* A cut is kept only where the objective bounds every estimate from below: no time of a
 * sequence nor constant of a micro-batch negative. */
static bool cut_holds(const hy_work *w, const hy_pipe *pipes, size_t np, size_t n, size_t nk)
{
    for (size_t j = 0; j < np; j++)
        if (pipes[j].s->c < 0)
            return false;
    for (size_t q = 0; q < 2 * n * nk; q++)
        if (!(w->st[q] >= 0))
            return false;
    return true;
}

double vl__hy_dispatch_cut(hy_work *w, const hy_pipe *pipes, size_t np, const uint32_t *seq,
                           size_t n, const uint32_t *len, uint32_t trials, uint64_t seed,
                           uint64_t stream, bool allow_empty, double cut, uint32_t *owner,
                           vl_status *st, vl_err *err)
{
    double best = -1;
    bool was_cut = false;
    size_t nk, from = w->tree_from ? w->tree_from : HY_TREE_FROM;
    hy_dtree d = {0};

    if ((*st = reserve(w, n, np, err)) != VL_OK || np == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (len[seq[i]] > pipes[0].s->maxlen)
            return -1; /* no pipeline holds it */
    if ((nk = tabulate(w, pipes, np, seq, n, len, st, err)) == 0 ||
        (np >= from && (*st = vl__hy_dtree_init(&d, w->kind, np, nk, err)) != VL_OK))
        return -1;
    d.nonneg = true;
    for (size_t q = 0; q < 2 * n * nk && np >= from; q++)
        d.nonneg = d.nonneg && w->st[q] >= 0;
    if (cut < INFINITY && !cut_holds(w, pipes, np, n, nk))
        cut = INFINITY;
    bool kept = trials > 0 && (uint64_t)trials * n <= HY_PERMS_KEPT &&
                (*st = keep_perms(w, n, trials, seed, stream, err)) == VL_OK;
    if (*st != VL_OK) {
        vl__hy_dtree_free(&d);
        return -1;
    }
    for (uint32_t tr = 0; tr < (trials ? trials : 1); tr++) {
        vl_rng r;
        bool empty = false;
        double obj, bound;
        w->order = w->perm;
        if (kept) {
            w->order = w->perms + (size_t)tr * n; /* read in place, not copied */
        } else {
            for (size_t i = 0; i < n; i++)
                w->perm[i] = (uint32_t)i;
            if (trials > 0) {
                vl_rng_seed(&r, seed, stream + tr);
                vl_rng_shuffle_u32(&r, w->perm, n);
            }
        }
        bound = best >= 0 && best < cut ? best : cut;
        obj = np >= from ? trial_tree(w, &d, np, nk, n, bound, w->owner)
                         : trial(w, np, nk, n, bound, w->owner);
        /* past the cut: every trial accepted stays below it, so best < cut throughout */
        was_cut = was_cut || (obj == INFINITY && cut < INFINITY && best < 0);
        for (size_t j = 0; j < np; j++)
            empty = empty || w->cnt[j] == 0;
        if ((empty && !allow_empty) || (best >= 0 && obj >= best) ||
            (obj == INFINITY && bound < INFINITY))
            continue;
        best = obj;
        memcpy(owner, w->owner, n * sizeof *owner);
    }
    vl__hy_dtree_free(&d);
    return best < 0 && was_cut ? INFINITY : best;
}
