/* lib/model/sim_dag.c -- the simulator's DAG: task weights from the cost model, slice
 * edges between micro-batches, and the longest path over the per-stage orders.
 * Edges are implicit (looked up through w->pos), so nothing is allocated per task. */
#include "sim_impl.h"

/* ---- weights ---------------------------------------------------------------- */

/* Stage s holds L/pp layers, the first L % pp stages one more. */
static vl_status split_layers(vl_sim_scratch *w, vl_err *err)
{
    int L = w->c->cfg->model.layers, pp = (int)w->pp;
    vl_status st;

    if (pp > L)
        return vl_seterr(err, VL_EDATA, "iteration %zu rank %zu: pp %d exceeds the %d "
                         "model layers", w->it, w->r, pp, L);
    if ((st = vl_grow(&w->layers, &w->layers_cap, w->pp, sizeof(int), err)) ||
        (st = vl_grow(&w->cls, &w->cls_cap, w->pp, sizeof(int), err)))
        return st;
    w->ncls = 0;
    for (int s = 0; s < pp; s++) {
        int last = s == pp - 1, k;
        w->layers[s] = L / pp + (s < L % pp);
        for (k = 0; k < w->ncls; k++)
            if (w->cls_layers[k] == w->layers[s] && w->cls_last[k] == last)
                break;
        if (k == w->ncls) {       /* at most: early, late, last (VL_SIM_MAXCLS) */
            w->cls_layers[k] = w->layers[s];
            w->cls_last[k] = last;
            w->ncls++;
        }
        w->cls[s] = k;
    }
    return VL_OK;
}

static vl_status reserve_weights(vl_sim_scratch *w, vl_err *err)
{
    size_t n = (size_t)w->ncls * w->nmb;
    vl_status st;

    if ((st = vl_grow(&w->tf, &w->tf_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->tb, &w->tb_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->rc, &w->rc_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->cf, &w->cf_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->cb, &w->cb_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->act, &w->act_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->store, &w->store_cap, n, sizeof(double), err)) ||
        (st = vl_grow(&w->p2p, &w->p2p_cap, w->nmb, sizeof(double), err)))
        return st;
    return VL_OK;
}

/* Activation bytes crossing a stage boundary: tokens/sp × hidden in bf16, split over
 * TP (sequence parallel).  Ranks are laid out tp, sp, dp, then pp, so neighbouring
 * stages are dp·tp·sp GPUs apart (cost.h convention).  The cost model returns 0 with
 * communication off or a fitted curve. */
static double p2p_time(const vl_sim_scratch *w, const vl_par *par, uint64_t tokens)
{
    double bytes;

    if (w->pp < 2)
        return 0.0;
    bytes = (double)tokens / par->sp * w->c->cfg->model.hidden * 2.0 / par->tp;
    return vl_cost_comm_time(w->c, VL_COMM_P2P, bytes, w->dp * par->tp * par->sp + 1);
}

static void class_weights(vl_sim_scratch *w, const vl_par *par, int k)
{
    const vl_mb *mbs = w->p->mbs + w->rk->mb0;
    int layers = w->cls_layers[k], last = w->cls_last[k];

    w->cls_busy[k] = 0.0;
    for (uint32_t m = 0; m < w->nmb; m++) {
        size_t i = (size_t)k * w->nmb + m;
        vl_mb_time t = vl_cost_mb_time(w->c, vl_plan_mb_segs(w->p, &mbs[m]), mbs[m].nseg,
                                       par, layers, last);
        w->tf[i] = t.fwd;
        w->tb[i] = t.bwd;
        w->rc[i] = t.recompute;
        w->cf[i] = t.comm_fwd;
        w->cb[i] = t.comm_bwd;
        w->act[i] = vl_cost_act_bytes(w->c, mbs[m].tokens, par, layers, last);
        /* an F followed by an R drops its activations but keeps the K/V state store:
         * later slices of its sample attend to it before the R rebuilds the rest */
        w->store[i] = w->has_r[m] ? vl_cost_state_store_bytes(w->c, mbs[m].tokens, par, layers)
                                  : 0.0;
        w->cls_busy[k] += (w->has_r[m] ? 2.0 : 1.0) * t.fwd + t.bwd;
    }
}

