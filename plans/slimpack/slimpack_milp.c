/* plans/slimpack/slimpack_milp.c -- the MILP refinement of a rank's forward packs
 * (paper §4.1.1 says only that an MILP turns work targets into slice boundaries;
 * docs/slimpack.md §2.9 reconstructs one; this is a reduced form of it, a
 * RECONSTRUCTION).  Phase 2's slimmable samples form one stream laid out from pack 0;
 * the MILP moves the M - 1 cut positions c_m in that stream (continuous, monotone: each
 * sample keeps one contiguous run of packs and the stream keeps its order, which is
 * what the y variables and contiguity rows of §2.9 encode) and places every atomic
 * sample in a pack within ±2 of its greedy pack (binaries x), minimising the largest
 * deviation z of a pack's work from tau:
 *     |c_{m+1} − c_m + Σ_i W_i x_{i,m} − tau| <= z,   Σ_m x_{i,m} = 1,   c_m <= c_{m+1}.
 * The backward partition needs no MILP: every sample may be cut there, so cuts at
 * multiples of sigma are already within 0.4% of sigma (slimpack_pack.c).  Run only when
 * the greedy is off by more than 1% (milp auto) and there are at most 2000 binaries,
 * warm-started from the greedy, stopped by min(slimpack.milp_nodes, 60000 / columns)
 * nodes (NODE_WORK), and left out when that is under MIN_NODES unless z = 0 is within
 * the greedy placement's reach (zero_reachable); the refined packs replace the greedy
 * ones only when their deviation, after rounding the cuts to tokens, is lower, and
 * (slimpack_search.c) the rank's simulated makespan is no worse and it still fits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "milp.h"
#include "slimpack_impl.h"

#define WINDOW 2
#define MAX_BINARIES 2000
/* Branch-and-bound nodes times columns per solve at most: a node re-solves an LP of
 * about ncols columns, so this bounds the work of one refinement (a count, not time:
 * about 0.1 s at 1,250 columns, where 500 nodes took 0.7-1.2 s). */
#define NODE_WORK 60000
/* Fewer nodes than this are no search: where z = 0 is out of reach of the greedy's
 * placement (zero_reachable), branch-and-bound stopped at 30-48 nodes on 1,500-2,000
 * columns improved none of 323 refinements (the paper bench and 8 GPUs on
 * tulu3-longcite lengths, bench/history/2026-11-21_to_2026-11-28.md) and took 0.1 s
 * each, most of the planning time at a million samples.  Such a model is left out; one where z = 0 is reachable
 * is solved (the root ends it: 25 ms at 2,000 columns). */
#define MIN_NODES 100

typedef struct model {
    size_t nslim, natom; /* items[0, nslim) slimmable, the rest atomic */
    uint32_t M;
    double tau, S;    /* pack target, slim stream work (both / tau) */
    uint32_t *greedy; /* per atomic item: its greedy pack */
    int *x0;          /* per atomic item: first x column */
    int ncols;        /* c_1..c_{M-1}, z, then the x windows */
} model;

static uint32_t lo_of(const model *md, size_t a)
{
    return md->greedy[a] > WINDOW ? md->greedy[a] - WINDOW : 0;
}

static uint32_t hi_of(const model *md, size_t a)
{
    uint32_t h = md->greedy[a] + WINDOW;
    return h < md->M ? h : md->M - 1;
}

/* The greedy pack of each atomic item: the pack holding its (only) segment. */
static bool find_greedy(const sp_work *w, const sp_packing *pk, size_t p0,
                        const uint32_t *items, model *md)
{
    for (size_t a = 0; a < md->natom; a++) {
        uint32_t sample = w->samples[items[md->nslim + a]];
        md->greedy[a] = UINT32_MAX;
        for (size_t p = p0; p < pk->npacks && md->greedy[a] == UINT32_MAX; p++)
            for (uint32_t j = pk->start[p]; j < pk->start[p + 1]; j++)
                if (pk->segs[j].sample == sample && pk->segs[j].off == 0) {
                    md->greedy[a] = (uint32_t)(p - p0);
                    break;
                }
        if (md->greedy[a] == UINT32_MAX)
            return false;
    }
    return true;
}

