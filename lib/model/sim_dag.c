/* lib/model/sim_dag.c -- the longest path over every lane of an iteration (sim_impl.h).
 * Edges are implicit, looked up through the positions of each rank's stage orders:
 * pipeline edges between neighbouring stages (with the send/receive time as their
 * length), the dependencies of sim_rank.c, and each lane's own order.  Two couplings
 * across ranks: the copies of a shared pack start together on all member lanes (the
 * latest of their ready times), and with training.dp_sync = micro_step every rank's
 * first stage waits, after its k-th backward, for every rank's k-th backward plus the
 * exposed gradient synchronisation of that micro-step (what that backward does not hide:
 * vl_cost_dp_grad_exposed). */
#include "sim_impl.h"

#include <string.h>

/* ---- shared packs ---- */

static uint64_t key(uint32_t r, int kind, uint32_t pack)
{
    return (uint64_t)r << 34 | (uint64_t)kind << 32 | pack;
}

static const vl_mb *pack_of(const vl_sim_scratch *w, uint32_t r, bool bwd, uint32_t j)
{
    const vl_sim_rank *R = &w->rk[r];
    return &w->p->mbs[R->rk->mb0 + (bwd && R->asym ? R->nf : 0) + j];
}

static bool same_list(const vl_plan *p, const vl_mb *a, const vl_mb *b)
{
    uint32_t na, nb;
    const int32_t *ma = vl_plan_mb_members(p, a, &na), *mb = vl_plan_mb_members(p, b, &nb);

    return na == nb && na > 0 && memcmp(ma, mb, na * sizeof *ma) == 0;
}

/* Ordinal of pack j among the rank's packs (of that side) with the same member list. */
static uint32_t ordinal(const vl_sim_scratch *w, uint32_t r, bool bwd, uint32_t j)
{
    const vl_mb *mb = pack_of(w, r, bwd, j);
    uint32_t k = 0;

    for (uint32_t i = 0; i < j; i++)
        k += same_list(w->p, pack_of(w, r, bwd, i), mb);
    return k;
}

/* The copy on member rank m of rank r's shared pack j, or -1. */
static int64_t copy_on(const vl_sim_scratch *w, uint32_t r, bool bwd, uint32_t j, uint32_t m)
{
    const vl_mb *mb = pack_of(w, r, bwd, j);
    uint32_t want = ordinal(w, r, bwd, j), n = bwd ? w->rk[m].nb : w->rk[m].nf;

    for (uint32_t i = 0; i < n; i++)
        if (same_list(w->p, pack_of(w, m, bwd, i), mb) && want-- == 0)
            return i;
    return -1;
}

static uint32_t rank_index(const vl_sim_scratch *w, int32_t dp)
{
    for (uint32_t r = 0; r < w->nranks; r++)
        if (w->rk[r].rk->dp == dp)
            return r;
    return UINT32_MAX;
}

/* One instance from the primary copy (rank r, pack j): every member's copy, or none
 * when a member or its copy is missing (verify reports that plan). */
static vl_status instance(vl_sim_scratch *w, uint32_t r, bool bwd, uint32_t j, vl_err *err)
{
    uint32_t n, kind = bwd ? VL_OP_B : VL_OP_F;
    const int32_t *mem = vl_plan_mb_members(w->p, pack_of(w, r, bwd, j), &n);
    size_t at = w->inst_off[w->ninst];
    vl_status st;

    if ((st = vl_grow(&w->inst, &w->inst_cap, at + n, sizeof *w->inst, err)) != VL_OK ||
        (st = vl_grow(&w->inst_off, &w->inst_off_cap, w->ninst + 2, sizeof *w->inst_off,
                      err)) != VL_OK)
        return st;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t m = rank_index(w, mem[i]);
        int64_t c = m == UINT32_MAX ? -1 : m == r ? (int64_t)j : copy_on(w, r, bwd, j, m);
        if (c < 0 || w->rk[m].pp != w->rk[r].pp)
            return VL_OK; /* not simulated as shared */
        w->inst[at + i] = key(m, (int)kind, (uint32_t)c);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = w->inst[at + i];
        uint32_t m = (uint32_t)(k >> 34), c = (uint32_t)k;
        (bwd ? w->shareb : w->sharef)[w->rk[m].pk0 + c] = (int32_t)w->ninst;
    }
    w->inst_off[++w->ninst] = (uint32_t)(at + n);
    return VL_OK;
}

