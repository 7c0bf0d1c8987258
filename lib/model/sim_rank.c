/* lib/model/sim_rank.c -- one rank of the iteration being simulated (sim_impl.h): its
 * layer split and stage classes, the dependencies between its packs found from token
 * intervals, and the task weights from the cost model.
 *
 * Dependencies, for the samples sliced on this rank (a segment with an offset above 0,
 * or any sample of a rank with backward packs), from their segments grouped by sample,
 * each sorted by (direction, offset):
 *  - F(f) waits for F of the pack holding the token right before its slice;
 *  - without backward packs, B(f) waits for B of the pack holding the token right after
 *    its slice (causal dK/dV flow from later tokens), besides F(f) and R(f);
 *  - with backward packs, B(b) waits for B of the backward pack holding the token right
 *    after each of its slices, and, for a slice that ends the sample's tokens on this
 *    rank, for F of the forward pack holding that last token (docs/slimpack.md §2.7).
 * Tokens held by another rank or iteration give no edge: their state is already there. */
#include "sim_impl.h"
#include "sort.h"

#include <string.h>

/* ---- layers ---- */

/* Stage s holds L/pp layers, the first L % pp stages one more. */
vl_status vl__sim_layers(vl_sim_scratch *w, uint32_t r, vl_err *err)
{
    vl_sim_rank *R = &w->rk[r];
    int L = w->c->cfg->model.layers, pp = (int)R->pp;

    if (pp > L)
        return vl_seterr(err, VL_EDATA,
                         "iteration %zu rank %u: pp %d exceeds the %d model "
                         "layers",
                         w->it, r, pp, L);
    R->ncls = 0;
    for (int s = 0; s < pp; s++) {
        int last = s == pp - 1, layers = L / pp + (s < L % pp), k;
        for (k = 0; k < R->ncls; k++)
            if (R->cls_layers[k] == layers && R->cls_last[k] == last)
                break;
        if (k == R->ncls) { /* at most: early, late, last (VL_SIM_MAXCLS) */
            R->cls_layers[k] = layers;
            R->cls_last[k] = last;
            R->ncls++;
        }
        w->lcls[R->lane0 + (uint64_t)s] = k;
        w->llayers[R->lane0 + (uint64_t)s] = layers;
    }
    return VL_OK;
}

/* ---- dependencies ---- */