/* Columns: c_m at m - 1 (m = 1..M-1), z at M - 1, x windows after. */
static int zcol(const model *md)
{
    return (int)md->M - 1;
}

static vl_status add_rows(vl_milp *lp, const model *md, const sp_work *w,
                          const uint32_t *items, vl_err *err)
{
    size_t cap = (size_t)md->ncols;
    int *idx = malloc(cap * sizeof *idx);
    double *val = malloc(cap * sizeof *val);
    vl_status st = VL_OK;

    if (!idx || !val)
        st = vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for the MILP");
    for (size_t a = 0; a < md->natom && st == VL_OK; a++) { /* Σ_m x = 1 */
        size_t n = 0;
        for (uint32_t m = lo_of(md, a); m <= hi_of(md, a); m++, n++) {
            idx[n] = md->x0[a] + (int)(m - lo_of(md, a));
            val[n] = 1;
        }
        st = vl_milp_row(lp, n, idx, val, 1, 1, err);
    }
    for (uint32_t m = 0; m < md->M && st == VL_OK; m++) { /* |load_m − tau| <= z */
        size_t n = 0;
        double k = 0; /* constant part of the load: c_0 = 0, c_M = S */
        if (m + 1 < md->M) {
            idx[n] = (int)m;
            val[n++] = 1;
        } else {
            k += md->S;
        }
        if (m > 0) {
            idx[n] = (int)m - 1;
            val[n++] = -1;
        }
        for (size_t a = 0; a < md->natom; a++)
            if (m >= lo_of(md, a) && m <= hi_of(md, a)) {
                idx[n] = md->x0[a] + (int)(m - lo_of(md, a));
                val[n++] = w->wf[items[md->nslim + a]] / md->tau;
            }
        idx[n] = zcol(md);
        val[n] = -1;
        if ((st = vl_milp_row(lp, n + 1, idx, val, -INFINITY, 1 - k, err)) != VL_OK)
            break;
        val[n] = 1;
        st = vl_milp_row(lp, n + 1, idx, val, 1 - k, INFINITY, err);
    }
    for (uint32_t m = 1; m + 1 < md->M && st == VL_OK; m++) { /* c_m <= c_{m+1} */
        int ix[2] = {(int)m - 1, (int)m};
        double v[2] = {1, -1};
        st = vl_milp_row(lp, 2, ix, v, -INFINITY, 0, err);
    }
    free(idx);
    free(val);
    return st;
}

/* The greedy as a point of the model: cuts from the slim work in each pack, x from the
 * greedy packs, z from the loads. */
static void warm_point(const model *md, const sp_work *w, const sp_setting *s,
                       const sp_packing *pk, size_t p0, const uint32_t *items, double *x,
                       double *atoms)
{
    double run = 0, z = 0;

    memset(x, 0, (size_t)md->ncols * sizeof *x);
    for (uint32_t m = 0; m < md->M; m++) {
        double slim = 0, atom = 0;
        for (uint32_t j = pk->start[p0 + m]; j < pk->start[p0 + m + 1]; j++) {
            const vl_seg *g = &pk->segs[j];
            double wk = vl__sp_work(s->coef.af, s->coef.bf, g->off, g->off + g->len) / md->tau;
            bool is_slim = false;
            for (size_t i = 0; i < md->nslim && !is_slim; i++)
                is_slim = w->samples[items[i]] == g->sample;
            if (is_slim)
                slim += wk;
            else
                atom += wk;
        }
        atoms[m] = atom;
        run += slim;
        if (m + 1 < md->M)
            x[m] = fmin(run, md->S);
        z = fmax(z, fabs(slim + atom - 1));
    }
    for (size_t a = 0; a < md->natom; a++)
        x[md->x0[a] + (int)(md->greedy[a] - lo_of(md, a))] = 1;
    x[zcol(md)] = z * (1 + 1e-9) + 1e-9;
}

/* Whether z = 0 is within reach without moving an atomic sample: no pack's atomic work
 * (the greedy's placement) exceeds tau, so cutting the slim stream at the running sum
 * of each pack's rest, 1 − atom_m, fills every pack to exactly tau (the rests sum to
 * S).  Then the LP's optimum is integral at the root and the solver ends there. */