vl_status vl__sim_shares(vl_sim_scratch *w, vl_err *err)
{
    vl_status st = vl_grow(&w->inst_off, &w->inst_off_cap, 1, sizeof *w->inst_off, err);

    w->ninst = 0;
    if (st != VL_OK)
        return st;
    w->inst_off[0] = 0;
    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        for (uint32_t f = 0; f < R->nf; f++)
            w->sharef[R->pk0 + f] = -1;
        for (uint32_t b = 0; b < R->nb; b++)
            w->shareb[R->pk0 + b] = -1;
    }
    if (w->p->nshares == 0)
        return VL_OK;
    for (uint32_t r = 0; r < w->nranks && st == VL_OK; r++) {
        const vl_sim_rank *R = &w->rk[r];
        for (uint32_t side = 0; side < 2 && st == VL_OK; side++)
            for (uint32_t j = 0; j < (side ? R->nb : R->nf) && st == VL_OK; j++) {
                const vl_mb *mb = pack_of(w, r, side, j);
                if (mb->share && vl_plan_mb_primary(w->p, R->rk, mb))
                    st = instance(w, r, side, j, err);
            }
    }
    return st;
}

/* ---- durations ---- */

void vl__sim_durations(vl_sim_scratch *w)
{
    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        for (uint32_t s = 0; s < R->pp; s++) {
            uint64_t n0 = R->node0 + (uint64_t)s * R->n, k = (uint64_t)w->lcls[R->lane0 + s];
            const double *tf = w->tf + R->wf0 + k * R->nf, *tb = w->tb + R->wb0 + k * R->nb;
            for (uint32_t i = 0; i < R->n; i++) {
                vl_op op = w->ord[n0 + i];
                w->dur[n0 + i] = op.kind == VL_OP_B ? tb[op.mb] : tf[op.mb];
            }
        }
    }
}

/* ---- longest path ---- */

/* One rank's slices of the arrays the dependency checks read, held in registers across
 * the hot loop instead of being re-derived from the rank record at every look-up. */
typedef struct rview {
    const vl_sim_rank *R;
    const int32_t *pos;  /* [(s·3 + kind)·npk + pack] */
    const double *end;   /* [s·n + k] */
    const uint32_t *ptr; /* [s] */
    const double *p2pf, *p2pb;
    const uint8_t *has_r;
    uint32_t npk, n, pp;
} rview;

/* base + off, or NULL for an array never allocated (an iteration with no packs):
 * NULL + 0 is undefined behaviour in C. */
#define AT(base, off) ((base) ? (base) + (off) : NULL)

static rview view(const vl_sim_scratch *w, const vl_sim_rank *R)
{
    return (rview){R,
                   AT(w->pos, R->pos0),
                   AT(w->end, R->node0),
                   AT(w->ptr, R->lane0),
                   AT(w->p2pf, R->pk0),
                   AT(w->p2pb, R->pk0),
                   AT(w->has_r, R->pk0),
                   R->npk,
                   R->n,
                   R->pp};
}

/* Operation (s, kind, pack) finished?  Absent operations count as finished.  On success
 * *t is raised to its end plus lag. */
static inline bool dep(const rview *v, uint32_t s, int kind, uint32_t pack, double lag,
                       double *t)
{
    int32_t k = v->pos[((uint64_t)s * 3 + (uint64_t)kind) * v->npk + pack];
    double e;

    if (k < 0)
        return true;
    if ((uint32_t)k >= v->ptr[s])
        return false;
    e = v->end[(uint64_t)s * v->n + (uint64_t)k] + lag;
    if (e > *t)
        *t = e;
    return true;
}

static inline bool deps_b(const vl_sim_scratch *w, const rview *v, uint32_t s, uint32_t b,
                          double *t)
{
    const vl_sim_rank *R = v->R;

    if (!R->asym &&
        (!dep(v, s, VL_OP_F, b, 0.0, t) || (v->has_r[b] && !dep(v, s, VL_OP_R, b, 0.0, t))))
        return false;
    if (s + 1 < v->pp && !dep(v, s + 1, VL_OP_B, b, v->p2pb[b], t))
        return false;
    for (uint32_t e = w->bf_off[R->bf0 + b]; e < w->bf_off[R->bf0 + b + 1]; e++)
        if (!dep(v, s, VL_OP_F, w->bf[e], 0.0, t))
            return false;
    for (uint32_t e = w->bb_off[R->bb0 + b]; e < w->bb_off[R->bb0 + b + 1]; e++)
        if (!dep(v, s, VL_OP_B, w->bb[e], 0.0, t))
            return false;
    return true;
}

