/* lib/model/sim_sched.c -- execution orders of the simulator: the per-rank list (1F1B,
 * GPipe or the plan's explicit operations, validated here) and each stage's order
 * derived from it by the warm-up rule of sim.h.
 *
 * 1F1B and GPipe are readiness-driven over the dependencies of sim_rank.c: a B pack is
 * ready once every forward it needs has run (its own pack without backward packs; the
 * forward holding the last tokens of its samples with them) and the B packs holding the
 * later tokens of its samples are done.  1F1B runs, after each forward, every ready B
 * oldest first (SlimPack's readiness-driven last stage; plain F0 B0 F1 B1 ... without
 * slices); GPipe runs every forward, then the ready B packs youngest first. */
#include "sim_impl.h"

static void emit(vl_op *list, uint32_t *k, uint32_t pack, vl_op_kind kind)
{
    list[(*k)++] = (vl_op){.mb = pack, .kind = (uint8_t)kind};
}

/* Min-heap of keys. */
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

/* ---- readiness ---- */

typedef struct ready_q {
    vl_sim_scratch *w;
    const vl_sim_rank *R;
    uint32_t nh;
    bool youngest; /* GPipe: largest pack first */
    bool edges;    /* the rank has dependencies between its packs */
} ready_q;

static void make_ready(ready_q *q, uint32_t b)
{
    heap_push(q->w->heap, &q->nh, q->youngest ? UINT32_MAX - b : b);
}

/* Pack b's dependencies are one fewer. */
static void release(ready_q *q, uint32_t b)
{
    if (--q->w->pend[b] == 0)
        make_ready(q, b);
}

/* Transpose rows [0, nb) of a B<-X relation (off/adj at row0) into rev_off/rev over
 * nx sources: rev[rev_off[x] .. rev_off[x+1]) are the B packs waiting for x. */
static vl_status transpose(vl_sim_scratch *w, const uint32_t *off, const uint32_t *adj,
                           uint32_t nb, uint32_t nx, uint32_t **rev_off, size_t *roc,
                           uint32_t **rev, size_t *rc, vl_err *err)
{
    uint32_t ne = off[nb] - off[0];
    vl_status st;

    (void)w;
    if ((st = vl_grow(rev_off, roc, (size_t)nx + 2, sizeof **rev_off, err)) != VL_OK ||
        (st = vl_grow(rev, rc, (size_t)ne + 1, sizeof **rev, err)) != VL_OK)
        return st;
    for (uint32_t x = 0; x <= nx + 1; x++)
        (*rev_off)[x] = 0;
    for (uint32_t e = off[0]; e < off[nb]; e++)
        (*rev_off)[adj[e] + 2]++;
    for (uint32_t x = 0; x < nx; x++)
        (*rev_off)[x + 2] += (*rev_off)[x + 1];
    for (uint32_t b = 0; b < nb; b++)
        for (uint32_t e = off[b]; e < off[b + 1]; e++)
            (*rev)[(*rev_off)[adj[e] + 1]++] = b;
    return VL_OK;
}

/* The forward of pack f ran: B packs waiting for it may become ready. */
static void forwarded(ready_q *q, uint32_t f)
{
    const vl_sim_scratch *w = q->w;

    if (!q->R->asym) {
        release(q, f);
        return;
    }
    if (!q->edges)
        return;
    for (uint32_t e = w->rbf_off[f]; e < w->rbf_off[f + 1]; e++)
        release(q, w->rbf[e]);
}

/* The backward of pack b ran: B packs holding earlier tokens of its samples. */
static void backwarded(ready_q *q, uint32_t b)
{
    const vl_sim_scratch *w = q->w;

    if (!q->edges)
        return;
    for (uint32_t e = w->rbb_off[b]; e < w->rbb_off[b + 1]; e++)
        release(q, w->rbb[e]);
}

static uint32_t next_b(ready_q *q)
{
    uint32_t v = heap_pop(q->w->heap, &q->nh);
    return q->youngest ? UINT32_MAX - v : v;
}

/* Every B run, or VL_EDATA naming one that never became ready (a dependency cycle). */
static vl_status drained(const vl_sim_scratch *w, uint32_t r, uint32_t k, vl_err *err)
{
    const vl_sim_rank *R = &w->rk[r];

    if (k == R->n)
        return VL_OK;
    for (uint32_t b = 0; b < R->nb; b++)
        if (w->pend[b] > 0)
            return vl_seterr(err, VL_EDATA,
                             "iteration %zu rank %u: the backward of pack %u "
                             "waits on itself (its samples' slices are out of order)",
                             w->it, r, b);
    return vl_seterr(err, VL_EDATA, "iteration %zu rank %u: incomplete schedule", w->it, r);
}