static bool zero_reachable(const model *md, const double *atoms)
{
    for (uint32_t m = 0; m < md->M; m++)
        if (atoms[m] > 1 + 1e-12)
            return false;
    return true;
}

/* ---- back to packs ---- */

typedef struct spos {
    size_t item;  /* index into the slim stream */
    uint32_t tok; /* token within it */
} spos;

/* The token position of work c (/ tau) in the slim stream, no earlier than prev. */
static spos to_tokens(const model *md, const sp_work *w, const sp_setting *s,
                      const uint32_t *len, const uint32_t *items, double c, spos prev)
{
    double base = 0;
    size_t i = 0;

    for (; i + 1 < md->nslim; i++) {
        double wi = w->wf[items[i]] / md->tau;
        if (base + wi > c)
            break;
        base += wi;
    }
    uint32_t n = len[w->samples[items[i]]], ms = s->o->min_slice_tokens;
    uint32_t x =
        vl__sp_cut_fwd(s->coef.af, s->coef.bf, 0, n, (c - base) * md->tau, s->o->slice_align);
    x = x < ms ? 0 : n - x < ms ? n : x;
    spos p = {i, x};
    if (p.item < prev.item || (p.item == prev.item && p.tok < prev.tok))
        p = prev;
    return p;
}

static vl_status rebuild(const model *md, const sp_work *w, const sp_setting *s,
                         const uint32_t *len, const uint32_t *items, const double *x,
                         sp_packing *out, vl_err *err)
{
    spos from = {0, 0}, to;
    vl_status st = VL_OK;

    for (uint32_t m = 0; m < md->M && st == VL_OK; m++) {
        if (m + 1 < md->M)
            to = to_tokens(md, w, s, len, items, x[m], from);
        else
            to = (spos){md->nslim - 1, len[w->samples[items[md->nslim - 1]]]};
        for (size_t i = from.item; i <= to.item && i < md->nslim && st == VL_OK; i++) {
            uint32_t sample = w->samples[items[i]], n = len[sample];
            uint32_t a = i == from.item ? from.tok : 0, b = i == to.item ? to.tok : n;
            if (b > a)
                st = vl__sp_packing_add(out, &(vl_seg){sample, a, b - a}, err);
        }
        for (size_t a = 0; a < md->natom && st == VL_OK; a++) {
            uint32_t lo = lo_of(md, a);
            if (m >= lo && m <= hi_of(md, a) && x[md->x0[a] + (int)(m - lo)] > 0.5) {
                uint32_t sample = w->samples[items[md->nslim + a]];
                st = vl__sp_packing_add(out, &(vl_seg){sample, 0, len[sample]}, err);
            }
        }
        if (st == VL_OK && out->nsegs > (out->npacks ? out->start[out->npacks] : 0))
            st = vl__sp_packing_close(out, err);
        from = to;
    }
    return st;
}

/* ---- driver ---- */

/* GLPK on the model from the warm point, stopped by its node cap.  r->outcome
 * VL_MILP_NONE when it found nothing. */
static vl_status run_glpk(const model *md, const sp_work *w, const uint32_t *items,
                          const double *warm, int nodes, double *x, vl_milp_result *r,
                          vl_err *err)
{
    vl_milp *lp = NULL;
    vl_status st = vl_milp_new(&lp, md->ncols, err);

    for (int j = 0; st == VL_OK && j < md->ncols; j++) {
        bool bin = j > zcol(md);
        vl_milp_col(lp, j, 0, bin ? 1 : j == zcol(md) ? INFINITY : md->S, j == zcol(md), bin);
    }
    if (st == VL_OK)
        st = add_rows(lp, md, w, items, err);
    if (st == VL_OK)
        st = vl_milp_solve(lp, warm, nodes, x, r, err);
    vl_milp_free(lp);
    return st;
}

/* The model's solution by GLPK, except where its node cap leaves no room to search
 * (MIN_NODES) and z = 0 is out of reach of the greedy's placement: there the greedy
 * stays (r->outcome VL_MILP_NONE). */