/* The micro-step barrier before lane l's next operation (first stages only). */
static bool barrier(const vl_sim_scratch *w, uint64_t l, uint32_t s, double *t)
{
    uint32_t k = w->bdone[l];

    if (s != 0 || k == 0 || k > w->nbar)
        return true;
    if (w->bar_left[k - 1] > 0)
        return false;
    if (w->bar_time[k - 1] > *t)
        *t = w->bar_time[k - 1];
    return true;
}

/* The next operation op of lane l (stage s of the rank of v) can start: *t raised to
 * when. */
static inline bool ready(const vl_sim_scratch *w, const rview *v, uint32_t s, uint64_t l,
                         vl_op op, double *t)
{
    const vl_sim_rank *R = v->R;
    uint32_t m = op.mb;

    if (w->nbar > 0 && !barrier(w, l, s, t))
        return false;
    switch (op.kind) {
    case VL_OP_F:
        if (s > 0 && !dep(v, s - 1, VL_OP_F, m, v->p2pf[m], t))
            return false;
        for (uint32_t e = w->fp_off[R->fp0 + m]; e < w->fp_off[R->fp0 + m + 1]; e++)
            if (!dep(v, s, VL_OP_F, w->fp[e], 0.0, t))
                return false;
        return true;
    case VL_OP_R: return dep(v, s, VL_OP_F, m, 0.0, t);
    default: return deps_b(w, v, s, m, t);
    }
}

static void push(vl_sim_scratch *w, uint64_t *top, uint64_t l)
{
    if (!w->inq[l]) {
        w->inq[l] = 1;
        w->stack[(*top)++] = l;
    }
}

/* The rank's neighbouring stages of lane l, which its progress may unblock. */
static void wake(vl_sim_scratch *w, const vl_sim_rank *R, uint32_t s, uint64_t l,
                 uint64_t *top)
{
    if (s > 0)
        push(w, top, l - 1);
    if (s + 1 < R->pp)
        push(w, top, l + 1);
}

/* Run the next operation of lane l (stage s of rank R) from t.  The caller wakes the
 * neighbouring stages once it stops advancing the lane. */
static void run(vl_sim_scratch *w, const vl_sim_rank *R, uint32_t s, uint64_t l, uint64_t *top,
                double t)
{
    uint64_t node = R->node0 + (uint64_t)s * R->n + w->ptr[l];

    w->start[node] = t;
    w->end[node] = w->avail[l] = t + w->dur[node];
    w->ptr[l]++;
    if (w->nbar == 0 || w->ord[node].kind != VL_OP_B)
        return;
    if (s == 0 && w->bdone[l] < w->nbar) {
        uint32_t k = w->bdone[l];
        /* the reduction hides behind this backward, at most overlap.dp of it */
        double done = w->end[node] + vl_cost_dp_grad_exposed(w->c, w->step_grad, w->dur[node]);
        if (done > w->bar_time[k])
            w->bar_time[k] = done;
        if (--w->bar_left[k] == 0) /* the barrier is set: every first stage may go on */
            for (uint32_t r = 0; r < w->nranks; r++)
                push(w, top, w->rk[r].lane0);
    }
    w->bdone[l]++;
}

static int32_t instance_of(const vl_sim_scratch *w, const vl_sim_rank *R, vl_op op)
{
    if (w->ninst == 0)
        return -1;
    if (op.kind == VL_OP_F)
        return w->sharef[R->pk0 + op.mb];
    if (op.kind == VL_OP_B)
        return w->shareb[R->pk0 + op.mb];
    return -1;
}

/* A shared operation starts when every member lane has its copy next and ready. */
static bool run_shared(vl_sim_scratch *w, uint64_t *top, uint32_t inst, uint32_t s, double t)
{
    for (uint32_t i = w->inst_off[inst]; i < w->inst_off[inst + 1]; i++) {
        const vl_sim_rank *M = &w->rk[w->inst[i] >> 34];
        uint64_t lm = M->lane0 + s;
        vl_op want = {.mb = (uint32_t)w->inst[i], .kind = (uint8_t)(w->inst[i] >> 32 & 3)};
        vl_op head;
        double tm = w->avail[lm];
        if (w->ptr[lm] >= M->n)
            return false;
        head = w->ord[M->node0 + (uint64_t)s * M->n + w->ptr[lm]];
        rview vm = view(w, M);
        if (head.kind != want.kind || head.mb != want.mb || !ready(w, &vm, s, lm, head, &tm))
            return false;
        if (tm > t)
            t = tm;
    }
    for (uint32_t i = w->inst_off[inst]; i < w->inst_off[inst + 1]; i++) {
        const vl_sim_rank *M = &w->rk[w->inst[i] >> 34];
        run(w, M, s, M->lane0 + s, top, t);
        push(w, top, M->lane0 + s); /* each member lane goes on from here */
        wake(w, M, s, M->lane0 + s, top);
    }
    return true;
}

