/* lib/model/sim_sched.c -- execution orders of the simulator: the per-rank list (1F1B,
 * GPipe or the plan's explicit operations, validated here) and each stage's order
 * derived from it by the warm-up rule of sim.h. */
#include "sim_impl.h"

static void emit(vl_sim_scratch *w, uint32_t *k, uint32_t mb, vl_op_kind kind)
{
    w->list[(*k)++] = (vl_op){.mb = mb, .kind = (uint8_t)kind};
}

/* Min-heap of micro-batch indices: among ready backwards the oldest goes first. */
static void heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint32_t heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0], v = h[--(*n)], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = v;
    return top;
}

/* 1F1B on the last stage: after each forward, every ready backward, oldest first.  A
 * backward is ready once its micro-batch is forwarded and the backwards of all later
 * slices of its samples are done (causal dK/dV flow backwards through the slices). */
static void list_1f1b(vl_sim_scratch *w)
{
    uint32_t k = 0, nh = 0;

    for (uint32_t m = 0; m < w->nmb; m++)
        w->pend[m] = w->succ_off[m + 1] - w->succ_off[m];
    for (uint32_t j = 0; j < w->nmb; j++) {
        emit(w, &k, j, VL_OP_F);
        if (w->pend[j] == 0)
            heap_push(w->heap, &nh, j);
        while (nh > 0) {
            uint32_t m = heap_pop(w->heap, &nh);
            emit(w, &k, m, VL_OP_B);
            /* predecessors are earlier micro-batches, hence already forwarded */
            for (uint32_t e = w->pred_off[m]; e < w->pred_off[m + 1]; e++)
                if (--w->pend[w->pred[e]] == 0)
                    heap_push(w->heap, &nh, w->pred[e]);
        }
    }
}

/* GPipe: all forwards, then the backwards last-in first-out, which also keeps the
 * reverse order slices need. */
static void list_gpipe(vl_sim_scratch *w)
{
    uint32_t k = 0;
    for (uint32_t m = 0; m < w->nmb; m++)
        emit(w, &k, m, VL_OP_F);
    for (uint32_t m = w->nmb; m-- > 0;)
        emit(w, &k, m, VL_OP_B);
}

/* The plan's operations: each micro-batch once F, at most once R, once B, in that
 * order.  pend[] is borrowed as a per-micro-batch progress mark (0 none, 1 F, 2 R, 3 B). */
static vl_status list_explicit(vl_sim_scratch *w, vl_err *err)
{
    const vl_op *ops = w->p->ops + w->rk->op0;
    static const char name[] = "FRB";

    for (uint32_t m = 0; m < w->nmb; m++)
        w->pend[m] = 0;
    for (uint32_t i = 0; i < w->rk->nop; i++) {
        uint32_t m = ops[i].mb, kind = ops[i].kind;
        if (kind > VL_OP_B || m >= w->nmb)
            return vl_seterr(err, VL_EDATA,
                             "iteration %zu rank %zu: schedule operation %u: bad %s %u",
                             w->it, w->r, i, kind > VL_OP_B ? "kind" : "micro-batch",
                             kind > VL_OP_B ? kind : m);
        /* F needs mark 0; R needs 1; B needs 1 or 2 */
        if ((kind == VL_OP_F && w->pend[m] != 0) || (kind == VL_OP_R && w->pend[m] != 1) ||
            (kind == VL_OP_B && (w->pend[m] == 0 || w->pend[m] == 3)))
            return vl_seterr(err, VL_EDATA,
                             "iteration %zu rank %zu: schedule operation %u: %c%u out of "
                             "order (each micro-batch needs F, optional R, then B once)",
                             w->it, w->r, i, name[kind], m);
        w->pend[m] = kind + 1;
        w->list[i] = ops[i];
    }
    for (uint32_t m = 0; m < w->nmb; m++)
        if (w->pend[m] != 3)
            return vl_seterr(err, VL_EDATA,
                             "iteration %zu rank %zu: schedule lacks %s of micro-batch %u",
                             w->it, w->r, w->pend[m] == 0 ? "F" : "B", m);
    return VL_OK;
}