static vl_status list_ready(vl_sim_scratch *w, uint32_t r, bool gpipe, vl_err *err)
{
    const vl_sim_rank *R = &w->rk[r];
    vl_op *list = w->list + R->list0;
    ready_q q = {.w = w, .R = R, .youngest = gpipe};
    uint32_t k = 0;
    vl_status st;

    q.edges = w->bf_off[R->bf0 + R->nb] > w->bf_off[R->bf0] ||
              w->bb_off[R->bb0 + R->nb] > w->bb_off[R->bb0];
    if (q.edges && ((st = transpose(w, w->bf_off + R->bf0, w->bf, R->nb, R->nf, &w->rbf_off,
                                    &w->rbf_off_cap, &w->rbf, &w->rbf_cap, err)) != VL_OK ||
                    (st = transpose(w, w->bb_off + R->bb0, w->bb, R->nb, R->nb, &w->rbb_off,
                                    &w->rbb_off_cap, &w->rbb, &w->rbb_cap, err)) != VL_OK))
        return st;

    for (uint32_t b = 0; b < R->nb; b++) {
        w->pend[b] = (R->asym ? 0 : 1) + (w->bb_off[R->bb0 + b + 1] - w->bb_off[R->bb0 + b]) +
                     (w->bf_off[R->bf0 + b + 1] - w->bf_off[R->bf0 + b]);
        if (w->pend[b] == 0)
            make_ready(&q, b);
    }
    for (uint32_t f = 0; f < R->nf; f++) {
        emit(list, &k, f, VL_OP_F);
        forwarded(&q, f);
        while (!gpipe && q.nh > 0) {
            uint32_t b = next_b(&q);
            emit(list, &k, b, VL_OP_B);
            backwarded(&q, b);
        }
    }
    while (q.nh > 0) {
        uint32_t b = next_b(&q);
        emit(list, &k, b, VL_OP_B);
        backwarded(&q, b);
    }
    return drained(w, r, k, err);
}

/* ---- the plan's own list ---- */

/* Each forward pack once F, at most once R (never with backward packs), every B pack
 * once B; F < R < B for one pack without backward packs.  pend[] marks progress. */
static vl_status list_explicit(vl_sim_scratch *w, uint32_t r, vl_err *err)
{
    const vl_sim_rank *R = &w->rk[r];
    const vl_op *ops = w->p->ops + R->rk->op0;
    static const char name[] = "FRB";
    uint32_t *fmark = w->pend, *bmark = w->heap; /* 0 none, 1 F, 2 R, 3 B */

    for (uint32_t m = 0; m < R->npk; m++)
        fmark[m] = bmark[m] = 0;
    for (uint32_t i = 0; i < R->n; i++) {
        uint32_t m = ops[i].mb, kind = ops[i].kind;
        uint32_t lim = kind == VL_OP_B ? R->nb : R->nf;
        bool ok = kind <= VL_OP_B && m < lim;
        if (ok && kind == VL_OP_F)
            ok = fmark[m] == 0;
        else if (ok && kind == VL_OP_R)
            ok = !R->asym && fmark[m] == 1;
        else if (ok)
            ok = bmark[m] == 0 && (R->asym || fmark[m] >= 1);
        if (!ok)
            return vl_seterr(err, VL_EDATA,
                             "iteration %zu rank %u: schedule operation %u "
                             "(%c %u) is out of order or names no pack of the rank (each "
                             "forward pack needs F, an optional R, each B pack one B)",
                             w->it, r, i, name[kind % 3], m);
        if (kind == VL_OP_B)
            bmark[m] = 3;
        else
            fmark[m] = kind + 1;
        w->list[R->list0 + i] = ops[i];
    }
    for (uint32_t m = 0; m < R->npk; m++)
        if ((m < R->nf && fmark[m] == 0) || (m < R->nb && bmark[m] == 0))
            return vl_seterr(err, VL_EDATA,
                             "iteration %zu rank %u: the schedule lacks %s of "
                             "pack %u",
                             w->it, r, m < R->nf && fmark[m] == 0 ? "F" : "B", m);
    return VL_OK;
}

/* ---- stage orders ---- */

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
static void stage_order(const vl_op *l, uint32_t n, uint32_t W, vl_op *o)
{
    uint32_t k = 0, fx = 0, bseen = 0, bdone = 0;

    if (W == 0) { /* the last stage runs the list as it is */
        for (uint32_t i = 0; i < n; i++)
            o[i] = l[i];
        return;
    }
    while (next_forward(l, n, &fx, &bseen) && bseen <= W)
        o[k++] = l[fx++];
    for (uint32_t i = 0; i < n; i++) {
        if (l[i].kind == VL_OP_F)
            continue;
        o[k++] = l[i];
        if (l[i].kind != VL_OP_B)
            continue;
        bdone++;
        while (next_forward(l, n, &fx, &bseen) && bseen <= bdone + W)
            o[k++] = l[fx++];
    }
}

vl_status vl__sim_order(vl_sim_scratch *w, uint32_t r, vl_err *err)
{
    const vl_sim_rank *R = &w->rk[r];
    bool expl = R->rk->nop > 0 && !w->o->ignore_ops;
    const vl_op *l = w->list + R->list0;
    vl_status st;

    if ((st = vl_grow(&w->heap, &w->heap_cap, R->npk + 1, sizeof *w->heap, err)) ||
        (st = vl_grow(&w->pend, &w->pend_cap, R->npk + 1, sizeof *w->pend, err)))
        return st;
    if (expl)
        st = list_explicit(w, r, err);
    else
        st = list_ready(w, r, w->o->sched == VL_SCHED_GPIPE, err);
    if (st != VL_OK)
        return st;
    for (uint32_t f = 0; f < R->nf; f++)
        w->has_r[R->pk0 + f] = 0;
    for (uint32_t i = 0; i < R->n; i++)
        if (l[i].kind == VL_OP_R)
            w->has_r[R->pk0 + l[i].mb] = 1;
    for (uint64_t i = 0; i < (uint64_t)R->pp * 3 * R->npk; i++)
        w->pos[R->pos0 + i] = -1;
    for (uint32_t s = 0; s < R->pp; s++) {
        vl_op *so = w->ord + R->node0 + (uint64_t)s * R->n;
        stage_order(l, R->n, R->pp - 1 - s, so);
        for (uint32_t k = 0; k < R->n; k++)
            *vl__sim_pos(w, R, s, so[k].kind, so[k].mb) = (int32_t)k;
    }
    return VL_OK;
}