/* Run lane l as far as its dependencies allow. */
static void advance(vl_sim_scratch *w, uint64_t *top, uint64_t l)
{
    const vl_sim_rank *R = &w->rk[w->lrank[l]];
    uint32_t s = w->lstage[l];
    const vl_op *ord = w->ord + R->node0 + (uint64_t)s * R->n;
    uint32_t from = w->ptr[l];
    rview v = view(w, R);

    while (w->ptr[l] < R->n) {
        vl_op op = ord[w->ptr[l]];
        double t = w->avail[l];
        int32_t inst;
        if (!ready(w, &v, s, l, op, &t))
            break;
        if ((inst = instance_of(w, R, op)) >= 0) {
            if (!run_shared(w, top, (uint32_t)inst, s, t))
                break;
            continue;
        }
        run(w, R, s, l, top, t);
    }
    if (w->ptr[l] > from)
        wake(w, R, s, l, top);
}

static vl_status deadlock(const vl_sim_scratch *w, vl_err *err)
{
    static const char name[] = "FRB";

    for (uint64_t l = 0; l < w->nlanes; l++) {
        const vl_sim_rank *R = &w->rk[w->lrank[l]];
        if (w->ptr[l] < R->n) {
            vl_op op = w->ord[R->node0 + (uint64_t)w->lstage[l] * R->n + w->ptr[l]];
            return vl_seterr(
                err, VL_EDATA,
                "iteration %zu rank %u: schedule deadlocks: stage "
                "%u cannot run %c%u (its order contradicts the pipeline, slice or "
                "shared-pack dependencies)",
                w->it, w->lrank[l], w->lstage[l], name[op.kind % 3], op.mb);
        }
    }
    return VL_OK;
}

/* ASAP times in a topological order: each lane runs its order while the dependencies
 * are met; a lane that advanced may unblock its rank's neighbouring stages (and, at a
 * barrier or a shared pack, the lanes involved), so every task is started once and
 * every edge examined a bounded number of times. */
vl_status vl__sim_eval(vl_sim_scratch *w, vl_err *err)
{
    uint64_t top = 0;
    vl_status st;

    if ((st = vl_grow(&w->start, &w->start_cap, w->nnodes, sizeof(double), err)) ||
        (st = vl_grow(&w->dur, &w->dur_cap, w->nnodes, sizeof(double), err)) ||
        (st = vl_grow(&w->end, &w->end_cap, w->nnodes, sizeof(double), err)) ||
        (st = vl_grow(&w->ptr, &w->ptr_cap, w->nlanes, sizeof(uint32_t), err)) ||
        (st = vl_grow(&w->avail, &w->avail_cap, w->nlanes, sizeof(double), err)) ||
        (st = vl_grow(&w->bdone, &w->bdone_cap, w->nlanes, sizeof(uint32_t), err)) ||
        (st = vl_grow(&w->stack, &w->stack_cap, w->nlanes, sizeof(uint64_t), err)) ||
        (st = vl_grow(&w->inq, &w->inq_cap, w->nlanes, 1, err)))
        return st;
    for (uint64_t l = 0; l < w->nlanes; l++) {
        w->ptr[l] = w->bdone[l] = 0;
        w->avail[l] = 0.0;
        w->inq[l] = 0;
    }
    vl__sim_durations(w);
    for (uint64_t l = w->nlanes; l-- > 0;)
        push(w, &top, l);
    while (top > 0) {
        uint64_t l = w->stack[--top];
        w->inq[l] = 0;
        advance(w, &top, l);
    }
    for (uint32_t r = 0; r < w->nranks; r++) {
        vl_sim_rank *R = &w->rk[r];
        R->makespan = 0.0;
        for (uint32_t s = 0; s < R->pp; s++)
            if (w->avail[R->lane0 + s] > R->makespan)
                R->makespan = w->avail[R->lane0 + s];
    }
    return deadlock(w, err);
}