vl_status vl__sim_weights(vl_sim_scratch *w, vl_err *err)
{
    const vl_mb *mbs = w->p->mbs + w->rk->mb0;
    vl_par par = w->rk->par;
    vl_status st;

    if (par.tp < 1 || par.sp < 1 || par.ckpt_layers < 0)
        return vl_seterr(err, VL_EDATA, "iteration %zu rank %zu: bad degrees tp %d sp %d "
                         "ckpt_layers %d", w->it, w->r, par.tp, par.sp, par.ckpt_layers);
    par.pp = (int)w->pp;
    if ((st = split_layers(w, err)) != VL_OK || (st = reserve_weights(w, err)) != VL_OK)
        return st;
    for (int k = 0; k < w->ncls; k++)
        class_weights(w, &par, k);
    for (uint32_t m = 0; m < w->nmb; m++)
        w->p2p[m] = p2p_time(w, &par, mbs[m].tokens);
    return VL_OK;
}

double vl__sim_dur(const vl_sim_scratch *w, uint32_t s, vl_op op)
{
    size_t i = (size_t)w->cls[s] * w->nmb + op.mb;
    return op.kind == VL_OP_B ? w->tb[i] : w->tf[i];
}

/* ---- slice edges ------------------------------------------------------------ */

static uint64_t hkey(uint32_t sample, uint64_t end)
{
    return ((uint64_t)sample << 32 | end) + 1;   /* 0 marks an empty slot */
}

static size_t hslot(uint64_t key, size_t mask)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

/* An empty table (sample, end of slice) -> micro-batch, room for nseg keys at half load. */
static vl_status reset_hash(vl_sim_scratch *w, size_t nseg, size_t *mask, vl_err *err)
{
    size_t cap = 16;
    vl_status st;

    while (cap < 2 * nseg)
        cap *= 2;
    if ((st = vl_grow(&w->hkey, &w->hkey_cap, cap, sizeof(uint64_t), err)) ||
        (st = vl_grow(&w->hval, &w->hval_cap, cap, sizeof(uint32_t), err)))
        return st;
    for (size_t i = 0; i < cap; i++)
        w->hkey[i] = 0;
    *mask = cap - 1;
    return VL_OK;
}

static int64_t hfind(const vl_sim_scratch *w, size_t mask, uint32_t sample, uint64_t end)
{
    uint64_t key = hkey(sample, end);
    for (size_t h = hslot(key, mask); w->hkey[h] != 0; h = (h + 1) & mask)
        if (w->hkey[h] == key)
            return w->hval[h];
    return -1;
}

/* Record m as the latest micro-batch holding the slice (sample, end). */
static void hput(vl_sim_scratch *w, size_t mask, uint32_t sample, uint64_t end, uint32_t m)
{
    uint64_t key = hkey(sample, end);
    size_t h = hslot(key, mask);

    while (w->hkey[h] != 0 && w->hkey[h] != key)
        h = (h + 1) & mask;
    w->hkey[h] = key;
    w->hval[h] = m;
}

/* pred[] of m: the latest earlier micro-batch holding the slice right before each of
 * m's, found before m's own slices enter the table.  With resolved ids a slice sits in
 * one micro-batch only; with every id 0 (a plan read without its manifest) "latest"
 * still finds ChunkFlow's layout, a sample's slices in consecutive micro-batches. */
static vl_status link_preds(vl_sim_scratch *w, size_t mask, vl_err *err)
{
    const vl_mb *mbs = w->p->mbs + w->rk->mb0;
    uint32_t np = 0;
    vl_status st;

    for (uint32_t m = 0; m < w->nmb; m++) {
        const vl_seg *sg = vl_plan_mb_segs(w->p, &mbs[m]);
        w->pred_off[m] = np;
        for (uint32_t j = 0; j < mbs[m].nseg; j++) {
            int64_t q = sg[j].off > 0 ? hfind(w, mask, sg[j].sample, sg[j].off) : -1;
            bool dup = false;
            if (q < 0)
                continue;         /* state from another rank or iteration: no edge */
            for (uint32_t e = w->pred_off[m]; e < np && !dup; e++)
                dup = w->pred[e] == (uint32_t)q;
            if (dup)
                continue;
            if ((st = vl_grow(&w->pred, &w->pred_cap, np + 1, sizeof(uint32_t),
                                      err)) != VL_OK)
                return st;
            w->pred[np++] = (uint32_t)q;
        }
        for (uint32_t j = 0; j < mbs[m].nseg; j++)
            hput(w, mask, sg[j].sample, (uint64_t)sg[j].off + sg[j].len, m);
    }
    w->pred_off[w->nmb] = np;
    w->nslice = np;
    return VL_OK;
}