/* Move *fx to the next forward of the list at or after *fx, counting in *bseen the
 * backwards passed on the way.  False when there is none. */
static bool next_forward(const vl_op *l, uint32_t n, uint32_t *fx, uint32_t *bseen)
{
    while (*fx < n && l[*fx].kind != VL_OP_F)
        *bseen += l[(*fx)++].kind == VL_OP_B;
    return *fx < n;
}

/* Stage s: forwards hoisted by its warm-up W = pp-1-s.  A forward preceded by b
 * backwards in the list follows only the first max(0, b-W) of them on this stage. */
static void stage_order(vl_sim_scratch *w, uint32_t s)
{
    const vl_op *l = w->list;
    vl_op *o = w->ord + (size_t)s * w->n;
    uint32_t W = w->pp - 1 - s, k = 0, fx = 0, bseen = 0, bdone = 0;

    if (W == 0) {                 /* the last stage runs the list as it is */
        for (uint32_t i = 0; i < w->n; i++)
            o[i] = l[i];
        return;
    }
    while (next_forward(l, w->n, &fx, &bseen) && bseen <= W)
        o[k++] = l[fx++];
    for (uint32_t i = 0; i < w->n; i++) {
        if (l[i].kind == VL_OP_F)
            continue;
        o[k++] = l[i];
        if (l[i].kind != VL_OP_B)
            continue;
        bdone++;
        while (next_forward(l, w->n, &fx, &bseen) && bseen <= bdone + W)
            o[k++] = l[fx++];
    }
}

static vl_status reserve_all(vl_sim_scratch *w, vl_err *err)
{
    size_t nodes = (size_t)w->pp * w->n, npos = (size_t)w->pp * 3 * w->nmb;
    vl_status st;

    if ((st = vl_grow(&w->list, &w->list_cap, w->n, sizeof *w->list, err)) ||
        (st = vl_grow(&w->ord, &w->ord_cap, nodes, sizeof *w->ord, err)) ||
        (st = vl_grow(&w->pos, &w->pos_cap, npos, sizeof *w->pos, err)) ||
        (st = vl_grow(&w->has_r, &w->has_r_cap, w->nmb, 1, err)) ||
        (st = vl_grow(&w->heap, &w->heap_cap, w->nmb, sizeof *w->heap, err)) ||
        (st = vl_grow(&w->pend, &w->pend_cap, w->nmb, sizeof *w->pend, err)))
        return st;
    return VL_OK;
}

vl_status vl__sim_order(vl_sim_scratch *w, const vl_sim_opts *o, vl_err *err)
{
    bool expl = w->expl;
    vl_status st;

    w->n = expl ? w->rk->nop : 2 * w->nmb;
    if ((st = reserve_all(w, err)) != VL_OK)
        return st;
    if (expl && (st = list_explicit(w, err)) != VL_OK)
        return st;
    if (!expl && o->sched == VL_SCHED_GPIPE)
        list_gpipe(w);
    else if (!expl)
        list_1f1b(w);
    for (uint32_t m = 0; m < w->nmb; m++)
        w->has_r[m] = 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (w->list[i].kind == VL_OP_R)
            w->has_r[w->list[i].mb] = 1;
    for (size_t i = 0; i < (size_t)w->pp * 3 * w->nmb; i++)
        w->pos[i] = -1;
    for (uint32_t s = 0; s < w->pp; s++) {
        const vl_op *so = w->ord + (size_t)s * w->n;
        stage_order(w, s);
        for (uint32_t k = 0; k < w->n; k++)
            w->pos[((size_t)s * 3 + so[k].kind) * w->nmb + so[k].mb] = (int32_t)k;
    }
    return VL_OK;
}