/* The entry of v[0..n) (one sample and direction, sorted by offset) holding token t. */
static const vl_interval *holding(const vl_interval *v, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;

    while (lo < hi) { /* first entry with off > t */
        size_t mid = (lo + hi) / 2;
        if (v[mid].off <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && v[lo - 1].end > t ? &v[lo - 1] : NULL;
}

typedef vl_sim_pending pending;
typedef vl_sim_edges edges;

/* Add an edge; same_list: row and from index one list, where row == from (slices of a
 * sample in one pack) is no edge. */
static vl_status push(pending **a, size_t *n, size_t *cap, uint32_t row, uint32_t from,
                      bool same_list, vl_err *err)
{
    vl_status st;

    if (same_list && row == from)
        return VL_OK;
    if ((st = vl_grow(a, cap, *n + 1, sizeof **a, err)) != VL_OK)
        return st;
    (*a)[(*n)++] = (pending){row, from};
    return VL_OK;
}

/* The edges of one sample: forward entries f[0..nf), B-side entries b[0..nb) (the
 * forward ones again without backward packs), each sorted by offset. */
static vl_status sample_edges(edges *E, const vl_interval *f, size_t nf, const vl_interval *b,
                              size_t nb, bool asym, vl_err *err)
{
    uint32_t last = 0, last_pack = 0;
    vl_status st;

    for (size_t i = 0; i < nf; i++) {
        const vl_interval *q = f[i].off > 0 ? holding(f, nf, (uint64_t)f[i].off - 1) : NULL;
        if (q && (st = push(&E->fp, &E->nfp, &E->cfp, f[i].pack, q->pack, true, err)) != VL_OK)
            return st;
        if (f[i].end >= last) {
            last = f[i].end;
            last_pack = f[i].pack;
        }
    }
    for (size_t j = 0; j < nb; j++) {
        const vl_interval *q = holding(b, nb, b[j].end);
        if (q && (st = push(&E->bb, &E->nbb, &E->cbb, b[j].pack, q->pack, true, err)) != VL_OK)
            return st;
        if (asym && nf > 0 && b[j].end >= last &&
            (st = push(&E->bf, &E->nbf, &E->cbf, b[j].pack, last_pack, false, err)) != VL_OK)
            return st;
    }
    return VL_OK;
}

/* Sort a[0, n) ascending: insertion for the few sources a row usually has. */
static void sort_sources(uint32_t *a, size_t n)
{
    if (n > 32) {
        vl_sort_u32(a, n);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint32_t x = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > x; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/* Pending pairs into CSR rows [row0, row0 + rows] of (off, arr): each row's sources
 * ascending, duplicates dropped.  A counting sort on the row, then each row's few
 * sources sorted in place: the order a sort on (row, from) gives, without qsort, which
 * was a quarter of SlimPack's search (it simulates every candidate). */
static vl_status to_csr(const pending *pe, size_t n, uint32_t rows, uint32_t *off,
                        uint32_t **arr, size_t *cap, size_t *len, vl_err *err)
{
    size_t base = *len, wr = base, start = base;
    vl_status st;

    if ((st = vl_grow(arr, cap, base + n + 1, sizeof **arr, err)) != VL_OK)
        return st;
    for (uint32_t r = 0; r <= rows; r++)
        off[r] = 0;
    for (size_t k = 0; k < n; k++)
        if (pe[k].row < rows)
            off[pe[k].row + 1]++;
    off[0] = (uint32_t)base;
    for (uint32_t r = 0; r < rows; r++)
        off[r + 1] += off[r];
    for (size_t k = 0; k < n; k++) /* off[r] moves from row r's start to its end */
        if (pe[k].row < rows)
            (*arr)[off[pe[k].row]++] = pe[k].from;
    for (uint32_t r = 0; r < rows; r++) {
        size_t end = off[r];
        sort_sources(*arr + start, end - start);
        off[r] = (uint32_t)wr;
        for (size_t i = start; i < end; i++)
            if (wr == off[r] || (*arr)[wr - 1] != (*arr)[i])
                (*arr)[wr++] = (*arr)[i];
        start = end;
    }
    off[rows] = (uint32_t)wr;
    *len = wr;
    return VL_OK;
}

static vl_status find_edges(vl_sim_scratch *w, const vl_sim_rank *R, edges *E, vl_err *err)
{
    /* samples in any order: to_csr sorts each row's sources */
    vl_status st = vl_plan_rank_intervals_grouped(w->p, R->rk, &w->iv, &w->iv_cap, &w->niv,
                                                  &w->ivtab, &w->ivtab_cap, err);

    if (st != VL_OK)
        return st;
    for (size_t i = 0, j; i < w->niv; i = j) {
        size_t nf = 0;
        for (j = i; j < w->niv && w->iv[j].sample == w->iv[i].sample; j++)
            nf += !w->iv[j].bwd;
        st = R->asym ? sample_edges(E, w->iv + i, nf, w->iv + i + nf, j - i - nf, true, err)
                     : sample_edges(E, w->iv + i, nf, w->iv + i, nf, false, err);
        if (st != VL_OK)
            return st;
    }
    return VL_OK;
}

vl_status vl__sim_deps(vl_sim_scratch *w, uint32_t r, vl_err *err)
{
    vl_sim_rank *R = &w->rk[r];
    edges *E = &w->edges;
    vl_status st;

    R->fp0 = w->nfp_rows;
    R->bf0 = R->bb0 = w->nb_rows;
    w->nfp_rows += R->nf + 1;
    w->nb_rows += R->nb + 1;
    if ((st = vl_grow(&w->fp_off, &w->fp_off_cap, w->nfp_rows, sizeof(uint32_t), err)) ||
        (st = vl_grow(&w->bf_off, &w->bf_off_cap, w->nb_rows, sizeof(uint32_t), err)) ||
        (st = vl_grow(&w->bb_off, &w->bb_off_cap, w->nb_rows, sizeof(uint32_t), err)))
        return st;
    if (!R->asym && !vl_plan_rank_sliced(w->p, R->rk)) { /* whole samples: no edges at all */
        for (uint32_t i = 0; i <= R->nf; i++)
            w->fp_off[R->fp0 + i] = (uint32_t)w->nfp;
        for (uint32_t i = 0; i <= R->nb; i++) {
            w->bf_off[R->bf0 + i] = (uint32_t)w->nbf;
            w->bb_off[R->bb0 + i] = (uint32_t)w->nbb;
        }
        return VL_OK;
    }
    E->nfp = E->nbf = E->nbb = 0;
    if ((st = find_edges(w, R, E, err)) == VL_OK &&
        (st = to_csr(E->fp, E->nfp, R->nf, w->fp_off + R->fp0, &w->fp, &w->fp_cap, &w->nfp,
                     err)) == VL_OK &&
        (st = to_csr(E->bf, E->nbf, R->nb, w->bf_off + R->bf0, &w->bf, &w->bf_cap, &w->nbf,
                     err)) == VL_OK)
        st =
            to_csr(E->bb, E->nbb, R->nb, w->bb_off + R->bb0, &w->bb, &w->bb_cap, &w->nbb, err);
    return st;
}

/* ---- weights ---- */

static vl_pack_view view_of(const vl_plan *p, const vl_mb *mb)
{
    uint32_t k;

    vl_plan_mb_members(p, mb, &k);
    return (vl_pack_view){vl_plan_mb_segs(p, mb), p->cps ? p->cps + mb->seg0 : NULL, mb->nseg,
                          k > 1 ? (int)k : 1};
}

/* Activation bytes crossing a stage boundary: tokens/sp × hidden in bf16, split over
 * TP (sequence parallel).  Ranks are laid out tp, sp, dp, then pp, so neighbouring
 * stages are dp·tp·sp GPUs apart (cost.h convention).  The cost model returns 0 with
 * communication off or a fitted curve. */
static double p2p_time(const vl_sim_scratch *w, const vl_sim_rank *R, uint64_t tokens)
{
    const vl_par *par = &R->rk->par;
    double bytes;

    if (R->pp < 2)
        return 0.0;
    bytes = (double)tokens / par->sp * w->c->cfg->model.hidden * 2.0 / par->tp;
    return vl_cost_comm_time(w->c, VL_COMM_P2P, bytes, (int)w->nranks * par->tp * par->sp + 1);
}

static void class_weights(vl_sim_scratch *w, vl_sim_rank *R, const vl_par *par, int k)
{
    const vl_plan *p = w->p;
    const vl_mb *mbs = vl_plan_rank_mbs(p, R->rk);
    int layers = R->cls_layers[k], last = R->cls_last[k];
    double busy = 0;

    bool timed = !w->o->memory_only;

    for (uint32_t f = 0; f < R->nf; f++) {
        uint64_t i = R->wf0 + (uint64_t)k * R->nf + f;
        vl_mb_time t = {0};
        bool r = w->has_r[R->pk0 + f];
        if (p->cps || mbs[f].share) { /* placed or shared: the pack-level model */
            vl_pack_view v = view_of(p, &mbs[f]);
            if (timed)
                t = vl_cost_pack_time(w->c, &v, par, layers, last, w->tmp);
            w->af[i] = vl_cost_pack_act(w->c, &v, par, layers, last);
        } else {
            if (timed)
                t = vl_cost_mb_time(w->c, vl_plan_mb_segs(p, &mbs[f]), mbs[f].nseg, par,
                                    layers, last);
            w->af[i] = vl_cost_act_bytes(w->c, mbs[f].tokens, par, layers, last);
        }
        w->tf[i] = t.fwd;
        w->cf[i] = t.comm_fwd;
        /* an F followed by an R drops its activations but keeps the K/V state store:
         * later slices of its sample attend to it before the R rebuilds the rest */
        w->sf[i] = r ? vl_cost_state_store_bytes(w->c, mbs[f].tokens, par, layers) : 0.0;
        busy += (r ? 2.0 : 1.0) * t.fwd;
        if (!R->asym) {
            /* after an R the activations are whole again: no checkpoint recompute on
             * top of it (ChunkFlow under training.recompute=full recomputes once) */
            uint64_t b = R->wb0 + (uint64_t)k * R->nb + f;
            w->tb[b] = r ? t.bwd - t.recompute : t.bwd;
            w->rc[b] = r ? 0.0 : t.recompute;
            w->cb[b] = t.comm_bwd;
            w->ab[b] = w->af[i] + w->sf[i];
            busy += w->tb[b];
        }
    }
    for (uint32_t j = 0; R->asym && j < R->nb; j++) {
        uint64_t b = R->wb0 + (uint64_t)k * R->nb + j;
        vl_pack_view v = view_of(p, &mbs[R->nf + j]);
        vl_mb_time t = {0};
        if (timed)
            t = vl_cost_pack_time(w->c, &v, par, layers, last, w->tmp);
        w->tb[b] = t.bwd;
        w->rc[b] = t.recompute;
        w->cb[b] = t.comm_bwd;
        w->ab[b] = vl_cost_pack_act(w->c, &v, par, layers, last);
        busy += t.bwd;
    }
    R->cls_busy[k] = busy;
}

vl_status vl__sim_weights(vl_sim_scratch *w, uint32_t r, vl_err *err)
{
    vl_sim_rank *R = &w->rk[r];
    const vl_mb *mbs = vl_plan_rank_mbs(w->p, R->rk);
    vl_par par = R->rk->par;
    uint32_t most = 1;
    vl_status st;

    if (par.tp < 1 || par.sp < 1 || par.ckpt_layers < 0)
        return vl_seterr(err, VL_EDATA,
                         "iteration %zu rank %u: bad degrees tp %d sp %d "
                         "ckpt_layers %d",
                         w->it, r, par.tp, par.sp, par.ckpt_layers);
    par.pp = (int)R->pp;
    for (uint32_t j = 0; j < R->nf + (R->asym ? R->nb : 0); j++)
        most = mbs[j].nseg > most ? mbs[j].nseg : most;
    if ((st = vl_grow(&w->tmp, &w->tmp_cap, most, sizeof *w->tmp, err)) != VL_OK)
        return st;
    for (int k = 0; k < R->ncls; k++)
        class_weights(w, R, &par, k);
    R->weighed = R->rk->par;
    for (uint32_t f = 0; f < R->nf; f++)
        w->p2pf[R->pk0 + f] = w->o->memory_only ? 0.0 : p2p_time(w, R, mbs[f].tokens);
    for (uint32_t b = 0; b < R->nb; b++)
        w->p2pb[R->pk0 + b] =
            w->o->memory_only ? 0.0 : p2p_time(w, R, mbs[(R->asym ? R->nf : 0) + b].tokens);
    return VL_OK;
}