/* succ[] is pred[] transposed (counting sort by predecessor). */
static vl_status link_succs(vl_sim_scratch *w, vl_err *err)
{
    vl_status st = vl_grow(&w->succ, &w->succ_cap, w->nslice, sizeof(uint32_t), err);

    if (st != VL_OK)
        return st;
    for (uint32_t m = 0; m <= w->nmb; m++)
        w->succ_off[m] = 0;
    for (uint32_t e = 0; e < w->nslice; e++)
        w->succ_off[w->pred[e] + 1]++;
    for (uint32_t m = 0; m < w->nmb; m++)
        w->succ_off[m + 1] += w->succ_off[m];
    for (uint32_t m = 0; m < w->nmb; m++)
        for (uint32_t e = w->pred_off[m]; e < w->pred_off[m + 1]; e++)
            w->succ[w->succ_off[w->pred[e]]++] = m;
    for (uint32_t m = w->nmb; m > 0; m--)    /* undo the fill's shift */
        w->succ_off[m] = w->succ_off[m - 1];
    w->succ_off[0] = 0;
    return VL_OK;
}

vl_status vl__sim_slices(vl_sim_scratch *w, vl_err *err)
{
    const vl_mb *mbs = w->p->mbs + w->rk->mb0;
    size_t nseg = 0, mask = 0;
    bool sliced = false, guessed = w->p->m == NULL;
    vl_status st;

    if ((st = vl_grow(&w->pred_off, &w->pred_off_cap, w->nmb + 1, sizeof(uint32_t),
                              err)) ||
        (st = vl_grow(&w->succ_off, &w->succ_off_cap, w->nmb + 1, sizeof(uint32_t),
                              err)))
        return st;
    for (uint32_t m = 0; m < w->nmb; m++) {
        const vl_seg *sg = vl_plan_mb_segs(w->p, &mbs[m]);
        nseg += mbs[m].nseg;
        for (uint32_t j = 0; j < mbs[m].nseg; j++) {
            sliced = sliced || sg[j].off > 0;
            guessed = guessed || sg[j].sample == VL_SAMPLE_UNKNOWN;
        }
    }
    w->nslice = 0;
    for (uint32_t m = 0; m <= w->nmb; m++)
        w->pred_off[m] = w->succ_off[m] = 0;
    /* the common case, no slices: no hashing at all.  Unresolved ids only guess which
     * micro-batches continue which; an explicit order is the better authority, and it
     * runs each stage in list order, so slices keep the order it gives them anyway. */
    if (!sliced || (guessed && w->expl))
        return VL_OK;
    if ((st = reset_hash(w, nseg, &mask, err)) != VL_OK ||
        (st = link_preds(w, mask, err)) != VL_OK)
        return st;
    return link_succs(w, err);
}

/* ---- longest path ----------------------------------------------------------- */

/* Operation (s, kind, m) finished?  Absent operations (no R) count as finished.  On
 * success *t is raised to its end plus lag. */
static bool dep(const vl_sim_scratch *w, uint32_t s, int kind, uint32_t m, double lag,
                double *t)
{
    int32_t k = w->pos[((size_t)s * 3 + (size_t)kind) * w->nmb + m];
    double e;

    if (k < 0)
        return true;
    if ((uint32_t)k >= w->ptr[s])
        return false;
    e = w->end[(size_t)s * w->n + (size_t)k] + lag;
    if (e > *t)
        *t = e;
    return true;
}