static vl_status find_point(const model *md, sp_work *w, const sp_setting *s,
                            const uint32_t *items, const double *warm, const double *atoms,
                            double *x, vl_milp_result *r, vl_err *err)
{
    int nodes = NODE_WORK / md->ncols;
    vl_status st;

    *r = (vl_milp_result){.outcome = VL_MILP_NONE};
    nodes = nodes < (int)s->o->milp_nodes ? nodes : (int)s->o->milp_nodes;
    if (nodes < MIN_NODES && nodes < (int)s->o->milp_nodes && !zero_reachable(md, atoms)) {
        w->stat_milp_skipped++;
        return VL_OK;
    }
    st = run_glpk(md, w, items, warm, nodes < 1 ? 1 : nodes, x, r, err);
    w->stat_milp_runs += st == VL_OK;
    return st;
}

static vl_status solve(const model *md, sp_work *w, const sp_setting *s, const uint32_t *len,
                       const uint32_t *items, size_t p0, bool *improved, vl_err *err)
{
    sp_packing *pk = &w->rp.fwd, fresh = {0};
    double *x = calloc((size_t)md->ncols, sizeof *x);
    double *warm = calloc((size_t)md->ncols, sizeof *warm);
    double *atoms = calloc(md->M, sizeof *atoms);
    vl_milp_result r;
    vl_status st = x && warm && atoms
                       ? VL_OK
                       : vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for the MILP");

    if (st == VL_OK) {
        warm_point(md, w, s, pk, p0, items, warm, atoms);
        st = find_point(md, w, s, items, warm, atoms, x, &r, err);
    }
    if (st == VL_OK && r.outcome != VL_MILP_NONE)
        st = rebuild(md, w, s, len, items, x, &fresh, err);
    if (st == VL_OK && fresh.npacks > 0 &&
        vl__sp_deviation(&fresh, 0, s, true) < vl__sp_deviation(pk, p0, s, true)) {
        vl__sp_packing_truncate(pk, p0);
        st = vl__sp_packing_append(pk, &fresh, 0, err);
        *improved = st == VL_OK;
    }
    vl__sp_packing_free(&fresh);
    free(x);
    free(warm);
    free(atoms);
    return st;
}

vl_status vl__sp_milp_refine(sp_work *w, const sp_setting *s, const uint32_t *len,
                             const uint32_t *items, size_t n, size_t p0, bool *improved,
                             vl_err *err)
{
    const sp_packing *pk = &w->rp.fwd;
    model md = {.M = (uint32_t)(pk->npacks > p0 ? pk->npacks - p0 : 0)};
    double total = 0, dev;
    vl_status st;

    *improved = false;
    if (md.M < 2 || n == 0)
        return VL_OK;
    dev = vl__sp_deviation(pk, p0, s, true);
    if (s->o->milp == SP_MILP_AUTO && dev <= 0.01)
        return VL_OK;
    for (size_t i = 0; i < n; i++)
        total += w->wf[items[i]];
    md.tau = total / md.M;
    while (md.nslim < n && w->wf[items[md.nslim]] > s->o->slim_threshold * md.tau)
        md.S += w->wf[items[md.nslim++]] / md.tau;
    md.natom = n - md.nslim;
    if (md.nslim == 0 || md.natom * (2 * WINDOW + 1) > MAX_BINARIES)
        return VL_OK; /* nothing to cut, or too large for the node cap to matter */
    md.greedy = malloc((md.natom ? md.natom : 1) * sizeof *md.greedy);
    md.x0 = malloc((md.natom ? md.natom : 1) * sizeof *md.x0);
    if (!md.greedy || !md.x0) {
        free(md.greedy);
        free(md.x0);
        return vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for the MILP");
    }
    st = VL_OK;
    if (find_greedy(w, pk, p0, items, &md)) {
        md.ncols = (int)md.M; /* c_1..c_{M-1}, z */
        for (size_t a = 0; a < md.natom; a++) {
            md.x0[a] = md.ncols;
            md.ncols += (int)(hi_of(&md, a) - lo_of(&md, a) + 1);
        }
        st = solve(&md, w, s, len, items, p0, improved, err);
    }
    free(md.greedy);
    free(md.x0);
    return st;
}