static bool ready(const vl_sim_scratch *w, uint32_t s, vl_op op, double *t)
{
    uint32_t m = op.mb;

    switch (op.kind) {
    case VL_OP_F:
        if (s > 0 && !dep(w, s - 1, VL_OP_F, m, w->p2p[m], t))
            return false;
        for (uint32_t e = w->pred_off[m]; e < w->pred_off[m + 1]; e++)
            if (!dep(w, s, VL_OP_F, w->pred[e], 0.0, t))
                return false;
        return true;
    case VL_OP_R:
        return dep(w, s, VL_OP_F, m, 0.0, t);
    default:
        if (!dep(w, s, VL_OP_F, m, 0.0, t) || !dep(w, s, VL_OP_R, m, 0.0, t))
            return false;
        if (s + 1 < w->pp && !dep(w, s + 1, VL_OP_B, m, w->p2p[m], t))
            return false;
        for (uint32_t e = w->succ_off[m]; e < w->succ_off[m + 1]; e++)
            if (!dep(w, s, VL_OP_B, w->succ[e], 0.0, t))
                return false;
        return true;
    }
}

/* Run stage s as far as its dependencies allow; true if it advanced. */
static bool advance(vl_sim_scratch *w, uint32_t s)
{
    const vl_op *o = w->ord + (size_t)s * w->n;
    bool moved = false;

    while (w->ptr[s] < w->n) {
        size_t node = (size_t)s * w->n + w->ptr[s];
        vl_op op = o[w->ptr[s]];
        double t = w->avail[s];
        if (!ready(w, s, op, &t))
            break;
        w->start[node] = t;
        w->end[node] = w->avail[s] = t + vl__sim_dur(w, s, op);
        w->ptr[s]++;
        moved = true;
    }
    return moved;
}

static void push(vl_sim_scratch *w, uint32_t *top, uint32_t s)
{
    if (!w->inq[s]) {
        w->inq[s] = 1;
        w->stack[(*top)++] = s;
    }
}

static vl_status deadlock(const vl_sim_scratch *w, vl_err *err)
{
    static const char name[] = "FRB";

    for (uint32_t s = 0; s < w->pp; s++)
        if (w->ptr[s] < w->n) {
            vl_op op = w->ord[(size_t)s * w->n + w->ptr[s]];
            return vl_seterr(err, VL_EDATA, "iteration %zu rank %zu: schedule deadlocks: "
                             "stage %u cannot run %c%u (its order contradicts the "
                             "pipeline or slice dependencies)", w->it, w->r, s,
                             name[op.kind], op.mb);
        }
    return VL_OK;
}

/* ASAP times in a topological order: each stage runs its order while the
 * dependencies are met; a stage that advanced may unblock its two neighbours only, so
 * every task is started once and every edge examined a bounded number of times. */
vl_status vl__sim_eval(vl_sim_scratch *w, vl_err *err)
{
    size_t nodes = (size_t)w->pp * w->n;
    uint32_t top = 0;
    vl_status st;

    if ((st = vl_grow(&w->start, &w->start_cap, nodes, sizeof(double), err)) ||
        (st = vl_grow(&w->end, &w->end_cap, nodes, sizeof(double), err)) ||
        (st = vl_grow(&w->ptr, &w->ptr_cap, w->pp, sizeof(uint32_t), err)) ||
        (st = vl_grow(&w->avail, &w->avail_cap, w->pp, sizeof(double), err)) ||
        (st = vl_grow(&w->stack, &w->stack_cap, w->pp, sizeof(uint32_t), err)) ||
        (st = vl_grow(&w->inq, &w->inq_cap, w->pp, 1, err)))
        return st;
    for (uint32_t s = 0; s < w->pp; s++) {
        w->ptr[s] = 0;
        w->avail[s] = 0.0;
        w->inq[s] = 0;
    }
    for (uint32_t s = w->pp; s-- > 0;)
        push(w, &top, s);
    while (top > 0) {
        uint32_t s = w->stack[--top];
        w->inq[s] = 0;
        if (!advance(w, s))
            continue;
        if (s > 0)
            push(w, &top, s - 1);
        if (s + 1 < w->pp)
            push(w, &top, s + 1);
    }
    return deadlock(w, err);
}
